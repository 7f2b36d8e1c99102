"""`mapfilter sieve`: a minimum mapping unit (polygons smaller than a pixel
count or an area join their largest neighbour, as gdal_sieve.py)."""

from qgis.core import QgsProcessingParameterRasterDestination, QgsProcessingParameterRasterLayer

from .base import MapfilterAlgorithm
from .common import add_compression, add_threshold, compression_args, threshold_text


class SieveAlgorithm(MapfilterAlgorithm):
    command = "sieve"
    label = "Sieve class map (minimum mapping unit)"
    group_key = "classes"

    def define(self):
        self.add(
            QgsProcessingParameterRasterLayer("INPUT", self.tr("Input class raster")), "<INPUT>"
        )
        # The CLI has no default threshold; the dialog starts at its help's
        # example, 25 pixels.
        add_threshold(self, "THRESHOLD", ("Threshold", "Threshold unit"), "threshold", 25)
        self.add(
            self.enum_parameter(
                "CONNECTIVITY", "Pixels that touch", "connectivity", ["4", "8"]
            ),
            "connectivity",
        )
        add_compression(self)
        self.add(QgsProcessingParameterRasterDestination("OUTPUT", self.tr("Sieved")), "<OUTPUT>")

    def arguments(self, parameters, context, feedback):
        source = self.raster_path(parameters, "INPUT", context)
        output = self.parameterAsOutputLayer(parameters, "OUTPUT", context)
        threshold = threshold_text(self, parameters, "THRESHOLD", context)
        args = [source, output, "--threshold", threshold]
        args += ["--connectivity", self.enum_text(parameters, "CONNECTIVITY", context)]
        args += compression_args(self, parameters, context)
        return args, {"OUTPUT": output}, [output]

"""`mapfilter gen`: synthetic class maps (simplex blobs, random classes)."""

from qgis.core import QgsProcessingParameterRasterDestination

from .base import MapfilterAlgorithm, number_text
from .common import add_compression, compression_args


class GenAlgorithm(MapfilterAlgorithm):
    command = "gen"
    label = "Generate synthetic class map"
    group_key = "classes"

    def define(self):
        width, height = self.default("raster-size").lower().split("x")
        self.add(
            self.integer_parameter("WIDTH", "Width (pixels)", None, width, minValue=1), "raster-size"
        )
        self.add(self.integer_parameter("HEIGHT", "Height (pixels)", None, height, minValue=1))
        self.add(self.integer_parameter("CLASSES", "Classes", "classes", minValue=1), "classes")
        self.add(self.enum_parameter("PATTERN", "Pattern", "pattern"), "pattern")
        self.add(self.integer_parameter("SEED", "Seed", "seed", minValue=0), "seed")
        self.add(
            self.double_parameter("SCALE", "Simplex feature size (pixels)", "scale", minValue=0.0),
            "scale",
        )
        add_compression(self)
        self.add(
            QgsProcessingParameterRasterDestination("OUTPUT", self.tr("Generated")), "<OUTPUT>"
        )

    def arguments(self, parameters, context, feedback):
        output = self.parameterAsOutputLayer(parameters, "OUTPUT", context)
        width = self.parameterAsInt(parameters, "WIDTH", context)
        height = self.parameterAsInt(parameters, "HEIGHT", context)
        args = [output, "--raster-size", f"{width}x{height}"]
        args += self.number_args(
            parameters, context, [("CLASSES", "classes"), ("SEED", "seed")]
        )
        args += ["--pattern", self.enum_text(parameters, "PATTERN", context)]
        args += ["--scale", number_text(self.parameterAsDouble(parameters, "SCALE", context))]
        args += compression_args(self, parameters, context)
        return args, {"OUTPUT": output}, [output]

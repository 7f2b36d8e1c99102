"""`mapfilter info`: size, georeferencing, nodata and classes of a raster."""

from qgis.core import (
    QgsProcessingOutputString,
    QgsProcessingParameterFileDestination,
    QgsProcessingParameterRasterLayer,
)

from .base import MapfilterAlgorithm


class InfoAlgorithm(MapfilterAlgorithm):
    command = "info"
    label = "Raster info (classes and pixel counts)"
    group_key = "classes"

    def define(self):
        self.add(QgsProcessingParameterRasterLayer("INPUT", self.tr("Raster")), "<INPUT>")
        self.add(
            QgsProcessingParameterFileDestination(
                "JSON", self.tr("Info as JSON"), "JSON files (*.json)", optional=True,
                createByDefault=False,
            ),
            "json",
        )
        self.addOutput(QgsProcessingOutputString("INFO", self.tr("Info (JSON)")))

    def arguments(self, parameters, context, feedback):
        args = [self.raster_path(parameters, "INPUT", context), "--json"]
        # The JSON file is written here from the command's stdout, so it
        # is no output of mapfilter's own.
        results = {}
        path = self.parameterAsFileOutput(parameters, "JSON", context)
        if path:
            results["JSON"] = path
        return args, results, []

    def after_run(self, stdout, parameters, context, feedback, results):
        text = stdout + "\n"
        if "JSON" in results:
            with open(results["JSON"], "w", encoding="utf-8") as f:
                f.write(text)
        results["INFO"] = text
        return results

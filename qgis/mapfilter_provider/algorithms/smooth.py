"""`mapfilter smooth`: majority (class-histogram) smoothing of a class map,
optionally followed by a minimum mapping unit (`--mmu`)."""

from qgis.core import (
    QgsProcessingParameterFileDestination,
    QgsProcessingParameterRasterDestination,
    QgsProcessingParameterRasterLayer,
)

from .. import runner
from .base import MapfilterAlgorithm
from .common import add_threshold, threshold_text
from .smoothing import add_smoothing, smoothing_args

REPORT_FILTER = "HTML files (*.html);;JSON files (*.json);;Markdown files (*.md)"


class SmoothAlgorithm(MapfilterAlgorithm):
    command = "smooth"
    label = "Smooth class map (majority filter)"
    group_key = "classes"

    def define(self):
        self.add(
            QgsProcessingParameterRasterLayer("INPUT", self.tr("Input class raster")), "<INPUT>"
        )
        add_smoothing(self, "Tile side (pixels; empty: 1024 on a GPU, else 512)")
        # Votes weighed by a confidence raster (smooth only: a batch plan
        # refuses it, as each raster needs its own).
        self.add(
            QgsProcessingParameterRasterLayer(
                "CONFIDENCE", self.tr("Confidence raster (band 1, the class raster's grid)"),
                optional=True,
            ),
            "confidence",
            advanced=True,
        )
        self.add(
            self.double_parameter(
                "CONFIDENCE_SCALE", "Confidence of full confidence (e.g. 1, 100, 255)",
                None, optional=True, minValue=0.0,
            ),
            "confidence-scale",
            advanced=True,
        )
        add_threshold(
            self, "MMU", ("Minimum mapping unit (empty: none)", "Minimum mapping unit: unit"),
            "mmu", optional=True,
        )
        self.add(
            self.enum_parameter(
                "MMU_CONNECTIVITY", "Minimum mapping unit: pixels that touch",
                "mmu-connectivity", ["4", "8"],
            ),
            "mmu-connectivity",
        )
        self.add(QgsProcessingParameterRasterDestination("OUTPUT", self.tr("Smoothed")), "<OUTPUT>")
        self.add(
            QgsProcessingParameterFileDestination(
                "REPORT",
                self.tr("Accuracy report against the exact baseline"),
                REPORT_FILTER,
                optional=True,
                createByDefault=False,
            ),
            "report",
        )

    def arguments(self, parameters, context, feedback):
        source = self.raster_path(parameters, "INPUT", context)
        output = self.parameterAsOutputLayer(parameters, "OUTPUT", context)
        args = [source, output] + smoothing_args(self, parameters, context)
        if self.given(parameters, "CONFIDENCE"):
            args += ["--confidence", self.raster_path(parameters, "CONFIDENCE", context)]
            args += self.number_args(parameters, context, [("CONFIDENCE_SCALE", "confidence-scale")])
        mmu = threshold_text(self, parameters, "MMU", context)
        if mmu is not None:
            args += ["--mmu", mmu]
            args += ["--mmu-connectivity", self.enum_text(parameters, "MMU_CONNECTIVITY", context)]
        results, outputs = {"OUTPUT": output}, [output]
        report = self.parameterAsFileOutput(parameters, "REPORT", context)
        if report:
            args += ["--report", report]
            results["REPORT"] = report
            outputs.append(report)
        return args, results, outputs

    def phases(self, parameters, context):
        # Smoothing fills the bar (or its first half, before the report's
        # baseline and comparison), the minimum mapping unit its last tenth.
        end = 50 if self.parameterAsFileOutput(parameters, "REPORT", context) else 100
        sieve = 0.1 * end if self.given(parameters, "MMU") else 0
        spans = {
            ("smooth", "scan"): (0, 0.1 * end),
            ("smooth", "tiles"): (0.1 * end, end - sieve),
            "sieve": (end - sieve, end),
        }
        if end < 100:
            spans.update({"baseline": (50, 90), "compare": (90, 100)})
        return runner.Phases(spans)

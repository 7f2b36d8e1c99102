"""`mapfilter compare`: agreement and kappa of a candidate class map against
a reference, with a mismatch raster and reports."""

import json
import os
import uuid

from qgis.core import (
    QgsProcessingOutputNumber,
    QgsProcessingParameterFileDestination,
    QgsProcessingParameterRasterDestination,
    QgsProcessingParameterRasterLayer,
    QgsProcessingUtils,
)

from .. import runner
from .base import MapfilterAlgorithm


class CompareAlgorithm(MapfilterAlgorithm):
    command = "compare"
    label = "Compare class maps (agreement, kappa)"
    group_key = "classes"

    def define(self):
        self.add(
            QgsProcessingParameterRasterLayer("REFERENCE", self.tr("Reference class raster")),
            "<REFERENCE>",
        )
        self.add(
            QgsProcessingParameterRasterLayer("CANDIDATE", self.tr("Candidate class raster")),
            "<CANDIDATE>",
        )
        self.add(
            self.integer_parameter(
                "MAP_SIDE", "Quick-look map side (pixels)", "map-side", minValue=1
            ),
            "map-side",
            advanced=True,
        )
        self.add(
            QgsProcessingParameterRasterDestination(
                "MISMATCH", self.tr("Mismatch raster"), optional=True, createByDefault=True
            ),
            "mismatch",
        )
        self.add(
            QgsProcessingParameterFileDestination(
                "HTML", self.tr("HTML report"), "HTML files (*.html)", optional=True,
                createByDefault=True,
            ),
            "html",
        )
        self.add(
            QgsProcessingParameterFileDestination(
                "JSON", self.tr("Figures as JSON"), "JSON files (*.json)", optional=True,
                createByDefault=False,
            ),
            "json",
        )
        self.add(
            QgsProcessingParameterFileDestination(
                "MARKDOWN", self.tr("Markdown report"), "Markdown files (*.md)", optional=True,
                createByDefault=False,
            ),
            "markdown",
        )
        self.addOutput(QgsProcessingOutputNumber("AGREEMENT", self.tr("Agreement (%)")))
        self.addOutput(QgsProcessingOutputNumber("KAPPA", self.tr("Kappa")))

    def arguments(self, parameters, context, feedback):
        reference = self.raster_path(parameters, "REFERENCE", context)
        candidate = self.raster_path(parameters, "CANDIDATE", context)
        args = [reference, candidate]
        args += self.number_args(parameters, context, [("MAP_SIDE", "map-side")])
        results, outputs = {}, []
        mismatch = self.parameterAsOutputLayer(parameters, "MISMATCH", context)
        if mismatch:
            args += ["--mismatch", mismatch]
            results["MISMATCH"] = mismatch
            outputs.append(mismatch)
        for name, option in (("HTML", "html"), ("JSON", "json"), ("MARKDOWN", "markdown")):
            path = self.parameterAsFileOutput(parameters, name, context)
            if path:
                args += [f"--{option}", path]
                results[name] = path
                outputs.append(path)
        if "JSON" not in results:
            # The figures for AGREEMENT and KAPPA come from the JSON.
            self._figures = os.path.join(
                QgsProcessingUtils.tempFolder(), f"mapfilter-compare-{uuid.uuid4().hex}.json"
            )
            args += ["--json", self._figures]
        else:
            self._figures = results["JSON"]
        return args, results, outputs

    def after_run(self, stdout, parameters, context, feedback, results):
        with open(self._figures, encoding="utf-8") as f:
            summary = json.load(f)["summary"]
        if "JSON" not in results:
            os.remove(self._figures)
        results["AGREEMENT"] = summary["agreement_percent"]
        results["KAPPA"] = summary["kappa"]
        return results

    def phases(self, parameters, context):
        return runner.Phases()

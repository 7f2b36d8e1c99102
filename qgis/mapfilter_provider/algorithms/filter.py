"""`mapfilter filter`: a chain of image ops over imagery or elevation."""

import re

from qgis.core import (
    QgsProcessingException,
    QgsProcessingParameterRasterDestination,
    QgsProcessingParameterRasterLayer,
    QgsProcessingParameterString,
)

from .base import MapfilterAlgorithm, number_text
from .common import add_compression, add_device, compression_args, device_args

BORDERS = ["replicate", "reflect101", "constant", "nodata"]
DEVICES = ["host", "host-reference", "auto", "cpu", "gpu"]


class FilterAlgorithm(MapfilterAlgorithm):
    command = "filter"
    label = "Filter image (median, gaussian, bilateral, Scharr...)"
    group_key = "images"

    def define(self):
        self.add(QgsProcessingParameterRasterLayer("INPUT", self.tr("Input raster")), "<INPUT>")
        self.add(
            QgsProcessingParameterString(
                "OPS", self.tr("Ops, one per line or separated by ';' (run in order)"),
                multiLine=True,
            ),
            "op",
        )
        self.add(self.enum_parameter("BORDER", "Border", "border", BORDERS), "border")
        self.add(
            self.double_parameter("BORDER_VALUE", "Value beyond the edge (border 'constant')",
                                  None, 0.0),
        )
        add_device(self, DEVICES, cli_default=self.default("device"))
        self.add(
            self.integer_parameter("TILE", "Tile side (pixels)", "tile", minValue=1),
            "tile",
            advanced=True,
        )
        add_compression(self)
        self.add(QgsProcessingParameterRasterDestination("OUTPUT", self.tr("Filtered")), "<OUTPUT>")

    def arguments(self, parameters, context, feedback):
        source = self.raster_path(parameters, "INPUT", context)
        output = self.parameterAsOutputLayer(parameters, "OUTPUT", context)
        text = self.parameterAsString(parameters, "OPS", context)
        ops = [op.strip() for op in re.split(r"[;\n]", text) if op.strip()]
        if not ops:
            raise QgsProcessingException(
                "no op given (hint: e.g. median:5, or gaussian:1.5 then scharr:3 on two lines)"
            )
        args = [source, output]
        for op in ops:
            args += ["--op", op]
        border = self.enum_text(parameters, "BORDER", context)
        if border == "constant":
            value = self.parameterAsDouble(parameters, "BORDER_VALUE", context)
            border = f"constant:{number_text(value)}"
        args += ["--border", border]
        args += device_args(self, parameters, context)
        args += self.number_args(parameters, context, [("TILE", "tile")])
        args += compression_args(self, parameters, context)
        return args, {"OUTPUT": output}, [output]

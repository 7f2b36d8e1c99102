"""`mapfilter smooth`: majority (class-histogram) smoothing of a class map."""

from qgis.core import (
    QgsProcessingException,
    QgsProcessingParameterFile,
    QgsProcessingParameterFileDestination,
    QgsProcessingParameterMatrix,
    QgsProcessingParameterRasterDestination,
    QgsProcessingParameterRasterLayer,
)

from .. import runner
from .base import MapfilterAlgorithm, number_text
from .common import add_compression, add_device, compression_args, device_args

KERNELS = ["gaussian", "box", "disc", "file"]
METHODS = ["naive", "svd", "dct5", "auto"]
VARIANTS = ["fast", "buffer", "image", "local"]
REPORT_FILTER = "HTML files (*.html);;JSON files (*.json);;Markdown files (*.md)"


class SmoothAlgorithm(MapfilterAlgorithm):
    command = "smooth"
    label = "Smooth class map (majority filter)"
    group_key = "classes"

    def define(self):
        self.add(
            QgsProcessingParameterRasterLayer("INPUT", self.tr("Input class raster")), "<INPUT>"
        )
        # The CLI has no default kernel; the dialog starts at the README's
        # first example, gaussian:2.5.
        self.add(
            self.enum_parameter("KERNEL", "Kernel", "kernel", KERNELS, "gaussian"), "kernel"
        )
        self.add(
            self.double_parameter(
                "KERNEL_VALUE",
                "Kernel σ (gaussian), side N (box) or radius (disc), in pixels",
                "kernel",
                2.5,
                minValue=0.0,
            )
        )
        self.add(
            QgsProcessingParameterFile(
                "KERNEL_FILE", self.tr("Kernel file (for kernel 'file')"), optional=True
            )
        )
        self.add(
            self.integer_parameter(
                "SIZE", "Gaussian kernel side (pixels, odd)", "kernel-size", optional=True, minValue=1
            ),
            "kernel-size",
            advanced=True,
        )
        self.add(
            QgsProcessingParameterMatrix(
                "CLASS_WEIGHTS",
                self.tr("Class weights"),
                numberRows=0,
                hasFixedNumberRows=False,
                headers=[self.tr("Class code"), self.tr("Weight")],
                defaultValue=None,
                optional=True,
            ),
            "class-weights",
        )
        self.add(self.enum_parameter("BORDER", "Border", "border"), "border")
        self.add(self.flag_parameter("FILL_NODATA", "Fill nodata holes"), "fill-nodata")
        self.add(self.enum_parameter("METHOD", "Method", "method", METHODS), "method")
        add_device(self, ["auto", "host", "cpu", "gpu"], cli_default=None)
        self.add(
            self.enum_parameter(
                "VARIANT", "Device variant (naive)", "variant", VARIANTS, optional=True
            ),
            "variant",
            advanced=True,
        )
        self.add(
            self.integer_parameter("RANK", "svd: ranks kept", "rank", optional=True, minValue=1),
            "rank",
            advanced=True,
        )
        self.add(
            self.double_parameter(
                "ENERGY", "svd: energy share kept", "energy", optional=True, minValue=0.0,
                maxValue=1.0,
            ),
            "energy",
            advanced=True,
        )
        self.add(
            self.integer_parameter(
                "TERMS", "dct5: cosine terms K", "terms", optional=True, minValue=0
            ),
            "terms",
            advanced=True,
        )
        self.add(self.flag_parameter("EXACT", "Certified exact mode"), "exact", advanced=True)
        self.add(
            self.integer_parameter(
                "TILE", "Tile side (pixels; empty: 2048 on a GPU, else 512)", "tile", minValue=1, optional=True
            ),
            "tile",
            advanced=True,
        )
        add_compression(self)
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

    def kernel_spec(self, parameters, context):
        kind = self.enum_text(parameters, "KERNEL", context)
        if kind == "file":
            path = self.parameterAsFile(parameters, "KERNEL_FILE", context)
            if not path:
                raise QgsProcessingException(
                    "kernel 'file' needs a kernel file (hint: choose one in 'Kernel file')"
                )
            return f"file:{path}"
        value = self.parameterAsDouble(parameters, "KERNEL_VALUE", context)
        return f"{kind}:{number_text(value)}"

    def class_weights(self, parameters, context):
        if not self.given(parameters, "CLASS_WEIGHTS"):
            return ""
        cells = [
            c for c in self.parameterAsMatrix(parameters, "CLASS_WEIGHTS", context)
            if c is not None and str(c).strip() != ""
        ]
        if len(cells) % 2:
            raise QgsProcessingException(
                "class weights need a weight for every code (hint: fill both columns)"
            )
        pairs = [
            f"{number_text(code)}:{number_text(weight)}"
            for code, weight in zip(cells[0::2], cells[1::2])
        ]
        return ",".join(pairs)

    def arguments(self, parameters, context, feedback):
        source = self.raster_path(parameters, "INPUT", context)
        output = self.parameterAsOutputLayer(parameters, "OUTPUT", context)
        args = [source, output, "--kernel", self.kernel_spec(parameters, context)]
        args += self.number_args(parameters, context, [("SIZE", "kernel-size")])
        weights = self.class_weights(parameters, context)
        if weights:
            args += ["--class-weights", weights]
        args += ["--border", self.enum_text(parameters, "BORDER", context)]
        args += self.flag_args(parameters, context, [("FILL_NODATA", "fill-nodata")])
        args += ["--method", self.enum_text(parameters, "METHOD", context)]
        args += device_args(self, parameters, context)
        variant = self.enum_text(parameters, "VARIANT", context)
        if variant:
            args += ["--variant", variant]
        args += self.number_args(
            parameters, context, [("RANK", "rank"), ("ENERGY", "energy"), ("TERMS", "terms")]
        )
        args += self.flag_args(parameters, context, [("EXACT", "exact")])
        args += self.number_args(parameters, context, [("TILE", "tile")])
        args += compression_args(self, parameters, context)
        results, outputs = {"OUTPUT": output}, [output]
        report = self.parameterAsFileOutput(parameters, "REPORT", context)
        if report:
            args += ["--report", report]
            results["REPORT"] = report
            outputs.append(report)
        return args, results, outputs

    def phases(self, parameters, context):
        if self.parameterAsFileOutput(parameters, "REPORT", context):
            return runner.Phases(
                {
                    ("smooth", "scan"): (0, 5),
                    ("smooth", "tiles"): (5, 50),
                    "baseline": (50, 90),
                    "compare": (90, 100),
                }
            )
        return runner.Phases({("smooth", "scan"): (0, 10), ("smooth", "tiles"): (10, 100)})

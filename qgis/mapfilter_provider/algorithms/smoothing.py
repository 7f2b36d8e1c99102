"""The smoothing options `smooth` and `batch plan` share (kernel, class
weights, border, nodata, the inputs' band and nodata, the policies, method
and its knobs, device, tile, compression):
their parameters and the CLI arguments they become. Each command reads the
help of its own options, so the texts and defaults stay the command's."""

from qgis.PyQt.QtCore import QVariant
from qgis.core import (
    QgsProcessingException,
    QgsProcessingParameterFile,
    QgsProcessingParameterMatrix,
    QgsProcessingParameterString,
)

from .base import number_text
from .common import add_compression, add_device, compression_args, device_args

KERNELS = ["gaussian", "box", "disc", "file"]
# Units of a kernel length as the CLI reads them (`gaussian:250m`, `disc:1km`):
# metres and kilometres are converted with the raster's pixel width.
LENGTH_UNITS = ["pixels", "m", "km"]
# fft last: a saved model keeps the index of the others.
METHODS = ["naive", "svd", "dct5", "auto", "fft"]
VARIANTS = ["fast", "buffer", "image", "local"]


def add_smoothing(alg, tile_description, variant_option="variant"):
    """Adds the smoothing parameters. `variant_option` names the option whose
    help lists the device variants (batch plan's own --variant does not)."""
    # The CLI has no default kernel; the dialog starts at the README's
    # first example, gaussian:2.5.
    alg.add(alg.enum_parameter("KERNEL", "Kernel", "kernel", KERNELS, "gaussian"), "kernel")
    alg.add(
        alg.double_parameter(
            "KERNEL_VALUE",
            "Kernel σ (gaussian), side N (box) or radius (disc)",
            "kernel",
            2.5,
            minValue=0.0,
        )
    )
    alg.add(alg.enum_parameter("KERNEL_UNIT", "Kernel length unit", None, LENGTH_UNITS, "pixels"))
    alg.add(
        QgsProcessingParameterFile(
            "KERNEL_FILE", alg.tr("Kernel file (for kernel 'file')"), optional=True
        )
    )
    alg.add(
        alg.integer_parameter(
            "SIZE", "Gaussian kernel side (pixels, odd)", "kernel-size", optional=True, minValue=1
        ),
        "kernel-size",
        advanced=True,
    )
    alg.add(
        QgsProcessingParameterMatrix(
            "CLASS_WEIGHTS",
            alg.tr("Class weights"),
            numberRows=0,
            hasFixedNumberRows=False,
            headers=[alg.tr("Class code"), alg.tr("Weight")],
            defaultValue=None,
            optional=True,
        ),
        "class-weights",
    )
    alg.add(alg.enum_parameter("BORDER", "Border", "border"), "border")
    alg.add(alg.flag_parameter("FILL_NODATA", "Fill nodata holes"), "fill-nodata")
    # The inputs' band of classes and the nodata codes in and out (-b,
    # --src-nodata, --dst-nodata), as both commands take them.
    alg.add(
        alg.integer_parameter(
            "BAND", "Band of class codes (empty: band 1 of a one-band raster)", None,
            optional=True, minValue=1,
        ),
        "band",
        advanced=True,
    )
    alg.add(
        QgsProcessingParameterString(
            "SRC_NODATA", alg.tr("Input nodata instead of the file's (a number, or none)"),
            optional=True,
        ),
        "src-nodata",
        advanced=True,
    )
    alg.add(
        alg.integer_parameter(
            "DST_NODATA", "Output nodata code (empty: the input's)", None,
            optional=True, minValue=0, maxValue=65535,
        ),
        "dst-nodata",
        advanced=True,
    )
    # The policies (docs/semantics.md#policies), as the CLI spells them.
    for name, description, option in (
        ("TIES", "Ties: centre, smallest, largest or undecided:CODE (empty: centre)", "ties"),
        ("KEEP", "Classes that never change (codes, e.g. 80,190)", "keep"),
        ("NO_VOTE", "Classes that cast no vote (codes)", "no-vote"),
    ):
        alg.add(
            QgsProcessingParameterString(name, alg.tr(description), optional=True),
            option,
            advanced=True,
        )
    for name, description, option in (
        ("ONLY_ISOLATED", "Change a pixel only when fewer than T neighbours share its class", "only-isolated"),
        ("ITERATIONS", "Smooth N times (empty: once)", "iterations"),
    ):
        alg.add(
            alg.integer_parameter(name, description, None, optional=True, minValue=1),
            option,
            advanced=True,
        )
    alg.add(alg.enum_parameter("METHOD", "Method", "method", METHODS), "method")
    add_device(alg, ["auto", "host", "cpu", "gpu"], cli_default=None)
    alg.add(
        alg.enum_parameter(
            "VARIANT", "Device variant (naive)", "variant", VARIANTS, optional=True
        ),
        variant_option,
        advanced=True,
    )
    alg.add(
        alg.integer_parameter("RANK", "svd: ranks kept", "rank", optional=True, minValue=1),
        "rank",
        advanced=True,
    )
    alg.add(
        alg.double_parameter(
            "ENERGY", "svd: energy share kept", "energy", optional=True, minValue=0.0,
            maxValue=1.0,
        ),
        "energy",
        advanced=True,
    )
    alg.add(
        alg.integer_parameter(
            "TERMS", "dct5: cosine terms K", "terms", optional=True, minValue=0
        ),
        "terms",
        advanced=True,
    )
    alg.add(alg.flag_parameter("EXACT", "Certified exact mode"), "exact", advanced=True)
    tile_default = alg.default("tile")
    alg.add(
        alg.integer_parameter(
            "TILE", tile_description, "tile", minValue=1, optional=tile_default is None
        ),
        "tile",
        advanced=True,
    )
    add_compression(alg)


def kernel_spec(alg, parameters, context):
    kind = alg.enum_text(parameters, "KERNEL", context)
    if kind == "file":
        path = alg.parameterAsFile(parameters, "KERNEL_FILE", context)
        if not path:
            raise QgsProcessingException(
                "kernel 'file' needs a kernel file (hint: choose one in 'Kernel file')"
            )
        return f"file:{path}"
    value = alg.parameterAsDouble(parameters, "KERNEL_VALUE", context)
    unit = alg.enum_text(parameters, "KERNEL_UNIT", context)
    return f"{kind}:{number_text(value)}" + ("" if unit == "pixels" else unit)


def _cell(value):
    """A matrix cell as a plain value: the dialog gives empty cells as NULL
    QVariants (an empty table is [NULL]), qgis_process as strings."""
    if isinstance(value, QVariant):
        return None if value.isNull() else value.value()
    return value


def class_weights(alg, parameters, context):
    if not alg.given(parameters, "CLASS_WEIGHTS"):
        return ""
    cells = [
        c for c in map(_cell, alg.parameterAsMatrix(parameters, "CLASS_WEIGHTS", context))
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


def smoothing_args(alg, parameters, context):
    """The smoothing options as CLI arguments, in `smooth --help` order."""
    args = ["--kernel", kernel_spec(alg, parameters, context)]
    args += alg.number_args(parameters, context, [("SIZE", "kernel-size")])
    weights = class_weights(alg, parameters, context)
    if weights:
        args += ["--class-weights", weights]
    args += ["--border", alg.enum_text(parameters, "BORDER", context)]
    args += alg.flag_args(parameters, context, [("FILL_NODATA", "fill-nodata")])
    args += alg.number_args(parameters, context, [("BAND", "band")])
    src_nodata = alg.parameterAsString(parameters, "SRC_NODATA", context).strip()
    if src_nodata:
        args += ["--src-nodata", src_nodata]
    args += alg.number_args(parameters, context, [("DST_NODATA", "dst-nodata")])
    for name, option in (("TIES", "ties"), ("KEEP", "keep"), ("NO_VOTE", "no-vote")):
        text = alg.parameterAsString(parameters, name, context).strip()
        if text:
            args += [f"--{option}", text]
    args += alg.number_args(
        parameters, context, [("ONLY_ISOLATED", "only-isolated"), ("ITERATIONS", "iterations")]
    )
    args += ["--method", alg.enum_text(parameters, "METHOD", context)]
    args += device_args(alg, parameters, context)
    variant = alg.enum_text(parameters, "VARIANT", context)
    if variant:
        args += ["--variant", variant]
    args += alg.number_args(
        parameters, context, [("RANK", "rank"), ("ENERGY", "energy"), ("TERMS", "terms")]
    )
    args += alg.flag_args(parameters, context, [("EXACT", "exact")])
    args += alg.number_args(parameters, context, [("TILE", "tile")])
    args += compression_args(alg, parameters, context)
    return args

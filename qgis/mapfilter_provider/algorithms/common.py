"""Parameters several commands share: the device (with an OpenCL index), the
output compression and sieve thresholds (pixels or an area)."""

from .base import number_text

# The entry of a device enum that passes no --device, so the CLI's own
# default applies (smooth: $MAPFILTER_DEVICE, else auto).
CLI_DEFAULT_DEVICE = "default ($MAPFILTER_DEVICE, else auto)"


def add_device(alg, choices, cli_default):
    """DEVICE (an enum of `choices`, preceded by the CLI-default entry when
    the CLI has no fixed default) and DEVICE_INDEX (an OpenCL device index
    from `mapfilter devices`, overriding DEVICE when set)."""
    if cli_default is None:
        choices, default = [CLI_DEFAULT_DEVICE] + list(choices), CLI_DEFAULT_DEVICE
    else:
        default = cli_default
    alg.add(alg.enum_parameter("DEVICE", "Device", "device", choices, default), "device")
    alg.add(
        alg.integer_parameter(
            "DEVICE_INDEX",
            "OpenCL device index (from `mapfilter devices`; overrides Device)",
            None,
            optional=True,
            minValue=0,
        ),
        advanced=True,
    )


def device_args(alg, parameters, context):
    if alg.given(parameters, "DEVICE_INDEX"):
        return ["--device", str(alg.parameterAsInt(parameters, "DEVICE_INDEX", context))]
    device = alg.enum_text(parameters, "DEVICE", context)
    if device is None or device == CLI_DEFAULT_DEVICE:
        return []
    return ["--device", device]


def add_compression(alg):
    alg.add(alg.enum_parameter("COMPRESS", "Compression", "compress"), "compress", advanced=True)
    alg.add(
        alg.integer_parameter(
            "COMPRESS_LEVEL", "Compression level", "compress-level", optional=True, minValue=1
        ),
        "compress-level",
        advanced=True,
    )


def compression_args(alg, parameters, context):
    args = ["--compress", alg.enum_text(parameters, "COMPRESS", context)]
    return args + alg.number_args(parameters, context, [("COMPRESS_LEVEL", "compress-level")])


# Units of a sieve threshold (`--threshold`, `smooth --mmu`): a pixel count,
# or an area in one of the units the CLI reads.
AREA_UNITS = ["pixels", "ha", "m2", "km2", "acre"]


def add_threshold(alg, prefix, descriptions, option, default=None, optional=False):
    """PREFIX (a number) and PREFIX_UNIT (pixels or an area unit), together
    the CLI's PIXELS|AREA of `option`; `descriptions` are theirs."""
    alg.add(
        alg.double_parameter(
            prefix, descriptions[0], None, default, minValue=0.0, optional=optional
        ),
        option,
    )
    alg.add(
        alg.enum_parameter(f"{prefix}_UNIT", descriptions[1], None, AREA_UNITS, "pixels")
    )


def threshold_text(alg, parameters, prefix, context):
    """PIXELS|AREA as the CLI reads it (the parameter's default when not
    given), or None when unset and without a default."""
    unset = not alg.given(parameters, prefix)
    if unset and alg.parameterDefinition(prefix).defaultValue() is None:
        return None
    value = number_text(alg.parameterAsDouble(parameters, prefix, context))
    unit = alg.enum_text(parameters, f"{prefix}_UNIT", context)
    return value if unit == "pixels" else f"{value}{unit}"

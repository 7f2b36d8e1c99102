"""Finding the mapfilter binary (the provider setting, then $MAPFILTER, then
PATH) and what it supports (`--overwrite`), asked once per binary."""

import os
import shutil
import subprocess

# The provider setting's key (Settings > Options > Processing > Providers).
BINARY_SETTING = "MAPFILTER_BINARY"

INSTALL_HINT = (
    "build it with `cargo build --release` in the mapfilter repository and "
    "copy target/release/mapfilter onto the PATH (e.g. /usr/local/bin), or "
    "name it in Settings > Options > Processing > Providers > mapfilter > "
    "'mapfilter binary', or in the MAPFILTER environment variable"
)


class BinaryNotFound(Exception):
    """No usable mapfilter binary; the message says where it was looked for."""


def _setting():
    try:
        from processing.core.ProcessingConfig import ProcessingConfig
    except ImportError:
        return ""
    value = ProcessingConfig.getSetting(BINARY_SETTING)
    return (value or "").strip()


def find_binary():
    """The binary's path, or BinaryNotFound with how to install it."""
    for origin, value in (
        ("the provider setting 'mapfilter binary'", _setting()),
        ("$MAPFILTER", os.environ.get("MAPFILTER", "").strip()),
    ):
        if value:
            path = shutil.which(value) or value
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
            raise BinaryNotFound(
                f"mapfilter binary {value!r} (from {origin}) is not an executable file "
                f"(hint: {INSTALL_HINT})"
            )
    path = shutil.which("mapfilter")
    if path:
        return path
    raise BinaryNotFound(f"mapfilter binary not found on the PATH (hint: {INSTALL_HINT})")


_HELP = {}


def command_help(binary, command):
    """`mapfilter COMMAND --help` of this binary (cached per binary)."""
    key = (binary, os.path.getmtime(binary), command)
    if key not in _HELP:
        out = subprocess.run(
            [binary, command, "--help"], capture_output=True, text=True, timeout=60
        )
        _HELP[key] = out.stdout
    return _HELP[key]


def supports_overwrite(binary, command):
    """Whether this binary's COMMAND takes `--overwrite` (replacing an output)."""
    return "--overwrite" in command_help(binary, command)

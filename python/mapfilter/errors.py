"""The exceptions mapfilter raises: one class per kind of failure.

Every refusal or failure of the engine is a :class:`Error`, with the engine's
one-line message (``cause`` and ``hint`` also as attributes, and ``kind``, the
library's name for what failed). Its class says what failed, and each class is
also the built-in exception Python code would expect for that failure, so
``except ValueError`` still catches a bad argument and ``except OSError`` a
failed write:

- :class:`UsageError` (``ValueError``): an argument's value, or a combination
  of arguments, is wrong;
- :class:`InputError` (``ValueError``): the data given cannot be used;
- :class:`ResourceError` (``MemoryError``): a memory, disk or size limit;
- :class:`DeviceError` (``RuntimeError``): an OpenCL device or driver failed;
- :class:`IoError` (``OSError``): a read or write failed;
- :class:`Interrupted` (``KeyboardInterrupt``): a signal stopped the run;
- :class:`IncompleteError` (``RuntimeError``): work was left unfinished;
- :class:`InternalError` (``RuntimeError``): a bug of mapfilter's, to report.

Messages name settings as this package's keyword arguments (``tile=``); a
setting that only the command line has is named as the CLI's flag, saying so.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "Error",
    "UsageError",
    "InputError",
    "ResourceError",
    "DeviceError",
    "IoError",
    "Interrupted",
    "IncompleteError",
    "InternalError",
]


class Error(Exception):
    """A refusal or failure of mapfilter: ``cause`` is the one-line cause,
    ``hint`` (or None) what to do about it, ``kind`` what failed."""

    kind: str = "internal"
    cause: str
    hint: Optional[str]


class UsageError(Error, ValueError):
    """An argument's value, or a combination of arguments, is wrong."""

    kind = "usage"


class InputError(Error, ValueError):
    """The data given (an array, a file's content) cannot be used."""

    kind = "input"


class ResourceError(Error, MemoryError):
    """A memory, disk or size limit is in the way."""

    kind = "resource"


class DeviceError(Error, RuntimeError):
    """An OpenCL device or its driver failed."""

    kind = "device"


class IoError(Error, OSError):
    """Reading or writing failed."""

    kind = "io"


class Interrupted(Error, KeyboardInterrupt):
    """A signal stopped the run."""

    kind = "interrupted"


class IncompleteError(Error, RuntimeError):
    """Work was left unfinished; running again continues it."""

    kind = "incomplete"


class InternalError(Error, RuntimeError):
    """A broken invariant of mapfilter itself: a bug to report."""

    kind = "internal"


_BY_KIND: Dict[str, Type[Error]] = {
    c.kind: c
    for c in (
        UsageError,
        InputError,
        ResourceError,
        DeviceError,
        IoError,
        Interrupted,
        IncompleteError,
        InternalError,
    )
}


def _make(kind: str, cause: str, hint: Optional[str] = None) -> Error:
    """The exception of ``kind`` (a name of the library's error kinds), its
    message the cause followed by the hint, as the CLI prints them."""
    err = _BY_KIND.get(kind, InternalError)(
        cause if hint is None else f"{cause} (hint: {hint})"
    )
    err.cause = cause
    err.hint = hint
    return err

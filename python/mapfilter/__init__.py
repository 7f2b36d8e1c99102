"""mapfilter: majority (weighted class-histogram) smoothing of classified rasters.

numpy arrays in, numpy arrays out, through the same engine as the ``mapfilter``
command line (byte-identical results on the same codes); no GDAL is needed.

- :func:`smooth` smooths a 2-D array of class labels;
- :func:`sieve` removes polygons under a size (as ``gdal_sieve.py``);
- :func:`compare` gives the accuracy metrics of one label array against another;
- :func:`filter` runs image filters (``mapfilter filter --op``) on continuous data;
- :func:`devices` lists the OpenCL devices;
- :mod:`mapfilter.xarray` wraps :func:`smooth` for xarray/rioxarray DataArrays,
  NumPy- or Dask-backed.

The GIL is released while the engine computes. Refusals and failures raise
:class:`Error`, whose message is the engine's one-line cause and hint (also as
its ``cause`` and ``hint`` attributes), with settings named as this package's
keyword arguments; its subclass says what failed (:mod:`mapfilter.errors`:
bad arguments and unusable data are ``ValueError`` s, a memory limit a
``MemoryError``, a failed write an ``OSError``, ...).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import numpy as np

from . import _mapfilter
from .errors import __all__ as _error_names
from .errors import (
    DeviceError,
    Error,
    IncompleteError,
    InputError,
    InternalError,
    Interrupted,
    IoError,
    ResourceError,
    UsageError,
    _make,
)

__all__ = [
    *_error_names,
    "smooth",
    "sieve",
    "compare",
    "filter",
    "devices",
    "halo",
]

Codes = Union[str, Iterable[int], None]

# Integer dtypes whose labels go through as 16-bit codes when they fit.
_WIDE_INTEGERS = (np.int8, np.int16, np.int32, np.int64, np.uint32, np.uint64)


def _error(cause: str, hint: Optional[str] = None) -> Error:
    """An :class:`InputError` made on the Python side (the labels given
    cannot be used), shaped as the engine's."""
    return _make("input", cause, hint)


def _codes_text(option: str, codes: Codes) -> Optional[str]:
    """`keep=` / `no_vote=` as the CLI's comma list."""
    if codes is None or isinstance(codes, str):
        return codes
    return ",".join(str(int(c)) for c in codes)


def _weights_text(weights: Union[str, Mapping[int, float], None]) -> Optional[str]:
    """`class_weights=` as the CLI's CODE:WEIGHT list."""
    if weights is None or isinstance(weights, str):
        return weights
    return ",".join(f"{int(c)}:{float(w)!r}" for c, w in weights.items())


def _device_text(device: str) -> str:
    # PoCL is the OpenCL CPU device the CLI calls `cpu`.
    return "cpu" if device == "pocl" else device


def _as_codes(labels: Any, nodata: Optional[int], classes: Optional[List[int]] = None):
    """The 2-D array as codes the engine takes (uint8 or C-contiguous uint16),
    the nodata code, and how to turn the output back into the input's dtype.

    uint8 and uint16 arrays go through as they are (uint16 without a copy when
    C-contiguous). Wider integer arrays go through as uint16 codes when every
    label fits 0..65535; a nodata value outside that range (e.g. -9999) is
    stood in for by a code the array does not use (nor ``classes``), and put
    back afterwards.
    """
    a = np.asarray(labels)
    if a.ndim != 2:
        raise _error(
            f"the labels are a {a.ndim}-D array, smoothing needs a 2-D one",
            "pass one band (e.g. da[0] or array[..., 0])",
        )
    dtype = a.dtype
    if dtype == np.uint8 or dtype == np.uint16:
        if nodata is not None and not 0 <= nodata <= np.iinfo(dtype).max:
            raise _error(
                f"nodata {nodata} does not fit the array's type {dtype}",
                f"give a code from 0 to {np.iinfo(dtype).max}",
            )
        return np.ascontiguousarray(a), nodata, lambda out: out.astype(dtype, copy=False)
    if not any(dtype == t for t in _WIDE_INTEGERS):
        raise _error(
            f"the labels are {dtype}, smoothing needs integer class codes",
            "pass uint8, uint16, int16, int32 or int64 labels (e.g. array.astype(np.int32) for whole-number floats)",
        )
    valid = a if nodata is None else a[a != nodata]
    if valid.size and (valid.min() < 0 or valid.max() > 65535):
        raise _error(
            f"labels {valid.min()}..{valid.max()} do not fit the engine's 16-bit codes (0..65535)",
            "renumber them, e.g. np.unique(labels, return_inverse=True)",
        )
    codes = a.astype(np.uint16)
    if nodata is None or 0 <= nodata <= 65535:
        return codes, nodata, lambda out: out.astype(dtype)
    # A nodata outside 0..65535: a free code stands in for it.
    used = np.zeros(65536, dtype=bool)
    used[np.unique(valid)] = True
    used[[c for c in classes or [] if 0 <= c <= 65535]] = True
    free = np.flatnonzero(~used)
    if free.size == 0:
        raise _error(
            "every 16-bit code is a label, none can stand in for nodata",
            "renumber the labels, e.g. np.unique(labels, return_inverse=True)",
        )
    stand_in = int(free[-1])
    codes[a == nodata] = stand_in

    def back(out: np.ndarray) -> np.ndarray:
        result = out.astype(dtype)
        result[out == stand_in] = nodata
        return result

    return codes, stand_in, back


def smooth(
    codes: np.ndarray,
    kernel: str = "gaussian:2.5",
    *,
    method: str = "naive",
    exact: bool = False,
    ties: Optional[str] = None,
    keep: Codes = None,
    no_vote: Codes = None,
    class_weights: Union[str, Mapping[int, float], None] = None,
    nodata: Optional[int] = None,
    fill_nodata: bool = False,
    only_isolated: Optional[int] = None,
    iterations: Optional[int] = None,
    kernel_size: Optional[int] = None,
    pixel_size: Optional[float] = None,
    rank: Optional[int] = None,
    energy: Optional[float] = None,
    terms: Optional[int] = None,
    border: str = "same",
    tile: Optional[int] = None,
    device: str = "host",
    classes: Optional[Iterable[int]] = None,
    confidence: Optional[np.ndarray] = None,
    confidence_scale: Optional[float] = None,
    confidence_nodata: Optional[float] = None,
    return_seconds: bool = False,
) -> Union[np.ndarray, Tuple[np.ndarray, float]]:
    """Smooths a 2-D array of class labels with a weighted majority filter.

    Each output pixel takes the class with the largest kernel-weighted vote in
    its window, exactly as ``mapfilter smooth`` does on a raster of the same
    codes (byte-identical output).

    Parameters
    ----------
    codes : 2-D array of uint8, uint16, int16, int32 or int64 labels.
        uint8 and uint16 are used as they are (a C-contiguous uint16 array is read
        in place, without a copy); wider integers must fit 0..65535 (nodata aside).
    kernel : ``gaussian:SIGMA``, ``box:N``, ``disc:RADIUS`` in pixels, or in metres
        (``gaussian:250m``, ``disc:1km``) with ``pixel_size``; ``file:PATH``.
    method : ``naive`` (exact), ``dct5``, ``svd``, ``auto``, or any other
        method of ``mapfilter smooth --help``.
    exact : certified mode of the fast methods: byte-identical to ``naive``.
    ties : ``centre`` (default), ``smallest``, ``largest``, ``undecided:CODE``.
    keep : classes whose pixels never change (list of codes, or "80,190").
    no_vote : classes that cast no vote.
    class_weights : ``{code: weight}`` or "CODE:WEIGHT,..."; others weigh 1.
    nodata : the label of pixels that are no class (kept, and vote for nothing).
    fill_nodata : smooth nodata pixels too (fills holes from their neighbours).
    only_isolated : a pixel changes only when fewer than T neighbours share its class.
    iterations : smooth N times, each pass on the previous one's output.
    kernel_size : side of a gaussian kernel in pixels (odd).
    pixel_size : metres per pixel, for a kernel in metres.
    rank, energy, terms : the fast methods' options (``--rank``, ``--energy``, ``--terms``).
    border : ``same`` keeps the size, ``valid`` crops the halo on every side.
    tile : the engine's tile side (exact methods give the same pixels for any).
    device : ``host``, ``auto``, ``cpu`` (``pocl``: the OpenCL CPU device),
        ``gpu``, an index from :func:`devices`, ``all`` or a list such as "0,1".
    classes : the classes, decided by the caller (e.g. once for all chunks of one
        raster); default: the codes of the array.
    confidence : each pixel's vote weight, an array of the labels' shape
        (``smooth --confidence``): floats in 0..``confidence_scale`` (default 1)
        or integers in 0..``confidence_scale`` (which they need); NaN and
        ``confidence_nodata`` weigh 0. Exact methods only (``naive``, or
        ``exact=True``).
    return_seconds : also return the engine's wall time in seconds (the rest of
        the call is the binding's overhead).

    Returns
    -------
    numpy.ndarray of the input's dtype and shape (``border="same"``); with
    ``return_seconds``, the tuple (array, engine seconds).

    Raises
    ------
    mapfilter.UsageError, mapfilter.InputError : bad options or input (both
        ``ValueError`` s and :class:`Error` s), with the engine's cause and hint.

    Example
    -------
    >>> import numpy as np, mapfilter
    >>> labels = np.random.default_rng(0).integers(1, 4, (64, 64), dtype=np.uint8)
    >>> out = mapfilter.smooth(labels, "gaussian:1.5")
    >>> out.dtype, out.shape
    (dtype('uint8'), (64, 64))
    """
    classes = None if classes is None else [int(c) for c in classes]
    plane, code_nodata, back = _as_codes(codes, nodata, classes)
    out, seconds = _mapfilter.smooth_codes(
        plane,
        kernel,
        kernel_size=kernel_size,
        pixel_size=pixel_size,
        method=method,
        exact=exact,
        rank=rank,
        energy=energy,
        terms=terms,
        ties=ties,
        keep=_codes_text("keep", keep),
        no_vote=_codes_text("no_vote", no_vote),
        only_isolated=only_isolated,
        iterations=iterations,
        class_weights=_weights_text(class_weights),
        nodata=code_nodata,
        classes=classes,
        border_text=border,
        fill_nodata=fill_nodata,
        tile=tile,
        device=_device_text(device),
        **_confidence_args(confidence, codes, confidence_scale, confidence_nodata),
    )
    return (back(out), seconds) if return_seconds else back(out)


def _confidence_args(confidence, codes, scale, nodata):
    """The binding's confidence arguments: the values as float64 (exact for
    every integer and float32 value) and whether they were floats."""
    if confidence is None:
        return {}
    values = np.asarray(confidence)
    if values.shape != np.shape(codes):
        raise _error(
            f"confidence of shape {values.shape} for labels of shape {np.shape(codes)}",
            "give one confidence per pixel",
        )
    if values.dtype.kind not in "fiu":
        raise _error(f"confidence of dtype {values.dtype}", "give floats or integers")
    return dict(
        confidence=np.ascontiguousarray(values, dtype=np.float64),
        confidence_float=values.dtype.kind == "f",
        confidence_scale=scale,
        confidence_nodata=nodata,
    )


def halo(
    kernel: str,
    *,
    kernel_size: Optional[int] = None,
    pixel_size: Optional[float] = None,
    iterations: Optional[int] = None,
) -> int:
    """The pixels on each side of an output pixel that reach it: the kernel's
    radius times the iterations. Chunks of one raster smoothed apart need this
    much overlap to give the pixels of one run over the whole raster."""
    return _mapfilter.smooth_halo(
        kernel, kernel_size=kernel_size, pixel_size=pixel_size, iterations=iterations
    )


def sieve(
    codes: np.ndarray,
    threshold: Union[int, str],
    *,
    connectivity: int = 4,
    nodata: Optional[int] = None,
    pixel_size: Optional[float] = None,
) -> np.ndarray:
    """Removes polygons smaller than ``threshold``, as ``mapfilter sieve`` (and
    ``gdal_sieve.py``) does.

    A polygon (connected pixels of one code; ``connectivity`` 4 or 8) with
    fewer pixels than ``threshold`` takes the code of its largest neighbour.
    ``threshold`` is a pixel count, or an area such as "0.5ha" or "5000m2"
    with ``pixel_size`` (metres per pixel). Pixels of ``nodata`` belong to
    no polygon and never change. Returns an array of the input's dtype.
    """
    plane, code_nodata, back = _as_codes(codes, nodata)
    out = _mapfilter.sieve_codes(
        plane.astype(np.uint16, copy=False),
        str(threshold),
        connectivity=connectivity,
        nodata=code_nodata,
        pixel_size=pixel_size,
    )
    return back(out)


def compare(
    reference: np.ndarray,
    candidate: np.ndarray,
    *,
    reference_nodata: Optional[int] = None,
    candidate_nodata: Optional[int] = None,
) -> Dict[str, Any]:
    """The accuracy of ``candidate`` against ``reference`` (two label arrays of
    one shape), as ``mapfilter compare --json`` reports it: ``agreement_percent``,
    ``kappa``, ``valid_pixels``, ``equal_pixels``, ``differing_pixels``,
    ``nodata`` counts and one entry per class in ``classes`` (producer's and
    user's accuracy, F1, pixel counts). Areas are in pixels."""
    if np.shape(reference) != np.shape(candidate):
        raise _error(
            f"the arrays differ in shape: {np.shape(reference)} against {np.shape(candidate)}",
            "compare arrays of the same grid",
        )
    ref, rn, _ = _as_codes(reference, reference_nodata)
    cand, cn, _ = _as_codes(candidate, candidate_nodata)
    text = _mapfilter.compare_codes(
        ref.astype(np.uint16, copy=False),
        cand.astype(np.uint16, copy=False),
        reference_nodata=rn,
        candidate_nodata=cn,
    )
    return json.loads(text)


_IMAGE_TYPES = (np.uint8, np.uint16, np.int16, np.float32)


def filter(
    image: np.ndarray,
    ops: Union[str, List[str]],
    *,
    border: str = "reflect101",
    device: str = "host",
    nodata: Optional[float] = None,
    tile: int = 512,
) -> np.ndarray:
    """Runs a chain of image filters (``mapfilter filter --op ...``) over a
    continuous image.

    ``image`` is 2-D (one band) or 3-D ``(bands, height, width)`` of uint8,
    uint16, int16 or float32; ``ops`` one op or a list run one after another,
    e.g. ``["median:3", "gaussian:1.5"]`` (``mapfilter filter --help`` lists
    them; level ops such as pyramids are not taken here). ``border``:
    ``replicate``, ``reflect101``, ``constant:V`` or ``nodata``. Returns an
    array of the chain's output type, 2-D when the input is and one band
    comes out.
    """
    a = np.asarray(image)
    if not any(a.dtype == t for t in _IMAGE_TYPES):
        raise _error(
            f"the image is {a.dtype}, filters take uint8, uint16, int16 or float32",
            "convert it, e.g. image.astype(np.float32)",
        )
    if a.ndim not in (2, 3):
        raise _error(f"the image is a {a.ndim}-D array", "pass (height, width) or (bands, height, width)")
    bands = a[np.newaxis] if a.ndim == 2 else a
    ops = [ops] if isinstance(ops, str) else list(ops)
    out = _mapfilter.filter_image(
        np.ascontiguousarray(bands),
        ops,
        border_text=border,
        device=_device_text(device),
        nodata=nodata,
        tile=tile,
    )
    return out[0] if a.ndim == 2 and out.shape[0] == 1 else out


def devices() -> List[Dict[str, Any]]:
    """The OpenCL devices, as ``mapfilter devices`` lists them (index, name,
    platform, kind, compute units, global memory, version); the index is what
    ``device=`` takes. Empty where OpenCL is not available (``device="host"``
    always is)."""
    try:
        return _mapfilter.list_opencl_devices()
    except Error:
        return []

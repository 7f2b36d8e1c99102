"""Type stubs of the compiled extension (python/src/lib.rs); the public API
with its docstrings is mapfilter/__init__.py."""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

def smooth_codes(
    codes: npt.NDArray[np.uint8] | npt.NDArray[np.uint16],
    kernel_text: str,
    *,
    kernel_size: Optional[int] = ...,
    pixel_size: Optional[float] = ...,
    method: str = ...,
    exact: bool = ...,
    rank: Optional[int] = ...,
    energy: Optional[float] = ...,
    terms: Optional[int] = ...,
    ties: Optional[str] = ...,
    keep: Optional[str] = ...,
    no_vote: Optional[str] = ...,
    only_isolated: Optional[int] = ...,
    iterations: Optional[int] = ...,
    class_weights: Optional[str] = ...,
    nodata: Optional[int] = ...,
    classes: Optional[List[int]] = ...,
    border_text: str = ...,
    fill_nodata: bool = ...,
    tile: Optional[int] = ...,
    device: str = ...,
    confidence: Optional[npt.NDArray[np.float64]] = ...,
    confidence_float: bool = ...,
    confidence_scale: Optional[float] = ...,
    confidence_nodata: Optional[float] = ...,
) -> Tuple[npt.NDArray[np.uint16], float]: ...
def smooth_halo(
    kernel_text: str,
    *,
    kernel_size: Optional[int] = ...,
    pixel_size: Optional[float] = ...,
    iterations: Optional[int] = ...,
) -> int: ...
def sieve_codes(
    codes: npt.NDArray[np.uint16],
    threshold: str,
    *,
    connectivity: int = ...,
    nodata: Optional[int] = ...,
    pixel_size: Optional[float] = ...,
) -> npt.NDArray[np.uint16]: ...
def compare_codes(
    reference: npt.NDArray[np.uint16],
    candidate: npt.NDArray[np.uint16],
    *,
    reference_nodata: Optional[int] = ...,
    candidate_nodata: Optional[int] = ...,
) -> str: ...
def filter_image(
    image: npt.NDArray[Any],
    ops: List[str],
    *,
    border_text: str = ...,
    device: str = ...,
    nodata: Optional[float] = ...,
    tile: int = ...,
) -> npt.NDArray[Any]: ...
def list_opencl_devices() -> List[Dict[str, Any]]: ...

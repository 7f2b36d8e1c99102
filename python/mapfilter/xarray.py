"""mapfilter for xarray / rioxarray DataArrays, NumPy- or Dask-backed.

:func:`smooth` takes a 2-D DataArray of class labels and returns one of the
same shape, coordinates, attributes and CRS. A kernel in metres
(``gaussian:250m``) is converted with the pixel width of the ``rio``
transform (projected CRS: in its linear unit; geographic CRS: along the
parallel at the centre latitude, on the CRS's ellipsoid, as the CLI does),
and nodata defaults to ``da.rio.nodata``.

On a Dask-backed DataArray each chunk is smoothed with ``map_overlap``, the
overlap being the kernel's halo times the iterations and ``boundary="none"``
(the raster's edges are edges, not padding), and every chunk with the
raster's class table: exact methods (``naive``, or ``exact=True``) give the
bytes of one in-memory run, whatever the chunks. Approximate methods
(``dct5``/``svd`` without ``exact``) give approximate results that depend on
the tiling, chunks included.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

import mapfilter

__all__ = ["smooth", "pixel_width"]


def pixel_width(da: Any) -> Optional[float]:
    """Metres per pixel along a row of ``da`` from its ``rio`` transform and
    CRS, or None where it has none."""
    try:
        crs = da.rio.crs
        dx = abs(da.rio.resolution()[0])
    except Exception:  # no rioxarray, or no transform
        return None
    if crs is None:
        return None
    if crs.is_geographic:
        from pyproj import CRS

        ellipsoid = CRS.from_user_input(crs.to_wkt()).ellipsoid
        a, b = ellipsoid.semi_major_metre, ellipsoid.semi_minor_metre
        y = da[da.rio.y_dim].values
        phi = math.radians(float(y[0] + y[-1]) / 2.0)
        e2 = 1.0 - (b / a) ** 2
        n = a / math.sqrt(1.0 - e2 * math.sin(phi) ** 2)
        return n * math.cos(phi) * math.radians(dx)
    _, metres_per_unit = crs.linear_units_factor
    return dx * metres_per_unit


def smooth(
    da: Any,
    kernel: str = "gaussian:2.5",
    *,
    nodata: Any = "rio",
    pixel_size: Optional[float] = None,
    iterations: Optional[int] = None,
    kernel_size: Optional[int] = None,
    **options: Any,
) -> Any:
    """Smooths a 2-D DataArray of class labels (see :func:`mapfilter.smooth`
    for ``kernel`` and ``**options``: method, exact, ties, keep, no_vote,
    class_weights, fill_nodata, only_isolated, device, ...).

    ``nodata`` defaults to ``da.rio.nodata`` (None: no nodata);
    ``pixel_size`` (metres) defaults to the ``rio`` transform's pixel width.
    Returns a DataArray with ``da``'s coordinates, attributes, name and CRS;
    Dask-backed (lazy) when ``da`` is, computed chunk by chunk with the
    kernel's halo of overlap.
    """
    if da.ndim != 2:
        raise mapfilter._error(
            f"the DataArray has {da.ndim} dimensions {da.dims}, smoothing needs 2",
            "select one band, e.g. da.isel(band=0)",
        )
    if options.get("border", "same") != "same":
        raise mapfilter._error(
            "the xarray wrapper keeps the grid: border must be 'same'",
            "crop the result with .isel() instead",
        )
    if isinstance(nodata, str) and nodata == "rio":
        nodata = getattr(getattr(da, "rio", None), "nodata", None)
    if nodata is not None:
        nodata = int(nodata)
    if pixel_size is None:
        pixel_size = pixel_width(da)
    common = dict(
        nodata=nodata,
        pixel_size=pixel_size,
        iterations=iterations,
        kernel_size=kernel_size,
        **options,
    )
    data = da.data
    if _is_dask(data):
        import dask.array

        halo = mapfilter.halo(
            kernel, kernel_size=kernel_size, pixel_size=pixel_size, iterations=iterations
        )
        # One class table for every chunk: class weights and the code of
        # "no class" then do not depend on which classes a chunk holds.
        classes = np.unique(dask.array.unique(data).compute())
        if nodata is not None:
            classes = classes[classes != nodata]
        codes = [int(c) for c in classes]
        depth = {0: min(halo, data.shape[0]), 1: min(halo, data.shape[1])}
        out = data.map_overlap(
            _smooth_block,
            depth=depth,
            boundary="none",
            dtype=data.dtype,
            meta=np.empty((0, 0), dtype=data.dtype),
            kernel=kernel,
            classes=codes,
            **common,
        )
    else:
        out = mapfilter.smooth(np.asarray(data), kernel, **common)
    result = da.copy(data=out)
    result.attrs = dict(da.attrs)
    return result


def _smooth_block(block: np.ndarray, **kwargs: Any) -> np.ndarray:
    """One chunk with its overlap (a function of the module, so that Dask's
    worker processes can unpickle it)."""
    return mapfilter.smooth(block, **kwargs)


def _is_dask(data: Any) -> bool:
    return type(data).__module__.split(".")[0] == "dask"

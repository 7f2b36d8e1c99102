"""Fixtures of the pytest suite: a synthetic land-cover fixture, and the
`mapfilter` CLI run on GeoTIFFs of the same codes (the reference every
binding result is checked against, byte for byte)."""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli_binary():
    """The CLI built by `cargo test` (or named by MAPFILTER_BIN)."""
    named = os.environ.get("MAPFILTER_BIN")
    if named:
        return Path(named)
    for profile in ("debug", "release"):
        path = ROOT / "target" / profile / "mapfilter"
        if path.exists():
            return path
    return None


@pytest.fixture(scope="session")
def cli():
    """Runs the CLI; a missing binary fails where MAPFILTER_REQUIRE_CLI=1
    (scripts/test.sh), else skips."""
    binary = cli_binary()
    if binary is None or not binary.exists():
        if os.environ.get("MAPFILTER_REQUIRE_CLI") == "1":
            pytest.fail("no mapfilter binary in target/ (run cargo build first)")
        pytest.skip("no mapfilter binary in target/")

    def run(*args):
        done = subprocess.run(
            [str(binary), *map(str, args)], capture_output=True, text=True
        )
        return done

    return run


def landcover(height=157, width=203, classes=(1, 2, 3, 5, 8), seed=7):
    """Blobs of a few classes with salt-and-pepper noise: what smoothing is for.
    The size is no multiple of any tile or chunk side."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, len(classes), (height // 8 + 2, width // 8 + 2))
    field = np.kron(coarse, np.ones((8, 8), dtype=np.int64))[:height, :width]
    noise = rng.random((height, width)) < 0.2
    field[noise] = rng.integers(0, len(classes), noise.sum())
    return np.asarray(classes, dtype=np.uint8)[field]


@pytest.fixture
def labels():
    return landcover()


def write_tif(path, data, nodata=None, transform=None, crs=None):
    """A one-band GeoTIFF of `data` (its dtype), with rasterio."""
    import rasterio
    from rasterio.transform import from_origin

    profile = dict(
        driver="GTiff",
        height=data.shape[0],
        width=data.shape[1],
        count=1,
        dtype=data.dtype.name,
        transform=transform or from_origin(500000, 6000000, 100, 100),
        crs=crs or "EPSG:32633",
    )
    if nodata is not None:
        profile["nodata"] = nodata
    with rasterio.open(path, "w", **profile) as ds:
        ds.write(data, 1)
    return path


def read_tif(path):
    import rasterio

    with rasterio.open(path) as ds:
        return ds.read(1)


@pytest.fixture
def cli_smooth(cli, tmp_path):
    """The CLI's `smooth` on a GeoTIFF of `data`: its output array."""
    count = [0]

    def run(data, *args, nodata=None):
        count[0] += 1
        src = write_tif(tmp_path / f"in{count[0]}.tif", data, nodata=nodata)
        dst = tmp_path / f"out{count[0]}.tif"
        done = cli("smooth", src, dst, "-q", *args)
        assert done.returncode == 0, done.stderr
        return read_tif(dst)

    return run

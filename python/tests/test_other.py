"""sieve, compare, filter and devices against the CLI."""

import json
import os

import numpy as np
import pytest

import mapfilter
from conftest import read_tif, write_tif


@pytest.mark.parametrize("connectivity", [4, 8])
def test_sieve_equals_the_cli(labels, cli, tmp_path, connectivity):
    src = write_tif(tmp_path / "in.tif", labels)
    dst = tmp_path / "out.tif"
    done = cli("sieve", src, dst, "--threshold", 12, "-c", connectivity, "-q")
    assert done.returncode == 0, done.stderr
    got = mapfilter.sieve(labels, 12, connectivity=connectivity)
    assert got.dtype == labels.dtype
    np.testing.assert_array_equal(got, read_tif(dst))
    assert (got != labels).any()


def test_sieve_takes_an_area_with_the_pixel_size(labels):
    # 100 m pixels: 12 pixels are 12 ha.
    np.testing.assert_array_equal(
        mapfilter.sieve(labels, "12ha", pixel_size=100.0), mapfilter.sieve(labels, 12)
    )
    with pytest.raises(mapfilter.Error, match="pixel size"):
        mapfilter.sieve(labels, "12ha")


def test_compare_gives_the_clis_figures(labels, cli, tmp_path):
    smoothed = mapfilter.smooth(labels, "gaussian:2")
    a = write_tif(tmp_path / "a.tif", labels)
    b = write_tif(tmp_path / "b.tif", smoothed)
    done = cli("compare", a, b, "--json", "-", "-q")
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout)
    got = mapfilter.compare(labels, smoothed)
    differing = int((labels != smoothed).sum())
    assert got["differing_pixels"] == differing
    assert got["valid_pixels"] == labels.size
    for key in ("valid_pixels", "equal_pixels", "differing_pixels", "agreement_percent", "kappa"):
        assert got[key] == pytest.approx(_find(expected, key)), key
    assert [c["code"] for c in got["classes"]] == [1, 2, 3, 5, 8]


def _find(tree, key):
    """`key` anywhere in the CLI's JSON."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        for v in tree.values():
            found = _find(v, key)
            if found is not None:
                return found
    elif isinstance(tree, list):
        for v in tree:
            found = _find(v, key)
            if found is not None:
                return found
    return None


def test_compare_refuses_arrays_of_two_shapes(labels):
    with pytest.raises(mapfilter.Error, match="differ in shape"):
        mapfilter.compare(labels, labels[1:])


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_filter_equals_the_cli(cli, tmp_path, dtype):
    image = (np.random.default_rng(4).random((97, 131)) * 200).astype(dtype)
    src = write_tif(tmp_path / "in.tif", image)
    dst = tmp_path / "out.tif"
    ops = ["median:3", "gaussian:1.5"]
    done = cli("filter", src, dst, "--op", ops[0], "--op", ops[1], "-q")
    assert done.returncode == 0, done.stderr
    got = mapfilter.filter(image, ops)
    assert got.shape == image.shape and got.dtype == dtype
    np.testing.assert_array_equal(got, read_tif(dst))


def test_filter_of_bands_keeps_them(cli):
    image = np.random.default_rng(5).integers(0, 255, (3, 40, 50), dtype=np.uint8)
    got = mapfilter.filter(image, "box:3")
    assert got.shape == (3, 40, 50)
    for b in range(3):
        np.testing.assert_array_equal(got[b], mapfilter.filter(image[b], "box:3"))
    with pytest.raises(mapfilter.Error, match="float64"):
        mapfilter.filter(image.astype(np.float64), "box:3")


def test_devices_lists_what_opencl_has():
    devices = mapfilter.devices()
    assert isinstance(devices, list)
    if os.environ.get("MAPFILTER_REQUIRE_OPENCL") == "1":
        assert devices, "PoCL is installed: at least one OpenCL device"
    for d in devices:
        assert {"index", "name", "platform", "kind"} <= set(d)


def test_pocl_gives_the_hosts_bytes(labels):
    if not any(d["kind"] == "CPU" or "pthread" in d["name"].lower() or "cpu" in d["name"].lower()
               for d in mapfilter.devices()):
        if os.environ.get("MAPFILTER_REQUIRE_OPENCL") == "1":
            pytest.fail("no OpenCL CPU device")
        pytest.skip("no OpenCL CPU device")
    small = labels[:64, :80]
    np.testing.assert_array_equal(
        mapfilter.smooth(small, "gaussian:1.5", device="pocl"),
        mapfilter.smooth(small, "gaussian:1.5", device="host"),
    )

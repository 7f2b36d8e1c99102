"""mapfilter.smooth against the CLI, dtypes, nodata, errors, the GIL."""

import threading
import time

import numpy as np
import pytest

import mapfilter


@pytest.mark.parametrize(
    "method,extra",
    [
        ("naive", {}),
        ("svd", {}),
        ("dct5", {}),
        ("auto", {}),
        ("svd", {"exact": True}),
        ("dct5", {"exact": True}),
    ],
)
def test_every_method_equals_the_cli(labels, cli_smooth, method, extra):
    args = ["--kernel", "gaussian:2.5", "--method", method, "--device", "host"]
    if extra.get("exact"):
        args.append("--exact")
    expected = cli_smooth(labels, *args)
    got = mapfilter.smooth(labels, "gaussian:2.5", method=method, device="host", **extra)
    assert got.dtype == np.uint8
    assert got.shape == labels.shape
    np.testing.assert_array_equal(got, expected)
    # The smoothing did something: salt and pepper went.
    assert (got != labels).sum() > 0.05 * labels.size


def test_policies_equal_the_cli(labels, cli_smooth):
    expected = cli_smooth(
        labels,
        "--kernel", "box:5",
        "--ties", "smallest",
        "--keep", "8",
        "--no-vote", "5",
        "--class-weights", "2:3,3:0.5",
        "--iterations", "2",
    )
    got = mapfilter.smooth(
        labels,
        "box:5",
        ties="smallest",
        keep=[8],
        no_vote="5",
        class_weights={2: 3, 3: 0.5},
        iterations=2,
    )
    np.testing.assert_array_equal(got, expected)


def test_nodata_equals_the_cli(labels, cli_smooth):
    holes = labels.copy()
    holes[40:60, 50:90] = 0
    expected = cli_smooth(holes, "--kernel", "gaussian:2", nodata=0)
    got = mapfilter.smooth(holes, "gaussian:2", nodata=0)
    np.testing.assert_array_equal(got, expected)
    # Nodata stays nodata and votes for nothing.
    assert (got[40:60, 50:90] == 0).all()
    assert (got[holes != 0] != 0).all()
    filled = mapfilter.smooth(holes, "gaussian:2", nodata=0, fill_nodata=True)
    np.testing.assert_array_equal(
        filled, cli_smooth(holes, "--kernel", "gaussian:2", "--fill-nodata", nodata=0)
    )
    # Holes fill from their edges, as far as the kernel reaches.
    assert (filled[40:44, 52:88] != 0).all()


def test_uint16_codes_equal_the_cli(labels, cli_smooth):
    wide = labels.astype(np.uint16) * 1000
    expected = cli_smooth(wide, "--kernel", "disc:3")
    got = mapfilter.smooth(wide, "disc:3")
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_wider_integers_give_the_codes_result_in_their_dtype(labels, dtype):
    expected = mapfilter.smooth(labels.astype(np.uint16), "gaussian:2")
    got = mapfilter.smooth(labels.astype(dtype), "gaussian:2")
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected.astype(dtype))


def test_a_negative_nodata_of_signed_labels_is_kept(labels):
    signed = labels.astype(np.int32)
    signed[10:30, 10:30] = -9999
    as_zero = labels.copy()
    as_zero[10:30, 10:30] = 0
    reference = mapfilter.smooth(as_zero, "gaussian:2", nodata=0).astype(np.int32)
    reference[reference == 0] = -9999
    got = mapfilter.smooth(signed, "gaussian:2", nodata=-9999)
    np.testing.assert_array_equal(got, reference)
    assert (got[10:30, 10:30] == -9999).all()


def test_a_strided_array_gives_its_contiguous_copys_result(labels):
    wide = np.repeat(labels.astype(np.uint16), 2, axis=1)[:, ::2]
    assert not wide.flags.c_contiguous
    np.testing.assert_array_equal(
        mapfilter.smooth(wide, "box:3"), mapfilter.smooth(np.ascontiguousarray(wide), "box:3")
    )


def test_a_kernel_in_metres_takes_the_pixel_size(labels, cli_smooth):
    # The CLI's fixture GeoTIFF has 100 m pixels.
    expected = cli_smooth(labels, "--kernel", "gaussian:250m")
    got = mapfilter.smooth(labels, "gaussian:250m", pixel_size=100.0)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, mapfilter.smooth(labels, "gaussian:2.5"))
    with pytest.raises(mapfilter.Error, match="pixel_size="):
        mapfilter.smooth(labels, "gaussian:250m")


def test_valid_border_crops_the_halo(labels, cli_smooth):
    expected = cli_smooth(labels, "--kernel", "box:5", "--border", "valid")
    got = mapfilter.smooth(labels, "box:5", border="valid")
    assert got.shape == (labels.shape[0] - 4, labels.shape[1] - 4)
    np.testing.assert_array_equal(got, expected)


def test_errors_carry_the_clis_cause_and_hint(labels, cli, tmp_path):
    from conftest import write_tif

    src = write_tif(tmp_path / "in.tif", labels)
    done = cli("smooth", src, tmp_path / "out.tif", "--kernel", "gaussian:abc")
    assert done.returncode != 0
    line = done.stderr.strip().splitlines()[-1]
    with pytest.raises(mapfilter.Error) as caught:
        mapfilter.smooth(labels, "gaussian:abc")
    assert line == "mapfilter: error: " + str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert "'abc' is not a number" in caught.value.cause
    assert caught.value.hint.startswith("kernel specs are")


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda a: mapfilter.smooth(a.astype(np.float32), "box:3"), "integer class codes"),
        (lambda a: mapfilter.smooth(a[None], "box:3"), "2-D"),
        (lambda a: mapfilter.smooth(a.astype(np.int32) - 5, "box:3"), "16-bit codes"),
        (lambda a: mapfilter.smooth(a, "box:3", method="nope"), "unknown method"),
        (lambda a: mapfilter.smooth(a, "box:3", device="nope"), "unknown device"),
        (lambda a: mapfilter.smooth(a, "box:3", nodata=300), "does not fit"),
        (lambda a: mapfilter.smooth(a, "box:3", method="dct5", ties="smallest"), "add exact="),
        (lambda a: mapfilter.smooth(a, "box:3", iterations=0), "iterations= must"),
    ],
)
def test_bad_input_is_refused_with_a_hint(labels, call, match):
    with pytest.raises(mapfilter.Error, match=match) as caught:
        call(labels)
    assert caught.value.hint


def test_the_gil_is_released_while_the_engine_computes():
    # A Python thread records when it runs; while the engine computes, it
    # must keep running (with the GIL held it could not run at all).
    big = np.random.default_rng(1).integers(0, 6, (512, 512), dtype=np.uint8)
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(time.perf_counter())

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        start = time.perf_counter()
        mapfilter._mapfilter.smooth_codes(big, "gaussian:4")
        end = time.perf_counter()
    finally:
        stop.set()
        thread.join()
    # The middle half of the call: Python-side argument handling lies
    # outside it, whatever the call's length.
    quarter = (end - start) / 4
    inside = [t for t in ticks if start + quarter < t < end - quarter]
    assert len(inside) > 100, f"{len(inside)} ticks of the other thread during the call"


def test_two_threads_smooth_at_once_with_the_results_of_one():
    a = np.random.default_rng(2).integers(0, 6, (300, 300), dtype=np.uint8)
    b = np.random.default_rng(3).integers(0, 6, (300, 300), dtype=np.uint16)
    results = {}
    threads = [
        threading.Thread(target=lambda k=k, x=x: results.__setitem__(k, mapfilter.smooth(x, "box:5")))
        for k, x in (("a", a), ("b", b))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(results["a"], mapfilter.smooth(a, "box:5"))
    np.testing.assert_array_equal(results["b"], mapfilter.smooth(b, "box:5"))


def test_help_shows_the_docstrings():
    assert "byte-identical" in mapfilter.smooth.__doc__
    assert "gdal_sieve.py" in mapfilter.sieve.__doc__
    assert issubclass(mapfilter.UsageError, mapfilter.Error)
    assert issubclass(mapfilter.UsageError, ValueError)


def test_the_engine_seconds_come_with_the_output_when_asked(labels):
    out, seconds = mapfilter.smooth(labels, "box:3", return_seconds=True)
    np.testing.assert_array_equal(out, mapfilter.smooth(labels, "box:3"))
    assert 0.0 < seconds < 60.0


def test_confidence_equals_the_cli(labels, cli, tmp_path):
    """Votes weighted per pixel: integer percentages and 0-1 floats, as
    `smooth --confidence` weighs a raster of them."""
    from conftest import read_tif, write_tif

    rng = np.random.default_rng(3)
    percent = rng.integers(0, 101, labels.shape, dtype=np.uint8)
    src = write_tif(tmp_path / "codes.tif", labels)
    for name, conf, scale, extra in [
        ("percent", percent, 100, ["--confidence-scale", "100"]),
        ("float", percent.astype(np.float32) / 100, None, []),
    ]:
        path = write_tif(tmp_path / f"{name}.tif", conf)
        dst = tmp_path / f"out_{name}.tif"
        done = cli("smooth", src, dst, "-q", "-k", "gaussian:2", "--device", "host",
                   "--confidence", path, *extra)
        assert done.returncode == 0, done.stderr
        got = mapfilter.smooth(labels, "gaussian:2", confidence=conf, confidence_scale=scale)
        np.testing.assert_array_equal(got, read_tif(dst))
        # The weights changed the result.
        assert (got != mapfilter.smooth(labels, "gaussian:2")).any()
    with pytest.raises(mapfilter.Error, match="scale of integer confidences"):
        mapfilter.smooth(labels, "gaussian:2", confidence=percent)
    with pytest.raises(mapfilter.Error, match="outside 0..1"):
        mapfilter.smooth(labels, "gaussian:2", confidence=percent.astype(np.float32))
    with pytest.raises(mapfilter.Error, match="one confidence per pixel"):
        mapfilter.smooth(labels, "gaussian:2", confidence=percent[:-1])


def test_an_unknown_binding_keyword_is_refused():
    # The binding reads its options by name: a misspelt one must not be
    # dropped silently (mapfilter.smooth's own signature refuses it earlier).
    labels = np.zeros((8, 8), dtype=np.uint8)
    with pytest.raises(TypeError, match="unexpected keyword argument 'kernal_size'"):
        mapfilter._mapfilter.smooth_codes(labels, "gaussian:1", kernal_size=3)
    out, _ = mapfilter._mapfilter.smooth_codes(labels, "gaussian:1", kernel_size=None)
    assert out.shape == (8, 8)

"""The numbers of BENCHMARKS.md's "Python" section: the cost of one
mapfilter.smooth call on a 1024² uint8 array against the engine's own time
and against the CLI round trip a user had to write before (numpy → temp
GeoTIFF → `mapfilter smooth` → read back), and against
scipy.ndimage.generic_filter (mode) and skimage.filters.rank.majority on the
same data (time and agreement).

    python python/bench/compare_python.py --bin target/release/mapfilter

Needs mapfilter (pip install ./python: a release build), rasterio, scipy and
scikit-image.
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

import mapfilter

SIDE = 1024
CLASSES = 8


def landcover(side=SIDE, seed=11):
    """Blobs of 8 classes with 20 % salt-and-pepper noise."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, CLASSES, (side // 16 + 1, side // 16 + 1))
    field = np.kron(coarse, np.ones((16, 16), dtype=np.int64))[:side, :side]
    noise = rng.random((side, side)) < 0.2
    field[noise] = rng.integers(0, CLASSES, noise.sum())
    return field.astype(np.uint8)


def timed(f, repeat):
    """Median and minimum wall time of `repeat` calls of f, and its last result."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), result


def cli_round_trip(binary, labels, kernel):
    import rasterio
    from rasterio.transform import from_origin

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.tif"), os.path.join(tmp, "out.tif")
        with rasterio.open(src, "w", driver="GTiff", height=labels.shape[0], width=labels.shape[1],
                           count=1, dtype="uint8", transform=from_origin(500000, 6000000, 100, 100),
                           crs="EPSG:32633") as ds:
            ds.write(labels, 1)
        subprocess.run([binary, "smooth", src, dst, "--kernel", kernel, "--device", "host", "-q"],
                       check=True)
        with rasterio.open(dst) as ds:
            return ds.read(1)


def agreement(a, b):
    return 100.0 * float((a == b).mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="the mapfilter CLI (release)")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    labels = landcover()
    print(f"input: {SIDE}x{SIDE} uint8, {CLASSES} classes; cores: {os.cpu_count()}; "
          f"load: {os.getloadavg()[0]:.2f}")

    for kernel in ("box:5", "gaussian:2.5"):
        mapfilter.smooth(labels, kernel)  # warm-up
        engine = []

        def call():
            out, seconds = mapfilter.smooth(labels, kernel, return_seconds=True)
            engine.append(seconds)
            return out

        med, best, ours = timed(call, args.repeat)
        # Overhead: the call's wall time less the engine's.
        med_engine = statistics.median(engine)
        cli_med, cli_best, cli_out = timed(lambda: cli_round_trip(args.bin, labels, kernel),
                                           args.repeat)
        assert np.array_equal(cli_out, ours), "the CLI and the binding disagree"
        tiny = labels[:8, :8].copy()
        tiny_med, _, _ = timed(lambda: mapfilter.smooth(tiny, kernel), 200)
        print(f"{kernel}: mapfilter.smooth {med * 1e3:.1f} ms (min {best * 1e3:.1f}), "
              f"engine {med_engine * 1e3:.1f} ms, overhead {(med - med_engine) * 1e3:.2f} ms; "
              f"8x8 call {tiny_med * 1e3:.3f} ms; "
              f"CLI round trip {cli_med * 1e3:.1f} ms (min {cli_best * 1e3:.1f}); identical")

    # The same window as scipy's and skimage's: 5x5, every pixel weighing 1.
    ours = mapfilter.smooth(labels, "box:5")
    smallest = mapfilter.smooth(labels, "box:5", ties="smallest")

    from scipy import ndimage

    outside = 255

    def mode(values):
        # Pixels beyond the raster (cval) vote for nothing, as in mapfilter;
        # ties: the smallest code (bincount's argmax).
        return np.bincount(values[values != outside].astype(np.int64)).argmax()

    t0 = time.perf_counter()
    scipy_out = ndimage.generic_filter(labels, mode, size=5, mode="constant", cval=outside)
    scipy_s = time.perf_counter() - t0
    print(f"scipy.ndimage.generic_filter mode 5x5: {scipy_s:.2f} s; agreement with "
          f"mapfilter box:5 {agreement(scipy_out, ours):.4f} % (ties centre), "
          f"{agreement(scipy_out, smallest):.4f} % (ties smallest)")

    from skimage.filters.rank import majority

    footprint = np.ones((5, 5), dtype=bool)
    sk_med, sk_best, sk_out = timed(lambda: majority(labels, footprint), args.repeat)
    print(f"skimage.filters.rank.majority 5x5: {sk_med * 1e3:.1f} ms (min {sk_best * 1e3:.1f}); "
          f"agreement with mapfilter box:5 {agreement(sk_out, ours):.4f} % (ties centre), "
          f"{agreement(sk_out, smallest):.4f} % (ties smallest)")


if __name__ == "__main__":
    main()

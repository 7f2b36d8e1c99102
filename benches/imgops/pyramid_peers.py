#!/usr/bin/env python3
"""OpenCV peers of the device pyramid bench (benches/imgops/gpu.sh pyramid): Scharr
dx and dy of size 3, 5, 7, 9 over every level of a scale space built
beforehand (the same level sizes as `mapfilter bench-filter --op
scale-space:O:S --op scharr:N`; the levels themselves are OpenCV's
pyrDown + GaussianBlur, which time the same), timed for the filters only:
CPU on numpy arrays, and with --umat on cv2.UMat levels uploaded beforehand
(results left on the device, cv2.ocl.finish() before the clock stops), the
analogue of our device-held pyramid. One JSON line per (peer, size);
then per peer the build alone ("op": "build": pyrDown + GaussianBlur of
every level from the base, on the device for UMat) and the whole ("op":
"whole:scharr:3": build, Scharr 3 over every level, results back in host
memory), the analogue of `mapfilter filter` without the file I/O."""
import argparse
import json
import os
import statistics
import sys
import time

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "filters"))
from bench_filters import scharr_kernels  # noqa: E402

R101 = cv2.BORDER_REFLECT_101


def base_image(w, h):
    return np.random.default_rng(1).integers(0, 256, (h, w), dtype=np.uint8)


def levels(w, h, octaves, scales, sigma0, img=None):
    img = base_image(w, h) if img is None else img
    out, base = [], img
    for o in range(octaves):
        if o:
            base = cv2.pyrDown(base)
        for s in range(scales):
            sigma = sigma0 * 2 ** (s / scales)
            k = int(round(6 * sigma + 1)) | 1
            out.append(cv2.GaussianBlur(base, (k, k), sigma, borderType=R101))
    return out


def scharr_all(lv, n, umat):
    kx, ky = scharr_kernels(n)
    res = []
    for g in lv:
        if n == 3:
            res.append(cv2.Scharr(g, cv2.CV_32F, 1, 0, borderType=R101))
            res.append(cv2.Scharr(g, cv2.CV_32F, 0, 1, borderType=R101))
        else:
            res.append(cv2.filter2D(g, cv2.CV_32F, kx, borderType=R101))
            res.append(cv2.filter2D(g, cv2.CV_32F, ky, borderType=R101))
    if umat:
        cv2.ocl.finish()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="3866x4320")
    ap.add_argument("--octaves", type=int, default=4)
    ap.add_argument("--scales", type=int, default=4)
    ap.add_argument("--sigma0", type=float, default=1.6)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--umat", action="store_true")
    args = ap.parse_args()
    w, h = map(int, args.size.split("x"))
    lv = levels(w, h, args.octaves, args.scales, args.sigma0)
    px = sum(g.shape[0] * g.shape[1] for g in lv)
    peers = [("opencv-cpu", False)]
    if args.umat:
        cv2.ocl.setUseOpenCL(True)
        peers.append(("opencv-umat", True))
    for name, umat in peers:
        src = [cv2.UMat(g) for g in lv] if umat else lv
        for n in (3, 5, 7, 9):
            scharr_all(src, n, umat)  # warm-up: builds OpenCL programs
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                scharr_all(src, n, umat)
                times.append((time.perf_counter() - t) * 1e3)
            print(json.dumps({"op": f"scharr:{n}", "peer": name, "levels": len(lv), "pixels": px,
                              "min_ms": round(min(times), 3), "median_ms": round(statistics.median(times), 3),
                              "threads": cv2.getNumThreads()}), flush=True)
    for name, umat in peers:
        base = base_image(w, h)

        def build():
            b = cv2.UMat(base) if umat else base
            lv = levels(w, h, args.octaves, args.scales, args.sigma0, b)
            if umat:
                cv2.ocl.finish()
            return lv

        def whole():
            res = scharr_all(build(), 3, umat)
            return [r.get() for r in res] if umat else res

        for label, fn in (("build", build), ("whole:scharr:3", whole)):
            fn()  # warm-up
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t) * 1e3)
            print(json.dumps({"op": label, "peer": name, "levels": len(lv), "pixels": px,
                              "min_ms": round(min(times), 3), "median_ms": round(statistics.median(times), 3),
                              "threads": cv2.getNumThreads()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

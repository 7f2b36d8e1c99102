#!/usr/bin/python3
"""Times mapfilter's image ops against OpenCV on the same machine, in one run.

    /usr/bin/python3 benches/filters/bench_filters.py [--bin target/release/mapfilter]
        [--size 4096] [--bands 3] [--repeat 5] [--stat min|median]
        [--device host|cpu|gpu|INDEX] [--umat]

Ours: `mapfilter bench-filter --op OP --size S --bands B --device D` (a
synthetic photo-like image in memory; `--repeat` timed runs after one
warm-up), timed from host planes in to host planes out. OpenCV: the call
printed in the table, on a random image of the same size and type,
`--repeat` runs after one warm-up. With --umat OpenCV runs its OpenCL path
and is timed the same way as ours, host array in → host array out:
`cv2.UMat(img)` (upload), the call, `.get()` of every result (download);
that is the "OpenCV ms" column and the ratio. A second column, "UMat
resident ms", times the call and `.get()` on a UMat made before the clock
starts (upload excluded), as the first GPU comparison did. Ours takes planes
(band after band), OpenCV an interleaved array: each library's own layout,
the same bytes. Both sides use all cores. Each figure is the best (`--stat
min`, the default) or the median of the runs, of the wall time and of the
CPU time (all threads; steadier on a shared machine). Prints a Markdown
table and writes JSON with --json. With --device other than host, a median
7×7 case is added (OpenCV's OpenCL medianBlur has kernels for 3 and 5 only).

With --imgops the pyramid, colour and demosaic ops run instead, each at its
own size (`IMGOPS`: 1920×1080 mosaics for demosaicing, the reference size;
4096² RGB for the others); --size and --bands do not apply there.

With --scale-space the reference scale space runs instead: a 3866×4320
Byte band, 4 octaves × 4 scales (σ = 1.6·2^(s/4)), Scharr ∂x and ∂y of size
3, 5, 7 and 9 on every one of the 16 levels. Ours: the 16 level chains that
`filter --op scale-space:4:4 --op scharr:N` runs (`pyrdown` o times,
`gaussian:σ`, `scharr:N`, each from the input), each timed in memory by
bench-filter, summed. OpenCV: the same levels built once per octave
(`cv2.pyrDown` of the previous octave's base, `cv2.GaussianBlur` with our
kernel size, then `cv2.filter2D` to CV_32F with our dilated Scharr kernels,
`cv2.Scharr` at size 3).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import cv2
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
R101 = cv2.BORDER_REFLECT_101
SHARPEN3 = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)
SHARPEN5 = np.full((5, 5), -1, np.float32)
SHARPEN5[1:4, 1:4] = 2
SHARPEN5[2, 2] = 8
SHARPEN5 /= 8


def oil(img):
    if not hasattr(cv2, "xphoto"):
        return None
    return cv2.xphoto.oilPainting(img, 9, 1)


CASES = [
    ("box 3x3", ["box:3"], "cv2.blur(img, (3, 3), borderType=BORDER_REFLECT_101)", lambda i: cv2.blur(i, (3, 3), borderType=R101)),
    ("box 5x5", ["box:5"], "cv2.blur(img, (5, 5), borderType=BORDER_REFLECT_101)", lambda i: cv2.blur(i, (5, 5), borderType=R101)),
    ("gaussian s=1 7x7", ["gaussian:1:7"], "cv2.GaussianBlur(img, (7, 7), 1, borderType=BORDER_REFLECT_101)", lambda i: cv2.GaussianBlur(i, (7, 7), 1, borderType=R101)),
    ("sharpen 3x3", ["sharpen:3"], "cv2.filter2D(img, -1, SHARPEN3, borderType=BORDER_REFLECT_101)", lambda i: cv2.filter2D(i, -1, SHARPEN3, borderType=R101)),
    ("sharpen 5x5", ["sharpen:5"], "cv2.filter2D(img, -1, SHARPEN5, borderType=BORDER_REFLECT_101)", lambda i: cv2.filter2D(i, -1, SHARPEN5, borderType=R101)),
    ("median 3x3", ["median:3"], "cv2.medianBlur(img, 3)", lambda i: cv2.medianBlur(i, 3)),
    ("median 5x5", ["median:5"], "cv2.medianBlur(img, 5)", lambda i: cv2.medianBlur(i, 5)),
    ("bilateral 9x9", ["bilateral:2:30:color"], "cv2.bilateralFilter(img, 9, 30, 2, borderType=BORDER_REFLECT_101)", lambda i: cv2.bilateralFilter(i, 9, 30, 2, borderType=R101)),
    ("scharr 3x3 dx+dy", ["scharr:3"], "cv2.Scharr(img, CV_32F, 1, 0) and (0, 1), BORDER_REFLECT_101", lambda i: (cv2.Scharr(i, cv2.CV_32F, 1, 0, borderType=R101), cv2.Scharr(i, cv2.CV_32F, 0, 1, borderType=R101))),
    ("oil 9x9, 20 levels", ["oil:4:20"], "cv2.xphoto.oilPainting(img, 9, 1) (contrib; other binning)", oil),
    ("histogram 256/band", ["histogram"], "cv2.calcHist([img], [c], None, [256], [0, 256]) per band", lambda i: [cv2.calcHist([i], [c], None, [256], [0, 256]) for c in range(3)]),
]

# Only where ours runs on a device (the host's median above 5 is another helper's).
DEVICE_CASES = [
    ("median 7x7", ["median:7"], "cv2.medianBlur(img, 7)", lambda i: cv2.medianBlur(i, 7)),
]


def bayer(code):
    return lambda i: cv2.cvtColor(i, code)


# (label, ops, (width, height), bands, OpenCV call, fn): the image ops of
# issue 23 at their reference sizes. OpenCV's arrays are random of that
# shape (ours: bench-filter's synthetic image); its Bayer codes are named by
# the second row (our RGGB is its BayerBG), its RGB codes take our band order.
def cv_denoise(levels, sd, sr):
    """The reference's multiresolution denoise in OpenCV, in Float32: Laplacian
    levels (pyrDown, pyrUp to size, subtract), bilateralFilter on each with
    our disc diameter 2·round(2·SD)+1, reconstruction, rounded to 8 bits."""
    d = 2 * max(1, round(2 * sd)) + 1

    def run(img):
        g = [img.astype(np.float32) if not isinstance(img, cv2.UMat) else cv2.UMat(img.get().astype(np.float32))]
        for _ in range(levels - 1):
            g.append(cv2.pyrDown(g[-1]))
        r = g[-1]
        for k in range(levels - 2, -1, -1):
            size = (g[k].shape[1], g[k].shape[0]) if not isinstance(g[k], cv2.UMat) else g[k].get().shape[1::-1]
            detail = cv2.subtract(g[k], cv2.pyrUp(g[k + 1], dstsize=size))
            smooth = cv2.bilateralFilter(detail, d, sr, sd, borderType=R101)
            r = cv2.add(smooth, cv2.pyrUp(r, dstsize=size))
        return cv2.convertScaleAbs(r) if not isinstance(r, cv2.UMat) else r
    return run


IMGOPS = [
    ("laplacian-level 4096² RGB", ["laplacian-level"], (4096, 4096), 3,
     "cv2.subtract(img, cv2.pyrUp(cv2.pyrDown(img)), dtype=cv2.CV_16S)",
     lambda i: cv2.subtract(i, cv2.pyrUp(cv2.pyrDown(i)), dtype=cv2.CV_16S)),
    ("denoise:4:1:20 1024² gray", ["denoise:4:1:20"], (1024, 1024), 1,
     "pyrDown/pyrUp/subtract/bilateralFilter(d 5)/add on Float32 levels", cv_denoise(4, 1.0, 20.0)),

    ("pyrdown 4096² RGB", ["pyrdown"], (4096, 4096), 3, "cv2.pyrDown(img)", cv2.pyrDown),
    ("pyrup 2048² RGB", ["pyrup"], (2048, 2048), 3, "cv2.pyrUp(img)", cv2.pyrUp),
    ("gray 4096² RGB", ["gray"], (4096, 4096), 3, "cv2.cvtColor(img, COLOR_RGB2GRAY)", lambda i: cv2.cvtColor(i, cv2.COLOR_RGB2GRAY)),
    ("ycbcr 4096² RGB", ["ycbcr"], (4096, 4096), 3, "cv2.cvtColor(img, COLOR_RGB2YCrCb)", lambda i: cv2.cvtColor(i, cv2.COLOR_RGB2YCrCb)),
    ("hsv 4096² RGB", ["hsv"], (4096, 4096), 3, "cv2.cvtColor(img, COLOR_RGB2HSV)", lambda i: cv2.cvtColor(i, cv2.COLOR_RGB2HSV)),
    ("demosaic bilinear 1920x1080", ["demosaic:RGGB"], (1920, 1080), 1, "cv2.cvtColor(mosaic, COLOR_BayerBG2RGB)", bayer(cv2.COLOR_BayerBG2RGB)),
    ("demosaic ea 1920x1080", ["demosaic:RGGB:ea"], (1920, 1080), 1, "cv2.cvtColor(mosaic, COLOR_BayerBG2RGB_EA)", bayer(cv2.COLOR_BayerBG2RGB_EA)),
    ("demosaic mhc 1920x1080", ["demosaic:RGGB:mhc"], (1920, 1080), 1, "none (OpenCV has no Malvar-He-Cutler; VNG shown: cv2.COLOR_BayerBG2RGB_VNG)", bayer(cv2.COLOR_BayerBG2RGB_VNG)),
]


def scharr_kernels(n):
    """Our scharr:N as N×N correlation kernels (∂x, ∂y): 3, 10, 3 across, spacing d."""
    d = n // 2
    kx = np.zeros((n, n), np.float32)
    for i, w in enumerate((3, 10, 3)):
        kx[i * d, 0] = -w
        kx[i * d, n - 1] = w
    return kx, np.ascontiguousarray(kx.T)


def scale_space(args, stat):
    octaves, scales, sigma0 = 4, 4, 1.6
    w, h = 3866, 4320
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (h, w), dtype=np.uint8)
    sigmas = [sigma0 * 2 ** (s / scales) for s in range(scales)]
    ksize = [int(round(6 * s + 1)) | 1 for s in sigmas]
    print(f"Scale space {w}x{h} Byte, {octaves} octaves x {scales} scales (sigma {', '.join(f'{s:.3f}' for s in sigmas)}), "
          f"Scharr dx+dy on all 16 levels; ours on --device {args.device}; {args.stat} of {args.repeat} runs")
    print("| Scharr | ours ms (16 level chains) | OpenCV ms | ours / OpenCV | pixels |")
    print("|---|---:|---:|---:|---:|")
    results = []
    for n in (3, 5, 7, 9):
        total = 0.0
        for o in range(octaves):
            for s in sigmas:
                ops = ["pyrdown"] * o + [f"gaussian:{s}", f"scharr:{n}"]
                t, _, _ = ours(args.bin, ops, (w, h), 1, args.device, args.repeat, stat)
                total += t
        kx, ky = scharr_kernels(n)

        def cv_run(src):
            base = src
            for o in range(octaves):
                if o:
                    base = cv2.pyrDown(base)
                for s, k in zip(sigmas, ksize):
                    g = cv2.GaussianBlur(base, (k, k), s, borderType=R101)
                    if n == 3:
                        cv2.Scharr(g, cv2.CV_32F, 1, 0, borderType=R101)
                        cv2.Scharr(g, cv2.CV_32F, 0, 1, borderType=R101)
                    else:
                        cv2.filter2D(g, cv2.CV_32F, kx, borderType=R101)
                        cv2.filter2D(g, cv2.CV_32F, ky, borderType=R101)
            return True

        cv, _ = opencv(cv_run, img, args.repeat, False, stat)
        px = sum(((w + 2 ** o - 1) >> o) * ((h + 2 ** o - 1) >> o) for o in range(octaves)) * scales
        print(f"| {n}x{n} | {total:.1f} | {cv:.1f} | {total / cv:.2f} | {px} |", flush=True)
        results.append({"scharr": n, "ours_ms": total, "opencv_ms": cv, "pixels": px})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


def ours(binary, ops, size, bands, device, repeat, stat):
    size = f"{size[0]}x{size[1]}" if isinstance(size, tuple) else str(size)
    cmd = [binary, "bench-filter", "--size", size, "--bands", str(bands), "--device", device, "--repeat", str(repeat)]
    for op in ops:
        cmd += ["--op", op]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    runs = [json.loads(line) for line in out.splitlines() if '"total_ms"' in line]
    total = stat(r["total_ms"] for r in runs)
    cpu = stat(r["cpu_ms"] for r in runs) if all("cpu_ms" in r for r in runs) else None
    kernels = [r["kernel_ms"] for r in runs if r["kernel_ms"] is not None]
    return total, cpu, (stat(kernels) if kernels else None)


def opencv(fn, img, repeat, umat, stat, resident=False):
    """(wall ms, CPU ms) of fn by `stat`: on the array; with umat from the array
    to host results (cv2.UMat(img), fn, .get()); with resident too, on a UMat
    made beforehand."""
    made = cv2.UMat(img) if resident else None

    def once():
        src = made if resident else (cv2.UMat(img) if umat else img)
        r = fn(src)
        if umat and r is not None:
            for x in (r if isinstance(r, (tuple, list)) else [r]):
                if isinstance(x, cv2.UMat):
                    x.get()
        return r

    try:
        if once() is None:
            return None, None
    except cv2.error as e:  # e.g. xphoto.oilPainting takes no UMat
        print(f"OpenCV failed, reported as n/a: {str(e).strip().splitlines()[-1]}", file=sys.stderr)
        return None, None
    times, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        once()
        times.append((time.perf_counter() - t) * 1e3)
        cpus.append((time.process_time() - c) * 1e3)
    return stat(times), stat(cpus)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mapfilter"))
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--bands", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--stat", choices=["min", "median"], default="min", help="best run or median run")
    ap.add_argument("--device", default="host")
    ap.add_argument("--umat", action="store_true", help="time OpenCV's OpenCL path (cv2.UMat)")
    ap.add_argument("--only", help="comma-separated case labels to run")
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--imgops", action="store_true", help="the pyramid, colour and demosaic ops at their reference sizes")
    ap.add_argument("--scale-space", action="store_true", help="the 3866x4320 4x4 scale space with Scharr 3-9 on every level")
    args = ap.parse_args()
    stat = (lambda v: min(list(v))) if args.stat == "min" else (lambda v: statistics.median(list(v)))
    if args.scale_space:
        return scale_space(args, stat)
    if args.umat:
        cv2.ocl.setUseOpenCL(True)
        dev = cv2.ocl.Device.getDefault()
        print(f"OpenCV OpenCL: {cv2.ocl.useOpenCL()}, device {dev.name() if dev else '?'}")
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (args.size, args.size, args.bands), dtype=np.uint8)
    print(f"OpenCV {cv2.__version__} ({cv2.getNumThreads()} threads), {args.size}x{args.size}x{args.bands} Byte, "
          f"ours on --device {args.device}, {args.stat} of {args.repeat} runs")
    if args.umat:
        print("Times: host array in -> host array out on both sides (OpenCV: cv2.UMat(img), call, .get())")
        print("| op | ours total ms | ours kernel ms | OpenCV ms | ours / OpenCV | UMat resident ms | OpenCV call |")
        print("|---|---:|---:|---:|---:|---:|---|")
    else:
        print("| op | ours total ms | ours kernel ms | OpenCV ms | ours / OpenCV | ours CPU ms | OpenCV CPU ms | CPU ratio | OpenCV call |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    cases = CASES + (DEVICE_CASES if args.device != "host" else [])
    if args.imgops:
        cases = [(label, ops, call, fn, size, bands) for label, ops, size, bands, call, fn in IMGOPS]
    else:
        cases = [c + ((args.size, args.size), args.bands) for c in cases]
    results = []
    for label, ops, call, fn, size, bands in cases:
        if args.only and label not in args.only.split(","):
            continue
        total, cpu, kernel = ours(args.bin, ops, size, bands, args.device, args.repeat, stat)
        if (size, bands) != ((args.size, args.size), args.bands):
            shape = (size[1], size[0]) + ((bands,) if bands > 1 else ())
            case_img = rng.integers(0, 256, shape, dtype=np.uint8)
        else:
            case_img = img
        cv, cv_cpu = opencv(fn, case_img, args.repeat, args.umat, stat)
        ratio = f"{total / cv:.2f}" if cv else "n/a"
        k = f"{kernel:.1f}" if kernel is not None else "-"
        c = f"{cv:.1f}" if cv else "n/a"
        res = {"op": label, "ours_ms": total, "ours_cpu_ms": cpu, "ours_kernel_ms": kernel,
               "opencv_ms": cv, "opencv_cpu_ms": cv_cpu, "call": call}
        if args.umat:
            rcv, _ = opencv(fn, case_img, args.repeat, True, stat, resident=True)
            res["opencv_resident_ms"] = rcv
            r = f"{rcv:.1f}" if rcv else "n/a"
            print(f"| {label} | {total:.1f} | {k} | {c} | {ratio} | {r} | `{call}` |", flush=True)
        else:
            oc = f"{cpu:.1f}" if cpu is not None else "-"
            cc = f"{cv_cpu:.1f}" if cv_cpu else "n/a"
            cr = f"{cpu / cv_cpu:.2f}" if cpu is not None and cv_cpu else "n/a"
            print(f"| {label} | {total:.1f} | {k} | {c} | {ratio} | {oc} | {cc} | {cr} | `{call}` |", flush=True)
        results.append(res)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

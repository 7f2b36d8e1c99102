#!/usr/bin/python3
"""Compare mapfilter's image ops with OpenCV on a real photograph and a real
elevation model (data/photo_grace_hopper.tif, data/dem_jacksboro.tif).

Run with Debian's python (python3-opencv, python3-numpy):
    /usr/bin/python3 scripts/opencv_compare.py [--bin target/release/mapfilter]

Rasters go through `gdal_translate -of ENVI` (raw band-sequential) so no
Python GDAL binding is needed. Every OpenCV call is printed as it is made.
Checks: identical results for median 3x3/5x5, box blur 3x3/5x5 and Scharr 3x3
(dx and dy); PSNR >= 50 dB for gaussian and bilateral (peak: 255 for the
photo, the value range for the DEM); identical pyrDown/pyrUp (once and
twice) on the photo, the DEM (Int16, and as integer-valued Float32) and
generated noise of odd sizes in every sample type (Float32 noise: within
rounding of the sum order, which OpenCV varies between its vector and
scalar code); identical gray/ycbcr/hsv (cvtColor with COLOR_RGB2GRAY,
COLOR_RGB2YCrCb with Cr and Cb swapped into our Y, Cb, Cr order, and
COLOR_RGB2HSV: GDAL's band order is R, G, B) on the photo and on generated
8-bit colours, UInt16 gray/ycbcr, and Float32 within rounding; identical
demosaic bilinear and ea (COLOR_Bayer??2RGB and ..._EA, OpenCV's name for
each of our patterns: RGGB BayerBG, BGGR BayerRG, GRBG BayerGB, GBRG
BayerGR) on mosaics made from the photo (odd crop) and on 8/16-bit noise;
identical Laplacian pyramid levels (laplacian-pyramid:LEVELS against
pyrDown, pyrUp cut to the finer level's size and cv2.subtract into Int16 for
Byte, Float32 otherwise; the top level is the last pyrDown) on the photo and
on noise of odd sizes; identical addWeighted (mapfilter blend) on 8-bit.
Exit status 1 if any check fails.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import cv2
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = {"Byte": np.uint8, "Int16": np.int16, "UInt16": np.uint16, "Float32": np.float32}


def read_raster(path, tmp):
    """The raster as an H x W x bands numpy array (through a raw ENVI copy)."""
    raw = os.path.join(tmp, os.path.basename(path) + ".bin")
    subprocess.run(["gdal_translate", "-q", "-of", "ENVI", "-co", "INTERLEAVE=BSQ", path, raw], check=True)
    hdr = open(raw[:-4] + ".hdr").read() if os.path.exists(raw[:-4] + ".hdr") else open(raw + ".hdr").read()
    fields = {}
    for line in hdr.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            fields[k.strip()] = v.strip()
    w, h, b = int(fields["samples"]), int(fields["lines"]), int(fields["bands"])
    code = int(fields["data type"])
    dtype = {1: np.uint8, 2: np.int16, 12: np.uint16, 4: np.float32}[code]
    data = np.fromfile(raw, dtype=dtype).reshape(b, h, w)
    return np.ascontiguousarray(np.transpose(data, (1, 2, 0)))


def write_raster(arr, path, tmp):
    """Writes an H x W (x bands) array as a GeoTIFF (through a raw ENVI file)."""
    a = arr if arr.ndim == 3 else arr[:, :, None]
    h, w, b = a.shape
    code = {np.dtype(np.uint8): 1, np.dtype(np.int16): 2, np.dtype(np.uint16): 12, np.dtype(np.float32): 4}[a.dtype]
    raw = os.path.join(tmp, os.path.basename(path) + ".raw")
    np.ascontiguousarray(np.transpose(a, (2, 0, 1))).tofile(raw)
    with open(raw[:-4] + ".hdr", "w") as f:
        f.write(f"ENVI\nsamples = {w}\nlines = {h}\nbands = {b}\nheader offset = 0\n"
                f"file type = ENVI Standard\ndata type = {code}\ninterleave = bsq\nbyte order = 0\n")
    subprocess.run(["gdal_translate", "-q", "-of", "GTiff", raw, path], check=True)
    return path


def noise(rng, shape, dtype):
    """Random samples over the whole range of an integer type; -500..500 for Float32."""
    if dtype == np.float32:
        return rng.uniform(-500, 500, shape).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def ours(binary, src, ops, border, tmp, name):
    out = os.path.join(tmp, name + ".tif")
    cmd = [binary, "filter", src, out, "--border", border, "--compress", "none", "-q", "--overwrite"]
    for op in ops:
        cmd += ["--op", op]
    print("  mapfilter:", " ".join(cmd[1:]).replace(tmp + "/", ""))
    subprocess.run(cmd, check=True)
    return read_raster(out, tmp)


def psnr(a, b, peak):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(peak * peak / mse)


def squeeze(a):
    return a[:, :, 0] if a.ndim == 3 and a.shape[2] == 1 else a


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mapfilter"))
    args = ap.parse_args()
    print(f"OpenCV {cv2.__version__}, numpy {np.__version__}, binary {args.bin}")
    failures = []
    R101 = cv2.BORDER_REFLECT_101

    def check(label, got, want, mode, peak=None, scale=1.0):
        got, want = squeeze(got), squeeze(want)
        if got.shape != want.shape:
            failures.append(label)
            print(f"  FAIL {label}: shapes {got.shape} vs {want.shape}")
            return
        if mode == "rounding":
            # Float32 sums in another order: a few units in the last place of
            # the summands (`scale`: the input's largest magnitude).
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            tol = 4 * np.finfo(np.float32).eps * np.maximum(np.abs(want.astype(np.float64)), scale)
            n = int(np.count_nonzero(got != want))
            ok = bool(np.all(diff <= tol))
            print(f"  {'ok  ' if ok else 'FAIL'} {label}: {n} of {got.size} samples differ, "
                  f"max |diff| {float(diff.max()):g} (within 4 ulp required)")
        elif mode == "identical":
            diff = int(np.count_nonzero(got != want))
            ok = diff == 0
            print(f"  {'ok  ' if ok else 'FAIL'} {label}: {diff} of {got.size} samples differ (identical required)")
        else:
            p = psnr(got, want, peak)
            ok = p >= 50
            maxd = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
            print(f"  {'ok  ' if ok else 'FAIL'} {label}: PSNR {p:.1f} dB (>= 50 required), max |diff| {maxd:g}")
        if not ok:
            failures.append(label)

    with tempfile.TemporaryDirectory() as tmp:
        photo_path = os.path.join(ROOT, "data", "photo_grace_hopper.tif")
        dem_path = os.path.join(ROOT, "data", "dem_jacksboro.tif")
        dem32_path = os.path.join(tmp, "dem_f32.tif")
        subprocess.run(["gdal_translate", "-q", "-ot", "Float32", dem_path, dem32_path], check=True)
        for label, path in [("photo (512x600 RGB Byte)", photo_path), ("DEM (403x344 Int16)", dem_path)]:
            img = read_raster(path, tmp)
            is_photo = img.shape[2] == 3
            peak = 255.0 if is_photo else float(img.max() - img.min())
            print(f"\n== {label}")

            for k in (3, 5):
                got = ours(args.bin, path, [f"median:{k}"], "replicate", tmp, f"median{k}")
                print(f"  OpenCV: cv2.medianBlur(img, {k})  # border: replicate")
                check(f"median {k}x{k}", got, cv2.medianBlur(img, k), "identical")

            for k in (3, 5):
                got = ours(args.bin, path, [f"box:{k}"], "reflect101", tmp, f"box{k}")
                print(f"  OpenCV: cv2.blur(img, ({k}, {k}), borderType=cv2.BORDER_REFLECT_101)")
                check(f"box {k}x{k}", got, cv2.blur(img, (k, k), borderType=R101), "identical")

            got = ours(args.bin, path, ["scharr:3"], "reflect101", tmp, "scharr")
            print("  OpenCV: cv2.Scharr(img, cv2.CV_32F, 1, 0, borderType=cv2.BORDER_REFLECT_101) and (0, 1)")
            dx = cv2.Scharr(img, cv2.CV_32F, 1, 0, borderType=R101).reshape(img.shape)
            dy = cv2.Scharr(img, cv2.CV_32F, 0, 1, borderType=R101).reshape(img.shape)
            check("scharr 3x3 dx", got[:, :, 0::2], dx, "identical")
            check("scharr 3x3 dy", got[:, :, 1::2], dy, "identical")

            for sigma, k in ((1.0, 7), (2.0, 13)):
                got = ours(args.bin, path, [f"gaussian:{sigma}:{k}"], "reflect101", tmp, "gauss")
                print(f"  OpenCV: cv2.GaussianBlur(img, ({k}, {k}), {sigma}, borderType=cv2.BORDER_REFLECT_101)")
                want = cv2.GaussianBlur(img, (k, k), sigma, borderType=R101)
                check(f"gaussian sigma {sigma} {k}x{k}", got, want, "psnr", peak)

            # Bilateral: OpenCV takes Byte or Float32; its colour distance is Σ|δ| (our `color`).
            sd, sr = 2.0, (30.0 if is_photo else 20.0)
            src = path if is_photo else dem32_path
            base = img if is_photo else read_raster(dem32_path, tmp)
            dist = "color" if is_photo else "gray"
            got = ours(args.bin, src, [f"bilateral:{sd}:{sr}:{dist}"], "reflect101", tmp, "bil")
            print(f"  OpenCV: cv2.bilateralFilter(img, 9, {sr}, {sd}, borderType=cv2.BORDER_REFLECT_101)"
                  + ("" if is_photo else "  # on the DEM as Float32"))
            want = cv2.bilateralFilter(base, 9, sr, sd, borderType=R101)
            check(f"bilateral 9x9 sd {sd} sr {sr}", got, want, "psnr", peak)

        def pyramids(label, path, img, mode="identical", exact_twice=True):
            """pyrDown/pyrUp once and twice on one raster. Float32 is identical
            while the sums are exact (integer-valued data, one step); after
            that, and on float noise, it is compared within rounding."""
            scale = float(np.max(np.abs(img)))
            for ops, want in [
                (["pyrdown"], cv2.pyrDown(img)),
                (["pyrup"], cv2.pyrUp(img)),
                (["pyrdown", "pyrdown"], cv2.pyrDown(cv2.pyrDown(img))),
                (["pyrdown", "pyrup"], cv2.pyrUp(cv2.pyrDown(img))),
            ]:
                got = ours(args.bin, path, ops, "reflect101", tmp, "pyr")
                calls = "(".join(f"cv2.{'pyrDown' if o == 'pyrdown' else 'pyrUp'}" for o in reversed(ops))
                print(f"  OpenCV: {calls}(img{')' * len(ops)}")
                m = mode if exact_twice or len(ops) == 1 else "rounding"
                check(f"{label} {'+'.join(ops)}", got, want, m, scale=scale)

        print("\n== pyramids (pyrDown / pyrUp, BORDER_REFLECT_101)")
        pyramids("photo", photo_path, read_raster(photo_path, tmp))
        pyramids("DEM Int16", dem_path, read_raster(dem_path, tmp))
        pyramids("DEM as Float32", dem32_path, read_raster(dem32_path, tmp), exact_twice=False)
        rng = np.random.default_rng(23)
        for dtype, shape in [(np.uint8, (37, 23, 3)), (np.uint8, (1, 5)), (np.uint16, (29, 31)),
                             (np.int16, (7, 1)), (np.int16, (2, 3, 2)), (np.float32, (19, 27))]:
            img = noise(rng, shape, dtype)
            path = write_raster(img, os.path.join(tmp, "noise.tif"), tmp)
            mode = "rounding" if dtype == np.float32 else "identical"
            label = f"noise {np.dtype(dtype).name} {shape[1]}x{shape[0]}" + (f"x{shape[2]}" if len(shape) > 2 else "")
            pyramids(label, path, img if img.ndim == 2 or img.shape[2] > 1 else img[:, :, 0], mode)

        print("\n== colour conversions (cvtColor, bands R, G, B)")
        codes = {"gray": cv2.COLOR_RGB2GRAY, "ycbcr": cv2.COLOR_RGB2YCrCb, "hsv": cv2.COLOR_RGB2HSV}

        def colours(label, path, img, ops, mode="identical"):
            for op in ops:
                got = ours(args.bin, path, [op], "reflect101", tmp, "colour")
                print(f"  OpenCV: cv2.cvtColor(img, cv2.{['COLOR_RGB2GRAY', 'COLOR_RGB2YCrCb', 'COLOR_RGB2HSV'][list(codes).index(op)]})"
                      + ("  # Y, Cr, Cb -> Y, Cb, Cr" if op == "ycbcr" else ""))
                want = cv2.cvtColor(img, codes[op])
                if op == "ycbcr":
                    want = want[:, :, [0, 2, 1]]
                check(f"{label} {op}", got, want, mode)

        colours("photo", photo_path, read_raster(photo_path, tmp), ["gray", "ycbcr", "hsv"])
        # 8-bit colours with a channel stride of 5 (52^3 colours), odd width.
        v = np.arange(0, 256, 5, dtype=np.uint8)
        grid = np.stack(np.meshgrid(v, v, v, indexing="ij"), -1).reshape(len(v) * len(v), len(v), 3)
        path = write_raster(grid, os.path.join(tmp, "colours.tif"), tmp)
        colours("8-bit colours", path, grid, ["gray", "ycbcr", "hsv"])
        img = noise(rng, (33, 47, 3), np.uint16)
        path = write_raster(img, os.path.join(tmp, "rgb16.tif"), tmp)
        colours("noise uint16", path, img, ["gray", "ycbcr"])
        img = rng.uniform(0, 1, (31, 45, 3)).astype(np.float32)
        path = write_raster(img, os.path.join(tmp, "rgbf.tif"), tmp)
        colours("noise float32", path, img, ["gray", "ycbcr", "hsv"], "rounding")

        print("\n== demosaicing (cvtColor COLOR_Bayer??2RGB, ..._EA)")
        cv_name = {"RGGB": "BG", "BGGR": "RG", "GRBG": "GB", "GBRG": "GR"}
        where = {"RGGB": ((0, 0), (1, 1)), "BGGR": ((1, 1), (0, 0)), "GRBG": ((0, 1), (1, 0)), "GBRG": ((1, 0), (0, 1))}

        def mosaic(rgb, pattern):
            """Each pixel keeps the colour the pattern puts there."""
            m = rgb[:, :, 1].copy()
            (ry, rx), (by, bx) = where[pattern]
            m[ry::2, rx::2] = rgb[ry::2, rx::2, 0]
            m[by::2, bx::2] = rgb[by::2, bx::2, 2]
            return m

        photo = read_raster(photo_path, tmp)
        for label, rgb in [("photo 599x511", photo[:511, :599]), ("photo 255x201", photo[:201, :255]),
                           ("noise uint16 33x21", noise(rng, (21, 33, 3), np.uint16)),
                           ("noise uint8 5x3", noise(rng, (3, 5, 3), np.uint8))]:
            for pattern in cv_name:
                if label.startswith("photo 599") and pattern != "RGGB":
                    continue  # the other layouts on the smaller crop: a quicker test
                m = mosaic(rgb, pattern)
                path = write_raster(m, os.path.join(tmp, "mosaic.tif"), tmp)
                for method, suffix in [("bilinear", ""), ("ea", "_EA")]:
                    got = ours(args.bin, path, [f"demosaic:{pattern}:{method}"], "reflect101", tmp, "rgb")
                    code = f"COLOR_Bayer{cv_name[pattern]}2RGB{suffix}"
                    print(f"  OpenCV: cv2.cvtColor(mosaic, cv2.{code})")
                    check(f"{label} {pattern} {method}", got, cv2.cvtColor(m, getattr(cv2, code)), "identical")

        print("\n== Laplacian pyramid (pyrDown, pyrUp cut to size, cv2.subtract)")

        def laplacian(label, path, img, levels):
            out = os.path.join(tmp, "lap.tif")
            cmd = [args.bin, "filter", path, out, "--op", f"laplacian-pyramid:{levels}",
                   "--compress", "none", "-q", "--overwrite"]
            print("  mapfilter:", " ".join(cmd[1:]).replace(tmp + "/", ""))
            subprocess.run(cmd, check=True)
            g = [img]
            for _ in range(levels - 1):
                g.append(cv2.pyrDown(g[-1]))
            signed = cv2.CV_16S if img.dtype == np.uint8 else cv2.CV_32F
            np_signed = np.int16 if img.dtype == np.uint8 else np.float32
            for k in range(levels):
                got = read_raster(os.path.join(tmp, f"lap_L{k}.tif"), tmp)
                if k + 1 == levels:
                    print(f"  OpenCV: top = g[{k}] (pyrDown {k} times) as {np.dtype(np_signed).name}")
                    want = g[k].astype(np_signed)
                else:
                    h, w = g[k].shape[:2]
                    print(f"  OpenCV: cv2.subtract(g[{k}], cv2.pyrUp(g[{k + 1}])[:{h}, :{w}], "
                          f"dtype=cv2.{'CV_16S' if signed == cv2.CV_16S else 'CV_32F'})")
                    want = cv2.subtract(g[k], cv2.pyrUp(g[k + 1])[:h, :w], dtype=signed)
                check(f"{label} laplacian L{k}", got, want.reshape(got.shape), "identical")

        laplacian("photo", photo_path, read_raster(photo_path, tmp), 4)
        for dtype, shape, levels in [(np.uint8, (37, 23, 3), 3), (np.uint16, (29, 31), 3),
                                     (np.int16, (19, 9), 2), (np.uint8, (5, 7), 3)]:
            img = noise(rng, shape, dtype)
            path = write_raster(img, os.path.join(tmp, "noise.tif"), tmp)
            label = f"noise {np.dtype(dtype).name} {shape[1]}x{shape[0]}"
            laplacian(label, path, img, levels)

        print("\n== blend (cv2.addWeighted, 8-bit)")
        photo = read_raster(photo_path, tmp)
        # The second raster: the photo's bands in another order (the same grid).
        other_path = os.path.join(tmp, "other.tif")
        subprocess.run(["gdal_translate", "-q", "-b", "3", "-b", "1", "-b", "2", photo_path, other_path], check=True)
        other = photo[:, :, [2, 0, 1]].copy()
        for alpha, beta, gamma in [(0.7, 0.3, 0.0), (0.33, 0.77, -12.5), (1.3, -0.4, 7.25), (0.5, 0.5, 0.0)]:
            out = os.path.join(tmp, "blend.tif")
            cmd = [args.bin, "blend", photo_path, other_path, out,
                   "--weights", f"{alpha},{beta},{gamma}", "--compress", "none", "-q", "--overwrite"]
            print("  mapfilter:", " ".join(cmd[1:]).replace(tmp + "/", ""))
            subprocess.run(cmd, check=True)
            print(f"  OpenCV: cv2.addWeighted(photo, {alpha}, other, {beta}, {gamma})")
            check(f"addWeighted {alpha} {beta} {gamma}", read_raster(out, tmp),
                  cv2.addWeighted(photo, alpha, other, beta, gamma), "identical")

    print()
    if failures:
        print("FAILED:", ", ".join(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

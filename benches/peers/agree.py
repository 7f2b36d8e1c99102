#!/usr/bin/python3
"""Agreement between two class rasters, and why they differ.

    agree.py OURS THEIRS [--input IN --kernel SPEC] [--json FILE]

Prints the share of pixels (valid in both) on which OURS and THEIRS agree.
With --input and --kernel it also recomputes every pixel's class scores in
float64 (numpy) from the input and the kernel and sorts each differing pixel
into one cause:

  tie       the two best scores are equal (|s1 - s2| <= 1e-9 * s1): the tools'
            tie rules differ; counted by which rule THEIRS followed
  near-tie  the two best scores differ by less than 1e-6 of the best, below
            the weight quantisation / float summation noise
  border    not a tie, within R = N//2 pixels of the raster edge (tools treat
            pixels outside the raster differently: ignore them or replicate the edge)
  other     none of the above (a real disagreement)

Kernels: gaussian:SIGMA[:N] (exp(-(x²+y²)/2σ²), N = 2·floor(3σ)+1 by default),
box:N, disc:R (x²+y² <= R²), ball:R (x²+y² <= (R+½)², ITK's ball structuring
element used by OTB) and file:PATH (a whitespace matrix, as mapfilter's). Pixels outside the raster and nodata pixels
contribute nothing, as in mapfilter (docs/semantics.md#scores).

Needs the system python3 with numpy and GDAL's bindings (python3-gdal).
"""

import argparse
import json
import math
import sys

import numpy as np
from osgeo import gdal

gdal.UseExceptions()


def read(path):
    ds = gdal.Open(path)
    band = ds.GetRasterBand(1)
    return band.ReadAsArray().astype(np.int64), band.GetNoDataValue()


def kernel(spec):
    kind, _, rest = spec.partition(":")
    args = rest.split(":") if rest else []
    if kind == "gaussian":
        sigma = float(args[0])
        n = int(args[1]) if len(args) > 1 else 2 * math.floor(3 * sigma) + 1
        r = n // 2
        g = np.exp(-(np.arange(-r, r + 1) ** 2) / (2 * sigma * sigma))
        return np.outer(g, g), (g, g)
    if kind == "box":
        n = int(args[0])
        return np.ones((n, n)), (np.ones(n), np.ones(n))
    if kind == "disc":
        r = int(args[0])
        y, x = np.mgrid[-r : r + 1, -r : r + 1]
        return (x * x + y * y <= r * r).astype(np.float64), None
    if kind == "ball":
        r = int(args[0])
        y, x = np.mgrid[-r : r + 1, -r : r + 1]
        return (x * x + y * y <= (r + 0.5) ** 2).astype(np.float64), None
    if kind == "file":
        return np.loadtxt(rest, ndmin=2), None
    sys.exit(f"agree.py: unknown kernel {spec!r} (gaussian:S[:N], box:N, disc:R, ball:R, file:PATH)")


def correlate(ind, k, sep):
    """Σ k(dy,dx)·ind(y+dy, x+dx) on the core of a zero-padded indicator."""
    n = k.shape[0]
    r = n // 2
    h, w = ind.shape[0] - 2 * r, ind.shape[1] - 2 * r
    if sep is not None:  # separable: rows then columns
        col, row = sep
        tmp = np.zeros((ind.shape[0], w))
        for dx in range(n):
            tmp += row[dx] * ind[:, dx : dx + w]
        out = np.zeros((h, w))
        for dy in range(n):
            out += col[dy] * tmp[dy : dy + h, :]
        return out
    # General kernel: each row is a set of runs of equal weight, summed with
    # horizontal prefix sums.
    pre = np.zeros((ind.shape[0], ind.shape[1] + 1))
    np.cumsum(ind, axis=1, out=pre[:, 1:])
    out = np.zeros((h, w))
    for dy in range(n):
        dx = 0
        while dx < n:
            wgt = k[dy, dx]
            end = dx
            while end + 1 < n and k[dy, end + 1] == wgt:
                end += 1
            if wgt != 0:
                out += wgt * (pre[dy : dy + h, end + 1 : end + 1 + w] - pre[dy : dy + h, dx : dx + w])
            dx = end + 1
    return out


def analyse(src, nodata, k, sep):
    """Best and second score, smallest and largest best class, centre score per pixel."""
    r = k.shape[0] // 2
    valid = np.ones(src.shape, bool) if nodata is None else src != int(nodata)
    padded = np.pad(np.where(valid, src, -1), r, constant_values=-1)
    best = np.zeros(src.shape)
    second = np.zeros(src.shape)
    best_class = np.full(src.shape, -1)
    largest = np.full(src.shape, -1)
    centre_score = np.zeros(src.shape)
    for c in np.unique(src[valid]):
        s = correlate((padded == c).astype(np.float64), k, sep)
        centre_score[src == c] = s[src == c]
        better = s > best  # ascending classes, strict: smallest class wins ties
        second = np.where(better, best, np.maximum(second, s))
        best = np.where(better, s, best)
        best_class = np.where(better, c, best_class)
        largest = np.where(s >= best, c, largest)
    return best, second, best_class, largest, centre_score


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ours")
    p.add_argument("theirs")
    p.add_argument("--input")
    p.add_argument("--kernel")
    p.add_argument("--json")
    a = p.parse_args()

    ours, ours_nd = read(a.ours)
    theirs, theirs_nd = read(a.theirs)
    if ours.shape != theirs.shape:
        sys.exit(f"agree.py: sizes differ: {ours.shape} vs {theirs.shape}")
    ours_ok = np.ones(ours.shape, bool) if ours_nd is None else ours != int(ours_nd)
    theirs_ok = np.ones(theirs.shape, bool) if theirs_nd is None else theirs != int(theirs_nd)
    both = ours_ok & theirs_ok
    diff = both & (ours != theirs)
    n_both, n_diff = int(both.sum()), int(diff.sum())
    res = {
        "ours": a.ours,
        "theirs": a.theirs,
        "pixels_valid_in_both": n_both,
        "pixels_valid_in_one_only": int((ours_ok ^ theirs_ok).sum()),
        "pixels_differing": n_diff,
        "agreement_percent": 100.0 * (n_both - n_diff) / max(n_both, 1),
    }
    if a.input and a.kernel:
        src, nodata = read(a.input)
        k, sep = kernel(a.kernel)
        r = k.shape[0] // 2
        best, second, smallest, largest, centre_score = analyse(src, nodata, k, sep)
        margin = best - second
        tie = margin <= 1e-9 * best
        near = ~tie & (margin <= 1e-6 * best)
        border = np.zeros(src.shape, bool)
        border[:r, :] = border[-r:, :] = border[:, :r] = border[:, -r:] = True
        centre_tied = tie & (np.abs(centre_score - best) <= 1e-9 * best)
        rule_ours = np.where(centre_tied, src, smallest)
        d_tie = diff & tie
        d_near = diff & near
        d_border = diff & border & ~tie & ~near
        d_other = diff & ~border & ~tie & ~near
        res.update(
            {
                "kernel": a.kernel,
                "tie_pixels_in_raster": int(tie.sum()),
                "differing_at_border": int(d_border.sum()),
                "differing_at_ties": int(d_tie.sum()),
                "ties_where_theirs_is_smallest_tied_class": int((d_tie & (theirs == smallest)).sum()),
                "ties_where_theirs_is_largest_tied_class": int((d_tie & (theirs == largest)).sum()),
                "ties_where_theirs_is_centre_class": int((d_tie & (theirs == src)).sum()),
                "differing_at_near_ties": int(d_near.sum()),
                "differing_other": int(d_other.sum()),
                "float64_reference_vs_ours_percent": 100.0
                * float((both & (rule_ours == ours)).sum())
                / max(n_both, 1),
            }
        )
    text = json.dumps(res, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

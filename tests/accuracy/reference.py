#!/usr/bin/env python3
"""Independent plain implementation of the stratified estimators that
core/src/accuracy/ computes, written from the papers apart from the Rust code:
Stehman (2014) for strata that differ from the map classes (indicator
variables, stratified means and the combined ratio estimator, with the
finite population correction), and Olofsson et al. (2014) closed forms
(eqs. 2-10, Card's producer's accuracy variance) where the strata are the
map classes. Pontius & Millones (2011) quantity and allocation disagreement
from the estimated matrix.

Reads JSON on stdin: {"strata": [[code, pixels], ...],
"points": [[stratum, map, reference], ...]}; writes JSON on stdout with the
estimates by class (classes: sorted union of map and reference codes).
When every stratum is a map class and every point's stratum is its map
label, the Olofsson closed forms are computed too and, where the sample is
a negligible share of each stratum, must agree with the Stehman forms
(checked here: exit 1 otherwise).
"""
import json
import sys

import numpy as np


def stratified(h, N, n, y, x=None):
    """Stratified mean (x None) or combined ratio estimate and its SE."""
    N_tot = N.sum()
    ybar = np.array([y[h == k].mean() for k in range(len(N))])
    fpc = 1.0 - n / N
    s2y = np.array([y[h == k].var(ddof=1) for k in range(len(N))])
    if x is None:
        est = (N * ybar).sum() / N_tot
        var = (N**2 * fpc * s2y / n).sum() / N_tot**2
        return est, np.sqrt(var)
    xbar = np.array([x[h == k].mean() for k in range(len(N))])
    X = (N * xbar).sum()
    if X == 0:
        return None, None
    R = (N * ybar).sum() / X
    s2x = np.array([x[h == k].var(ddof=1) for k in range(len(N))])
    sxy = np.array([np.cov(x[h == k], y[h == k], ddof=1)[0, 1] for k in range(len(N))])
    var = (N**2 * fpc * (s2y + R**2 * s2x - 2 * R * sxy) / n).sum() / X**2
    return R, np.sqrt(max(var, 0.0))


def main():
    data = json.load(sys.stdin)
    codes = [int(c) for c, _ in data["strata"]]
    N = np.array([float(p) for _, p in data["strata"]])
    pts = np.array(data["points"], dtype=np.int64)
    h = np.array([codes.index(s) for s in pts[:, 0]])
    m, r = pts[:, 1], pts[:, 2]
    n = np.array([float((h == k).sum()) for k in range(len(N))])
    classes = sorted(set(m.tolist()) | set(r.tolist()))
    out = {"classes": classes}
    oa, oa_se = stratified(h, N, n, (m == r).astype(float))
    out["overall"] = [oa, oa_se]
    out["area"] = [list(stratified(h, N, n, (r == c).astype(float))) for c in classes]
    out["users"] = [
        list(stratified(h, N, n, ((m == c) & (r == c)).astype(float), (m == c).astype(float)))
        for c in classes
    ]
    out["producers"] = [
        list(stratified(h, N, n, ((m == c) & (r == c)).astype(float), (r == c).astype(float)))
        for c in classes
    ]
    matrix = np.array(
        [[stratified(h, N, n, ((m == i) & (r == j)).astype(float))[0] for j in classes] for i in classes]
    )
    out["matrix"] = matrix.tolist()
    rows, cols, diag = matrix.sum(1), matrix.sum(0), np.diag(matrix)
    out["quantity"] = float(np.abs(rows - cols).sum() / 2)
    out["allocation"] = float(np.minimum(rows - diag, cols - diag).sum())
    if codes == classes and (pts[:, 0] == m).all():
        out["olofsson"] = olofsson(codes, N, m, r)
        # Olofsson's forms leave out the finite population correction:
        # comparable where the sample is a negligible share of each stratum.
        if (n / N).max() < 1e-3:
            check(out)
    json.dump(out, sys.stdout)


def olofsson(codes, N, m, r):
    """Olofsson et al. 2014, eqs. 2-10: strata = map classes (rows i), weights W_i."""
    q = len(codes)
    counts = np.array([[((m == i) & (r == j)).sum() for j in codes] for i in codes], float)
    n_i = counts.sum(1)
    W = N / N.sum()
    p = W[:, None] * counts / n_i[:, None]
    U = np.diag(p) / p.sum(1)
    P = np.diag(p) / p.sum(0)
    O = np.diag(p).sum()
    V_O = (W**2 * U * (1 - U) / (n_i - 1)).sum()
    V_U = U * (1 - U) / (n_i - 1)
    Nj = np.array([(N / n_i * counts[:, j]).sum() for j in range(q)])
    V_P = np.zeros(q)
    for j in range(q):
        a = N[j] ** 2 * (1 - P[j]) ** 2 * U[j] * (1 - U[j]) / (n_i[j] - 1)
        b = sum(
            N[i] ** 2 * counts[i, j] / n_i[i] * (1 - counts[i, j] / n_i[i]) / (n_i[i] - 1)
            for i in range(q)
            if i != j
        )
        V_P[j] = (a + P[j] ** 2 * b) / Nj[j] ** 2
    area = p.sum(0)
    S_area = np.sqrt([(W**2 * (counts[:, k] / n_i) * (1 - counts[:, k] / n_i) / (n_i - 1)).sum() for k in range(q)])
    return {
        "overall": [O, np.sqrt(V_O)],
        "users": np.stack([U, np.sqrt(V_U)], 1).tolist(),
        "producers": np.stack([P, np.sqrt(V_P)], 1).tolist(),
        "area": np.stack([area, S_area], 1).tolist(),
        "matrix": p.tolist(),
    }


def check(out):
    """The Stehman forms (with the finite population correction, here
    negligible) against Olofsson's closed forms (without it)."""
    o = out["olofsson"]
    pairs = [(out["overall"], o["overall"])]
    for key in ("users", "producers", "area"):
        pairs += list(zip(out[key], o[key]))
    for (a, sa), (b, sb) in pairs:
        if abs(a - b) > 1e-12 or abs(sa - sb) > 1e-3 * max(sb, 1e-9):
            print(f"Stehman and Olofsson forms differ: {a} {sa} vs {b} {sb}", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()

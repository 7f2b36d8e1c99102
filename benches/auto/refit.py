#!/usr/bin/env python3
"""Refits `auto`'s per-device costs (`DeviceCosts` in core/src/method/cost.rs)
to the engine times of a grid run (benches/auto/grid.py --json).

Every candidate's cost is linear in the fields of `DeviceCosts`, so with
`-vv` auto logs, per tile, how many of each operation each candidate
counts ("auto: operations of ..."). This script reruns auto on the grid's
maps here (the counts depend on the maps and the kernel, not on the
machine; `--threads` picks the fields in use: 8 or more, HOST_WIDE), then
searches the fields, in steps of a factor, for the choices whose measured
times are most often within 15 % of the fastest exact method (ties: the
smallest sum of log(chosen / fastest)). It prints the fields before and
after and every case whose choice moves.

    python3 benches/auto/refit.py --bin target/release/mapfilter \\
        --grid OUT/grid16.jsonl --real modis512.tif --threads 16 \\
        [--start histogram=1,stream=0.44,...]

The times are the grid's (another machine's, as measured there); only the
operation counts are made here. A fit is a hypothesis: run the grid again
with the new fields before trusting it.
"""

import argparse, json, math, os, re, subprocess, sys, tempfile

FIELDS = ["histogram", "stream", "tap_stream", "svd_plane", "rank", "separable_setup",
          "naive_pixel", "naive_class", "naive_row", "run_step"]
OPS = re.compile(r"auto: operations of (.+?): ((?:\S+ ?){10})$", re.M)
EXACT = ("naive", "svd", "dct5")


def family(name):
    for f in EXACT + ("fft",):
        if f in name:
            return f
    sys.exit(f"unknown candidate {name}")


def operations(args, tmp, row):
    """{family: [count per field]} for one grid case, from auto's log here."""
    if row["map"] == "real":
        path = args.real
    else:
        pattern, classes = row["map"].split("-")
        path = os.path.join(tmp, f"{row['map']}.tif")
        if not os.path.exists(path):
            subprocess.run([args.bin, "gen", path, "--raster-size", f"{row['size']}x{row['size']}",
                            "--classes", classes, "--pattern", pattern, "--seed", "7"],
                           check=True, capture_output=True)
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
    done = subprocess.run([args.bin, "smooth", path, os.path.join(tmp, "out.tif"), "--overwrite",
                           "-k", f"gaussian:{row['sigma']:g}", "--device", "host", "--method", "auto",
                           "--exact", "-vv"], capture_output=True, text=True, env=env, check=True)
    return {family(name): [float(v) for v in counts.split()] for name, counts in OPS.findall(done.stderr)}


def choice(fields, ops):
    """The candidate the model with `fields` chooses."""
    cost = {f: sum(a * b for a, b in zip(fields, counts)) for f, counts in ops.items()}
    return min(cost, key=cost.get)


def score(fields, cases):
    """(cases within 15 %, sum of log(chosen / fastest)) with `fields`."""
    met, loss = 0, 0.0
    for _, ops, times in cases:
        best = min(times[f] for f in ops if f in times)
        ratio = times[choice(fields, ops)] / best
        met += ratio <= 1.15
        loss += math.log(ratio)
    return met, loss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/mapfilter")
    ap.add_argument("--grid", required=True, help="grid.py --json output (measured engine times)")
    ap.add_argument("--real", help="the grid's real map (its --real)")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--start", required=True, help="the fields in use, name=value,...")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    start = dict(kv.split("=") for kv in args.start.split(","))
    fields = [float(start[f]) for f in FIELDS]
    rows = [json.loads(line) for line in open(args.grid)]
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            if row["map"] == "real" and not args.real:
                continue
            label = f"{row['map']} σ={row['sigma']:g}"
            cases.append((label, operations(args, tmp, row), row["engine_ms"]))
    before = score(fields, cases)
    print(f"before: {before[0]} of {len(cases)} within 15 %, log loss {before[1]:.3f}")
    best = (before[0], -before[1])
    for _ in range(args.rounds):
        moved = False
        for i in range(len(FIELDS)):
            for step in (0.5, 0.7, 0.85, 1.2, 1.4, 2.0):
                trial = list(fields)
                trial[i] *= step
                if trial[i] == 0.0:
                    continue
                met, loss = score(trial, cases)
                if (met, -loss) > best:
                    best, fields, moved = (met, -loss), trial, True
        if not moved:
            break
    print(f"after: {best[0]} of {len(cases)} within 15 %, log loss {-best[1]:.3f}")
    print(",".join(f"{f}={v:.4g}" for f, v in zip(FIELDS, fields)))
    before_fields = [float(start[f]) for f in FIELDS]
    for label, ops, times in cases:
        was, now = choice(before_fields, ops), choice(fields, ops)
        if was != now:
            best = min(times[f] for f in ops if f in times)
            print(f"  {label:16} {was} {times[was] / best:.2f} -> {now} {times[now] / best:.2f}")


if __name__ == "__main__":
    main()

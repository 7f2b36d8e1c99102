#!/usr/bin/env python3
"""Issue 35: does `--method auto --exact` pick the fastest exact method?

On a grid of Gaussian σ × class count × map (simplex and random `gen`
maps, and a real land-cover map given with --real), runs every exact
method — naive, svd --exact, dct5 --exact — and auto --exact on one device
and records the engine time of each (`smooth --timings`, the `engine`
line: start-up, reading and writing are the same for all four). A case is
met when auto's engine time is within 15 % of the fastest of the three.

    python3 benches/auto/grid.py --bin target/release/mapfilter \\
        --device host --json OUT/auto-grid-host.jsonl \\
        [--size 512] [--sigmas 1,2,3,5,8,12,20,35,60,85] \\
        [--classes 2,4,8,17,32,64] [--real data/modis_igbp_2019_2048.tif] \\
        [--repeat 2] [--max-repeat 12 --case-s 3] [--limit-s SECONDS] \\
        [--compare OTHER_MAPFILTER]

Prints one line per case and the share of cases met. With --compare, auto
of another build runs in every case too (`auto_compared`), so that two
builds' choices meet the same fastest times. Past σ = 85 (kernels over
511) fft is a candidate too, and a method that refuses the kernel counts
as infinitely slow.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

METHODS = {
    "naive": ["--method", "naive"],
    "svd": ["--method", "svd", "--exact"],
    "dct5": ["--method", "dct5", "--exact"],
    "auto": ["--method", "auto", "--exact"],
}
# Past σ = 85 (kernels over 511) the exact baseline refuses tiles that
# would take over a CPU minute; fft, the exact method for large kernels,
# joins the candidates there.
LARGE_SIGMA = 85.0
FFT = ["--method", "fft"]
ENGINE = re.compile(r"^timing engine\s+([0-9.]+) ms", re.M)
RAN = re.compile(r"auto ran tiles: ([^;\n]*)")


def engine_ms(cmd, may_refuse=False, timeout=None):
    """The engine time of one `smooth --timings` run, and its stderr; with
    `may_refuse`, infinity where the method refuses the kernel or runs
    past `timeout` seconds."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        if may_refuse:
            return float("inf"), "timed out"
        sys.exit(f"timed out: {' '.join(cmd)}")
    if done.returncode != 0 and may_refuse:
        return float("inf"), done.stderr
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr}")
    found = ENGINE.search(done.stderr)
    if not found:
        sys.exit(f"no engine timing in: {done.stderr}")
    return float(found.group(1)), done.stderr


def measure(args, path, result, sigma, methods, exact, large):
    """The fastest engine time of each method on one case, and what auto
    ran. Rounds alternate the methods, so that a slow spell of the machine
    meets them all; after --repeat rounds, more follow (up to
    --max-repeat) while the case has run under --case-s seconds, the same
    count for every method whatever the times say. A method over twice the
    fastest exact method's time after the first round runs no more (its
    fastest time cannot come near), auto always does."""
    runs, ran, started = {name: [] for name, _ in methods}, "", time.time()
    active = list(methods)
    for round_ in range(max(args.max_repeat, args.repeat)):
        if round_ >= args.repeat and time.time() - started > args.case_s:
            break
        for name, flags in active:
            binary = args.compare if name == "auto_compared" else args.bin
            cmd = [binary, "smooth", path, result, "--overwrite", "-k",
                   f"gaussian:{sigma:g}", "--device", args.device, "--timings", "-v", *flags]
            refusable = large and name in exact
            ms, err = engine_ms(cmd, refusable, args.run_timeout if refusable else None)
            runs[name].append(ms)
            if name == "auto":
                m = RAN.search(err)
                ran = m.group(1) if m else ran
        fastest = min(min(runs[name]) for name in exact)
        active = [(name, flags) for name, flags in active
                  if name not in exact or min(runs[name]) <= 2.0 * fastest]
    return {name: min(times) for name, times in runs.items()}, ran, len(runs["auto"])


def maps(args, tmp):
    """(label, path, classes) of every map on the grid."""
    size = f"{args.size}x{args.size}"
    if args.real:
        yield "real", args.real, None
    for pattern in ("simplex", "random"):
        for c in [int(x) for x in args.classes.split(",")]:
            path = os.path.join(tmp, f"{pattern}{c}.tif")
            subprocess.run(
                [args.bin, "gen", path, "--raster-size", size, "--classes", str(c),
                 "--pattern", pattern, "--seed", "7"],
                check=True, capture_output=True)
            yield f"{pattern}-{c}", path, c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/mapfilter")
    ap.add_argument("--device", default="host")
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--sigmas", default="1,2,3,5,8,12,20,35,60,85")
    ap.add_argument("--classes", default="2,4,8,17,32,64")
    ap.add_argument("--real", help="a real class map, e.g. a 512x512 crop of the bundled MODIS map")
    ap.add_argument("--json", help="append one JSON line per case here")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of runs per case at least, the fastest of each method kept (a GPU's "
                         "first run of a kernel size builds its OpenCL program)")
    ap.add_argument("--max-repeat", type=int, default=0,
                    help="rounds per case at most, while the case has run under --case-s")
    ap.add_argument("--case-s", type=float, default=3.0,
                    help="seconds a case may run before no more rounds start past --repeat")
    ap.add_argument("--limit-s", type=float, default=1e9,
                    help="stop starting new cases after this many seconds")
    ap.add_argument("--compare", help="another build whose auto --exact runs in every case too")
    ap.add_argument("--run-timeout", type=float,
                    help="past σ = 85: a method run longer than this counts as infinitely slow")
    args = ap.parse_args()
    start = time.time()
    met = total = met_compared = 0
    methods = list(METHODS.items())
    if args.compare:
        methods.append(("auto_compared", METHODS["auto"]))
    out = open(args.json, "a") if args.json else None
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "out.tif")
        for label, path, classes in maps(args, tmp):
            for sigma in [float(s) for s in args.sigmas.split(",")]:
                if time.time() - start > args.limit_s:
                    break
                large = sigma > LARGE_SIGMA
                exact = ("naive", "svd", "dct5") + (("fft",) if large else ())
                times, ran, rounds = measure(args, path, result, sigma, methods + ([("fft", FFT)] if large else []),
                                     exact, large)
                best = min(exact, key=times.get)
                ratio = times["auto"] / times[best]
                total += 1
                met += ratio <= 1.15
                if args.compare:
                    met_compared += times["auto_compared"] / times[best] <= 1.15
                row = {"map": label, "classes": classes, "size": args.size, "sigma": sigma,
                       "device": args.device, "engine_ms": times, "fastest": best,
                       "auto_over_fastest": round(ratio, 3), "auto_ran": ran, "rounds": rounds}
                print(f"{label:12} σ={sigma:<5g} naive {times['naive']:9.1f}  svd {times['svd']:9.1f}  "
                      f"dct5 {times['dct5']:9.1f}  auto {times['auto']:9.1f} ms  "
                      + (f"  fft {times['fft']:9.1f}" if large else "")
                      + f"  auto/{best} {ratio:5.2f}  [{ran}]"
                      + (f"  compared {times['auto_compared'] / times[best]:5.2f}" if args.compare else ""),
                      flush=True)
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
    print(f"auto within 15 % of the fastest exact method: {met} of {total} cases "
          f"({100.0 * met / max(total, 1):.1f} %)")
    if args.compare:
        print(f"the compared build's auto: {met_compared} of {total} cases "
              f"({100.0 * met_compared / max(total, 1):.1f} %)")


if __name__ == "__main__":
    main()

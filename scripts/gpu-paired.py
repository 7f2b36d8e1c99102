#!/usr/bin/env python3
"""Whole `smooth` commands of two builds against GDAL's copy, paired.

On the GPU machine (after `source scripts/gpu-env.sh`, with the 415 Mpx
stand-in made by scripts/gpu-throughput.sh): per round, one `gdal_translate`
copy, then every case with both builds, their order alternating by round so
both see the same machine state. Prints one Markdown table: median and min
wall time, and the ratio of medians to the copy.

    python3 scripts/gpu-paired.py ROUNDS [AFTER_BIN [BEFORE_BIN]]

AFTER_BIN defaults to the bundle's /tmp/mf/bin/mapfilter, BEFORE_BIN to
/tmp/mf-before/bin/mapfilter (an older build unpacked beside it).
"""

import statistics
import subprocess
import sys
import time

BIG = "/tmp/landcover_28800x14400.tif"
CASES = [
    ("dct5", "-k gaussian:5 --method dct5 --device gpu"),
    ("naive", "-k gaussian:2.5 --device gpu"),
    ("exact", "-k gaussian:5 --method dct5 --exact --device gpu"),
]
COPY = ["gdal_translate", "-q", "-co", "COMPRESS=DEFLATE", "-co", "TILED=YES",
        "-co", "NUM_THREADS=ALL_CPUS", BIG, "/tmp/copy.tif"]


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    bins = {
        "after": sys.argv[2] if len(sys.argv) > 2 else "/tmp/mf/bin/mapfilter",
        "before": sys.argv[3] if len(sys.argv) > 3 else "/tmp/mf-before/bin/mapfilter",
    }
    times = {"copy": []}
    for r in range(rounds):
        times["copy"].append(timed(COPY))
        for label, args in CASES:
            order = ["after", "before"] if r % 2 == 0 else ["before", "after"]
            for build in order:
                cmd = [bins[build], "smooth", BIG, "/tmp/o.tif", "--overwrite", "-q"] + args.split()
                times.setdefault(f"{build} {label}", []).append(timed(cmd))
    base = statistics.median(times["copy"])
    print(f"{rounds} rounds\n\n| run | median s | min s | × copy |\n| --- | --- | --- | --- |")
    for key, v in times.items():
        m = statistics.median(v)
        print(f"| {key} | {m:.3f} | {min(v):.3f} | {m / base:.2f} |")


if __name__ == "__main__":
    main()

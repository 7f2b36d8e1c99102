#!/usr/bin/env bash
# Counts the instructions (valgrind's cachegrind, every thread, no cache
# simulation) of `batch run` over the bundled MODIS map cut into 16 tiles
# and of one `smooth` of the whole map, and lists the functions where they
# differ most. Instruction counts do not depend on the machine's load, so
# two builds can be compared on a shared machine where CPU time cannot.
#
#   bash benches/batch/instructions.sh [MAPFILTER] [TOP]
#
# MAPFILTER defaults to target/release/mapfilter; TOP (default 20) is how
# many functions to list. About a minute on 2 cores; needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/../.."
exe=$(realpath "${1:-target/release/mapfilter}")
top=${2:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
map=data/modis_igbp_2019_2048.tif
opts=(-k gaussian:2.5)

source benches/batch/tiles.sh
cut_4x4 "$map" "$work/tiles" 512 t
"$exe" batch plan "$work/tiles" --out "$work/b" "${opts[@]}" >/dev/null 2>&1

grind() { # output file, then the command
  local out=$1
  shift
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out" "$@" >/dev/null 2>&1
}
grind "$work/batch.cg" "$exe" batch run "$work/b" -q
grind "$work/smooth.cg" "$exe" smooth "$map" "$work/whole.tif" "${opts[@]}" -q

python3 - "$work/batch.cg" "$work/smooth.cg" "$top" <<'PY'
import collections, sys

def by_function(path):
    counts, fn = collections.Counter(), None
    for line in open(path):
        if line.startswith("fn="):
            fn = line[3:].strip()
        elif line[:1].isdigit():
            parts = line.split()
            if len(parts) >= 2:
                counts[fn] += int(parts[1])
    return counts

batch, smooth = by_function(sys.argv[1]), by_function(sys.argv[2])
b, s = sum(batch.values()), sum(smooth.values())
print(f"batch run: {b / 1e6:,.1f} M instructions; smooth: {s / 1e6:,.1f} M; "
      f"batch / smooth = {b / s:.3f}")
print("\nfunctions where they differ most (M instructions: batch run, smooth, difference):")
names = sorted(set(batch) | set(smooth), key=lambda k: -abs(batch[k] - smooth[k]))
for k in names[: int(sys.argv[3])]:
    print(f"{batch[k] / 1e6:10.1f} {smooth[k] / 1e6:10.1f} {(batch[k] - smooth[k]) / 1e6:+10.1f}  {k[:110]}")
PY

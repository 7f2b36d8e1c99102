#!/usr/bin/env bash
# Issue 4's speed target in one script: mapfilter's dct5 and certified
# (--exact) smoothing against GRASS r.neighbors' Gaussian-weighted mode, on
# the same input and in the same run.
#
#   bash benches/peers/grass-dct5.sh [--runs N] [--exact-runs M] [--base BIN] [MAPFILTER]
#
# MAPFILTER defaults to target/release/mapfilter (built if missing); --base
# names a second binary (say, the previous main's) timed beside it in the
# same script. Order: N dct5 and M --exact runs of each binary (defaults 15
# and 7), GRASS once, then the same runs again, so that both sides of GRASS
# can be compared and pooled. Every run is the whole command (GeoTIFF in,
# DEFLATE GeoTIFF out):
#   mapfilter smooth -q -k gaussian:5 --method dct5 [--exact] --device host IN OUT
# GRASS is timed on r.neighbors alone, on a raster already imported:
#   r.neighbors input=lc output=g5 method=mode weighting_function=gaussian \
#     weighting_factor=5 size=31 nprocs=2
# Output, per line: "<what> min M med M max M ms | every run in ms", and
# "grass WALL USER SYS" in seconds. BENCHMARKS.md ran it under `chrt -r 10`.
# Input: data/modis_igbp_2019_2048.tif. Needs grass-core (Debian 12). Not run by CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=15
exact_runs=7
base=""
mapfilter=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift ;;
    --exact-runs) exact_runs=$2; shift ;;
    --base) base=$(realpath "$2"); shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) mapfilter=$(realpath "$1") ;;
  esac
  shift
done
if [ -z "$mapfilter" ]; then
  [ -x target/release/mapfilter ] || cargo build --release --locked --quiet
  mapfilter=$(realpath target/release/mapfilter)
fi
command -v grass >/dev/null || { echo "grass not found: apt-get install -y grass-core" >&2; exit 1; }
input=$(realpath data/modis_igbp_2019_2048.tif)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Wall times of N runs of a command: summary, then every run.
walls() { # N CMD...
  python3 - "$@" <<'PY'
import statistics, subprocess, sys, time
n, cmd = int(sys.argv[1]), sys.argv[2:]
ts = []
for _ in range(n):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    ts.append((time.perf_counter() - t) * 1000)
s = sorted(ts)
print(f"min {s[0]:.1f} med {statistics.median(s):.1f} max {s[-1]:.1f} ms | "
      + " ".join(f"{t:.1f}" for t in ts))
PY
}

# The mapfilter runs of every binary, labelled "final" and "base".
side() {
  for pair in "final:$mapfilter" ${base:+"base:$base"}; do
    local name=${pair%%:*} bin=${pair#*:}
    local args=(smooth -q -k gaussian:5 --method dct5 --device host "$input")
    echo "dct5 $name $(walls "$runs" "$bin" "${args[@]}" "$work/dct5.tif")"
    echo "exact $name $(walls "$exact_runs" "$bin" "${args[@]}" --exact "$work/exact.tif")"
  done
}

grass -c "$input" -e "$work/loc" >/dev/null 2>&1
grass "$work/loc/PERMANENT" --exec r.in.gdal input="$input" output=lc >/dev/null 2>&1
echo "load before: $(cat /proc/loadavg)"
side
TIMEFORMAT='%R %U %S'
{ time grass "$work/loc/PERMANENT" --exec r.neighbors input=lc output=g5 method=mode \
    weighting_function=gaussian weighting_factor=5 size=31 nprocs=2 --quiet >/dev/null 2>&1; } 2>"$work/grass.time"
echo "grass $(cat "$work/grass.time")"
side
echo "load after: $(cat /proc/loadavg)"

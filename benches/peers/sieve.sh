#!/usr/bin/env bash
# Times `mapfilter sieve` against `gdal_sieve.py` (GDAL, single-threaded) on
# the same inputs, paired in one run, with peak memory (/usr/bin/time -v),
# and checks that both outputs are identical pixel for pixel.
#
#   bash benches/peers/sieve.sh [--quick] [--repeat K] [--big-repeat K] [--size N]
#
# Inputs: data/modis_igbp_2019_2048.tif (MODIS IGBP 2019, 2048x2048) and an
# NxN simplex map made by `mapfilter gen` (default N = 20000, 8 classes,
# scale 64; --quick: 6000). Cases: thresholds 10 and 100 px, connectivity 4
# and 8 (--quick: threshold 10, connectivity 4 and 8). Each command runs K
# times (default 3; on the large map --big-repeat, default 1: gdal_sieve.py
# takes about a minute there) alternating with its peer; the figure is the median
# wall-clock time of the whole command (GeoTIFF in, GeoTIFF out), and the
# largest maximum resident set size. mapfilter writes its default output
# (tiled, DEFLATE level 5); gdal_sieve.py an uncompressed striped GeoTIFF.
# Needs python3-gdal (gdal_sieve.py) and /usr/bin/time (package `time`).
# Outputs and results.tsv go to target/peers/sieve/; the rows of
# BENCHMARKS.md's table `sieve` to benches/results/$BENCH_MACHINE/sieve.jsonl
# (scripts/lib/jsonl.sh). Not run by CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
source scripts/lib/jsonl.sh

quick=0
repeat=3
big_repeat=1
size=20000
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; size=6000 ;;
    --repeat) repeat=$2; shift ;;
    --big-repeat) big_repeat=$2; shift ;;
    --size) size=$2; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
out=$root/target/peers/sieve
mkdir -p "$out"
cargo build --release --quiet
bin=$root/target/release/mapfilter
big=$out/simplex_${size}.tif
[ -f "$big" ] || "$bin" gen "$big" --size "${size}x${size}" --classes 8 --scale 64 --seed 1 -q

# Runs a command under /usr/bin/time -v; prints "seconds max_rss_kib".
measure() {
  local log
  log=$(mktemp)
  /usr/bin/time -v "$@" 2>"$log" >/dev/null || { cat "$log" >&2; rm -f "$log"; return 1; }
  awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; secs = s }
              /Maximum resident set size/ { rss = $2 }
              END { printf "%.3f %d\n", secs, rss }' "$log"
  rm -f "$log"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

cases=("10 4" "10 8" "100 4" "100 8")
[ "$quick" = 1 ] && cases=("10 4" "10 8")
printf "input\tthreshold\tconnectivity\ttool\tmedian_s\tmax_rss_mib\tidentical\n" | tee "$out/results.tsv"
jsonl_table sieve "bash benches/peers/sieve.sh $*" \
  input '`-st`' conn. mapfilter gdal_sieve.py speed-up -- lrrllr
for input in "$root/data/modis_igbp_2019_2048.tif" "$big"; do
  name=$(basename "$input" .tif)
  label="simplex ${size}²"
  [ "$input" = "$big" ] || label="MODIS 2048²"
  k=$repeat
  [ "$input" = "$big" ] && k=$big_repeat
  for c in "${cases[@]}"; do
    read -r st conn <<<"$c"
    ours=$out/${name}_${st}_${conn}_mapfilter.tif
    gdal=$out/${name}_${st}_${conn}_gdal.tif
    : >"$out/t_ours"; : >"$out/t_gdal"; rss_ours=0; rss_gdal=0
    for _ in $(seq "$k"); do
      rm -f "$ours" "$gdal"
      read -r s r < <(measure "$bin" sieve "$input" "$ours" -s "$st" -c "$conn" -q)
      echo "$s" >>"$out/t_ours"; [ "$r" -gt "$rss_ours" ] && rss_ours=$r
      read -r s r < <(measure gdal_sieve.py -q -st "$st" "-$conn" "$input" "$gdal")
      echo "$s" >>"$out/t_gdal"; [ "$r" -gt "$rss_gdal" ] && rss_gdal=$r
    done
    ident=$(/usr/bin/python3 -c 'import sys, numpy as np; from osgeo import gdal
a, b = (gdal.Open(p).ReadAsArray() for p in sys.argv[1:])
print("yes" if np.array_equal(a, b) else "NO (%d pixels differ)" % int((a != b).sum()))' "$ours" "$gdal")
    printf "%s\t%s\t%s\tmapfilter\t%s\t%d\t%s\n" "$name" "$st" "$conn" "$(median <"$out/t_ours")" $((rss_ours / 1024)) "$ident" | tee -a "$out/results.tsv"
    printf "%s\t%s\t%s\tgdal_sieve.py\t%s\t%d\t%s\n" "$name" "$st" "$conn" "$(median <"$out/t_gdal")" $((rss_gdal / 1024)) "$ident" | tee -a "$out/results.tsv"
    t_ours=$(median <"$out/t_ours")
    t_gdal=$(median <"$out/t_gdal")
    jsonl_row "$label" "$st" "$conn" \
      "$(printf '%.2f s, %d MiB' "$t_ours" $((rss_ours / 1024)))" \
      "$(printf '%.2f s, %d MiB' "$t_gdal" $((rss_gdal / 1024)))" \
      "$(awk -v a="$t_gdal" -v b="$t_ours" 'BEGIN { printf "%.1f×", a / b }')"
  done
done

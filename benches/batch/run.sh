#!/usr/bin/env bash
# Times `mapfilter batch` (release build) and prints Markdown rows:
#   1. the bundled MODIS map cut into 16 tiles: batch plan + batch run
#      against one `smooth` of the whole map (median of ROUNDS each);
#   2. `batch run` of the finished plan (nothing left to do);
#   3. `batch plan` over 2,651 small stand-in tiles on one grid;
#   4. row 1 at a realistic tile size: the map at 4× nearest (8192²) in 16
#      tiles of 2048² (median of at most 3 rounds);
#   5. where row 1's time goes: `batch plan` and `batch run` each against
#      one `smooth`, and what any command of this binary pays before it
#      starts (`mapfilter --version`: loading GDAL's libraries).
#
#   bash benches/batch/run.sh [ROUNDS]  > OUT/batch-rows.md   (Markdown rows on stdout)
# It also rewrites the table `batch` of BENCHMARKS.md as JSON lines,
# benches/results/$BENCH_MACHINE/batch.jsonl (scripts/lib/jsonl.sh; the
# committed table is BENCH_MACHINE=dev-2core), for scripts/render-benchmarks.py.
#   MAPFILTER=/tmp/mf/bin/mapfilter bash benches/batch/run.sh   (another binary,
#   e.g. the GDAL bundle on the GPU machine; row 3 needs GDAL's Python bindings)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/jsonl.sh
source benches/batch/tiles.sh
rounds=${1:-5}
exe=$(realpath "${MAPFILTER:-target/release/mapfilter}")
# Debian's python3 has GDAL's bindings and numpy (a pyenv python may not).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
map=data/modis_igbp_2019_2048.tif
opts=(-k gaussian:2.5)

cut_4x4 "$map" "$work/tiles" 512 modis

secs() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", (b - a) / 1e9 }'
}
median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f\n", m}'; }

smooth_t=(); batch_t=(); plan_only_t=(); run_only_t=(); rerun_t=(); start_t=()
for i in $(seq "$rounds"); do
  rm -f "$work/whole.tif"; rm -rf "$work/b"
  smooth_t+=("$(secs "$exe" smooth "$map" "$work/whole.tif" "${opts[@]}" -q)")
  pt=$(secs "$exe" batch plan "$work/tiles" --out "$work/b" "${opts[@]}")
  rt=$(secs "$exe" batch run "$work/b" -q)
  plan_only_t+=("$pt"); run_only_t+=("$rt")
  batch_t+=("$(awk -v a="$pt" -v b="$rt" 'BEGIN { printf "%.4f\n", a + b }')")
  rerun_t+=("$(secs "$exe" batch run "$work/b" -q)")
  start_t+=("$(secs "$exe" --version)")
done
s=$(printf '%s\n' "${smooth_t[@]}" | median)
b=$(printf '%s\n' "${batch_t[@]}" | median)
r=$(printf '%s\n' "${rerun_t[@]}" | median)
po=$(printf '%s\n' "${plan_only_t[@]}" | median)
ro=$(printf '%s\n' "${run_only_t[@]}" | median)
st=$(printf '%s\n' "${start_t[@]}" | median)
# Row 1 at a realistic tile size: the same map at 4x nearest, 16 tiles of 2048².
gdal_translate -q -r nearest -outsize 8192 8192 -co TILED=YES -co COMPRESS=DEFLATE "$map" "$work/big.tif"
cut_4x4 "$work/big.tif" "$work/bigtiles" 2048 big -co TILED=YES -co COMPRESS=DEFLATE
big_smooth_t=(); big_batch_t=()
for i in $(seq "$(( rounds < 3 ? rounds : 3 ))"); do
  rm -f "$work/bigwhole.tif"; rm -rf "$work/bb"
  big_smooth_t+=("$(secs "$exe" smooth "$work/big.tif" "$work/bigwhole.tif" "${opts[@]}" -q)")
  pt=$(secs "$exe" batch plan "$work/bigtiles" --out "$work/bb" "${opts[@]}")
  rt=$(secs "$exe" batch run "$work/bb" -q)
  big_batch_t+=("$(awk -v a="$pt" -v b="$rt" 'BEGIN { printf "%.4f\n", a + b }')")
done
bs=$(printf '%s\n' "${big_smooth_t[@]}" | median)
bb=$(printf '%s\n' "${big_batch_t[@]}" | median)
big_ratio=$(awk -v b="$bb" -v s="$bs" 'BEGIN { print b / s }')

# The batch's outputs equal the whole map's smooth (checked, not timed).
"$exe" batch report "$work/b" >/dev/null
# Raw pixels of both, compared byte for byte (gdal_translate only, so that
# the script also runs where GDAL's Python bindings are missing).
gdal_translate -q -of ENVI "$work/b/mosaic.vrt" "$work/joined.raw"
gdal_translate -q -of ENVI "$work/whole.tif" "$work/whole.raw"
cmp_pixels=$(cmp -s "$work/joined.raw" "$work/whole.raw" && echo identical || echo DIFFERENT)

# 2,651 stand-in tiles (64x64 Byte, nodata 0) on one grid, 51 x 52 less one
# (made with GDAL's Python bindings; skipped where they are missing).
mkdir -p "$work/many"
if "$py" -c "from osgeo import gdal" 2>/dev/null; then
"$py" - "$work/many" <<'PY'
import sys, numpy as np
from osgeo import gdal, osr
out = sys.argv[1]
srs = osr.SpatialReference(); srs.ImportFromEPSG(4326)
drv = gdal.GetDriverByName("GTiff")
rng = np.random.default_rng(1)
data = rng.integers(1, 12, size=(64, 64), dtype=np.uint8)
n = 0
for r in range(52):
    for c in range(51):
        if n == 2651:
            break
        ds = drv.Create(f"{out}/t_{r:02d}_{c:02d}.tif", 64, 64, 1, gdal.GDT_Byte)
        ds.SetGeoTransform([c * 64 * 0.001, 0.001, 0, -r * 64 * 0.001, 0, -0.001])
        ds.SetProjection(srs.ExportToWkt())
        b = ds.GetRasterBand(1); b.SetNoDataValue(0); b.WriteArray(data)
        ds = None
        n += 1
PY
plan_t=()
for i in $(seq "$rounds"); do
  rm -rf "$work/p"
  plan_t+=("$(secs "$exe" batch plan "$work/many" --out "$work/p" -k gaussian:2)")
done
p=$(median < <(printf '%s\n' "${plan_t[@]}"))
tasks=$(grep -c '"output":' "$work/p/plan.json")
fi

ratio=$(awk -v b="$b" -v s="$s" 'BEGIN { print b / s }')
printf '| MODIS 2048² (%s), 16 tiles: `batch plan` + `batch run` | %.3f s | one `smooth`: %.3f s | %.2f× (target ≤ 1.2×); joined outputs %s to smooth |\n' "${opts[*]}" "$b" "$s" "$ratio" "$cmp_pixels"
printf '| `batch run` of the finished plan | %.3f s | | target < 1 s |\n' "$r"
[ -z "${tasks:-}" ] || printf '| `batch plan` over %s stand-in tiles (64², one grid) | %.3f s | | target < 10 s |\n' "$tasks" "$p"
printf '| 8192² in 16 tiles of 2048²: plan + run | %.3f s | one `smooth`: %.3f s | %.2f× |\n' "$bb" "$bs" "$big_ratio"
printf '| of row 1: `batch plan` alone | %.3f s | %.2f× smooth | |\n' "$po" "$(awk -v a="$po" -v s="$s" 'BEGIN { print a / s }')"
printf '| of row 1: `batch run` alone | %.3f s | %.2f× smooth | |\n' "$ro" "$(awk -v a="$ro" -v s="$s" 'BEGIN { print a / s }')"
printf '| `mapfilter --version` (process start) | %.3f s | | |\n' "$st"
echo "rounds: $rounds (median); $(nproc) CPUs; $(date -u +%Y-%m-%d)"

# The same figures in the columns of BENCHMARKS.md's table.
met() { awk -v v="$1" -v t="$2" 'BEGIN { print (v < t) ? "yes" : "no" }'; }
jsonl_table batch "cargo build --release && chrt -r 10 bash benches/batch/run.sh $rounds" \
  question measured target met
jsonl_row "MODIS 2048² in 16 tiles, plan + run vs one \`smooth\`" \
  "$(printf '%.3f s vs %.3f s = **%.2f×**; joined outputs %s' "$b" "$s" "$ratio" "$cmp_pixels")" \
  "≤ 1.2×" "$(met "$ratio" 1.2000001)"
jsonl_row "\`batch run\` of a finished plan" "$(printf '%.3f s' "$r")" "< 1 s" "$(met "$r" 1)"
if [ -n "${tasks:-}" ]; then
  jsonl_row "plan over $(sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$tasks") stand-in tiles" \
    "$(printf '%.3f s' "$p")" "< 10 s" "$(met "$p" 10)"
fi
jsonl_row "the map at 4× (8192²) in 16 tiles of 2048², plan + run vs one \`smooth\`" \
  "$(printf '%.3f s vs %.3f s = **%.2f×**' "$bb" "$bs" "$big_ratio")" "(context)" ""
share() { awk -v a="$1" -v s="$s" 'BEGIN { printf "%.3f s = %.2f× one `smooth`", a, a / s }'; }
jsonl_row "of row 1: \`batch plan\` alone" "$(share "$po")" "" ""
jsonl_row "of row 1: \`batch run\` alone" "$(share "$ro")" "" ""
jsonl_row "start of any command (\`mapfilter --version\`)" "$(printf '%.3f s' "$st")" "" ""

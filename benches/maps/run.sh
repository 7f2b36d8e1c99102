#!/usr/bin/env bash
# Issue 38: whole `smooth --method dct5` (σ = 5), and `--exact`, against a
# `gdal_translate` copy (DEFLATE 5, ALL_CPUS) on two cores, on each map of
# benches/maps/build.sh, paired in alternation (benches/peers/vs_gdal.py).
# On a machine of more cores every command runs under `taskset -c 0,1`;
# `--device host` as on the 2-core machine, which has no GPU.
#   bash benches/maps/run.sh MAPS_DIR [ROUNDS] [MAPFILTER] [JSON]
set -eu
cd "$(dirname "$0")/../.."
dir=$1 rounds=${2:-7} bin=${3:-target/release/mapfilter} json=${4:-}
pin=()
[ "$(nproc)" -gt 2 ] && pin=(taskset -c 0,1)
for m in modis globe simplex patches; do
  echo "== $m"
  "${pin[@]}" python3 benches/peers/vs_gdal.py "$dir/$m.tif" --rounds "$rounds" --bin "$bin" \
    --setting "-k gaussian:5 --method dct5 --device host" \
    --setting "-k gaussian:5 --method dct5 --exact --device host" \
    --label "$m" ${json:+--json "$json"} --timings
done

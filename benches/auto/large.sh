#!/usr/bin/env bash
# The "Large kernels" table of BENCHMARKS.md: whole `smooth` commands on a
# 4096² upsample of the bundled MODIS map, dct5 --exact at σ = 5 and 150
# (and auto --exact at σ = 150), rounds alternating between BIN and an
# optional OTHER build, wall seconds of each run on one line per run.
#
#   bash benches/auto/large.sh BIN [OTHER] [ROUNDS]   (default 3 rounds)
set -euo pipefail
bin=$1 other=${2:-} rounds=${3:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
map=$work/m4096.tif
gdal_translate -q -outsize 4096 4096 -r near data/modis_igbp_2019_2048.tif "$map"
now() { date +%s%N; }
for round in $(seq "$rounds"); do
  for case in "5 dct5" "150 dct5" "150 auto"; do
    set -- $case
    for b in "$bin" ${other:+"$other"}; do
      start=$(now)
      "$b" smooth "$map" "$work/out.tif" --overwrite -q --device host -k "gaussian:$1" --method "$2" --exact
      echo "round $round  σ=$1 $2 --exact  $(basename "$b")  $(( ($(now) - start) / 1000000 )) ms"
    done
  done
done

#!/usr/bin/env bash
# The "Large kernels" table of BENCHMARKS.md: whole `smooth` commands on a
# 4096² upsample of the bundled MODIS map (or a 17-class simplex map of
# 512-pixel features), rounds alternating between BIN and an optional
# OTHER build, wall milliseconds of each run on one line per run. CASES
# lists "σ method" pairs; exact methods run with --exact (fft is exact).
#
#   bash benches/auto/large.sh BIN [OTHER] [ROUNDS] [CASES] [MAP]
#     defaults: 3 rounds, "5 dct5,150 dct5,150 auto", MAP modis
#   σ = 300 rows: bash benches/auto/large.sh BIN OTHER 3 "300 dct5,300 fft,300 auto"
#   the simplex row: bash benches/auto/large.sh BIN OTHER 3 "300 auto" simplex
set -euo pipefail
bin=$1 other=${2:-} rounds=${3:-3} cases=${4:-5 dct5,150 dct5,150 auto} kind=${5:-modis}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
map=$work/m4096.tif
case $kind in
  modis) gdal_translate -q -outsize 4096 4096 -r near data/modis_igbp_2019_2048.tif "$map" ;;
  simplex) "$bin" gen "$map" --raster-size 4096x4096 --classes 17 --pattern simplex --scale 512 -q ;;
  *) echo "MAP: modis or simplex" >&2; exit 2 ;;
esac
now() { date +%s%N; }
IFS=, read -r -a pairs <<< "$cases"
for round in $(seq "$rounds"); do
  for case in "${pairs[@]}"; do
    set -- $case
    exact=--exact
    [ "$2" = fft ] && exact=
    for b in "$bin" ${other:+"$other"}; do
      start=$(now)
      "$b" smooth "$map" "$work/out.tif" --overwrite -q --device host -k "gaussian:$1" --method "$2" $exact
      echo "round $round  σ=$1 $2 $exact  $(basename "$b")  $(( ($(now) - start) / 1000000 )) ms"
    done
  done
done

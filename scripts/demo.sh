#!/usr/bin/env bash
# Sets everything up and runs the main job on the bundled sample data:
# smooths the class rasters (real MODIS land cover, Natural Earth continents,
# synthetic simplex) with the exact method and the certified fast method,
# compares them, and runs the image filters on the photo and the elevation
# model. Results go to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked
mkdir -p out
bin=target/release/mapfilter
# The demo regenerates out/ on every run: it replaces its own earlier outputs.
w=--overwrite
$bin devices || true
for name in modis_igbp_2019_2048 ne_continents_1440x720 synthetic_simplex_512; do
  input=data/$name.tif
  $bin info "$input"
  $bin smooth "$input" "out/${name}_naive.tif" --kernel gaussian:2.5 $w
  $bin smooth "$input" "out/${name}_dct5.tif" --kernel gaussian:2.5 --method dct5 $w
  $bin compare "out/${name}_naive.tif" "out/${name}_dct5.tif" \
    --html "out/${name}_dct5_vs_naive.html" --json "out/${name}_dct5_vs_naive.json" $w
done
$bin filter data/photo_grace_hopper.tif out/photo_median5.tif --op median:5 $w
$bin filter data/dem_jacksboro.tif out/dem_gauss_scharr.tif --op gaussian:1.5 --op scharr:3 $w
$bin histogram data/photo_grace_hopper.tif --json out/photo_histogram.json $w
ls -l out/

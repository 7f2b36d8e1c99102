#!/usr/bin/env bash
# Sets everything up and runs the main job on the bundled sample data:
# smooths the real land-cover map and the synthetic raster, writes results to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked
mkdir -p out
bin=target/release/mapfilter
for input in data/*.tif; do
  name=$(basename "$input" .tif)
  $bin info "$input"
  $bin smooth "$input" "out/${name}_smoothed.tif" --kernel gaussian:2.5
done
ls -l out/

#!/usr/bin/env bash
# The cost of --confidence (issue 22): naive on the host and on the PoCL CPU
# device, and dct5 (plain and --exact) on the host and on PoCL, on the bundled MODIS map,
# each with and without a 0-100 confidence raster. Prints a markdown table of
# the best of three wall times per command.
#
#   cargo build --release && bash benches/confidence/run.sh [MAPFILTER] [KERNEL]
#
# MAPFILTER defaults to target/release/mapfilter, KERNEL to gaussian:1.5.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-target/release/mapfilter}")
kernel=${2:-gaussian:1.5}
py=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
map=data/modis_igbp_2019_2048.tif
conf=$work/conf.tif
# A 0-100 confidence on the map's grid: a coarse field of 64-pixel blocks
# less per-pixel noise (fixed seed).
"$py" - "$map" "$conf" <<'PY'
import sys
import numpy as np
from osgeo import gdal
src = gdal.Open(sys.argv[1])
w, h = src.RasterXSize, src.RasterYSize
rng = np.random.default_rng(22)
coarse = rng.integers(40, 101, size=(h // 64 + 1, w // 64 + 1))
conf = np.kron(coarse, np.ones((64, 64), dtype=np.int64))[:h, :w]
conf = np.clip(conf - rng.integers(0, 30, size=(h, w)), 0, 100).astype(np.uint8)
out = gdal.GetDriverByName("GTiff").Create(sys.argv[2], w, h, 1, gdal.GDT_Byte)
out.SetGeoTransform(src.GetGeoTransform())
out.SetProjection(src.GetProjection())
out.GetRasterBand(1).WriteArray(conf)
PY

best() { # the best wall time of three runs, in seconds
  local t best=
  for _ in 1 2 3; do
    local t0 t1
    t0=$(date +%s.%N)
    "$bin" smooth "$map" "$work/out.tif" --overwrite -q -k "$kernel" "$@"
    t1=$(date +%s.%N)
    t=$(echo "$t1 - $t0" | bc)
    if [[ -z $best ]] || (($(echo "$t < $best" | bc))); then best=$t; fi
  done
  printf '%.2f' "$best"
}

# Captured first: grep -q closing the pipe early would fail it under pipefail.
listed=$("$bin" devices 2>/dev/null || true)
pocl=0
if grep -qi cpu <<<"$listed"; then pocl=1; fi

echo "| method | device | without | with --confidence | ratio |"
echo "|---|---|---|---|---|"
row() { # label, device, then the method's options
  local label=$1 dev=$2
  shift 2
  local a b
  a=$(best --device "$dev" "$@")
  b=$(best --device "$dev" "$@" --confidence "$conf" --confidence-scale 100)
  echo "| $label | $dev | $a s | $b s | $(echo "scale=2; $b / $a" | bc) |"
}
row naive host --method naive
if ((pocl)); then
  row naive cpu --method naive
fi
row dct5 host --method dct5
row "dct5 --exact" host --method dct5 --exact
if ((pocl)); then
  row dct5 cpu --method dct5
  row "dct5 --exact" cpu --method dct5 --exact
fi

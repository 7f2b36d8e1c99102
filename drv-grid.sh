#!/usr/bin/env bash
# throwaway: auto --exact grid on the H200's host (16 threads), current build
set -u
source scripts/gpu-env.sh
xz -dc carry/mapfilter-new.xz >/tmp/mf/bin/mf-new && chmod +x /tmp/mf/bin/mf-new
gdal_translate -q -srcwin 768 768 512 512 data/modis_igbp_2019_2048.tif /tmp/modis512.tif
python3 benches/auto/grid.py --bin /tmp/mf/bin/mf-new --device host --classes 2,17,64 --real /tmp/modis512.tif --repeat 2 --json $OUT/grid-host.jsonl > $OUT/grid-host.txt 2>&1
tail -5 $OUT/grid-host.txt

#!/usr/bin/env bash
# Whole commands on real files on the GPU machine (issue: end to end at the
# speed of GDAL): the 415 Mpx land-cover stand-in (the bundled MODIS window
# at 28,800 × 14,400, nearest), smooth against gdal_translate paired in one
# run, per-stage timings, tile sizes, and the engine in memory.
# Needs carry/gdal-bundle.tar.xz (scripts/gpu-bundle.sh).
# Usage (repo root, on the GPU machine): OUT=dir bash scripts/gpu-throughput.sh
set -u
cd "$(dirname "$0")/.."
source scripts/gpu-env.sh
OUT=${OUT:-out/gpu-throughput}
mkdir -p "$OUT"
B=/tmp/mf/bin/mapfilter
nproc >"$OUT/nproc.txt"
"$B" devices | tee "$OUT/devices.txt"
BIG=/tmp/landcover_28800x14400.tif
if [ ! -f "$BIG" ]; then
  gdal_translate -q -r nearest -outsize 28800 14400 -co TILED=YES -co COMPRESS=DEFLATE \
    -co NUM_THREADS=ALL_CPUS data/modis_igbp_2019_2048.tif "$BIG"
fi
gdalinfo "$BIG" | head -5 >"$OUT/input.txt"
echo "== paired whole commands"
python3 benches/peers/vs_gdal.py "$BIG" --bin "$B" --rounds 3 --label "${LABEL:-gpu}" \
  --json "$OUT/vs_gdal.jsonl" --timings \
  --setting "-k gaussian:5 --method dct5 --device gpu" \
  --setting "-k gaussian:5 --method dct5 --device gpu --tile 2048" \
  --setting "-k gaussian:5 --method dct5 --device gpu --tile 4096" \
  --setting "-k gaussian:5 --method dct5 --device host" \
  --setting "-k gaussian:2.5 --device gpu" \
  --setting "-k gaussian:2.5 --device gpu --tile 2048" \
  --setting "-k gaussian:5 --method dct5 --exact --device gpu" \
  --setting "-k gaussian:5 --method dct5 --exact --device gpu --tile 2048" \
  2>&1 | tee "$OUT/vs_gdal.md"
echo "== engine in memory (bench --input)"
for t in 1024 2048 4096; do
  timeout 120 "$B" bench --input "$BIG" --kernel gaussian:5 --method dct5 --device gpu --tile "$t" --repeat 3 \
    >>"$OUT/bench_input.jsonl" 2>>"$OUT/bench.err"
done
echo "== byte identity of the exact paths on the big map (checksums must match)"
rm -f /tmp/naive_host.tif /tmp/naive_gpu.tif /tmp/naive5_host.tif /tmp/exact5_gpu.tif
"$B" smooth "$BIG" /tmp/naive_host.tif -k gaussian:2.5 --device host -q
"$B" smooth "$BIG" /tmp/naive_gpu.tif -k gaussian:2.5 --device gpu -q
"$B" smooth "$BIG" /tmp/naive5_host.tif -k gaussian:5 --device host -q
"$B" smooth "$BIG" /tmp/exact5_gpu.tif -k gaussian:5 --method dct5 --exact --device gpu -q
for f in /tmp/naive_host.tif /tmp/naive_gpu.tif /tmp/naive5_host.tif /tmp/exact5_gpu.tif; do
  echo "$f $(gdalinfo -checksum "$f" | grep Checksum)"
done | tee "$OUT/identity.txt"

#!/usr/bin/env bash
# BENCHMARKS.md, "Image filters: GPU against cv2.UMat" (and
# benches/background.md, "Image filters: GPU beside the papers' figures").
# Image filters on the GPU machine (no GDAL there), in one call of about
# 6 minutes: (1) byte identity of every device op with the host reference,
# on the GPU; (2) ours against OpenCV's OpenCL path (cv2.UMat) at 4096² RGB,
# both timed host array in -> host array out after a warm-up (see
# benches/filters/bench_filters.py); (3) our raw per-run figures at 4096² (upload,
# kernel, download) with and without reusing the input's memory for the
# result, and the generic median at 7, 9, 15; (4) the papers' image sizes.
# Usage (repo root), after
#   cargo build --release --no-default-features && mkdir -p carry && cp target/release/mapfilter carry/
# run: OUT=dir bash benches/filters/gpu.sh
# A quick try on another machine: PY=/usr/bin/python3 DEV=cpu BIG=256 CHECK=96x64 PAPERS=0 bash benches/filters/gpu.sh
set -u
cd "$(dirname "$0")/../.."
B=${BIN:-carry/mapfilter}
OUT=${OUT:-out/filters-gpu}
DEV=${DEV:-gpu}
BIG=${BIG:-4096}
CHECK=${CHECK:-1024x768}
PAPERS=${PAPERS:-1}
PY=${PY:-python3} # one with cv2 (here: /usr/bin/python3)
source benches/filters/common.sh

echo "== 1. identity with the host reference on the GPU"
for op in box:3 box:5 gaussian:1:7 sharpen:3 sharpen:5 median:3 median:5 median:7 median:9 median:15 \
  bilateral:2:30:color scharr:3 oil:4:20; do
  run 60 check.jsonl --op "$op" --size "$CHECK" --device "$DEV" --repeat 1 --check
done
for ty in u16 i16 f32; do
  run 60 check.jsonl --op median:7 --type "$ty" --size "$CHECK" --bands 1 --device "$DEV" --repeat 1 --check --border replicate
  run 60 check.jsonl --op median:15 --type "$ty" --size "$CHECK" --bands 1 --device "$DEV" --repeat 1 --check --border constant:7
done
run 60 check.jsonl --op median:3 --op gaussian:1 --op scharr:3 --size "$CHECK" --device "$DEV" --repeat 1 --check
echo "identical: $(grep -c '"check":"identical"' "$OUT/check.jsonl") of $(grep -c '"check"' "$OUT/check.jsonl")" | tee "$OUT/check.txt"

echo "== 2. ${BIG}x${BIG}x3 Byte against cv2.UMat (host array in -> host array out)"
timeout 300 "$PY" benches/filters/bench_filters.py --bin "$B" --size "$BIG" --device "$DEV" --umat --repeat 10 \
  --json "$OUT/umat.json" >"$OUT/umat.md" 2>>"$OUT/log.txt"
cat "$OUT/umat.md"

echo "== 3. raw runs at ${BIG}x${BIG}x3"
for op in box:3 median:5 scharr:3; do
  run 60 raw.jsonl --op "$op" --size "$BIG" --device "$DEV" --repeat 10
  run 60 fresh.jsonl --op "$op" --size "$BIG" --device "$DEV" --repeat 10 --fresh-output
done
for op in median:7 median:9 median:15; do
  run 60 raw.jsonl --op "$op" --size "$BIG" --device "$DEV" --repeat 5
done

if [ "$PAPERS" = 1 ]; then
  echo "== 4. the papers' sizes"
  for op in box:3 median:3 median:5 oil:4:20; do
    run 60 papers.jsonl --op "$op" --size 1920x1080 --device "$DEV" --repeat 20
  done
  run 60 papers.jsonl --op bilateral:2:30:color --size 1280x720 --device "$DEV" --repeat 20
  run 60 papers.jsonl --op histogram --size 1280x720 --device "$DEV" --repeat 20
fi

summarise raw fresh papers

#!/usr/bin/env bash
# The image ops of issue 23 (pyramid steps, Laplacian levels, multiresolution
# denoise, colour conversions, demosaicing) on the GPU machine, in one call
# of a few minutes: (1) byte identity of every new device op with the host
# reference, on the GPU, every sample type they take; (2) ours against
# OpenCV's CPU and OpenCL (cv2.UMat) paths at the reference sizes
# (scripts/bench_filters.py --imgops: 1920x1080 demosaicing, 1024² denoise,
# 4096² RGB pyramid, Laplacian and colour steps), timed host array in ->
# host array out after a warm-up; (3) our raw per-run figures (upload,
# kernel, download) of the same ops and of a pyramid chain, the denoise
# also in frames/s; (4) the reference scale space (3866x4320, 4 octaves x 4
# scales, Scharr 3/5/7/9 on all 16 levels) against OpenCV CPU.
# Usage (repo root), with the repository's normal GDAL build:
#   bash scripts/gpu-bundle.sh        (here: carry/gdal-bundle.tar.xz)
# then on the GPU machine:
#   source scripts/gpu-env.sh && OUT=dir bash scripts/gpu-imgops.sh
# (BIN defaults to the bundle's /tmp/mf/bin/mapfilter, else carry/mapfilter).
# A quick try on another machine:
#   BIN=target/release/mapfilter PY=/usr/bin/python3 DEV=cpu CHECK=96x64 UMAT=0 REPEAT=2 SCALE=0 bash scripts/gpu-imgops.sh
set -u
cd "$(dirname "$0")/.."
if [ -x /tmp/mf/bin/mapfilter ]; then B=${BIN:-/tmp/mf/bin/mapfilter}; else B=${BIN:-carry/mapfilter}; fi
SCALE=${SCALE:-1}
OUT=${OUT:-out/gpu-imgops}
DEV=${DEV:-gpu}
CHECK=${CHECK:-1024x768}
UMAT=${UMAT:-1}
REPEAT=${REPEAT:-10}
PY=${PY:-python3} # one with cv2 (here: /usr/bin/python3)
mkdir -p "$OUT"
mkdir -p /etc/OpenCL/vendors 2>/dev/null
echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd 2>/dev/null || true
"$B" devices | tee "$OUT/devices.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/nvidia-smi.txt" 2>&1
"$PY" -c "import cv2; print(cv2.__version__, cv2.ocl.haveOpenCL(), cv2.ocl.Device_getDefault().name(), cv2.getNumThreads())" >"$OUT/cv2.txt" 2>&1
nproc >"$OUT/nproc.txt"
# run SECONDS FILE ARGS...: one bench-filter call with a time limit, JSON lines to FILE.
run() {
  local limit=$1 file=$2
  shift 2
  echo "$B bench-filter $*" >>"$OUT/log.txt"
  timeout "$limit" "$B" bench-filter "$@" >>"$OUT/$file" 2>>"$OUT/log.txt" || echo "FAILED (rc $?): $*" | tee -a "$OUT/log.txt"
}

echo "== 1. identity with the host reference on the GPU"
for ty in u8 u16 i16 f32; do
  for op in pyrdown pyrup; do
    run 60 check.jsonl --op "$op" --type "$ty" --size "$CHECK" --bands 3 --device "$DEV" --repeat 1 --check
  done
  run 60 check.jsonl --op pyrdown --op scharr:3 --op pyrup --type "$ty" --size "$CHECK" --bands 1 --device "$DEV" --repeat 1 --check
done
for ty in u8 u16 f32; do
  for op in gray ycbcr; do
    run 60 check.jsonl --op "$op" --type "$ty" --size "$CHECK" --bands 3 --device "$DEV" --repeat 1 --check
  done
done
for ty in u8 f32; do
  run 60 check.jsonl --op hsv --type "$ty" --size "$CHECK" --bands 3 --device "$DEV" --repeat 1 --check
done
for ty in u8 u16; do
  for p in RGGB BGGR GRBG GBRG; do
    for m in bilinear ea mhc; do
      run 60 check.jsonl --op "demosaic:$p:$m" --type "$ty" --size "$CHECK" --bands 1 --device "$DEV" --repeat 1 --check
    done
  done
done
for ty in u8 u16 i16 f32; do
  run 60 check.jsonl --op laplacian-level --type "$ty" --size "$CHECK" --bands 3 --device "$DEV" --repeat 1 --check
  run 60 check.jsonl --op pyrdown --op laplacian-top --type "$ty" --size "$CHECK" --bands 1 --device "$DEV" --repeat 1 --check
done
for ty in u8 u16 f32; do
  run 120 check.jsonl --op denoise:4:1:20 --type "$ty" --size "$CHECK" --bands 1 --device "$DEV" --repeat 1 --check
done
echo "identical: $(grep -c '"check":"identical"' "$OUT/check.jsonl") of $(grep -c '"check"' "$OUT/check.jsonl")" | tee "$OUT/check.txt"

echo "== 2. against OpenCV at the reference sizes (host array in -> host array out)"
timeout 300 "$PY" scripts/bench_filters.py --bin "$B" --imgops --device "$DEV" --repeat "$REPEAT" \
  --json "$OUT/cpu.json" >"$OUT/cpu.md" 2>>"$OUT/log.txt"
cat "$OUT/cpu.md"
if [ "$UMAT" = 1 ]; then
  timeout 300 "$PY" scripts/bench_filters.py --bin "$B" --imgops --device "$DEV" --umat --repeat "$REPEAT" \
    --json "$OUT/umat.json" >"$OUT/umat.md" 2>>"$OUT/log.txt"
  cat "$OUT/umat.md"
fi

echo "== 3. raw runs"
for op in pyrdown gray ycbcr hsv; do
  run 60 raw.jsonl --op "$op" --size 4096 --bands 3 --device "$DEV" --repeat "$REPEAT"
done
run 60 raw.jsonl --op pyrup --size 2048 --bands 3 --device "$DEV" --repeat "$REPEAT"
for m in bilinear ea mhc; do
  run 60 raw.jsonl --op "demosaic:RGGB:$m" --size 1920x1080 --bands 1 --device "$DEV" --repeat "$REPEAT"
done
run 60 raw.jsonl --op laplacian-level --size 4096 --bands 3 --device "$DEV" --repeat "$REPEAT"
for levels in 3 4 5; do
  run 120 raw.jsonl --op "denoise:$levels:1:20" --size 1024 --bands 1 --device "$DEV" --repeat "$REPEAT"
done
# Three octaves down from the reference scale-space base, Scharr on the last.
run 60 raw.jsonl --op pyrdown --op pyrdown --op pyrdown --op scharr:3 --size 3866x4320 --bands 1 --device "$DEV" --repeat "$REPEAT"

if [ "$SCALE" = 1 ]; then
  echo "== 4. scale space 3866x4320, 4 octaves x 4 scales, Scharr 3/5/7/9 on every level"
  timeout 900 "$PY" scripts/bench_filters.py --bin "$B" --scale-space --device "$DEV" --repeat 3 \
    --json "$OUT/scale.json" >"$OUT/scale.md" 2>>"$OUT/log.txt"
  cat "$OUT/scale.md"
fi

echo "== summary (median ms over runs)"
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import collections, json, statistics, sys
runs = collections.defaultdict(list)
try:
    lines = open(f"{sys.argv[1]}/raw.jsonl").read().splitlines()
except OSError:
    lines = []
for line in lines:
    r = json.loads(line)
    if "total_ms" in r:
        runs[(r["op"], r["width"], r["height"])].append(r)
for (op, w, h), rs in runs.items():
    med = lambda k: statistics.median(r[k] for r in rs) if rs[0][k] is not None else float("nan")
    fps = f" = {1e3 / med('total_ms'):.1f} frames/s" if op.startswith("denoise") else ""
    print(f"{op:36} {w}x{h} total {med('total_ms'):8.2f} kernel {med('kernel_ms'):7.2f} "
          f"upload {med('upload_ms'):7.2f} download {med('download_ms'):7.2f} ({len(rs)} runs){fps}")
PY

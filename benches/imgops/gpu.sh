#!/usr/bin/env bash
# BENCHMARKS.md, "Pyramids, demosaic, colour": issue 23's image ops on the
# GPU machine, two suites (default `ops`; `all` runs both):
#
# ops: the image ops (pyramid steps, Laplacian levels, multiresolution
# denoise, colour conversions, demosaicing), in one call of a few minutes:
# (1) byte identity of every new device op with the host reference, on the
# GPU, every sample type they take; (2) ours against OpenCV's CPU and OpenCL
# (cv2.UMat) paths at the reference sizes (benches/filters/bench_filters.py
# --imgops: 1920x1080 demosaicing, 1024² denoise, 4096² RGB pyramid,
# Laplacian and colour steps), timed host array in -> host array out after
# a warm-up; (3) our raw per-run figures (upload, kernel, download) of the
# same ops and of a pyramid chain, the denoise also in frames/s; (4) with
# SCALE=1 (default) the reference scale space (3866x4320, 4 octaves x 4
# scales, Scharr 3/5/7/9 on all 16 levels) against OpenCV CPU.
#
# pyramid: the reference scale space (SIZE, default 3866x4320 Byte, 4
# octaves x 4 scales, 16 levels) built on the device into each of the three
# storages (lut: one buffer + level table; image: image2d per level;
# separate: a buffer per level), then Scharr dx+dy of size 3, 5, 7, 9 over
# every level, checked bit for bit against the host on every storage;
# OpenCV CPU and cv2.UMat (levels resident) on the same filters and on the
# build (benches/imgops/pyramid_peers.py); then the whole `mapfilter filter`
# command (GeoTIFF in, 16 level files out, --compress none) on the device
# and on the host. Prints one JSON line per (storage or peer, size, run) and
# summary tables (min over runs).
#
# Usage (repo root), with the repository's normal GDAL build:
#   bash scripts/gpu-bundle.sh        (here: carry/gdal-bundle.tar.xz)
# then on the GPU machine:
#   source scripts/gpu-env.sh && OUT=dir bash benches/imgops/gpu.sh [ops|pyramid|all]
# (BIN defaults to the bundle's /tmp/mf/bin/mapfilter, else carry/mapfilter).
# A quick try on another machine (PoCL):
#   BIN=target/release/mapfilter PY=/usr/bin/python3 DEV=cpu CHECK=96x64 UMAT=0 REPEAT=2 SCALE=0 SIZE=966x1080 bash benches/imgops/gpu.sh all
set -u
cd "$(dirname "$0")/../.."
if [ -x /tmp/mf/bin/mapfilter ]; then B=${BIN:-/tmp/mf/bin/mapfilter}; else B=${BIN:-carry/mapfilter}; fi
SCALE=${SCALE:-1}
OUT=${OUT:-out/imgops-gpu}
DEV=${DEV:-gpu}
CHECK=${CHECK:-1024x768}
UMAT=${UMAT:-1}
REPEAT=${REPEAT:-10}
SIZE=${SIZE:-3866x4320}
PY=${PY:-python3} # one with cv2 (here: /usr/bin/python3)
SUITE=${1:-ops}
case "$SUITE" in
  ops | pyramid | all) ;;
  *) echo "usage: OUT=dir bash benches/imgops/gpu.sh [ops|pyramid|all]" >&2; exit 2 ;;
esac
source benches/filters/common.sh

# The `ops` suite (bodies unindented: their here-documents end at column 0).
ops() {
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
timeout 300 "$PY" benches/filters/bench_filters.py --bin "$B" --imgops --device "$DEV" --repeat "$REPEAT" \
  --json "$OUT/cpu.json" >"$OUT/cpu.md" 2>>"$OUT/log.txt"
cat "$OUT/cpu.md"
if [ "$UMAT" = 1 ]; then
  timeout 300 "$PY" benches/filters/bench_filters.py --bin "$B" --imgops --device "$DEV" --umat --repeat "$REPEAT" \
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
  timeout 900 "$PY" benches/filters/bench_filters.py --bin "$B" --scale-space --device "$DEV" --repeat 3 \
    --json "$OUT/scale.json" >"$OUT/scale.md" 2>>"$OUT/log.txt"
  cat "$OUT/scale.md"
fi

summarise raw
}

# The `pyramid` suite.
pyramid() {
echo "== ours: the three storages (MAPFILTER_PYRAMID_STORE unset runs all three)"
timeout 400 "$B" bench-filter --op scale-space:4:4 --op scharr:3 --op scharr:5 --op scharr:7 --op scharr:9 \
  --size "$SIZE" --bands 1 --type u8 --device "$DEV" --repeat "$REPEAT" --check >"$OUT/ours.jsonl" 2>>"$OUT/log.txt" ||
  echo "FAILED (rc $?): ours" | tee -a "$OUT/log.txt"
grep '"check"' "$OUT/ours.jsonl"
echo "== OpenCV peers"
umat=()
[ "$UMAT" = 1 ] && umat=(--umat)
timeout 400 "$PY" benches/imgops/pyramid_peers.py --size "$SIZE" --repeat "$REPEAT" "${umat[@]}" >"$OUT/peers.jsonl" 2>>"$OUT/log.txt" ||
  echo "FAILED (rc $?): peers" | tee -a "$OUT/log.txt"
"$PY" - "$OUT/ours.jsonl" "$OUT/peers.jsonl" <<'PYEOF' | tee "$OUT/summary.md"
import json, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "kernel_ms" in r:
        k = (r["store"], r["op"])
        a = rows.setdefault(k, [1e18, 1e18, r["build_ms"], r["pixels"]])
        a[0] = min(a[0], r["kernel_ms"]); a[1] = min(a[1], r["total_ms"])
peers = {}
for line in open(sys.argv[2]):
    r = json.loads(line)
    peers[(r["peer"], r["op"])] = r["min_ms"]
print("| storage / peer | build ms (base up, 16 levels built on the device) |")
print("|---|---:|")
for st in sorted({s for s, _ in rows}):
    print(f"| {st} | {min(a[2] for (s, _), a in rows.items() if s == st):.2f} |")
for (p, o), ms in sorted(peers.items()):
    if o == "build":
        print(f"| {p} | {ms:.2f} |")
print()
print("| whole (build + Scharr 3 + results in host memory), peers | ms |")
print("|---|---:|")
for (p, o), ms in sorted(peers.items()):
    if o.startswith("whole:"):
        print(f"| {p} | {ms:.2f} |")
print()
print("| Scharr | storage / peer | kernel ms | enqueue-to-finish ms | build ms (once) | pixels |")
print("|---|---|---:|---:|---:|---:|")
for op in ("scharr:3", "scharr:5", "scharr:7", "scharr:9"):
    for (st, o), (k, t, up, px) in sorted(rows.items()):
        if o == op:
            print(f"| {op} | {st} | {k:.2f} | {t:.2f} | {up:.1f} | {px} |")
    for (p, o), ms in sorted(peers.items()):
        if o == op:
            print(f"| {op} | {p} | | {ms:.2f} | | |")
PYEOF
echo "== the whole filter command: $SIZE Byte GeoTIFF in, scale-space:4:4 + scharr:3, 16 Float32 files out"
mkdir -p "$OUT/whole"
"$B" gen "$OUT/whole/base.tif" --raster-size "$SIZE" --classes 256 --quiet --overwrite 2>>"$OUT/log.txt"
for dev in "$DEV" host; do
  for run in 1 2 3; do
    s=$(date +%s.%N)
    timeout 300 "$B" filter "$OUT/whole/base.tif" "$OUT/whole/ss_$dev.tif" --op scale-space:4:4 --op scharr:3 \
      --device "$dev" --compress none --overwrite --quiet 2>>"$OUT/log.txt" || echo "FAILED (rc $?): filter on $dev" | tee -a "$OUT/log.txt"
    e=$(date +%s.%N)
    echo "{\"whole\":\"filter\",\"device\":\"$dev\",\"run\":$run,\"seconds\":$(awk "BEGIN{print $e - $s}")}" | tee -a "$OUT/whole.jsonl"
  done
done
for f in "$OUT"/whole/ss_host_*.tif; do
  cmp -s "$f" "${f/ss_host_/ss_${DEV}_}" || echo "DIFFER: $f" | tee -a "$OUT/log.txt"
done
echo "(cmp of every level file, device against host: silent when identical)"
}

case "$SUITE" in
  ops) ops ;;
  pyramid) pyramid ;;
  all) ops && pyramid ;;
esac

#!/usr/bin/env bash
# Issue 23's reference scale space on the GPU machine: a 3866x4320 Byte base,
# 4 octaves x 4 scales (16 levels, 88,722,000 pixels) built on the device into
# each of the three storages (lut: one buffer + level table; image: image2d
# per level; separate: a buffer per level), then Scharr dx+dy of size 3, 5, 7,
# 9 over every level from there, checked bit for bit against the host on
# every storage; OpenCV CPU and cv2.UMat (levels resident) on the same
# filters and on the build. Then the whole `mapfilter filter` command
# (GeoTIFF in, 16 level files out, --compress none) on the device and on the
# host, with OpenCV's whole (build + Scharr + results back to the host) as
# peers. Prints one JSON line per (storage or peer, size, run) and summary
# tables (min over runs: build ms, kernel ms and enqueue-to-finish ms).
# Usage (repo root), with the repository's normal GDAL build:
#   bash scripts/gpu-bundle.sh        (here: carry/gdal-bundle.tar.xz)
# then on the GPU machine:
#   source scripts/gpu-env.sh && OUT=dir bash scripts/gpu-pyramid.sh
# A quick try on another machine (PoCL):
#   BIN=target/release/mapfilter PY=/usr/bin/python3 DEV=cpu SIZE=966x1080 UMAT=0 REPEAT=2 bash scripts/gpu-pyramid.sh
set -u
cd "$(dirname "$0")/.."
if [ -x /tmp/mf/bin/mapfilter ]; then B=${BIN:-/tmp/mf/bin/mapfilter}; else B=${BIN:-carry/mapfilter}; fi
OUT=${OUT:-out/gpu-pyramid}
DEV=${DEV:-gpu}
SIZE=${SIZE:-3866x4320}
UMAT=${UMAT:-1}
REPEAT=${REPEAT:-10}
PY=${PY:-python3}
mkdir -p "$OUT"
"$B" devices | tee "$OUT/devices.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/nvidia-smi.txt" 2>&1
echo "== ours: the three storages (MAPFILTER_PYRAMID_STORE unset runs all three)"
timeout 400 "$B" bench-filter --op scale-space:4:4 --op scharr:3 --op scharr:5 --op scharr:7 --op scharr:9 \
  --size "$SIZE" --bands 1 --type u8 --device "$DEV" --repeat "$REPEAT" --check >"$OUT/ours.jsonl" 2>>"$OUT/log.txt" ||
  echo "FAILED (rc $?): ours" | tee -a "$OUT/log.txt"
grep '"check"' "$OUT/ours.jsonl"
echo "== OpenCV peers"
umat=()
[ "$UMAT" = 1 ] && umat=(--umat)
timeout 400 "$PY" scripts/pyramid_peers.py --size "$SIZE" --repeat "$REPEAT" "${umat[@]}" >"$OUT/peers.jsonl" 2>>"$OUT/log.txt" ||
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

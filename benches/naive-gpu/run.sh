#!/usr/bin/env bash
# BENCHMARKS.md, "Naive on the GPU" (and benches/background.md, "Naive on
# the GPU: the whole sweep").
# GPU benchmark of the naive method, for the GPU machine (no GDAL there).
# Run from the repo root with the GDAL-free binary carried to carry/mapfilter:
#   cargo build --release --no-default-features && mkdir -p carry && cp target/release/mapfilter carry/
#   bash benches/naive-gpu/run.sh            # results in $OUT (default out/naive-gpu)
# Steps: register NVIDIA's OpenCL driver, list devices, check every variant
# byte for byte against the host reference on the GPU, time the target case
# (naive N=127, 256 random classes, 1024², goal < 0.5 s kernel + transfers),
# then the sweep (image 256..4096, kernel 3..127, classes 2..256). Every step
# has a time limit so the whole script ends within about 8 minutes.
# QUICK=1 stops after steps 1-2 (identity and the target case; about 2 minutes).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-carry/mapfilter}
OUT=${OUT:-out/naive-gpu}
mkdir -p "$OUT"
status=0
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
# run SECONDS FILE ARGS...: one bench call with a time limit, JSON lines to FILE.
run() {
  local limit=$1 file=$2
  shift 2
  echo "$BIN $*" >>"$OUT/log.txt"
  timeout "$limit" "$BIN" "$@" >>"$OUT/$file" 2>>"$OUT/log.txt"
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAILED (rc $rc): $BIN $*" | tee -a "$OUT/log.txt"
    status=1
  fi
}

log "register the NVIDIA OpenCL ICD"
mkdir -p /etc/OpenCL/vendors 2>/dev/null
echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd 2>/dev/null ||
  sudo sh -c 'echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd'
(clinfo -l || echo "clinfo missing") 2>&1 | tee "$OUT/clinfo.txt"
"$BIN" devices 2>&1 | tee "$OUT/devices.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee "$OUT/nvidia-smi.txt"

log "1. byte identity with the host reference on the GPU, every variant"
for v in fast buffer image local; do
  run 60 check.jsonl bench --device gpu --variant "$v" --size 700 --pattern simplex \
    --classes 1,5,255,256 --kernel "box:3,gaussian:2,box:31,disc:20" --tile 256 \
    --repeat 1 --warmup 0 --check
  run 60 check.jsonl bench --device gpu --variant "$v" --size 600 --pattern random \
    --classes 2,256 --kernel "box:3,box:63" --tile 1024 --repeat 1 --warmup 0 --check
done
grep -c '"check":"identical"' "$OUT/check.jsonl" | sed 's/^/identical configurations: /' | tee -a "$OUT/log.txt"

log "2. target: naive N=127, 256 uniformly random classes, 1024x1024 (goal < 0.5 s)"
run 120 target.jsonl bench --device gpu --size 1024 --classes 256 --pattern random \
  --kernel "box:127" --tile 1024 --repeat 5 --check
run 60 target.jsonl bench --device gpu --size 1024 --classes 256 --pattern random \
  --kernel "box:127" --tile 512 --repeat 3
for v in buffer image local; do
  run 60 target.jsonl bench --device gpu --variant "$v" --size 1024 --classes 256 \
    --pattern random --kernel "box:127" --tile 1024 --repeat 2
done

if [ "${QUICK:-0}" = 1 ]; then
  log "QUICK=1: stopping after the identity check and the target case"
  grep -h '"total_ms"' "$OUT/target.jsonl" | head -20
  exit $status
fi
log "2b. target case with other fast-variant shapes (MAPFILTER_FAST_SHAPE=TX,TY,PY,TILE_LOCAL,HIST_LOCAL)"
for shape in 32,4,1,1,0 16,16,1,1,0 32,8,1,0,0 128,1,1,0,0 32,2,1,1,1; do
  export MAPFILTER_FAST_SHAPE=$shape
  run 60 shapes.jsonl bench --device gpu --size 1024 --classes 256 \
    --pattern random --kernel "box:127" --tile 1024 --repeat 2
done
unset MAPFILTER_FAST_SHAPE

log "3. sweep on the GPU (fast variant): size x kernel x classes"
for size in 256 1024 4096; do
  tile=$((size < 2048 ? size : 2048))
  run 150 sweep.jsonl bench --device gpu --size "$size" --classes 2,16,256 --pattern random \
    --kernel "box:3,box:15,box:31,box:63,box:127" --tile "$tile" --repeat 2
done
log "4. variants at 1024x1024"
for v in buffer image local; do
  run 60 sweep.jsonl bench --device gpu --variant "$v" --size 1024 --classes 2,16,256 \
    --pattern random --kernel "box:3,box:31" --tile 1024 --repeat 1
done
log "5. host path on this machine for reference (1024x1024)"
run 60 sweep.jsonl bench --device host --size 1024 --classes 2,16,256 --pattern random \
  --kernel "box:3,box:15,box:31" --tile 1024 --repeat 1 --warmup 0

log "summary (kernel+transfer ms, total ms)"
for f in target.jsonl shapes.jsonl sweep.jsonl; do
  [ -f "$OUT/$f" ] && python3 - "$OUT/$f" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    kt = (r["kernel_ms"] or 0) + (r["transfer_ms"] or 0) if r["kernel_ms"] is not None else None
    print(f'{r["device"][:40]:40} {r["variant"]:7} size {r["size"]:5} N {r["ksize"]:3} C {r["classes"]:3} '
          f'tile {r["tile"]:4} kernel+transfer {kt if kt is None else round(kt, 1)} ms total {r["total_ms"]:.1f} ms '
          f'{r["mpix_s"]:.1f} Mpix/s {r["check"] or ""} {r.get("shape") or ""}')
PY
done
log "done, status $status"
exit $status

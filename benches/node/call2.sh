#!/usr/bin/env bash
# Second device call (nvidia-h100-x4 / h200-x4): host threads after the
# pool jobs, perf, per-task timings of a batch.
set -u
export NCCL_NVLS_ENABLE=0
source scripts/gpu-env.sh
OUT=${OUT:-out/node}; mkdir -p "$OUT"
tar -C /tmp -xJf carry/perf.tar.xz
printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/perf/lib:$LD_LIBRARY_PATH exec /tmp/perf/perf "$@"\n' >/tmp/perfw; chmod +x /tmp/perfw
nproc; nvidia-smi -L | head -1
MF=/tmp/mf/bin/mapfilter BASE=/tmp/mf/bin/mapfilter-base
BINS="new=$MF" PERF=/tmp/perfw bash benches/node/host-threads.sh
bash benches/node/dataset.sh compressible /tmp/tA
one=$(ls /tmp/tA/*.tif | head -1)
for d in gpu host; do $MF smooth "$one" /tmp/one-$d.tif -k gaussian:5 --method dct5 --exact --device $d --timings -q 2>&1 | tail -25 >"$OUT/timings-$d.txt"; done
TILES=/tmp/tA BINS="new=$MF base=$BASE" DEVICES="gpu host" CASES="exact" PAR="16" bash benches/node/batch.sh
TILES=/tmp/tA BINS="new=$MF" DEVICES="gpu all host" CASES="naive" PAR="16" bash benches/node/batch.sh
# Per-task figures of one more GPU run (kept this time).
$MF batch plan /tmp/tA --out /tmp/keep -k gaussian:5 --method dct5 --exact --device gpu >/dev/null 2>&1
$MF batch run /tmp/keep -q 2>&1 | tail -3
cat /tmp/keep/state/done/*.json 2>/dev/null | head -c 3000 >"$OUT/done-records.txt"
ls -R /tmp/keep/state | head -20 >>"$OUT/done-records.txt"

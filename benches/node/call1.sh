#!/usr/bin/env bash
# One device call (nvidia-h100-x4): host threads, perf, start-up, batch A.
set -u
export NCCL_NVLS_ENABLE=0
source scripts/gpu-env.sh
OUT=${OUT:-out/node}; mkdir -p "$OUT"
tar -C /tmp -xJf carry/perf.tar.xz
printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/perf/lib exec /tmp/perf/perf "$@"\n' >/tmp/perfw; chmod +x /tmp/perfw
nproc; nvidia-smi -L; free -g | head -2
MF=/tmp/mf/bin/mapfilter BASE=/tmp/mf/bin/mapfilter-base
for b in $MF $BASE; do { TIMEFORMAT="devices %R s"; time $b devices >/dev/null; } 2>&1; done | tee "$OUT/startup.txt"
BINS="new=$MF base=$BASE" PERF=/tmp/perfw bash benches/node/host-threads.sh
bash benches/node/dataset.sh compressible /tmp/tA
TILES=/tmp/tA BINS="new=$MF base=$BASE" DEVICES="gpu all host" CASES="exact" PAR="16" bash benches/node/batch.sh

#!/usr/bin/env bash
# The node benchmark (issue 39) in one device call: the realistic set
# (16 tiles of `gen --pattern simplex --classes 17`, 10240², 1,678 Mpx), its
# GDAL floor, then the batch with the defaults (`batch plan … --device D` +
# `batch run`), this build and a base build, on every GPU, two, one and the
# host; JSON lines in $OUT (BENCHMARKS.md, "The node's throughput").
# `GRID="J:P …"` adds runs of this build with J tasks in flight and P
# compute threads. Carry `carry/` with the GDAL bundle of
# scripts/gpu-bundle.sh and the two builds as carry/mapfilter-{new,base}.xz
# (`strip --strip-debug`, xz); then on the GPU machine (repo root):
#   OUT=$OUT bash benches/node/run.sh
set -u
source scripts/gpu-env.sh
OUT=${OUT:-out/node}; mkdir -p "$OUT"
for b in new base; do
  xz -dc carry/mapfilter-$b.xz >/tmp/mf/bin/mapfilter-$b && chmod +x /tmp/mf/bin/mapfilter-$b
done
NEW="new=/tmp/mf/bin/mapfilter-new" BOTH="new=/tmp/mf/bin/mapfilter-new base=/tmp/mf/bin/mapfilter-base"
C=$(nproc) G=$(nvidia-smi -L | wc -l)
echo "{\"cores\":$C,\"gpus\":$G}" | tee -a "$OUT/workers.jsonl"
MAPFILTER=/tmp/mf/bin/mapfilter-new bash benches/node/dataset.sh simplex /tmp/tS 10240
TILES=/tmp/tS CASES=" " PAR="16 32" bash benches/node/batch.sh
export TILES=/tmp/tS
CASES=exact DEVICES="all" GRID=default BINS=$BOTH bash benches/node/workers.sh
CASES=exact DEVICES="gpu host" GRID=default BINS=${BASES:-$NEW} bash benches/node/workers.sh
[ "$G" -ge 4 ] && CUDA_VISIBLE_DEVICES=0,1 CASES=exact DEVICES="all" GRID=default BINS=$NEW bash benches/node/workers.sh
CASES=naive DEVICES="all host" GRID=default BINS=${BASES:-$NEW} bash benches/node/workers.sh
[ -z "${GRID:-}" ] || CASES=exact DEVICES="all host" BINS=$NEW bash benches/node/workers.sh

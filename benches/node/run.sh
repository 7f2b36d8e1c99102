#!/usr/bin/env bash
# The node benchmark (issue 39) in one device call: the host engine against
# its threads, and the batch on the compressible set (A) and the realistic
# one (simplex, 16 x 105 Mpx), this build against a base build, paired;
# JSON lines in $OUT (BENCHMARKS.md, "The node's throughput").
# Carry `carry/` with the GDAL bundle of scripts/gpu-bundle.sh, its
# mf/bin/mapfilter-base the base build (strip --strip-debug), then on the
# GPU machine (repo root):   OUT=$OUT bash benches/node/run.sh
set -u
export NCCL_NVLS_ENABLE=0
source scripts/gpu-env.sh
OUT=${OUT:-out/node}; mkdir -p "$OUT"
nproc; nvidia-smi -L | head -1
MF=/tmp/mf/bin/mapfilter BASE=/tmp/mf/bin/mapfilter-base
THREADS="16 $(nproc)" BINS="new=$MF base=$BASE" bash benches/node/host-threads.sh
bash benches/node/dataset.sh compressible /tmp/tA
TILES=/tmp/tA BINS="new=$MF base=$BASE" DEVICES="gpu all host" CASES="exact naive" PAR="16" bash benches/node/batch.sh
MAPFILTER=$MF bash benches/node/dataset.sh simplex /tmp/tS 10240
TILES=/tmp/tS BINS="new=$MF base=$BASE" DEVICES="gpu host" CASES="exact" PAR="16 32" bash benches/node/batch.sh

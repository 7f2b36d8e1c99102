#!/usr/bin/env bash
# The fast methods on the GPU machine (issue 4): byte identity of --exact,
# the 4096² × 17 classes σ = 21 dct5 target, a σ sweep, svd timings.
# JSON lines go to OUT/NAME.jsonl, the log to stdout.
# Usage: bash scripts/gpu-fast-bench.sh BINARY OUT [quick]
#   (GDAL-free binary: cargo build --release --no-default-features)
set -u
B=$1
O=$2
mode=${3:-full}
mkdir -p "$O"
run() { # NAME ARGS... : one bench, its JSON lines appended to OUT/NAME.jsonl
  local name=$1
  shift
  echo "== $name: bench --device gpu $*"
  timeout 200 "$B" bench --device gpu "$@" | tee -a "$O/$name.jsonl" |
    sed -E 's/.*"kernel":"([^"]*)".*"kernel_ms":([0-9.]+).*"rep":([0-9]+).*"total_ms":([0-9.]+).*"transfer_ms":([0-9.]+).*/  \1 rep \3: kernel \2 ms, transfer \5 ms, total \4 ms/'
}
t=4096
run target --size $t --classes 17 --pattern simplex --kernel gaussian:21 --method dct5 --tile $t --repeat 5 --warmup 2
run target --size $t --classes 17 --pattern random --kernel gaussian:21 --method dct5 --tile $t --repeat 5 --warmup 1
[ "$mode" = quick ] && exit 0
run sweep --size $t --classes 17 --pattern simplex --method dct5 --tile $t --repeat 3 --warmup 1 \
  --kernel "gaussian:1;gaussian:2;gaussian:5;gaussian:10;gaussian:21;gaussian:30;gaussian:42"
run check --size 1024 --classes 17 --pattern simplex --method dct5 --exact --tile 512 --repeat 1 --warmup 0 --check \
  --kernel "gaussian:1;gaussian:5;gaussian:21;box:15"
run check --size 1024 --classes 4 --pattern random --method dct5 --exact --tile 1024 --repeat 1 --warmup 0 --check \
  --kernel "gaussian:2;gaussian:10"
run check --size 2048 --classes 17 --pattern simplex --method dct5 --exact --tile 2048 --repeat 1 --warmup 0 --check \
  --kernel gaussian:10
run check --size 512 --classes 300 --pattern random --method dct5 --exact --tile 512 --repeat 1 --warmup 0 --check \
  --kernel gaussian:2
run check --size 1024 --classes 17 --pattern simplex --method dct5 --tile 1024 --repeat 1 --warmup 0 --check \
  --kernel "gaussian:5;gaussian:21"
run check --size 1024 --classes 17 --pattern simplex --method svd --exact --tile 1024 --repeat 1 --warmup 0 --check \
  --kernel gaussian:5
run exact --size $t --classes 17 --pattern simplex --kernel "gaussian:5;gaussian:21" --method dct5 --exact --tile $t --repeat 3 --warmup 1
run svd --size $t --classes 17 --pattern simplex --method svd --tile $t --repeat 3 --warmup 1 \
  --kernel "gaussian:2;gaussian:5;gaussian:10"

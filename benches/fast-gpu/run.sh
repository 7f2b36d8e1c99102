#!/usr/bin/env bash
# BENCHMARKS.md, "Certified mode (`--exact`)" (GPU rows, `sweep|big`) and
# "dct5 run time against σ" (H200 rows, `MF_BIG_SIZE=384 ... big`).
# The fast methods on the GPU machine (issue 4): the 4096² × 17 classes σ = 21
# dct5 target, the dct5 σ sweep (1..64; kernels up to 511² since the third
# session), byte identity of --exact against naive, svd timings; `big`: the
# σ = 64 (N = 385) checks of every exact method on the GPU.
# JSON lines go to OUT/NAME.jsonl, the log (with the per-kernel dct5 times of
# MAPFILTER_KERNEL_TIMES) to stdout. A mismatch of a --check run exits non-zero
# from that bench and is reported as "CHECK FAILED" at the end.
# Usage: bash benches/fast-gpu/run.sh BINARY OUT [quick|sweep|full|big]
#   quick: the target only; sweep: target, σ sweep, --exact checks (default);
#   full: also --exact timings at 4096² and svd;
#   big: σ sweep 1..64 and, at σ = 64 (N = 385) and box:301, --check of
#   dct5/svd --exact (one tile smaller than the 192 halo) and of every naive
#   variant (MF_BIG_SIZE: side of those checks, default 512; the host
#   reference costs 148k taps per pixel there).
#   (GDAL-free binary: cargo build --release --no-default-features)
set -u
B=$1
O=$2
mode=${3:-sweep}
dev=${MF_BENCH_DEVICE:-gpu} # MF_BENCH_DEVICE=cpu tries the script on PoCL
mkdir -p "$O"
failed=0
export MAPFILTER_KERNEL_TIMES=1
run() { # NAME ARGS... : one bench, its JSON lines appended to OUT/NAME.jsonl
  local name=$1
  shift
  echo "== $name: bench --device $dev $*"
  timeout 300 "$B" bench --device "$dev" "$@" 2> >(sed 's/^/  /' >&2) | tee -a "$O/$name.jsonl" |
    sed -E 's/.*"check":("[^"]*"|null).*"kernel":"([^"]*)".*"kernel_ms":([0-9.]+).*"rep":([0-9]+).*"summary":("[^"]*"|null).*"total_ms":([0-9.]+).*"transfer_ms":([0-9.]+).*/  \2 rep \4: kernel \3 ms, transfer \7 ms, total \6 ms, check \1, \5/'
  local st=${PIPESTATUS[0]}
  [ "$st" = 0 ] || { echo "  CHECK FAILED (exit $st)"; failed=1; }
}
t=${MF_BENCH_SIZE:-4096} # MF_BENCH_SIZE: a smaller side for a dry run
sigmas="gaussian:1;gaussian:2;gaussian:4;gaussian:8;gaussian:16;gaussian:21;gaussian:32;gaussian:42;gaussian:64"
if [ "$mode" = big ]; then
  b=${MF_BIG_SIZE:-512}
  run sweep --size $t --classes 17 --pattern simplex --method dct5 --tile $t --repeat 3 --warmup 1 --kernel "$sigmas"
  run big-check --size $b --classes 17 --pattern simplex --method dct5 --exact --tile $b --repeat 1 --warmup 0 --check \
    --kernel "gaussian:64;box:301"
  run big-check --size $b --classes 17 --pattern simplex --method dct5 --exact --tile 160 --repeat 1 --warmup 0 --check \
    --kernel gaussian:64
  run big-check --size $b --classes 4 --pattern random --method dct5 --exact --tile $b --repeat 1 --warmup 0 --check \
    --kernel gaussian:64
  run big-check --size $b --classes 17 --pattern simplex --method svd --exact --tile $b --repeat 1 --warmup 0 --check \
    --kernel "gaussian:64;disc:130"
  run big-check --size $b --classes 17 --pattern simplex --method dct5 --tile $b --repeat 1 --warmup 0 --check \
    --kernel gaussian:64
  for v in fast buffer image local; do
    run big-naive --size $b --classes 17 --pattern simplex --method naive --variant $v --tile $b --repeat 1 --warmup 0 --check \
      --kernel "gaussian:64;box:301;disc:130"
  done
  run big-naive --size $b --classes 4 --pattern random --method naive --tile 160 --repeat 1 --warmup 0 --check \
    --kernel "gaussian:64;box:301"
  [ $failed = 0 ] && echo "all runs passed" || echo "SOME RUNS FAILED"
  exit $failed
fi
run target --size $t --classes 17 --pattern simplex --kernel gaussian:21 --method dct5 --tile $t --repeat 5 --warmup 2
run target --size $t --classes 17 --pattern random --kernel gaussian:21 --method dct5 --tile $t --repeat 5 --warmup 1
if [ "$mode" != quick ]; then
  run sweep --size $t --classes 17 --pattern simplex --method dct5 --tile $t --repeat 3 --warmup 1 --kernel "$sigmas"
  run check --size 1024 --classes 17 --pattern simplex --method dct5 --exact --tile 512 --repeat 1 --warmup 0 --check \
    --kernel "gaussian:1;gaussian:5;gaussian:21;box:15"
  run check --size 1024 --classes 4 --pattern random --method dct5 --exact --tile 1024 --repeat 1 --warmup 0 --check \
    --kernel "gaussian:2;gaussian:10"
  run check --size 2048 --classes 17 --pattern simplex --method dct5 --exact --tile 2048 --repeat 1 --warmup 0 --check \
    --kernel "gaussian:10;gaussian:42"
  run check --size 512 --classes 256 --pattern random --method dct5 --exact --tile 512 --repeat 1 --warmup 0 --check \
    --kernel gaussian:2
  run check --size 1024 --classes 17 --pattern simplex --method dct5 --tile 1024 --repeat 1 --warmup 0 --check \
    --kernel "gaussian:5;gaussian:21"
  run check --size 1024 --classes 17 --pattern simplex --method svd --exact --tile 1024 --repeat 1 --warmup 0 --check \
    --kernel gaussian:5
fi
if [ "$mode" = full ]; then
  run exact --size $t --classes 17 --pattern simplex --kernel "gaussian:5;gaussian:21" --method dct5 --exact --tile $t --repeat 2 --warmup 1
  run svd --size $t --classes 17 --pattern simplex --method svd --tile $t --repeat 3 --warmup 1 \
    --kernel "gaussian:2;gaussian:5;gaussian:10"
fi
[ $failed = 0 ] && echo "all runs passed" || echo "SOME RUNS FAILED"
exit $failed

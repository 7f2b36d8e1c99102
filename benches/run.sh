#!/usr/bin/env bash
# The one entry point of the benchmarks: a named suite runs its driver,
# `render` rewrites BENCHMARKS.md's tables from benches/results/, `check`
# checks that they agree, `list` says what each suite measures and where.
#
# Usage (repo root):
#   bash benches/run.sh list
#   bash benches/run.sh SUITE [ARGS...]     ARGS go to the suite's driver
#   bash benches/run.sh render | check
#
# Each suite's driver lives in its folder (benches/README.md) and writes
# its rows as JSON lines under benches/results/<machine>/ (raw output stays
# in its $OUT); `render` turns those rows into the tables. The GPU suites
# run on a lent GPU machine with the binary or GDAL bundle in carry/
# (benches/README.md says how to build them).
set -euo pipefail
cd "$(dirname "$0")/.."

# name | where it runs | BENCHMARKS.md section | driver (ARGS appended)
suites=(
  "peers|2 cores|Host exact method against GRASS, OTB and SAGA|bash benches/peers/run.sh"
  "grass-dct5|2 cores|dct5 and --exact against GRASS|bash benches/peers/grass-dct5.sh"
  "sieve|2 cores|Sieve vs gdal_sieve.py|bash benches/peers/sieve.sh"
  "vs-gdal|2 cores|Whole command against gdal_translate|python3 benches/peers/vs_gdal.py"
  "maps|2 cores|Whole command on other maps (2 cores)|bash benches/maps/run.sh"
  "maps-build|2 cores|(the maps of 'maps', into DIR)|bash benches/maps/build.sh"
  "batch|2 cores|Batch|bash benches/batch/run.sh"
  "batch-instructions|2 cores|Batch (instruction counts, valgrind)|bash benches/batch/instructions.sh"
  "accuracy|2 cores|Coverage of the area intervals of assess|bash benches/accuracy/coverage.sh"
  "auto|host or GPU|auto --exact against the fastest exact method|python3 benches/auto/grid.py"
  "filters|host|Image filters: host against OpenCV; Pyramids, demosaic, colour|python3 benches/filters/bench_filters.py"
  "filters-gpu|GPU machine|Image filters: GPU against cv2.UMat|bash benches/filters/gpu.sh"
  "imgops-gpu|GPU machine|Pyramids, demosaic, colour (GPU tables)|bash benches/imgops/gpu.sh"
  "naive-gpu|GPU machine|Naive on the GPU|bash benches/naive-gpu/run.sh"
  "fast-gpu|GPU machine|Certified mode (GPU rows); dct5 run time against sigma|bash benches/fast-gpu/run.sh"
  "whole-gpu|GPU machine|Whole command against gdal_translate (GPU); Engine in memory|bash benches/whole-gpu/run.sh"
  "multi-gpu|2-GPU machine|Several GPUs in one run|bash benches/multi-gpu/run.sh"
  "node|GPU node|The node's throughput|bash benches/node/run.sh"
  "node-profile|GPU node|The node's throughput (a profile of one batch)|bash benches/node/profile.sh"
  "node-host-threads|GPU node|The host engine against its threads|bash benches/node/host-threads.sh"
  "node-jobs|GPU node|The node's throughput (tasks in flight)|bash benches/node/jobs.sh"
  "criterion|host|(criterion's reports, target/criterion/)|bash benches/criterion/run.sh"
  "python|host|Python: call overhead, against the CLI, scipy and scikit-image|python3 python/bench/compare_python.py"
)

field() { cut -d'|' -f"$2" <<<"$1"; }

case "${1:-list}" in
  list | -h | --help)
    printf '%-20s %-14s %s\n' suite "runs on" "BENCHMARKS.md section"
    for s in "${suites[@]}"; do
      printf '%-20s %-14s %s\n' "$(field "$s" 1)" "$(field "$s" 2)" "$(field "$s" 3)"
    done
    printf '\n%-20s %s\n' render "rewrite BENCHMARKS.md's tables from benches/results/"
    printf '%-20s %s\n' check "check that the tables and benches/results/ agree"
    ;;
  render | check)
    exec python3 scripts/render-benchmarks.py "$@"
    ;;
  *)
    for s in "${suites[@]}"; do
      if [ "$(field "$s" 1)" = "$1" ]; then
        shift
        read -r -a driver <<<"$(field "$s" 4)"
        exec "${driver[@]}" "$@"
      fi
    done
    echo "benches/run.sh: no suite '$1' (hint: bash benches/run.sh list)" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# BENCHMARKS.md, "Several GPUs in one run".
# Issue 24, several GPUs in one run, on a machine with two GPUs (the device
# tool's nvidia-h200-x2): for naive sigma 2.5, dct5 sigma 5 and dct5 --exact
# sigma 5 on the 415 Mpx land-cover stand-in,
#   1. the engine in memory (`bench --input`, 3 runs after a warm-up) on the
#      first GPU alone and on every GPU (`--device all`);
#   2. the whole `smooth` command, one GPU against all, with GDAL checksums
#      (exact methods must match);
#   3. `batch plan --grid 4` + `batch run` (16 tasks, no shard), one GPU
#      against all, every output tile compared with cmp.
# Builds nothing: uses the bundle of scripts/gpu-bundle.sh (gpu-env.sh).
# Usage (repo root, GPU machine): OUT=dir bash benches/multi-gpu/run.sh
set -u
cd "$(dirname "$0")/../.."
source scripts/gpu-env.sh
OUT=${OUT:-out/multi-gpu}
mkdir -p "$OUT"
# MF=path runs another build than the bundle's (e.g. carry/mapfilter-new.xz unpacked).
MF=${MF:-/tmp/mf/bin/mapfilter}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpus.txt"
"$MF" devices | tee "$OUT/devices.txt"
# The first GPU's index in `mapfilter devices`.
ONE=$(awk '$2 == "gpu" { print $1; exit }' "$OUT/devices.txt")
BIG=/tmp/landcover_28800x14400.tif
if [ ! -f "$BIG" ]; then
  gdal_translate -q -r nearest -outsize 28800 14400 -co TILED=YES -co COMPRESS=DEFLATE \
    -co NUM_THREADS=ALL_CPUS data/modis_igbp_2019_2048.tif "$BIG"
fi
cases=("naive|-k gaussian:2.5" "dct5|-k gaussian:5 --method dct5"
  "exact|-k gaussian:5 --method dct5 --exact")
W=/tmp/multi
rm -rf "$W" && mkdir -p "$W"
now() { date +%s.%N; }
echo "== engine in memory"
for c in "${cases[@]}"; do
  name=${c%%|*} opts=${c#*|}
  opts=${opts/-k /--kernel }
  for dev in "$ONE" all; do
    # shellcheck disable=SC2086
    "$MF" bench --input "$BIG" $opts --device "$dev" --repeat 3 --warmup 1 2>>"$OUT/bench.err" |
      sed "s/^/{\"case\":\"$name\",\"devices\":\"$dev\",\"line\":/; s/\$/}/" | tee -a "$OUT/bench.jsonl"
  done
done
echo "== whole smooth (wall s, checksum)"
for c in "${cases[@]}"; do
  name=${c%%|*} opts=${c#*|}
  for dev in "$ONE" all; do
    t0=$(now)
    # shellcheck disable=SC2086
    "$MF" smooth -q "$BIG" "$W/$name-$dev.tif" $opts --device "$dev" --timings 2>"$OUT/timings-$name-$dev.txt"
    t1=$(now)
    sum=$(gdalinfo -checksum "$W/$name-$dev.tif" | awk -F= '/Checksum/ { print $2; exit }')
    python3 -c "print('$name', '$dev', round($t1 - $t0, 3), '$sum')" | tee -a "$OUT/whole.txt"
  done
  rm -f "$W/$name-"*.tif
done
echo "== batch plan + run, 16 tasks (wall s; outputs compared)"
for c in "${cases[@]}"; do
  name=${c%%|*} opts=${c#*|}
  for dev in "$ONE" all; do
    t0=$(now)
    # shellcheck disable=SC2086
    "$MF" batch plan "$BIG" --out "$W/b-$name-$dev" --grid 4 $opts --device "$dev" >/dev/null &&
      "$MF" batch run "$W/b-$name-$dev" >"$OUT/batch-$name-$dev.log" 2>&1
    rc=$?
    t1=$(now)
    python3 -c "print('$name', '$dev', round($t1 - $t0, 3), 'rc=$rc')" | tee -a "$OUT/batch.txt"
  done
  same=identical
  for f in "$W/b-$name-$ONE"/out/*.tif; do
    cmp -s "$f" "$W/b-$name-all/out/$(basename "$f")" || same="DIFFERENT ($(basename "$f"))"
  done
  echo "$name batch outputs one GPU vs all: $same" | tee -a "$OUT/batch.txt"
  rm -rf "$W/b-$name-"*
done

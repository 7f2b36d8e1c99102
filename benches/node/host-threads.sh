#!/usr/bin/env bash
# Issue 39, "no configuration is slower with more resources": the host
# engine against its thread count, on the GPU machine (64 cores on
# nvidia-h100-x4), for the 415 Mpx land-cover stand-in (the bundled MODIS
# crop at 14x nearest, 28800x14400).
#   1. GDAL's floor: `gdal_translate` copies of it (ALL_CPUS, DEFLATE);
#   2. `bench --input` (raster in memory) dct5 --exact sigma 5 and naive
#      sigma 2.5 on the host at RAYON_NUM_THREADS 16 and 64, for each binary
#      named in BINS (e.g. "new=/tmp/mf/bin/mapfilter base=carry/mapfilter-base");
#   3. the whole `smooth` at 64 threads (bash `time`: real, user, sys);
#   4. with PERF set (a perf binary): perf record of each binary's 64-thread
#      in-memory run, its top symbols into $OUT/perf-NAME.txt.
# Prints JSON lines; run from the repo root after `source scripts/gpu-env.sh`.
set -u
OUT=${OUT:-out/node}
mkdir -p "$OUT"
BIG=${BIG:-/tmp/landcover_28800x14400.tif}
if [ ! -f "$BIG" ]; then
  gdal_translate -q -r nearest -outsize 28800 14400 -co TILED=YES -co COMPRESS=DEFLATE \
    -co NUM_THREADS=ALL_CPUS data/modis_igbp_2019_2048.tif "$BIG"
fi
now() { date +%s.%N; }
row() { python3 -c 'import json,sys; print(json.dumps(dict(a.split("=",1) for a in sys.argv[1:])))' "$@" | tee -a "$OUT/host-threads.jsonl"; }
for i in 1 2; do
  t0=$(now)
  gdal_translate -q -co TILED=YES -co COMPRESS=DEFLATE -co NUM_THREADS=ALL_CPUS "$BIG" /tmp/copy.tif
  row what=floor round=$i secs="$(python3 -c "print(round($(now) - $t0, 3))")"
  rm -f /tmp/copy.tif
done
cases=("exact|--kernel gaussian:5 --method dct5 --exact" "naive|--kernel gaussian:2.5")
for b in ${BINS:-new=/tmp/mf/bin/mapfilter}; do
  name=${b%%=*} exe=${b#*=}
  for c in "${cases[@]}"; do
    case=${c%%|*} opts=${c#*|}
    for t in ${THREADS:-16 64}; do
      # shellcheck disable=SC2086
      line=$(RAYON_NUM_THREADS=$t "$exe" bench --input "$BIG" $opts --device host --repeat 2 --warmup 0 2>>"$OUT/err.txt" | tail -1)
      echo "{\"what\":\"bench\",\"bin\":\"$name\",\"case\":\"$case\",\"threads\":$t,\"line\":$line}" | tee -a "$OUT/host-threads.jsonl"
    done
    # The whole command, every thread; user and sys from bash's time.
    rm -f /tmp/whole.tif
    # shellcheck disable=SC2086
    { TIMEFORMAT='%R %U %S'; time "$exe" smooth -q "$BIG" /tmp/whole.tif ${opts/--kernel/-k} --device host 2>>"$OUT/err.txt"; } 2>"$OUT/time.txt"
    read -r real user sys <"$OUT/time.txt"
    row what=smooth bin="$name" case="$case" threads=$(nproc) real="$real" user="$user" sys="$sys"
    rm -f /tmp/whole.tif
  done
  if [ -n "${PERF:-}" ]; then
    RAYON_NUM_THREADS=64 "$PERF" record -q -F 499 -g -o /tmp/perf.data -- "$exe" bench --input "$BIG" \
      --kernel gaussian:5 --method dct5 --exact --device host --repeat 1 --warmup 0 >/dev/null 2>>"$OUT/err.txt"
    "$PERF" report -i /tmp/perf.data --no-children --sort symbol --stdio 2>/dev/null | grep -v '^$' | head -80 >"$OUT/perf-$name.txt"
    "$PERF" report -i /tmp/perf.data --no-children --sort comm,dso --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30 >>"$OUT/perf-$name.txt"
  fi
done

#!/usr/bin/env bash
# BENCHMARKS.md, "Whole command against gdal_translate" (GPU table) and
# "Engine in memory".
# Issue 20, the GPU engine's host-side work (tile preparation, code mapping):
# every binary given, alternating within each of 3 rounds so that all see
# the same machine state, on the 415 Mpx land-cover stand-in:
#   1. `bench --input` (engine in memory, default tile) for dct5 sigma 5,
#      naive sigma 2.5 and dct5 --exact sigma 5 on the GPU: Gpx/s, device
#      kernel and transfer times, and the engine's per-stage busy times
#      (read, prepare, submit, wait, map back, sink; binaries from before
#      the stage times print none);
#   2. whole `smooth --timings` commands, the same three cases on the GPU
#      and dct5 on the host, against one `gdal_translate` copy per round.
# Builds nothing: pass release binaries of mapfilter built with GDAL (e.g.
# the bin/mapfilter of bundles from scripts/gpu-bundle.sh unpacked side by
# side: /tmp/mf-before/bin/mapfilter /tmp/mf/bin/mapfilter); their libraries
# and gdal_translate come from carry/gdal-bundle.tar.xz (gpu-env.sh).
# Prints two tables (also $OUT/table.md): per binary and case, the value of
# each round, then the median; the whole commands' --timings are in $OUT.
# TILE=N passes --tile N to bench (default: each binary's own default);
# WHOLE=0 skips the whole commands.
# Usage (repo root, GPU machine): OUT=dir bash benches/whole-gpu/run.sh BIN [BIN...]
set -u
cd "$(dirname "$0")/../.."
if [ $# -eq 0 ]; then
  echo "usage: OUT=dir bash benches/whole-gpu/run.sh MAPFILTER [MAPFILTER...]" >&2
  exit 2
fi
source scripts/gpu-env.sh
OUT=${OUT:-out/whole-gpu}
mkdir -p "$OUT"
"$1" devices | tee "$OUT/devices.txt"
BIG=/tmp/landcover_28800x14400.tif
if [ ! -f "$BIG" ]; then
  gdal_translate -q -r nearest -outsize 28800 14400 -co TILED=YES -co COMPRESS=DEFLATE \
    -co NUM_THREADS=ALL_CPUS data/modis_igbp_2019_2048.tif "$BIG"
fi
: >"$OUT/bench.jsonl"
: >"$OUT/whole.jsonl"
cases=("dct5|--kernel gaussian:5 --method dct5" "naive|--kernel gaussian:2.5"
  "exact|--kernel gaussian:5 --method dct5 --exact")
whole=("dct5-gpu|-k gaussian:5 --method dct5 --device gpu" "naive-gpu|-k gaussian:2.5 --device gpu"
  "exact-gpu|-k gaussian:5 --method dct5 --exact --device gpu"
  "dct5-host|-k gaussian:5 --method dct5 --device host")
timed() { # label, bin index, round, then the command
  local label=$1 b=$2 round=$3
  shift 3
  local t0 t1
  t0=$EPOCHREALTIME
  "$@" >/dev/null 2>"$OUT/timings-$label-$b-$round.txt"
  local rc=$?
  t1=$EPOCHREALTIME
  echo "{\"label\":\"$label\",\"bin\":$b,\"round\":$round,\"rc\":$rc,\"wall_s\":$(awk "BEGIN { print $t1 - $t0 }")}" >>"$OUT/whole.jsonl"
}
for round in 1 2 3; do
  # The binaries' order alternates by round.
  order=$(seq 1 $#)
  [ $((round % 2)) -eq 0 ] && order=$(seq $# -1 1)
  for case in "${cases[@]}"; do
    label=${case%%|*}
    for b in $order; do
      bin=${!b}
      # shellcheck disable=SC2086
      timeout 300 "$bin" bench --input "$BIG" --device gpu --repeat 1 ${TILE:+--tile $TILE} ${case#*|} \
        2>>"$OUT/bench.err" |
        sed "s|^{|{\"bin\":$b,\"round\":$round,\"label\":\"$label\",|" >>"$OUT/bench.jsonl"
    done
  done
  [ "${WHOLE:-1}" = 0 ] && continue
  timed copy 0 "$round" gdal_translate -q -co COMPRESS=DEFLATE -co TILED=YES \
    -co NUM_THREADS=ALL_CPUS "$BIG" /tmp/devmap-copy.tif
  for case in "${whole[@]}"; do
    label=${case%%|*}
    for b in $order; do
      bin=${!b}
      # shellcheck disable=SC2086
      timed "$label" "$b" "$round" timeout 300 "$bin" smooth "$BIG" /tmp/devmap-out.tif \
        --overwrite -q --timings ${case#*|}
    done
  done
done

python3 - "$OUT" "$@" <<'PY' | tee "$OUT/table.md"
import json, statistics, sys, pathlib
out, bins = pathlib.Path(sys.argv[1]), sys.argv[2:]
rows = [json.loads(l) for l in (out / "bench.jsonl").read_text().splitlines() if l.strip()]
nan = float("nan")
def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else nan
stages = ["read", "prepare", "submit", "wait", "map_back", "sink"]
print("Engine in memory (`bench --input`, default tile), medians of 3 rounds; stage times are busy ms.\n")
print("| binary | case | tile | Gpx/s rounds | median Gpx/s | total ms | kernels ms | transfers ms | "
      + " | ".join(stages) + " |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | " + " | ".join("---" for _ in stages) + " |")
for label in ["dct5", "naive", "exact"]:
    for i, b in enumerate(bins, 1):
        rs = [r for r in rows if r["bin"] == i and r["label"] == label]
        if not rs:
            print(f"| {b} | {label} | | failed (see bench.err) |" + " |" * (4 + len(stages)))
            continue
        g = [r["mpix_s"] / 1e3 for r in rs]
        st = [med([(r.get("stages_ms") or {}).get(s) for r in rs]) for s in stages]
        print(f'| {b} | {label} | {rs[0]["tile"]} | {" ".join(f"{x:.2f}" for x in g)} | '
              f'{statistics.median(g):.2f} | {med([r["total_ms"] for r in rs]):.0f} | '
              f'{med([r.get("kernel_ms") for r in rs]):.0f} | {med([r.get("transfer_ms") for r in rs]):.0f} | '
              + " | ".join(f"{v:.0f}" for v in st) + " |")
whole = [json.loads(l) for l in (out / "whole.jsonl").read_text().splitlines() if l.strip()]
if not whole:
    sys.exit(0)
copy = med([r["wall_s"] for r in whole if r["label"] == "copy" and r["rc"] == 0])
print(f"\nWhole commands, wall s (median of 3 rounds; gdal_translate copy {copy:.3f} s).\n")
print("| binary | case | rounds | median s | × copy |")
print("| --- | --- | --- | --- | --- |")
for label in ["dct5-gpu", "naive-gpu", "exact-gpu", "dct5-host"]:
    for i, b in enumerate(bins, 1):
        rs = [r for r in whole if r["label"] == label and r["bin"] == i]
        ok = [r["wall_s"] for r in rs if r["rc"] == 0]
        if len(ok) < len(rs) or not ok:
            print(f"| {b} | {label} | failed (see timings-{label}-{i}-*.txt) | | |")
            continue
        m = statistics.median(ok)
        print(f'| {b} | {label} | {" ".join(f"{x:.3f}" for x in ok)} | {m:.3f} | {m / copy:.2f} |')
PY

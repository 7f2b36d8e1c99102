#!/usr/bin/env bash
# Issue 20, host-side tile preparation of the GPU engine: `bench --input`
# (engine in memory) Gpx/s on the 415 Mpx land-cover stand-in of
# scripts/gpu-stream.sh for dct5 sigma 5, naive sigma 2.5 and dct5 --exact
# sigma 5, default tile, for every binary given, the binaries alternating
# within each of 3 rounds so that all see the same machine state.
# Builds nothing: pass release binaries of mapfilter built with GDAL (e.g.
# the bin/mapfilter of bundles from scripts/gpu-bundle.sh unpacked side by
# side); their libraries come from carry/gdal-bundle.tar.xz (gpu-env.sh).
# Prints one table (also $OUT/table.md): per binary and case, Gpx/s of each
# round, then the median.
# Usage (repo root, GPU machine): OUT=dir bash scripts/gpu-devmap.sh BIN [BIN...]
set -u
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  echo "usage: OUT=dir bash scripts/gpu-devmap.sh MAPFILTER [MAPFILTER...]" >&2
  exit 2
fi
source scripts/gpu-env.sh
OUT=${OUT:-out/gpu-devmap}
mkdir -p "$OUT"
"$1" devices | tee "$OUT/devices.txt"
BIG=/tmp/landcover_28800x14400.tif
if [ ! -f "$BIG" ]; then
  gdal_translate -q -r nearest -outsize 28800 14400 -co TILED=YES -co COMPRESS=DEFLATE \
    -co NUM_THREADS=ALL_CPUS data/modis_igbp_2019_2048.tif "$BIG"
fi
: >"$OUT/bench.jsonl"
cases=("dct5|--kernel gaussian:5 --method dct5" "naive|--kernel gaussian:2.5"
  "exact|--kernel gaussian:5 --method dct5 --exact")
for round in 1 2 3; do
  for case in "${cases[@]}"; do
    label=${case%%|*}
    for bin in "$@"; do
      # shellcheck disable=SC2086
      timeout 300 "$bin" bench --input "$BIG" --device gpu --repeat 1 ${case#*|} \
        2>>"$OUT/bench.err" |
        sed "s|^{|{\"bin\":\"$bin\",\"round\":$round,\"label\":\"$label\",|" >>"$OUT/bench.jsonl"
    done
  done
done

python3 - "$OUT" "$@" <<'PY' | tee "$OUT/table.md"
import json, statistics, sys, pathlib
out, bins = pathlib.Path(sys.argv[1]), sys.argv[2:]
rows = [json.loads(l) for l in (out / "bench.jsonl").read_text().splitlines() if l.strip()]
print("| binary | case | tile | Gpx/s rounds 1-3 | median Gpx/s | median total ms | kernels ms | transfers ms |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for label in ["dct5", "naive", "exact"]:
    for b in bins:
        rs = [r for r in rows if r["bin"] == b and r["label"] == label]
        if not rs:
            print(f"| {b} | {label} | | failed (see bench.err) | | | | |")
            continue
        g = [r["mpix_s"] / 1e3 for r in rs]
        med = lambda k: statistics.median(r[k] for r in rs if r.get(k) is not None) if any(r.get(k) is not None for r in rs) else float("nan")
        print(f'| {b} | {label} | {rs[0]["tile"]} | {" ".join(f"{x:.2f}" for x in g)} | '
              f'{statistics.median(g):.2f} | {med("total_ms"):.0f} | {med("kernel_ms"):.0f} | {med("transfer_ms"):.0f} |')
PY

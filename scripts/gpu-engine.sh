#!/usr/bin/env bash
# The engine in memory and several devices on the GPU machine (issue 20:
# engine >= 3 Gpx/s for dct5 sigma 5 on 17 classes; --device all; the tune
# database). On the 415 Mpx land-cover stand-in of scripts/gpu-throughput.sh:
#   1. bench --input (engine in memory), dct5 gaussian:5, tiles 1024/2048/4096,
#      on the GPU, on the GPU opened twice (gpu,gpu: two contexts, two tiles
#      in flight from two threads) and on every device (all: GPU + PoCL);
#   2. mapfilter tune on the GPU (its database in $OUT), then bench again with it;
#   3. whole smooth commands with --timings (per-device shares) and the
#      checksums of the exact paths on one device and on all (must match).
# Prints one compact table at the end (also $OUT/table.md).
# Needs carry/gdal-bundle.tar.xz built from this branch (scripts/gpu-bundle.sh).
# Usage (repo root, on the GPU machine): OUT=dir bash scripts/gpu-engine.sh
set -u
cd "$(dirname "$0")/.."
source scripts/gpu-env.sh
OUT=${OUT:-out/gpu-engine}
mkdir -p "$OUT"
B=/tmp/mf/bin/mapfilter
"$B" devices | tee "$OUT/devices.txt"
BIG=/tmp/landcover_28800x14400.tif
if [ ! -f "$BIG" ]; then
  gdal_translate -q -r nearest -outsize 28800 14400 -co TILED=YES -co COMPRESS=DEFLATE \
    -co NUM_THREADS=ALL_CPUS data/modis_igbp_2019_2048.tif "$BIG"
fi
# Runs ignore any database but the one tune writes below.
export MAPFILTER_TUNE_DB="$OUT/tune.json"
rm -f "$MAPFILTER_TUNE_DB"

bench() { # label, then bench options
  local label=$1
  shift
  timeout 180 "$B" bench --input "$BIG" --kernel gaussian:5 --method dct5 --repeat 3 "$@" 2>>"$OUT/bench.err" |
    sed "s/^{/{\"label\":\"$label\",/" >>"$OUT/bench.jsonl"
}

echo "== engine in memory"
for t in 1024 2048 4096; do
  bench gpu --device gpu --tile "$t"
  bench gpu,gpu --device gpu,gpu --tile "$t"
  bench all --device all --tile "$t"
done
bench exact-gpu --device gpu --tile 2048 --exact
bench exact-all --device all --tile 2048 --exact

echo "== tune (GPU only), then the engine with its settings"
timeout 300 "$B" tune --device gpu --budget 60 >"$OUT/tune.txt" 2>"$OUT/tune.err"
cat "$OUT/tune.txt"
bench gpu-tuned --device gpu

echo "== whole commands"
whole() { # label, output, smooth options
  local label=$1 out=$2
  shift 2
  local t0 t1
  t0=$EPOCHREALTIME
  "$B" smooth "$BIG" "$out" -q --overwrite --timings "$@" 2>"$OUT/timings-$label.txt"
  t1=$EPOCHREALTIME
  echo "{\"label\":\"$label\",\"wall_s\":$(awk "BEGIN { print $t1 - $t0 }")}" >>"$OUT/whole.jsonl"
}
whole dct5-gpu /tmp/e_dct5_gpu.tif -k gaussian:5 --method dct5 --device gpu
whole dct5-all /tmp/e_dct5_all.tif -k gaussian:5 --method dct5 --device all
whole dct5-gpu2 /tmp/e_dct5_gpu2.tif -k gaussian:5 --method dct5 --device gpu,gpu
whole exact-gpu /tmp/e_exact_gpu.tif -k gaussian:5 --method dct5 --exact --device gpu
whole exact-all /tmp/e_exact_all.tif -k gaussian:5 --method dct5 --exact --device all
whole naive-gpu /tmp/e_naive_gpu.tif -k gaussian:2.5 --device gpu
whole naive-all /tmp/e_naive_all.tif -k gaussian:2.5 --device all
for f in exact_gpu exact_all naive_gpu naive_all; do
  echo "$f $(gdalinfo -checksum /tmp/e_$f.tif | grep Checksum)"
done | tee "$OUT/identity.txt"

python3 - "$OUT" <<'EOF' | tee "$OUT/table.md"
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for l in (out / "bench.jsonl").read_text().splitlines() if l.strip()]
best = {}
for r in rows:
    key = (r["label"], r["tile"])
    if key not in best or r["total_ms"] < best[key]["total_ms"]:
        best[key] = r
print("| engine in memory | tile | Gpx/s | total ms | kernels ms | transfers ms | tiles per device |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for (label, tile), r in sorted(best.items()):
    shares = ", ".join(f'{d["tiles"]} ({d["busy_ms"]:.0f} ms busy)' for d in (r.get("devices") or []))
    f = lambda v: "" if v is None else f"{v:.0f}"
    print(f'| {label} | {tile} | {r["mpix_s"] / 1e3:.2f} | {r["total_ms"]:.0f} | '
          f'{f(r.get("kernel_ms"))} | {f(r.get("transfer_ms"))} | {shares} |')
print()
print("| whole smooth | wall s |")
print("| --- | --- |")
for l in (out / "whole.jsonl").read_text().splitlines():
    r = json.loads(l)
    print(f'| {r["label"]} | {r["wall_s"]:.2f} |')
print()
print("identity (pairs must match):")
print((out / "identity.txt").read_text())
EOF

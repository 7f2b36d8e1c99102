#!/usr/bin/env bash
# The device streaming layer on the GPU machine (issues 18 and 20: every
# device method keeps several tiles in flight; engine in memory >= 3 Gpx/s
# for dct5 sigma 5 on 17 classes). On the 415 Mpx land-cover stand-in of
# scripts/gpu-engine.sh, `bench --input` (engine in memory, best of 3) for
# every device method: naive sigma 2.5, dct5 sigma 5, svd sigma 5, the
# certified mode (--exact) sigma 5, at tiles 1024, 2048 and 4096.
# With BEFORE=path/to/mapfilter (a bundle of the tree before the streaming
# layer, unpacked elsewhere, e.g. /tmp/mf-before/bin/mapfilter) every run
# is paired: before and after alternate, so both see the same machine state.
# Prints one table (also $OUT/table.md): Gpx/s, total, kernel and transfer ms.
# Needs carry/gdal-bundle.tar.xz built from this branch (scripts/gpu-bundle.sh).
# Usage (repo root, on the GPU machine): OUT=dir [BEFORE=bin] bash scripts/gpu-stream.sh
set -u
cd "$(dirname "$0")/.."
source scripts/gpu-env.sh
OUT=${OUT:-out/gpu-stream}
mkdir -p "$OUT"
AFTER=/tmp/mf/bin/mapfilter
BEFORE=${BEFORE:-}
"$AFTER" devices | tee "$OUT/devices.txt"
BIG=/tmp/landcover_28800x14400.tif
if [ ! -f "$BIG" ]; then
  gdal_translate -q -r nearest -outsize 28800 14400 -co TILED=YES -co COMPRESS=DEFLATE \
    -co NUM_THREADS=ALL_CPUS data/modis_igbp_2019_2048.tif "$BIG"
fi
: >"$OUT/bench.jsonl"

bench() { # build label, binary, case label, then bench options
  local build=$1 bin=$2 label=$3
  shift 3
  timeout 240 "$bin" bench --input "$BIG" --device gpu --repeat 3 "$@" 2>>"$OUT/bench.err" |
    sed "s/^{/{\"build\":\"$build\",\"label\":\"$label\",/" >>"$OUT/bench.jsonl"
}

for t in 1024 2048 4096; do
  for case in "naive|--kernel gaussian:2.5" "dct5|--kernel gaussian:5 --method dct5" \
    "svd|--kernel gaussian:5 --method svd" "exact|--kernel gaussian:5 --method dct5 --exact"; do
    label=${case%%|*}
    # shellcheck disable=SC2086
    set -- ${case#*|}
    if [ -n "$BEFORE" ]; then bench before "$BEFORE" "$label" --tile "$t" "$@"; fi
    bench after "$AFTER" "$label" --tile "$t" "$@"
  done
done

python3 - "$OUT" <<'PY' | tee "$OUT/table.md"
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for l in (out / "bench.jsonl").read_text().splitlines() if l.strip()]
f = lambda v: "" if v is None else f"{v:.0f}"
print("| build | method | tile | Gpx/s | total ms | kernels ms | transfers ms |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in sorted(rows, key=lambda r: (r["label"], r["tile"], r["build"])):
    print(f'| {r["build"]} | {r["label"]} | {r["tile"]} | {r["mpix_s"] / 1e3:.2f} | '
          f'{r["total_ms"]:.0f} | {f(r.get("kernel_ms"))} | {f(r.get("transfer_ms"))} |')
PY

#!/usr/bin/env bash
# Identity set for refactors: runs a fixed list of commands (every smoothing
# method on host and on the PoCL CPU device, a few tile sizes, policies,
# image filters, compare and report JSON less its timings) and prints one
# "sha256  name" line per output. Two builds whose lists are equal produce
# byte-identical outputs.
#
#   bash scripts/identity.sh [MAPFILTER] > before.txt
#   ... change the code, rebuild ...
#   bash scripts/identity.sh [MAPFILTER] > after.txt && diff before.txt after.txt
#
# MAPFILTER defaults to target/debug/mapfilter. About a minute on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-target/debug/mapfilter}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
map=data/synthetic_simplex_512.tif
modis=data/modis_igbp_2019_2048.tif
dem=data/dem_jacksboro.tif
photo=data/photo_grace_hopper.tif

# Cut the MODIS map to 1024x512, so the set stays quick but keeps real classes.
gdal_translate -q -srcwin 512 512 1024 512 "$modis" "$work/modis.tif"
modis=$work/modis.tif

n=0
run() { # name, then the command's arguments with OUT for the output path
  local name=$1
  shift
  local args=()
  for a in "$@"; do args+=("${a//OUT/$work/$name}"); done
  "$bin" "${args[@]}" -q >/dev/null 2>"$work/err" || {
    echo "identity: $name failed:" >&2
    cat "$work/err" >&2
    exit 1
  }
  n=$((n + 1))
}

devices=(host)
# Captured first: grep -q closing the pipe early would fail it under pipefail.
listed=$("$bin" devices 2>/dev/null || true)
if grep -q "Portable Computing Language" <<<"$listed"; then
  devices+=(cpu)
fi

for dev in "${devices[@]}"; do
  for tile in 128 512; do
    for method in naive svd dct5 auto; do
      run "smooth-$method-$dev-$tile.tif" smooth "$modis" OUT -k gaussian:2.5 \
        --method "$method" --device "$dev" --tile "$tile"
    done
    run "smooth-exact-$dev-$tile.tif" smooth "$modis" OUT -k gaussian:3 \
      --method dct5 --exact --device "$dev" --tile "$tile"
    run "smooth-box-$dev-$tile.tif" smooth "$map" OUT -k box:7 --device "$dev" --tile "$tile"
    run "smooth-weights-$dev-$tile.tif" smooth "$map" OUT -k disc:4 \
      --class-weights 1:2,3:0.5 --fill-nodata --device "$dev" --tile "$tile"
  done
  run "smooth-svd-rank-$dev.tif" smooth "$modis" OUT -k gaussian:2 --method svd --rank 2 --device "$dev"
  run "smooth-dct5-terms-$dev.tif" smooth "$modis" OUT -k gaussian:4 --method dct5 --terms 2 --device "$dev"
  run "smooth-valid-$dev.tif" smooth "$map" OUT -k box:5 --border valid --device "$dev"
  run "smooth-ties-$dev.tif" smooth "$modis" OUT -k box:5 --ties smallest --keep 17 --device "$dev"
  run "smooth-iter-$dev.tif" smooth "$modis" OUT -k box:3 --iterations 3 --only-isolated 3 --device "$dev"
done
run "smooth-mmu.tif" smooth "$modis" OUT -k gaussian:2 --mmu 9
run "smooth-cog.tif" smooth "$modis" OUT -k gaussian:2 --of COG
run "sieve-4.tif" sieve "$modis" OUT --threshold 12 --connectivity 4
run "sieve-8.tif" sieve "$modis" OUT --threshold 12 --connectivity 8

filter_devices=(host host-reference)
[ "${#devices[@]}" -gt 1 ] && filter_devices+=(cpu)
for dev in "${filter_devices[@]}"; do
  run "filter-gauss-$dev.tif" filter "$dem" OUT --op gaussian:2 --device "$dev"
  run "filter-median-$dev.tif" filter "$photo" OUT --op median:5 --device "$dev"
  run "filter-bilateral-$dev.tif" filter "$photo" OUT --op bilateral:3:30 --device "$dev"
  run "filter-scharr-$dev.tif" filter "$dem" OUT --op scharr:5 --device "$dev"
  run "filter-chain-$dev.tif" filter "$photo" OUT --op box:3 --op sharpen:3 --op pyrdown --device "$dev"
  run "filter-denoise-$dev.tif" filter "$photo" OUT --op gray --op denoise:3:2:20 --device "$dev"
done

run "compare.json" compare "$modis" "$work/smooth-dct5-host-512.tif" \
  --json OUT --mismatch "$work/compare-mismatch.tif"
run "smooth-report.json" smooth "$modis" "$work/report.tif" -k gaussian:2.5 --method dct5 \
  --report "$work/report.html" --json OUT

# Timings and paths differ from run to run: drop them from the JSON.
python3 - "$work" <<'EOF'
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])
DROP = {"seconds", "provenance", "outputs", "times", "task_seconds",
        "megapixels_per_second", "slowest", "speedup", "speed_up",
        "timings", "elapsed", "date", "command", "version", "wall_seconds",
        "inputs", "source", "path", "output", "command_line", "report", "input"}
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in DROP
                and not k.endswith("_seconds") and not k.endswith("_ms")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
for p in list(work.rglob("*.json")):
    p.write_text(json.dumps(strip(json.loads(p.read_text())), sort_keys=True))
EOF

cd "$work"
find . -type f \( -name '*.tif' -o -name '*.json' \) ! -name 'modis.tif' | sort |
  xargs sha256sum | sed 's#  \./#  #'
echo "identity: $n commands" >&2

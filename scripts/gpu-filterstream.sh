#!/usr/bin/env bash
# The image-filter device runner before and after it streams tiles through
# device/stream.rs (issues 18/20: several tiles in flight instead of strips
# within one tile): `mapfilter filter` of a 4096² RGB Byte image (the photo
# resampled) with a 5×5 Gaussian (gaussian:1:5), default tiles (512) and
# tiles of 1024, REPEAT runs each, before and after alternating so both see
# the same machine state. Prints the median wall seconds per case (also
# $OUT/table.md) and checks that both builds wrote identical pixels.
# Usage (repo root, on the GPU machine, after scripts/gpu-bundle.sh here):
#   OUT=dir BEFORE=/tmp/mf-before/bin/mapfilter bash scripts/gpu-filterstream.sh
# (BEFORE: a bundle of the tree before this change, unpacked elsewhere).
# On PoCL here (as for benches/results/filterstream.md):
#   ENV=0 DEV=cpu CHRT=1 BEFORE=old/mapfilter AFTER=target/release/mapfilter bash scripts/gpu-filterstream.sh
set -u
cd "$(dirname "$0")/.."
if [ "${ENV:-1}" = 1 ]; then source scripts/gpu-env.sh; fi
OUT=${OUT:-out/gpu-filterstream}
DEV=${DEV:-gpu}
REPEAT=${REPEAT:-5}
TILES=${TILES:-512 1024}
AFTER=${AFTER:-/tmp/mf/bin/mapfilter}
BEFORE=${BEFORE:?BEFORE=path to the mapfilter built before this change}
PRIO=()
if [ "${CHRT:-0}" = 1 ]; then PRIO=(chrt -r 10); fi
mkdir -p "$OUT"
IMG=$OUT/photo_4096.tif
if [ ! -f "$IMG" ]; then
  gdal_translate -q -r bilinear -outsize 4096 4096 data/photo_grace_hopper.tif "$IMG"
fi
"$AFTER" devices >"$OUT/devices.txt" 2>&1
: >"$OUT/all.txt"
: >"$OUT/check.txt"
LOG=$OUT/warm.txt
# one build label, binary, tile: one timed run, seconds appended to $LOG
once() {
  local build=$1 bin=$2 tile=$3 t0 t1
  t0=$(date +%s.%N)
  "${PRIO[@]}" "$bin" filter "$IMG" "$OUT/$build-$tile.tif" --op gaussian:1:5 --device "$DEV" \
    --tile "$tile" --overwrite -q || { echo "FAILED: $build tile $tile" | tee -a "$OUT/check.txt"; return; }
  t1=$(date +%s.%N)
  echo "$build $tile $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')" >>"$LOG"
}
for tile in $TILES; do
  LOG=$OUT/warm.txt # warm-up: kernel builds, page cache
  once before "$BEFORE" "$tile"
  once after "$AFTER" "$tile"
  LOG=$OUT/all.txt
  for _ in $(seq "$REPEAT"); do
    once before "$BEFORE" "$tile"
    once after "$AFTER" "$tile"
  done
  if cmp -s <(gdalinfo -checksum "$OUT/before-$tile.tif" | grep Checksum) \
    <(gdalinfo -checksum "$OUT/after-$tile.tif" | grep Checksum); then
    echo "tile $tile: identical pixels" | tee -a "$OUT/check.txt"
  else
    echo "tile $tile: PIXELS DIFFER" | tee -a "$OUT/check.txt"
  fi
done
{
  echo "| build | tile | median s | runs |"
  echo "|---|---|---|---|"
  for tile in $TILES; do
    for build in before after; do
      awk -v b="$build" -v t="$tile" '$1 == b && $2 == t { print $3 }' "$OUT/all.txt" | sort -n |
        awk -v b="$build" -v t="$tile" '{ v[NR] = $1 } END {
          m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "| %s | %s | %.2f | %d |\n", b, t, m, NR }'
    done
  done
} | tee "$OUT/table.md"

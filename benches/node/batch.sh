#!/usr/bin/env bash
# Issue 39, "the node's throughput": a batch of tiles on the GPU machine
# against the node's own GDAL floor, every configuration paired in one call.
#   TILES=DIR  the dataset (made by benches/node/dataset.sh)
#   BINS="new=/tmp/mf/bin/mapfilter base=carry/mapfilter-base"
#   DEVICES="gpu all host"   CASES="exact naive"   PAR="16 32" (copies at once)
# 1. the floor: `gdal_translate` copies of every tile (DEFLATE, tiled), PAR
#    at once, the best rate kept;
# 2. for each binary, device and case: `batch plan` + `batch run` with the
#    defaults (no --jobs), wall seconds, Mpx/s and the ratio to the floor;
#    the exact outputs of every binary and device must be byte-identical
#    (cmp against the first run of the case).
# JSON lines on stdout and in $OUT/batch.jsonl. Run from the repo root after
# `source scripts/gpu-env.sh`.
set -u
OUT=${OUT:-out/node}
mkdir -p "$OUT"
TILES=${TILES:?the tiles}
now() { date +%s.%N; }
mpx=$(for f in "$TILES"/*.tif; do gdalinfo "$f" | awk '/^Size is/ { gsub(",", ""); print $3 * $4 }'; done |
  awk '{ s += $1 } END { printf "%.1f", s / 1e6 }')
n=$(ls "$TILES"/*.tif | wc -l)
row() { echo "$1" | tee -a "$OUT/batch.jsonl"; }
best=999999
for p in ${PAR:-16 32}; do
  rm -rf /tmp/copies && mkdir -p /tmp/copies
  t0=$(now)
  ls "$TILES"/*.tif | xargs -P "$p" -I{} sh -c 'gdal_translate -q -co TILED=YES -co COMPRESS=DEFLATE "$1" /tmp/copies/$(basename "$1")' _ {}
  s=$(python3 -c "print(round($(now) - $t0, 3))")
  row "{\"what\":\"floor\",\"tiles\":$n,\"mpx\":$mpx,\"at_once\":$p,\"secs\":$s}"
  best=$(python3 -c "print(min($best, $s))")
done
rm -rf /tmp/copies
declare -A first
for c in ${CASES:-exact naive}; do
  case $c in
    exact) opts="-k gaussian:5 --method dct5 --exact" ;;
    naive) opts="-k gaussian:2.5" ;;
  esac
  for d in ${DEVICES:-gpu all host}; do
    # Untimed first: a fresh machine compiles the OpenCL programs on the
    # first run (then cached for every binary), which cost the first binary
    # timed up to 2.5x (a "regression" of one GPU that was only this).
    for b in ${BINS:-new=/tmp/mf/bin/mapfilter}; do
      # shellcheck disable=SC2086
      "${b#*=}" smooth "$(ls "$TILES"/*.tif | head -1)" /tmp/warm.tif $opts --device "$d" -q --overwrite 2>/dev/null
    done
    for b in ${BINS:-new=/tmp/mf/bin/mapfilter}; do
      name=${b%%=*} exe=${b#*=}
      w=/tmp/nb-$name-$c-$d
      rm -rf "$w"
      t0=$(now)
      # shellcheck disable=SC2086
      "$exe" batch plan "$TILES" --out "$w" $opts --device "$d" >/dev/null 2>>"$OUT/batch.err" &&
        "$exe" batch run "$w" -q 2>>"$OUT/batch.err"
      rc=$?
      s=$(python3 -c "print(round($(now) - $t0, 3))")
      same=null
      if [ -z "${first[$c]:-}" ]; then
        first[$c]=$w
      else
        same=true
        for f in "${first[$c]}"/out/*.tif; do
          # GeoTIFFs of one content may differ in their headers' offsets
          # only if written differently: compare the pixels' checksums.
          a=$(gdalinfo -checksum "$f" | awk -F= '/Checksum/ { print $2; exit }')
          o=$(gdalinfo -checksum "$w/out/$(basename "$f")" 2>/dev/null | awk -F= '/Checksum/ { print $2; exit }')
          [ "$a" = "$o" ] || same=false
        done
      fi
      row "{\"what\":\"batch\",\"bin\":\"$name\",\"case\":\"$c\",\"device\":\"$d\",\"rc\":$rc,\"secs\":$s,\"mpx_s\":$(python3 -c "print(round($mpx / $s, 1))"),\"of_floor\":$(python3 -c "print(round($best / $s, 3))"),\"same_as_first\":$same}"
      [ "${first[$c]}" = "$w" ] || rm -rf "$w"
    done
  done
  rm -rf "${first[$c]}"
done

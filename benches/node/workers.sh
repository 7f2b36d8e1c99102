#!/usr/bin/env bash
# Issue 39: tasks in flight and compute threads against the batch's time on
# the node, defaults included, each binary paired in one call. Every run's
# outputs are checked against the case's first run (pixel checksums).
#   TILES=DIR  BINS="new=… base=…"  DEVICES="all host"  CASES="exact naive"
#   GRID="J:P …" (J tasks in flight, P pool threads; "default" for none)
# JSON lines on stdout and in $OUT/workers.jsonl. Run from the repo root
# after `source scripts/gpu-env.sh`.
set -u
OUT=${OUT:-out/node}
mkdir -p "$OUT"
TILES=${TILES:?the tiles}
now() { date +%s.%N; }
mpx=$(for f in "$TILES"/*.tif; do gdalinfo "$f" | awk '/^Size is/ { gsub(",", ""); print $3 * $4 }'; done |
  awk '{ s += $1 } END { printf "%.1f", s / 1e6 }')
row() { echo "$1" | tee -a "$OUT/workers.jsonl"; }
checksums() { for f in "$1"/out/*.tif; do gdalinfo -checksum "$f" | awk -F= '/Checksum/ { print $2; exit }'; done | md5sum | cut -c1-12; }
for c in ${CASES:-exact naive}; do
  case $c in
    exact) opts="-k gaussian:5 --method dct5 --exact" ;;
    naive) opts="-k gaussian:2.5" ;;
  esac
  first=""
  for d in ${DEVICES:-all host}; do
    for b in ${BINS:-new=/tmp/mf/bin/mapfilter}; do
      # Untimed: a fresh machine compiles the OpenCL programs once.
      "${b#*=}" smooth "$(ls "$TILES"/*.tif | head -1)" /tmp/warm.tif $opts --device "$d" -q --overwrite 2>/dev/null
    done
    for g in ${GRID:-default}; do
      for b in ${BINS:-new=/tmp/mf/bin/mapfilter}; do
        name=${b%%=*} exe=${b#*=}
        w=/tmp/wk-$name
        rm -rf "$w"
        t0=$(now)
        # shellcheck disable=SC2086
        "$exe" batch plan "$TILES" --out "$w" $opts --device "$d" >/dev/null 2>>"$OUT/workers.err"
        if [ "$g" = default ]; then
          "$exe" batch run "$w" -q 2>>"$OUT/workers.err"
        else
          RAYON_NUM_THREADS=${g#*:} "$exe" batch run "$w" -q --jobs "${g%%:*}" 2>>"$OUT/workers.err"
        fi
        rc=$?
        s=$(python3 -c "print(round($(now) - $t0, 3))")
        sum=$(checksums "$w")
        [ -n "$first" ] || first=$sum
        row "{\"case\":\"$c\",\"device\":\"$d\",\"bin\":\"$name\",\"workers\":\"$g\",\"rc\":$rc,\"secs\":$s,\"mpx_s\":$(python3 -c "print(round($mpx / $s, 1))"),\"same\":$([ "$sum" = "$first" ] && echo true || echo false)}"
      done
    done
  done
done

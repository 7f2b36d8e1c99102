#!/usr/bin/env bash
# Two builds of mapfilter paired on the maps of benches/maps/build.sh (and
# any other .tif in DIR), with a `gdal_translate` copy in the same rounds:
# per round and map, the copy, then dct5 and `--exact` (σ = 5, the host) by
# each build in alternation. On a machine of more than two cores every
# command runs under `taskset -c 0,1` (the 2-core target of issue 38), and
# with ALL=1 also on every core. One JSON line per command.
#   bash benches/maps/pair.sh DIR ROUNDS OLD NEW
set -eu
dir=$1 rounds=$2 old=$3 new=$4
now() { date +%s.%N; }
pins=("2")
[ "${ALL:-}" = 1 ] && pins+=("all")
for m in "$dir"/*.tif; do
  name=$(basename "$m" .tif)
  for pin in "${pins[@]}"; do
    run=()
    [ "$pin" = 2 ] && [ "$(nproc)" -gt 2 ] && run=(taskset -c 0,1)
    for i in $(seq 1 "$rounds"); do
      t0=$(now)
      "${run[@]}" gdal_translate -q -co TILED=YES -co COMPRESS=DEFLATE -co ZLEVEL=5 -co NUM_THREADS=ALL_CPUS "$m" /tmp/pair-copy.tif
      echo "{\"map\":\"$name\",\"cores\":\"$pin\",\"round\":$i,\"what\":\"copy\",\"secs\":$(python3 -c "print(round($(now) - $t0, 4))")}"
      rm -f /tmp/pair-copy.tif
      for opts in "--method dct5" "--method dct5 --exact"; do
        for build in old new; do
          bin=$old
          [ "$build" = new ] && bin=$new
          t0=$(now)
          # shellcheck disable=SC2086
          "${run[@]}" "$bin" smooth "$m" /tmp/pair-out.tif -k gaussian:5 $opts --device host -q --overwrite
          echo "{\"map\":\"$name\",\"cores\":\"$pin\",\"round\":$i,\"what\":\"$opts\",\"build\":\"$build\",\"secs\":$(python3 -c "print(round($(now) - $t0, 4))"),\"sum\":\"$(gdalinfo -checksum /tmp/pair-out.tif | grep -o 'Checksum=[0-9]*')\"}"
        done
      done
    done
  done
done

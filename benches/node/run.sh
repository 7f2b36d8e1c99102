#!/usr/bin/env bash
# The node benchmark (issue 39) in one device call, JSON lines in
# $OUT/node.jsonl (BENCHMARKS.md, "The node's throughput" regenerates from
# them):
#   sets      simplex: 16 x 10240² of `gen --pattern simplex --classes 17`
#             (1,678 Mpx, realistic entropy); compressible: the bundled MODIS
#             crop at 14x nearest cut into 16 x 7200x3600 (415 Mpx, like the
#             issue's set A); `benches/node/dataset.sh` builds both;
#   floor     `gdal_translate` copies of every tile (DEFLATE, tiled), 16 and
#             32 at once, the best kept;
#   batches   `batch plan … --device D` + `batch run`, defaults only: exact
#             (dct5 --exact, sigma 5) and naive (sigma 2.5) on every GPU
#             (`all`: a worker process per GPU; `all1p`: the same in one
#             process, --processes 1), 2 GPUs, 1 GPU, the host alone
#             (`host`) and the host in 4 worker processes (`host4p`); every
#             run's pixel checksums must equal its case's first (`same`);
#             each run's lines per task (stage times) in $OUT/node-logs.tgz;
#   smooth    one whole `smooth` of the 415 Mpx raster (28800x14400), dct5,
#             dct5 --exact and the default method, on the first GPU and the
#             host, against its `gdal_translate` copy with NUM_THREADS=ALL_CPUS,
#             ROUNDS (3) alternating rounds (SKIP_SMOOTH=1 leaves it out; SETS=none
#             runs it alone; `gpu-wait`: the GPU's start waited for, not
#             bridged by the host, MAPFILTER_HOST_START=0);
#   start-up  `mapfilter -vv devices` (OpenCL listing) with every GPU, one,
#             and one per process for every GPU at once; the stages
#             (`--timings`) of a whole `smooth --device gpu --exact` of the
#             415 Mpx raster, its start waited for and bridged
#             ($OUT/startup-big.txt), and of the bundled crop.
# Carry `carry/` with the GDAL bundle of scripts/gpu-bundle.sh and the build
# as carry/mapfilter-new.xz (`strip --strip-debug`, xz); on the GPU machine
# (repo root):   OUT=$OUT bash benches/node/run.sh
# SETS, CASES and DEVICES narrow it ("simplex", "exact", "all host");
# BUILD=old runs carry/mapfilter-old.xz instead (two builds paired).
set -u
NAME=node
source benches/node/start.sh
# Start-up: the OpenCL listing alone (every GPU, the first, then one
# process per GPU at once, as a batch's workers start).
for vis in all 0; do
  t0=$(now)
  line=$(env $([ "$vis" = all ] || echo CUDA_VISIBLE_DEVICES=$vis) "$MF" -vv devices 2>&1 | grep -o 'listed in [0-9.]* ms')
  row "{\"what\":\"devices\",\"visible\":\"$vis\",\"secs\":$(since "$t0"),\"listing\":\"$line\"}"
done
t0=$(now)
for i in $(seq 0 $((G - 1))); do
  CUDA_VISIBLE_DEVICES=$i "$MF" -vv devices >"/tmp/devices-$i.txt" 2>&1 &
done
wait
lines=$(cat /tmp/devices-*.txt | grep -o 'listed in [0-9.]* ms' | tr '\n' ' ')
row "{\"what\":\"devices\",\"visible\":\"one each, $G at once\",\"secs\":$(since "$t0"),\"listing\":\"$lines\"}"
# Pixel checksums of a batch's outputs, in file order, as one short digest.
checksums() {
  ls "$1"/out/*.tif | xargs -P 16 -I{} sh -c 'echo "$(basename "$1") $(gdalinfo -checksum "$1" | awk -F= "/Checksum/ { print \$2; exit }")"' _ {} |
    sort | md5sum | cut -c1-12
}
opts_of() {
  case $1 in
    exact) echo "-k gaussian:5 --method dct5 --exact" ;;
    naive) echo "-k gaussian:2.5 --method naive" ;;
  esac
}
for set in ${SETS:-simplex compressible}; do
  [ "$set" = none ] && continue
  dir=/tmp/set-$set
  MAPFILTER=$MF bash benches/node/dataset.sh "$set" "$dir" >/dev/null
  mpx=$(for f in "$dir"/*.tif; do gdalinfo "$f" | awk '/^Size is/ { gsub(",", ""); print $3 * $4 }'; done |
    awk '{ s += $1 } END { printf "%.1f", s / 1e6 }')
  best=999999
  for p in 16 32; do
    rm -rf /tmp/copies && mkdir -p /tmp/copies
    t0=$(now)
    ls "$dir"/*.tif | xargs -P "$p" -I{} sh -c 'gdal_translate -q -co TILED=YES -co COMPRESS=DEFLATE "$1" /tmp/copies/$(basename "$1")' _ {}
    s=$(since "$t0")
    row "{\"set\":\"$set\",\"what\":\"floor\",\"mpx\":$mpx,\"at_once\":$p,\"secs\":$s}"
    best=$(python3 -c "print(min($best, $s))")
  done
  rm -rf /tmp/copies
  for c in ${CASES:-exact naive}; do
    first=""
    for d in ${DEVICES:-all all1p 2gpus gpu host host4p}; do
      dev=$d vis="" extra=""
      [ "$d" = 2gpus ] && dev=all vis=0,1
      [ "$d" = all1p ] && dev=all extra="--processes 1"
      [ "$d" = host4p ] && dev=host extra="--processes 4"
      [ "$d" = 2gpus ] && [ "$G" -lt 4 ] && continue
      # Untimed: a fresh machine compiles the OpenCL programs once.
      # shellcheck disable=SC2046
      env ${vis:+CUDA_VISIBLE_DEVICES=$vis} "$MF" smooth "$(ls "$dir"/*.tif | head -1)" /tmp/warm.tif $(opts_of "$c") --device "$dev" -q --overwrite 2>/dev/null
      w=/tmp/nb-$set-$c-$d
      rm -rf "$w"
      plan=""
      t0=$(now)
      # shellcheck disable=SC2046
      env ${vis:+CUDA_VISIBLE_DEVICES=$vis} "$MF" batch plan "$dir" --out "$w" $(opts_of "$c") --device "$dev" >/dev/null 2>>"$OUT/node.err" &&
        plan=$(since "$t0") &&
        env ${vis:+CUDA_VISIBLE_DEVICES=$vis} "$MF" -v batch run "$w" $extra 2>"$LOGS/$set-$c-$d.txt"
      rc=$?
      s=$(since "$t0")
      sum=$(checksums "$w")
      [ -n "$first" ] || first=$sum
      row "{\"set\":\"$set\",\"what\":\"batch\",\"case\":\"$c\",\"device\":\"$d\",\"rc\":$rc,\"secs\":$s,\"plan_secs\":${plan:-null},\"mpx_s\":$(python3 -c "print(round($mpx / $s, 1))"),\"of_floor\":$(python3 -c "print(round($best / $s, 3))"),\"same\":$([ "$sum" = "$first" ] && echo true || echo false),\"sum\":\"$sum\"}"
      rm -rf "$w"
    done
  done
done
# One whole smooth of the 415 Mpx raster against its copy (ALL_CPUS).
BIG=/tmp/landcover_28800x14400.tif
if [ -z "${SKIP_SMOOTH:-}" ]; then
  [ -f "$BIG" ] || MAPFILTER=$MF bash benches/node/dataset.sh compressible /tmp/set-compressible >/dev/null
  # Untimed first: the programs compile once on a fresh machine.
  "$MF" smooth "$BIG" /tmp/big-out.tif -k gaussian:5 --method dct5 --device gpu -q --overwrite 2>>"$OUT/node.err"
  "$MF" smooth "$BIG" /tmp/big-out.tif -k gaussian:5 --method dct5 --exact --device gpu -q --overwrite 2>>"$OUT/node.err"
  "$MF" smooth "$BIG" /tmp/big-out.tif -k gaussian:5 --device gpu -q --overwrite 2>>"$OUT/node.err"
  for i in $(seq 1 "${ROUNDS:-3}"); do
    t0=$(now)
    gdal_translate -q -co TILED=YES -co COMPRESS=DEFLATE -co NUM_THREADS=ALL_CPUS "$BIG" /tmp/copy.tif
    row "{\"what\":\"smooth-floor\",\"round\":$i,\"secs\":$(since "$t0")}"
    rm -f /tmp/copy.tif
    for c in dct5 exact default; do
      case $c in
        dct5) opts="-k gaussian:5 --method dct5" ;;
        exact) opts="-k gaussian:5 --method dct5 --exact" ;;
        default) opts="-k gaussian:5" ;;
      esac
      # gpu-wait: the first GPU, its start waited for rather than
      # bridged by the host (MAPFILTER_HOST_START=0; approximate methods
      # are never bridged).
      for d in gpu gpu-wait host; do
        [ "$c" = default ] && [ "$d" = host ] && continue
        [ "$c" = dct5 ] && [ "$d" = gpu-wait ] && continue
        wait_start=$([ "$d" = gpu-wait ] && echo 0 || echo "${MAPFILTER_HOST_START:-}")
        t0=$(now)
        # shellcheck disable=SC2086
        MAPFILTER_HOST_START=$wait_start "$MF" smooth "$BIG" /tmp/big-out.tif $opts --device "${d%-wait}" -q --overwrite 2>>"$OUT/node.err"
        row "{\"what\":\"smooth\",\"round\":$i,\"case\":\"$c\",\"device\":\"$d\",\"rc\":$?,\"secs\":$(since "$t0")}"
      done
    done
  done
  rm -f /tmp/big-out.tif
fi
# The stages of a whole smooth of the 415 Mpx raster and of the bundled
# crop on the first GPU (`method`: what is left of the device start after
# the input's scan), the programs compiled by the runs above.
if [ -f "$BIG" ] && [ -z "${SKIP_SMOOTH:-}" ]; then
  for opts in "--method dct5 --exact" ""; do
    for wait_start in 0 ""; do
      echo "${opts:-default}, MAPFILTER_HOST_START=$wait_start" >>"$OUT/startup-big.txt"
      # shellcheck disable=SC2086
      MAPFILTER_HOST_START=$wait_start "$MF" smooth "$BIG" /tmp/big-out.tif -k gaussian:5 $opts --device gpu --overwrite --timings 2>&1 | grep -E "^timing|host computed" >>"$OUT/startup-big.txt"
    done
  done
fi
rm -f /tmp/big-out.tif
"$MF" smooth data/modis_igbp_2019_2048.tif /tmp/small.tif -k gaussian:5 --method dct5 --device gpu --overwrite --timings 2>&1 | grep -E "^timing" >"$OUT/startup.txt"
ls /etc/OpenCL/vendors >>"$OUT/startup.txt"

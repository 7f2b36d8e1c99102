#!/usr/bin/env bash
# Where a batch's time goes on the node (issue 39), in one device call: the
# realistic set (simplex, 16 x 105 Mpx, or SET=compressible), its GDAL floor, one tile's stage
# timings alone, then default batches on every GPU and on the host under a
# system-wide `perf` (flat profile by thread name and symbol, reported on the
# machine), with `vmstat` and `nvidia-smi dmon` beside, then the same with
# more tasks in flight. Carry `carry/` with the GDAL bundle, `perf.tar.xz`
# (Debian's linux-perf and its libraries) and `mapfilter-new.xz` (the build
# to profile, symbols kept: `strip --strip-debug`); on the GPU machine:
#   OUT=$OUT bash benches/node/profile.sh
set -u
source scripts/gpu-env.sh
OUT=${OUT:-out/profile}; mkdir -p "$OUT"
tar -C /tmp -xJf carry/perf.tar.xz
PERF="env LD_LIBRARY_PATH=/tmp/perf/lib:$LD_LIBRARY_PATH /tmp/perf/perf"
MF=/tmp/mf/bin/mapfilter-new
xz -dc carry/mapfilter-new.xz >"$MF" && chmod +x "$MF"
nproc; nvidia-smi -L; free -g | head -2
now() { date +%s.%N; }
t0=$(now)
# SET=compressible profiles the compressible set instead.
MAPFILTER=$MF bash benches/node/dataset.sh "${SET:-simplex}" /tmp/tS "${SIDE:-10240}"
echo "dataset $(python3 -c "print(round($(now) - $t0, 1))") s"
rm -rf /tmp/copies && mkdir -p /tmp/copies
t0=$(now)
ls /tmp/tS/*.tif | xargs -P 16 -I{} sh -c 'gdal_translate -q -co TILED=YES -co COMPRESS=DEFLATE "$1" /tmp/copies/$(basename "$1")' _ {}
echo "floor, 16 copies at once: $(python3 -c "print(round($(now) - $t0, 2))") s"
rm -rf /tmp/copies
report() {
  local name=$1
  $PERF report -i /tmp/perf-$name.data --no-children --sort comm --stdio 2>/dev/null | grep -v '^#' | grep . | head -40 >"$OUT/comm-$name.txt"
  $PERF report -i /tmp/perf-$name.data --no-children -g none --sort comm,dso,sym --stdio 2>/dev/null | grep -v '^#' | grep . | head -150 >"$OUT/sym-$name.txt"
  $PERF report -i /tmp/perf-$name.data --no-children -g graph,0.5,callee --sort sym --stdio 2>/dev/null | grep -v '^#' | grep . | head -600 >"$OUT/calls-$name.txt"
  rm -f /tmp/perf-$name.data
}
profiled() { # name, then the batch run's arguments
  local name=$1; shift
  vmstat 1 >"$OUT/vmstat-$name.txt" &
  local vm=$!
  nvidia-smi dmon -s u -d 1 >"$OUT/dmon-$name.txt" 2>&1 &
  local dm=$!
  /usr/bin/time -f "$name: %e s wall %U user %S sys" \
    $PERF record -F 199 -a -o /tmp/perf-$name.data -- "$MF" batch run "$@" >"$OUT/tasks-$name.txt" 2>&1
  tail -3 "$OUT/tasks-$name.txt"
  kill $vm $dm
  report "$name"
}
tile=$(ls /tmp/tS/*.tif | head -1)
exact="-k gaussian:5 --method dct5 --exact"
naive="-k gaussian:2.5 --method naive"
echo "== start-up"
/usr/bin/time -f "devices: %e s" "$MF" devices >/dev/null
CUDA_VISIBLE_DEVICES=0 /usr/bin/time -f "devices, one GPU visible: %e s" "$MF" devices >/dev/null
for d in ${ONE:-gpu host}; do
  echo "== one tile, exact, $d"
  CUDA_VISIBLE_DEVICES=0 /usr/bin/time -f "%e s wall %U user %S sys" \
    $PERF record -F 499 ${GRAPH---call-graph dwarf,16384} -o /tmp/perf-one-$d.data -- "$MF" smooth "$tile" /tmp/one.tif $exact --device $d --overwrite --timings -v 2>&1 | tail -14
  report one-$d
done
echo "== one tile copy"
/usr/bin/time -f "%e s wall %U user %S sys" gdal_translate -q -co TILED=YES -co COMPRESS=DEFLATE "$tile" /tmp/copy.tif
# CASES: method:device pairs, each a default batch under perf.
for case in ${CASES:-exact:all exact:host}; do
  m=${case%%:*} d=${case#*:}
  rm -rf /tmp/b-$m-$d
  "$MF" batch plan /tmp/tS --out /tmp/b-$m-$d ${!m} --device $d >/dev/null
  echo "== batch $m $d, defaults, perf"
  profiled "$m-$d" /tmp/b-$m-$d -v
  find /tmp/b-$m-$d -name '*.json*' -size -2M | head -40 | tar -cf "$OUT/records-$m-$d.tar" -T - 2>/dev/null
  rm -rf /tmp/b-$m-$d
done
tar -C "$OUT" -czf "$OUT/profile.tgz" $(cd "$OUT" && ls | grep -v profile.tgz) && (cd "$OUT" && ls | grep -v profile.tgz | xargs rm -f)

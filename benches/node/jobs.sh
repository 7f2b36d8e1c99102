#!/usr/bin/env bash
# Tasks in flight and worker processes against a batch's time on the node
# (issue 39): the default plan and others (RUNS: `default`, `jN` for
# --jobs N, `pN` for --processes N), per set, case and device, one call;
# JSON lines in $OUT/jobs.jsonl (with CPU seconds, user and sys, of the
# floor's copies and of each `batch run`), each run's lines per task in
# $OUT/jobs-logs.tgz.
# Carry `carry/` (GDAL bundle, carry/mapfilter-new.xz); on the GPU machine:
#   OUT=$OUT SETS="compressible simplex" DEVICES="gpu all" RUNS="default j16 p4" bash benches/node/jobs.sh
set -u
NAME=jobs
source benches/node/start.sh
for set in ${SETS:-compressible simplex}; do
  dir=/tmp/set-$set
  MAPFILTER=$MF bash benches/node/dataset.sh "$set" "$dir" >/dev/null
  rm -rf /tmp/copies && mkdir -p /tmp/copies
  t0=$(now)
  ls "$dir"/*.tif | /usr/bin/time -o /tmp/jobs-cpu.txt -f "%U %S" xargs -P 32 -I{} sh -c 'gdal_translate -q -co TILED=YES -co COMPRESS=DEFLATE "$1" /tmp/copies/$(basename "$1")' _ {}
  s=$(since "$t0")
  read -r user sys < <(tail -1 /tmp/jobs-cpu.txt)
  row "{\"set\":\"$set\",\"what\":\"floor\",\"at_once\":32,\"secs\":$s,\"user\":$user,\"sys\":$sys}"
  rm -rf /tmp/copies
  for c in ${CASES:-exact}; do
    case $c in
      exact) opts="-k gaussian:5 --method dct5 --exact" ;;
      naive) opts="-k gaussian:2.5 --method naive" ;;
    esac
    for d in ${DEVICES:-gpu all}; do
      # shellcheck disable=SC2086
      "$MF" smooth "$(ls "$dir"/*.tif | head -1)" /tmp/warm.tif $opts --device "$d" -q --overwrite 2>/dev/null
      for j in ${RUNS:-default j16 p4}; do
        w=/tmp/jb-$set-$c-$d-$j
        rm -rf "$w"
        t0=$(now)
        # shellcheck disable=SC2086
        "$MF" batch plan "$dir" --out "$w" $opts --device "$d" >/dev/null &&
          /usr/bin/time -o /tmp/jobs-cpu.txt -f "%U %S" "$MF" -v batch run "$w" $(case $j in j*) echo --jobs "${j#j}" ;; p*) echo --processes "${j#p}" ;; esac) 2>"$LOGS/$set-$c-$d-$j.txt"
        rc=$?
        s=$(since "$t0")
        read -r user sys < <(tail -1 /tmp/jobs-cpu.txt)
        row "{\"set\":\"$set\",\"case\":\"$c\",\"device\":\"$d\",\"run\":\"$j\",\"rc\":$rc,\"secs\":$s,\"run_user\":${user:-null},\"run_sys\":${sys:-null}}"
        rm -rf "$w"
      done
    done
  done
done

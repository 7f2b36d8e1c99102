#!/usr/bin/env bash
# Paired PoCL runs of the engine in memory: the binary before this branch and after.
cd "$(dirname "$0")/.."
IN=data/modis_igbp_2019_2048.tif
# /tmp/mapfilter-base: a release build of the commit before the branch; /tmp/mapfilter-new: of the branch.
for round in 1 2; do
  for bin in base new; do
    for dev in 0 0,0; do
      [ "$bin" = base ] && [ "$dev" = 0,0 ] && continue
      /tmp/mapfilter-$bin bench --input "$IN" --kernel gaussian:5 --method dct5 --device $dev --tile 512 --repeat 2 --warmup 1 2>/dev/null |
        sed "s/^{/{\"bin\":\"$bin\",\"round\":$round,/"
    done
  done
done

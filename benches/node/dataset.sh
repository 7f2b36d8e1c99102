#!/usr/bin/env bash
# Builds the node benchmark's tiles (issue 39) from the bundled MODIS crop:
#   compressible  16 tiles of 10240² cut 4x4 from the crop, each 20x nearest
#                 (few long runs, like set A), plus the crop at 14x as one
#                 28800x14400 raster;
#   simplex       16 tiles of `mapfilter gen --pattern simplex --classes 17`
#                 at SIDE² (default 10240: 105 Mpx each; realistic entropy).
#   bash benches/node/dataset.sh compressible|simplex DIR [SIDE]
set -eu
kind=$1 dir=$2 side=${3:-10240}
mkdir -p "$dir"
# A second run in one call (another build, another case) reuses the tiles.
[ "$(ls "$dir"/*.tif 2>/dev/null | wc -l)" -ge 16 ] && exit 0
case $kind in
  compressible)
    # 16 tiles of 10240² (105 Mpx each, 1,678 Mpx): the bundled MODIS crop
    # cut 4x4 and each 512² window upsampled 20x (nearest), few long runs,
    # like the issue's set A; windows of one grid, so they mosaic. Also the
    # crop at 14x as one 28800x14400 raster (415 Mpx) for the whole smooth.
    big=/tmp/landcover_28800x14400.tif
    [ -f "$big" ] || gdal_translate -q -r nearest -outsize 28800 14400 -co TILED=YES \
      -co COMPRESS=DEFLATE -co NUM_THREADS=ALL_CPUS data/modis_igbp_2019_2048.tif "$big"
    for r in 0 1 2 3; do for c in 0 1 2 3; do
      echo "$r $c"
    done; done | xargs -P 16 -n 2 sh -c 'gdal_translate -q -r nearest -outsize 10240 10240 \
      -co TILED=YES -co COMPRESS=DEFLATE -srcwin $(($1 * 512)) $(($0 * 512)) 512 512 \
      data/modis_igbp_2019_2048.tif '"$dir"'/t_$0_$1.tif'
    ;;
  simplex)
    # Each tile generated alone (seed = its number), then placed on a 4x4
    # lattice of one grid (gen's UTM 33N, 30 m) and written as the others.
    export side dir
    seq 0 15 | xargs -P 16 -I{} sh -c '
      r=$(($1 / 4)) c=$(($1 % 4))
      "${MAPFILTER:-mapfilter}" gen /tmp/gen_$1.tif --raster-size "${side}x${side}" \
        --classes 17 --pattern simplex --seed $(($1 + 1)) -q
      ulx=$((500000 + c * side * 30)) uly=$((5000000 - r * side * 30))
      gdal_translate -q -co TILED=YES -co COMPRESS=DEFLATE -a_ullr $ulx $uly \
        $((ulx + side * 30)) $((uly - side * 30)) /tmp/gen_$1.tif "$dir/s_${r}_${c}.tif"
      rm -f /tmp/gen_$1.tif' _ {}
    ;;
esac

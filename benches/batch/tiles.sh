# Shared by the batch benches: cuts a map into a 4 x 4 grid of tiles.
#
#   source benches/batch/tiles.sh
#   cut_4x4 MAP DIR SIZE PREFIX [gdal_translate option...]
# writes DIR/PREFIX_rRcC.tif, the SIZE² window at row R, column C.

cut_4x4() {
  local map=$1 dir=$2 size=$3 prefix=$4 row col
  shift 4
  mkdir -p "$dir"
  for row in 0 1 2 3; do
    for col in 0 1 2 3; do
      gdal_translate -q "$@" -srcwin $((col * size)) $((row * size)) "$size" "$size" \
        "$map" "$dir/${prefix}_r${row}c${col}.tif"
    done
  done
}

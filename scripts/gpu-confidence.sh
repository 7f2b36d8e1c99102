#!/usr/bin/env bash
# The cost of --confidence for dct5 on the GPU (issue 22), on the 415 Mpx
# land-cover stand-in of scripts/gpu-throughput.sh (the bundled MODIS map
# resampled to 28800 x 14400):
#   1. a 0-100 Byte confidence raster on its grid, made with gdal_translate
#      alone (the bundled DEM stretched to 0-100 and resampled to the map's
#      size: smooth, not constant, no Python needed);
#   2. whole smooth commands, dct5 gaussian:5, on the GPU with and without
#      --confidence (best of three wall times each), plain and --exact;
#   3. --exact with --confidence on the GPU and on the host: the GDAL
#      checksums must match (certified output == weighted naive on both).
# Builds nothing: takes a release binary (default: the one of the GDAL
# bundle, carry/gdal-bundle.tar.xz from scripts/gpu-bundle.sh).
# Prints a markdown table at the end (also $OUT/table.md).
# Usage (repo root, on the GPU machine): OUT=dir bash scripts/gpu-confidence.sh [MAPFILTER]
set -u
# The binary resolved from the caller's directory, before moving to the repo root.
B=${1:+$(realpath "$1")}
cd "$(dirname "$0")/.."
if [ -z "$B" ]; then
  source scripts/gpu-env.sh
  B=/tmp/mf/bin/mapfilter
fi
OUT=${OUT:-out/gpu-confidence}
mkdir -p "$OUT"
"$B" devices | tee "$OUT/devices.txt"
BIG=/tmp/landcover_28800x14400.tif
if [ ! -f "$BIG" ]; then
  gdal_translate -q -r nearest -outsize 28800 14400 -co TILED=YES -co COMPRESS=DEFLATE \
    -co NUM_THREADS=ALL_CPUS data/modis_igbp_2019_2048.tif "$BIG"
fi
CONF=/tmp/confidence_28800x14400.tif
if [ ! -f "$CONF" ]; then
  # Heights 236..1076 m -> 0..100; the DEM's nodata dropped (clipped to 0).
  gdal_translate -q -ot Byte -scale 236 1076 0 100 -a_nodata none -r bilinear \
    -outsize 28800 14400 -co TILED=YES -co COMPRESS=DEFLATE -co NUM_THREADS=ALL_CPUS \
    data/dem_jacksboro.tif "$CONF"
fi

best() { # the best wall time of three runs of smooth with these options
  local t0 t1 t best=
  for _ in 1 2 3; do
    t0=$EPOCHREALTIME
    "$B" smooth "$BIG" /tmp/c_out.tif -q --overwrite -k gaussian:5 "$@" 2>>"$OUT/smooth.err" || {
      echo "failed: smooth $*" >&2
      echo "failed"
      return
    }
    t1=$EPOCHREALTIME
    t=$(awk "BEGIN { print $t1 - $t0 }")
    if [[ -z $best ]] || awk "BEGIN { exit !($t < $best) }"; then best=$t; fi
  done
  printf '%.2f' "$best"
}

conf=(--confidence "$CONF" --confidence-scale 100)
{
  echo "| method | device | without | with --confidence | ratio |"
  echo "| --- | --- | --- | --- | --- |"
  for exact in "" --exact; do
    a=$(best --method dct5 $exact --device gpu)
    b=$(best --method dct5 $exact --device gpu "${conf[@]}")
    r=$(awk "BEGIN { if ($a > 0) printf \"%.2f\", $b / $a }" 2>/dev/null)
    echo "| dct5 ${exact} | gpu | $a s | $b s | $r |"
  done
} | tee "$OUT/table.md"

echo "== --exact --confidence: GPU against host (checksums must match)"
"$B" smooth "$BIG" /tmp/c_exact_gpu.tif -q --overwrite -k gaussian:5 --method dct5 --exact \
  --device gpu "${conf[@]}"
"$B" smooth "$BIG" /tmp/c_exact_host.tif -q --overwrite -k gaussian:5 --method dct5 --exact \
  --device host "${conf[@]}"
for f in gpu host; do
  echo "$f $(gdalinfo -checksum /tmp/c_exact_$f.tif | grep Checksum)"
done | tee "$OUT/identity.txt"
if ! grep -qv Checksum= "$OUT/identity.txt" &&
  [ "$(cut -d' ' -f2- "$OUT/identity.txt" | sort -u | wc -l)" = 1 ]; then
  echo "identity: GPU == host" | tee -a "$OUT/table.md"
else
  echo "identity: GPU and host DIFFER" | tee -a "$OUT/table.md"
fi

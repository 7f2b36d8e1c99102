source scripts/gpu-env.sh
gdal_translate -q -outsize 4096 4096 -r near data/modis_igbp_2019_2048.tif /tmp/m4096.tif
mapfilter gen /tmp/simplex.tif --raster-size 2048x2048 --pattern simplex --classes 17 2>&1 | tail -1
t() { local s=$(date +%s%N); BANDDIV=$1 mapfilter smooth $2 /tmp/o-$1.tif --overwrite -q --device host -k gaussian:$3 --method dct5 --exact; echo "div$1 $(basename $2) σ=$3 $(( ($(date +%s%N)-s)/1000000 ))"; }
for r in 1 2 3 4 5; do
  for c in "/tmp/m4096.tif 150" "data/modis_igbp_2019_2048.tif 35" "data/modis_igbp_2019_2048.tif 85" "/tmp/simplex.tif 35" "/tmp/simplex.tif 85"; do
    set -- $c
    t 1 $1 $2; t 2 $1 $2; t 4 $1 $2
    [ "$(gdalinfo -checksum /tmp/o-1.tif | grep Checksum)" = "$(gdalinfo -checksum /tmp/o-4.tif | grep Checksum)" ] || echo "DIFF $c"
  done
done 2>&1 | awk '{k=$1" "$2" "$3; v[k]=v[k]" "$4} /DIFF/ {print} END{for(k in v) print k, v[k]}' | sort -k2,3

set -u
source scripts/gpu-env.sh
MF=/tmp/mf/bin/mapfilter-new
xz -dc carry/mapfilter-new.xz >"$MF" && chmod +x "$MF"
gdal_translate -q -r nearest -outsize 28800 14400 -co TILED=YES -co COMPRESS=DEFLATE -co NUM_THREADS=ALL_CPUS data/modis_igbp_2019_2048.tif /tmp/big.tif
tar -C /tmp -xJf carry/perf.tar.xz
PERF="env LD_LIBRARY_PATH=/tmp/perf/lib:$LD_LIBRARY_PATH /tmp/perf/perf"
for d in gpu host; do
  echo "== $d"
  /usr/bin/time -f "%e s wall %U user %S sys" "$MF" smooth /tmp/big.tif /tmp/o.tif -k gaussian:5 --method dct5 --device $d --overwrite --timings -v 2>&1 | grep -v "^\s*$" | tail -16
done
echo "== perf gpu"
$PERF record -F 999 -o /tmp/p.data -- "$MF" smooth /tmp/big.tif /tmp/o.tif -k gaussian:5 --method dct5 --device gpu --overwrite -q 2>&1 | tail -1
$PERF report -i /tmp/p.data --no-children --sort comm,dso,sym --stdio 2>/dev/null | grep -v '^#' | grep '%' | head -25
$PERF report -i /tmp/p.data --no-children --sort comm --stdio 2>/dev/null | grep -v '^#' | grep '%' | head -8
for t in 8 16 32; do RAYON_NUM_THREADS=$t /usr/bin/time -f "gpu $t threads: %e s wall %U user %S sys" "$MF" smooth /tmp/big.tif /tmp/o.tif -k gaussian:5 --method dct5 --device gpu --overwrite -q; done

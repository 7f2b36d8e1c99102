#!/usr/bin/env bash
# Builds the maps of the 2-core whole-command benchmark (issue 38) into DIR:
#   modis.tif    the bundled MODIS crop (2048², 17 classes), copied;
#   globe.tif    a whole-globe class map of 7200x3600 (26 Mpx, 0.05°, EPSG:4326):
#                Natural Earth's continents (data/ne_continents_1440x720.tif,
#                5x nearest) give land and sea; land takes the MODIS crop's
#                classes tiled over the globe (its water stays water), the
#                sea is class 0 (water, as MCD12C1 codes it) and the polar
#                rows beyond ±84° are nodata 255 (as a swath-limited product);
#   simplex.tif  `mapfilter gen --pattern simplex --classes 17` at 5120²;
#   patches.tif  10 classes of small patches: `gen --pattern simplex
#                --classes 10 --scale 6` at 5120² (features of ~6 px).
# Every map is a tiled DEFLATE GeoTIFF as users' maps are. A globe.tif
# already in DIR is kept (machines without numpy/GDAL's Python get a copy).
#   bash benches/maps/build.sh DIR [MAPFILTER]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$1 bin=${2:-target/release/mapfilter}
mkdir -p "$dir"
co=(-co TILED=YES -co COMPRESS=DEFLATE)
cp data/modis_igbp_2019_2048.tif "$dir/modis.tif"
cp data/modis_igbp_2019_2048.tif.aux.xml "$dir/modis.tif.aux.xml"
# Debian's python3 has numpy and GDAL's bindings (scripts/setup.sh).
[ -f "$dir/globe.tif" ] || /usr/bin/python3 - "$dir/globe.tif" <<'PY'
import sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
land = gdal.Open("data/ne_continents_1440x720.tif").ReadAsArray()
modis_ds = gdal.Open("data/modis_igbp_2019_2048.tif")
modis = modis_ds.ReadAsArray()
w, h = 7200, 3600
land5 = np.repeat(np.repeat(land != 255, 5, axis=0), 5, axis=1)
ys, xs = np.mgrid[0:h, 0:w]
classes = modis[ys % modis.shape[0], xs % modis.shape[1]]
out = np.where(land5, classes, 0).astype(np.uint8)
polar = int(round(6 / 0.05))  # 84°..90°
out[:polar, :] = 255
out[h - polar:, :] = 255
drv = gdal.GetDriverByName("GTiff")
ds = drv.Create(sys.argv[1], w, h, 1, gdal.GDT_Byte, ["TILED=YES", "COMPRESS=DEFLATE"])
ds.SetGeoTransform((-180, 0.05, 0, 90, 0, -0.05))
ds.SetProjection(modis_ds.GetProjection())
band = ds.GetRasterBand(1)
band.SetNoDataValue(255)
band.SetColorTable(modis_ds.GetRasterBand(1).GetColorTable())
band.WriteArray(out)
ds = None
PY
"$bin" gen "$dir/simplex.tif" --raster-size 5120x5120 --classes 17 --pattern simplex --seed 1 -q
"$bin" gen "$dir/patches.tif" --raster-size 5120x5120 --classes 10 --pattern simplex --scale 6 --seed 2 -q
for m in modis globe simplex patches; do
  printf '%s ' "$m"; gdalinfo "$dir/$m.tif" | grep '^Size is'
done

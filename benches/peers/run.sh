#!/usr/bin/env bash
# Times mapfilter's exact host method against GRASS, OTB and SAGA on the same
# input in one run, and measures how far their outputs agree (agree.py).
#
#   bash benches/peers/run.sh [--quick] [--repeat K] [INPUT]
#
# INPUT defaults to data/modis_igbp_2019_2048.tif (the benchmark raster: MODIS
# MCD12C1 2019 IGBP land cover, 2048x2048, 17 classes; see data/SOURCES.md).
# Cases (mapfilter's kernel first, then the peer command's equivalent):
#   gaussian:2.5 (N=15)   GRASS r.neighbors method=mode weighting_function=gaussian
#                         weighting_factor=2.5 size=15 nprocs=2
#   gaussian:5   (N=31)   GRASS ... weighting_factor=5 size=31 (skipped by --quick)
#   box:15                SAGA grid_filter 6 (Majority, square kernel, radius 7)
#   ITK ball radius 7     OTB ClassificationMapRegularization -ip.radius 7
#     (file kernel: x²+y² <= 7.5²)
# OTB and SAGA have no weighted (Gaussian) majority filter, hence their own cases.
# mapfilter runs K times (default 3; the median is the figure), each peer once.
# Times are wall-clock seconds of the whole command (GeoTIFF in, raster out),
# except GRASS, timed on r.neighbors alone; its import and export are timed
# separately. Outputs and results.tsv go to target/peers/.
# Peers: apt-get install -y grass-core otb-bin saga (Debian 12); agree.py needs
# python3-gdal and python3-numpy (system /usr/bin/python3). Not run by CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

quick=0
repeat=3
input=data/modis_igbp_2019_2048.tif
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --repeat) repeat=$2; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) input=$1 ;;
  esac
  shift
done
input=$(realpath "$input")
out=$root/target/peers
rm -rf "$out"
mkdir -p "$out"
results=$out/results.tsv
printf 'case\ttool\tcommand\twall_s\tuser_s\tsys_s\n' >"$results"

cargo build --release --locked --quiet
mapfilter=$root/target/release/mapfilter
agree=(/usr/bin/python3 "$root/benches/peers/agree.py")

# Runs a command, appends "case tool command wall user sys" to results.tsv.
timed() { # CASE TOOL CMD...
  local case=$1 tool=$2
  shift 2
  local tfile=$out/.time
  # bash's time keyword: real, user, sys of the command and its children.
  { TIMEFORMAT='%R %U %S'; time "$@" >>"$out/log.txt" 2>&1; } 2>"$tfile"
  read -r wall user sys <"$tfile"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$tool" "$*" "$wall" "$user" "$sys" >>"$results"
  echo "  $tool: ${wall} s wall, ${user} s user, ${sys} s sys" >&2
}

mapfilter_case() { # CASE KERNEL OUT
  for ((i = 1; i <= repeat; i++)); do
    timed "$1" mapfilter "$mapfilter" smooth "$input" "$3" --kernel "$2" --quiet
    if [ $i -lt $repeat ]; then rm -f "$3"; fi
  done
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" | tee "$out/machine.txt" >&2
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt" >&2
grass --version 2>/dev/null | head -1 | tee -a "$out/machine.txt" >&2 || true
"$mapfilter" info "$input" >"$out/input_info.txt"
head -8 "$out/input_info.txt" >&2

# GRASS: a throwaway location made from the input's georeferencing.
gdb=$out/grassdb
grass -c "$input" -e "$gdb/loc" >>"$out/log.txt" 2>&1
g() { grass "$gdb/loc/PERMANENT" --exec "$@"; }
timed import grass-import g r.in.gdal input="$input" output=lc --quiet
g g.region raster=lc >>"$out/log.txt" 2>&1

gauss_case() { # SIGMA SIZE
  local name=gauss$1
  echo "case gaussian sigma=$1 N=$2" >&2
  mapfilter_case "$name" "gaussian:$1" "$out/${name}_mapfilter.tif"
  timed "$name" grass g r.neighbors input=lc output="$name" method=mode \
    weighting_function=gaussian weighting_factor="$1" size="$2" nprocs=2 --overwrite --quiet
  timed "$name" grass-export g r.out.gdal input="$name" output="$out/${name}_grass.tif" \
    type=Byte nodata=255 createopt=COMPRESS=DEFLATE,TILED=YES --overwrite --quiet -f
  "${agree[@]}" "$out/${name}_mapfilter.tif" "$out/${name}_grass.tif" \
    --input "$input" --kernel "gaussian:$1:$2" --json "$out/${name}_agree_grass.json" >/dev/null
}
gauss_case 2.5 15
[ $quick -eq 1 ] || gauss_case 5 31

if command -v saga_cmd >/dev/null; then
  echo "case box:15 vs SAGA majority, square radius 7" >&2
  mapfilter_case box15 box:15 "$out/box15_mapfilter.tif"
  timed box15 saga saga_cmd grid_filter 6 -INPUT "$input" -RESULT "$out/box15_saga.sdat" \
    -TYPE 0 -THRESHOLD 0 -KERNEL_TYPE 0 -KERNEL_RADIUS 7
  "${agree[@]}" "$out/box15_mapfilter.tif" "$out/box15_saga.sdat" \
    --input "$input" --kernel box:15 --json "$out/box15_agree_saga.json" >/dev/null
fi

if command -v otbcli_ClassificationMapRegularization >/dev/null; then
  echo "case ITK ball radius 7 vs OTB ClassificationMapRegularization" >&2
  # ITK's BinaryBallStructuringElement of radius r holds x²+y² <= (r+½)².
  /usr/bin/python3 -c 'import numpy as np; r=7; y,x=np.mgrid[-r:r+1,-r:r+1]; np.savetxt("'"$out"'/ball7.txt",(x*x+y*y<=(r+.5)**2).astype(int),fmt="%d")'
  mapfilter_case ball7 "file:$out/ball7.txt" "$out/ball7_mapfilter.tif"
  # nodatalabel 255 (the input's nodata; the default 0 would drop class 0, water).
  # Ties: -ip.suvbool false keeps the centre pixel's label.
  timed ball7 otb otbcli_ClassificationMapRegularization -io.in "$input" \
    -io.out "$out/ball7_otb.tif?&gdal:co:COMPRESS=DEFLATE&gdal:co:TILED=YES" uint8 \
    -ip.radius 7 -ip.nodatalabel 255 -ip.undecidedlabel 254 -ip.suvbool false -ram 1024
  "${agree[@]}" "$out/ball7_mapfilter.tif" "$out/ball7_otb.tif" \
    --input "$input" --kernel ball:7 --json "$out/ball7_agree_otb.json" >/dev/null
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt" >&2

# Summary: median mapfilter time per case against each peer's time.
/usr/bin/python3 - "$results" "$out" <<'PY'
import csv, glob, json, os, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
out = sys.argv[2]
cases = []
for r in rows:
    if r["case"] not in cases:
        cases.append(r["case"])
print("| case | tool | wall s | user+sys s | mapfilter median wall s | speed-up (wall) | agreement |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for c in cases:
    mine = [float(r["wall_s"]) for r in rows if r["case"] == c and r["tool"] == "mapfilter"]
    med = statistics.median(mine) if mine else None
    for r in rows:
        if r["case"] != c:
            continue
        cpu = float(r["user_s"]) + float(r["sys_s"])
        if r["tool"] == "mapfilter":
            print(f"| {c} | mapfilter | {r['wall_s']} | {cpu:.2f} | | | |")
            continue
        agree = ""
        files = glob.glob(os.path.join(out, f"{c}_agree_{r['tool']}.json"))
        if files:
            a = json.load(open(files[0]))
            agree = f"{a['agreement_percent']:.4f} % ({a['pixels_differing']} px differ)"
        speed = f"{float(r['wall_s']) / med:.1f}x" if med and r["tool"] in ("grass", "saga", "otb") else ""
        print(f"| {c} | {r['tool']} | {r['wall_s']} | {cpu:.2f} | {med if med else ''} | {speed} | {agree} |")
PY

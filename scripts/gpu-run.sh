#!/usr/bin/env bash
# Everything measured on the GPU machine after the naive run
# (scripts/gpu-bench.sh): the fast methods (scripts/gpu-fast-bench.sh), the
# image filters at the papers' sizes and at 4096² against OpenCV's OpenCL path
# (cv2.UMat) when python3 has cv2, and the smoke sweep.
# Usage (repo root, GDAL-free binary in carry/): OUT=dir bash scripts/gpu-run.sh
set -u
cd "$(dirname "$0")/.."
B=${BIN:-carry/mapfilter}
OUT=${OUT:-out/gpu-run}
mkdir -p "$OUT"
echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd 2>/dev/null || true
"$B" devices | tee "$OUT/devices.txt"

echo "== fast methods"
timeout 300 bash scripts/gpu-fast-bench.sh "$B" "$OUT/fast" >"$OUT/fast.log" 2>&1
echo "fast rc=$?"

echo "== image filters at the papers' sizes"
for op in box:3 median:3 median:5 oil:4:20; do
  timeout 60 "$B" bench-filter --op "$op" --size 1920x1080 --bands 3 --device gpu --repeat 20 >>"$OUT/filters_papers.jsonl" 2>>"$OUT/filters.err"
done
timeout 60 "$B" bench-filter --op bilateral:2:30:color --size 1280x720 --bands 3 --device gpu --repeat 20 >>"$OUT/filters_papers.jsonl" 2>>"$OUT/filters.err"
timeout 60 "$B" bench-filter --op histogram --size 1280x720 --bands 3 --device gpu --repeat 20 >>"$OUT/filters_papers.jsonl" 2>>"$OUT/filters.err"

echo "== image filters at 4096² vs OpenCV"
if python3 -c "import cv2, numpy" 2>/dev/null; then
  python3 -c "import cv2; print(cv2.__version__, cv2.ocl.haveOpenCL(), cv2.ocl.Device_getDefault().name())" >"$OUT/cv2.txt" 2>&1
  timeout 150 python3 scripts/bench_filters.py --bin "$B" --device gpu --umat --repeat 5 --json "$OUT/filters_umat.json" >"$OUT/filters_umat.md" 2>>"$OUT/filters.err"
  timeout 120 python3 scripts/bench_filters.py --bin "$B" --device host --repeat 3 --json "$OUT/filters_cpu16.json" >"$OUT/filters_cpu16.md" 2>>"$OUT/filters.err"
else
  echo "python3 has no cv2 here" | tee "$OUT/cv2.txt"
fi

echo "== smoke sweep"
timeout 60 "$B" sweep benches/sweeps/smoke.toml --out "$OUT/sweep-smoke" >"$OUT/sweep.log" 2>&1
echo "sweep rc=$?"

# Sourced by benches/filters/gpu.sh and benches/imgops/gpu.sh (repo root;
# B, OUT and PY set): registers NVIDIA's OpenCL driver beside PoCL where
# the machine has one, records the machine under $OUT (devices, driver,
# OpenCV, cores), and defines `run`.
mkdir -p "$OUT"
if command -v nvidia-smi >/dev/null; then
  mkdir -p /etc/OpenCL/vendors 2>/dev/null
  echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd 2>/dev/null || true
fi
"$B" devices | tee "$OUT/devices.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/nvidia-smi.txt" 2>&1
"$PY" -c "import cv2; print(cv2.__version__, cv2.ocl.haveOpenCL(), cv2.ocl.Device_getDefault().name(), cv2.getNumThreads())" >"$OUT/cv2.txt" 2>&1
nproc >"$OUT/nproc.txt"

# run SECONDS FILE ARGS...: one bench-filter call with a time limit, JSON lines to FILE.
run() {
  local limit=$1 file=$2
  shift 2
  echo "$B bench-filter $*" >>"$OUT/log.txt"
  timeout "$limit" "$B" bench-filter "$@" >>"$OUT/$file" 2>>"$OUT/log.txt" || echo "FAILED (rc $?): $*" | tee -a "$OUT/log.txt"
}

# summarise NAME...: the median total, kernel, upload and download ms per op
# and size over the runs in each $OUT/NAME.jsonl (frames/s for a denoise),
# also to $OUT/summary.txt.
summarise() {
  echo "== summary (median ms over runs)"
  python3 - "$OUT" "$@" <<'PY' | tee "$OUT/summary.txt"
import collections, json, statistics, sys
for name in sys.argv[2:]:
    runs = collections.defaultdict(list)
    try:
        lines = open(f"{sys.argv[1]}/{name}.jsonl").read().splitlines()
    except OSError:
        continue
    for line in lines:
        r = json.loads(line)
        if "total_ms" in r:
            runs[(r["op"], r["width"], r["height"])].append(r)
    for (op, w, h), rs in runs.items():
        med = lambda k: statistics.median(r[k] for r in rs) if rs[0][k] is not None else float("nan")
        fps = f" = {1e3 / med('total_ms'):.1f} frames/s" if op.startswith("denoise") else ""
        print(f"{name:6} {op:36} {w}x{h} total {med('total_ms'):8.2f} kernel {med('kernel_ms'):7.2f} "
              f"upload {med('upload_ms'):7.2f} download {med('download_ms'):7.2f} ({len(rs)} runs){fps}")
PY
}

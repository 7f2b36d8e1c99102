#!/usr/bin/env bash
# Sets everything up and runs the whole test suite (unit, integration,
# device-vs-reference on PoCL, fixtures), then prints one closing line with
# the totals over every test binary and the Python suite: "N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
# Device tests must not skip here: PoCL is installed above.
export MAPFILTER_REQUIRE_OPENCL=1
# Nor the OpenCV comparison: python3-opencv is installed above.
export MAPFILTER_REQUIRE_OPENCV=1
# Nor the fixture generator: python3-numpy and python3-gdal are installed above.
export MAPFILTER_REQUIRE_PYTHON_GDAL=1
# The fault-injection tests mount a small tmpfs (a full disk) and bind
# mounts: CI runs as root, so there they must run, not skip.
if [ "$(id -u)" -eq 0 ] || [ "${CI:-}" = true ]; then
  export MAPFILTER_REQUIRE_ROOT=1
fi
# Nor the QGIS provider test: qgis and python3-qgis are installed above.
export MAPFILTER_REQUIRE_QGIS=1
# Nor the comparisons with gdal_sieve.py: python3-gdal is installed above.
export MAPFILTER_REQUIRE_GDAL_SIEVE=1
# Nor the reports rendered in headless Chromium: chromium is installed above.
export MAPFILTER_REQUIRE_CHROMIUM=1
# Nor the SLURM job-array test: slurm-wlm and munge are installed above, and
# as root it brings up a one-node cluster (scripts/slurm-local.sh).
if [ "$(id -u)" -eq 0 ]; then
  export MAPFILTER_REQUIRE_SLURM=1
fi
log=$(mktemp) prep=$(mktemp)
trap 'rm -f "$log" "$prep"' EXIT
status=0
# The Python suite's environment and packages, downloaded while cargo
# compiles (if this fails, the suite's own run below installs again and
# says why).
bash scripts/python-test.sh --prepare >"$prep" 2>&1 &
prepared=$!
# A cold build from a clean clone: incremental compilation would only write
# caches that this run never reads (about a fifth more compiler time for
# the workspace's crates on 2 cores).
export CARGO_INCREMENTAL=0
cargo test --workspace --exclude mapfilter-core --exclude mapfilter-benches --locked --no-fail-fast 2>&1 | tee "$log" || status=$?
# mapfilter-core's own unit tests, in a harness built at opt-level 0: the
# crate is built a second time for them (the lib above stays at opt-level 2
# for the CLI the integration tests run), and at opt-level 2 that second
# build was about 200 s of compiler time against under 40 s here, for a
# harness that then runs in tens of seconds instead of about ten.
cargo test -p mapfilter-core --locked --no-fail-fast \
  --config 'profile.test.package.mapfilter-core.opt-level=0' 2>&1 | tee -a "$log" || status=$?
wait "$prepared" || cat "$prep"
# The Python package's pytest suite, against the CLI just built (its
# closing line, "N passed, M failed in S s", joins the totals).
bash scripts/python-test.sh 2>&1 | tee -a "$log" || status=$?
awk '/^test result:/ || /^[0-9]+ (passed|failed|error).* in [0-9.]+s/ {
       for (i = 1; i <= NF; i++) {
         if ($(i+1) ~ /^passed/) p += $i
         if ($(i+1) ~ /^(failed|error)/) f += $i
       }
     }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
exit "$status"

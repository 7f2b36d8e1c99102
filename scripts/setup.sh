#!/usr/bin/env bash
# Installs the system packages mapfilter builds and runs with (Debian 12):
# GDAL 3.6 (matches the gdal crate's prebuilt bindings), PoCL (an OpenCL CPU
# device everywhere), the OpenCL loader, clinfo, the GDAL command-line tools,
# Debian's OpenCV for Python (the image filters are checked against it),
# numpy with GDAL's Python bindings and tools (the fixtures' own generator;
# the sieve is checked against gdal_sieve.py), QGIS with its Python bindings
# (the QGIS Processing provider's test), and SLURM with munge (the batch
# job-array test on a one-node cluster), and python3-venv (the Python
# package's suite runs in a virtual environment, scripts/python-test.sh).
#
# Usage: scripts/setup.sh [--tests]
#   --tests  also what only the test suite needs: chromium, which renders
#            the HTML reports (tests/report_chromium.rs); scripts/test.sh
#            passes it, the demo does not.
set -euo pipefail
packages=(libgdal-dev gdal-bin pocl-opencl-icd ocl-icd-opencl-dev clinfo pkg-config python3-opencv python3-numpy python3-gdal python3-venv qgis python3-qgis slurm-wlm munge groff-base)
if [ "${1:-}" = "--tests" ]; then
  packages+=(chromium)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

#!/usr/bin/env bash
# Installs the system packages mapfilter builds and runs with (Debian 12):
# GDAL 3.6 (matches the gdal crate's prebuilt bindings) with its tools,
# PoCL (an OpenCL CPU device everywhere), the OpenCL loader and clinfo.
# That is all the demo (scripts/demo.sh) needs.
#
# Usage: scripts/setup.sh [--tests]
#   --tests  also what only the test suite needs (scripts/test.sh passes
#            it): Debian's OpenCV for Python (the image filters are checked
#            against it), numpy with GDAL's Python bindings and tools (the
#            fixtures' own generator; the sieve is checked against
#            gdal_sieve.py), python3-venv (the Python package's suite,
#            scripts/python-test.sh), QGIS with its Python bindings (the
#            QGIS Processing provider's test), SLURM with munge (the batch
#            job-array test on a one-node cluster), groff (the man pages'
#            test) and chromium (the HTML reports' layout,
#            tests/report_chromium.rs).
set -euo pipefail
packages=(libgdal-dev gdal-bin pocl-opencl-icd ocl-icd-opencl-dev clinfo pkg-config)
if [ "${1:-}" = "--tests" ]; then
  packages+=(python3-opencv python3-numpy python3-gdal python3-venv qgis python3-qgis
    slurm-wlm munge groff-base chromium)
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

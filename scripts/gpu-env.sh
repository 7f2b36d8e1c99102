# Sourced on the GPU machine (repo root): unpacks carry/gdal-bundle.tar.xz
# (made by scripts/gpu-bundle.sh) into /tmp/mf once and points the loader,
# PROJ and GDAL at it; registers NVIDIA's OpenCL driver beside PoCL.
if [ ! -x /tmp/mf/bin/mapfilter ]; then
  tar -C /tmp -xJf carry/gdal-bundle.tar.xz
fi
export PATH=/tmp/mf/bin:$PATH
export LD_LIBRARY_PATH=/tmp/mf/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PROJ_DATA=/tmp/mf/share/proj PROJ_LIB=/tmp/mf/share/proj
export GDAL_DATA=/tmp/mf/share/gdal
mkdir -p /etc/OpenCL/vendors
echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd 2>/dev/null || true

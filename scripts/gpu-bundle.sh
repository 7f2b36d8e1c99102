#!/usr/bin/env bash
# Packs a GDAL build of mapfilter for the GPU machine, which has no GDAL:
# the release binary, every shared library it and gdal_translate need except
# the C/C++ runtime (glibc, libstdc++, libgcc, which the machine has), PROJ's
# and GDAL's data, and gdal_translate itself, as one tar.xz under carry/
# (git-ignored; the device tool carries at most 64 MiB).
#
# Usage (repo root):   bash scripts/gpu-bundle.sh            -> carry/gdal-bundle.tar.xz
# On the GPU machine:  source scripts/gpu-env.sh              (unpacks into /tmp/mf,
#                      sets PATH, LD_LIBRARY_PATH, PROJ_DATA, GDAL_DATA)
set -euo pipefail
cd "$(dirname "$0")/.."
# NO_BUILD=1 packs the release binary as it is (e.g. to measure an older commit).
[ -n "${NO_BUILD:-}" ] || cargo build --release --locked --quiet
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/mf/bin" "$stage/mf/lib" "$stage/mf/share" carry
cp target/release/mapfilter "$stage/mf/bin/"
strip "$stage/mf/bin/mapfilter"
cp "$(command -v gdal_translate)" "$(command -v gdalinfo)" "$stage/mf/bin/"
# Libraries of both binaries, less the runtime the GPU machine has.
for exe in target/release/mapfilter "$(command -v gdal_translate)" "$(command -v gdalinfo)"; do
  ldd "$exe" | awk '/=> \// { print $3 }'
done | sort -u | grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/mf/lib/"; done
strip --strip-unneeded "$stage"/mf/lib/*.so* 2>/dev/null || true
cp -r /usr/share/proj /usr/share/gdal "$stage/mf/share/"
# PROJ's datum-shift grids (about 14 MB) serve no run here: the device
# tool carries at most 64 MiB.
find "$stage/mf/share/proj" -type f \( -name '*.gsb' -o -name '*.gtx' -o -name '*.tif' \) -delete
tar -C "$stage" -cJf carry/gdal-bundle.tar.xz mf
ls -l carry/gdal-bundle.tar.xz

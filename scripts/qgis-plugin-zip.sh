#!/usr/bin/env bash
# Builds the QGIS plugin zip for the QGIS plugin repository (or "Install
# from ZIP" in QGIS's plugin manager): one top-level folder,
# mapfilter_provider/, with metadata.txt (the fields the repository
# requires: name, qgisMinimumVersion, description, about, version, author,
# email, repository; checked here) and a LICENSE file, without caches.
#
#   bash scripts/qgis-plugin-zip.sh [OUT_DIR]   # default target/qgis
#
# Prints the path of the zip (mapfilter_provider-VERSION.zip).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/qgis}
plugin=qgis/mapfilter_provider
for field in name qgisMinimumVersion description about version author email repository; do
  if ! grep -q "^$field=." "$plugin/metadata.txt"; then
    echo "qgis-plugin-zip: $plugin/metadata.txt lacks '$field=' (hint: the QGIS plugin repository requires it)" >&2
    exit 1
  fi
done
version=$(sed -n 's/^version=//p' "$plugin/metadata.txt")
mkdir -p "$out"
zip=$out/mapfilter_provider-$version.zip
/usr/bin/python3 - "$plugin" "$zip" <<'PY'
import os, sys, zipfile
plugin, target = sys.argv[1], sys.argv[2]
name = os.path.basename(plugin)
licence = (
    "mapfilter is licensed under the MIT license or the Apache License 2.0, at your option\n"
    "(SPDX-License-Identifier: MIT OR Apache-2.0).\n"
)
tmp = target + ".tmp"
with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
    for root, dirs, files in os.walk(plugin):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(root, f)
            z.write(path, os.path.join(name, os.path.relpath(path, plugin)))
    z.writestr(f"{name}/LICENSE", licence)
os.replace(tmp, target)
PY
echo "$zip"

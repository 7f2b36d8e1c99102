#!/usr/bin/env bash
# Checks the QGIS provider against the CLI, headless (see check_provider.py):
#   bash qgis/tests/run.sh path/to/mapfilter
# Exit 77 when QGIS is missing (qgis_process, or python3-qgis for Debian's
# python3), so the Rust test can tell "not installed" from "failed".
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: run.sh MAPFILTER_BINARY}
if ! command -v qgis_process.bin >/dev/null && ! command -v qgis_process >/dev/null; then
  echo "qgis_process not found (apt-get install qgis python3-qgis)"
  exit 77
fi
if ! /usr/bin/python3 -c "import qgis.core" 2>/dev/null; then
  echo "python3 cannot import qgis.core (apt-get install python3-qgis)"
  exit 77
fi
export QT_QPA_PLATFORM=offscreen
exec /usr/bin/python3 qgis/tests/check_provider.py --bin "$bin"

#!/usr/bin/env bash
# Renders the README's QGIS screenshots under Xvfb (QGIS desktop with the
# provider installed into a temporary profile; see screenshots.py):
#   bash qgis/tools/screenshots.sh [MAPFILTER_BINARY] [OUT_DIR]   (KEEP=1 keeps the work directory)
# Needs: apt-get install qgis python3-qgis xvfb xauth. Writes
# qgis-toolbox.png, qgis-smooth-dialog.png, qgis-compare-run.png, qgis-results.png,
# qgis-batch-dialog.png, qgis-batch-run.png, qgis-batch-results.png.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-target/release/mapfilter}")
out=$(realpath -m "${2:-docs/img}")
mkdir -p "$out"
work=$(mktemp -d)
[ -z "${KEEP:-}" ] || echo "work directory: $work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
plugins="$work/profiles/default/python/plugins"
mkdir -p "$plugins" "$work/shots" "$work/xdg"
cp -r qgis/mapfilter_provider "$plugins/"
rm -rf "$plugins/mapfilter_provider/__pycache__"
# Enabled, and no first-run tips or news.
mkdir -p "$work/profiles/default/QGIS"
cat > "$work/profiles/default/QGIS/QGIS3.ini" <<'EOF'
[PythonPlugins]
mapfilter_provider=true
processing=true

[qgis]
showTips322=false
checkVersion=false
allowVersionCheck=false
EOF
chmod 700 "$work/xdg"
export MAPFILTER="$bin" MAPFILTER_REPO="$PWD" SCREENSHOT_DIR="$work/shots" XDG_RUNTIME_DIR="$work/xdg"
xvfb-run -a -s "-screen 0 1280x800x24" \
  qgis --profiles-path "$work" --nologo --noversioncheck --code qgis/tools/screenshots.py || true
if [ -f "$work/shots/error.txt" ]; then
  cat "$work/shots/error.txt"
  exit 1
fi
for f in qgis-toolbox.png qgis-smooth-dialog.png qgis-compare-run.png qgis-results.png \
  qgis-batch-dialog.png qgis-batch-run.png qgis-batch-results.png; do
  [ -s "$work/shots/$f" ] || { echo "no $f was rendered"; exit 1; }
  cp "$work/shots/$f" "$out/$f"
  echo "wrote $out/$f"
done

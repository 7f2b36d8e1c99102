#!/usr/bin/env bash
# Checks that a mapfilter HTML report renders in headless Chromium (Debian's
# `chromium`, installed with apt-get if missing): no console errors, no script
# or resource errors, every <img> (quick-look map) decoded, every inline SVG
# plot laid out with a real size and drawn content, no table figure wrapped
# onto two lines, no "-0.0", no horizontal scroll (of the page or inside a
# table) at 1280 pixels wide, in every plot no axis title over a tick label
# and no legend over a data point.
#
# Usage: scripts/check-report.sh REPORT.html [MIN_IMAGES] [MIN_PLOTS]
#   MIN_IMAGES / MIN_PLOTS: how many maps and SVG plots the report must have (default 1 / 1).
#   SCREENSHOT=shot.png scripts/check-report.sh ...  also saves a screenshot.
# Exit status 0 when the report passes; the reason otherwise.
set -euo pipefail

report=${1:?usage: scripts/check-report.sh REPORT.html [MIN_IMAGES] [MIN_PLOTS]}
min_images=${2:-1}
min_plots=${3:-1}
[ -f "$report" ] || { echo "check-report: $report: no such file" >&2; exit 2; }

if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends chromium
fi

work=$(mktemp -d)
profile=$(mktemp -d)
trap 'rm -rf "$work" "$profile"' EXIT

# The page under test: the report with a probe that records errors from the
# very start (capturing phase: resource load failures too) and, once every
# image has loaded, writes what rendered into the DOM for --dump-dom.
probe_head='<script>window.__mfErrors=[];addEventListener("error",function(e){window.__mfErrors.push(String(e.message||(e.target&&(e.target.src||e.target.tagName))||"error").slice(0,120))},true);</script>'
cat > "$work/probe.html" <<'EOF'
<script>
addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var badImgs = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0); });
  var svgs = Array.prototype.slice.call(document.querySelectorAll("svg"));
  var badSvgs = svgs.filter(function (s) {
    var b = s.getBoundingClientRect();
    return !(b.width > 50 && b.height > 50 && s.querySelectorAll("path,polyline,polygon,rect,circle,line,text").length > 5);
  });
  // Figures that wrap onto a second line, and "-0.0"-like figures.
  var cells = Array.prototype.slice.call(document.querySelectorAll("td"));
  var wrapped = cells.filter(function (td) {
    var r = document.createRange(); r.selectNodeContents(td);
    var tops = {}; Array.prototype.forEach.call(r.getClientRects(), function (b) { if (b.width > 0) tops[Math.round(b.top)] = 1; });
    return td.cellIndex > 0 && !td.closest("table.settings") && Object.keys(tops).length > 1;
  });
  var negzero = cells.filter(function (td) { return /(^|\s)-0(\.0+)?(\s|$|%|×)/.test(td.textContent); });
  // Plots: rotated axis titles against tick labels; legend boxes (plotters
  // draws them as rects of opacity 0.85) against data points (circles).
  var hit = function (a, b) { return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; };
  var titleHits = 0, legendHits = 0;
  svgs.forEach(function (s) {
    var texts = Array.prototype.slice.call(s.querySelectorAll("text"));
    var titles = texts.filter(function (t) { return /rotate/.test(t.getAttribute("transform") || ""); });
    texts.forEach(function (t) {
      if (titles.indexOf(t) >= 0 || !t.textContent.trim()) return;
      titles.forEach(function (a) { if (hit(a.getBoundingClientRect(), t.getBoundingClientRect())) titleHits++; });
    });
    var legends = Array.prototype.slice.call(s.querySelectorAll("rect")).filter(function (r) { return r.getAttribute("opacity") === "0.85"; });
    Array.prototype.forEach.call(s.querySelectorAll("circle"), function (c) {
      var b = c.getBoundingClientRect();
      legends.forEach(function (l) { if (hit(l.getBoundingClientRect(), b)) legendHits++; });
    });
  });
  // Horizontal scroll: the page's, and every table's own (tables scroll
  // inside themselves, overflow-x:auto, rather than widen the page).
  var de = document.documentElement;
  var hscroll = (de.scrollWidth > de.clientWidth + 1 ? 1 : 0) +
    Array.prototype.slice.call(document.querySelectorAll("table")).filter(function (t) { return t.scrollWidth > t.clientWidth + 1; }).length;
  var pre = document.createElement("pre");
  pre.id = "mapfilter-check";
  pre.textContent = "MAPFILTER-CHECK images=" + imgs.length + " bad_images=" + badImgs.length +
    " plots=" + svgs.length + " bad_plots=" + badSvgs.length + " wrapped=" + wrapped.length +
    " negzero=" + negzero.length + " hscroll=" + hscroll + " title_overlaps=" + titleHits + " legend_overlaps=" + legendHits + " errors=" + window.__mfErrors.length +
    " END " + window.__mfErrors.join(" | ");
  document.body.appendChild(pre);
});
</script>
EOF
# The probe goes right after <head> (errors from the start) and at the end.
awk -v probe="$probe_head" '!done && (i = index($0, "<head>")) {
  $0 = substr($0, 1, i + 5) probe substr($0, i + 6); done = 1 } { print }' "$report" > "$work/page.html"
cat "$work/probe.html" >> "$work/page.html"

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$profile" --enable-logging=stderr --v=0
  --virtual-time-budget=10000 --window-size=1280,4000)

set +e
timeout 120 chromium "${flags[@]}" --dump-dom "file://$work/page.html" >"$work/dom.html" 2>"$work/log.txt"
status=$?
set -e
if [ -n "${SCREENSHOT:-}" ]; then
  timeout 120 chromium "${flags[@]}" --screenshot="$SCREENSHOT" "file://$work/page.html" >/dev/null 2>&1 || true
fi
if [ $status -ne 0 ]; then
  echo "check-report: chromium failed (exit $status):" >&2
  tail -20 "$work/log.txt" >&2
  exit 1
fi

result=$(grep -o '<pre id="mapfilter-check">[^<]*' "$work/dom.html" | sed 's/^<pre[^>]*>//' || true)
if [ -z "$result" ]; then
  echo "check-report: the page did not finish loading (no probe result)" >&2
  tail -20 "$work/log.txt" >&2
  exit 1
fi
echo "$result"

fail=0
value() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$result"; }
# Console messages of the page (Chromium logs them as CONSOLE lines).
if grep -E 'CONSOLE|Uncaught' "$work/log.txt" >"$work/console.txt"; then
  echo "check-report: console messages:" >&2
  cat "$work/console.txt" >&2
  fail=1
fi
[ "$(value errors)" = 0 ] || { echo "check-report: script/resource errors" >&2; fail=1; }
[ "$(value bad_images)" = 0 ] || { echo "check-report: $(value bad_images) image(s) did not render" >&2; fail=1; }
[ "$(value bad_plots)" = 0 ] || { echo "check-report: $(value bad_plots) plot(s) did not render" >&2; fail=1; }
[ "$(value wrapped)" = 0 ] || { echo "check-report: $(value wrapped) figure(s) wrap onto two lines" >&2; fail=1; }
[ "$(value negzero)" = 0 ] || { echo "check-report: $(value negzero) figure(s) show -0" >&2; fail=1; }
[ "$(value hscroll)" = 0 ] || { echo "check-report: $(value hscroll) horizontal scroll(s) (page or table wider than the window)" >&2; fail=1; }
[ "$(value title_overlaps)" = 0 ] || { echo "check-report: $(value title_overlaps) tick label(s) under an axis title" >&2; fail=1; }
[ "$(value legend_overlaps)" = 0 ] || { echo "check-report: $(value legend_overlaps) data point(s) under a legend" >&2; fail=1; }
[ "$(value images)" -ge "$min_images" ] || { echo "check-report: $(value images) images, expected at least $min_images" >&2; fail=1; }
[ "$(value plots)" -ge "$min_plots" ] || { echo "check-report: $(value plots) plots, expected at least $min_plots" >&2; fail=1; }
if [ $fail -ne 0 ]; then
  exit 1
fi
echo "check-report: $report renders: $(value images) maps, $(value plots) plots, no console errors"

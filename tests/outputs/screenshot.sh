#!/bin/sh
# Renders an HTML file with headless Chromium (Debian's chromium), as the tests and the README's
# screenshot do:
#   tests/outputs/screenshot.sh HTML OUT [WIDTHxHEIGHT] [light|dark|pdf] [PDF]
# light (default) and dark write a PNG of the window's size, the page's prefers-color-scheme
# light or dark; pdf prints the page (its @media print) to OUT. With PDF, a light or dark run also
# prints the page to PDF: one Chromium start (a second of CPU and more) for both. A fresh profile in a temporary
# directory, no network activity of the browser's own (no sync, updates, QUIC or background
# requests); --no-sandbox because the tests run as root. Exit 0 when OUT was written.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 HTML OUT [WIDTHxHEIGHT] [light|dark|pdf] [PDF]" >&2; exit 2; }
html=$1 out=$2 size=${3:-1000x900} mode=${4:-light} pdf=${5:-}
case $mode in
light) set -- --screenshot="$out" --blink-settings=preferredColorScheme=1 ;;
dark) set -- --screenshot="$out" --blink-settings=preferredColorScheme=0 ;;
pdf) set -- --print-to-pdf="$out" --no-pdf-header-footer ;;
*) echo "screenshot.sh: $mode: not light, dark or pdf" >&2; exit 2 ;;
esac
if [ -n "$pdf" ]; then
	[ "$mode" != pdf ] || { echo "screenshot.sh: PDF is for a light or dark run" >&2; exit 2; }
	rm -f "$pdf"
	set -- "$@" --print-to-pdf="$pdf" --no-pdf-header-footer
fi
case $html in /*) ;; *) html=$(pwd)/$html ;; esac
profile=$(mktemp -d "${TMPDIR:-/tmp}/lm-chromium.XXXXXX")
trap 'rm -rf "$profile"' EXIT
rm -f "$out"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
	--disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
	--window-size="${size%x*},${size#*x}" "$@" "file://$html" >"$profile/log" 2>&1 || {
	cat "$profile/log" >&2
	exit 1
}
for f in "$out" ${pdf:+"$pdf"}; do
	[ -s "$f" ] || { echo "screenshot.sh: chromium wrote no $f" >&2; cat "$profile/log" >&2; exit 1; }
done

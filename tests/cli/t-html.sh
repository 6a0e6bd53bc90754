#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced lib; single-quoted $ is for the inner sh
# report --html FILE: one self-contained page of the evidence, from llama-bench files (the
# published TinyLlama runs) and from a ledger of image versions with bench, validate and deploy
# records, one of them hostile. Checked by python3's html.parser (tests/outputs/html-check.py:
# nothing fetched or run, each bar's height its data-value scaled, every median of report --json
# drawn) and by rendering it in headless Chromium (tests/outputs/screenshot.sh) to PNGs, light
# and dark, that tests/outputs/png-stats.py finds not blank and in the bars' colours, and to a
# PDF (@media print), the light render and the PDF in one Chromium start.
. "$(dirname "$0")/../lib.sh"
O=$TOP/tests/outputs
F=$TOP/tests/fixtures/llama-bench/tinyllama-m1-ultra
H=$TOP/tests/fixtures/llama-bench/hostile
cp "$F"/tiny-* "$T/" || exit 1
ARMS="stock=$T/tiny-stock-minimal.json shim=$T/tiny-safe-shim-10x-final.json host=$T/tiny-host-minimal.json"
command -v chromium >/dev/null 2>&1 || not_ok "chromium is installed (scripts/deps.sh test)"
# clean FILE: no control character but newline, no C1 control or bidi override, only UTF-8.
clean() {
	python3 -c 'import re, sys
t = open(sys.argv[1], "rb").read().decode("utf-8")
m = re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", t)
sys.exit("raw %r at %d" % (m.group(), m.start()) if m else 0)' "$1"
}

# shellcheck disable=SC2086 # $ARMS is three words
check_rc "report FILES --html: exit 0" 0 "$LM" report $ARMS --html "$T/files.html"
check_grep "... stdout still has the table" '^pp512 +stock +431\.86 ' "$T/.out"
# shellcheck disable=SC2086
"$LM" report $ARMS --json >"$T/table.json" || not_ok "report --json"
check "... the page: nothing fetched or run, every bar as tall as its number, every median drawn" \
	sh -c 'python3 "$1" "$2" --table "$3" >"$2.read"' - "$O/html-check.py" "$T/files.html" "$T/table.json"
check_grep "... pp512's shim bar 4786.7 tokens/s" '^bar pp512\|shim\|4786\.7\|157\.20$' "$T/files.html.read"
check_grep "... bare metal the tallest, 160 px" '^bar pp512\|host\|4871\.99\|160\.00$' "$T/files.html.read"
check_grep "... tg128's stock bar 12.6307" '^bar tg128\|stock\|12\.6307\|7\.05$' "$T/files.html.read"
check_has "... the speedup" '<strong class="speedup">11.08×</strong> the stock guest · 98.25% of bare metal' "$T/files.html"
check_has "... and tg128's" '<strong class="speedup">16.36×</strong>' "$T/files.html"
check_grep "... light and dark" '@media \(prefers-color-scheme:dark\)' "$T/files.html"
check_grep "... and print" '@media print' "$T/files.html"
check_rc "a shim arm on the stock path: exit 1, the page written all the same" 1 "$LM" report \
	stock="$T/tiny-stock-minimal.json" shim="$H/shim-stock-path.json" --html "$T/noeffect.html"
check_has "... saying the shim had no effect, no speedup" "pp512 · shim not effective" "$T/noeffect.html"
# shellcheck disable=SC2086 # $ARMS is three words
check_rc "--html into a directory that does not exist: exit 2" 2 "$LM" report $ARMS --html "$T/none/x.html"
check_has "... naming the file" "report: --html $T/none/x.html" "$T/.out"

# A ledger: version A benched, validated and deployed; B failed validation; C's image reference
# and workload are hostile; D has only a rollback (no section).
mkdir -p "$T/state/ledger"
doc() { # IMAGE RECORDS...
	i=$1
	shift
	printf '{"key":{"image":"%s","imageDigest":null,"guestOS":"26.5.2","guestBuild":"25F84","guestModel":"VirtualMac2,1",' "$i"
	printf '"hostChip":"Apple M1 Ultra","hostModel":"Mac13,2","hostOS":"26.5.2","hostBuild":"25F84"},"records":['
	printf '%s' "$1"
	shift
	for r in "$@"; do printf ',%s' "$r"; done
	printf ']}\n'
}
val() { # VERDICT MEANKLD SAMETOP PPLRATIO [REASON]
	printf '{"kind":"validate","vm":"tahoe-1","verdict":"%s","time":"2026-08-09T18:00:00Z","reasons":[%s],' "$1" \
		"${5:+\"$5\"}"
	printf '"validation":{"meanKld":%s,"sameTopPercent":%s,"pplRatio":%s,"thresholds":{"maxMeanKld":0.01,' "$2" "$3" "$4"
	printf '"minSameTopPercent":97,"maxPplRatioDeviation":0.01}}}'
}
bench() { printf '{"kind":"bench","vm":"%s","workload":"w","verdict":"effective","time":"2026-08-09T19:00:00Z","bench":%s}' \
	"$1" "$(cat "$2")"; }
dep() { printf '{"kind":"deploy","vm":"tahoe-1","verdict":"%s","time":"2026-08-09T18:30:00Z"}' "$1"; }
sed 's/"workload":"[^"]*"/"workload":"<\/h3><script>alert(1)<\/script>\\u001b[2J\\u202e"/' "$T/table.json" >"$T/evil.json"
doc "ghcr.io/trycua/macos-tahoe-cua:latest" "$(val pass 0.000412 99.21 1.0009)" "$(dep pass)" \
	"$(bench tahoe-1 "$T/table.json")" >"$T/state/ledger/000000000000000a.json"
doc "ghcr.io/x/macos:26.6-beta" "$(val fail 0.02 95.1 1.02 'mean KLD 0.02 is above 0.01')" "$(dep fail)" \
	>"$T/state/ledger/000000000000000b.json"
doc '<\/h2><script>alert(1)<\/script>\u001b]0;pwned\u0007\u202e' "$(bench evil "$T/evil.json")" \
	>"$T/state/ledger/000000000000000c.json"
doc "ghcr.io/x/rolled:1" '{"kind":"rollback","vm":"x","result":"rolled-back","time":"2026-08-09T18:00:00Z"}' \
	>"$T/state/ledger/000000000000000d.json"
check_rc "report --ledger --html: exit 0" 0 "$LM" report --ledger --state "$T/state" --html "$T/ledger.html"
"$LM" report --ledger --state "$T/state" --json >"$T/ledger.json" 2>/dev/null
check "... the page passes html-check, every bench record's medians drawn" \
	sh -c 'python3 "$1" "$2" --table "$3" >"$2.read"' - "$O/html-check.py" "$T/ledger.html" "$T/ledger.json"
check "... three sections: the versions with a bench or a validation" test "$(grep -c '^section ' "$T/ledger.html.read")" -eq 3
check_grep "... A with its verdict pass" '^section ghcr\.io/trycua/macos-tahoe-cua:latest \(no digest\)\|pass$' "$T/ledger.html.read"
check_grep "... B fail" '^section ghcr\.io/x/macos:26\.6-beta \(no digest\)\|fail$' "$T/ledger.html.read"
check_grep "... A's mean KLD against its threshold" '^gauge 0\.000412\|0\.01\|' "$T/ledger.html.read"
check_grep "... A's same top token" '^gauge 99\.21\|97\.0\|178\.58$' "$T/ledger.html.read"
check_grep "... B's mean KLD past it" '^gauge 0\.02\|0\.01\|163\.64$' "$T/ledger.html.read"
check_has "... said in words" "<strong>does not hold</strong>" "$T/ledger.html"
check_has "... with B's reason" "<li>mean KLD 0.02 is above 0.01</li>" "$T/ledger.html"
check_has "... and where A's figures came from" "guest macOS 26.5.2 (25F84), VirtualMac2,1 · host Apple M1 Ultra, Mac13,2" "$T/ledger.html"
check "... C's markup stays text: no raw control character" clean "$T/ledger.html"
check_has "... its reference escaped" '&lt;/h2&gt;&lt;script&gt;alert(1)&lt;/script&gt;\x1b]0;pwned\x07\xe2\x80\xae' "$T/ledger.html"
check_has "... its workload too" '&lt;/h3&gt;&lt;script&gt;alert(1)&lt;/script&gt;\x1b[2J' "$T/ledger.html"
printf '<p><script>x</script><img src="http://example.com/x.png"></p>\n' >>"$T/ledger.html.bad"
cat "$T/ledger.html" "$T/ledger.html.bad" >"$T/broken.html"
check "html-check refuses a page with a script or an image it fetches" sh -c '! python3 "$1" "$2" 2>/dev/null >/dev/null' - \
	"$O/html-check.py" "$T/broken.html"
sed 's/height="157.20"/height="150.00"/' "$T/files.html" >"$T/broken2.html"
check "... and a bar whose height is not its number" sh -c '! python3 "$1" "$2" 2>/dev/null >/dev/null' - \
	"$O/html-check.py" "$T/broken2.html"

# Rendered: not blank, in the bars' colours, light and dark; printed to a PDF.
check "headless Chromium renders the page (light) and prints it to a PDF, in one start" \
	sh "$O/screenshot.sh" "$T/ledger.html" "$T/light.png" 1000x1000 light "$T/ledger.pdf"
check "... a PNG png-stats reads" sh -c 'python3 "$1" "$2" --has "#0969da" --has "#818b98" --has "#1a7f37" >"$2.read"' - \
	"$O/png-stats.py" "$T/light.png"
check "... not blank: hundreds of colours" awk '/^colours / { exit !($2 >= 100) }' "$T/light.png.read"
check "... a light background" awk '/^background / { exit !($2 == "#ffffff" || $2 == "#f6f8fa") }' "$T/light.png.read"
check "... the shim bars drawn (their blue, #0969da)" awk '/^has #0969da / { exit !($3 >= 2000) }' "$T/light.png.read"
check "... the stock bars (grey) and bare metal's (green)" sh -c \
	'awk "/^has #818b98 / { exit !(\$3 >= 200) }" "$1" && awk "/^has #1a7f37 / { exit !(\$3 >= 2000) }" "$1"' - "$T/light.png.read"
check "... and dark" sh "$O/screenshot.sh" "$T/ledger.html" "$T/dark.png" 1000x1000 dark
check "... read" sh -c 'python3 "$1" "$2" --has "#4493f8" >"$2.read"' - "$O/png-stats.py" "$T/dark.png"
check "... a dark background" awk '/^background / { exit !($2 == "#0d1117" || $2 == "#151b23") }' "$T/dark.png.read"
check "... the shim bars in the dark blue (#4493f8)" awk '/^has #4493f8 / { exit !($3 >= 2000) }' "$T/dark.png.read"
check "the PDF is a PDF of some pages" sh -c 'head -c 5 "$1" | grep -q "^%PDF-" && test "$(wc -c <"$1")" -gt 10000' - "$T/ledger.pdf"
t_done

#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# The outputs for the systems around lume-metal, each checked by the consumer that reads it:
# --format junit of validate, deploy, status and rollback by `xmllint --schema tests/junit.xsd`
# and by junitparser (python3-junitparser); status --format openmetrics and --textfile by
# `promtool check metrics` (Debian's prometheus). Real sshd guests: tahoe-1 and tahoe-3 of one
# image version, tahoe-2 of another whose simulated device the shim cannot change, evil whose
# simulated sw_vers and image.json answer with escape sequences, quotes, markup and bytes that
# are not UTF-8, and gone, a VM Lume lists whose address nobody answers. Each document is also
# broken on purpose to see its consumer refuse it.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
. "$TOP/tests/outputs/junit.sh"
command -v promtool >/dev/null 2>&1 || not_ok "promtool is installed (prometheus, scripts/deps.sh test)"

guest tahoe-1 127.0.0.2 && guest tahoe-3 127.0.0.6 && guest tahoe-2 127.0.0.3 --env LUME_METAL_SIM_WRONG_TYPES=1 &&
	guest evil 127.0.0.4 --env LUME_METAL_SIM_HOSTILE=1 || exit 1
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" gone running 127.0.0.5 true
# Image versions by image.json: tahoe-1 and tahoe-3 one, tahoe-2 another; evil's is hostile.
for g in tahoe-1:good tahoe-3:good tahoe-2:bad; do
	mkdir -p "$(root "${g%%:*}")"
	printf '{"image":"ghcr.io/x/macos:%s"}\n' "${g#*:}" >"$(root "${g%%:*}")/image.json"
done
mkdir -p "$(root evil)"
printf '{"image":"evil\\u001b[2J\\"<b>&amp;</b>]]>\\\\ \\u202e\\n# TYPE x counter\\nx 1"}\n' >"$(root evil)/image.json"
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null &&
	"$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz" >/dev/null || exit 1
A=$(cut -c1-64 "$T/a.tar.gz.sha256") B=$(cut -c1-64 "$T/b.tar.gz.sha256")

# unique FILE: no series (name and labels) twice, which node_exporter refuses and promtool does
# not check.
unique() {
	python3 -c 'import sys
seen = set()
for l in open(sys.argv[1], encoding="utf-8"):
    if l.startswith("#"):
        continue
    s = l.rsplit(" ", 1)[0]
    if s in seen:
        sys.exit("twice: " + s)
    seen.add(s)' "$1"
}
# clean FILE: no control character but newline, no C1 control or bidi override, only UTF-8.
clean() {
	python3 -c 'import re, sys
t = open(sys.argv[1], "rb").read().decode("utf-8")
m = re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", t)
sys.exit("raw %r at %d" % (m.group(), m.start()) if m else 0)' "$1"
}

# vjunit VM FILE: validate VM --format junit into FILE; its exit code.
vjunit() {
	lm validate "$1" --target linux-sim --payload "$T/a.tar.gz" --model "$VMODEL" --timeout "$VTIMEOUT" --accept-new \
		--format junit >"$2" 2>"$2.err"
}

# validate: one testcase per VM, the payload and the image version as properties.
vjunit tahoe-1 "$T/v1.xml"
check "validate --format junit of a version that passes exits 0" test $? -eq 0
junit "validate" "$T/v1.xml"
check_grep "... one testcase, tahoe-1, passed, with its time" '^case lume-metal validate: ghcr\.io/x/macos:good \(no digest\) \(macOS [^|]*\)\|tahoe-1\|lume-metal\.validate\|[0-9.]*[1-9][0-9.]*\|pass\|\|$' "$T/v1.xml.read"
check_grep "... the image version a property" '^property [^|]*\|imageVersion=ghcr\.io/x/macos:good \(no digest\)' "$T/v1.xml.read"
check_grep "... and the payload" "^property [^|]*\\|payload=$A\$" "$T/v1.xml.read"
check_grep "... the suite counts one test, none failed" '^suite [^|]*\|tests=1\|failures=0\|errors=0\|skipped=0\|' "$T/v1.xml.read"
vjunit tahoe-2 "$T/v2.xml"
check "validate --format junit of a version that fails exits 1" test $? -eq 1
junit "a failed validate" "$T/v2.xml"
check_grep "... tahoe-2 a failure of type validation-failed" '^case [^|]*\|tahoe-2\|lume-metal\.validate\|[0-9.]+\|failure\|validation-failed\|' "$T/v2.xml.read"
check_grep "... its text giving the reason" '^text [^|]*\|tahoe-2\|reasons: the shim arm did not take the simdgroup paths' "$T/v2.xml.read"
check_grep "... and the result as the JSON line has it" '^text [^|]*\|tahoe-2\|result: \{"vm":"tahoe-2","state":"validation-failed"' "$T/v2.xml.read"

# deploy: a suite per image version; deployed passes, refused is a failure with the reason,
# unreachable an error.
lm deploy tahoe-1 tahoe-2 gone --payload "$T/a.tar.gz" --format junit >"$T/d.xml" 2>"$T/d.err"
check "deploy --format junit with an unreachable VM exits 1" test $? -eq 1
junit "deploy" "$T/d.xml"
check "... three suites: two image versions and the VM not reached" test "$(grep -c '^suite ' "$T/d.xml.read")" -eq 3
check_grep "... tahoe-1 deployed: passed" '^case lume-metal deploy: ghcr\.io/x/macos:good[^|]*\|tahoe-1\|lume-metal\.deploy\|[0-9.]+\|pass\|' "$T/d.xml.read"
check_grep "... its suite has the payload" "^property lume-metal deploy: ghcr\\.io/x/macos:good[^|]*\\|payload=$A\$" "$T/d.xml.read"
check_grep "... tahoe-2 refused: a failure naming the validation to run" \
	'^case lume-metal deploy: ghcr\.io/x/macos:bad[^|]*\|tahoe-2\|[^|]*\|[0-9.]+\|failure\|refused\|.*validat' "$T/d.xml.read"
check_grep "... gone: an error of type unreachable" '^case lume-metal deploy: unknown \(not reached\)\|gone\|[^|]*\|[0-9.]+\|error\|unreachable\|' "$T/d.xml.read"
check_grep "... the suite's counts" '^suite lume-metal deploy: unknown \(not reached\)\|tests=1\|failures=0\|errors=1\|skipped=0\|' "$T/d.xml.read"
check "... nothing on stdout but the document" xmllint --noout "$T/d.xml"

# status: drift is a failure naming the files; --format junit and --json say the same.
f="$(root tahoe-1)/releases/$A/profile.json"
chmod u+w "$f" && echo '#' >>"$f"
lm status tahoe-1 tahoe-2 evil gone --accept-new --format junit >"$T/s.xml" 2>"$T/s.err"
check "status --format junit with drift exits 1" test $? -eq 1
junit "status" "$T/s.xml"
check_grep "... tahoe-1 a failure of type drift" '^case [^|]*\|tahoe-1\|lume-metal\.status\|[0-9.]+\|failure\|drift\|' "$T/s.xml.read"
check_grep "... naming the file" '^text [^|]*\|tahoe-1\|drift: profile\.json' "$T/s.xml.read"
check_grep "... its release a property" "^property [^|]*good[^|]*\\|release=$A\$" "$T/s.xml.read"
check_grep "... tahoe-2 passed" '^case [^|]*\|tahoe-2\|lume-metal\.status\|[0-9.]+\|pass\|' "$T/s.xml.read"
check "... the document holds no raw control character from evil's answers" clean "$T/s.xml"
check_grep "... which junitparser reads back as evil's escaped words" '^property [^|]*\|imageVersion=evil\\x1b\[2J"<b>&amp;</b>\]\]>\\ \\xe2\\x80\\xae\\n# TYPE x counter\\nx 1 \(no digest\)' "$T/s.xml.read"
lm status tahoe-1 tahoe-2 evil gone --json >"$T/s.json" 2>/dev/null
check "... and every VM's state is the one its --json line has" python3 -c '
import json, sys
states = {o["vm"]: o["state"] for o in map(json.loads, open(sys.argv[1])) if "vm" in o}
want = {"ok": "pass", "drift": "failure", "unreachable": "error"}
cases = [l.split("|") for l in open(sys.argv[2]) if l.startswith("case ")]
got = {c[1]: c[4] for c in cases}
assert len(got) == 4 and all(got[v] == want[s] for v, s in states.items()), (states, got)' "$T/s.json" "$T/s.xml.read"

# status --format openmetrics: promtool checks it; the samples say what the JSON says.
validated "payload B validated on tahoe-3's image version (a verdict covers one payload)" tahoe-3 --payload "$T/b.tar.gz" \
	--accept-new
check_rc "tahoe-3 deployed with payload B, the version's newest verdict" 0 lm deploy tahoe-3 --payload "$T/b.tar.gz"
before=$(date +%s)
lm status tahoe-1 tahoe-3 tahoe-2 evil gone --format openmetrics >"$T/m.prom" 2>"$T/m.err"
check "status --format openmetrics exits 1 (drift, unreachable)" test $? -eq 1
check "promtool check metrics accepts it" sh -c 'promtool check metrics <"$1"' - "$T/m.prom"
check "... no series twice" unique "$T/m.prom"
check_grep "... the state of each VM" '^lume_metal_vm_state\{vm="tahoe-1",state="drift"\} 1$' "$T/m.prom"
check_grep "... the shim active in tahoe-1's workload" '^lume_metal_shim_active\{vm="tahoe-1"\} 1$' "$T/m.prom"
check_grep "... not in tahoe-2 (nothing installed)" '^lume_metal_shim_active\{vm="tahoe-2"\} 0$' "$T/m.prom"
check_grep "... the service running" '^lume_metal_service_running\{vm="tahoe-1"\} 1$' "$T/m.prom"
check_grep "... drift and how many files" '^lume_metal_drift_files\{vm="tahoe-1"\} 1$' "$T/m.prom"
check_grep "... the release" "^lume_metal_release\\{vm=\"tahoe-1\",current=\"$A\",previous=\"none\"\\} 1\$" "$T/m.prom"
check_grep "... tahoe-1 a release behind (its version's last pass was tahoe-3's payload)" '^lume_metal_release_behind\{vm="tahoe-1"\} 1$' "$T/m.prom"
check_grep "... tahoe-3 not" '^lume_metal_release_behind\{vm="tahoe-3"\} 0$' "$T/m.prom"
check_grep "... whose release is the other payload" "^lume_metal_release\\{vm=\"tahoe-3\",current=\"$B\"," "$T/m.prom"
check_grep "... the image version's verdict" '^lume_metal_image_verdict\{vm="tahoe-1",image="ghcr\.io/x/macos:good \(no digest\) \(macOS [^"]*\)",verdict="pass"\} 1$' "$T/m.prom"
check_grep "... gone not up" '^lume_metal_vm_up\{vm="gone"\} 0$' "$T/m.prom"
if grep -q 'lume_metal_shim_active{vm="gone"' "$T/m.prom"; then not_ok "... and nothing said of its shim"; else ok "... and nothing said of its shim"; fi
check "... when each VM was checked: this run" sh -c 'sed -n "s/^lume_metal_last_check_timestamp_seconds{vm=\"tahoe-1\"} //p" "$1" |
	awk -v b="$2" -v a="$(date +%s)" "{ exit !(\$1 >= b && \$1 <= a) }"' - "$T/m.prom" "$before"
check_grep "... VMs by state" '^lume_metal_vms\{state="unreachable"\} 1$' "$T/m.prom"
check_grep "... and # EOF last (OpenMetrics)" '^# EOF$' "$T/m.prom"
check "... with no raw control character from evil" clean "$T/m.prom"
check_has "... evil's image label escaped: backslash, quote and newline" \
	'image="evil\\x1b[2J\"<b>&amp;</b>]]>\\ \\xe2\\x80\\xae\n# TYPE x counter\nx 1 (no digest) (macOS 26.5.2\\x1b[2J\\x1b]0;pwned\\x07' "$T/m.prom"
check "... bounded: at most 128 bytes, cut with ... and 12 hex digits of the whole label's SHA-256" python3 -c '
import re, sys
lead = "lume_metal_image_verdict{vm=\"evil\",image=\""
for l in open(sys.argv[1], encoding="utf-8"):
    if l.startswith(lead):
        v, k, bs = "", len(lead), chr(92)
        while l[k] != "\"":
            if l[k] == bs:
                k += 1
                v += "\n" if l[k] == "n" else l[k]
            else:
                v += l[k]
            k += 1
        assert len(v.encode()) <= 128 and re.search("[.][.][.][0-9a-f]{12}$", v), v
        sys.exit(0)
sys.exit("no verdict of evil")' "$T/m.prom"
check "... its one sample line unbroken: no line begins with x or a TYPE of x" sh -c '! grep -Eq "^(x |# TYPE x )" "$1"' - "$T/m.prom"

# --textfile DIR: the same metrics, written whole by a rename for node_exporter.
mkdir -p "$T/tf"
printf 'old\n' >"$T/tf/lume-metal.prom" && ln "$T/tf/lume-metal.prom" "$T/old-link"
lm status tahoe-1 tahoe-3 tahoe-2 evil gone --textfile "$T/tf" >"$T/tf.out" 2>&1
check "status --textfile exits as status does (1)" test $? -eq 1
check "... writes DIR/lume-metal.prom, which promtool accepts" sh -c 'promtool check metrics <"$1"' - "$T/tf/lume-metal.prom"
check "... the samples of --format openmetrics (the times aside)" sh -c 'grep -v "_seconds{" "$1" | diff - "$(grep -v "_seconds{" "$2" >"$3"; echo "$3")"' \
	- "$T/m.prom" "$T/tf/lume-metal.prom" "$T/tf.cmp"
check "... by a rename: the old file's inode still holds the old bytes" test "$(cat "$T/old-link")" = old
check "... readable by node_exporter (mode 0644)" test "$(stat -c %a "$T/tf/lume-metal.prom")" = 644
check "... and leaves nothing else in DIR" test "$(ls -A "$T/tf")" = lume-metal.prom
check_grep "... while stdout has the text lines" '^tahoe-1 +drift +current ' "$T/tf.out"
lm status tahoe-2 tahoe-2 --format openmetrics >"$T/twice.prom" 2>/dev/null
check "a VM named twice: promtool accepts the metrics" sh -c 'promtool check metrics <"$1"' - "$T/twice.prom"
check "... whose series are each there once" unique "$T/twice.prom"
check_grep "... the first kept" '^lume_metal_vm_up\{vm="tahoe-2"\} 1$' "$T/twice.prom"
cp "$T/twice.prom" "$T/broken3.prom" && grep '^lume_metal_vm_up' "$T/twice.prom" >>"$T/broken3.prom"
if unique "$T/broken3.prom" 2>/dev/null; then not_ok "... and the check refuses a series twice"; else ok "... and the check refuses a series twice"; fi
check_rc "--textfile of a directory that does not exist: exit 2" 2 lm status tahoe-1 --textfile "$T/nodir"
check_has "... naming it" "status: --textfile $T/nodir: not a directory" "$T/.out"
check_rc "deploy --format openmetrics: exit 2" 2 lm deploy tahoe-1 --payload "$T/a.tar.gz" --format openmetrics
check_has "... naming what deploy writes" "deploy: --format openmetrics: not json, text, junit" "$T/.out"
check_rc "probe --format junit: exit 2 (probe writes no document)" 2 lm probe tahoe-1 --format junit
check_has "... as before" "probe: --format junit: not json or text" "$T/.out"

# rollback: rolled-back passes.
lm rollback tahoe-1 --to none --no-probe --format junit >"$T/r.xml" 2>/dev/null
check "rollback --format junit exits 0" test $? -eq 0
junit "rollback" "$T/r.xml"
check_grep "... tahoe-1 rolled back: passed" '^case [^|]*\|tahoe-1\|lume-metal\.rollback\|[0-9.]+\|pass\|' "$T/r.xml.read"

# Each consumer refuses a broken document: the checks above can fail.
sed 's/<failure type="drift"/<failure/' "$T/s.xml" >"$T/broken1.xml"
check_rc "xmllint --schema refuses a failure without its type" 3 xmllint --noout --schema "$XSD" "$T/broken1.xml"
sed 's/&lt;/</' "$T/s.xml" >"$T/broken2.xml"
check "xmllint refuses a bare < (evil's markup unescaped)" sh -c '! xmllint --noout "$1" 2>/dev/null' - "$T/broken2.xml"
check "... and so does junitparser" sh -c '! "$1" "$2" "$3" >/dev/null 2>&1' - "${PYJ:-python3}" "$READ" "$T/broken2.xml"
sed 's/tests="1" failures="0"/tests="2" failures="0"/' "$T/v1.xml" >"$T/broken3.xml"
check "junit-read.py refuses counts that disagree with the testcases" sh -c '! "$1" "$2" "$3" >/dev/null 2>&1' - \
	"${PYJ:-python3}" "$READ" "$T/broken3.xml"
python3 -c 'import sys
t = open(sys.argv[1], encoding="utf-8").read()
open(sys.argv[2], "w", encoding="utf-8").write(t.replace("\\n# TYPE x counter\\nx 1", "\n# TYPE x counter\nx 1"))' \
	"$T/m.prom" "$T/broken.prom"
check "promtool refuses a newline left raw in a label (evil's TYPE line)" sh -c '! promtool check metrics <"$1" >/dev/null 2>&1' - "$T/broken.prom"
sed 's/^lume_metal_vm_up{vm="gone"} 0$/lume_metal_vm_up{vm="go"ne"} 0/' "$T/m.prom" >"$T/broken2.prom"
check "promtool refuses a quote left raw in a label" sh -c '! promtool check metrics <"$1" >/dev/null 2>&1' - "$T/broken2.prom"
t_done

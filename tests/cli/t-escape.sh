#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# No byte from a guest, a Mac host, the ledger or a bench file reaches the terminal raw. A real
# sshd guest whose simulated sysctl/sw_vers answer with escape sequences (LUME_METAL_SIM_HOSTILE)
# and whose Lume name holds ESC, BEL, CR and a C1 control: the text output of deploy, status,
# probe, ledger show/export, host status and report holds no ESC, BEL, CR, DEL, C1 control or
# non-UTF-8 byte and shows the escaped form; --json still parses to the original strings.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../deploy/common.sh"
t_san # the ASan build, LeakSanitizer on (tests/lib.sh)

# clean FILE: FILE is UTF-8 with no control character but newline and tab, no C1 control and no
# bidi embedding, override or isolate.
clean() {
	python3 -c 'import re, sys
b = open(sys.argv[1], "rb").read()
try:
    t = b.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("%s: a byte that is not UTF-8 at %d" % (sys.argv[1], e.start))
m = re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", t)
if m:
    sys.exit("%s: raw %r at %d" % (sys.argv[1], m.group(), m.start()))' "$1"
}
# checks NAME FILE: FILE is clean and shows the guest's answers escaped.
checks() {
	check "$1: no raw ESC, BEL, CR, DEL, C1 or non-UTF-8 byte" clean "$2"
	check_has "... the version escaped" '26.5.2\x1b[2J\x1b]0;pwned\x07' "$2"
}
# py FILE CODE: python3 CODE (which asserts) with FILE's JSON lines as the list L.
py() {
	python3 -c "import json, sys
L = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]
$2" "$1"
}
OS='26.5.2\u001b[2J\u001b]0;pwned\u0007'
NAME='evil\u001b]0;pwned\u0007\u001b[1A\u001b[2K\rvm\u009b'

guest g1 127.0.0.241 --env LUME_METAL_SIM_HOSTILE=1 || exit 1
# The VM's Lume name: ESC, BEL, CR and U+009B (CSI), as lume ls prints it.
sed "s/\"name\" : \"g1\"/\"name\" : \"$(printf '%s' "$NAME" | sed 's/\\/\\\\/g')\"/" "$LUME_SIM_DIR/g1.json" >"$T/vm.json" &&
	mv "$T/vm.json" "$LUME_SIM_DIR/g1.json" || exit 1
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1

# llama-server requires validation: refused first, the command it names escaped too.
lm deploy --all --payload "$T/a.tar.gz" --accept-new >"$T/refused.txt" 2>&1
check_grep "deploy before the image version is validated: refused" ' refused +this workload requires validation' "$T/refused.txt"
check "refused: no raw ESC, BEL, CR, DEL, C1 or non-UTF-8 byte" clean "$T/refused.txt"
check_has "... the VM's name escaped in the command to run" 'validate it first: lume-metal validate evil\x1b]0;pwned\x07' "$T/refused.txt"
lm deploy --all --payload "$T/a.tar.gz" --validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" >"$T/deploy.txt" 2>&1
if grep -q ' deployed ' "$T/deploy.txt"; then ok "deploy to the hostile guest"; else
	not_ok "deploy to the hostile guest"; sed 's/^/#   /' "$T/deploy.txt"; fi
check "deploy: no raw ESC, BEL, CR, DEL, C1 or non-UTF-8 byte" clean "$T/deploy.txt"
check_has "... the VM name escaped" 'evil\x1b]0;pwned\x07\x1b[1A\x1b[2K\rvm\xc2\x9b' "$T/deploy.txt"
check_has "... the summary's image label escaped" \
	'(macOS 26.5.2\x1b[2J\x1b]0;pwned\x07 25F84\r\x1b[1A\x1b[2Kgood deployed)' "$T/deploy.txt"

lm deploy --all --payload "$T/a.tar.gz" --dry-run >"$T/plan1.txt" 2>&1
check_grep "deploy --dry-run: the plan's line for the hostile name (unchanged)" ' unchanged +current [0-9a-f]{12}, new ' \
	"$T/plan1.txt"
check "... no raw control, C1, bidi or non-UTF-8 byte" clean "$T/plan1.txt"
check_has "... the VM name escaped" 'evil\x1b]0;pwned\x07\x1b[1A\x1b[2K\rvm\xc2\x9b' "$T/plan1.txt"

lm status --all >"$T/status.txt" 2>&1
checks "status" "$T/status.txt"
lm status --all --json >"$T/status.json" 2>&1
check "status --json parses, with the original version and name" py "$T/status.json" "
r = L[0]
assert r['key']['guestOS'] == json.loads(r'\"$OS\"'), r['key']
assert r['vm'] == json.loads(r'\"$NAME\"'), r['vm']
assert r['guest']['model'] == 'VirtualMac2,1\x9b31m', r['guest']
assert r['guest']['chip'].startswith('Apple M1 Ultra\t\x7f'), r['guest']"
check "... and no line of it holds a raw control or C1 byte either" clean "$T/status.json"

lm probe --all --payload "$T/a.tar.gz" >"$T/probe.txt" 2>&1
check "probe: no raw ESC, BEL, CR, DEL, C1 or non-UTF-8 byte" clean "$T/probe.txt"
check_has "... the VM name escaped" 'evil\x1b]0;pwned\x07' "$T/probe.txt"

L() { "$LM" ledger --state "$T/state" "$@"; }
L show >"$T/ledger.txt" 2>&1
checks "ledger show" "$T/ledger.txt"
check_has "... the build escaped, not a rewritten line" '25F84\r\x1b[1A\x1b[2Kgood deployed' "$T/ledger.txt"
L export >"$T/ledger.csv" 2>&1
checks "ledger export" "$T/ledger.csv"

# bench: the table's workload label is the guest's model file name, here with ESC and BEL in it.
M=$T/g/g1/home/$(printf 'model\033]0;pwned\007.gguf')
head -c 20000 /dev/urandom >"$M"
lm bench g1 --model "$M" -r 3 >"$T/bench.txt" 2>&1
check_grep "bench the hostile guest" ': benchmarked$' "$T/bench.txt"
check "... no raw ESC, BEL, CR, DEL, C1 or non-UTF-8 byte" clean "$T/bench.txt"
check_has "... the model's name escaped" 'model\x1b]0;pwned\x07.gguf' "$T/bench.txt"

# On a terminal: the live lines carry the progress line's own \r\033[K, and nothing of the guest's.
pty() { script -qec "$1" "$T/pty.out" >/dev/null 2>&1 </dev/null; }
pty "'$LM' status --all --lume '$TOP/tests/lume-sim/lume' --port $PORT -u '$ME' -i '$T/id_ed25519' --known-hosts '$T/known_hosts' --state '$T/state'"
check "status on a terminal: none of the guest's sequences raw" sh -c '! grep -q "$(printf "\\033\\\\]0;\\|\\033\\\\[2J\\|\\033\\\\[1A")" "$1"' - "$T/pty.out"
check_has "... but escaped" '26.5.2\x1b[2J\x1b]0;pwned\x07' "$T/pty.out"

# The text views of issue 17, each fed a hostile guest's own answers (g2, a VM named plainly, so
# what is escaped is the answer): ESC, CSI, OSC, BEL, CR, the C1 CSI U+009B, the bidi override
# U+202E and isolate U+2066, as JSON escapes that a parser turns into those bytes. Its `tar`
# (first on its PATH) hands deploy an install.sh that answers validation-failed with them in
# the reason and the differences, and hands probe a run-with-shim that does the same; its
# current release's status.sh answers them in the releases, the service and the drift.
HOSTILE='\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e\u2066\r'
SEEN='\x1b]0;pwned\x07\x1b[2J\xc2\x9b31m\xe2\x80\xae\xe2\x81\xa6\r'
mkdir -p "$T/evil"
INSTALL_ANSWER="{\"result\":\"validation-failed\",\"reason\":\"the shimmed probe differs$HOSTILE (see shimmed.expect.differences)\",\"stock\":{\"probe\":\"x\"},\"shimmed\":{\"expect\":{\"pass\":false,\"differences\":[\"maxThreadgroupMemoryLength: want 65536, got $HOSTILE\",\"family$HOSTILE\"]}}}"
printf '%s\n' "$INSTALL_ANSWER" >"$T/evil/install.json"
printf '{"shim":{"active":true},"expect":{"pass":false,"differences":["maxThreadgroupMemoryLength: want 65536, got %s"]}}\n' \
	"$HOSTILE" >"$T/evil/shimmed.json"
cat >"$T/evil/tar" <<EOF
#!/bin/sh
# A hostile guest's tar (a test double of t-escape.sh).
case " \$* " in
*" bin/install.sh "*) echo "cat '$T/evil/install.json'"; exit 0 ;;
esac
/usr/bin/tar "\$@" || exit
case " \$* " in
*" bin/run-with-shim "*) printf '#!/bin/sh\ncat "%s"\nexit 1\n' '$T/evil/shimmed.json' >bin/run-with-shim ;;
esac
EOF
chmod +x "$T/evil/tar"
guest g2 127.0.0.243 --path "$T/evil" || exit 1
# g2's workload needs no validate record: these views are what comes after the gate.
unvalidated_datadir "$T/data"
LUME_METAL_DATADIR=$T/data "$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz" >/dev/null || exit 1
# H CMD ARGS...: lume-metal CMD on g2, as the harness reaches it.
H() {
	h_c=$1
	shift
	LUME_METAL_DATADIR=$T/data "$LM" "$h_c" g2 --lume "$TOP/tests/lume-sim/lume" --port "$PORT" -u "$ME" -i "$T/id_ed25519" \
		--known-hosts "$T/known_hosts" --state "$T/state2" --accept-new "$@"
}

H deploy --payload "$T/b.tar.gz" --dry-run >"$T/plan.txt" 2>&1
check_grep "deploy --dry-run: the plan's line (would install, current, new)" '^g2 +would install +current none, new ' \
	"$T/plan.txt"
H deploy --payload "$T/b.tar.gz" >"$T/vf.txt" 2>&1
check_grep "deploy: the hostile install answers validation-failed, its differences in words" \
	'^g2 +validation-failed +the shimmed probe differs.*: maxThreadgroupMemoryLength: want 65536, got ' "$T/vf.txt"
check "... no raw control, C1, bidi or non-UTF-8 byte" clean "$T/vf.txt"
check_has "... the reason and each difference escaped" \
	"differs$SEEN: maxThreadgroupMemoryLength: want 65536, got $SEEN; family$SEEN" "$T/vf.txt"
H deploy --payload "$T/b.tar.gz" --dry-run >"$T/plan.txt" 2>&1
check_grep "deploy --dry-run after it: would be refused, and why" '^g2 +would be refused +current none, new ' "$T/plan.txt"
check "... no raw control, C1, bidi or non-UTF-8 byte in the plan" clean "$T/plan.txt"
check_has "... naming the record's reason (as the ledger keeps it: no control character)" \
	"refused by the record of VM g2 (address 127.0.0.243) at " "$T/plan.txt"

H probe --payload "$T/b.tar.gz" >"$T/probe2.txt" 2>&1
check_grep "probe: the hostile run-with-shim's differences in words" \
	'^g2 +validation-failed +.*maxThreadgroupMemoryLength: want 65536, got ' "$T/probe2.txt"
check "... no raw control, C1, bidi or non-UTF-8 byte" clean "$T/probe2.txt"
check_has "... the difference escaped" "got $SEEN" "$T/probe2.txt"

# status: a current release whose status.sh answers escape sequences in every field it prints.
R=$(root g2)
Z=$(printf '%064d' 0)
mkdir -p "$R/releases/$Z/bin"
ln -s "$R/releases/$Z" "$R/current"
printf '{"root":"r","current":"c%s","previous":"p%s","releases":[],"service":{"loaded":true,"state":"running%s","pid":7},"launchAgent":{"present":true,"matches":true},"drift":["bin/x%s","y"],"driftDetected":true}\n' \
	"$HOSTILE" "$HOSTILE" "$HOSTILE" "$HOSTILE" >"$T/evil/status.json"
printf 'cat "%s"\n' "$T/evil/status.json" >"$R/current/bin/status.sh"
H status >"$T/status2.txt" 2>&1
check_grep "status: its line (releases, service, shim, verdict, drift)" \
	'^g2 +drift +current c.*, previous p.*; service running.*, pid 7; shim set by its LaunchAgent; image verdict fail; drift bin/x' \
	"$T/status2.txt"
check "... no raw control, C1, bidi or non-UTF-8 byte" clean "$T/status2.txt"
check_has "... the release columns escaped (their first 12 bytes)" 'current c\x1b]0;pwned\x07\x1b, previous p\x1b]0;pwned\x07\x1b;' \
	"$T/status2.txt"
check_has "... the service escaped" "service running$SEEN, pid 7" "$T/status2.txt"
check_has "... the drift escaped" "drift bin/x$SEEN, y" "$T/status2.txt"

# A Mac host whose lume lists the hostile VM: host status names it escaped.
mkdir -p "$T/g/mac1" "$T/lume-mac1"
cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/mac1/"
t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/mac1'"
sh "$TOP/tests/sshd.sh" start "$T/g/mac1" 127.0.0.242 "$PORT" --path "$TOP/tests/lume-sim" \
	--env "LUME_SIM_DIR=$T/lume-mac1" || exit 1
cp "$LUME_SIM_DIR/g1.json" "$T/lume-mac1/g1.json"
printf '%s@127.0.0.242:%s\n' "$ME" "$PORT" >"$T/hosts"
lm host status --hosts "$T/hosts" --accept-new >"$T/host.txt" 2>&1
check "host status: no raw ESC, BEL, CR, DEL, C1 or non-UTF-8 byte" clean "$T/host.txt"
check_has "... the running VM's name escaped" '(evil\x1b]0;pwned\x07\x1b[1A\x1b[2K\rvm\xc2\x9b)' "$T/host.txt"
lm host status --hosts "$T/hosts" --json >"$T/host.json" 2>&1
check "host status --json parses, with the original name" py "$T/host.json" "
assert L[0]['running'] == [json.loads(r'\"$NAME\"')], L[0]"

# Errors that carry what a file said (stderr): a hosts file line holding escape sequences.
printf 'evil\033[2J@mac:port\033]0;pwned\007\n' >"$T/bad-hosts"
check_rc "a bad --hosts line is exit 2" 2 sh -c '"$@" 2>"$0"' "$T/err.txt" "$LM" status --hosts "$T/bad-hosts"
check "... its message holds no raw control byte" clean "$T/err.txt"
check_has "... and shows the line escaped" 'evil\x1b[2J@mac:port\x1b]0;pwned\x07' "$T/err.txt"

# report: llama-bench JSON whose labels hold escape sequences (what a guest's llama-bench wrote).
F=$TOP/tests/fixtures/llama-bench/tinyllama-m1-ultra
for a in stock shim; do
	f=$F/tiny-stock-minimal
	[ $a = stock ] || f=$F/tiny-safe-shim-10x-final
	sed 's/"model_type": "llama 1B Q4_K - Medium"/"model_type": "llama\\u001b[2J\\u001b]0;pwned\\u0007\\r\\u009b"/' \
		"$f.json" >"$T/$a.json"
	cp "$f.stderr" "$T/$a.stderr"
done
for form in "" --csv --markdown; do
	"$LM" report stock="$T/stock.json" shim="$T/shim.json" $form >"$T/report.txt" 2>&1
	check "report ${form:-(table)}: no raw ESC, BEL, CR, DEL, C1 or non-UTF-8 byte" clean "$T/report.txt"
	check_has "... the model type escaped" 'llama\x1b[2J\x1b]0;pwned\x07\r\xc2\x9b' "$T/report.txt"
done
"$LM" report stock="$T/stock.json" shim="$T/shim.json" --workload "$(printf 'w\033[2J')" >"$T/report.txt" 2>&1
check "report --workload from the command line is escaped too" clean "$T/report.txt"
"$LM" report stock="$T/stock.json" shim="$T/shim.json" --json >"$T/report.json" 2>&1
check "report --json parses, with the original model type" py "$T/report.json" "
assert L[0]['arms']['shim']['model_type'] == 'llama\x1b[2J\x1b]0;pwned\x07\r\x9b', L[0]"
t_done

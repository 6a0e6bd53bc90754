# Interrupts and streaming: SIGINT or SIGTERM once finishes the running VMs, records them and
# skips the rest (exit 130); twice abandons them; lines reach a pipe as each VM finishes; the
# live line on a real terminal (tmux). One guest is slow on demand: its sysctl waits for a gate.
# shellcheck disable=SC1091,SC2016,SC2034,SC2209 # sourced libs; single-quoted $ is for the inner sh; LM_EXEC=exec is read by lm (common.sh)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
t_san # the ASan build, LeakSanitizer on (tests/lib.sh)

# The slow guest's sysctl: says it was entered, then waits (at most 20 s) for $T/open.
mkdir -p "$T/slow"
cat >"$T/slow/sysctl" <<SH
#!/bin/sh
: >"$T/entered"
i=0; while [ ! -e "$T/open" ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
exec "$TOP/tests/guest-sim/bin/sysctl" "\$@"
SH
# Its shasum, which install.sh runs holding the lock before activation, waits for $T/open2 when
# $T/gate2 exists.
cat >"$T/slow/shasum" <<SH
#!/bin/sh
if [ -e "$T/gate2" ]; then
	: >"$T/entered2"
	i=0; while [ ! -e "$T/open2" ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
fi
exec "$TOP/tests/guest-sim/bin/shasum" "\$@"
SH
chmod +x "$T/slow/sysctl" "$T/slow/shasum"
guest slow 127.0.0.71 --path "$T/slow" || exit 1
guest f1 127.0.0.72 || exit 1
guest f2 127.0.0.73 || exit 1
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1
"$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz" >/dev/null || exit 1
A=$(cut -c1-64 "$T/a.tar.gz.sha256") B=$(cut -c1-64 "$T/b.tar.gz.sha256")
: >"$T/open"
check_rc "the host keys (status --accept-new)" 0 lm status slow f1 f2 --accept-new
validated "validate the guests' image version (llama-server requires it)" f1 --payload "$T/a.tar.gz"
validated "... and with payload B (a verdict covers one payload)" f1 --payload "$T/b.tar.gz"
rm -f "$T/open" "$T/entered"

# wait_for FILE: until FILE exists (at most 20 s).
wait_for() { i=0; while [ ! -e "$1" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done; [ -e "$1" ]; }
# wait_grep PATTERN FILE: until FILE holds PATTERN (at most 20 s).
wait_grep() { i=0; while ! grep -Eqs -- "$1" "$2" && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done; grep -Eqs -- "$1" "$2"; }
currents() { for g in slow f1 f2; do readlink "$(root $g)/current" 2>/dev/null || echo none; done; }

# Streaming: through a pipe, the fast VMs' objects arrive while the slow one still waits.
( LM_EXEC=exec; lm status slow f1 f2 --json --parallel 3 2>&1 | cat >"$T/stream.out" ) &
spid=$!
check "through a pipe, each VM's object arrives as it finishes" wait_grep '"vm":"f2"' "$T/stream.out"
check "... while the slow VM is still running" sh -c '! grep -q "\"vm\":\"slow\"" "$1" && ! grep -q summary "$1"' - "$T/stream.out"
: >"$T/open"
wait "$spid"
check_grep "... and then the slow one and the summary" '"summary":\{.*"total":3' "$T/stream.out"
rm -f "$T/open" "$T/entered"

# One interrupt (SIGTERM: a script's background job ignores SIGINT, and so does lume-metal): the slow VM, running, finishes and is recorded; f1 and f2 are never started.
( LM_EXEC=exec; lm deploy slow f1 f2 --payload "$T/a.tar.gz" --parallel 1 >"$T/int1.out" 2>"$T/int1.err" ) &
pid=$!
wait_for "$T/entered"
kill -TERM "$pid"
check "SIGTERM once: it says so at once" wait_grep 'interrupted: finishing 1 running VMs; press Ctrl-C again to abandon them' "$T/int1.err"
: >"$T/open"
wait "$pid"; rc=$?
check "... and exits 130" test "$rc" -eq 130
check_grep "... the running VM finished" '^slow +deployed' "$T/int1.out"
check_grep "... the others skipped as interrupted" '^f1 +skipped +interrupted' "$T/int1.out"
check_grep "... in the summary" '^# 3 VM\(s\):.* deployed 1.* skipped 2' "$T/int1.out"
check "... only the slow VM is on the new release" test "$(currents | tr '\n' ' ')" = "releases/$A none none "
ledger_text "$T/state" >"$T/ledger.txt"
check "... and it is recorded in the ledger" grep -q "\"payloadSha256\":[[:space:]]*\"$A\"" "$T/ledger.txt"
rm -f "$T/open" "$T/entered"

# With --json, the same in objects.
( LM_EXEC=exec; lm status slow f1 f2 --parallel 1 --json >"$T/term.out" 2>"$T/term.err" ) &
pid=$!
wait_for "$T/entered"
kill -TERM "$pid"
wait_grep interrupted "$T/term.err"
: >"$T/open"
wait "$pid"; rc=$?
check "with --json too: exit 130, the running VM reported, the rest skipped" sh -c '[ "$1" -eq 130 ] &&
	grep -q "\"vm\":\"slow\",\"state\":\"ok\"" "$2" && grep -q "\"vm\":\"f2\",\"state\":\"skipped\",\"message\":\"interrupted\"" "$2"' - "$rc" "$T/term.out"
rm -f "$T/open" "$T/entered"

# Twice: the running VM is abandoned at once (its session closes), the rest skipped, exit 130.
# twice NAME ENTERED ARGS...: lm ARGS in the background (NAME.out, NAME.err), SIGTERM once ENTERED
# exists, again once it said "interrupted"; rc gets its exit code.
twice() {
	tw=$1 te=$2
	shift 2
	( LM_EXEC=exec; lm "$@" >"$T/$tw.out" 2>"$T/$tw.err" ) &
	pid=$!
	wait_for "$te"
	kill -TERM "$pid"
	wait_grep interrupted "$T/$tw.err"
	kill -TERM "$pid"
	wait "$pid"; rc=$?
}
twice int2 "$T/entered" status slow f1 f2 --parallel 1
check "SIGTERM twice: exit 130 while the guest still waits" sh -c '[ "$1" -eq 130 ] && [ ! -e "$2" ]' - "$rc" "$T/open"
check_grep "... the running VM abandoned" '^slow +abandoned +interrupted twice' "$T/int2.out"
check_grep "... the others skipped, in the summary" '^# 3 VM\(s\):.* abandoned 1.* skipped 2' "$T/int2.out"
: >"$T/open"

# Twice while the guest's install runs (it holds the lock, before activation): the session closes.
: >"$T/open"; : >"$T/gate2"
twice int3 "$T/entered2" deploy slow --payload "$T/b.tar.gz"
check "mid-install, twice: exit 130, the VM abandoned" sh -c '[ "$1" -eq 130 ] && grep -q "^slow  *abandoned" "$2"' - "$rc" "$T/int3.out"
: >"$T/open2"
i=0; while [ -e "$(root slow)/.lock" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
check "... the guest's install ran to its end: the new release is current" test "$(readlink "$(root slow)/current")" = "releases/$B"
check "... and it let go of its lock" test ! -e "$(root slow)/.lock"
check "... and of its staging folder" sh -c '! ls -A "$1/staging" | grep -q .' - "$(root slow)"
# recs SHA: the deploy records of payload SHA in the ledger (its validate record is not one).
recs() {
	"$LM" ledger show --json --state "$T/state" | python3 -c '
import json, sys
print(sum(1 for d in json.load(sys.stdin) for r in d["records"] if r["kind"] == "deploy" and r.get("payloadSha256") == sys.argv[1]))' "$1"
}
check "... and it is not in the ledger" test "$(recs "$B")" -eq 0
rm -f "$T/gate2"
check_rc "the next deploy finds it current" 0 lm deploy slow --payload "$T/b.tar.gz"
check_grep "... and records it from the guest's install.json" '^slow +unchanged +this payload is already current; its install was not in the ledger.*recorded now' "$T/.out"
check "... one record" test "$(recs "$B")" -eq 1
check_rc "a deploy after that" 0 lm deploy slow --payload "$T/b.tar.gz"
check_grep "... is plainly unchanged" '^slow +unchanged +this payload is already current$' "$T/.out"
check "... and records nothing more" test "$(recs "$B")" -eq 1
rm -f "$T/gate2" "$T/open2" "$T/entered2"

# What a killed run leaves (a lock whose pid is dead, a staging folder) is cleaned and reported.
sh -c 'exit 0' &
dead=$!
wait "$dead"
mkdir -p "$(root f1)/.lock" "$(root f1)/staging/.install.4242/release"
echo "$dead" >"$(root f1)/.lock/pid"
: >"$T/open"
check_rc "a deploy onto a guest with a stale lock and staging folder" 0 lm deploy f1 --payload "$T/a.tar.gz"
check_grep "... reports what it cleaned" "^f1 +deployed +cleaned up after an earlier run: the lock of pid $dead, which is dead, staging/.install.4242\$" "$T/.out"
check "... and left neither behind" sh -c '[ ! -e "$1/.lock" ] && [ -z "$(ls -A "$1/staging")" ]' - "$(root f1)"
rm -f "$T/open"

# --dry-run prints the plan: per VM the current release, the new one and what would happen,
# then the waves. (Not an interrupt; it needs three guests, as this test has.)
: >"$T/open"
check_rc "deploy --dry-run --canary 1 --batch 1" 0 lm deploy slow f1 f2 --payload "$T/b.tar.gz" --dry-run --canary 1 --batch 1 --parallel 1
check_grep "... a VM already on it: unchanged" "^slow +unchanged +current ${B%"${B#????????????}"}, new ${B%"${B#????????????}"}: unchanged\$" "$T/.out"
check_grep "... a stock VM: would install" "^f2 +would install +current none, new ${B%"${B#????????????}"}: install: dry run" "$T/.out"
check_grep "... then the waves" '^#   canary: slow$' "$T/.out"
check_grep "... one VM each" '^#   wave: f2$' "$T/.out"
check_rc "... and in JSON" 0 lm deploy slow f1 f2 --payload "$T/b.tar.gz" --dry-run --canary 1 --batch 2 --json
check_grep "... the waves as one object" '^\{"waves":\[\["slow"\],\["f1","f2"\]\]\}$' "$T/.out"
check "... and nothing changed" test "$(currents | tr '\n' ' ')" = "releases/$B releases/$A none "
rm -f "$T/open"

# A real terminal (tmux): the live line at once, with VMs in progress and its time ticking;
# then Ctrl-C once and twice.
rm -f "$T/open" "$T/entered"
if command -v tmux >/dev/null 2>&1; then
	S=lm-int-$$
	TM="tmux -L $S -f /dev/null"
	t_defer "$TM kill-server 2>/dev/null"
	cat >"$T/run.sh" <<SH
exec "$LM" status slow f1 f2 --parallel 1 --lume "$TOP/tests/lume-sim/lume" --port $PORT -u $ME -i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state"
SH
	$TM new-session -d -s "$S" -x 120 -y 20 "sh '$T/run.sh'; echo EXIT=\$?; sleep 30"
	cap() { $TM capture-pane -p -t "$S" >"$T/pane" 2>/dev/null; }
	wcap() { i=0; while cap && ! grep -Eq -- "$1" "$T/pane" && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done; grep -Eq -- "$1" "$T/pane"; }
	check "tmux: the live line shows the VM in progress" wcap '^\[0/3\] \| 1 running \| [0-9]+s elapsed'
	cp "$T/pane" "$T/pane.live0"
	check "... and ticks every second" wcap '^\[0/3\] \| 1 running \| 2s elapsed'
	$TM send-keys -t "$S" C-c
	check "... Ctrl-C once: finishing the running VM" wcap 'interrupted: finishing 1 running VMs; press Ctrl-C again'
	cp "$T/pane" "$T/pane.int1"
	$TM send-keys -t "$S" C-c
	check "... Ctrl-C twice: abandoned, exit 130" wcap 'EXIT=130'
	check_grep "... the VM abandoned" '^slow +abandoned' "$T/pane"
	cp "$T/pane" "$T/pane.int2"
	if [ -n "${LM_KEEP_PANES:-}" ]; then cp "$T"/pane.* "$LM_KEEP_PANES/"; fi
else
	ok "# SKIP tmux is not installed"
fi
: >"$T/open"
t_done

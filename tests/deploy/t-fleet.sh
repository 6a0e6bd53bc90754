#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# A fleet of 8 real sshd guests in one run (11 VMs with the faulty ones, which --parallel 8 and 2
# queue), faults that each end in their own state, the controller killed mid-run (nothing torn, a
# rerun converges), rollback --all, and the live progress line on a TTY. (tests/deploy/t-scale.sh
# runs 30 at once; scripts/bench-fleet 64.)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
t_san # the ASan build, LeakSanitizer on (tests/lib.sh)

N=8
i=1
while [ $i -le $N ]; do
	guest "vm$i" "127.0.0.$((100 + i))" || exit 1
	i=$((i + 1))
done
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null &&
	"$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz" >/dev/null
A=$(cut -c1-64 "$T/a.tar.gz.sha256") B=$(cut -c1-64 "$T/b.tar.gz.sha256")
# currents: every guest's current release, one per line.
currents() {
	i=1
	while [ $i -le $N ]; do
		readlink "$(root "vm$i")/current" 2>/dev/null || echo none
		i=$((i + 1))
	done
}
all_on() { [ "$(currents | sort -u)" = "releases/$1" ]; }

# llama-server requires validation: the guests share one image version, validated once in the run.
check_rc "deploy --all: $N guests in one run (exit 0)" 0 lm deploy --all --payload "$T/a.tar.gz" --accept-new \
	--validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" --json
check_grep "... all $N deployed" "\"summary\":\\{\"deployed\":$N,\"total\":$N," "$T/.out"
check "... after one validation of their image version, not $N" test "$(grep -c '"meanKld"' "$T/.out")" -eq 1
check "... each with the payload current" all_on "$A"
check_rc "an unchanged rerun (exit 0)" 0 lm deploy --all --payload "$T/a.tar.gz" --json
cp "$T/.out" "$T/rerun.out"
check_grep "... all $N unchanged" "\"summary\":\\{\"unchanged\":$N,\"total\":$N," "$T/rerun.out"
check "... with nothing uploaded and one exec each" sh -c '[ "$(grep -c "\"bytesSent\":0,.*\"sshExecs\":1[,}]" "$1")" -eq "$2" ]' - "$T/rerun.out" "$N"

# Three more VMs: nothing listens at one, one hangs (its sshd stopped), one was rebuilt.
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" down running 127.0.0.140 true
guest hung 127.0.0.141 && guest rebuilt 127.0.0.142 || exit 1
lm status hung rebuilt --accept-new >/dev/null 2>&1
kill -STOP "$(cat "$T/g/hung/sshd.pid")"
t_defer "kill -CONT $(cat "$T/g/hung/sshd.pid") 2>/dev/null"
stop_guest rebuilt && sh "$TOP/tests/sshd.sh" start "$T/g/rebuilt" 127.0.0.142 "$PORT" --rekey
check_rc "status --all over all $((N + 3)), three of them faulty (exit 1)" 1 lm status --all --timeout 10 --parallel 8 --json
cp "$T/.out" "$T/faults.out"
check_grep "... the one with nothing listening is unreachable" '"vm":"down","state":"unreachable"' "$T/faults.out"
check_grep "... the hung one is timeout" '"vm":"hung","state":"timeout"' "$T/faults.out"
check_grep "... the rebuilt one is hostkey-mismatch" '"vm":"rebuilt","state":"hostkey-mismatch","message":"[^"]*HOST KEY CHANGED' "$T/faults.out"
check_grep "... while the other $N answer" "\"summary\":\\{.*\"ok\":$N,.*\"total\":$((N + 3))," "$T/faults.out"
validated "payload B validated on their image version (a verdict covers one payload)" vm1 --payload "$T/b.tar.gz"
# (--timeout 20: eight installs at once on two shared cores took more than 12 s each on a loaded
# machine, so some of the 32 guests it had then ended as timeout too.)
check_rc "a new payload to the same $((N + 3)) (exit 1)" 1 lm deploy --all --payload "$T/b.tar.gz" --timeout 20 --parallel 8 --json
cp "$T/.out" "$T/faults.out"
check "... the three in the same states" sh -c 'grep -q "\"vm\":\"down\",\"state\":\"unreachable\"" "$1" && grep -q "\"vm\":\"hung\",\"state\":\"timeout\"" "$1" &&
	grep -q "\"vm\":\"rebuilt\",\"state\":\"hostkey-mismatch\"" "$1"' - "$T/faults.out"
check_grep "... the other $N deployed" "\"summary\":\\{.*\"deployed\":$N,.*\"total\":$((N + 3))," "$T/faults.out"
check "... every one of them on the new payload" all_on "$B"
kill -CONT "$(cat "$T/g/hung/sshd.pid")"
rm "$LUME_SIM_DIR/down.json" "$LUME_SIM_DIR/hung.json" "$LUME_SIM_DIR/rebuilt.json"

# The controller killed while it deploys A back to the fleet, two at a time.
(
	# shellcheck disable=SC2034 # read by lm (common.sh)
	LM_EXEC="exec"
	lm deploy --all --payload "$T/a.tar.gz" --parallel 2 --json >"$T/killed.out" 2>&1
) &
pid=$!
n=0
while [ "$(currents | grep -c "$A")" -lt 2 ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
check "the controller is gone" sh -c '! kill -0 "$1" 2>/dev/null && ! grep -q "\"summary\"" "$2"' - "$pid" "$T/killed.out"
# What the killed run left running in the guests (an install it had started) finishes on its
# own and lets go of its lock. An exec the run had sent is in a guest's sshd until it starts:
# each connection is a child of the guest's sshd until the connection is gone.
in_flight() {
	for p in "$T"/g/vm*/sshd.pid; do pgrep -P "$(cat "$p")" && return 0; done
	pgrep -f -- "--payload $T/g/" || ls -d "$T"/g/vm*/home/Library/"Application Support"/lume-metal/.lock
}
n=0
while in_flight >/dev/null 2>&1 && [ $n -lt 150 ]; do
	sleep 0.1; n=$((n + 1))
done
check "the killed run was mid-fleet: some guests on A, some still on B" sh -c \
	'[ "$(echo "$1" | grep -c "$2")" -ge 1 ] && [ "$(echo "$1" | grep -c "$3")" -ge 1 ]' - "$(currents)" "$A" "$B"
check "... every guest on its old release or its new one" sh -c \
	'! echo "$1" | grep -Ev "^releases/($2|$3)$"' - "$(currents)" "$A" "$B"
check "... each current release intact" sh -c 'for d in "$@"; do (cd "$d/current" && sha256sum -c --quiet SHA256SUMS) || exit 1; done' - \
	"$(root vm1)" "$(root vm2)" "$(root vm$((N / 2)))" "$(root "vm$N")"
check "... the ledger still reads, every record of it" sh -c '"$1" ledger show --json --state "$2" | python3 -m json.tool >/dev/null' - "$LM" "$T/state"
check_rc "a rerun converges (exit 0)" 0 lm deploy --all --payload "$T/a.tar.gz" --json
check_grep "... every VM deployed or unchanged" "\"summary\":\\{(\"(deployed|unchanged)\":[0-9]+,){1,2}\"total\":$N," "$T/.out"
check "... all on A" all_on "$A"

check_rc "rollback --all (exit 0)" 0 lm rollback --all --json
check_grep "... every VM rolled back" "\"summary\":\\{\"rolled-back\":$N,\"total\":$N," "$T/.out"
check "... to its previous release, B" all_on "$B"

# On a TTY: a live progress line beneath one line per finished VM.
check "on a TTY, status shows live progress" script -qec "'$LM' status vm1 vm2 vm3 vm4 --lume '$TOP/tests/lume-sim/lume' --port $PORT \
	-u $ME -i '$T/id_ed25519' --known-hosts '$T/known_hosts' --state '$T/state' --parallel 2" "$T/tty.out"
check_grep "... a progress line with done/total, states and time" '\[[2-3]/4\] ok [2-3] \| [0-2] running \| [0-9]+s elapsed, ETA [0-9]+s' "$T/tty.out"
check_grep "... rewritten in place" "$(printf '\r\033')\\[K" "$T/tty.out"
check_grep "... and the summary by image version" '^#   unknown \(no digest\) \(macOS 26\.5\.2 25F84\) +ok +4' "$T/tty.out"
t_done

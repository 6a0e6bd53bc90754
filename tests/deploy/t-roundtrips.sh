#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# Each deploy result carries "roundTrips" {"total","afterHandshake"} (docs/interfaces.md): a
# turn is the controller having sent what asks for an answer and then waited for the guest's.
# Behind the delay proxy (scripts/bench-fleet.d/netdelay.c, 25 ms each way) every answer comes
# a round trip later, so the counts are exact: an unchanged rerun is one turn after the
# handshake (the exec, whose answer is the facts), a first deploy at most three (the exec, the
# install's answer, and any wait for the guest's SSH window during the upload). No timed asserts.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
ND=$TOP/build/netdelay
[ -x "$ND" ] || make -C "$TOP" -s build/netdelay >/dev/null
guest rt1 127.0.0.51 || exit 1
# The VM is reached at the proxy's address; its host key is known under that address too.
"$ND" -d 25 -l "$T/nd.log" "127.0.0.52:$PORT=127.0.0.51:$PORT" >"$T/nd.out" 2>"$T/nd.err" &
echo $! >"$T/nd.pid"
t_defer 'kill "$(cat "$T/nd.pid")" 2>/dev/null'
n=0
while ! grep -q '^netdelay: ready' "$T/nd.out" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" rt1 running 127.0.0.52 true
printf '[127.0.0.52]:%s %s\n' "$PORT" "$(cut -d' ' -f1,2 "$T/g/rt1/host_ed25519.pub")" >"$T/known_hosts"
check_rc "build" 0 "$LM" build --target linux-sim -o "$T/p.tar.gz"
validated "validate the image version (llama-server requires it), through the proxy" rt1 --payload "$T/p.tar.gz"

# rt NAME FILE: the roundTrips object's two numbers, "total after", from a deploy's JSON.
rt() { sed -n 's/.*"roundTrips":{"total":\([0-9]*\),"afterHandshake":\([0-9]*\)}.*/\1 \2/p' "$1" | head -n 1; }
check_rc "first deploy through the proxy" 0 lm deploy rt1 --payload "$T/p.tar.gz" --json
cp "$T/.out" "$T/first"
check_grep "... its result carries roundTrips, total and afterHandshake" '"roundTrips":\{"total":[0-9]+,"afterHandshake":[0-9]+\}' "$T/first"
# shellcheck disable=SC2046 # two numbers
set -- $(rt "$T/first")
check "... at most 3 turns after the handshake (got ${2:-none}), and the handshake's own before them (total ${1:-none})" \
	sh -c '[ "$2" -ge 1 ] && [ "$2" -le 3 ] && [ "$1" -gt "$2" ]' - "${1:-0}" "${2:-99}"
first_total=${1:-0} first_after=${2:-0}
# The handshake: TCP connect, banners, key exchange 2, service request, public key, channel open;
# no "none" userauth asking for the server's methods (8 turns with it).
check "... a handshake of at most 7 turns, no \"none\" userauth (got $((first_total - first_after)))" \
	test "$((first_total - first_after))" -le 7
: >>"$T/nd.log"; n0=$(wc -l <"$T/nd.log")
check_rc "unchanged rerun through the proxy" 0 lm deploy rt1 --payload "$T/p.tar.gz" --json
cp "$T/.out" "$T/rerun"
check_grep "... unchanged" '"state":"unchanged"' "$T/rerun"
# shellcheck disable=SC2046 # two numbers
set -- $(rt "$T/rerun")
check "... exactly 1 turn after the handshake (got ${2:-none})" test "${2:-x}" = 1
# (Within one turn: whether the guest's KEXINIT reaches the controller with its banner or after
# the controller sent its own is the scheduler's choice, on a loaded machine either way; a run
# counted 6 turns on the first connection and 7 on the rerun's.)
check "... and a handshake as long as the first deploy's, within a turn (total ${1:-none}; first ${first_total} minus its extra turns)" \
	sh -c 'd=$(($1 - 1 - $2)); [ "$d" -ge -1 ] && [ "$d" -le 1 ]' - "${1:-99}" "$((first_total - first_after))"
# The proxy counts a change of direction (client, then guest) as a turn, without the TCP
# connect: on the rerun's connection it sees the same turns the controller counted.
# (the proxy logs a connection once both ends closed it: wait for that line, not for a while)
n=0
while [ "$(wc -l <"$T/nd.log")" -le "$n0" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
check "the proxy's count of the rerun's connection is the controller's total minus the TCP connect" \
	test "$(tail -n 1 "$T/nd.log" | sed -n 's/.*turns=\([0-9]*\)$/\1/p')" = "$((${1:-0} - 1))"

# The handshake gate (plugin/net/ssh_connect.c: at most 8 connections per core, 16 to 64, in the
# handshake at once) holds a place only while a connection computes or sends, not across a
# round trip: the gate's size and 4 more VMs at once, all on rt1's sshd through a second proxy
# 300 ms each way, each waited for a place less than a round trip (gateWaitMs, beside
# roundTrips). Before, a connection kept its place through its handshake's 7 waits (4.2 s here),
# and the last 4 waited until the first holders counted as stalled, 3 s.
cores=$(nproc)
K=$((cores < 2 ? 16 : cores > 8 ? 64 : cores * 8))
K=$((K + 4))
pairs="" names="" i=1
while [ $i -le $K ]; do
	pairs="$pairs 127.0.4.$i:$PORT=127.0.0.51:$PORT"
	names="$names gw$i"
	sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" "gw$i" running "127.0.4.$i" true
	printf '[127.0.4.%s]:%s %s\n' "$i" "$PORT" "$(cut -d' ' -f1,2 "$T/g/rt1/host_ed25519.pub")" >>"$T/known_hosts"
	i=$((i + 1))
done
# shellcheck disable=SC2086 # one pair per word
"$ND" -d 300 $pairs >"$T/nd2.out" 2>"$T/nd2.err" &
echo $! >"$T/nd2.pid"
t_defer 'kill "$(cat "$T/nd2.pid")" 2>/dev/null'
n=0
while ! grep -q '^netdelay: ready' "$T/nd2.out" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
# shellcheck disable=SC2086 # one VM per word
check_rc "status of $K VMs at once, RTT 600 ms" 0 lm status $names --parallel "$K" --json
cp "$T/.out" "$T/gate"
check "... every one with gateWaitMs" test "$(grep -c '"roundTrips":{[^}]*},"gateWaitMs":[0-9]' "$T/gate")" -eq "$K"
max=$(sed -n 's/.*"gateWaitMs":\([0-9]*\).*/\1/p' "$T/gate" | sort -n | tail -n 1)
check "... each waited for the gate less than a round trip (the most: ${max:-none} ms)" test "${max:-99999}" -lt 600
t_done

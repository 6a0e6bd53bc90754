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
check_rc "unchanged rerun through the proxy" 0 lm deploy rt1 --payload "$T/p.tar.gz" --json
cp "$T/.out" "$T/rerun"
check_grep "... unchanged" '"state":"unchanged"' "$T/rerun"
# shellcheck disable=SC2046 # two numbers
set -- $(rt "$T/rerun")
check "... exactly 1 turn after the handshake (got ${2:-none})" test "${2:-x}" = 1
check "... and a handshake as long as the first deploy's (total ${1:-none} = first ${first_total} minus its extra turns)" \
	test "$((${1:-0} - 1))" -eq "$((first_total - first_after))"
# The proxy counts a change of direction (client, then guest) as a turn, without the TCP
# connect: on the rerun's connection it sees the same turns the controller counted.
sleep 0.5
check "the proxy's count of the rerun's connection is the controller's total minus the TCP connect" \
	test "$(tail -n 1 "$T/nd.log" | sed -n 's/.*turns=\([0-9]*\)$/\1/p')" = "$((${1:-0} - 1))"
t_done

#!/bin/sh
# shellcheck disable=SC1091 # the sourced lib
# The local `lume` as the tool runs it, through fake lumes on PATH: one that fills its stderr
# before it prints the VM, one that never ends. Each run is under timeout(1), so a tool that
# hangs fails here instead of hanging the suite.
. "$(dirname "$0")/../lib.sh"

LUME_SIM_DIR=$T/lume
export LUME_SIM_DIR
mkdir -p "$LUME_SIM_DIR" "$T/bin"
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" vm1 stopped null null
# lm_with BODY CMD...: lume-metal CMD... with `lume` on PATH a sh script of BODY.
lm_with() {
	printf '#!/bin/sh\n%s\n' "$1" >"$T/bin/lume" && chmod +x "$T/bin/lume"
	shift
	PATH="$T/bin:$PATH" timeout 30 "$LM" "$@" --known-hosts "$T/known_hosts" --state "$T/state"
}

check_rc "a lume writing 200 KiB to stderr before its JSON: status ends (exit 1)" 1 \
	lm_with "head -c 204800 /dev/zero | tr '\\\\0' x >&2; exec '$TOP/tests/lume-sim/lume' \"\$@\"" status vm1
check_grep "... with the VM's state from lume" 'VM vm1 is stopped' "$T/.out"

start=$(date +%s)
check_rc "a lume get that never ends: status --timeout 2 fails (exit 1)" 1 \
	lm_with 'echo "[2026-08-09T12:00:00Z] INFO: starting"; sleep 4322' status vm1 --timeout 2
took=$(($(date +%s) - start))
check_grep "... saying it timed out after 2 s" 'VM vm1: lume get: .*lume timed out after 2 s' "$T/.out"
check "... within seconds of it (took ${took} s)" test "$took" -lt 15
check "... and its child is killed with it" sh -c '! ps -eo args | grep -q "^sleep 4322$"'
t_done

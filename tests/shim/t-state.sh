#!/bin/sh
# The proof the shim leaves in a process: with LUME_METAL_STATE_DIR set (the LaunchAgent sets
# it), DIR/<pid> holds one JSON object saying whether the shim is active there, with its values,
# or why it stays stock (a bad value, a process not listed); written by rename, so no temporary
# file is left; nothing at all when the variable is unset or empty.
# shellcheck disable=SC1091 # sourced files are checked on their own
. "$(dirname "$0")/../lib.sh"
# shellcheck disable=SC2034 # read by common.sh
LM_SHIM_LEAKS=0
. "$TOP/tests/shim/common.sh"

# state NAME DIR: DIR holds exactly one file, named by a pid, whose "pid" is that name; it is
# copied to $T/NAME.state.
state() {
	s_files=$(ls -A "$2" 2>/dev/null)
	case $s_files in
	'' | *[!0-9]*) not_ok "$1: one file named by a pid in the state folder (found: $s_files)"; return 1 ;;
	esac
	cp "$2/$s_files" "$T/$1.state"
	has "$1: one file named by a pid, the pid inside" "$T/$1.state" "{\"pid\":$s_files,"
}

mkdir "$T/active"
sprobe active LUME_METAL_STATE_DIR="$T/active" LUME_METAL_APPLE_FAMILY_MAX=1009 \
	LUME_METAL_PROCESSES=lume-metal-probe
rc_is "active: the probe exits 0" active 0
if state active "$T/active"; then
	has "active: active, the process and the values" "$T/active.state" \
		'"process":"lume-metal-probe","active":true,"appleFamilyMax":1009,"maxThreadgroupMemory":65536,"recommendedWorkingSetSize":null,"deviceClass":"' '"reason":null}'
fi

mkdir "$T/bad"
sprobe bad LUME_METAL_STATE_DIR="$T/bad" LUME_METAL_APPLE_FAMILY_MAX="10\"9\\\\"
if state bad "$T/bad"; then
	has "a bad value: stays stock with the reason, quotes and backslashes made harmless" "$T/bad.state" \
		'"process":"lume-metal-probe","active":false,"reason":"LUME_METAL_APPLE_FAMILY_MAX=?10?9??? is not a number"}'
fi

mkdir "$T/other"
sprobe other LUME_METAL_STATE_DIR="$T/other" LUME_METAL_APPLE_FAMILY_MAX=1009 LUME_METAL_PROCESSES=llama-server
if state other "$T/other"; then
	has "a process not listed: stays stock and says so" "$T/other.state" \
		'"active":false,"reason":"process lume-metal-probe is not in LUME_METAL_PROCESSES"}'
fi

# The folder is made when missing (one level), and a file already there is replaced whole.
sprobe made LUME_METAL_STATE_DIR="$T/made" LUME_METAL_APPLE_FAMILY_MAX=1009
state made "$T/made" && has "a missing folder is made" "$T/made.state" '"active":true'

mkdir "$T/none"
sprobe unset LUME_METAL_APPLE_FAMILY_MAX=1009
sprobe empty LUME_METAL_STATE_DIR= LUME_METAL_APPLE_FAMILY_MAX=1009
is_eq() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1 (got '$2', want '$3')"; fi; }
n=0
for f in "$T/none"/* "$T"/[0-9]*; do [ ! -e "$f" ] || n=$((n + 1)); done
is_eq "unset or empty: nothing written" "$n" 0
t_done

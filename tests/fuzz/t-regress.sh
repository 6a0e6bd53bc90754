#!/bin/sh
# shellcheck disable=SC1091 # sourced lib
# Every fuzz harness over its corpus (tests/fuzz/NAME/corpus/) in build/fuzz/regress, the
# harnesses built with ASan and UBSan (`make fuzz-regress`, part of `make test`): an input that
# once crashed stays fixed. One line per harness; its files under crashes/ are not read here.
. "$(dirname "$0")/../lib.sh"
R=$TOP/build/fuzz/regress
export TMPDIR="$T"
for dir in "$TOP"/tests/fuzz/*/corpus; do
	name=$(basename "$(dirname "$dir")")
	set -- "$dir"/*
	[ -f "$1" ] || { not_ok "fuzz $name: an empty corpus"; continue; }
	if [ ! -x "$R" ]; then
		not_ok "fuzz $name over $# inputs ($R is not built: make fuzz-regress)"
	elif "$R" "$name" "$@" >"$T/out" 2>&1; then
		ok "fuzz $name over $# inputs"
	else
		not_ok "fuzz $name over $# inputs"
		grep -v '^# ' "$T/out" | sed '/^Shadow bytes/,$d' | head -n 40 | sed 's/^/#   /'
		grep '^# ' "$T/out" | tail -n 1 | sed 's/^# /#   the input: /'
	fi
done
t_done

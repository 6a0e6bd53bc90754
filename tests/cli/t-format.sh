#!/bin/sh
# shellcheck disable=SC1091 # sourced lib
# --format json|text, as Lume spells it, with --json its alias; inventory accepts --json.
. "$(dirname "$0")/../lib.sh"
cd "$T" || exit 1
mkdir -p "$T/lume"
A() { LUME_SIM_DIR=$T/lume "$LM" "$@" --all --lume "$TOP/tests/lume-sim/lume" --state "$T/state" 2>"$T/err"; }
check_rc "status --all --format json (exit 0)" 0 A status --format json
check_grep "... prints the JSON summary" '^\{"summary":\{"total":0' "$T/.out"
check_rc "status --all --format text (exit 0)" 0 A status --format text
check_grep "... prints the text summary" '^# 0 VM\(s\):' "$T/.out"
check_rc "--format yaml is an input error (exit 2)" 2 A status --format yaml
check_grep "... naming the value and what status writes" 'status: --format yaml: not json, text, junit or openmetrics' "$T/err"
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1
check_rc "verify --format json (exit 0)" 0 "$LM" verify "$T/a.tar.gz" --format json
check_grep "... prints one JSON object" '^\{"path":.*"sha256":"[0-9a-f]{64}"' "$T/.out"
check_rc "build --format json (exit 0)" 0 "$LM" build --target linux-sim -o "$T/b.tar.gz" --format json
check_grep "... prints one JSON object" '^\{"path":.*"sha256":"[0-9a-f]{64}"' "$T/.out"
printf 'mac-1\n' >"$T/hosts"
check_rc "inventory --json (exit 0)" 0 "$LM" inventory --hosts "$T/hosts" --list --json
check_grep "... prints the inventory" '"mac_hosts":\{"hosts":\["mac-1"\]' "$T/.out"
check_rc "inventory --format text is refused (exit 2)" 2 "$LM" inventory --hosts "$T/hosts" --format text
t_done

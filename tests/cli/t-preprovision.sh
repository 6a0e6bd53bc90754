#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced lib; single-quoted $ is for the inner sh
# scripts/lume-preprovision: its own usage for -h and --help, no "ready" claim on --dry-run, and a
# VM name beginning with '-' refused. lume-metal is a stand-in that logs its arguments.
. "$(dirname "$0")/../lib.sh"
P="$TOP/scripts/lume-preprovision"
printf '#!/bin/sh\nprintf "%%s\\n" "$@" >"%s/args"\nexit 0\n' "$T" >"$T/lm"
chmod +x "$T/lm"
export LUME_METAL="$T/lm"
for h in -h --help; do
	check_rc "$h exits 0" 0 sh "$P" "$h"
	check_grep "... with its own usage and examples" '^usage: lume-preprovision VM .*' "$T/.out"
	check "... and runs no deploy" test ! -e "$T/args"
done
check_rc "--dry-run: exit 0" 0 sh "$P" tahoe-1 --dry-run
cp "$T/.out" "$T/dry.out"
check_has "... says it was a dry run" "dry run, nothing deployed" "$T/dry.out"
check "... never says the VM is ready" sh -c '! grep -q "ready with the shim active" "$1"' - "$T/dry.out"
rm -f "$T/args"
check_rc "a VM name beginning with '-' is refused (exit 2)" 2 sh "$P" --all
check_has "... saying why" "cannot begin with '-'" "$T/.out"
check "... and runs no deploy" test ! -e "$T/args"
check_rc "a plain deploy: exit 0, ready" 0 sh "$P" tahoe-1
check_has "... says it is ready" "tahoe-1 is ready with the shim active" "$T/.out"
check "... without --validate-workload" sh -c '! grep -q -- --validate-workload "$1"' - "$T/args"
check_rc "MODEL=PATH: exit 0" 0 env MODEL="/Users/lume/models/m 1.gguf" sh "$P" tahoe-1 --dry-run
check "... deploys with --validate-workload --model PATH (one argument)" sh -c \
	'printf "deploy\ntahoe-1\n--wait\n300\n--validate-workload\n--model\n/Users/lume/models/m 1.gguf\n--dry-run\n" | cmp - "$1"' - "$T/args"
t_done

#!/bin/sh
# shellcheck disable=SC1091 # sourced lib
# Every `help CMD` has examples and wraps at 80 columns; CMD -h is the same text.
. "$(dirname "$0")/../lib.sh"
"$LM" --help >"$T/main" 2>&1
cmds=$(sed -n 's/^  \([a-z][a-z]*\) .*/\1/p' "$T/main")
check "the command list is read from --help" test -n "$cmds"
for c in $cmds; do
	"$LM" help "$c" >"$T/$c" 2>&1
	check_grep "help $c has examples" '^Examples:$' "$T/$c"
	check "help $c wraps at 80 columns" awk 'length > 80 { print; bad = 1 } END { exit bad }' "$T/$c"
done
"$LM" deploy -h >"$T/deploy-h" 2>&1
check "deploy -h prints the same help" cmp -s "$T/deploy" "$T/deploy-h"
t_done

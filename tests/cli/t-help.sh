#!/bin/sh
# shellcheck disable=SC1091 # sourced lib
# Every `help CMD` has examples and wraps at 80 columns; CMD -h is the same text. Each command's
# option table (its cmd_<name>.c, `help --flags CMD`) and its help agree: every row is named in
# the help, and every long flag the help shows is a row.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/install/helpflags.sh"
"$LM" --help >"$T/main" 2>&1
cmds=$(sed -n 's/^  \([a-z][a-z]*\) .*/\1/p' "$T/main")
check "the command list is read from --help" test -n "$cmds"
for c in $cmds; do
	"$LM" help "$c" >"$T/$c" 2>&1
	check_grep "help $c has examples" '^Examples:$' "$T/$c"
	check "help $c wraps at 80 columns" awk 'length > 80 { print; bad = 1 } END { exit bad }' "$T/$c"
	table_flags "$c" >"$T/$c.table"
	unnamed=$(unmatched "$T/$c" '' '([^a-z0-9-]|$)' <"$T/$c.table")
	unrowed=$(help_flags "$c" | grep -- '^--' | unmatched "$T/$c.table" '^' '$')
	if [ -s "$T/$c.table" ] && [ -z "$unnamed$unrowed" ]; then ok "help $c and its $(wc -l <"$T/$c.table") option rows agree"
	else not_ok "help $c and its option table: rows not in the help:${unnamed:- none}; help flags with no row:${unrowed:- none}"; fi
done
check_rc "help --flags names an unknown command as help does" 2 "$LM" help --flags nosuch
"$LM" deploy -h >"$T/deploy-h" 2>&1
check "deploy -h prints the same help" cmp -s "$T/deploy" "$T/deploy-h"
t_done

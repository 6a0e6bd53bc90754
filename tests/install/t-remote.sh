#!/bin/sh
# Remote commands are argv, never text: ssh_exec and ssh_chan_open take only a remote_cmd, whose
# struct only net/rcmd.c knows (rcmd_argv, rcmd_script); nothing else opens an exec channel;
# one function quotes; and no C file of plugin/ holds shell code (it lives in guest-scripts/,
# embedded by the build) or hands a shell text with -c. Each check is also run on a copy of the
# tree with one fault, so it can fail.
# shellcheck disable=SC1091 # sourced lib
. "$(dirname "$0")/../lib.sh"

# protos DIR: the ssh.h prototypes of ssh_exec and ssh_chan_open that take anything but a
# const remote_cmd * as the command.
protos() {
	awk '/^int ssh_(exec|chan_open)\(/ { l = $0; while (l !~ /;/ && (getline x) > 0) l = l " " x; print l }' \
	    "$1/plugin/net/ssh.h" >"$T/protos.lines"
	[ "$(wc -l <"$T/protos.lines")" -eq 2 ] || echo "ssh.h declares ssh_exec and ssh_chan_open: not both found"
	grep -v 'const remote_cmd \*cmd' "$T/protos.lines"
}

# builders DIR: the files other than net/rcmd.c that define struct remote_cmd (and so could
# make one from text), or open an exec channel themselves (anything but ssh_chan.c's one call, which
# runs rcmd_text).
builders() {
	grep -rln --include='*.[ch]' 'struct remote_cmd *{' "$1/plugin" "$1/tests" | grep -v '/plugin/net/rcmd\.c$'
	grep -rn --include='*.[ch]' 'libssh2_channel_exec\|libssh2_channel_process_startup' "$1/plugin" |
	    grep -v '/plugin/net/ssh_chan\.c:.*libssh2_channel_exec(h->ch, rcmd_text(cmd))'
}

# quoters DIR: C lines outside net/rcmd.c that escape a single quote for sh ('\''), a second
# quoting function.
quoters() {
	grep -rn --include='*.[ch]' "'\\\\\\\\''" "$1/plugin" | grep -v '/plugin/net/rcmd\.c:'
}

# pasted DIR: C lines of plugin/ (outside net/rcmd.c) that hand sh a text with -c, or string
# literals that read as shell: a positional parameter, $( or ${, or a quoted expansion.
pasted() {
	grep -rnE --include='*.[ch]' '"sh", *"-c"' "$1/plugin" | grep -v '/plugin/net/rcmd\.c:'
	grep -rnE --include='*.[ch]' '"([^"\\]|\\.)*(\$[0-9@#?(]|\$\{|\\"\$)([^"\\]|\\.)*"' "$1/plugin" |
	    grep -v '/plugin/net/rcmd\.c:'
}

for c in protos builders quoters pasted; do
	"$c" "$TOP" >"$T/$c"
	if [ ! -s "$T/$c" ]; then ok "$c: none in the tree"
	else not_ok "$c: found"; sed 's/^/#   /' "$T/$c"; fi
done
check "the checks saw the tree: the builder is there" \
    grep -q 'struct remote_cmd {' "$TOP/plugin/net/rcmd.c"
check "guest-scripts/ holds the scripts" test "$(find "$TOP/guest-scripts" -name '*.sh' | wc -l)" -ge 10

# The checks can fail: a copy with each fault.
mkdir "$T/bad"
cp -R "$TOP/plugin" "$T/bad/"
mkdir "$T/bad/tests"
sed 's/const remote_cmd \*cmd, const void/const char *cmd, const void/' "$TOP/plugin/net/ssh.h" >"$T/bad/plugin/net/ssh.h"
protos "$T/bad" >"$T/bad.protos"
check_has "an ssh_exec that takes a char * is found" 'ssh_exec(ssh_conn *c, const char *cmd' "$T/bad.protos"
printf 'struct remote_cmd {\n\tchar *text;\n};\n' >"$T/bad/tests/forge.c"
printf '\tlibssh2_channel_process_startup(ch, "exec", 4, text, n);\n' >>"$T/bad/plugin/net/relay.c"
builders "$T/bad" >"$T/bad.builders"
check_grep "a second definition of struct remote_cmd is found" 'tests/forge.c' "$T/bad.builders"
check_grep "... and an exec channel opened outside ssh_exec" 'net/relay.c:.*libssh2_channel_process_startup' \
    "$T/bad.builders"
printf '\tlm_buf_add(out, "'"'\\\\\\\\''"'", 4);\n' >>"$T/bad/plugin/ops/status.c"
quoters "$T/bad" >"$T/bad.quoters"
check_grep "a second quoting function is found" 'ops/status.c' "$T/bad.quoters"
printf 'static const char *const a[] = {"sh", "-c", text, NULL};\n' >>"$T/bad/plugin/ops/probe.c"
# shellcheck disable=SC2016 # the $1 is C text
printf 'static const char s[] = "cd \\"$1\\" || exit 1\\n";\n' >>"$T/bad/plugin/ops/rollback.c"
pasted "$T/bad" >"$T/bad.pasted"
check_grep "a text handed to sh -c is found" 'ops/probe.c:.*"sh", "-c"' "$T/bad.pasted"
check_grep "... and shell code in a C literal" 'ops/rollback.c:.*exit 1' "$T/bad.pasted"
t_done

#!/bin/sh
# shellcheck disable=SC1091,SC2016,SC2034,SC2209 # sourced libs; single-quoted $ is for the inner sh; LM_EXEC=exec is read by lm (common.sh)
# --order: the lines of a run over many VMs come as each VM finishes (the default), or with
# --order input in the order the VMs were given, each as soon as every VM before it is printed;
# the JSON summary lists the VMs in input order. One guest is slow on demand (its sysctl waits
# for a gate, as t-interrupt's), so the VMs finish in another order than given.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

mkdir -p "$T/slow"
cat >"$T/slow/sysctl" <<SH
#!/bin/sh
i=0; while [ ! -e "$T/open" ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
exec "$TOP/tests/guest-sim/bin/sysctl" "\$@"
SH
chmod +x "$T/slow/sysctl"
guest f1 127.0.0.171 && guest slow 127.0.0.172 --path "$T/slow" && guest f2 127.0.0.173 --loglevel INFO || exit 1
: >"$T/open"
check_rc "the host keys (status --accept-new)" 0 lm status f1 slow f2 --accept-new
rm -f "$T/open"

# wait_grep PATTERN FILE: until FILE holds PATTERN (at most 20 s).
wait_grep() { i=0; while ! grep -Eqs -- "$1" "$2" && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done; grep -Eqs -- "$1" "$2"; }
# ends: the sessions f2's sshd has seen end; wait_ends N: until they are N (at most 20 s).
ends() { grep -c 'Disconnected from user' "$T/g/f2/sshd.log"; }
wait_ends() { i=0; while [ "$(ends)" -lt "$1" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done; [ "$(ends)" -ge "$1" ]; }
# names FILE: the VM of each result line (a JSON object or a text line), in order.
names() { sed -n -e 's/^{"vm":"\([^"]*\)".*/\1/p' -e 's/^\([a-z0-9]*\) \{1,\}ok .*/\1/p' "$1" | tr '\n' ' '; }
# run NAME ARGS...: status f1 slow f2 --parallel 3 ARGS in the background, into $T/NAME.out.
run() {
	r_n=$1
	shift
	(
		LM_EXEC=exec
		lm status f1 slow f2 --parallel 3 "$@" >"$T/$r_n.out" 2>"$T/$r_n.err"
	) &
	pid=$!
}
# finish: opens the gate and waits for the run; its exit code in $rc.
finish() { : >"$T/open"; wait "$pid"; rc=$?; rm -f "$T/open"; }

for fmt in json text; do
	f1='"vm":"f1"' f2='"vm":"f2"'
	[ $fmt = json ] || f1='^f1 ' f2='^f2 '
	set -- --format $fmt
	run finish-$fmt "$@"
	check "$fmt, by default: f2's line arrives while slow is still running" wait_grep "$f2" "$T/finish-$fmt.out"
	finish
	check "... exit 0" test "$rc" -eq 0
	check "... slow's line last: the finishing order" test "$(names "$T/finish-$fmt.out" | cut -d' ' -f3)" = slow

	e=$(ends)
	run input-$fmt "$@" --order input
	check "$fmt, --order input: f1's line arrives while slow is still running (streamed)" wait_grep "$f1" "$T/input-$fmt.out"
	check "... f2 finishes too" wait_ends $((e + 1))
	check "... but its line waits for slow's" sh -c '! grep -Eq -- "$1" "$2"' - "$f2" "$T/input-$fmt.out"
	finish
	check "... exit 0" test "$rc" -eq 0
	check "... every line in the order given" test "$(names "$T/input-$fmt.out")" = "f1 slow f2 "
done
# A second interrupt while slow runs: the lines held for it are printed with it, abandoned, in input order.
e=$(ends)
run twice --json --order input
wait_grep '"vm":"f1"' "$T/twice.out" && wait_ends $((e + 1))
kill -TERM "$pid"
wait_grep interrupted "$T/twice.err"
kill -TERM "$pid"
wait "$pid"
rc=$?
check "--order input, interrupted twice while slow runs: exit 130" test "$rc" -eq 130
# (f2 is ok, or abandoned if its sshd saw it end but the controller had not settled it yet.)
check "... slow abandoned in its place, and f2's line, held for it, printed after it" sh -c '
	sed -n "s/^{\"vm\":\"\([^\"]*\)\",\"state\":\"\([a-z-]*\)\".*/\1:\2/p" "$1" | tr "\n" " " |
	grep -Eqx "f1:ok slow:abandoned f2:(ok|abandoned) "' - "$T/twice.out"
check_has "... then the summary" '"order":["f1","slow","f2"]}}' "$T/twice.out"
: >"$T/open"

check_has "the JSON summary lists the VMs in input order, finishing order or not" \
	'"order":["f1","slow","f2"]}}' "$T/finish-json.out"
check_has "... and with --order input" '"order":["f1","slow","f2"]}}' "$T/input-json.out"
check_rc "--order finish is the default, said explicitly (exit 0)" 0 lm status f2 f1 --order finish --json
check_has "... the summary's order is the order given" '"order":["f2","f1"]}}' "$T/.out"
check_rc "--order sideways is a usage error (exit 2)" 2 lm status f1 --order sideways
check_grep "... naming the value" 'status: --order sideways: not finish or input' "$T/.out"
t_done

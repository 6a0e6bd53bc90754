#!/bin/sh
# shellcheck disable=SC1091,SC2016,SC3045 # sourced libs; single-quoted $ is for the inner sh; dash has ulimit -n, -S and -H
# A fleet against a hostile network and a short controller: many guests that accept TCP and
# never send an SSH banner (each must cost its own --timeout, not stretch everyone's), and a
# controller short of file descriptors (macOS starts a process with 256): a descriptor this
# process lacks is never a VM's fault.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
t_san # the ASan build, LeakSanitizer on (tests/lib.sh)

N=160
# One process listening on N ports of 127.0.0.61: it accepts every connection, holds it, and
# never writes a byte. Bounded: it exits after 180 s whatever happens.
perl -MIO::Socket::INET -MIO::Select -e '
	my ($base, $n) = @ARGV; my $sel = IO::Select->new; my @held;
	for my $p ($base .. $base + $n - 1) {
		my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.61:$p", Listen => 64, ReuseAddr => 1)
			or die "listen $p: $!";
		$sel->add($s);
	}
	$| = 1; print "ready\n";
	my $end = time + 180;
	while (time < $end) { push @held, $_->accept for $sel->can_read(1) }' "$PORT" "$N" >"$T/mute.log" 2>&1 &
mute=$!
t_defer "kill $mute 2>/dev/null"
i=0; while ! grep -qs ready "$T/mute.log" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
grep -qs ready "$T/mute.log" || { not_ok "the silent listeners did not start"; cat "$T/mute.log"; t_done; }

# mute_run K ARGS...: status over the first K silent guests, --json into $T/run.out; prints seconds.
mute_run() {
	k=$1
	shift
	set -- "$@" --known-hosts "$T/kh" --state "$T/state" --json
	j=0
	while [ $j -lt "$k" ]; do
		set -- "$@" --host "$ME@127.0.0.61:$((PORT + j))"
		j=$((j + 1))
	done
	s=$(date +%s)
	"$LM" status "$@" >"$T/run.out" 2>&1
	echo $(($(date +%s) - s))
}
count() { grep -c "\"state\":\"$1\"" "$T/run.out"; }
# states: each state of the last run and how many, and the first message of each other state than
# timeout (what a failing check below shows).
states() {
	grep -o '"state":"[a-z-]*"' "$T/run.out" | sort | uniq -c | sed 's/^/# /'
	grep -v '"state":"timeout"' "$T/run.out" | grep -o '"state":"[a-z-]*","message":"[^"]*"' | sort -u | head -n 3 | sed 's/^/# /'
}

el=$(mute_run $N --timeout 2 --parallel $N)
printf '# %s guests that never send a banner, --timeout 2, --parallel %s: %ss\n' $N $N "$el"
check "all $N silent guests end as timeout" test "$(count timeout)" -eq $N
[ "$(count timeout)" -eq $N ] || states
check_grep "... saying no banner came" "the guest sent no SSH banner" "$T/run.out"
# The gate held 16 of them at once (2 cores) and moved the others' deadlines: ~20 s here.
check "... within a few timeouts, not N/16 of them (${el}s for --timeout 2)" test "$el" -le 10

# The soft limit below what $N connections need; the hard one is not: it is raised at start.
el=$( (ulimit -S -n 64 && mute_run $N --timeout 2 --parallel $N) )
printf '# the same under ulimit -S -n 64 (hard %s): %ss\n' "$(ulimit -H -n)" "$el"
check "under a soft limit of 64, still all $N timeout (the limit was raised)" test "$(count timeout)" -eq $N
[ "$(count timeout)" -eq $N ] || states
check "... none unreachable" test "$(count unreachable)" -eq 0

# A controller too loaded to resolve its hosts in time: `ssh -G` still running at a host's deadline
# is that host's timeout, not unreachable (160 resolutions at once on two loaded cores took more
# than 2 s for a third of them). The stand-in below is ssh answering -G after 5 s.
mkdir -p "$T/slowssh"
printf '#!/bin/sh\n# STAND-IN for ssh on a loaded controller: answers after 5 s.\nsleep 5\nexec %s "$@"\n' \
	"$(command -v ssh)" >"$T/slowssh/ssh"
chmod +x "$T/slowssh/ssh"
PATH=$T/slowssh:$PATH mute_run 2 --timeout 1 --parallel 2 >/dev/null
check "a host whose ssh -G still runs at its deadline is timeout" test "$(count timeout)" -eq 2
[ "$(count timeout)" -eq 2 ] || states
check_grep "... saying ssh timed out" '"state":"timeout","message":"host [^"]*: ssh timed out after 1 s"' "$T/run.out"

# Both limits low: the pool shrinks to the descriptors left, and no VM is blamed for them.
K=30
el=$( (ulimit -n 32 && mute_run $K --timeout 1 --parallel $K) )
printf '# %s guests under ulimit -n 32 (soft and hard), --parallel %s: %ss\n' $K $K "$el"
check "under a hard limit of 32, all $K still timeout" test "$(count timeout)" -eq $K
check "... none unreachable, none 'cannot connect: Success'" sh -c '! grep -q -e unreachable -e Success "$1"' - "$T/run.out"

# No descriptor at all for a socket. The pool is sized to the descriptors left, so a direct VM
# meets EMFILE only under outside pressure; a --hosts run meets it deterministically: under
# ulimit -n 5 the relay's wake pipe takes the last two (LeakSanitizer needs descriptors of its
# own at exit). A host session that cannot get a socket is failed, saying so, not unreachable.
printf '%s@127.0.0.61:%s\n%s@127.0.0.62:%s\n' "$ME" "$PORT" "$ME" "$PORT" >"$T/macs"
(
	# Whatever ran the tests may have left descriptors 3 and 4 open (/usr/bin/time -o's file, a
	# profiler's pipe): under ulimit -n 5 they would take the relay's two, as they did.
	exec 3>&- 4>&-
	ulimit -n 5
	ASAN_OPTIONS=detect_leaks=0 "$LM" status --hosts "$T/macs" --timeout 2 --known-hosts "$T/kh" --state "$T/state" --json
) >"$T/nofds.out" 2>&1
check "with no descriptor for a host's socket, both hosts are failed" sh -c '[ "$(grep -c "\"state\":\"failed\",.*out of file descriptors" "$1")" -eq 2 ] || { cat "$1"; exit 1; }' - "$T/nofds.out"
check "... neither unreachable" sh -c '! grep -q unreachable "$1"' - "$T/nofds.out"
t_done

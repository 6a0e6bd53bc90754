#!/bin/sh
# shellcheck disable=SC1090,SC1091,SC2016,SC2154,SC2317 # common.sh and lib.sh are sourced by path (common.sh sets l_stale); single-quoted $ is for the inner sh; mv is called by lock
# The guest lock (common.sh's lock, which install.sh and rollback.sh take): installers that find
# the same stale lock at once (its pid dead) must not both take it over. Each of 50 rounds
# leaves a stale lock and releases 3 contenders (shells that loaded common.sh) into lock() at
# the same moment, each by a line on its own FIFO, and counts them: exactly one gets the lock.
# They live through every round, so a winner is still alive while the others try (a dead one's
# lock would be stale again). The old lock() removed the stale lock and made its own: a second
# contender that had read the same dead pid removed the first one's lock and made another, and
# both went on: in 59 of 200 rounds when this test came (eb536a9), and in 8 of 50 on this
# test's last check of it, where all 50 passing had a chance of 0.84^50, about 2e-4.
. "$(dirname "$0")/../lib.sh"

C=$TOP/guest-payload/common.sh
ROUNDS=50 K=3
sh -c 'exit 0' &
wait $!
DEAD=$!
kill -0 "$DEAD" 2>/dev/null && { not_ok "a dead pid for the stale lock"; t_done; }
# Contender I waits for a "go" line on its FIFO go.I, calls lock() on $T/root, says "won" or
# "lost" on done (one write a line: lines never mix there), waits for a "next" line on hold.I and
# says "ready"; any other line ends it, and it says "gone" when it ends (a contender that dies
# cannot leave this test waiting for it). Every phase waits for all K answers before the next
# phase's lines go out. Each FIFO has one reader (shells read a byte at a time: two readers of
# one FIFO would split its lines). This shell holds all seven open read-write (Linux), fds 3 to
# 9, and the contenders use them as they inherit them: no open blocks, no read sees an end, and
# no write waits for a reader, even a dead contender's.
mkfifo "$T/done" "$T/go.1" "$T/go.2" "$T/go.3" "$T/hold.1" "$T/hold.2" "$T/hold.3"
exec 3<>"$T/done" 4<>"$T/go.1" 5<>"$T/go.2" 6<>"$T/go.3" 7<>"$T/hold.1" 8<>"$T/hold.2" 9<>"$T/hold.3"
pids="" i=1
while [ "$i" -le "$K" ]; do
	sh -c 'trap "echo gone >&3" EXIT
		. "$1" || exit 2
		ROOT=$2 g=$3 h=$4
		while read -r x <&$g && [ "$x" = go ]; do
			if lock; then echo won >&3; else echo lost >&3; fi
			read -r x <&$h && [ "$x" = next ] || break
			echo ready >&3
		done' sh "$C" "$T/root" $((3 + i)) $((6 + i)) &
	pids="$pids $!"
	i=$((i + 1))
done
# say go|hold WORD: WORD on every contender's go or hold FIFO.
say() {
	case $1 in
	go) printf '%s\n' "$2" >&4 && printf '%s\n' "$2" >&5 && printf '%s\n' "$2" >&6 ;;
	hold) printf '%s\n' "$2" >&7 && printf '%s\n' "$2" >&8 && printf '%s\n' "$2" >&9 ;;
	esac
}
# answers: reads K answers from done; sets won and adds to gone.
answers() {
	won=0 a_i=0
	while [ "$a_i" -lt "$K" ] && IFS= read -r l <&3; do
		[ "$l" != won ] || won=$((won + 1))
		[ "$l" != gone ] || gone=$((gone + 1))
		a_i=$((a_i + 1))
	done
}
bad=0 both=0 none=0 gone=0 r=1
while [ "$r" -le "$ROUNDS" ] && [ "$gone" -eq 0 ]; do
	rm -rf "$T/root"
	mkdir -p "$T/root/.lock"
	echo "$DEAD" >"$T/root/.lock/pid"
	say go go
	answers
	if [ "$won" -ne 1 ]; then
		bad=$((bad + 1))
		if [ "$won" -gt 1 ]; then both=$((both + 1)); else none=$((none + 1)); fi
	fi
	[ "$gone" -eq 0 ] || break
	say hold next
	answers
	r=$((r + 1))
done
if [ "$gone" -eq 0 ]; then
	say go stop
else
	not_ok "a contender ended in round $r, before the rounds did"
	# shellcheck disable=SC2086 # a list of pids
	kill $pids 2>/dev/null
fi
# shellcheck disable=SC2086 # a list of pids
wait $pids
exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
if [ "$bad" -eq 0 ]; then
	ok "$ROUNDS rounds of $K installers taking over one stale lock at once: exactly one got it each time"
else
	not_ok "$ROUNDS rounds of $K installers taking over one stale lock at once: $bad rounds went wrong ($both with more than one holder, $none with none)"
fi
check "the lock a round leaves is the winner's, pid file and all" test -f "$T/root/.lock/pid"
check "... and no claim is left behind" sh -c '! ls "$1"/.lock/claim.* >/dev/null 2>&1' - "$T/root"

# A live holder's lock is never taken, and a stale one is, with its pid reported.
. "$C"
ROOT=$T/one
mkdir -p "$ROOT/.lock"
sleep 30 &
holder=$!
t_defer "kill $holder 2>/dev/null"
echo "$holder" >"$ROOT/.lock/pid"
check_rc "a lock whose pid runs is held" 1 lock
check "... and kept as it was" test "$(cat "$ROOT/.lock/pid")" = "$holder"
echo "$DEAD" >"$ROOT/.lock/pid"
check "a lock whose pid is dead is taken over" lock
check "... reporting that pid" test "$l_stale" = "$DEAD"
check "... the lock now this process's" test "$(cat "$ROOT/.lock/pid")" = "$$"
# A claimant that got a live holder's pid file (the stale lock replaced by a new holder's after it
# read the dead pid) puts it back and gives up: here mv's first call, the claim, finds the file
# rewritten with the live holder's pid.
echo "$DEAD" >"$ROOT/.lock/pid"
mv() { case $1 in */.lock/pid) echo "$holder" >"$1" ;; esac; command mv "$@"; }
check_rc "a claim of a pid file that is no longer the dead one's" 1 lock
unset -f mv
check "... puts it back" test "$(cat "$ROOT/.lock/pid")" = "$holder"
check "... and leaves no claim" sh -c '! ls "$1"/.lock/claim.* >/dev/null 2>&1' - "$ROOT"
t_done

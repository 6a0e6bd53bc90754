#!/bin/sh
# stop-jobs.sh DIR: stops every job the SIMULATED launchd (tests/guest-sim/bin/launchctl) runs
# with its state under DIR: SIGTERM to each job's supervisor (which passes it on and reaps the
# job), then, after at most 2 s, SIGKILL to the process group of any left (the supervisor's own
# session: it and its job). The tests' cleanup (tests/lib.sh), so no job outlives its test.
[ -d "${1:-}" ] || exit 0
pids=$(find "$1" -path '*/launchd/gui-*/*/supervisor' -type f 2>/dev/null | while IFS= read -r f; do
	p=""
	IFS= read -r p <"$f" 2>/dev/null
	case $p in '' | *[!0-9]*) continue ;; esac
	kill -TERM "$p" 2>/dev/null && printf '%s\n' "$p"
done)
n=0
while [ -n "$pids" ] && [ "$n" -lt 40 ]; do
	left=""
	for p in $pids; do
		s=""
		IFS= read -r s <"/proc/$p/stat" 2>/dev/null || continue
		case ${s##*) } in Z*) continue ;; esac
		left="$left $p"
	done
	pids=$left
	[ -z "$pids" ] || sleep 0.05
	n=$((n + 1))
done
for p in $pids; do kill -KILL -- "-$p" 2>/dev/null; done
exit 0

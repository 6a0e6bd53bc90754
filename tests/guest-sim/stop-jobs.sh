#!/bin/sh
# stop-jobs.sh DIR: stops every job the SIMULATED launchd (tests/guest-sim/bin/launchctl) runs
# with its state under DIR: SIGTERM to each job's supervisor (which passes it on and reaps the
# job), then, for each, a wait on the lock it holds while it lives (flock, at most 2 s), and
# SIGKILL to the process group of one still there (the supervisor's own session: it and its
# job). The tests' cleanup (tests/lib.sh), so no job outlives its test.
[ -d "${1:-}" ] || exit 0
dirs=$(find "$1" -path '*/launchd/gui-*/*/supervisor' -type f 2>/dev/null | while IFS= read -r f; do
	p=""
	IFS= read -r p <"$f" 2>/dev/null
	case $p in '' | *[!0-9]*) continue ;; esac
	kill -TERM "$p" 2>/dev/null && printf '%s\n' "$p ${f%/supervisor}"
done)
printf '%s\n' "$dirs" | while read -r p d; do
	[ -n "$p" ] || continue
	flock -w 2 "$d/supervisor.lock" true 2>/dev/null || kill -KILL -- "-$p" 2>/dev/null
done
exit 0

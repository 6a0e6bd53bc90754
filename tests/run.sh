#!/bin/sh
# Runs every test program and prints one closing line: N passed, N failed.
# Test programs print TAP lines ("ok - ..." / "not ok - ..."); one that exits non-zero without
# printing a failure still counts as one failure.
#
# The tests mostly wait (on sshd, launchd's simulated respawns, timeouts), so several run at
# once: TEST_JOBS of them (default 4), each in its own network namespace (unshare -n, with its
# own loopback up), where every 127.0.0.x address and port is its own: the tests' guests and
# registries keep their fixed addresses without meeting another test's. Where a network
# namespace cannot be made (not root), they run one at a time, as TEST_JOBS=1 does. Each
# test's output is printed whole when it ends (finishing order), then the failures again, then
# the closing line. The slowest tests (tests/slow, measured) start first. Each test's line gives
# its seconds and, where a cgroup can hold it (root, with cgroup v1's cpuacct or cgroup v2), its
# CPU: user and sys of every process it started, daemons included (sshd, the simulated launchd),
# which on a machine shared with other work says more than the seconds; the closing lines sum it.
#   sh tests/run.sh [TEST...]     the given test programs only
set -u
cd "$(dirname "$0")/.." || exit 2

# one TEST N LOG: runs TEST (in a network namespace when NS=1) into LOG/N.*, then prints its
# block under a lock, so no two blocks interleave.
if [ "${1:-}" = --one ]; then
	t=$2 n=$3 log=$4
	case $t in *.sh) set -- dash "$t" ;; *) set -- "$t" ;; esac
	if [ "${NS:-0}" = 1 ]; then
		set -- unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"
	fi
	cg=""
	if [ -n "${CGROOT:-}" ] && mkdir "$CGROOT/lm-run.$$" 2>/dev/null; then
		cg=$CGROOT/lm-run.$$
		# shellcheck disable=SC2016 # expanded by that sh
		set -- sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
	fi
	start=$(date +%s)
	"$@" >"$log/$n.out" 2>"$log/$n.err" </dev/null
	rc=$?
	cpu=""
	if [ -n "$cg" ]; then
		# user and sys: cgroup v1's cpuacct.stat in clock ticks, v2's cpu.stat in microseconds
		st=$cg/cpuacct.stat
		[ -f "$st" ] || st=$cg/cpu.stat
		cpu=$(awk -v hz="$(getconf CLK_TCK)" '$1 == "user" || $1 == "system" { t += $2 / hz }
			$1 == "user_usec" || $1 == "system_usec" { t += $2 / 1e6 } END { printf "%.1f", t }' "$st" 2>/dev/null)
		rmdir "$cg" 2>/dev/null || { sleep 1; rmdir "$cg" 2>/dev/null; } ||
			ps -o pid=,args= -p "$(paste -sd, "$cg/cgroup.procs")" 2>/dev/null | cut -c1-160 |
				sed "s|^|# $t left running: |" >>"$log/$n.out"
	fi
	p=$(grep -c '^ok ' "$log/$n.out") f=$(grep -c '^not ok ' "$log/$n.out")
	{
		printf '# %s\n' "$t"
		cat "$log/$n.out"
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			printf 'not ok - %s exited %s\n' "$t" "$rc"
			f=1
		fi
		[ "$f" -eq 0 ] || sed 's/^/#   stderr: /' "$log/$n.err" | tail -n 20
		printf '# %s: %s passed, %s failed, %ss%s\n' "$t" "$p" "$f" "$(($(date +%s) - start))" "${cpu:+, CPU ${cpu}s}"
	} >"$log/$n.block"
	echo "$p $f ${cpu:-0}" >"$log/$n.sum"
	flock "$log/lock" cat "$log/$n.block"
	exit 0
fi

log=$(mktemp -d "${TMPDIR:-/tmp}/lm-run.XXXXXX")
trap 'rm -rf "$log"' EXIT
: >"$log/lock"
jobs=${TEST_JOBS:-4}
case $jobs in '' | *[!0-9]* | 0) echo "run.sh: TEST_JOBS must be a positive number, not '$jobs'" >&2; exit 2 ;; esac
NS=0
if [ "$jobs" -gt 1 ]; then
	if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then
		NS=1
	else
		echo "# run.sh: no network namespace here (unshare -n needs root): one test at a time" >&2
		jobs=1
	fi
fi
export NS
# python3 is the system's (Debian's python3, with the python3-* packages scripts/deps.sh installs)
# when there is one: a version manager's shim first on PATH (pyenv's is a bash script that runs
# `pyenv exec`) costs about ten processes and half a second of CPU per call, and the tests call
# python3 hundreds of times.
if [ -x /usr/bin/python3 ]; then
	mkdir "$log/bin" && ln -s /usr/bin/python3 "$log/bin/python3" && PATH=$log/bin:$PATH
	export PATH
fi
# A cgroup for each test's CPU: the first hierarchy here that can have one.
CGROOT=""
for d in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
	if [ -w "$d/cgroup.procs" ] && { [ -f "$d/cpuacct.stat" ] || [ -f "$d/cpu.stat" ]; }; then
		CGROOT=$d
		break
	fi
done
export CGROOT

# The list: the arguments, or every test program, the slow ones first.
if [ $# -eq 0 ]; then
	for t in build/tests/* tests/*/t-*.sh; do
		[ -f "$t" ] || continue
		case $t in *.sh) ;; *) [ -x "$t" ] || continue ;; esac
		printf '%s\n' "$t"
	done >"$log/all"
	grep -vx '#.*' tests/slow | grep -Fxf "$log/all" >"$log/list"
	grep -vxFf tests/slow "$log/all" >>"$log/list"
else
	printf '%s\n' "$@" >"$log/list"
fi
# shellcheck disable=SC2016 # expanded by the sh that xargs runs
awk '{ print NR, $0 }' "$log/list" | xargs -P "$jobs" -L 1 sh -c 'exec sh tests/run.sh --one "$2" "$1" "$0"' "$log"

pass=0 fail=0 cpus=""
n=0
while IFS= read -r t; do
	n=$((n + 1))
	if [ -f "$log/$n.sum" ]; then
		read -r p f c <"$log/$n.sum"
		cpus="$cpus $c"
	else
		printf 'not ok - %s did not run\n' "$t"
		p=0 f=1
	fi
	pass=$((pass + p)) fail=$((fail + f))
	[ "$f" -eq 0 ] || grep '^not ok ' "$log/$n.block" 2>/dev/null | sed "s|^|# $t: |" >>"$log/failures"
done <"$log/list"
if [ -s "$log/failures" ]; then
	echo "# the failures:"
	cat "$log/failures"
fi
[ -z "$CGROOT" ] || echo "# CPU (user and sys) of all the tests: $(echo "$cpus" | awk '{ for (i = 1; i <= NF; i++) t += $i } END { printf "%.0f", t }') s"
printf '%s passed, %s failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]

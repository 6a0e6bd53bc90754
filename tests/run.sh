#!/bin/sh
# Runs every test program and prints one closing line: N passed, N failed.
# Test programs print TAP lines ("ok - ..." / "not ok - ..."); one that exits non-zero without
# printing a failure still counts as one failure.
set -u
cd "$(dirname "$0")/.." || exit 2
pass=0 fail=0
log=$(mktemp -d "${TMPDIR:-/tmp}/lm-run.XXXXXX")
trap 'rm -rf "$log"' EXIT
for t in build/tests/* tests/*/t-*.sh; do
	[ -f "$t" ] || continue
	case $t in *.sh) cmd="dash $t" ;; *) [ -x "$t" ] || continue; cmd=$t ;; esac
	printf '# %s\n' "$t"
	start=$(date +%s)
	$cmd >"$log/out" 2>"$log/err"; rc=$?
	cat "$log/out"
	p=$(grep -c '^ok ' "$log/out") f=$(grep -c '^not ok ' "$log/out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		printf 'not ok - %s exited %s\n' "$t" "$rc"; f=1
	fi
	[ "$f" -gt 0 ] && sed 's/^/#   stderr: /' "$log/err" | tail -n 20
	printf '# %s: %s passed, %s failed, %ss\n' "$t" "$p" "$f" "$(($(date +%s) - start))"
	pass=$((pass + p)) fail=$((fail + f))
done
printf '%s passed, %s failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]

#!/bin/sh
# `make fuzz`: runs each named harness (build/fuzz/fuzz-NAME, libFuzzer) for FUZZ_SECONDS
# (default 300) from its corpus, tests/fuzz/NAME/corpus/, and NAME/dict when there is one.
# New inputs it finds go to build/fuzz/work/NAME/ (kept between runs, not committed); a crash
# stops that harness, and its input goes to tests/fuzz/NAME/crashes/ (README.md says what
# then). Files the harnesses write live under a mktemp -d, on /dev/shm when there is one.
# Prints one line per harness and exits 1 when any crashed.
set -u
cd "$(dirname "$0")/../.." || exit 2
secs=${FUZZ_SECONDS:-300}
scratch=$(mktemp -d /dev/shm/lm-fuzz.XXXXXX 2>/dev/null || mktemp -d "${TMPDIR:-/tmp}/lm-fuzz.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
trap 'exit 1' INT TERM HUP
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
failed=0
for name in "$@"; do
	bin=build/fuzz/fuzz-$name work=build/fuzz/work/$name crashes=tests/fuzz/$name/crashes
	log=build/fuzz/$name.log
	mkdir -p "$work" "$crashes" "$scratch/$name" || exit 2
	set -- -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
		-artifact_prefix="$crashes/"
	[ -f "tests/fuzz/$name/dict" ] && set -- "$@" -dict="tests/fuzz/$name/dict"
	before=$(find "$crashes" -type f | wc -l)
	TMPDIR=$scratch/$name "$bin" "$@" "$work" "tests/fuzz/$name/corpus" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
	new=$(($(find "$crashes" -type f | wc -l) - before))
	if [ "$rc" -eq 0 ]; then
		printf 'fuzz %s: %s runs in %ss, %s, no crash\n' "$name" "${runs:-?}" "$secs" "${cov:-cov: ?}"
	else
		failed=1
		printf 'fuzz %s: CRASH (exit %s) after %s runs, %s new in %s; log %s:\n' "$name" "$rc" "${runs:-?}" \
			"$new" "$crashes" "$log"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)|^    #[0-4] ' "$log" | head -n 8 | sed 's/^/  /'
	fi
done
exit "$failed"

#!/bin/sh
# shellcheck disable=SC1091 # sourced lib
# The demo (scripts/demo: every user-facing command once, against its simulated guests, registry
# and Lume) with the tests' ASan build and LeakSanitizer on. The demo lets some commands fail on
# purpose (|| true), so the sanitizers write their reports to files (log_path), and any file is a
# failure: a leak or a memory error in any command's path. Most other shell tests run the
# -O2 build users run (tests/lib.sh says why).
. "$(dirname "$0")/../lib.sh"
t_san
mkdir "$T/san"
check_rc "the demo with the ASan build and LeakSanitizer on (exit 0)" 0 env DEMO_LM="$LM" DEMO_OUT="$T/out" \
	ASAN_OPTIONS="detect_leaks=1:log_path=$T/san/asan" UBSAN_OPTIONS="print_stacktrace=1:log_path=$T/san/ubsan" \
	sh "$TOP/scripts/demo"
cp "$T/.out" "$T/demo.out"
check_grep "... to its end" '^demo: done$' "$T/demo.out"
# shellcheck disable=SC2016 # expanded by that sh
check "... with no sanitizer report from any command" sh -c '! ls "$1"/ 2>/dev/null | grep -q .' - "$T/san"
for f in "$T"/san/*; do [ ! -f "$f" ] || sed 's/^/#   /' "$f" | head -n 60; done
check "... and its report page written" test -s "$T/out/report.html"
t_done

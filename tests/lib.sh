# Shared setup for shell tests (sourced, POSIX sh). Each test prints TAP lines.
# Every file a test writes lives under $T, a mktemp -d removed on exit.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/lm-test.XXXXXX")
# The tool the tests run is the one `make` builds for users (-O2). Starting it costs this
# machine 13 ms of CPU, the ASan build's 60 ms with LeakSanitizer on, and the tests
# start it about a thousand times (docs/performance.md). The sanitizers run where memory errors
# hide: every user-facing command through the demo (tests/cli/t-demo-san.sh), the unit tests,
# the fuzz regressions, and the tests of faults, kills and hostile input, which call t_san.
# A given LM runs in every test (LM=$PWD/build/asan/lume-metal: the ASan build everywhere).
LM_GIVEN=${LM:-}
LM=${LM:-$TOP/plugin/lume-metal}
LM_SAN=$TOP/build/asan/lume-metal
# The tests use the tree's data, even where a copy is installed (installed data comes first).
export LUME_METAL_DATADIR="${LUME_METAL_DATADIR:-$TOP}"
# No test reads the user's own config file (lume-metal config, plugin/core/config.h).
export XDG_CONFIG_HOME="$T/xdg-config"
export LSAN_OPTIONS="suppressions=$TOP/tests/lsan.supp:print_suppressions=0"
# LeakSanitizer (LM_LEAKS=0 turns it off) and ASan's other checks, for an ASan build in $LM.
export ASAN_OPTIONS="detect_leaks=${LM_LEAKS:-1}"
# t_san: this test runs the ASan build, unless LM was given.
t_san() { [ -n "$LM_GIVEN" ] || LM=$LM_SAN; }
t_cleanups=""
# The simulated launchd's jobs (real processes) under $T are stopped first (tests/guest-sim),
# then the deferred commands run (a tmpfs a job still had open would not unmount), then $T goes;
# a mount left under $T is a failure.
t_cleanup() {
	sh "$TOP/tests/guest-sim/stop-jobs.sh" "$T"
	eval "$t_cleanups"
	# (read by the shell: no process at every test's end)
	[ ! -r /proc/self/mountinfo ] || while IFS= read -r t_m; do
		case $t_m in *" $T/"*) not_ok "cleanup: a mount is left under $T"; break ;; esac
	done </proc/self/mountinfo
	rm -rf "$T"
}
trap t_cleanup EXIT
trap 'exit 1' INT TERM HUP
t_defer() { t_cleanups="$1; $t_cleanups"; }

t_failed=0
ok() { printf 'ok - %s\n' "$1"; }
not_ok() { printf 'not ok - %s\n' "$1"; t_failed=$((t_failed + 1)); }

# check NAME CMD...: the command must exit 0.
check() { n=$1; shift; if "$@" >"$T/.out" 2>&1; then ok "$n"; else not_ok "$n"; sed 's/^/#   /' "$T/.out"; fi; }
# check_rc NAME RC CMD...: the command must exit with RC.
check_rc() {
	n=$1 want=$2; shift 2
	"$@" >"$T/.out" 2>&1; got=$?
	if [ "$got" -eq "$want" ]; then ok "$n"; else not_ok "$n (exit $got, want $want)"; sed 's/^/#   /' "$T/.out"; fi
}
# check_grep NAME PATTERN FILE: FILE must contain the extended regex PATTERN.
check_grep() {
	if grep -Eq -- "$2" "$3"; then ok "$1"; else not_ok "$1 (no /$2/ in $3)"; sed 's/^/#   /' "$3"; fi
}
# check_has NAME STRING FILE: FILE must contain STRING (fixed, not a pattern).
check_has() {
	if grep -Fq -- "$2" "$3"; then ok "$1"; else not_ok "$1 (no \"$2\" in $3)"; sed 's/^/#   /' "$3"; fi
}
# check_range NAME N LO HI: N is a whole number, at least LO and below HI.
check_range() {
	case $2 in
	'' | *[!0-9]*) not_ok "$1 ('$2' is not a whole number)" ;;
	*) if [ "$2" -ge "$3" ] && [ "$2" -lt "$4" ]; then ok "$1"; else not_ok "$1 ($2 is not in $3..$(($4 - 1)))"; fi ;;
	esac
}
t_done() { exit "$t_failed"; }

# flip_byte FILE OFFSET: changes FILE's byte at OFFSET, to X, or to Y where it already is X (a
# fixed X left a payload whose byte was X unchanged: its "tampered" copy installed).
flip_byte() {
	f_c=X
	[ "$(dd if="$1" bs=1 skip="$2" count=1 2>/dev/null)" != X ] || f_c=Y
	printf '%s' "$f_c" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# ledger_text STATE: STATE's ledger (`ledger show --json`) one field a line, as the JSON store
# kept its documents, for grep and grep -c; the ledger itself is STATE/ledger.db (SQLite).
ledger_text() {
	"$LM" ledger show --json --state "$1" 2>/dev/null | python3 -m json.tool --indent 1 --no-ensure-ascii 2>/dev/null
}
# ledger_docs STATE DIR: each image version's document of STATE as DIR/N.json, one field a line
# (without `ledger show --json`'s "path"): what grep -l and a merge take.
ledger_docs() {
	rm -rf "$2" && mkdir -p "$2" && "$LM" ledger show --json --state "$1" 2>/dev/null | python3 -c '
import json, sys
for i, d in enumerate(json.load(sys.stdin)):
    d.pop("path", None)
    with open("%s/%d.json" % (sys.argv[1], i + 1), "w") as f:
        json.dump(d, f, indent=1, ensure_ascii=False)' "$2"
}

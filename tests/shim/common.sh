# shellcheck shell=sh
# Shared setup for the shim tests (sourced after tests/lib.sh). They run the ASan/UBSan build of
# the probe, the shim, the harness and the SIMULATED libMetal from build/shim-test/san/ (made by
# `make shim-test-build`), on GCC's libobjc; the shim goes in with LD_PRELOAD.

if [ "$(uname -s)" != Linux ]; then
	echo "ok - shim tests run on Linux only # SKIP"
	exit 0
fi

SAN=$TOP/build/shim-test/san
# shellcheck disable=SC2034 # used by the tests that source this file
LIN=$TOP/build/linux
SHIM=$SAN/liblumemetal.so
PROBE=$SAN/lume-metal-probe
HARNESS=$SAN/lm-shim-harness
# shellcheck disable=SC2034
PROFILE=$TOP/manifests/profiles/m1-ultra-tahoe-26.5.json

for f in "$SHIM" "$PROBE" "$HARNESS" "$SAN/libMetal.so"; do
	if [ ! -x "$f" ]; then
		not_ok "built: $f (run make shim-test-build)"
		t_done
	fi
done

# Nothing from the caller's environment may steer the shim or the simulation.
for v in $(env | sed -n 's/^\(LUME_METAL_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
unset LD_PRELOAD
# The preloaded shim is sanitized too, so libasan is not first in the library list; GCC's libobjc
# keeps runtime tables it never frees (tests/shim/lsan.supp). The leak check costs a quarter of a
# second per process; a test that runs the same paths many times may set LM_SHIM_LEAKS=0 first.
# Most of that quarter was symbolizing: to match libobjc's 15 allocations against the
# suppression, LeakSanitizer named the frames above them (libasan's malloc) first, reading
# symbols, 6,000 page faults a process. The suppression goes by module, which needs no names, so
# the sanitizers do not symbolize here (0.29 s to 0.08 a probe): a report gives each frame as
# module+offset (addr2line -f -e MODULE OFFSET names it), and LM_SHIM_SYMBOLIZE=1 names them.
export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=${LM_SHIM_LEAKS:-1}:symbolize=${LM_SHIM_SYMBOLIZE:-0}"
export LSAN_OPTIONS="suppressions=$TOP/tests/shim/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# A stand-in sw_vers; it notes in $SW_LOG whether a preload variable reached it.
mkdir "$T/bin"
SW_LOG=$T/sw_vers.log
export SW_LOG
cat >"$T/bin/sw_vers" <<'EOF'
#!/bin/sh
printf 'LD_PRELOAD=%s\n' "${LD_PRELOAD-}" >>"$SW_LOG"
case ${1-} in
'') printf 'ProductName:\t\tmacOS\nProductVersion:\t\t26.5.2\nBuildVersion:\t\t25F84\n' ;;
-productVersion) echo 26.5.2 ;;
-buildVersion) echo 25F84 ;;
*) exit 1 ;;
esac
EOF
chmod +x "$T/bin/sw_vers"
PATH=$T/bin:$PATH

# run NAME CMD...: CMD's stdout in $T/NAME.out, stderr in $T/NAME.err, status in $T/NAME.rc.
run() {
	r_name=$1
	shift
	"$@" >"$T/$r_name.out" 2>"$T/$r_name.err"
	echo $? >"$T/$r_name.rc"
}
# probe NAME [VAR=VALUE...] [-- ARG...]: the probe, stock. sprobe: with the shim preloaded.
probe() {
	p_name=$1
	shift
	p_n=$# p_seen=0
	while [ "$p_n" -gt 0 ]; do
		p_a=$1
		shift
		if [ "$p_a" = -- ] && [ "$p_seen" -eq 0 ]; then
			set -- "$@" "$PROBE"
			p_seen=1
		else
			set -- "$@" "$p_a"
		fi
		p_n=$((p_n - 1))
	done
	[ "$p_seen" -eq 1 ] || set -- "$@" "$PROBE"
	run "$p_name" env "$@"
}
sprobe() {
	s_name=$1
	shift
	probe "$s_name" LD_PRELOAD="$SHIM" "$@"
}

# has NAME FILE STRING...: FILE holds each fixed STRING. lacks: holds none of them.
has() {
	h_name=$1 h_file=$2
	shift 2
	for h_s; do
		if ! grep -qF -- "$h_s" "$h_file"; then
			not_ok "$h_name (no '$h_s' in $(basename "$h_file"))"
			sed 's/^/#   /' "$h_file"
			return
		fi
	done
	ok "$h_name"
}
lacks() {
	l_name=$1 l_file=$2
	shift 2
	for l_s; do
		if grep -qF -- "$l_s" "$l_file"; then
			not_ok "$l_name ('$l_s' in $(basename "$l_file"))"
			sed 's/^/#   /' "$l_file"
			return
		fi
	done
	ok "$l_name"
}
# rc_is NAME RUN WANT: the run's exit status.
rc_is() {
	got=$(cat "$T/$2.rc")
	if [ "$got" = "$3" ]; then ok "$1"; else not_ok "$1 (exit $got, want $3)"; sed 's/^/#   /' "$T/$2.err"; fi
}
# lines_are NAME FILE PATTERN N: exactly N lines of FILE match the extended regex PATTERN.
lines_are() {
	got=$(grep -Ec -- "$3" "$2")
	if [ "$got" -eq "$4" ]; then ok "$1"; else not_ok "$1 ($got lines match /$3/, want $4)"; sed 's/^/#   /' "$2"; fi
}
# device_part RUN: the probe's output without its "hookPoints", "shim" and "expect" members
# (hook points differ with the simulated device's fault knobs; t-probe checks them).
device_part() {
	sed 's/,"hookPoints":.*$//' "$T/$1.out"
}
# same_device NAME RUN WANTFILE: the run's device part is exactly WANTFILE's line.
same_device() {
	if [ "$(device_part "$2")" = "$(cat "$3")" ]; then
		ok "$1"
	else
		not_ok "$1"
		device_part "$2" | sed 's/^/#   got:  /'
		sed 's/^/#   want: /' "$3"
	fi
}
# stock_ok NAME RUN REASON: the run succeeded, answered exactly what the stock run did, the shim
# reports itself inactive, and stderr holds exactly one line: [lume-metal] ... stays stock: REASON.
stock_ok() {
	rc_is "$1: exit 0" "$2" 0
	same_device "$1: stock answers" "$2" "$T/stock.want"
	has "$1: shim inactive" "$T/$2.out" '"shim":{"active":false'
	lines_are "$1: one stderr line says why" "$T/$2.err" \
	    "^\[lume-metal\] lume-metal-probe stays stock: $3" 1
	lines_are "$1: nothing else on stderr" "$T/$2.err" '.' 1
}

# The stock run every test compares with, and what the 1009/65536 profile makes of it.
probe stock
device_part stock >"$T/stock.want"
sed -e 's/"Apple6":false/"Apple6":true/' -e 's/"Apple7":false/"Apple7":true/' \
    -e 's/"Apple8":false/"Apple8":true/' -e 's/"Apple9":false/"Apple9":true/' \
    -e 's/"maxThreadgroupMemoryLength":32768/"maxThreadgroupMemoryLength":65536/' \
    "$T/stock.want" >"$T/shim1009.want"

# shellcheck shell=sh disable=SC2034 # sourced: variables are for the tests
# Shared setup for the guest-script tests (sourced after tests/lib.sh, POSIX sh). The guest is
# the SIMULATED macOS of tests/guest-sim/bin, first on PATH; every guest gets its own HOME and
# simulator state under $T. Payloads come from the real `$LM build --target linux-sim`.
G=$TOP/tests/guest
PATH="$TOP/tests/guest-sim/bin:$PATH"
export PATH
# Nothing of the caller's shim or simulator settings leaks in.
unset DYLD_INSERT_LIBRARIES LD_PRELOAD LD_LIBRARY_PATH
for v in $(env | sed -n 's/^\(LUME_METAL_[A-Z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
# install.sh does not watch the workload on once its shim is active (t-confirm tests that wait).
LUME_METAL_CONFIRM_SETTLE=0
export LUME_METAL_CONFIRM_SETTLE
LABEL=com.trycua.lume-metal.llama-server
UID_SIM=501
DATADIR=$TOP

# Payloads carry the real probe, shim and simulated libMetal from build/linux/ (`make shim`).
# Only for working on these scripts without them, LM_GUEST_STANDIN=1 builds payloads from a
# data directory whose build/linux/ holds the DEVELOPMENT STAND-INS of tests/guest/standin/
# (not the probe or shim). REAL_PROBE says which case this is.
REAL_PROBE=1
if [ "${LM_GUEST_STANDIN:-0}" = 1 ]; then
	REAL_PROBE=0
	DATADIR=$T/datadir
	mkdir -p "$DATADIR/build/linux"
	ln -s "$TOP/guest-payload" "$DATADIR/guest-payload"
	ln -s "$TOP/manifests" "$DATADIR/manifests"
	cp "$G/standin/lume-metal-probe" "$DATADIR/build/linux/lume-metal-probe"
	printf 'STAND-IN, not a library\n' >"$DATADIR/build/linux/liblumemetal.so"
	printf 'STAND-IN, not a library\n' >"$DATADIR/build/linux/libMetal.so"
	echo "# LM_GUEST_STANDIN=1: payloads carry the development stand-in probe, not the real one"
fi

# guest NAME [HOME]: switches to a fresh guest; HOME defaults to "$T/NAME home" (a space in it).
guest() {
	HOME=${2:-"$T/$1 home"}
	mkdir -p "$HOME"
	LUME_METAL_SIM_DIR="$T/sim-$1"
	export HOME LUME_METAL_SIM_DIR
	ROOT="$HOME/Library/Application Support/lume-metal"
	AGENTS="$HOME/Library/LaunchAgents"
	PL="$AGENTS/$LABEL.plist"
}

# payload OUT [build options]: builds a linux-sim payload; sets SHA to its SHA-256.
payload() {
	p_out=$1
	shift
	if ! LUME_METAL_DATADIR=$DATADIR "$LM" build --target linux-sim -o "$p_out" "$@" >"$T/.build" 2>&1; then
		sed 's/^/# build: /' "$T/.build"
		SHA=""
		return 1
	fi
	SHA=$(sha256sum <"$p_out" | cut -c1-64)
}

# repack DIR OUT: a deterministic tar.gz of DIR's contents, the way `lume-metal build` lays
# payloads out (no top directory); sets SHA.
repack() {
	(cd "$1" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort |
		tar --no-recursion --owner=0 --group=0 --numeric-owner --mtime=@946684800 -cf - -T -) |
		gzip -n >"$2"
	SHA=$(sha256sum <"$2" | cut -c1-64)
}
# unpack FILE DIR: the payload's files in DIR, writable.
unpack() { mkdir -p "$2" && tar -xzf "$1" -C "$2" && chmod -R u+w "$2"; }
# resum DIR: rewrites DIR/SHA256SUMS for DIR's files (MANIFEST.json is left as it is), sorted by
# name, in one sha256sum.
resum() {
	(cd "$1" && find . -type f ! -name SHA256SUMS -printf '%P\0' | LC_ALL=C sort -z | xargs -0 sha256sum --) \
		>"$T/.sums" && mv "$T/.sums" "$1/SHA256SUMS"
}

# run OUT CMD...: runs CMD with stdout in OUT and stderr in OUT.err; RC is its exit status.
run() {
	r_out=$1
	shift
	rm -f "$r_out.flat"
	"$@" >"$r_out" 2>"$r_out.err"
	RC=$?
}
# install OUT FILE SHA [install options]: runs the payload's own install.sh the way deploy
# does: common.sh and install.sh read as one script (it also stays in $T/.install.sh).
install() {
	i_out=$1 i_file=$2 i_sha=$3
	shift 3
	tar -xzOf "$i_file" bin/common.sh bin/install.sh >"$T/.install.sh" || { not_ok "bin/install.sh from $i_file"; return 1; }
	run "$i_out" dash "$T/.install.sh" --payload "$i_file" --sha256 "$i_sha" "$@"
}
# install_from SCRIPT OUT FILE SHA [install options]: a known-good install.sh on another payload
# (one too damaged to carry its own).
install_from() {
	i_script=$1 i_out=$2 i_file=$3 i_sha=$4
	shift 4
	run "$i_out" dash "$i_script" --payload "$i_file" --sha256 "$i_sha" "$@"
}
# rollback OUT [previous|none] / status OUT: the scripts of the source tree.
rollback() { r_o=$1; shift; run "$r_o" dash "$TOP/guest-payload/rollback.sh" "$@"; }
status() { run "$1" dash "$TOP/guest-payload/status.sh"; }

# jflat FILE: FILE's JSON flattened by json.awk into FILE.flat, once per content (run() drops
# the old one); fails when FILE is not valid JSON (the reason is in FILE.flat.err).
jflat() {
	[ -f "$1.flat" ] && return 0
	awk -f "$G/json.awk" "$1" >"$1.flat.tmp" 2>"$1.flat.err" || { rm -f "$1.flat.tmp"; return 1; }
	mv "$1.flat.tmp" "$1.flat"
}
# jval FILE PATH: sets j_got to the value at PATH (json.awk syntax: .a.b[0]) of the JSON in FILE
# (the lines are read by the shell: no process a line, and no subshell); jget FILE PATH prints it.
j_tab=$(printf '\t')
jval() {
	jflat "$1" || return 1
	while IFS=$j_tab read -r j_k j_v; do
		if [ "$j_k" = "$2" ]; then j_got=$j_v; return 0; fi
	done <"$1.flat"
	return 1
}
jget() { jval "$1" "$2" && printf '%s\n' "$j_got"; }
# is_json NAME FILE: FILE holds exactly one JSON object and nothing else.
is_json() {
	j_c=""
	IFS= read -r j_c <"$2" || true
	case $j_c in
	'{'*) if jflat "$2"; then ok "$1"; return; fi ;;
	esac
	not_ok "$1"
	sed 's/^/#   /' "$2" "$2.flat.err" 2>/dev/null
}
# jis NAME FILE PATH WANT: the value at PATH is WANT.
jis() {
	jval "$2" "$3" || j_got="(absent)"
	if [ "$j_got" = "$4" ]; then
		ok "$1"
	else
		not_ok "$1 ($3 is '$j_got', want '$4')"
		sed 's/^/#   /' "$2"
		[ ! -s "$2.err" ] || sed 's/^/#   stderr: /' "$2.err"
	fi
}
# is_eq NAME GOT WANT
is_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1 (got '$2', want '$3')"; fi
}
# rc_is NAME WANT: the last run's exit status.
rc_is() { is_eq "$1" "$RC" "$2"; }

link() { readlink "$ROOT/$1" 2>/dev/null || echo none; }
svc() { launchctl print "gui/$UID_SIM/${2:-$LABEL}" 2>/dev/null | sed -n "s/^[[:space:]]*$1 = //p" | head -n 1; }
loaded() { launchctl print "gui/$UID_SIM/${1:-$LABEL}" >/dev/null 2>&1; }

# snapshot [--no-pid]: what must not change when an operation is refused: the links, the
# releases and their files, staging, the LaunchAgents, and the service (state, path, and
# unless --no-pid the pid and run count, so a restart shows too).
snapshot() {
	printf 'current=%s\nprevious=%s\n' "$(link current)" "$(link previous)"
	(cd "$ROOT" 2>/dev/null && find releases staging ! -type d -exec sha256sum {} + 2>/dev/null | LC_ALL=C sort -k 2)
	find "$ROOT/staging" "$AGENTS" -mindepth 1 -maxdepth 1 2>/dev/null | LC_ALL=C sort | sed "s|^$HOME/|entry: |"
	[ ! -f "$PL" ] || printf 'plist %s\n' "$(sha256sum <"$PL" | cut -c1-16)"
	if [ "${1:-}" = --no-pid ]; then
		launchctl print "gui/$UID_SIM/$LABEL" 2>&1 | grep -E '^	(state|path) = '
	else
		launchctl print "gui/$UID_SIM/$LABEL" 2>&1 | grep -E '^	(state|path|pid|runs) = '
	fi
}
# same NAME FILE [--no-pid]: the snapshot now equals the one saved in FILE.
same() {
	snapshot "${3:-}" >"$2.now"
	if diff -u "$2" "$2.now" >"$2.diff"; then ok "$1"; else not_ok "$1"; sed 's/^/#   /' "$2.diff"; fi
}

# Fake Mach-O files for the checks of run-with-shim, the simulated dyld (launchctl), codesign and
# lipo: headers and signatures, no code (they cannot run on Linux).
# b4 B...: the bytes B (0 to 255) as octal escapes of one printf, built by arithmetic (a command
# substitution forks, even of a builtin: a fake Mach-O file has about 40 of these).
# le32 N / be32 N: N as four bytes, little or big endian.
b4() {
	b4_f=""
	for b4_n in "$@"; do b4_f="$b4_f\\$((b4_n / 64))$((b4_n / 8 % 8))$((b4_n % 8))"; done
	# shellcheck disable=SC2059 # the format is built from octal escapes
	printf "$b4_f"
}
le32() { b4 $(($1 % 256)) $(($1 / 256 % 256)) $(($1 / 65536 % 256)) $(($1 / 16777216 % 256)); }
be32() { b4 $(($1 / 16777216 % 256)) $(($1 / 65536 % 256)) $(($1 / 256 % 256)) $(($1 % 256)); }
ARM64=16777228 X86_64=16777223
# macho OUT CPUTYPE SUBTYPE FILETYPE [CDFLAGS [ENTITLEMENTS-XML]]: a 64-bit Mach-O header (SUBTYPE
# 2147483650 with ARM64: arm64e; FILETYPE 2 a program, 6 a dylib); with CDFLAGS an
# LC_CODE_SIGNATURE and an embedded signature whose CodeDirectory (v=20400, no code pages, no
# Team ID) has those flags (131074 adhoc,linker-signed; 65538 adhoc,runtime: the hardened
# runtime), and with ENTITLEMENTS-XML an entitlements blob (slot 5) too.
macho() {
	{
		le32 4277009103 && le32 "$2" && le32 "$3" && le32 "$4"
		if [ $# -ge 5 ]; then le32 1 && le32 16; else le32 0 && le32 0; fi
		le32 0 && le32 0
		if [ $# -ge 5 ]; then
			m_cd=96 m_ent=${6:-} m_n=1
			[ -z "$m_ent" ] || m_n=2
			m_sl=$((12 + 8 * m_n + m_cd))
			[ -z "$m_ent" ] || m_sl=$((m_sl + 8 + ${#m_ent}))
			le32 29 && le32 16 && le32 48 && le32 "$m_sl"
			be32 4208856256 && be32 "$m_sl" && be32 "$m_n"
			be32 0 && be32 $((12 + 8 * m_n))
			[ -z "$m_ent" ] || { be32 5 && be32 $((12 + 8 * m_n + m_cd)); }
			be32 4208856066 && be32 "$m_cd" && be32 132096 && be32 "$5" && be32 "$m_cd" && be32 88
			be32 0 && be32 0 && be32 48 && b4 32 2 0 12
			m_i=0
			while [ "$m_i" -lt 12 ]; do be32 0 && m_i=$((m_i + 1)); done
			printf 'target\000\000'
			[ -z "$m_ent" ] || { be32 4208882033 && be32 $((8 + ${#m_ent})) && printf '%s' "$m_ent"; }
		fi
	} >"$1"
	chmod +x "$1"
}
# plist_xml BODY: an XML property list whose dict holds BODY (entitlements, as codesign prints them).
plist_xml() {
	printf '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">\n<dict>\n%s</dict>\n</plist>\n' "$1"
}
# ents KEY...: entitlements that set each com.apple.security.cs.KEY true.
ents() {
	e_b=""
	for e_k in "$@"; do
		e_b="$e_b	<key>com.apple.security.cs.$e_k</key>
	<true/>
"
	done
	plist_xml "$e_b"
}

#!/bin/sh
# shellcheck disable=SC1091 # sourced libs
# run-with-shim checks the program it injects the Mach-O shim into and refuses, with the reason
# and before exec, an arm64e or x86_64 one (dyld would abort it: the shim is arm64 only) and a
# hardened-runtime one without allow-dyld-environment-variables (dyld would drop the shim
# silently) or disable-library-validation (library validation would refuse the ad-hoc signed
# shim, and dyld abort the process), naming the one missing or both. The programs are Mach-O headers and signatures (guest-lib.sh's macho, and the
# zig-built probe from build/macos/ when present); they cannot run on Linux, so an exec shows as
# "Exec format error" from the shell and a refusal as exit 2 with one JSON object and no exec.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"

ALLOW_DYLD=$(ents allow-dyld-environment-variables)
JIT_ONLY=$(ents allow-jit)
DENY_DYLD=$(plist_xml '	<key>com.apple.security.cs.allow-dyld-environment-variables</key>
	<false/>
')
NO_LV=$(ents disable-library-validation)
BOTH=$(ents allow-dyld-environment-variables disable-library-validation)
LV_FALSE=$(plist_xml '	<key>com.apple.security.cs.allow-dyld-environment-variables</key>
	<true/>
	<key>com.apple.security.cs.disable-library-validation</key>
	<false/>
')
P=$T/progs
mkdir -p "$P"
macho "$P/arm64" $ARM64 0 2 131074
macho "$P/arm64e" $ARM64 2147483650 2 131074
macho "$P/x86_64" $X86_64 3 2 131074
macho "$P/hardened" $ARM64 0 2 65538
macho "$P/hardened-allowed" $ARM64 0 2 65538 "$ALLOW_DYLD"
macho "$P/hardened-jit" $ARM64 0 2 65538 "$JIT_ONLY"
macho "$P/hardened-false" $ARM64 0 2 65538 "$DENY_DYLD"
macho "$P/hardened-lv" $ARM64 0 2 65538 "$NO_LV"
macho "$P/hardened-both" $ARM64 0 2 65538 "$BOTH"
macho "$P/hardened-lv-false" $ARM64 0 2 65538 "$LV_FALSE"
# The library-validation flag (0x2000, CS_REQUIRE_LV): alone (0x2002 with adhoc), and beside the
# hardened runtime with both entitlements or with allow-dyld alone (0x12002), or with none.
macho "$P/lv" $ARM64 0 2 8194
macho "$P/lv-hardened-both" $ARM64 0 2 73730 "$BOTH"
macho "$P/lv-hardened-allowed" $ARM64 0 2 73730 "$ALLOW_DYLD"
macho "$P/lv-hardened" $ARM64 0 2 73730
macho "$P/lv-runtime" $ARM64 0 2 73728 "$BOTH"
macho "$P/hard-kill" $ARM64 0 2 6914
macho "$P/unsigned" $ARM64 0 2
macho "$T/shim.dylib" $ARM64 0 6 131074
# A universal x86_64 + arm64 program (unsigned slices): the arm64 slice runs.
{
	be32 3405691582 && be32 2
	be32 $X86_64 && be32 3 && be32 48 && be32 32 && be32 0
	be32 $ARM64 && be32 0 && be32 80 && be32 32 && be32 0
	cat "$P/unsigned" "$P/unsigned"
} >"$P/universal"
macho "$T/x86" $X86_64 3 2
{
	be32 3405691582 && be32 2
	be32 $X86_64 && be32 3 && be32 48 && be32 32 && be32 0
	be32 $ARM64 && be32 2 && be32 80 && be32 32 && be32 0
	cat "$T/x86" "$P/arm64e"
} >"$P/universal-arm64e"
chmod +x "$P/universal" "$P/universal-arm64e"
printf '#!/bin/sh\ntouch "%s/ran"\n' "$T" >"$P/script"
chmod +x "$P/script"

# The simulated codesign shows what the headers say (the check reads nothing else).
codesign -d --verbose "$P/hardened" 2>"$T/e"
check_grep "the hardened program's CodeDirectory has flags=0x10002(adhoc,runtime)" '^CodeDirectory v=20400 size=96 flags=0x10002\(adhoc,runtime\) hashes=0\+0 location=embedded$' "$T/e"
# Apple's bits (CSCommon.h, cs_blobs.h) and codesign's names for them, lowest bit first.
codesign -d --verbose "$P/lv" 2>"$T/e"
check_grep "the library-validation flag is 0x2000: flags=0x2002(adhoc,library-validation)" '^CodeDirectory v=20400 size=96 flags=0x2002\(adhoc,library-validation\) hashes=0\+0 location=embedded$' "$T/e"
codesign -d --verbose "$P/lv-runtime" 2>"$T/e"
check_grep "... with the runtime, no adhoc: flags=0x12000(library-validation,runtime)" ' flags=0x12000\(library-validation,runtime\) ' "$T/e"
codesign -d --verbose "$P/hard-kill" 2>"$T/e"
check_grep "hard 0x100, kill 0x200, restrict 0x800, enforcement 0x1000" ' flags=0x1b02\(adhoc,hard,kill,restrict,enforcement\) ' "$T/e"
codesign -d --entitlements - --xml "$P/hardened-allowed" >"$T/o" 2>"$T/e"
is_eq "codesign -d --entitlements - --xml: exit 0" $? 0
is_eq "... the entitlements XML on stdout" "$(cat "$T/o")" "$ALLOW_DYLD"
is_eq "... Executable= on stderr" "$(cat "$T/e")" "Executable=$P/hardened-allowed"
codesign -d --entitlements - --xml "$P/hardened" >"$T/o" 2>/dev/null
is_eq "... nothing on stdout without an entitlements blob" "$?:$(cat "$T/o")" 0:
check_rc "--entitlements without --xml is not simulated" 2 codesign -d --entitlements - "$P/hardened"
is_eq "lipo agrees on the arm64e header" "$(lipo -archs "$P/arm64e")" "arm64e "

# A macOS release: run-with-shim, a shim.env for DYLD_INSERT_LIBRARIES, an arm64 shim.
R=$T/rel
mkdir -p "$R/bin" "$R/lib"
cp "$TOP/guest-payload/run-with-shim" "$R/bin/"
cp "$T/shim.dylib" "$R/lib/liblumemetal.dylib"
printf 'LUME_METAL_PRELOAD_VAR=DYLD_INSERT_LIBRARIES\nLUME_METAL_PRELOAD_LIB=lib/liblumemetal.dylib\nLUME_METAL_APPLE_FAMILY_MAX=1009\n' >"$R/shim.env"

# refused NAME PROG REASON-ERE: exit 2, one JSON object whose reason matches, no exec.
refused() {
	run "$T/o.json" "$R/bin/run-with-shim" "$2" arg
	rc_is "$1: exits 2" 2
	is_json "$1: one JSON object" "$T/o.json"
	jis "$1: failed" "$T/o.json" .result failed
	jget "$T/o.json" .reason >"$T/reason" || : >"$T/reason"
	check_grep "$1: the reason" "$3" "$T/reason"
	if grep -q 'Exec format error' "$T/o.json.err"; then not_ok "$1: nothing exec'd"; else ok "$1: nothing exec'd"; fi
}
# allowed NAME PROG: run-with-shim gets to exec PROG (which Linux cannot run).
allowed() {
	run "$T/o.json" "$R/bin/run-with-shim" "$2" arg
	if [ "$RC" -eq 126 ] && grep -q 'Exec format error' "$T/o.json.err" && [ ! -s "$T/o.json" ]; then
		ok "$1: exec'd"
	else
		not_ok "$1: exec'd (exit $RC)"
		sed 's/^/#   /' "$T/o.json" "$T/o.json.err"
	fi
}
refused "an arm64e program" "$P/arm64e" "^$P/arm64e is arm64e; the shim is arm64 only: dyld would abort it\$"
refused "an x86_64 program" "$P/x86_64" "^$P/x86_64 is x86_64; the shim is arm64 only: dyld would abort it\$"
refused "a universal x86_64 + arm64e program" "$P/universal-arm64e" " is arm64e; the shim is arm64 only"
DY=com.apple.security.cs.allow-dyld-environment-variables LV=com.apple.security.cs.disable-library-validation
HR="has the hardened runtime without $DY and $LV: dyld would drop the shim and it would run stock\$"
refused "a hardened-runtime program without entitlements" "$P/hardened" "^$P/hardened $HR"
refused "a hardened-runtime program with other entitlements" "$P/hardened-jit" "^$P/hardened-jit $HR"
refused "a hardened-runtime program with allow-dyld false" "$P/hardened-false" "^$P/hardened-false $HR"
refused "a hardened-runtime program with allow-dyld alone (library validation)" "$P/hardened-allowed" \
	"^$P/hardened-allowed has the hardened runtime without $LV: its library validation would refuse the ad-hoc signed shim and dyld would abort it\$"
refused "a hardened-runtime program with allow-dyld and disable-library-validation false" "$P/hardened-lv-false" \
	"^$P/hardened-lv-false has the hardened runtime without $LV: its library validation"
refused "a hardened-runtime program with disable-library-validation alone" "$P/hardened-lv" \
	"^$P/hardened-lv has the hardened runtime without $DY: dyld would drop the shim and it would run stock\$"
LVM="is signed with the library-validation flag: dyld admits only libraries signed by Apple or with its Team ID, whatever its entitlements, so it would refuse the ad-hoc signed shim and abort it"
LVF="$LVM\$"
refused "a program with the library-validation flag, no hardened runtime" "$P/lv" "^$P/lv $LVF"
refused "the library-validation flag beside the hardened runtime with both entitlements" "$P/lv-hardened-both" "^$P/lv-hardened-both $LVF"
refused "... with allow-dyld alone: the flag is named" "$P/lv-hardened-allowed" "^$P/lv-hardened-allowed $LVF"
refused "... with neither: dyld drops the shim first" "$P/lv-hardened" "^$P/lv-hardened $HR"
refused "a script" "$P/script" "^$P/script is not a Mach-O program"
check "a script: it did not run" test ! -e "$T/ran"
allowed "an arm64 program" "$P/arm64"
allowed "a hardened-runtime program with both entitlements" "$P/hardened-both"
allowed "a universal x86_64 + arm64 program" "$P/universal"
allowed "an unsigned arm64 program (the kernel's business)" "$P/unsigned"
PATH="$P:$PATH" run "$T/o.json" "$R/bin/run-with-shim" arm64e
rc_is "a bare name is checked as the program PATH finds" 2
PATH="$P:$PATH" run "$T/o.json" "$R/bin/run-with-shim" no-such-program
is_eq "a program exec cannot find: exec's own error" "$RC" 127

# --check: the verdict alone, nothing run.
run "$T/o.json" "$R/bin/run-with-shim" --check "$P/arm64"
is_eq "--check of an arm64 program: exit 0, {\"result\":\"ok\"}" "$RC:$(cat "$T/o.json")" '0:{"result":"ok"}'
run "$T/o.json" "$R/bin/run-with-shim" --check "$P/hardened-both"
is_eq "--check of a hardened program with both entitlements: exit 0, {\"result\":\"ok\"}" "$RC:$(cat "$T/o.json")" '0:{"result":"ok"}'
run "$T/o.json" "$R/bin/run-with-shim" --check "$P/hardened-allowed"
rc_is "--check of a hardened program with allow-dyld alone: exits 2" 2
jis "... the reason names disable-library-validation" "$T/o.json" .reason \
	"$P/hardened-allowed has the hardened runtime without $LV: its library validation would refuse the ad-hoc signed shim and dyld would abort it"
run "$T/o.json" "$R/bin/run-with-shim" --check "$P/lv"
rc_is "--check of a program with the library-validation flag: exits 2" 2
jis "... the reason names the flag" "$T/o.json" .reason "$P/lv $LVM"
run "$T/o.json" "$R/bin/run-with-shim" --check "$P/script"
rc_is "--check of a script: exits 2" 2
check "--check: the script did not run" test ! -e "$T/ran"
run "$T/o.json" "$R/bin/run-with-shim" --check
rc_is "--check without a command: exits 2" 2

# The zig-built arm64 probe and shim (make shim).
DY=$TOP/build/macos/liblumemetal.dylib PR=$TOP/build/macos/lume-metal-probe
if [ -f "$DY" ] && [ -f "$PR" ]; then
	cp "$DY" "$R/lib/liblumemetal.dylib"
	allowed "the zig-built probe beside the zig-built shim" "$PR"
	cp "$PR" "$P/probe-arm64e"
	printf '\002' | dd of="$P/probe-arm64e" bs=1 seek=8 conv=notrunc 2>/dev/null
	refused "the zig-built probe patched to arm64e" "$P/probe-arm64e" " is arm64e; the shim is arm64 only: dyld would abort it\$"
else
	ok "zig-built probe and shim # SKIP no build/macos (make shim)"
fi

# linux-sim: an ELF shim means ld.so and ELF programs, not dyld: nothing is checked, even under
# DYLD_INSERT_LIBRARIES (as tests/guest/t-run-with-shim.sh does).
cp "$TOP/build/linux/liblumemetal.so" "$R/lib/liblumemetal.dylib" 2>/dev/null || printf '\177ELF\002\001\001\000' >"$R/lib/liblumemetal.dylib"
run "$T/o.json" "$R/bin/run-with-shim" sh -c 'echo ran'
is_eq "an ELF shim: the ELF program runs" "$RC:$(cat "$T/o.json")" 0:ran
t_done

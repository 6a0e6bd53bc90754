#!/bin/sh
# The arm64 Mach-O cross-build (build/macos/, zig), inspected with llvm-objdump --macho: arm64,
# signed, macOS 13.0 or later built against the 26 SDK, bound only to libSystem, libobjc and
# Metal, the interpose section in the dylib, and byte-identical to a second build from a fresh
# cache (build/shim-test/repro/). Then scripts/macho-check, which verifies what dyld checks
# (signature page hashes, interpose tuples, linked dylibs, sdk and minos, undefined symbols), on
# both files and on damaged copies of them, each of which it must refuse for the right reason.
# shellcheck disable=SC1091 # lib.sh is checked on its own
. "$(dirname "$0")/../lib.sh"

OD=${LLVM_OBJDUMP:-llvm-objdump}
MAC=$TOP/build/macos REPRO=$TOP/build/shim-test/repro
DYLIB=$MAC/liblumemetal.dylib PROBE=$MAC/lume-metal-probe

if ! command -v "$OD" >/dev/null 2>&1; then
	not_ok "llvm-objdump available (make deps installs llvm)"
	t_done
fi
for f in "$DYLIB" "$PROBE" "$REPRO/liblumemetal.dylib" "$REPRO/lume-metal-probe"; do
	if [ ! -s "$f" ]; then
		not_ok "cross-built: $f (make shim-test-build; needs zig from make deps)"
		t_done
	fi
done

for f in "$DYLIB" "$PROBE"; do
	b=$(basename "$f")
	"$OD" --macho --private-header "$f" >"$T/$b.mh"
	"$OD" --macho --private-headers "$f" >"$T/$b.lc"
	"$OD" --macho --bind --lazy-bind --weak-bind "$f" >"$T/$b.bind"
	"$OD" --macho --syms "$f" >"$T/$b.syms"
	"$OD" --macho --section-headers "$f" >"$T/$b.sect"
	"$OD" --macho --exports-trie "$f" >"$T/$b.exp"

	case $b in *.dylib) kind=DYLIB ;; *) kind=EXECUTE ;; esac
	check_grep "$b: 64-bit arm64 Mach-O $kind" "^ *MH_MAGIC_64 +ARM64 +ALL .* $kind .*TWOLEVEL" "$T/$b.mh"
	check_grep "$b: LC_CODE_SIGNATURE present" "^ +cmd LC_CODE_SIGNATURE$" "$T/$b.lc"
	awk '/cmd LC_BUILD_VERSION/ { v = 1 } v && /platform/ { p = $2 } v && /sdk/ { s = $2 }
	    v && /minos/ { print p, $2, s; exit }' "$T/$b.lc" >"$T/$b.minos"
	check_grep "$b: built for macOS, minimum 13.0" "^macos 13\.0 " "$T/$b.minos"
	# An SDK older than 26 puts macOS 26 in system-version compatibility (the probe reads 16.0).
	check_grep "$b: built against SDK 26 or later" "^macos [0-9.]+ (2[6-9]|[3-9][0-9])\." "$T/$b.minos"

	# Every library it loads, and every symbol it binds, is libSystem, libobjc or Metal.
	awk '/^ +cmd / { c = $2 } c ~ /^LC_(LOAD|LOAD_WEAK|REEXPORT|LAZY_LOAD|LOAD_UPWARD)_DYLIB$/ && $1 == "name" { print $2 }' \
	    "$T/$b.lc" >"$T/$b.dylibs"
	check_grep "$b: loads libraries" '^/' "$T/$b.dylibs"
	if grep -Evx '/usr/lib/libSystem\.B\.dylib|/usr/lib/libobjc\.A\.dylib|/System/Library/Frameworks/Metal\.framework/Versions/A/Metal' \
	    "$T/$b.dylibs" >"$T/$b.other"; then
		not_ok "$b: loads only libSystem, libobjc and Metal"
		sed 's/^/#   /' "$T/$b.other"
	else
		ok "$b: loads only libSystem, libobjc and Metal"
	fi
	awk '/^Bind table:/ { t = "bind"; next } /^Lazy bind table:/ { t = "lazy"; next }
	    /^Weak bind table:/ { t = "weak"; next } /^segment/ || NF == 0 { next }
	    t == "weak" { print "weak", $NF; next }
	    t != "" { print $(NF - 1), $NF }' "$T/$b.bind" | sort -u >"$T/$b.binds"
	if grep -Ev '^(libSystem|libobjc|Metal) ' "$T/$b.binds" >"$T/$b.badbinds"; then
		not_ok "$b: binds only to libSystem, libobjc and Metal"
		sed 's/^/#   /' "$T/$b.badbinds"
	else
		ok "$b: binds only to libSystem, libobjc and Metal"
	fi
	awk '$NF ~ /^_|^dyld/ && /\*UND\*/ { print $NF }' "$T/$b.syms" | sort -u >"$T/$b.und"
	awk '{ print $2 }' "$T/$b.binds" | sort -u >"$T/$b.bound"
	if comm -23 "$T/$b.und" "$T/$b.bound" | grep . >"$T/$b.unbound"; then
		not_ok "$b: every undefined symbol is bound to a named library"
		sed 's/^/#   /' "$T/$b.unbound"
	else
		ok "$b: every undefined symbol is bound to a named library"
	fi
	check_grep "$b: the Objective-C runtime is used through libobjc" '^libobjc _class_getMethodImplementation$' "$T/$b.binds"
	check_grep "$b: Metal is bound" '^Metal _MTLCreateSystemDefaultDevice$' "$T/$b.binds"

	if cmp -s "$f" "$REPRO/$b"; then
		ok "$b: two cross-builds are byte-identical"
	else
		not_ok "$b: two cross-builds are byte-identical"
		cmp "$f" "$REPRO/$b" | sed 's/^/#   /'
	fi
done

check_grep "liblumemetal.dylib: __DATA,__interpose section present" '^ *[0-9]+ __interpose ' "$T/liblumemetal.dylib.sect"
n=$(awk '$2 == "__interpose" && /Metal/' "$T/liblumemetal.dylib.bind" | wc -l)
if [ "$n" -eq 2 ]; then ok "liblumemetal.dylib: interposes MTLCreateSystemDefaultDevice and MTLCopyAllDevices"
else not_ok "liblumemetal.dylib: 2 interposed Metal functions ($n)"; fi
check_grep "liblumemetal.dylib: install name @rpath/liblumemetal.dylib" '^ +name @rpath/liblumemetal\.dylib ' "$T/liblumemetal.dylib.lc"
awk '$2 ~ /^_/ { print $2 }' "$T/liblumemetal.dylib.exp" | sort >"$T/exports"
printf '_lume_metal_interpose\n_lume_metal_shim_state\n' >"$T/exports.want"
if cmp -s "$T/exports" "$T/exports.want"; then ok "liblumemetal.dylib: exports only the shim's two symbols"
else not_ok "liblumemetal.dylib: exports only the shim's two symbols"; sed 's/^/#   /' "$T/exports"; fi
lacks_grep() { if grep -q -- "$2" "$3"; then not_ok "$1"; else ok "$1"; fi; }
lacks_grep "lume-metal-probe: no interpose section" '__interpose' "$T/lume-metal-probe.sect"

# The structural check dyld would make, on the built files...
MC=$TOP/scripts/macho-check SDK=$TOP/shim/macho-sdk
for f in "$DYLIB" "$PROBE"; do
	check "macho-check $(basename "$f"): signature, interpose, dylibs, sdk/minos, symbols" python3 "$MC" "$f"
done
# ...and on damaged copies. mc_refuses NAME FILE REASON: macho-check exits 1 naming REASON.
mc_refuses() {
	python3 "$MC" "$2" >"$T/mc.out" 2>&1
	rc=$?
	if [ "$rc" -eq 1 ] && grep -qF -- "$3" "$T/mc.out"; then ok "$1"; else
		not_ok "$1 (exit $rc, want 1 and '$3')"; sed 's/^/#   /' "$T/mc.out"; fi
}
# edit SRC DST PYTHON: DST is SRC's bytes b after the Python statement(s) PYTHON.
edit() {
	python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); exec(sys.argv[3]); open(sys.argv[2], "wb").write(b)' "$@"
}
edit "$DYLIB" "$T/flip.dylib" 'b[len(b) // 3] ^= 0x01'
mc_refuses "one flipped byte in the dylib: refused" "$T/flip.dylib" "page hash mismatch in page"
edit "$PROBE" "$T/flip-probe" 'b[100] ^= 0x80'
mc_refuses "one flipped byte in the probe's load commands: refused" "$T/flip-probe" "page hash mismatch in page 0 "
cp "$PROBE" "$T/sdk13-probe" && python3 "$SDK" "$T/sdk13-probe" 13.0
mc_refuses "the probe with sdk 13.0, re-signed: refused for its sdk" "$T/sdk13-probe" "sdk 13.0, want 26.0"
lacks_grep "the probe with sdk 13.0, re-signed: its signature holds" "page hash" "$T/mc.out"
cp "$DYLIB" "$T/sdk13.dylib" && python3 "$SDK" "$T/sdk13.dylib" 13.0
mc_refuses "the dylib with sdk 13.0: refused" "$T/sdk13.dylib" "sdk 13.0, want 26.0"
check_rc "macho-sdk refuses a file that is not Mach-O" 1 python3 "$SDK" "$T/mc.out" 26.0
edit "$PROBE" "$T/limit-probe" 'import struct; c = b.index(bytes.fromhex("fade0c02")) + 32; struct.pack_into(">I", b, c, struct.unpack_from(">I", b, c)[0] - 16384)'
mc_refuses "a code limit that stops a page short of the signature: refused" "$T/limit-probe" "not every byte is covered"
# Re-signed after each change, so that only the change itself can be what is refused.
edit "$DYLIB" "$T/swap.dylib" 'import struct; o = struct.unpack_from("<I", b, b.index(b"__interpose\0") + 48)[0]; b[o:o + 8], b[o + 16:o + 24] = b[o + 16:o + 24], b[o:o + 8]'
python3 "$SDK" "$T/swap.dylib" 26.0
mc_refuses "interpose tuples with their replacements swapped: refused" "$T/swap.dylib" "never calls the replacee _MTL"
edit "$DYLIB" "$T/lib.dylib" 'b[:] = b.replace(b"/usr/lib/libobjc.A.dylib", b"/usr/lib/libobjc.B.dylib")'
python3 "$SDK" "$T/lib.dylib" 26.0
mc_refuses "a dylib path that is not libobjc's: refused" "$T/lib.dylib" "links /usr/lib/libobjc.B.dylib"
edit "$PROBE" "$T/sym-probe" 'b[:] = b.replace(b"_getenv\0", b"_getenx\0").replace(b"_strdup\0", b"_strdux\0")'
python3 "$SDK" "$T/sym-probe" 26.0
mc_refuses "an undefined symbol outside the known list: refused" "$T/sym-probe" "undefined symbol _strdux"
t_done

#!/bin/sh
# The arm64 Mach-O cross-build (build/macos/, zig), inspected with llvm-objdump --macho: arm64,
# signed, macOS 13.0 or later, bound only to libSystem, libobjc and Metal, the interpose section
# in the dylib, and byte-identical to a second build from a fresh cache (build/shim-test/repro/).
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
	awk '/cmd LC_BUILD_VERSION/ { v = 1 } v && /platform/ { p = $2 } v && /minos/ { print p, $2; exit }' \
	    "$T/$b.lc" >"$T/$b.minos"
	check_grep "$b: built for macOS, minimum 13.0" "^macos 13\.0$" "$T/$b.minos"

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
t_done

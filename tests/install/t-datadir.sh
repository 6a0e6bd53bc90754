# Where the binary finds its data ($LUME_METAL_DATADIR, the installed PREFIX/share/lume-metal,
# the source tree) and what --version says about it. The installed case needs a binary built
# with another PREFIX: t-install.sh.
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"
cd "$T" || exit 1
unset LUME_METAL_DATADIR

check_rc "--version" 0 "$LM" --version
check_grep "... the version on the first line" '^lume-metal [0-9]+\.[0-9]+\.[0-9]+$' "$T/.out"
commit=$(git -C "$TOP" rev-parse HEAD 2>/dev/null) || commit=unknown
check_has "... the commit it was built from" "commit: $commit" "$T/.out"
check_has "... the source tree last in the search order" "$TOP (source tree" "$T/.out"
check_grep "... the installed folder before it" 'search order: /[^;]*/share/lume-metal \(installed' "$T/.out"

# A data folder of its own: the guest scripts and manifests, no shim yet.
mkdir -p "$T/data/build"
cp -R "$TOP/guest-payload" "$TOP/manifests" "$T/data/"
check_rc "LUME_METAL_DATADIR comes first" 0 env LUME_METAL_DATADIR="$T/data" "$LM" --version
check_has "... and is the one used" "data: $T/data (\$LUME_METAL_DATADIR)" "$T/.out"
check_has "... a missing shim is named with its path" "shim: missing $T/data/build/macos/liblumemetal.dylib" "$T/.out"
check_has "... and a missing probe" "probe: missing $T/data/build/macos/lume-metal-probe" "$T/.out"
if [ -f "$TOP/build/macos/liblumemetal.dylib" ] && [ -f "$TOP/build/macos/lume-metal-probe" ]; then
	cp -R "$TOP/build/macos" "$T/data/build/"
	env LUME_METAL_DATADIR="$T/data" "$LM" --version >"$T/v" 2>&1
	for f in liblumemetal.dylib:shim lume-metal-probe:probe; do
		sha=$(sha256sum "$TOP/build/macos/${f%:*}" | cut -d' ' -f1)
		check_has "--version: the SHA-256 of the ${f#*:} it would deploy" \
			"${f#*:}: sha256 $sha $T/data/build/macos/${f%:*}" "$T/v"
	done
	check_rc "a macos payload from that folder" 0 env LUME_METAL_DATADIR="$T/data" "$LM" build -o "$T/m.tar.gz"
	check "... carries that shim" sh -c 'tar -xzOf "$1" lib/liblumemetal.dylib | cmp - "$2"' - \
		"$T/m.tar.gz" "$TOP/build/macos/liblumemetal.dylib"
else
	not_ok "build/macos/ has the cross-built shim and probe (make shim)"
fi
cp -R "$TOP/build/linux" "$T/data/build/"
check_rc "a linux-sim payload from that folder" 0 env LUME_METAL_DATADIR="$T/data" "$LM" build --target linux-sim -o "$T/l.tar.gz"
check_rc "... verifies" 0 "$LM" verify "$T/l.tar.gz"
printf '\n# changed\n' >>"$T/data/guest-payload/status.sh"
check "... and holds that folder's scripts, not the source tree's" sh -c \
	'env LUME_METAL_DATADIR="$1" "$2" build --target linux-sim -o "$3/l2.tar.gz" >/dev/null &&
	tar -xzOf "$3/l2.tar.gz" bin/status.sh | cmp - "$1/guest-payload/status.sh"' - "$T/data" "$LM" "$T"

# A folder without the data: used anyway (it was asked for), and the error says what is
# missing and every folder looked in.
mkdir -p "$T/empty"
check_rc "a LUME_METAL_DATADIR without the data: build fails" 2 env LUME_METAL_DATADIR="$T/empty" "$LM" build --target linux-sim -o "$T/x.tar.gz"
check_has "... saying what it lacks" "data folder $T/empty (\$LUME_METAL_DATADIR) lacks guest-payload/common.sh" "$T/.out"
check_has "... and where it looked: that folder" "$T/empty (\$LUME_METAL_DATADIR: lacks guest-payload/common.sh)" "$T/.out"
check_has "... and the source tree" "$TOP (source tree)" "$T/.out"
check_grep "... then the file it could not read" "^lume-metal: $T/empty/[a-z/.-]+: (missing|No such file)" "$T/.out"
check_rc "an empty LUME_METAL_DATADIR counts as unset" 0 env LUME_METAL_DATADIR= "$LM" --version
check_grep "... the search starts with the installed folder" 'search order: /[^;]*/share/lume-metal \(installed' "$T/.out"
check_rc "help says the order" 0 "$LM" help
check_has "... naming the variable" 'Data (guest scripts, manifests, shim): $LUME_METAL_DATADIR, else the installed' "$T/.out"
t_done

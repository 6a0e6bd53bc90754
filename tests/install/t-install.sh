# make install into a temporary prefix, then the installed tool run from another folder with
# the source tree it was built in gone. How the source tree is put out of reach: the test builds
# a copy of the tree ($T/src, the files make install reads, plus the prebuilt build/macos/),
# installs from it, and deletes it (rm -rf) before running the installed commands: the binary
# has only its compiled-in paths, and the one to the source tree no longer exists. (Making the
# tree unreadable would not do: the tests run as root.)
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"
unset LUME_METAL_DATADIR # this test is about where the binary finds its data by itself
P=$T/prefix S=$T/src
mkdir -p "$S/build" "$T/elsewhere" "$T/fake"
# With the tree's objects (build/obj/, build/gen/, their times kept): a new PREFIX and folder
# must compile again exactly the sources that have them compiled in (build/build-id), and link.
(cd "$TOP" && tar -cf - Makefile plugin guest-payload guest-scripts manifests scripts shim man completions build/obj build/gen) |
	tar -C "$S" -xf -
rm -f "$S/plugin/lume-metal"
# -O0: quicker, and it once failed to link (floor without -lm).
check_rc "the copy builds for PREFIX=$P (CFLAGS=-O0)" 0 make -C "$S" plugin/lume-metal PREFIX="$P" CFLAGS=-O0
check "... compiling again only the sources with the prefix and folder in them" \
	test "$(sed -n 's/.* -c -o build\/obj\/\([^ ]*\) .*/\1/p' "$T/.out" | sort | tr '\n' ' ')" = "cmd/cli_version.o core/datadir.o "
check_rc "make install without the shim built stops" 2 make -C "$S" install PREFIX="$P" CFLAGS=-O0
check_has "... naming it" "build/macos/liblumemetal.dylib is missing: run make shim first" "$T/.out"
check "... having installed nothing" test ! -e "$P"
if [ -f "$TOP/build/macos/liblumemetal.dylib" ] && [ -f "$TOP/build/macos/lume-metal-probe" ]; then
	cp -R "$TOP/build/macos" "$S/build/"
else
	not_ok "build/macos/ has the cross-built shim and probe (make shim)"
fi
cd "$T/elsewhere" || exit 1
check_rc "before make install, the built binary uses its source tree" 0 "$S/plugin/lume-metal" --version
check_has "... --version says so" "data: $S (source tree)" "$T/.out"
check_rc "make install PREFIX=$P" 0 make -C "$S" install PREFIX="$P"
for f in bin/lume-metal bin/lume-preprovision bin/fleet-rollback share/man/man1/lume-metal.1 \
	share/lume-metal/guest-payload/install.sh share/lume-metal/guest-payload/run-with-shim \
	share/lume-metal/manifests/schema/profile.schema.json share/lume-metal/manifests/profiles/m1-ultra-tahoe-26.5.json \
	share/lume-metal/manifests/workloads/llama-server.json share/lume-metal/build/macos/liblumemetal.dylib \
	share/lume-metal/build/macos/lume-metal-probe share/bash-completion/completions/lume-metal \
	share/zsh/site-functions/_lume-metal share/fish/vendor_completions.d/lume-metal.fish; do
	check "... installs $f" test -s "$P/$f"
done
check "... the commands are executable" test -x "$P/bin/lume-metal" -a -x "$P/bin/lume-preprovision" -a -x "$P/bin/fleet-rollback"
check_rc "the installed folder comes before the source tree" 0 "$S/plugin/lume-metal" --version
check_has "... --version says installed" "data: $P/share/lume-metal (installed)" "$T/.out"

check_rc "make install DESTDIR=$T/stage (a package's staging)" 0 make -C "$S" install PREFIX=/opt/lm DESTDIR="$T/stage" CFLAGS=-O0
check "... puts everything under DESTDIR/PREFIX" test -x "$T/stage/opt/lm/bin/lume-metal" -a -d "$T/stage/opt/lm/share/lume-metal/build/macos"
check_grep "... the installed lume-preprovision runs PREFIX/bin/lume-metal, not DESTDIR's" '^lm=\$\{LUME_METAL:-/opt/lm/bin/lume-metal\}$' "$T/stage/opt/lm/bin/lume-preprovision"
check_rc "make uninstall DESTDIR=$T/stage" 0 make -C "$S" uninstall PREFIX=/opt/lm DESTDIR="$T/stage"
check "... leaves no file behind" sh -c 'test -z "$(find "$1" -type f)"' - "$T/stage"

rm -rf "$S"
check "the source tree is gone" test ! -e "$S"
check_rc "installed lume-metal --version from another folder" 0 env -u LUME_METAL_DATADIR "$P/bin/lume-metal" --version
cp "$T/.out" "$T/version"
check_has "... data from the installed folder" "data: $P/share/lume-metal (installed)" "$T/version"
for f in liblumemetal.dylib:shim lume-metal-probe:probe; do
	sha=$(sha256sum "$TOP/build/macos/${f%:*}" | cut -d' ' -f1)
	check_has "... the SHA-256 of the installed ${f#*:}" "${f#*:}: sha256 $sha $P/share/lume-metal/build/macos/${f%:*}" "$T/version"
done
check_has "... the source tree it no longer has, last" "$S (source tree: lacks guest-payload/common.sh)" "$T/version"
if git -C "$T" rev-parse HEAD >/dev/null 2>&1; then ok "# skip commit unknown: $T is inside a git work tree"; else
	check_has "... commit unknown: built outside git" "commit: unknown" "$T/version"
fi
check_rc "installed: build a macos payload" 0 env -u LUME_METAL_DATADIR "$P/bin/lume-metal" build -o "$T/elsewhere/p.tar.gz"
check_rc "... and verify it" 0 "$P/bin/lume-metal" verify "$T/elsewhere/p.tar.gz"
check "... it carries the installed shim" sh -c 'tar -xzOf "$1" lib/liblumemetal.dylib | cmp - "$2"' - \
	"$T/elsewhere/p.tar.gz" "$P/share/lume-metal/build/macos/liblumemetal.dylib"
check_rc "installed: a linux-sim payload (not installed) fails" 2 env -u LUME_METAL_DATADIR "$P/bin/lume-metal" build --target linux-sim -o "$T/elsewhere/l.tar.gz"
check_has "... naming the missing file" "$P/share/lume-metal/build/linux/" "$T/.out"

mv "$P/share/lume-metal" "$T/moved"
check_rc "the data folder moved away: build fails" 2 env -u LUME_METAL_DATADIR "$P/bin/lume-metal" build -o "$T/elsewhere/x.tar.gz"
check_has "... saying what the folder lacks" "data folder $P/share/lume-metal (installed) lacks guest-payload/common.sh" "$T/.out"
check_has "... and where it looked" "$S (source tree: lacks guest-payload/common.sh)" "$T/.out"
check_rc "... LUME_METAL_DATADIR finds it where it went" 0 env LUME_METAL_DATADIR="$T/moved" "$P/bin/lume-metal" build -o "$T/elsewhere/x.tar.gz"
mv "$T/moved" "$P/share/lume-metal"

# The installed scripts run the installed binary, not another lume-metal on PATH.
printf '#!/bin/sh\necho "the wrong lume-metal"\nexit 9\n' >"$T/fake/lume-metal"
chmod +x "$T/fake/lume-metal"
check_rc "installed lume-preprovision runs the installed lume-metal" 2 env -u LUME_METAL PATH="$T/fake:$PATH" "$P/bin/lume-preprovision" vm1 --no-such-flag
check_grep "... whose deploy refuses the flag" "^lume-metal: deploy: unknown flag.*--no-such-flag" "$T/.out"
check_rc "installed fleet-rollback runs the installed lume-metal" 2 env -u LUME_METAL PATH="$T/fake:$PATH" "$P/bin/fleet-rollback" --yes --hosts "$T/none.txt"
check_has "... which names the missing hosts file" "$T/none.txt" "$T/.out"
check "... neither ran the one on PATH" sh -c '! grep -q "the wrong lume-metal" "$1"' - "$T/.out"
check_rc "installed man page renders" 0 env MANWIDTH=80 man -l "$P/share/man/man1/lume-metal.1"
check "installed bash completion completes deploy's flags" bash -c '. "$1"; COMP_WORDS=(lume-metal deploy --dry); COMP_CWORD=2;
	_lume_metal; [ "${COMPREPLY[*]}" = --dry-run ]' - "$P/share/bash-completion/completions/lume-metal"
t_done

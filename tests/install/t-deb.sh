# The Debian package: make deb (dpkg-buildpackage -b -uc -us, nocheck, on a copy of the tree
# with the prebuilt macOS shim and probe), dpkg -i on this machine, the installed binary run
# from another folder (--version, build + verify of a payload), then dpkg -r. Needs root.
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"
unset LUME_METAL_DATADIR # this test is about where the binary finds its data by itself

# debian/control's Build-Depends against the Makefile's PKGS (the Debian package owning each
# package's .pc file) and scripts/deps.sh (which installs them for CI).
pkgs=$(make -s -C "$TOP" --no-print-directory --eval 'print-pkgs: ; @echo $(PKGS)' print-pkgs)
sed -n '/^Build-Depends:/,/^[A-Z]/p' "$TOP/debian/control" | sed 's/^Build-Depends://; /^[A-Z]/d' |
	tr ',' '\n' | sed 's/(.*//; s/[[:space:]]//g' | grep -v '^$' >"$T/bdeps"
for p in $pkgs; do
	pc=$(pkg-config --variable=pcfiledir "$p" 2>/dev/null)/$p.pc
	owner=$(dpkg -S "$pc" 2>/dev/null | sed 's/:.*//' | head -n 1)
	if [ -z "$owner" ]; then not_ok "a Debian package provides $p.pc (dpkg -S $pc)"; continue; fi
	check "Build-Depends has $owner, which provides $p.pc" grep -qx -- "$owner" "$T/bdeps"
done
while read -r b; do
	case $b in debhelper-compat) continue ;; esac
	check "scripts/deps.sh installs build dependency $b" grep -Eq -- "(^|[ \"])$b( |\"|\$)" "$TOP/scripts/deps.sh"
done <"$T/bdeps"

if [ "$(id -u)" -ne 0 ]; then ok "# skip the .deb: dpkg -i needs root"; t_done; fi
for c in dpkg-buildpackage dh; do
	command -v "$c" >/dev/null 2>&1 || { not_ok "$c is installed (scripts/deps.sh test: debhelper)"; t_done; }
done
if dpkg-query -W -f='${Status}' lume-metal 2>/dev/null | grep -q 'ok installed'; then
	not_ok "no lume-metal package installed before the test (dpkg -r lume-metal)"; t_done
fi
start=$(date +%s)
# noopt (-O0) and no debug-symbol package: a quicker build of the same package otherwise.
check_rc "make deb" 0 make -C "$TOP" deb DEBDIR="$T/deb" DEB_BUILD_OPTIONS="noopt noautodbgsym"
deb=""
for f in "$T"/deb/lume-metal_*.deb; do [ -f "$f" ] && deb=$f; done
printf '# make deb: %s s\n' "$(($(date +%s) - start))"
check "... wrote the .deb outside the source tree" test -f "$deb"
dpkg-deb -c "$deb" >"$T/contents" 2>&1
for f in ./usr/bin/lume-metal ./usr/bin/lume-preprovision ./usr/bin/fleet-rollback \
	./usr/share/lume-metal/build/macos/liblumemetal.dylib ./usr/share/lume-metal/build/macos/lume-metal-probe \
	./usr/share/lume-metal/guest-payload/install.sh ./usr/share/lume-metal/manifests/schema/profile.schema.json \
	./usr/share/man/man1/lume-metal.1.gz ./usr/share/bash-completion/completions/lume-metal; do
	check_has "... ships $f" " $f" "$T/contents"
done
dpkg-deb -f "$deb" Depends >"$T/depends"
check_grep "... depends on the libraries it links" 'libssh2-1.*' "$T/depends"
# dpkg-shlibdeps sees only linked libraries; libcurl and libarchive are loaded when first needed
# (core/dynlib.h)
check_grep "... and on libcurl and libarchive, which it loads" 'libcurl4 \(>= 7\.62\) \| libcurl4t64, libarchive13 \| libarchive13t64' "$T/depends"

# pkg dpkg ARGS...: dpkg, where man-db's trigger finds its auto-update flag hidden (a private mount
# namespace with an empty /var/lib/man-db), so it does not rebuild the whole manual index twice, once
# for the install and once for the removal (3.7 s of CPU each here), to end where it began. The
# trigger still runs and completes: nothing is left pending. Without a mount namespace, plain dpkg.
pkg() {
	if unshare -m true 2>/dev/null; then
		unshare -m sh -c 'mount -t tmpfs lm-no-mandb /var/lib/man-db && exec "$@"' sh "$@"
	else
		"$@"
	fi
}
t_defer 'pkg dpkg -r lume-metal >/dev/null 2>&1'
check_rc "dpkg -i" 0 pkg dpkg -i "$deb"
# debian/rules passes dpkg-buildflags' flags (hardening=+all) to the Makefile: -z now from LDFLAGS,
# -fstack-protector-strong from CFLAGS.
readelf -d -W /usr/bin/lume-metal >"$T/dynamic" 2>&1
check_grep "... built with the package's LDFLAGS (hardening: BIND_NOW)" 'FLAGS.*BIND_NOW' "$T/dynamic"
readelf -s -W /usr/bin/lume-metal >"$T/symbols" 2>&1
check_grep "... and its CFLAGS (hardening: the stack protector)" ' __stack_chk_fail' "$T/symbols"
mkdir -p "$T/elsewhere"
cd "$T/elsewhere" || exit 1
check_rc "the installed lume-metal --version from another folder" 0 env -u LUME_METAL_DATADIR /usr/bin/lume-metal --version
cp "$T/.out" "$T/version"
check_has "... data from /usr/share/lume-metal" "data: /usr/share/lume-metal (installed)" "$T/version"
sha=$(sha256sum "$TOP/build/macos/liblumemetal.dylib" | cut -d' ' -f1)
check_has "... the shim the tree built" "shim: sha256 $sha /usr/share/lume-metal/build/macos/liblumemetal.dylib" "$T/version"
commit=$(git -C "$TOP" rev-parse HEAD 2>/dev/null) || commit=unknown
check_has "... the commit of the tree it was built from" "commit: $commit" "$T/version"
check_rc "installed: build a macos payload" 0 env -u LUME_METAL_DATADIR /usr/bin/lume-metal build -o "$T/elsewhere/p.tar.gz"
check_rc "... verify it" 0 /usr/bin/lume-metal verify "$T/elsewhere/p.tar.gz"
check "... it carries the packaged shim" sh -c 'tar -xzOf "$1" lib/liblumemetal.dylib | cmp - "$2"' - \
	"$T/elsewhere/p.tar.gz" /usr/share/lume-metal/build/macos/liblumemetal.dylib
check_rc "installed man page renders" 0 env MANWIDTH=80 man -l /usr/share/man/man1/lume-metal.1.gz
check_rc "dpkg -r lume-metal" 0 pkg dpkg -r lume-metal
check "... removes the binary and the data folder" test ! -e /usr/bin/lume-metal -a ! -e /usr/share/lume-metal
check "... and leaves no trigger pending (man-db's ran, without its index)" sh -c \
	'dpkg-query -W -f="\${Status}\n" man-db | grep -qx "install ok installed" && ! dpkg --audit | grep -q .'
t_done

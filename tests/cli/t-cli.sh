# The CLI skeleton and the build/verify commands, run as a user would.
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"

check "--help lists every command of the design" sh -c '"$1" --help >"$2" &&
	for c in build verify probe deploy status rollback ledger host; do grep -q "^  $c " "$2" || exit 1; done' - "$LM" "$T/help"
check_rc "--version" 0 "$LM" --version
check_grep "... prints the version" '^lume-metal [0-9]+\.[0-9]+\.[0-9]+$' "$T/.out"
check_rc "help build" 0 "$LM" help build
check_grep "... shows build's flags" '--target macos\|linux-sim' "$T/.out"
check_rc "build --help is help build" 0 "$LM" build --help
check_grep "... the same text" '^usage: lume-metal build' "$T/.out"
check_rc "no command is a usage error" 2 "$LM"
check_rc "an unknown command is exit 2" 2 "$LM" frobnicate
check_grep "... with a one-line reason" "^lume-metal: 'frobnicate' is not a lume-metal command" "$T/.out"
if [ "$(wc -l <"$T/.out")" -eq 1 ]; then ok "... on one line"; else not_ok "... on one line"; fi
check_rc "an unknown flag is exit 2" 2 "$LM" build --frob
check_grep "... naming the flag" 'build: unknown flag --frob; see' "$T/.out"
check_rc "an unknown top-level flag is exit 2" 2 "$LM" --frob
check_rc "help of an unknown command is exit 2" 2 "$LM" help frobnicate
check_rc "bench without --model is a usage error" 2 "$LM" bench vm1
check_grep "... naming the flag" 'bench: --model PATH' "$T/.out"
check_rc "bench takes one VM" 2 "$LM" bench vm1 vm2 --model m
check_rc "bench -r takes a number" 2 "$LM" bench vm1 --model m -r many

# build and verify on the real tree (make test builds the shim first).
cd "$T" || exit 1
check_rc "build --target linux-sim" 0 "$LM" build --target linux-sim -o "$T/a.tar.gz"
sha=$(awk 'NR==1{print $1}' "$T/.out")
check_rc "a second build" 0 "$LM" build --target linux-sim -o "$T/b.tar.gz" --json
check_grep "... has the same SHA-256" "\"sha256\":\"$sha\"" "$T/.out"
check "... and the same bytes" cmp "$T/a.tar.gz" "$T/b.tar.gz"
check "FILE.sha256 is in shasum -a 256 -c format" sha256sum -c a.tar.gz.sha256
check_rc "build --target macos" 0 "$LM" build --target macos -o "$T/m.tar.gz"
check "... holds the Mach-O dylib and probe" sh -c 'tar -tzf "$1" | grep -qx lib/liblumemetal.dylib &&
	tar -tzf "$1" | grep -qx bin/lume-metal-probe' - "$T/m.tar.gz"
check "... and a LaunchAgent that inserts it with DYLD_INSERT_LIBRARIES" sh -c 'tar -xzOf "$1" LaunchAgent.plist |
	grep -q "<key>DYLD_INSERT_LIBRARIES</key>"' - "$T/m.tar.gz"
check_rc "verify accepts it" 0 "$LM" verify "$T/a.tar.gz"
check_grep "... and prints its SHA-256" "^$sha  " "$T/.out"
check_rc "the default output name" 0 "$LM" build --target linux-sim
check "... is lume-metal-linux-sim.tar.gz" test -s "$T/lume-metal-linux-sim.tar.gz.sha256"

cp "$T/a.tar.gz" "$T/t.tar.gz" && sed 's/a.tar.gz/t.tar.gz/' "$T/a.tar.gz.sha256" >"$T/t.tar.gz.sha256"
printf '\0' | dd of="$T/t.tar.gz" bs=1 seek=200 conv=notrunc 2>/dev/null
check_rc "verify refuses a tampered payload with exit 2" 2 "$LM" verify "$T/t.tar.gz"
check_rc "verify of a missing file is exit 2" 2 "$LM" verify "$T/none.tar.gz"
check_rc "verify takes exactly one file" 2 "$LM" verify a b
check_rc "help deploy" 0 "$LM" help deploy
check_grep "... documents the shared connection flags" '--known-hosts FILE' "$T/.out"
check_rc "deploy with an unknown flag is exit 2" 2 "$LM" deploy --frob vm
check_rc "deploy --timeout takes a number" 2 "$LM" deploy --timeout soon vm
check_grep "... and says so" 'deploy: --timeout soon: not a whole number' "$T/.out"
check_rc "rollback --to must be previous or none" 2 "$LM" rollback --to yesterday vm
check_rc "ledger takes show or export" 2 "$LM" ledger frob
check_rc "an empty ledger shows" 0 "$LM" ledger --state "$T/empty-state"
check_grep "... that it is empty" '^no ledger records' "$T/.out"
# golden records name the VM they were built from ("sourceVm"); an older ledger's golden record
# has it as "source", which an imported record sets to "registry" (where it came from, no VM).
mkdir -p "$T/gs/ledger"
{
	printf '{"format":1,"key":{"image":null,"imageDigest":"sha256:%s","guestOS":"26.5"},"records":[' "$(printf '%064d' 0)"
	printf '{"kind":"golden","vm":"b1","verdict":"pass","time":"2026-08-09T18:00:00Z","sourceVm":"base-new"},'
	printf '{"kind":"golden","vm":"b2","verdict":"pass","time":"2026-08-09T18:01:00Z","source":"base-old"},'
	printf '{"kind":"golden","vm":"b3","verdict":"pass","time":"2026-08-09T18:02:00Z","source":"registry","signer":"sha256:ab"}]}\n'
} >"$T/gs/ledger/g.json"
check_rc "ledger show of golden records" 0 "$LM" ledger --state "$T/gs"
cp "$T/.out" "$T/gs.out"
check_grep "... names the VM a golden record was built from (sourceVm)" 'golden +pass +b1 .* built from base-new' "$T/.out"
check_grep "... and an older ledger's \"source\" VM" 'golden +pass +b2 .* built from base-old' "$T/.out"
check "... but not an imported record's \"source\":\"registry\" as a VM" sh -c \
	'grep -E "golden +pass +b3" "$1" | grep -q "from the registry" && ! grep -q "built from registry" "$1"' - "$T/gs.out"
check_rc "host takes status, enable or disable" 2 "$LM" host frob

mkdir "$T/ro" && chmod 0555 "$T/ro"
check_rc "an output path in a missing directory is exit 2" 2 "$LM" build --target linux-sim -o "$T/nodir/x.tar.gz"
check_grep "... naming the path" 'nodir/x.tar.gz: cannot create a file there' "$T/.out"
check "... and leaves nothing behind" test ! -e "$T/nodir"
check_rc "an unknown profile is exit 2" 2 "$LM" build --target linux-sim --profile nope -o "$T/p.tar.gz"
check_grep "... naming it" 'no profile named "nope"' "$T/.out"
check "... and writes no file" sh -c '! ls "$1" | grep -q "^p.tar.gz"' - "$T"
sed 's/"appleFamilyMax": 1009/"appleFamilyMax": 3001/' "$TOP/manifests/profiles/m1-ultra-tahoe-26.5.json" \
	>"$T/m1-ultra-tahoe-26.5.json"
check_rc "a profile with a Common family is exit 2" 2 "$LM" build --target linux-sim --profile "$T/m1-ultra-tahoe-26.5.json" -o "$T/p.tar.gz"
check_grep "... naming file, field and reason" 'm1-ultra-tahoe-26.5.json: appleFamilyMax: 3001 is a Common family' "$T/.out"
check_rc "an unknown workload is exit 2" 2 "$LM" build --workload nope -o "$T/p.tar.gz"
check_rc "an unknown target is exit 2" 2 "$LM" build --target windows -o "$T/p.tar.gz"
t_done

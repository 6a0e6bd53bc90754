#!/bin/sh
# shellcheck disable=SC1091 # sourced libs
# Regenerates the deploy and ledger seeds from one real run: probe, deploy, status, an unchanged
# redeploy, bench, rollback previous and none against a real sshd guest (tests/deploy/common.sh)
# with the simulated macOS and llama-bench, with `lume-metal ... --json` (a second payload is
# deployed before the rollback). The guest's answers
# are rebuilt from those results in the stub's format (stub_ssh.h); the ledger the run wrote is
# copied as its JSON documents (`ledger show --json`). Needs `make plugin/lume-metal` (SEEDS_LM=... for another binary), the Linux shim
# (`make shim`) and jq. Writes tests/fuzz/{deploy,ledger}/corpus/real-*; not part of `make test`.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/deploy/common.sh"
LM=${SEEDS_LM:-$TOP/plugin/lume-metal}
D=$TOP/tests/fuzz/deploy/corpus L=$TOP/tests/fuzz/ledger/corpus
command -v jq >/dev/null || { echo "seeds.sh needs jq" >&2; exit 2; }

guest tahoe-1 127.0.0.61 || exit 1
G=$T/g/tahoe-1/home
head -c 20000 /dev/urandom >"$G/model.gguf"
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1
"$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz" >/dev/null || exit 1
lm probe tahoe-1 --payload "$T/a.tar.gz" --accept-new --json >"$T/probe" || exit 1
lm deploy tahoe-1 --payload "$T/a.tar.gz" --json >"$T/deploy" || exit 1
lm status tahoe-1 --json >"$T/status" || exit 1
lm bench tahoe-1 --model "$G/model.gguf" -r 5 --evidence "$T/ev" --json >"$T/bench" || exit 1
lm deploy tahoe-1 --payload "$T/b.tar.gz" --json >/dev/null || exit 1
lm rollback tahoe-1 --json >"$T/rollback" || exit 1
lm rollback tahoe-1 --to none --payload "$T/a.tar.gz" --json >"$T/none" || exit 1

RS=$(printf '\036') US=$(printf '\037')
# obj FILE [jq ARGS]: jq on FILE's first line (one result object), printing on one line.
obj() { f=$1; shift; head -n 1 "$f" | jq -c "$@"; }
sha=$(obj "$T/deploy" -r .sha256)
facts() {
	printf 'home=/Users/lume\n'
	obj "$T/deploy" -r '.guest | "kern.osproductversion: \(.os)\nkern.osversion: \(.build)\nhw.model: \(.model)\nmachdep.cpu.brand_string: \(.chip)"'
	[ -z "${1:-}" ] || printf 'current=/Users/lume/Library/Application Support/lume-metal/releases/%s\n' "$1"
	printf 'image={"image": "ghcr.io/trycua/macos-tahoe-cua:latest", "digest": "sha256:1f0c5d1fb0b5d2b0e2e6a1e0d3c4b5a69788796a5b4c3d2e1f00112233445566"}\n'
}
# The FUZZ_SHA of fuzz_deploy.c, so that a guest holding it is unchanged.
fuzz_sha=$(sed -n 's/^#define FUZZ_SHA "\(.*\)"$/\1/p' "$TOP/tests/fuzz/fuzz_deploy.c")
probe_answers() {
	printf '%s0/tmp/lume-metal-probe.Zq3x9a\n%s0%s' "$RS" "$RS" "$RS"
	printf '0{"stock":%s,"shimmed":%s,"pass":%s}\n' "$(obj "$T/probe" .stock)" "$(obj "$T/probe" .shimmed)" \
		"$(obj "$T/probe" .pass)"
}

# A deploy is one exec (deploy_exec.c): its facts, the mark, then install.sh's answer on the same
# channel; its exit status is the install's.
MARK=lume-metal:facts-end
{ printf 'd\n0'; facts; echo "$MARK"; obj "$T/deploy" .install; } >"$D/real-deploy"
{ printf 'd\n0'; facts "$fuzz_sha"; } >"$D/real-deploy-unchanged"
{ printf 'n\n0'; facts; } >"$D/real-deploy-dry-run"
# install.sh's answer when the shim failed validation (stock probed, result failed), then a
# second deploy of the same image: refused by the ledger's verdict.
{ printf 'dd\n1'; facts; echo "$MARK"; obj "$T/deploy" -c \
	'.install | .result = "failed" | .reason = "validation failed: families.Apple9: expected true, got false"'
	printf '%s0' "$RS"; facts; } >"$D/real-deploy-fail-refused"
{ printf 'p\n0'; facts; probe_answers; } >"$D/real-probe"
{ printf 's\n0'; facts "$sha"; printf '%s0' "$RS"; obj "$T/status" .status; } >"$D/real-status"
{ printf 'r\n0'; facts "$sha"; printf '%s0' "$RS"; obj "$T/rollback" .rollback; } >"$D/real-rollback"
{ printf 'R\n0'; facts "$sha"; printf '%s0' "$RS"; obj "$T/none" .rollback; probe_answers; } >"$D/real-rollback-none"
{
	printf 'B\n0'; facts "$sha"
	printf '%s0%s\n' "$RS" "$(obj "$T/bench" -r .hashes.guest.llamaBench)"
	obj "$T/bench" -r '.hashes.guest | "\(.llamaBenchSha256)\n\(.modelSha256)"'
	for arm in stock shim; do
		printf '%s0' "$RS"; cat "$T/ev/$arm.json"; printf '%s' "$US"; cat "$T/ev/$arm.stderr"
	done
} >"$D/real-bench"
# Each image version's document as `ledger show --json` has it, without its "path".
"$LM" ledger show --json --state "$T/state" >"$T/ledger.json" || exit 1
n=$(jq length "$T/ledger.json")
i=0
while [ "$i" -lt "$n" ]; do
	i=$((i + 1)); jq --indent 2 ".[$((i - 1))] | del(.path)" "$T/ledger.json" >"$L/real-ledger-$i.json"
done
# The same seeds from every run: this run's paths as a Mac's.
for f in "$D"/real-* "$L"/real-*; do
	sed -e "s|$TOP/tests/guest-sim/bin|/opt/homebrew/bin|g" -e "s|$G|/Users/lume|g" -e "s|$T|/tmp/lm|g" "$f" >"$T/.seed" &&
		cat "$T/.seed" >"$f"
done
echo "deploy: $(find "$D" -name 'real-*' | wc -l) seeds, ledger: $n documents"

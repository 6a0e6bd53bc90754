#!/bin/sh
# shellcheck disable=SC1091 # sourced libs
# What a registry lookup of verdicts adds to a fleet deploy (docs/verdicts.md): N real sshd
# guests on loopback (simulated macOS), all Lume VMs of one image version in a REAL registry
# (Debian's docker-registry, basic auth, access log on). Controller A validates one of them and
# attaches its signed verdict (ledger push). Then controller B deploys all N, RUNS times each way,
# on fresh guests and a fresh state:
#   registry  an empty ledger, --verdicts registry: the verdict is looked up and imported
#   local     the same verdict already in B's ledger (ledger pull before the timer), --verdicts local
#   again     the verdict already in B's ledger, --verdicts registry: every run asks the registry
#             again (a fail published later must reach it), reading nothing it has recorded
# and prints the median seconds of each, their differences, and the registry's requests per
# registry run (its access log): one lookup per image version, not per VM.
#   dash scripts/bench-fleet.d/verdicts.sh [N] [RUNS]      (defaults 16 and 3)
. "$(dirname "$0")/../../tests/lib.sh"
. "$TOP/tests/deploy/common.sh"
N=${1:-16} RUNS=${2:-3}
L=$TOP/tests/lume-sim/lume
HOME=$T/home LUME_SIM_REGISTRY_HTTP=1 GITHUB_USERNAME=lume GITHUB_TOKEN=s3cret-bench
export HOME LUME_SIM_REGISTRY_HTTP GITHUB_USERNAME GITHUB_TOKEN
unset GHCR_USERNAME GHCR_TOKEN LUME_SIM_IP LUME_LOG_LEVEL
mkdir -p "$HOME/.lume"
R=127.0.0.160:$PORT
t_defer "sh '$TOP/tests/registry.sh' stop '$T/reg'"
sh "$TOP/tests/registry.sh" start "$T/reg" 127.0.0.160 "$PORT" --htpasswd lume:s3cret-bench --accesslog || exit 1
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" src0 stopped null null --folder "$HOME/.lume" --disk-kib 64
"$L" push src0 img:1 --registry "$R" --organization org >/dev/null 2>&1 || exit 1
D=$(curl -sI -u lume:s3cret-bench -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
	"http://$R/v2/org/img/manifests/1" | tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p')
i=1
while [ "$i" -le "$N" ]; do
	guest "vm$i" "127.0.1.$i" || exit 1
	mkdir -p "$HOME/.lume/vm$i" && printf '%s\n' "$D" >"$HOME/.lume/vm$i/.manifest-digest"
	i=$((i + 1))
done
# reset: fresh guests (the stamp golden leaves, image.json, kept) and fresh states.
reset() {
	sh "$TOP/tests/guest-sim/stop-jobs.sh" "$T/g"
	i=1
	while [ "$i" -le "$N" ]; do
		rm -rf "$T/g/vm$i/home/Library" "$T/g/vm$i/home/.guest-sim"
		mkdir -p "$(root "vm$i")" && printf '{"image":"%s/org/img:1"}\n' "$R" >"$(root "vm$i")/image.json"
		i=$((i + 1))
	done
	rm -rf "$T/state-B"
	mkdir -p "$T/state-B"
}
reset
mkdir -p "$T/cfg-A/lume-metal" "$T/cfg-B/lume-metal"
"$LM" key generate "$HOME/key" >/dev/null || exit 1 # under $HOME: trusted-key files are checked up to it
# registry=: where the guests' image.json points, and the host the GITHUB_* credentials are for.
printf 'signing-key=%s\nregistry=%s\n' "$HOME/key" "$R" >"$T/cfg-A/lume-metal/config"
printf 'trusted-key=%s.pub\nregistry=%s\n' "$HOME/key" "$R" >"$T/cfg-B/lume-metal/config"
# Controller A: one validation of the version, its verdict attached.
XDG_CONFIG_HOME=$T/cfg-A validated "A validates vm1 once" vm1 --accept-new
XDG_CONFIG_HOME=$T/cfg-A "$LM" ledger push "$R/org/img:1" --state "$T/state" >/dev/null || exit 1
# deployB MODE: one timed deploy of the N guests by B; prints its seconds.
deployB() {
	t0=$(date +%s.%N)
	XDG_CONFIG_HOME=$T/cfg-B lm deploy --all --parallel "$N" --payload "$T/a.tar.gz" --accept-new --verdicts "$1" \
		--state "$T/state-B" --json >"$T/out-$1" 2>&1
	t1=$(date +%s.%N)
	[ "$(grep -c '"state":"deployed"' "$T/out-$1")" -eq "$N" ] || { cat "$T/out-$1" >&2; echo "bench: not all deployed" >&2; exit 1; }
	echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}'
}
# deployB_again: deployB registry with the verdict already in B's ledger; its registry requests
# go to $T/requests-again.
deployB_again() {
	before=$(grep -c '"GET /v2/\|"HEAD /v2/' "$T/reg/registry.log")
	deployB registry
	cp "$T/out-registry" "$T/out-again"
	echo $(($(grep -c '"GET /v2/\|"HEAD /v2/' "$T/reg/registry.log") - before)) >>"$T/requests-again"
}
run=1
: >"$T/times-registry" && : >"$T/times-local" && : >"$T/requests" && : >"$T/times-again" && : >"$T/requests-again"
while [ "$run" -le "$RUNS" ]; do
	reset
	before=$(grep -c '"GET /v2/\|"HEAD /v2/' "$T/reg/registry.log")
	deployB registry >>"$T/times-registry"
	after=$(grep -c '"GET /v2/\|"HEAD /v2/' "$T/reg/registry.log")
	echo $((after - before)) >>"$T/requests"
	shared=$(grep -c '"shared":true' "$T/out-registry")
	lookups=$(($(grep -c '"state":"imported"' "$T/out-registry") - shared))
	reset
	XDG_CONFIG_HOME=$T/cfg-B "$LM" ledger pull "$R/org/img:1" --state "$T/state-B" >/dev/null || exit 1
	deployB local >>"$T/times-local"
	reset
	XDG_CONFIG_HOME=$T/cfg-B "$LM" ledger pull "$R/org/img:1" --state "$T/state-B" >/dev/null || exit 1
	deployB_again >>"$T/times-again"
	run=$((run + 1))
done
med() { sort -n "$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
printf 'guests %s, runs %s\n' "$N" "$RUNS"
printf 'deploy, verdict looked up in the registry (empty ledger): median %s s (%s)\n' "$(med "$T/times-registry")" \
	"$(tr '\n' ' ' <"$T/times-registry")"
printf 'deploy, verdict already in the ledger:                    median %s s (%s)\n' "$(med "$T/times-local")" \
	"$(tr '\n' ' ' <"$T/times-local")"
printf 'deploy, verdict in the ledger, registry asked again:     median %s s (%s)\n' "$(med "$T/times-again")" \
	"$(tr '\n' ' ' <"$T/times-again")"
printf 'the lookup adds %s s; asking again adds %s s\n' \
	"$(echo "$(med "$T/times-registry") $(med "$T/times-local")" | awk '{printf "%.3f", $1 - $2}')" \
	"$(echo "$(med "$T/times-again") $(med "$T/times-local")" | awk '{printf "%.3f", $1 - $2}')"
printf 'registry requests per registry run (access log): %s; VMs that made the lookup: %s, that waited for it: %s of %s\n' \
	"$(tr '\n' ' ' <"$T/requests")" "$lookups" "$shared" "$N"
printf 'registry requests per run asking again: %s\n' "$(tr '\n' ' ' <"$T/requests-again")"
grep -o '"verdicts":{[^}]*}' "$T/out-registry" | grep -v shared | head -n 1
grep -o '"verdicts":{[^}]*}' "$T/out-again" | grep -v shared | head -n 1
t_done

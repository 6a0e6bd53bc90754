#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# Staged rollout over real sshd guests: a failing canary stops the run, a failure budget stops
# new VMs, and --rollback-on-fail returns what the run changed to its previous release.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

guest f1 127.0.0.21 && guest f2 127.0.0.22 --env LUME_METAL_SIM_WRONG_TYPES=1 && guest f3 127.0.0.23 &&
	guest f4 127.0.0.24 || exit 1
# f2 is another image version (its device cannot be changed), stamped as a golden image would.
mkdir -p "$(root f2)" && printf '{"image":"ghcr.io/x/bad:1"}\n' >"$(root f2)/image.json"
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null &&
	"$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz" >/dev/null
A=$(cut -c1-64 "$T/a.tar.gz.sha256")
# Four workers accepting four new host keys at once must not drop each other's line.
lost=0
for i in 1 2 3; do
	lm status f1 f2 f3 f4 --accept-new --known-hosts "$T/kh-par$i" --parallel 4 >/dev/null 2>&1
	[ "$(grep -c ' ssh-ed25519 ' "$T/kh-par$i")" -eq 4 ] || lost=$((lost + 1))
done
if [ "$lost" -eq 0 ]; then ok "parallel --accept-new keeps every new host key (3 runs of 4)"; else
	not_ok "parallel --accept-new keeps every new host key ($lost of 3 runs lost one)"; fi
cur() { readlink "$(root "$1")/current" 2>/dev/null || echo none; }

# llama-server requires validation: each image version is validated by its first VM in the run.
check_rc "a canary that fails stops the run (exit 1)" 1 lm deploy f2 f1 f3 --payload "$T/a.tar.gz" --canary 1 --accept-new \
	--validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" --json
check_grep "... the canary is validation-failed" '"vm":"f2","state":"validation-failed"' "$T/.out"
check_grep "... the others are skipped, saying why" '"vm":"f1","state":"skipped","message":"the canary failed; not started"' "$T/.out"
check "... and nothing was installed on them" test "$(cur f1)$(cur f3)" = nonenone

check_rc "a passing canary goes on to the rest" 0 lm deploy f1 f3 f4 --payload "$T/a.tar.gz" --canary 1 --batch 1 --accept-new \
	--validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" --json
check_grep "... all deployed" '"summary":\{"deployed":3,"total":3,' "$T/.out"
check "... their image version validated once, by the canary" test "$(grep -c '"meanKld"' "$T/.out")" -eq 1

# Payload B is validated on its own (a verdict covers one payload): by the first VM of each
# version that meets it.
check_rc "a budget of 0 exceeded in the second wave (exit 1)" 1 lm deploy f1 f3 f2 f4 --payload "$T/b.tar.gz" \
	--batch 2 --max-fail 0 --rollback-on-fail --parallel 1 --accept-new --validate-workload --model "$VMODEL" \
	--timeout "$VTIMEOUT" --json
check_grep "... f2 is the failure" '"vm":"f2","state":"(refused|validation-failed)"' "$T/.out"
check_grep "... f4 was never started" '"vm":"f4","state":"skipped","message":"the failure budget was exceeded; not started"' "$T/.out"
check_grep "... f1 and f3 were rolled back" '"vm":"f1","state":"rolled-back".*"deploy":\{"vm":"f1","state":"deployed"' "$T/.out"
check "... to the release they had before" test "$(cur f1) $(cur f3) $(cur f4)" = "releases/$A releases/$A releases/$A"
check_rc "the same with --order input (exit 1)" 1 lm deploy f1 f3 f2 f4 --payload "$T/b.tar.gz" \
	--batch 2 --max-fail 0 --rollback-on-fail --parallel 1 --json --order input
check "... each VM's line in the order given, then the rolled-back ones again, in that order" \
	test "$(sed -n 's/^{"vm":"\([^"]*\)","state":"\([a-z-]*\)".*/\1:\2/p' "$T/.out" | tr '\n' ' ')" = \
	"f1:deployed f3:deployed f2:refused f4:skipped f1:rolled-back f3:rolled-back "
check_rc "--batch takes N or P%" 2 lm deploy f1 --payload "$T/a.tar.gz" --batch 0%
check_rc "--max-fail 25% lets one failure of four through (exit 3: the one was refused by its record)" 3 lm deploy f1 f3 f2 f4 --payload "$T/b.tar.gz" --max-fail 25% --json
check_grep "... so every other VM is deployed" '"summary":\{"deployed":3,.*"total":4,' "$T/.out"
t_done

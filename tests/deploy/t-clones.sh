#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# Ephemeral clones of one deployed image (issue 32: scripts/lume-preprovision deploys to a fresh
# clone of a golden image on every CI job). A clone is a VM name the ledger has no record of,
# with the payload current and install.json there: its unchanged deploy records a compact
# observation, not both probe answers again, and the next deploy of it records nothing; the
# gate's and status's verdict stays the image version's; `ledger prune` and `ledger-keep=N`
# bound what the clones leave, and say what went.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

unvalidated_payload
guest golden 127.0.0.95 || exit 1
check_rc "deploy the golden VM: validated in full, recorded" 0 lm deploy golden --payload "$T/a.tar.gz" --accept-new --json
# The clones: other VM names on the same guest (its release current, its install.json there).
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
	sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" "clone-$i" running 127.0.0.95 true
done
# records KIND: how many records of KIND the ledger holds.
records() { ledger_text "$T/state" | grep -c "\"kind\": \"$1\""; }

check_rc "deploy clone-1, which the ledger has no record of: unchanged" 0 lm deploy clone-1 --payload "$T/a.tar.gz" --json
check_grep "... recorded as an observation, the verdict being recorded already" \
	'"vm":"clone-1","state":"unchanged",.*recorded as an observation' "$T/.out"
ledger_docs "$T/state" "$T/docs"
check "... a record of kind observe: the payload current, no probe answers, under 1 KiB" python3 -c '
import glob, json, sys
recs = [r for f in glob.glob(sys.argv[1] + "/*.json") for r in json.load(open(f))["records"]]
obs = [r for r in recs if r.get("vm") == "clone-1"]
assert len(obs) == 1, obs
o = obs[0]
assert o["kind"] == "observe" and o["result"] == "current" and o["payloadSha256"] == sys.argv[2] and o["reconciled"], o
assert "stock" not in o and "shimmed" not in o and "verdict" not in o, o
size = len(json.dumps(o, separators=(",", ":")))
print("# the observation: %d bytes; the golden deploy record: %d" % (size, len(json.dumps(
    [r for r in recs if r.get("vm") == "golden"][0], separators=(",", ":")))))
assert size < 1024, size' "$T/docs" "$A"
grep '^# the observation' "$T/.out" || true
check_rc "deploy clone-1 again: plainly unchanged" 0 lm deploy clone-1 --payload "$T/a.tar.gz"
check_grep "... nothing reconciled" '^clone-1 +unchanged +this payload is already current$' "$T/.out"
check "... and nothing more recorded" test "$(records observe)" -eq 1

check_rc "deploy clone-2..clone-12 in one run: all unchanged" 0 lm deploy clone-2 clone-3 clone-4 clone-5 clone-6 \
	clone-7 clone-8 clone-9 clone-10 clone-11 clone-12 --parallel 4 --payload "$T/a.tar.gz" --json
check_grep "... eleven observed" '"summary":\{"unchanged":11,' "$T/.out"
check "... one observation each: 12, beside the one deploy record" test "$(records observe) $(records deploy)" = "12 1"
check_rc "status of a clone: ok" 0 lm status clone-5 --json
check_grep "... its verdict the image version's: pass" '"vm":"clone-5",.*"verdict":"pass"' "$T/.out"

check_rc "ledger prune --keep 3 --dry-run --json" 0 "$LM" ledger prune --keep 3 --dry-run --json --state "$T/state"
check_grep "... says what would go: 9 observations" '"dryRun":true,.*"removed":9,' "$T/.out"
check_grep "... per kind" '"kinds":\{"observe":9\}' "$T/.out"
check "... and removes nothing" test "$(records observe)" -eq 12
check_rc "ledger prune --keep 3" 0 "$LM" ledger prune --keep 3 --state "$T/state"
check_grep "... says what it removed" '^removed 9 record\(s\) of 1 image version\(s\)' "$T/.out"
check_grep "... per image version and kind, and what is left" 'removed 9 \(observe 9\), 4 left' "$T/.out"
check "... the newest 3 observations and the verdict left" test "$(records observe) $(records deploy)" = "3 1"
check_rc "deploy clone-2 after it (its observation pruned): unchanged, the gate passes" 0 \
	lm deploy clone-2 --payload "$T/a.tar.gz" --json
check_grep "... observed again" '"vm":"clone-2","state":"unchanged",.*recorded as an observation' "$T/.out"

mkdir -p "$XDG_CONFIG_HOME/lume-metal"
printf 'ledger-keep=2\n' >"$XDG_CONFIG_HOME/lume-metal/config"
check_rc "with ledger-keep=2 in the config file, four more clones: unchanged" 0 lm deploy clone-13 clone-14 clone-15 \
	clone-16 --parallel 2 --payload "$T/a.tar.gz" --json
check "... each append keeps the newest 2 observations" test "$(records observe) $(records deploy)" = "2 1"
check_rc "ledger prune with ledger-keep=2: nothing more to remove" 0 "$LM" ledger prune --json --state "$T/state"
check_grep "... (keep 2 from the config file)" '^\{"keep":2,"dryRun":false,"versions":\[\],"removed":0,"kept":0\}$' "$T/.out"
printf 'ledger-keep=0\n' >"$XDG_CONFIG_HOME/lume-metal/config"
check_rc "ledger-keep=0 is refused (exit 2)" 2 "$LM" ledger prune --state "$T/state"
check_has "... naming the line" "ledger-keep: '0' is not a whole number from 1 to 1000000" "$T/.out"
rm "$XDG_CONFIG_HOME/lume-metal/config"
check_rc "ledger prune --keep 0 is refused (exit 2)" 2 "$LM" ledger prune --keep 0 --state "$T/state"
check_rc "--keep without prune is refused (exit 2)" 2 "$LM" ledger show --keep 3 --state "$T/state"
t_done

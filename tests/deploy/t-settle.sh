#!/bin/sh
# shellcheck disable=SC1091 # lib.sh and common.sh are sourced by path
# The settle off the critical path: once the guest's install has confirmed the shim active in
# the process launchd runs, it says so (install.sh --mark-settle) and watches that process
# --confirm-settle more seconds; meanwhile the controller hands the open channel to the wave's
# watcher and its thread takes the next VM. A VM's result is final only when its settle ends:
# a workload that exits during the settle is still reverted by the guest and recorded as the
# workload's failure; a canary wave waits for its settles; under --max-fail the settle holds its
# thread as before, so no VM starts on an outcome not yet known. The simulated launchd runs the
# jobs for real (tests/guest-sim/bin/launchctl).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/deploy/common.sh"

guest tahoe-s1 127.0.0.65 --env LUME_METAL_SIM_THROTTLE=5 || { not_ok "guest tahoe-s1"; t_done; }
guest tahoe-s2 127.0.0.66 --env LUME_METAL_SIM_THROTTLE=5 || { not_ok "guest tahoe-s2"; t_done; }
unvalidated_payload
# late: llama-server that exits 1 s after its Metal device is up (its model does not load).
sed -e 's|"id": "llama-server"|"id": "late"|' \
	-e 's|"processType"|"environment": {"LM_SIM_WORKLOAD_EXIT": "1", "LM_SIM_WORKLOAD_EXIT_AFTER": "1"}, "processType"|' \
	"$D/manifests/workloads/llama-server.json" >"$D/manifests/workloads/late.json"
check_rc "build the late payload" 0 "$LM" build --target linux-sim --workload late -o "$T/late.tar.gz"
AG=Library/LaunchAgents/com.trycua.lume-metal.llama-server.plist

# --parallel 1, settle 6: tahoe-s2's install got as far as its LaunchAgent while tahoe-s1's still
# watched its workload (the plist is rendered before the bootstrap; install.json is written after
# the settle). The margin is the settle less one VM's upload and install here, well under a second
# on the simulated guests. Before, tahoe-s2 started only once tahoe-s1's install had ended.
check_rc "deploy two VMs, --parallel 1, --confirm-settle 6" 0 \
	lm deploy tahoe-s1 tahoe-s2 --payload "$T/a.tar.gz" --accept-new --parallel 1 --confirm-settle 6 --json
check "... both deployed, the shim active, the settle's values used" \
	test "$(grep -c '"state":"deployed".*"confirm":{"timeout":60,"settle":6}.*"process":{"pid":[0-9]*,"shimActive":true' "$T/.out")" -eq 2
check "... tahoe-s2's activation began during tahoe-s1's settle" \
	test "$T/g/tahoe-s2/home/$AG" -ot "$(root tahoe-s1)/install.json"
check_rc "ledger" 0 "$LM" ledger --state "$T/state" --json
check "... a passing record of each, with the settle" \
	test "$(grep -o '"vm":"tahoe-s[12]"[^{}]*"verdict":"pass",[^{}]*"confirm":{"timeout":60,"settle":6}' "$T/.out" | wc -l)" -eq 2

# A workload that exits 1 s into its settle, on both VMs, --parallel 1: the fleet went on to
# tahoe-s2 during tahoe-s1's settle, and still both are reverted and recorded as the workload's.
# (On a loaded machine the exit may come before /health's first 200: "was not ready".)
rm -f "$(root tahoe-s1)/install.json"
check_rc "the late workload on both, --parallel 1, --confirm-settle 6: exit 1" 1 \
	lm deploy tahoe-s1 tahoe-s2 --payload "$T/late.tar.gz" --parallel 1 --confirm-settle 6 --json
cp "$T/.out" "$T/late.out"
check "... both validation-failed: the workload exited" \
	test "$(grep -cE '"state":"validation-failed".*"message":"the workload launchd runs (does not have the shim|was not ready): [^"]*SIMULATED: failed to load the model[^"]*\(a workload failure on this VM[^"]*\)"' "$T/late.out")" -eq 2
check "... both with cause workload" \
	test "$(grep -c '^{"vm":"tahoe-s[12]","state":"validation-failed".*"cause":"workload"' "$T/late.out")" -eq 2
for g in tahoe-s1 tahoe-s2; do
	check "... $g: release a is current again" test "$(readlink "$(root $g)/current")" = "releases/$A"
done
check_rc "status" 0 lm status tahoe-s1 tahoe-s2 --json
check "... the old service runs on both, the shim active in it" \
	test "$(grep -c '"state":"running","pid":[0-9]*,"shimActive":true' "$T/.out")" -eq 2
check_rc "ledger" 0 "$LM" ledger --state "$T/state" --json
check "... a failed record of each, cause workload" \
	test "$(grep -o '"vm":"tahoe-s[12]","[^{}]*"workload":"late",[^{}]*"verdict":"fail",[^{}]*"cause":"workload"' "$T/.out" | wc -l)" -eq 2

# A canary wave waits for its settles: the canary's workload exits during the settle, so the
# next VM is not started.
check_rc "--canary 1, the late workload: exit 1" 1 \
	lm deploy tahoe-s1 tahoe-s2 --payload "$T/late.tar.gz" --canary 1 --parallel 2 --confirm-settle 6 --json
check_grep "... the canary validation-failed, the workload's" '"vm":"tahoe-s1","state":"validation-failed".*"cause":"workload"' "$T/.out"
check_grep "... the next VM not started" '"vm":"tahoe-s2","state":"skipped","message":"the canary failed; not started"' "$T/.out"

# Under --max-fail the settle keeps its thread: with --parallel 1 and --max-fail 0 the first
# VM's failure during its settle is known before the second would start.
check_rc "--max-fail 0, --parallel 1, the late workload: exit 1" 1 \
	lm deploy tahoe-s1 tahoe-s2 --payload "$T/late.tar.gz" --max-fail 0 --parallel 1 --confirm-settle 6 --json
check_grep "... the first validation-failed, the workload's" '"vm":"tahoe-s1","state":"validation-failed".*"cause":"workload"' "$T/.out"
check_grep "... the second not started" '"vm":"tahoe-s2","state":"skipped","message":"the failure budget was exceeded; not started"' "$T/.out"

# A guest that hangs during its settle holds up no other VM. --parallel 1: tahoe-s1 goes first
# and is handed to the watcher at its settle's mark; once tahoe-s2's release is unpacked
# (tahoe-s1 is in its 6 s settle then), tahoe-s1's sshd and everything under it are stopped, as
# a frozen VM: no byte of its answer comes. tahoe-s2 is reported as its answer comes, tahoe-s1
# at its own deadline. Before, the watcher read tahoe-s1's answer first, blocking until its
# deadline, and tahoe-s2's result waited behind it.
check_rc "build payload b" 0 "$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz"
B=$(sha256sum <"$T/b.tar.gz" | cut -c1-64)
tree() { echo "$1" && for c in $(pgrep -P "$1"); do tree "$c"; done; }
lm deploy tahoe-s1 tahoe-s2 --payload "$T/b.tar.gz" --parallel 1 --confirm-timeout 10 --confirm-settle 6 --timeout 20 --json \
	>"$T/hang.out" 2>"$T/hang.err" &
pid=$!
n=0
while [ ! -d "$(root tahoe-s2)/releases/$B" ] && [ $n -lt 300 ]; do sleep 0.05; n=$((n + 1)); done
stopped=$(tree "$(cat "$T/g/tahoe-s1/sshd.pid")" | tr '\n' ' ')
# shellcheck disable=SC2086 # one pid per word
kill -STOP $stopped
t_defer "kill -CONT $stopped 2>/dev/null"
wait "$pid"
rc=$?
# shellcheck disable=SC2086
kill -CONT $stopped 2>/dev/null
check "tahoe-s1 hung in its settle: exit 1" test "$rc" -eq 1
check_grep "... tahoe-s2 deployed" '"vm":"tahoe-s2","state":"deployed"' "$T/hang.out"
check_grep "... tahoe-s1 timed out" '"vm":"tahoe-s1","state":"timeout"' "$T/hang.out"
check "... tahoe-s2 reported first, as its answer came, not after tahoe-s1's deadline" \
	test "$(grep -o '"vm":"tahoe-s[12]","state":"[a-z-]*"' "$T/hang.out" | head -n 1)" = '"vm":"tahoe-s2","state":"deployed"'
# Its channel's close and the disconnect, after the deadline, wait 1 s each, not another whole
# --timeout (the run took 41.8 s before, 23 s now).
secs=$(sed -n 's/.*"summary":.*"seconds":\([0-9]*\).*/\1/p' "$T/hang.out")
check "... and the run ended within 10 s of tahoe-s1's 20 s deadline (${secs:-none} s), not another --timeout later" \
	test "${secs:-99}" -lt 30
t_done

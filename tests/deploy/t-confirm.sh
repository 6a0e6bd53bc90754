#!/bin/sh
# shellcheck disable=SC1091 # lib.sh and common.sh are sourced by path
# deploy and the process launchd runs: the guest's install confirms that the workload's process
# has the shim active (its pid and the shim's state come back in the install JSON, and status
# shows them); a workload that crash-loops or stays stock there is reverted by the guest and the
# VM is validation-failed with the reason, the old release's service running again with the
# shim. The simulated launchd runs the jobs for real (tests/guest-sim/bin/launchctl).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/deploy/common.sh"

# A crash loop shows in a fraction of a second; no case here waits out the confirmation.
guest tahoe-c 127.0.0.61 --env LUME_METAL_SIM_THROTTLE=0.2 ||
	{ not_ok "guest tahoe-c"; t_done; }
G="$T/g/tahoe-c/home"
SD="$G/Library/Logs/lume-metal/com.trycua.lume-metal.llama-server.shim"
# A data folder of this tree's, whose workloads include the ones made below; none requires a
# validate record (the gate is t-validate's), so these deploys go straight to the guest.
D=$T/data
unvalidated_datadir "$D"
LUME_METAL_DATADIR=$D
export LUME_METAL_DATADIR
check_rc "build the workload's payload" 0 "$LM" build --target linux-sim -o "$T/a.tar.gz"
A=$(sha256sum <"$T/a.tar.gz" | cut -c1-64)
# wl NAME PROGRAM PROCESS: a payload whose workload (the same label) runs PROGRAM, its shim scoped
# to PROCESS.
wl() {
	sed -e "s|\"id\": \"llama-server\"|\"id\": \"$1\"|" -e "s|\"/opt/homebrew/bin/llama-server\"|\"$2\"|" \
		-e "s|\"processes\": \\[\"llama-server\"\\]|\"processes\": [\"$3\"]|" \
		"$D/manifests/workloads/llama-server.json" >"$D/manifests/workloads/$1.json"
	check_rc "build the $1 payload" 0 "$LM" build --target linux-sim --workload "$1" -o "$T/$1.tar.gz"
}
printf '#!/bin/sh\necho "llama-server: failed to load model" >&2\nexit 1\n' >"$T/crash"
chmod +x "$T/crash"
wl crash "$T/crash" crash
wl named /opt/homebrew/bin/llama-server ollama

check_rc "deploy" 0 lm deploy tahoe-c --payload "$T/a.tar.gz" --accept-new --json
check_grep "... deployed, the shim active in the process launchd runs" '"state":"deployed".*"process":\{"pid":[0-9]+,"shimActive":true' "$T/.out"
pid=$(sed -n 's/.*"process":{"pid":\([0-9]*\),.*/\1/p' "$T/.out")
check_has "... the pid's state file in the guest says so" '"active":true' "$SD/$pid"
check_rc "ledger" 0 "$LM" ledger --state "$T/state" --json
check_grep "... the deploy record keeps that pid and the shim active in it" "\"process\":\\{\"pid\":$pid,\"shimActive\":true\\}" "$T/.out"
check_rc "status" 0 lm status tahoe-c
check_grep "... names that pid and the shim active in it" "service running, pid $pid, shim active in it;" "$T/.out"

# reverted NAME PAYLOAD MESSAGE-ERE: deploying it ends validation-failed with MESSAGE, and the
# old release is current, its service running again with the shim active. (--force: the ledger
# records each failure for the image version, which refuses the next deploy without it.)
reverted() {
	check_rc "$1: deploy exits 1" 1 lm deploy tahoe-c --payload "$T/$2.tar.gz" --force
	check_grep "$1: validation-failed with the reason" "^tahoe-c +validation-failed +$3" "$T/.out"
	check "$1: the old release is current" test "$(readlink "$(root tahoe-c)/current")" = "releases/$A"
	check_rc "$1: status" 0 lm status tahoe-c --json
	r_pid=$(sed -n 's/.*"state":"running","pid":\([0-9]*\),"shimActive":true.*/\1/p' "$T/.out")
	check "$1: the old service runs again, the shim active in it" kill -0 "${r_pid:-0}"
	check_has "$1: ... as its state file says" '"active":true' "$SD/${r_pid:-0}"
}
reverted "a crash loop" crash "the workload launchd runs does not have the shim: $T/crash exited \\(last exit code 1, [0-9]+ runs\\): it crashes; its stderr log ends: .*llama-server: failed to load model"
reverted "a process the shim is not scoped to" named "the workload launchd runs does not have the shim: the shim stays stock in /opt/homebrew/bin/llama-server \\(pid [0-9]+\\): process llama-server is not in LUME_METAL_PROCESSES"
check_rc "ledger" 0 "$LM" ledger --state "$T/state" --json
check_grep "... the failed record keeps the stock process's pid and its shim state" '"workload":"named","target":"linux-sim","verdict":"fail".*"process":\{"pid":[0-9]+,"shimActive":false\}' "$T/.out"

# The shim's reason comes from the guest: a hostile one is escaped in the status line.
R=$(root tahoe-c)/current
chmod -R u+w "$R/bin"
printf '#!/bin/sh\nprintf %s\n' "'{\"current\":\"c\",\"previous\":null,\"releases\":[],\"service\":{\"loaded\":true,\"state\":\"running\",\"pid\":7,\"shimActive\":false,\"shim\":{\"reason\":\"\\\\u001b]0;pwned\\\\u0007\"}},\"launchAgent\":{\"present\":true,\"matches\":true},\"drift\":[],\"driftDetected\":false}'" >"$R/bin/status.sh"
check_rc "status of a guest whose status.sh answers a hostile shim reason" 0 lm status tahoe-c
check_has "... the reason escaped" 'pid 7, shim stays stock in it: \x1b]0;pwned\x07;' "$T/.out"
if grep -q "$(printf '\033')" "$T/.out"; then not_ok "... no raw escape byte"; else ok "... no raw escape byte"; fi
t_done

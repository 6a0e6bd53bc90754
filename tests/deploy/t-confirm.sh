#!/bin/sh
# shellcheck disable=SC1091 # lib.sh and common.sh are sourced by path
# deploy and the process launchd runs: the guest's install confirms that the workload's process
# has the shim active (its pid and the shim's state come back in the install JSON, and status
# shows them); a workload that crash-loops or stays stock there is reverted by the guest and the
# VM is validation-failed with the reason, the old release's service running again with the
# shim. What the failure was about decides the ledger: an image cause (the shim never active in
# the job) records the image version as failing, so another VM of it is refused; a workload cause
# (the workload exited after its shim was active) fails that VM alone, its record skipped by the
# gate and by status. --confirm-timeout and --confirm-settle (or the config file's keys) reach
# the guest's install.sh, winning over the guest's environment (sshd.sh sets
# LUME_METAL_CONFIRM_SETTLE=0), and come back in the result and the record. The simulated launchd
# runs the jobs for real (tests/guest-sim/bin/launchctl).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/deploy/common.sh"

# install sees the first exit at once; launchd's respawn 5 s later (10 s on a Mac) cannot append
# its own lines to the stderr log before install reads its end (0.2 s could, on a loaded CI run).
guest tahoe-c 127.0.0.61 --env LUME_METAL_SIM_THROTTLE=5 ||
	{ not_ok "guest tahoe-c"; t_done; }
guest tahoe-d 127.0.0.63 --env LUME_METAL_SIM_THROTTLE=5 ||
	{ not_ok "guest tahoe-d"; t_done; }
G="$T/g/tahoe-c/home"
SD="$G/Library/Logs/lume-metal/com.trycua.lume-metal.llama-server.shim"
# A data folder of this tree's, whose workloads include the ones made below; none requires a
# validate record (the gate is t-validate's), so these deploys go straight to the guest.
unvalidated_payload
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
# wl_env NAME ENV: llama-server whose LaunchAgent also sets ENV (a JSON object): the simulated
# server's LM_SIM_WORKLOAD_EXIT (exit, "the model does not load", after its device is up) and
# LM_SIM_WORKLOAD_EXIT_AFTER (how long after).
wl_env() {
	sed -e "s|\"id\": \"llama-server\"|\"id\": \"$1\"|" -e "s|\"processType\"|\"environment\": $2, \"processType\"|" \
		"$D/manifests/workloads/llama-server.json" >"$D/manifests/workloads/$1.json"
	check_rc "build the $1 payload" 0 "$LM" build --target linux-sim --workload "$1" -o "$T/$1.tar.gz"
}
wl_env model '{"LM_SIM_WORKLOAD_EXIT": "1"}'
wl_env late '{"LM_SIM_WORKLOAD_EXIT": "1", "LM_SIM_WORKLOAD_EXIT_AFTER": "3"}'
# llama-server's manifest says how to know it serves (readiness: /health answers 200): slow loads
# its model 2 s after its device is up (503 until then), hung never does.
wl_env slow '{"LM_SIM_WORKLOAD_READY_AFTER": "2"}'
wl_env hung '{"LM_SIM_WORKLOAD_READY_AFTER": "never"}'

check_rc "deploy" 0 lm deploy tahoe-c --payload "$T/a.tar.gz" --accept-new --json
check_grep "... deployed, the shim active in the process launchd runs" '"state":"deployed".*"process":\{"pid":[0-9]+,"shimActive":true' "$T/.out"
pid=$(sed -n 's/.*"process":{"pid":\([0-9]*\),.*/\1/p' "$T/.out")
check_has "... the pid's state file in the guest says so" '"active":true' "$SD/$pid"
check_rc "ledger" 0 "$LM" ledger --state "$T/state" --json
check_grep "... the deploy record keeps that pid and the shim active in it" "\"process\":\\{\"pid\":$pid,\"shimActive\":true\\}" "$T/.out"
check_rc "status" 0 lm status tahoe-c
check_grep "... names that pid and the shim active in it" "service running, pid $pid, shim active in it;" "$T/.out"

# Bad confirmation values are refused on the controller, exit 2, naming them; so are values that
# do not fit in the VM's --timeout (the guest would still wait when the deploy gives up on it).
for k in "--confirm-timeout 0|--confirm-timeout 0: not a whole number from 1 to 3600" \
	"--confirm-timeout 3601|--confirm-timeout 3601: not a whole number from 1 to 3600" \
	"--confirm-settle 5s|--confirm-settle 5s: not a whole number from 0 to 600" \
	"--confirm-settle -1|--confirm-settle -1: not a whole number from 0 to 600" \
	"--confirm-timeout 200|--confirm-timeout 200 and --confirm-settle 5 (the default) do not fit in --timeout 120" \
	"--confirm-settle 30 --timeout 90|--confirm-timeout 60 (the default) and --confirm-settle 30 do not fit in --timeout 90"; do
	# shellcheck disable=SC2086 # flags and values are words
	check_rc "deploy ${k%%|*}: exit 2" 2 lm deploy tahoe-c --payload "$T/a.tar.gz" ${k%%|*}
	check_has "... naming it" "lume-metal: deploy: ${k#*|}" "$T/.out"
done

# A workload failure: the server exits after its shim was active (its model does not load),
# caught by --confirm-settle 3 (the flag wins over the guest's LUME_METAL_CONFIRM_SETTLE=0). That
# VM's deploy fails and reverts; the other VMs of the image version are not gated.
check_rc "a server that exits after its shim was active, --confirm-settle 3: exit 1" 1 \
	lm deploy tahoe-c --payload "$T/model.tar.gz" --confirm-settle 3 --json
# (It exits 0.3 s after its device is up: before or after /health's first 200, as the machine's
# load has it, so the reason says either.)
check_grep "... validation-failed, said to be the workload's on this VM" '"state":"validation-failed".*"message":"the workload launchd runs (does not have the shim|was not ready): /opt/homebrew/bin/llama-server exited [^"]*SIMULATED: failed to load the model[^"]* \(a workload failure on this VM: other VMs of this image version are not gated\)"' "$T/.out"
check_has "... cause workload in the result" '"cause":"workload"' "$T/.out"
check_has "... with the confirmation's values used: the flag's settle" '"confirm":{"timeout":60,"settle":3}' "$T/.out"
IL=$(field imageLabel "$T/.out")
check "... the old release is current" test "$(readlink "$(root tahoe-c)/current")" = "releases/$A"
check_rc "ledger" 0 "$LM" ledger --state "$T/state" --json
check_grep "... the record: a failed deploy with cause workload and the values used" '"workload":"model",[^{}]*"verdict":"fail","reasons":\[[^]]*\],"cause":"workload","confirm":\{"timeout":60,"settle":3\}' "$T/.out"
check_rc "ledger show" 0 "$LM" ledger --state "$T/state"
check_grep "... says fail:workload, not fail" ' deploy +fail:workload +tahoe-c ' "$T/.out"
check_rc "status" 0 lm status tahoe-c
check_grep "... the image verdict stays pass" "image verdict pass;" "$T/.out"
check_rc "another VM of that image version: deployed, not refused" 0 lm deploy tahoe-d --payload "$T/a.tar.gz" --accept-new --json
check_has "... deployed" '"state":"deployed"' "$T/.out"
check "... the same image version" test "$(field imageLabel "$T/.out")" = "$IL"

# --confirm-settle decides how long the guest watches: a server that exits 3 s after its device
# is up is caught by the config file's confirm-settle=10 and passes the flag's 0 (the flag wins
# over the file). The guest fails at the exit, not at the end of the watch.
CF=$XDG_CONFIG_HOME/lume-metal/config
mkdir -p "${CF%/*}"
printf 'confirm-timeout=30\nconfirm-settle=10\n' >"$CF"
check_rc "config shows the confirmation keys of the file" 0 "$LM" config
check_grep "... confirm-timeout" "^confirm-timeout +30 +config:$CF:1\$" "$T/.out"
check_grep "... confirm-settle" "^confirm-settle +10 +config:$CF:2\$" "$T/.out"
check_rc "a server that exits 3 s after its device, the file's settle of 10: exit 1" 1 \
	lm deploy tahoe-c --payload "$T/late.tar.gz" --json
check_has "... caught: the workload's failure" '"cause":"workload"' "$T/.out"
check_has "... the file's values used" '"confirm":{"timeout":30,"settle":10}' "$T/.out"
check_rc "... with --confirm-settle 0: deployed" 0 lm deploy tahoe-c --payload "$T/late.tar.gz" --confirm-settle 0 --json
check_has "... the flag's settle used" '"confirm":{"timeout":30,"settle":0}' "$T/.out"
check_rc "ledger" 0 "$LM" ledger --state "$T/state" --json
check_grep "... the passing record keeps the values used" '"workload":"late",[^{}]*"verdict":"pass",[^{}]*"confirm":\{"timeout":30,"settle":0\}' "$T/.out"
printf 'confirm-settle=soon\n' >"$CF"
check_rc "a bad confirm-settle in the config file: exit 2" 2 lm deploy tahoe-c --payload "$T/a.tar.gz"
check_has "... naming it" "deploy: $CF:1: confirm-settle: 'soon' is not a whole number of seconds from 0 to 600" "$T/.out"
rm -f "$CF"
check_rc "back to release a" 0 lm deploy tahoe-c --payload "$T/a.tar.gz"

# Deployed means serving: a server that never answers /health with 200 is reverted within
# --confirm-timeout, the workload's failure (its shim was active), which gates no other VM of its
# image version; one that loads its model 2 s after its device is up is deployed once /health
# answers 200, the time to ready in the result and the record.
check_rc "a server never ready (503 throughout), --confirm-timeout 3: exit 1" 1 \
	lm deploy tahoe-c --payload "$T/hung.tar.gz" --confirm-timeout 3 --json
check_grep "... validation-failed: not ready in time, the workload's failure" '"state":"validation-failed".*"message":"the workload launchd runs was not ready: /opt/homebrew/bin/llama-server \(pid [0-9]+\) did not answer 200 at http://127.0.0.1:8080/health within 3 s of its bootstrap \(its last answer: HTTP 503\), the shim active in it \(a workload failure on this VM: other VMs of this image version are not gated\)"' "$T/.out"
check_has "... cause workload" '"cause":"workload"' "$T/.out"
check "... the old release is current" test "$(readlink "$(root tahoe-c)/current")" = "releases/$A"
check_rc "... the image verdict stays pass" 0 lm status tahoe-c
check_grep "... (status)" "image verdict pass;" "$T/.out"
check_rc "a server ready 2 s after its device is up: deployed" 0 lm deploy tahoe-c --payload "$T/slow.tar.gz" --json
ms=$(field readyMs "$T/.out")
# (1800, not 2000: the guest times it by two files' mtimes, which Linux stamps from its coarse
# clock; in this VM that lags the server's own clock by more than a tick (4 ms) when a vCPU
# waits for the hypervisor: 1968 in a loaded run of tests/guest/t-confirm.sh. APFS's are exact.
# An install that did not wait for the 200 reports the time to the device, a few hundred ms.)
check_range "... the result's readyMs: most of the 2 s it loaded, within the wait of 60" "$ms" 1800 60000
check_rc "ledger" 0 "$LM" ledger --state "$T/state" --json
check_grep "... and the record's, beside the confirmation's values" "\"workload\":\"slow\",[^{}]*\"verdict\":\"pass\",[^{}]*\"confirm\":\\{[^{}]*\\},\"readyMs\":${ms}[,}]" "$T/.out"
check_rc "... and back to release a" 0 lm deploy tahoe-c --payload "$T/a.tar.gz"

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
check_grep "... and its cause: the image version's" '"workload":"named",[^{}]*"verdict":"fail",[^{}]*"cause":"image"' "$T/.out"

# An image failure on tahoe-c refuses the other VMs of its image version, with that payload (a
# verdict covers one payload: another payload is validated in full, not refused by it).
check_rc "an image failure (the shim stays stock): exit 1" 1 lm deploy tahoe-c --payload "$T/named.tar.gz" --force
check_grep "... said to be the image version's" "^tahoe-c +validation-failed +.*not in LUME_METAL_PROCESSES \\(an image failure: this image version is now recorded as failing\\)\$" "$T/.out"
check_rc "another VM of that image version, that payload: refused (exit 3)" 3 lm deploy tahoe-d --payload "$T/named.tar.gz"
check_grep "... by tahoe-c's record" "^tahoe-d +refused +this image version is recorded as failing validation.*refused by the record of VM tahoe-c" "$T/.out"
check_rc "... another payload: not refused by it" 0 lm deploy tahoe-d --payload "$T/a.tar.gz"
check_rc "status of tahoe-d" 0 lm status tahoe-d
check_grep "... the image verdict of the payload it runs (A): pass" "image verdict pass;" "$T/.out"

# The shim's reason comes from the guest: a hostile one is escaped in the status line.
R=$(root tahoe-c)/current
chmod -R u+w "$R/bin"
printf '#!/bin/sh\nprintf %s\n' "'{\"current\":\"c\",\"previous\":null,\"releases\":[],\"service\":{\"loaded\":true,\"state\":\"running\",\"pid\":7,\"shimActive\":false,\"shim\":{\"reason\":\"\\\\u001b]0;pwned\\\\u0007\"}},\"launchAgent\":{\"present\":true,\"matches\":true},\"drift\":[],\"driftDetected\":false}'" >"$R/bin/status.sh"
check_rc "status of a guest whose status.sh answers a hostile shim reason" 0 lm status tahoe-c
check_has "... the reason escaped" 'pid 7, shim stays stock in it: \x1b]0;pwned\x07;' "$T/.out"
if grep -q "$(printf '\033')" "$T/.out"; then not_ok "... no raw escape byte"; else ok "... no raw escape byte"; fi
t_done

# deploy, status, unchanged redeploy, rollback previous and none, the ledger gate and --force,
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# against real sshd guests named through the simulated lume.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

guest tahoe-1 127.0.0.2 || exit 1
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null && "$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz" >/dev/null
A=$(cut -c1-64 "$T/a.tar.gz.sha256") B=$(cut -c1-64 "$T/b.tar.gz.sha256")
"$LM" build --target macos -o "$T/mac.tar.gz" >/dev/null 2>&1 || echo "# no macos payload: the wrong-target check will fail"

check_rc "an unknown host key is refused (exit 3)" 3 lm deploy tahoe-1 --payload "$T/a.tar.gz"
check_grep "... naming its fingerprint" 'unknown host key SHA256:' "$T/.out"
check "... and nothing reached the guest" test ! -e "$(root tahoe-1)"
before=$(find /tmp -maxdepth 1 -name "lume-metal-probe.*" | wc -l)
check_rc "probe --accept-new" 0 lm probe tahoe-1 --payload "$T/a.tar.gz" --accept-new --json
check_grep "... shows stock Apple5 and 32 KiB" '"stock":\{.*"Apple5":true,"Apple6":false.*"maxThreadgroupMemoryLength":32768' "$T/.out"
check_grep "... and shimmed Apple9 and 64 KiB, passing" '"shimmed":\{.*"Apple9":true,"Apple10":false.*"maxThreadgroupMemoryLength":65536.*"pass":true' "$T/.out"
check "... installs nothing" test ! -e "$(root tahoe-1)"
check_rc "probe in text" 0 lm probe tahoe-1 --payload "$T/a.tar.gz"
check_grep "... shows stock and shimmed side by side" '^tahoe-1 +probed +stock: Apple5, 32 KiB threadgroup memory, shim not active \| shimmed: Apple9, 64 KiB threadgroup memory, shim active \| pass$' "$T/.out"
check "... and leaves no scratch directory" test "$(find /tmp -maxdepth 1 -name "lume-metal-probe.*" | wc -l)" -eq "$before"
# llama-server requires validation: no deploy before a passing validate record of the version.
check_rc "deploy before the image version is validated: refused (exit 3)" 3 lm deploy tahoe-1 --payload "$T/a.tar.gz"
check_has "... with the command that validates it" 'no validate record; validate it first: lume-metal validate tahoe-1 --workload llama-server --target linux-sim --model PATH' "$T/.out"
check "... and nothing installed" test ! -e "$(root tahoe-1)"
validated "validate tahoe-1's image version" tahoe-1 --payload "$T/a.tar.gz"
check_rc "deploy --accept-new" 0 lm deploy tahoe-1 --payload "$T/a.tar.gz" --accept-new --json
cp "$T/.out" "$T/deploy1"
check_grep "... is deployed" '"state":"deployed"' "$T/deploy1"
check_grep "... after validating stock and shimmed" '"validated":true' "$T/deploy1"
check_grep "... where the shim showed Apple9" '"Apple9":true,"Apple10":false' "$T/deploy1"
check "... current is the payload" test "$(readlink "$(root tahoe-1)/current")" = "releases/$A"
check "... the LaunchAgent is in place" test -f "$T/g/tahoe-1/home/Library/LaunchAgents/com.trycua.lume-metal.llama-server.plist"
check_grep "... and the process launchd runs has the shim active (install.sh confirmed it)" '"process":\{"pid":[0-9]+,"shimActive":true,"shim":\{"pid":[0-9]+,"process":"llama-server","active":true' "$T/deploy1"
check "... and the staged upload is gone" sh -c '! ls -A "$1/staging" | grep -q tar.gz' - "$(root tahoe-1)"
check_grep "... in one exec (facts, upload and install on one channel)" '"sshExecs":1[,}]' "$T/deploy1"
check "... running the stock probe (no record of this image version yet)" sh -c '! grep -q stockProbe "$1"' - "$T/deploy1"
check_rc "status in text" 0 lm status tahoe-1
check_grep "... shows the release, the service with its pid, the shim, the verdict and drift" \
	"^tahoe-1 +ok +current ${A%"${A#????????????}"}, previous none; service running, pid [0-9]+, shim active in it; shim set by its LaunchAgent; image verdict pass; drift none\$" "$T/.out"
check_rc "status" 0 lm status tahoe-1 --json
check_grep "... shows the release current" "\"current\":\"$A\"" "$T/.out"
check_grep "... the service running, the shim active in its process" '"state":"running","pid":[0-9]+,"shimActive":true' "$T/.out"
check_grep "... and the ledger's verdict" '"verdict":"pass"' "$T/.out"
f="$(root tahoe-1)/releases/$A/profile.json"
chmod u+w "$f" && echo '#' >>"$f"
check_rc "a changed file in the release: status exits 1" 1 lm status tahoe-1 --json
check_grep "... as drift, naming the file" '"state":"drift".*"drift":\["profile.json"' "$T/.out"
check_rc "deploy --force reinstalls the current payload" 0 lm deploy tahoe-1 --payload "$T/a.tar.gz" --force --json
check_grep "... sending it again" '"bytesSent":[1-9]' "$T/.out"
check "... validating in full (no recorded stock answer)" sh -c '! grep -q stockProbe "$1"' - "$T/.out"
check_rc "... and status is ok again" 0 lm status tahoe-1 --json
check_grep "... with no drift" '"state":"ok"' "$T/.out"
check_rc "the same deploy again" 0 lm deploy tahoe-1 --payload "$T/a.tar.gz" --json
check_grep "... is unchanged" '"state":"unchanged"' "$T/.out"
check_grep "... and sends no payload bytes" '"bytesSent":0' "$T/.out"
check_grep "... in one exec" '"sshExecs":1[,}]' "$T/.out"
mv "$(root tahoe-1)/releases/$A" "$T/moved-release"
check_rc "current names a release that is gone: deploy" 0 lm deploy tahoe-1 --payload "$T/a.tar.gz" --json
check_grep "... installs it again, not unchanged" '"state":"deployed".*"bytesSent":[1-9]' "$T/.out"
check_grep "... taking the stock answer this image version has on record with this payload" '"stockProbe":"recorded".*"stock":\{"probe":"lume-metal-probe".*"shimmed":\{.*"expect":\{[^}]*"pass":true' "$T/.out"
"$LM" ledger --state "$T/state" show --json >"$T/ledger.json" 2>&1
check_grep "... and its record says so" '"stockRecorded":true' "$T/ledger.json"
check "... and current is whole" test -f "$(root tahoe-1)/current/MANIFEST.json"

# A verdict covers one payload: A's validate record does not let B through (it did before).
check_rc "a second payload, its own not validated: refused (exit 3)" 3 lm deploy tahoe-1 --payload "$T/b.tar.gz"
check_has "... saying the records are of another payload" "has validate records, but none for this payload (${B%"${B#????????????}"}...: a verdict covers one payload)" "$T/.out"
check "... and A stays current" test "$(readlink "$(root tahoe-1)/current")" = "releases/$A"
validated "validate the second payload on tahoe-1's image version" tahoe-1 --payload "$T/b.tar.gz"
check_rc "a second payload" 0 lm deploy tahoe-1 --payload "$T/b.tar.gz"
check "... becomes current, the first previous" test "$(readlink "$(root tahoe-1)/current")" = "releases/$B" -a \
	"$(readlink "$(root tahoe-1)/previous")" = "releases/$A"
check_rc "rollback (previous)" 0 lm rollback tahoe-1
check_grep "... rolled back" 'rolled-back' "$T/.out"
check "... the first payload is current again" test "$(readlink "$(root tahoe-1)/current")" = "releases/$A"
check_rc "rollback --to none" 0 lm rollback tahoe-1 --to none --target linux-sim --json
check_grep "... then probes and shows the stock answers" '"probe":\{.*"stock":\{.*"Apple5":true,"Apple6":false.*"maxThreadgroupMemoryLength":32768' "$T/.out"
check "... leaving nothing of lume-metal behind" test ! -e "$(root tahoe-1)"
ledger_docs "$T/state" "$T/ledger-docs"
check "... its ledger row names the release it removed, not the probe payload" sh -c 'python3 - "$1" "$2" <<"PY"
import glob, json, sys
recs = [r for f in glob.glob(sys.argv[1] + "/*.json") for r in json.load(open(f))["records"] if r["kind"] == "rollback" and r.get("to") == "none"]
sys.exit(0 if recs and recs[-1].get("payloadSha256") == sys.argv[2] and "probePayloadSha256" in recs[-1] else 1)
PY' - "$T/ledger-docs" "$A"
check_rc "rollback --to none with a payload of another target (exit 1)" 1 lm rollback tahoe-1 --to none --payload "$T/mac.tar.gz"
check_grep "... says why in text" '^tahoe-1 +failed +rolled back to none, but the stock probe after it failed: .*the probe payload is for macos but this guest runs linux-sim' "$T/.out"
check "... removes releases, current and previous" sh -c '! ls -A "$1" | grep -Eq "releases|current|previous"' - "$(root tahoe-1)"
check "... and the LaunchAgent" test ! -e "$T/g/tahoe-1/home/Library/LaunchAgents/com.trycua.lume-metal.llama-server.plist"
check_rc "rollback with nothing installed" 0 lm rollback tahoe-1 --to none --no-probe
check_grep "... has nothing to do" 'nothing to roll back' "$T/.out"

check_rc "ledger show" 0 "$LM" ledger --state "$T/state" show
check_grep "... lists the deploy" "deploy +pass +tahoe-1 +${A%"${A#????????????}"}" "$T/.out"
check_grep "... and the rollbacks" 'rollback +rolled-back' "$T/.out"
check_rc "ledger export --csv" 0 "$LM" ledger --state "$T/state" export
check_grep "... has the evidence columns" '^image,image_digest,guest_os,guest_build,guest_model,host_chip,host_build,time,kind,vm,verdict,payload_sha256,profile,workload,metric,unit,host_baremetal,stock_guest,safe_shim_guest,guest_ratio,shim_to_host_percent$' "$T/.out"
check_grep "... and a row per record" "^unknown,,26.5.2,25F84,VirtualMac2\\,1|^unknown,,26.5.2,25F84,\"VirtualMac2,1\"" "$T/.out"

# A guest whose device the shim cannot change (the simulated maxThreadgroupMemoryLength has the
# wrong type, so the shim fails closed): validation fails and nothing is activated.
guest tahoe-bad 127.0.0.3 --env LUME_METAL_SIM_WRONG_TYPES=1 || exit 1
validated "the workload validates on that image version (on tahoe-1)" tahoe-1 --payload "$T/a.tar.gz" --image ghcr.io/x/bad:1
check_rc "a failing validation is exit 1" 1 lm deploy tahoe-bad --payload "$T/a.tar.gz" --accept-new --image ghcr.io/x/bad:1 --json
check_grep "... as validation-failed" '"state":"validation-failed"' "$T/.out"
check "... with nothing activated" test ! -e "$(root tahoe-bad)/current"
check_rc "status in text of a VM with nothing installed" 0 lm status tahoe-bad --image ghcr.io/x/bad:1
check_grep "... is not the same ok line" '^tahoe-bad +ok +current none, previous none; service not loaded; shim not set \(no LaunchAgent\); image verdict fail; drift none$' "$T/.out"
rm -rf "$T/state.bad" && cp -r "$T/state" "$T/state.bad"
check_rc "... in text, the line names each difference" 1 "$LM" deploy tahoe-bad --payload "$T/a.tar.gz" --force \
	--lume "$TOP/tests/lume-sim/lume" --port "$PORT" -u "$ME" -i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state.bad"
check_grep "... as expected and got" '^tahoe-bad +validation-failed +validation failed: .*maxThreadgroupMemoryLength: expected 65536, got 32768' "$T/.out"
cp "$T/.out" "$T/vf.out"
check "... not as a pointer into the JSON" sh -c '! grep -q "see shimmed.expect.differences" "$1"' - "$T/vf.out"
check "... and no release left behind" sh -c '[ -z "$(ls -A "$1/releases" 2>/dev/null)" ]' - "$(root tahoe-bad)"
check_rc "the ledger" 0 "$LM" ledger --state "$T/state" show --image ghcr.io/x/bad:1
check_grep "... records the failure" 'deploy +fail +tahoe-bad' "$T/.out"
check_rc "the next deploy of that image version is refused (exit 3)" 3 lm deploy tahoe-bad --payload "$T/a.tar.gz" --image ghcr.io/x/bad:1
check_grep "... saying why" 'recorded as failing validation; --force' "$T/.out"
check_rc "--dry-run on it changes nothing and says so" 3 lm deploy tahoe-bad --payload "$T/a.tar.gz" --image ghcr.io/x/bad:1 --dry-run
stop_guest tahoe-bad
sh "$TOP/tests/sshd.sh" start "$T/g/tahoe-bad" 127.0.0.3 "$PORT"
check_rc "--force validates it again; now the device passes" 0 lm deploy tahoe-bad --payload "$T/a.tar.gz" --image ghcr.io/x/bad:1 --force
check "... and it is current" test "$(readlink "$(root tahoe-bad)/current")" = "releases/$A"
validated "the second payload validates on that image version" tahoe-1 --payload "$T/b.tar.gz" --image ghcr.io/x/bad:1
check_rc "a dry run of a new payload" 0 lm deploy tahoe-bad --payload "$T/b.tar.gz" --image ghcr.io/x/bad:1 --dry-run --json
check_grep "... prints the plan" '"plan":\["upload' "$T/.out"
check "... and changes nothing" test "$(readlink "$(root tahoe-bad)/current")" = "releases/$A"

sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" tahoe-off stopped null null
# The pre-provisioning hook: waits for SSH, deploys, and says whether the VM may be used.
check_rc "lume-preprovision on a good VM exits 0" 0 env LUME_METAL="$LM" WAIT=5 sh "$TOP/scripts/lume-preprovision" tahoe-1 \
	--lume "$TOP/tests/lume-sim/lume" --port "$PORT" -u "$ME" -i "$T/id_ed25519" --known-hosts "$T/known_hosts" \
	--state "$T/state" --payload "$T/a.tar.gz"
check_grep "... and says it is ready" 'tahoe-1 is ready with the shim active' "$T/.out"
check_rc "lume-preprovision on a VM whose host key is unknown exits 3" 3 env LUME_METAL="$LM" WAIT=5 sh "$TOP/scripts/lume-preprovision" \
	tahoe-1 --lume "$TOP/tests/lume-sim/lume" --port "$PORT" -u "$ME" -i "$T/id_ed25519" --known-hosts "$T/no_known_hosts" \
	--state "$T/state" --payload "$T/a.tar.gz"
check_grep "... and says not to hand it to a workload" 'tahoe-1 refused by a gate; do not hand it to a workload' "$T/.out"
# pp ARGS...: lume-preprovision on tahoe-1 with the harness's connection flags.
pp() { env LUME_METAL="$LM" WAIT=5 MODEL="${pp_model:-}" sh "$TOP/scripts/lume-preprovision" tahoe-1 --lume "$TOP/tests/lume-sim/lume" \
	--port "$PORT" -u "$ME" -i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state" --payload "$T/a.tar.gz" "$@"; }
check_rc "lume-preprovision on an image version not yet validated exits 3" 3 pp --image ghcr.io/x/new:1 --force
check_has "... saying MODEL validates it first" 'set MODEL to validate it first' "$T/.out"
pp_model=$VMODEL
check_rc "... with MODEL it validates the version, then deploys: exit 0" 0 pp --image ghcr.io/x/new:1 --force \
	--timeout "$VTIMEOUT"
pp_model=""
check_grep "... ready" 'tahoe-1 is ready with the shim active' "$T/.out"
check_rc "... after the validation, in the ledger" 0 "$LM" ledger --state "$T/state" show --image ghcr.io/x/new:1
check_grep "... a validate pass" 'validate +pass +tahoe-1' "$T/.out"
check_rc "lume-preprovision on a stopped VM exits 1 after waiting" 1 env LUME_METAL="$LM" WAIT=1 sh "$TOP/scripts/lume-preprovision" \
	tahoe-off --lume "$TOP/tests/lume-sim/lume" --state "$T/state" --payload "$T/a.tar.gz"
check_grep "... saying it must not be used" 'tahoe-off must not be used' "$T/.out"

# Lume states.
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" tahoe-off stopped null null
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" tahoe-noip running null null
check_rc "a stopped VM is exit 1" 1 lm deploy tahoe-off --target linux-sim
check_grep "... with a hint to lume run" 'VM tahoe-off is stopped; start it with `lume run tahoe-off --no-display`' "$T/.out"
check_rc "a VM with no IP is exit 1" 1 lm status tahoe-noip
check_grep "... saying so" 'has no IP address yet' "$T/.out"
check_rc "an unknown VM is exit 1" 1 lm status no-such-vm
check_grep "... naming it" 'VM no-such-vm: not found by lume' "$T/.out"
check_rc "status --all covers every VM lume lists" 1 lm status --all --json
check_grep "... in its summary" '"summary":\{.*"total":4' "$T/.out"
check_rc "--all with names is a usage error" 2 lm status --all tahoe-1
check_rc "no VM at all is a usage error" 2 lm status
t_done

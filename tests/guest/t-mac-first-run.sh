#!/bin/sh
# shellcheck disable=SC1091 # lib.sh and guest-lib.sh are sourced by path
# scripts/mac-first-run --local against the simulated guest (codesign, lipo, sw_vers, defaults,
# llama-bench of tests/guest-sim) with a real linux-sim release installed: one PASS/FAIL/SKIP
# line per check, one JSON evidence file, exit 1 when a check fails. The linux-sim release's
# files are ELF, which codesign and lipo refuse as the real ones do; a release carrying the
# zig-built arm64 Mach-O shim and probe shows their PASS side, and an arm64e probe beside an
# arm64 shim the architecture check's FAIL, and a hardened workload program the entitlements
# check's FAIL (allow-dyld-environment-variables alone) and PASS (with disable-library-validation).
# dyld's DYLD_PRINT_INTERPOSING report exists on macOS only: here that check says SKIP.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"
MFR=$TOP/scripts/mac-first-run
guest mfr
payload "$T/a.tar.gz" || not_ok "build payload a"
install "$T/o.json" "$T/a.tar.gz" "$SHA"
rc_is "setup: install a" 0
# line OUT NAME: the line of check NAME in OUT ("RESULT NAME: detail").
line() { grep -E "^(PASS|FAIL|SKIP) $2: " "$1" | head -n 1; }
# result OUT NAME: its PASS, FAIL or SKIP.
result() { r=$(line "$1" "$2"); printf '%s' "${r%% *}"; }

dash "$MFR" --local --evidence "$T/ev1.json" >"$T/o1" 2>"$T/e1"
is_eq "a linux-sim release: exit 1 (codesign and lipo refuse ELF)" $? 1
is_eq "release found" "$(result "$T/o1" release)" PASS
is_eq "codesign shim: FAIL on an ELF" "$(result "$T/o1" "codesign shim")" FAIL
check_grep "... with codesign's message" '^FAIL codesign shim: .*liblumemetal.so: code object is not signed at all$' "$T/o1"
is_eq "lipo probe: FAIL on an ELF" "$(result "$T/o1" "lipo probe")" FAIL
check_grep "... with lipo's message" "^FAIL lipo probe: fatal error: .*lipo: can't figure out the architecture type of: " "$T/o1"
is_eq "interposition: SKIP off macOS" "$(result "$T/o1" interposition)" SKIP
is_eq "the shim is active on AppleParavirtDevice" "$(result "$T/o1" "shim active on AppleParavirtDevice")" PASS
is_eq "probe productVersion = sw_vers" "$(result "$T/o1" "probe productVersion = sw_vers")" PASS
is_eq "no host: its preference is SKIP" "$(result "$T/o1" "host preference")" SKIP
is_eq "no model: llama-bench SKIP" "$(result "$T/o1" "llama-bench simdgroup paths")" SKIP
check_grep "no workload program here: SKIP, naming it" '^SKIP workload takes the shim: no program at /opt/homebrew/bin/llama-server ' "$T/o1"
is_json "the evidence is one JSON object" "$T/ev1.json"
jis "the evidence: mode" "$T/ev1.json" .mode local
jis "the evidence: the workload's program, from the release's LaunchAgent" "$T/ev1.json" .guest.workload.program /opt/homebrew/bin/llama-server
jis "the evidence: one entry per check line" "$T/ev1.json" '.checks#' "$(grep -cE '^(PASS|FAIL|SKIP) ' "$T/o1")"
jis "the evidence: the failures counted" "$T/ev1.json" .failed "$(grep -c '^FAIL ' "$T/o1")"
jget "$T/ev1.json" .guest.probe.stdout >"$T/ps"
check_grep "the evidence keeps the probe's output" '"class":"AppleParavirtDevice"' "$T/ps"

# hookPoints: reported when the probe has them, SKIP when it predates them.
"$ROOT/current/bin/lume-metal-probe" >"$T/probe.json" 2>/dev/null
if grep -q '"hookPoints":{' "$T/probe.json"; then
	is_eq "hook points: reported" "$(result "$T/o1" "hook points")" PASS
	jget "$T/ev1.json" '.guest.hook.supportsFamily:' >"$T/hk"
	check_grep "hook points: supportsFamily: present, with its types" '^present true, types .' "$T/hk"
else
	is_eq "hook points: SKIP, the probe predates them" "$(result "$T/o1" "hook points")" SKIP
fi

# A version string the probe does not take (it keeps [A-Za-z0-9._-] only): the two disagree.
LUME_METAL_SIM_OS_VERSION="26.6 (a)" dash "$MFR" --local --evidence "$T/ev2.json" >"$T/o2" 2>&1
check_grep "productVersion against sw_vers: FAIL naming both" '^FAIL probe productVersion = sw_vers: probe says nothing, sw_vers says 26\.6 \(a\) ' "$T/o2"

# The host preference (this machine as the host, its simulated defaults).
D=com.apple.gpusw.ParavirtualizedGraphics K=ForceUnrestrictedDeviceFeatureLevel
dash "$MFR" --local --host local --evidence "$T/ev3.json" >"$T/o3" 2>&1
check_grep "host preference unset: FAIL" "^FAIL host preference: $D $K is not set: The domain/default pair of \\($D, $K\\) does not exist; " "$T/o3"
defaults write "$D" "$K" -bool true
dash "$MFR" --local --host local --evidence "$T/ev4.json" >"$T/o4" 2>&1
is_eq "host preference set: PASS" "$(result "$T/o4" "host preference")" PASS
jis "the evidence: the host's value" "$T/ev4.json" .host.value 1

# llama-bench with a model: its ggml_metal_device_init lines, stock and shimmed.
printf 'GGUF stand-in bytes\n' >"$T/model.gguf"
dash "$MFR" --local --model "$T/model.gguf" --evidence "$T/ev5.json" >"$T/o5" 2>&1
check_grep "llama-bench: the shimmed run takes the simdgroup paths" '^PASS llama-bench simdgroup paths: shimmed: reduction true, matrix mul\. true \(stock reduction false\)$' "$T/o5"
jget "$T/ev5.json" '.guest.llama-bench.stock' >"$T/lbs"
check_grep "the evidence keeps the stock run's lines" 'ggml_metal_device_init: simdgroup reduction   = false' "$T/lbs"

# No release: one FAIL, and the run says so.
guest empty
dash "$MFR" --local --evidence "$T/ev6.json" >"$T/o6" 2>&1
is_eq "no release: exit 1" $? 1
check_grep "no release: FAIL, deploy first" '^FAIL release: no lume-metal release at .*: deploy first$' "$T/o6"

# The zig-built arm64 Mach-O shim and probe in a release: codesign and lipo PASS (the probe
# cannot run on Linux, so the device checks FAIL here).
guest mfr
DY=$TOP/build/macos/liblumemetal.dylib PR=$TOP/build/macos/lume-metal-probe
if [ -f "$DY" ] && [ -f "$PR" ]; then
	M=$T/macrel
	cp -R "$ROOT/current/" "$M"
	chmod -R u+w "$M"
	cp "$DY" "$M/lib/liblumemetal.dylib"
	cp "$PR" "$M/bin/lume-metal-probe"
	sed -i 's|^LUME_METAL_PRELOAD_LIB=.*|LUME_METAL_PRELOAD_LIB=lib/liblumemetal.dylib|' "$M/shim.env"
	dash "$MFR" --local --release "$M" --evidence "$T/ev7.json" >"$T/o7" 2>&1
	is_eq "Mach-O shim: codesign PASS" "$(result "$T/o7" "codesign shim")" PASS
	is_eq "Mach-O probe: codesign PASS" "$(result "$T/o7" "codesign probe")" PASS
	check_grep "Mach-O shim: lipo says arm64" '^PASS lipo shim: arm64 ?$' "$T/o7"
	is_eq "the shim covers the probe's arm64" "$(result "$T/o7" "shim covers the probe's architectures")" PASS
	jget "$T/ev7.json" .guest.codesign.shim >"$T/cd"
	check_grep "the evidence keeps codesign -d --verbose" 'flags=0x20002\(adhoc,linker-signed\)' "$T/cd"
	# An arm64e probe (its cpusubtype patched to 2): the arm64 shim cannot load into it, and the
	# patch broke the probe's signature.
	printf '\002' | dd of="$M/bin/lume-metal-probe" bs=1 seek=8 conv=notrunc 2>/dev/null
	dash "$MFR" --local --release "$M" --evidence "$T/ev8.json" >"$T/o8" 2>&1
	check_grep "an arm64e probe beside an arm64 shim: FAIL naming arm64e" "^FAIL shim covers the probe's architectures: the shim lacks arm64e " "$T/o8"
	check_grep "... and its changed header fails codesign" '^FAIL codesign probe: .*invalid signature \(code or signature have been modified\)' "$T/o8"
	# The workload's program (its path through the LaunchAgent's __LUME_METAL_HOME__ token, a
	# space in HOME): a hardened one with allow-dyld-environment-variables alone would be aborted
	# by dyld (library validation refuses the ad-hoc shim); with disable-library-validation too,
	# dyld loads the shim (a macOS release: DYLD_INSERT_LIBRARIES).
	mkdir -p "$HOME/bin"
	sed -i 's|^LUME_METAL_PRELOAD_VAR=.*|LUME_METAL_PRELOAD_VAR=DYLD_INSERT_LIBRARIES|' "$M/shim.env"
	sed -i 's|<string>/opt/homebrew/bin/llama-server</string>|<string>__LUME_METAL_HOME__/bin/server</string>|' "$M/LaunchAgent.plist"
	macho "$HOME/bin/server" "$ARM64" 0 2 65538 "$(ents allow-dyld-environment-variables)"
	dash "$MFR" --local --release "$M" --evidence "$T/ev12.json" >"$T/o12" 2>&1
	check_has "a hardened workload with allow-dyld alone: FAIL, its flags and entitlements, run-with-shim's reason" \
		"FAIL workload takes the shim: $HOME/bin/server: flags 0x10002(adhoc,runtime); cs entitlements true: allow-dyld-environment-variables; $HOME/bin/server has the hardened runtime without com.apple.security.cs.disable-library-validation: its library validation would refuse the ad-hoc signed shim and dyld would abort it" "$T/o12"
	jget "$T/ev12.json" .guest.entitlements.workload >"$T/went"
	check_has "... the evidence keeps its entitlements" '<key>com.apple.security.cs.allow-dyld-environment-variables</key>' "$T/went"
	jget "$T/ev12.json" .guest.codesign.workload >"$T/wcd"
	check_grep "... and its codesign -d --verbose" 'flags=0x10002\(adhoc,runtime\)' "$T/wcd"
	macho "$HOME/bin/server" "$ARM64" 0 2 65538 "$(ents allow-dyld-environment-variables disable-library-validation)"
	dash "$MFR" --local --release "$M" --evidence "$T/ev13.json" >"$T/o13" 2>&1
	check_has "with disable-library-validation too: PASS, dyld would load the shim" \
		"PASS workload takes the shim: $HOME/bin/server: flags 0x10002(adhoc,runtime); cs entitlements true: allow-dyld-environment-variables, disable-library-validation; run-with-shim --check: dyld would load the shim" "$T/o13"
else
	ok "Mach-O release # SKIP no build/macos shim and probe (make shim)"
fi

# --ssh: the same checks in a real sshd guest on loopback (tests/sshd.sh: the simulated macOS
# commands first on its PATH) with the release installed in its HOME, whose path has a space.
G2=$T/sshd
guest ssh "$G2/home dir"
install "$T/o.json" "$T/a.tar.gz" "$SHA"
rc_is "ssh guest: install a" 0
PORT=$((30000 + $$ % 20000)) ADDR=127.0.37.$(($$ % 250 + 2))
ME=$(PATH=/usr/bin:/bin id -un)
ssh-keygen -q -t ed25519 -N '' -f "$G2.key" && mkdir -p "$G2" && cp "$G2.key" "$G2/id_ed25519" && cp "$G2.key.pub" "$G2/id_ed25519.pub"
t_defer "sh '$TOP/tests/sshd.sh' stop '$G2'"
if sh "$TOP/tests/sshd.sh" start "$G2" "$ADDR" "$PORT" --home "$HOME" >"$T/sshd.out" 2>&1; then
	printf 'Host *\n\tIdentityFile %s\n\tUserKnownHostsFile /dev/null\n\tStrictHostKeyChecking no\n\tLogLevel ERROR\n\tBatchMode yes\n' "$G2.key" >"$T/ssh_config"
	dash "$MFR" --ssh "$ME@$ADDR:$PORT" --ssh-config "$T/ssh_config" --evidence "$T/ev9.json" >"$T/o9" 2>&1
	is_eq "--ssh: the guest answers, exit 1 (ELF again)" $? 1
	is_eq "--ssh: the release under a HOME with a space" "$(result "$T/o9" release)" PASS
	is_eq "--ssh: the shim is active on AppleParavirtDevice" "$(result "$T/o9" "shim active on AppleParavirtDevice")" PASS
	jis "--ssh: the evidence names the target" "$T/ev9.json" .target "$ME@$ADDR:$PORT"
	# shellcheck disable=SC2088 # a literal ~/, for the guest to expand
	dash "$MFR" --ssh "$ME@$ADDR:$PORT" --ssh-config "$T/ssh_config" --release '~/nowhere/it'"'"'s' --evidence "$T/ev10.json" >"$T/o10" 2>&1
	check_grep "--ssh: --release goes across quoted (~/ is the guest's HOME)" "^FAIL release: no lume-metal release at $HOME/nowhere/it's " "$T/o10"
else
	not_ok "--ssh: start an sshd guest"
	sed 's/^/#   /' "$T/sshd.out"
fi
dash "$MFR" --ssh "nobody@127.0.0.1:1" --ssh-config "$T/ssh_config" --evidence "$T/ev11.json" >"$T/o11" 2>&1
is_eq "--ssh to nothing: exit 2" $? 2
check_grep "... the guest answered nothing" '^mac-first-run: the guest answered nothing' "$T/o11"

# Usage.
check_rc "no target: exit 2" 2 dash "$MFR"
check_rc "two targets: exit 2" 2 dash "$MFR" --local --ssh a@b
t_done

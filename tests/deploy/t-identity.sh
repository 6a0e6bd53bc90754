#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# Every ledger record's identity comes from the Mac that runs the VM: the image digest Lume
# wrote to <location>/<vm>/.manifest-digest, and the Mac's chip, model, macOS version and build.
# This machine is the Mac for Lume names (the simulated sysctl of tests/guest-sim answers as
# the Mac would, from LUME_METAL_SIM_* variables); each --hosts Mac answers through its session;
# with --host there is no Mac to ask. Real sshd guests and Macs on 127.0.0.x.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
HOME=$T/home
export HOME
mkdir -p "$HOME"
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null
D1=sha256:1111111111111111111111111111111111111111111111111111111111111111
D2=sha256:2222222222222222222222222222222222222222222222222222222222222222
# This machine as the Mac: only the simulated sysctl on PATH, answering an M2 Max's values.
mkdir -p "$T/macbin"
ln -s "$TOP/tests/guest-sim/bin/sysctl" "$T/macbin/sysctl"
# folder DIR VM [DIGEST]: VM's Lume folder in location DIR, pulled (a digest) or made by create.
folder() {
	sh "$TOP/tests/lume-sim/vm.sh" "$T/scratch" "$2" stopped null null --folder "$1" --disk-kib 1
	[ -z "${3:-}" ] || printf '%s\n' "$3" >"$1/$2/.manifest-digest"
}
mkdir -p "$T/scratch"
guest tahoe-1 127.0.0.71 && guest tahoe-2 127.0.0.72 && guest tahoe-3 127.0.0.73 || exit 1
folder "$HOME/.lume" tahoe-1 "$D1" && folder "$HOME/.lume" tahoe-2 "$D2" && folder "$HOME/.lume" tahoe-3
docs() { "$LM" ledger show --json --state "$T/state" 2>/dev/null | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'; }
flat() { ledger_text "$T/state" | tr -d '\n\t '; }

check_rc "deploy three local Lume VMs: two digests, one made by lume create (exit 0)" 0 \
	env PATH="$T/macbin:$PATH" LUME_METAL_SIM_CPU_BRAND="Apple M2 Max" LUME_METAL_SIM_HW_MODEL="Mac14,13" \
	LUME_METAL_SIM_OS_VERSION=26.6 LUME_METAL_SIM_OS_BUILD=25G99 \
	"$LM" deploy tahoe-1 tahoe-2 tahoe-3 --lume "$TOP/tests/lume-sim/lume" --port "$PORT" -u "$ME" \
	-i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state" --payload "$T/a.tar.gz" --accept-new \
	--validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" --json
cp "$T/.out" "$T/local.out"
check "... three image versions, three ledger documents (one per digest, one without)" test "$(docs)" = 3
check "... each version validated once, under its own key (llama-server requires it)" \
	test "$(grep -c '"meanKld"' "$T/local.out")" -eq 3
check_has "... tahoe-1 keyed by its digest" "\"imageDigest\":\"$D1\",\"image\":null" "$T/local.out"
check_has "... tahoe-2 by its own" "\"imageDigest\":\"$D2\",\"image\":null" "$T/local.out"
check_grep "... the host part is this Mac's, read by sysctl" \
	'"vm":"tahoe-1",.*"hostChip":"Apple M2 Max","hostModel":"Mac14,13","hostOS":"26.6","hostBuild":"25G99"\},"hostSource":"local"' "$T/local.out"
check_grep "... tahoe-3 has no digest, and says why" \
	'"vm":"tahoe-3",.*"hostSource":"local","noDigest":"no digest: VM tahoe-3 has no \.manifest-digest: it was not pulled from a registry \(a VM made by lume create\)"' "$T/local.out"
check_grep "... the summary names each version, the digest's first 8 hex" '"byImage":\{"unknown@sha256:11111111…' "$T/local.out"
check_has "... and the one without a digest" '"unknown (no digest) (macOS 26.5.2 25F84)":{"deployed":1}' "$T/local.out"
ledger_text "$T/state" >"$T/ledger.txt"
check "... the records say so too" sh -c 'tr -d "\n\t " <"$1" | grep -q "\"vm\":\"tahoe-3\",.*\"noDigest\":\"nodigest:VMtahoe-3hasno"' - "$T/ledger.txt"
check "... never the controller's chip" sh -c '! grep -qi "epyc\|xeon\|ryzen\|Linux [0-9]" "$1"' - "$T/ledger.txt"

check_rc "--image REF labels a digest's version, the key unchanged" 0 \
	env PATH="$T/macbin:$PATH" LUME_METAL_SIM_CPU_BRAND="Apple M2 Max" LUME_METAL_SIM_HW_MODEL="Mac14,13" \
	LUME_METAL_SIM_OS_VERSION=26.6 LUME_METAL_SIM_OS_BUILD=25G99 \
	"$LM" deploy tahoe-1 --image ghcr.io/org/golden:1 --lume "$TOP/tests/lume-sim/lume" --port "$PORT" -u "$ME" \
	-i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state" --payload "$T/a.tar.gz" --force --json
cp "$T/.out" "$T/image.out"
check "... still three documents" test "$(docs)" = 3
check_grep "... shown as REF@sha256:11111111…" '"imageLabel":"ghcr\.io/org/golden:1@sha256:11111111…"' "$T/image.out"

check_rc "--host user@addr: no Mac to ask (exit 0)" 0 lm deploy --host "$ME@127.0.0.72:$PORT" --payload "$T/a.tar.gz" \
	--json --force --validate-workload --model "$VMODEL" --timeout "$VTIMEOUT"
check_grep "... the chip is the guest's, the host build null, said so" \
	'"hostChip":"Apple M1 Ultra \(Virtual\)","hostModel":null,"hostOS":null,"hostBuild":null\},"hostSource":"guest","hostNote":"--host reaches the VM without its Mac' "$T/.out"
check_grep "... and no digest, said so" '"noDigest":"no digest: --host reaches the VM without Lume"' "$T/.out"

# Two Macs of different chips and builds, each running a tahoe-a, reached through --hosts.
mac() { # NAME ADDR CHIP MODEL BUILD
	mkdir -p "$T/g/$1" "$T/lume-$1"
	cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/$1/"
	t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/$1'"
	sh "$TOP/tests/sshd.sh" start "$T/g/$1" "$2" "$PORT" --path "$TOP/tests/lume-sim" \
		--env "LUME_SIM_DIR=$T/lume-$1" --env "LUME_METAL_SIM_CPU_BRAND=$3" --env "LUME_METAL_SIM_HW_MODEL=$4" \
		--env "LUME_METAL_SIM_OS_VERSION=26.6" --env "LUME_METAL_SIM_OS_BUILD=$5"
}
on() { # MAC VM ADDR DIR DIGEST
	guest "$4" "$3" && rm "$LUME_SIM_DIR/$4.json" &&
		sh "$TOP/tests/lume-sim/vm.sh" "$T/lume-$1" "$2" running "$3" true --folder "$T/g/$1/home/.lume" --disk-kib 1 &&
		printf '%s\n' "$5" >"$T/g/$1/home/.lume/$2/.manifest-digest"
}
mac mac1 127.0.0.81 "Apple M1 Ultra" Mac13,2 25G11 && mac mac2 127.0.0.82 "Apple M4 Max" Mac16,5 25G22 || exit 1
on mac1 tahoe-a 127.0.0.83 a1 "$D1" && on mac2 tahoe-a 127.0.0.84 a2 "$D1" || exit 1
printf '%s@127.0.0.81:%s\n%s@127.0.0.82:%s\n' "$ME" "$PORT" "$ME" "$PORT" >"$T/hosts"
rm -rf "$T/state"
HOME="$T/g/mac1/home" "$TOP/tests/guest-sim/bin/defaults" write com.apple.gpusw.ParavirtualizedGraphics \
	ForceUnrestrictedDeviceFeatureLevel -bool true
check_rc "deploy --hosts: two Macs of one image digest (exit 0)" 0 \
	lm deploy --hosts "$T/hosts" --lume /nonexistent --payload "$T/a.tar.gz" --accept-new \
	--validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" --json
cp "$T/.out" "$T/hosts.out"
check "... two documents: one per Mac, the same digest" test "$(docs)" = 2
check_grep "... mac1's record names mac1: chip, model, build" \
	'"vm":"127\.0\.0\.81/tahoe-a",.*"imageDigest":"sha256:1111.*"hostChip":"Apple M1 Ultra","hostModel":"Mac13,2","hostOS":"26\.6","hostBuild":"25G11"\},"hostSource":"host"' "$T/hosts.out"
check_grep "... and mac1's paravirtual-graphics preference, read in the same exec" \
	'"vm":"127\.0\.0\.81/tahoe-a",.*"hostSource":"host","hostPreference":true' "$T/hosts.out"
check "... mac2 has none set: no hostPreference" sh -c '! grep "\"vm\":\"127.0.0.82/tahoe-a\"" "$1" | grep -q hostPreference' - "$T/hosts.out"
check_grep "... mac2's names mac2" \
	'"vm":"127\.0\.0\.82/tahoe-a",.*"hostChip":"Apple M4 Max","hostModel":"Mac16,5","hostOS":"26\.6","hostBuild":"25G22"\},"hostSource":"host"' "$T/hosts.out"
ledger_text "$T/state" >"$T/ledger.txt"
check "... in the ledger too, never the controller's" sh -c 'f=$(tr -d "\n\t " <"$1"); case $f in *"\"hostChip\":\"AppleM4Max\",\"hostModel\":\"Mac16,5\""*) ;; *) exit 1;; esac; ! printf "%s" "$f" | grep -qi "epyc\|xeon"' - "$T/ledger.txt"

# A hostile Mac: a .manifest-digest that is a link to a digest outside the VM's folder, then a
# storage listing naming a path with "..".
printf '%s\n' "$D2" >"$T/outside"
rm "$T/g/mac2/home/.lume/tahoe-a/.manifest-digest"
ln -s "$T/outside" "$T/g/mac2/home/.lume/tahoe-a/.manifest-digest"
printf 'sha256:%0130d\n' 0 >"$T/g/mac1/home/.lume/tahoe-a/.manifest-digest"
check_rc "status --hosts with a linked and an overlong digest file (exit 0)" 0 lm status --hosts "$T/hosts" --json
check_grep "... the link is refused, never followed" '"vm":"127\.0\.0\.82/tahoe-a",.*"noDigest":"no digest: VM tahoe-a.s \.manifest-digest is a link or no regular file \(refused\)"' "$T/.out"
check_grep "... the overlong one is refused" '"vm":"127\.0\.0\.81/tahoe-a",.*"noDigest":"no digest: VM tahoe-a.s \.manifest-digest is not a manifest digest \(refused\)"' "$T/.out"
if grep -q "$D2" "$T/.out"; then not_ok "... the linked file's digest is nowhere"; else ok "... the linked file's digest is nowhere"; fi
mkdir -p "$T/g/mac2/home/.config/lume"
printf 'defaultLocationName: "home"\nvmLocations:\n  - name: "home"\n    path: "%s/g/mac2/home/../../outside"\n' "$T" \
	>"$T/g/mac2/home/.config/lume/config.yaml"
check_rc "status --hosts with a storage location holding .. (exit 0)" 0 lm status --hosts "$T/hosts" --json
check_grep "... its listing is refused, naming the line" '"vm":"127\.0\.0\.82/tahoe-a",.*"noDigest":"no digest: the host.s storage locations were not read \([^)]*127\.0\.0\.82:[0-9]+: lume config storage list: line 2 ' "$T/.out"
rm -rf "$T/g/mac2/home/.config"

# A Mac host listing a VM name that is no name (it would name a host key and a path).
sh "$TOP/tests/lume-sim/vm.sh" "$T/lume-mac1" 'evil;x' running 127.0.0.89 true
check_rc "a Mac host's VM named outside the rule is refused (exit 3)" 3 lm status --hosts "$T/hosts" --json
check_grep "... on a line of its own naming the host" '"vm":"127\.0\.0\.81/evil;x","host":"127\.0\.0\.81","state":"refused","message":"host 127\.0\.0\.81 lists a VM name this tool refuses' "$T/.out"
check "... and nothing connected to its address" sh -c '! grep -q "127.0.0.89" "$1"/g/mac1/sshd.log' - "$T"
rm "$T/lume-mac1/evil;x.json"

# An old ledger (ledger_key's 7 fields: the image label, the controller's chip and build).
W="TinyLlama 1.1B Q4_K_M (llama.cpp)" F=$TOP/tests/fixtures/llama-bench/tinyllama-m1-ultra
"$LM" report stock="$F/tiny-stock-minimal.json" shim="$F/tiny-safe-shim-10x-final.json" --json --workload "$W" \
	>"$T/table.json" || not_ok "report --json for the old ledger"
{
	printf '{"key":{"image":"ghcr.io/trycua/macos-tahoe-cua:latest","imageDigest":null,"guestOS":"26.5.2",'
	printf '"guestBuild":"25F84","guestModel":"VirtualMac2,1","hostChip":"AMD EPYC","hostBuild":"Linux 6.1"},'
	printf '"records":[{"kind":"deploy","verdict":"pass","vm":"old-vm","time":"2026-08-09T18:00:00Z"},'
	printf '{"kind":"bench","vm":"old-vm","workload":"%s","verdict":"effective","time":"2026-08-09T19:00:00Z","bench":' "$W"
	cat "$T/table.json"
	printf '}]}\n'
} >"$T/state/ledger/00000000000000aa.json"
check_rc "ledger show with an old-format document (exit 0)" 0 "$LM" ledger --state "$T/state"
check_grep "... shows it, marked as the old key" '^ghcr\.io/trycua/macos-tahoe-cua:latest \(old key\)  guest 26\.5\.2 \(25F84\)' "$T/.out"
check_grep "... beside the new ones" '^unknown@sha256:11111111…  guest .* host Apple M4 Max Mac16,5 \(25G22\)' "$T/.out"
check_rc "report --ledger with it (exit 0)" 0 "$LM" report --ledger --state "$T/state"
check_grep "... its bench record shows under the old key" '^ghcr\.io/trycua/macos-tahoe-cua:latest \(old key\) +26\.5\.2 \(25F84\) .*old-vm' "$T/.out"
t_done

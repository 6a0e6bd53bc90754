#!/bin/sh
# shellcheck disable=SC1091 # sourced lib
# The simulated Lume (tests/lume-sim/lume) with VM folders on disk and a REAL registry on loopback
# (tests/registry.sh, basic auth): clone, run, stop, delete, config storage list, push and pull
# with Lume's messages; the digest the registry answers for a pushed tag is what
# registry_manifest_digest returns (build/tests/test_registry digest ...), what a pull writes to
# .manifest-digest, and new on every push; the source disk is unchanged throughout.
. "$(dirname "$0")/../lib.sh"
L=$TOP/tests/lume-sim/lume
HOME=$T/home LUME_SIM_DIR=$T/lume LUME_SIM_REGISTRY_HTTP=1
export HOME LUME_SIM_DIR LUME_SIM_REGISTRY_HTTP
unset XDG_CONFIG_HOME GITHUB_USERNAME GITHUB_TOKEN GHCR_USERNAME GHCR_TOKEN LUME_SIM_IP LUME_LOG_LEVEL
mkdir -p "$HOME" "$LUME_SIM_DIR"
ADDR=127.0.0.61 PORT=$((30000 + $$ % 20000))
R=$ADDR:$PORT
t_defer "sh '$TOP/tests/registry.sh' stop '$T/reg'"
sh "$TOP/tests/registry.sh" start "$T/reg" "$ADDR" "$PORT" --htpasswd lume:s3cret-test || exit 1
sha() { sha256sum "$1" | cut -c1-64; }
# head_digest TAG: the Docker-Content-Digest the registry answers for org/golden:TAG.
head_digest() {
	curl -sI -u lume:s3cret-test -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		"http://$R/v2/org/golden/manifests/$1" | tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p'
}
push() { GITHUB_USERNAME=lume GITHUB_TOKEN=s3cret-test "$L" push "$@"; }
pull() { GITHUB_USERNAME=lume GITHUB_TOKEN=s3cret-test "$L" pull "$@"; }

"$L" config storage list >"$T/locs"
printf 'VM Storage Locations:\n  - home: ~/.lume (default)\n' >"$T/want"
check "config storage list: home at ~/.lume, the default, when nothing is configured" diff -u "$T/want" "$T/locs"

sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" src stopped null null --folder "$HOME/.lume" --disk-kib 2600
SRC=$(sha "$HOME/.lume/src/disk.img")
check "vm.sh --folder makes config.json, disk.img and nvram.bin, and no .manifest-digest" \
	sh -c "test -s '$HOME/.lume/src/config.json' && test -s '$HOME/.lume/src/nvram.bin' && test ! -e '$HOME/.lume/src/.manifest-digest'"

"$L" clone src golden >"$T/out" 2>"$T/err"; rc=$?
check "clone src golden succeeds" test "$rc" -eq 0
check_has "... logging as Lume does" "INFO: VM cloned successfully source=src destination=golden" "$T/out"
check "... the clone's disk is a byte copy" test "$(sha "$HOME/.lume/golden/disk.img")" = "$SRC"
check "... with a new MAC address and machine identifier" sh -c "! grep -F \"\$(grep -E 'macAddress|machineIdentifier' '$HOME/.lume/src/config.json')\" '$HOME/.lume/golden/config.json'"
"$L" get golden --format json >"$T/get"
check_grep "... and lume get shows it stopped in location home" '"status" : "stopped"' "$T/get"
check_rc "clone onto an existing VM fails" 1 "$L" clone src golden
check_has "... with Lume's error" "Error: Directory already exists at path: $HOME/.lume/golden" "$T/.out"
check_rc "clone of a missing VM fails" 1 "$L" clone nope other
check_has "... with Lume's error" "Error: Virtual machine not found: nope" "$T/.out"

LUME_SIM_IP=127.0.0.62 "$L" run golden --no-display >"$T/out" 2>&1
"$L" get golden --format json >"$T/get"
check_grep "run --no-display: running with the simulated IP" '"ipAddress" : "127.0.0.62"' "$T/get"
check_grep "... and SSH available" '"sshAvailable" : true' "$T/get"
check_rc "run of a running VM fails" 1 "$L" run golden --no-display
check_has "... with Lume's error" "Error: Virtual machine already running: golden" "$T/.out"
check_rc "clone of a running VM fails" 1 "$L" clone golden other
check_has "... with Lume's error" "Error: Virtual machine already running: golden" "$T/.out"
check "stop stops it" "$L" stop golden
"$L" get golden --format json >"$T/get"
check_grep "... status stopped, no IP" '"ipAddress" : null' "$T/get"
check_rc "stop of a stopped VM fails" 1 "$L" stop golden
check_has "... with Lume's error" "Error: Virtual machine not running: golden" "$T/.out"
"$L" run golden --detach >"$T/out" 2>&1
"$L" get golden --format json >"$T/get"
check_grep "run --detach says where its log is, and the VM gets its last IP again" '"ipAddress" : "127.0.0.62"' "$T/get"
check_has "... (the log line)" "Log: $HOME/Library/Logs/lume/golden.log" "$T/out"
"$L" stop golden >/dev/null

check_rc "push without credentials fails" 1 "$L" push golden golden:v1 --registry "$R" --organization org
check_has "... with Lume's log line" "ERROR: Missing GitHub credentials. Set GITHUB_USERNAME and GITHUB_TOKEN env vars." "$T/.out"
check_has "... and error" "Error: authenticationFailed" "$T/.out"
check_rc "push with a wrong token fails" 1 env GITHUB_USERNAME=lume GITHUB_TOKEN=wrong "$L" push golden golden:v1 --registry "$R" --organization org
check_rc "push of a missing VM fails" 1 push nope golden:v1 --registry "$R" --organization org
check_has "... with Lume's error" "Error: Virtual machine not found: nope" "$T/.out"
check_rc "push IMAGE without a tag is a usage error" 64 push golden golden --registry "$R" --organization org
check_has "... with Lume's message" "Error: Invalid primary image format. Expected format: name:tag" "$T/.out"

push golden golden:v1 --registry "$R" --organization org --chunk-size-mb 1 --additional-tags latest >"$T/push1" 2>&1; rc=$?
check "push golden golden:v1 --additional-tags latest to the real registry" test "$rc" -eq 0
check_has "... one manifest per tag" "INFO: Pushing OCI manifest for tag: latest" "$T/push1"
check_has "... and Lume's closing line" "INFO: VM pushed successfully name=golden imageName=golden tags=v1, latest registry=$R organization=org" "$T/push1"
D1=$(head_digest v1)
check "the registry answers a sha256 digest for v1 (curl -I)" sh -c "printf '%s' '$D1' | grep -Eqx 'sha256:[0-9a-f]{64}'"
check "... the same for the additional tag" test "$(head_digest latest)" = "$D1"
curl -s -u lume:s3cret-test -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$R/v2/org/golden/manifests/v1" >"$T/manifest"
check "the manifest's sha256 is that digest" test "sha256:$(sha "$T/manifest")" = "$D1"
check_grep "... an OCI manifest" '"mediaType" : "application\\/vnd.oci.image.manifest.v1\+json"' "$T/manifest"
check_grep "... Lume's config media type" 'application\\/vnd.trycua.lume.config.v1\+json' "$T/manifest"
check_grep "... an nvram layer" 'application\\/vnd.trycua.lume.nvram.v1"' "$T/manifest"
check "... the 2600 KiB disk as 3 gzipped 1 MiB chunks" test "$(grep -c 'application\\/vnd.trycua.lume.disk.v1"' "$T/manifest")" -eq 3
check_grep "... with the part annotations" '"org.trycua.lume.part.total" : "3"' "$T/manifest"
check_grep "... the last chunk's offset" '"org.trycua.lume.part.offset" : "2097152"' "$T/manifest"
check_grep "... its uncompressed digest" '"org.trycua.lume.content.uncompressed-digest" : "sha256:' "$T/manifest"
check_grep "... and the upload time" '"org.trycua.lume.upload-time" : "20[0-9-]+T[0-9:]+Z"' "$T/manifest"
check_grep "... the total size" '"org.trycua.lume.total-uncompressed-size" : "2662400"' "$T/manifest"

if [ -x "$TOP/build/tests/test_registry" ]; then
	GITHUB_USERNAME=lume GITHUB_TOKEN=s3cret-test "$TOP/build/tests/test_registry" digest "$R" org/golden v1 >"$T/rd" 2>&1
	check "registry_manifest_digest returns the digest curl -I shows" test "$(cat "$T/rd")" = "$D1"
else
	not_ok "registry_manifest_digest returns the digest curl -I shows (build/tests/test_registry is not built)"
fi

pull golden:v1 copy --registry "$R" --organization org >"$T/out" 2>&1; rc=$?
check "pull golden:v1 copy" test "$rc" -eq 0
check "... writes .manifest-digest: the pushed digest, no newline" test "$(cat "$HOME/.lume/copy/.manifest-digest")" = "$D1"
check "... 71 bytes" test "$(wc -c <"$HOME/.lume/copy/.manifest-digest")" -eq 71
check "... rebuilds the same disk.img" test "$(sha "$HOME/.lume/copy/disk.img")" = "$SRC"
check "... and the same nvram.bin" cmp "$HOME/.lume/copy/nvram.bin" "$HOME/.lume/src/nvram.bin"
"$L" ls --format json >"$T/ls"
check_grep "... and lume ls lists it" '"name" : "copy"' "$T/ls"
check_rc "pull onto an existing VM fails" 1 pull golden:v1 copy --registry "$R" --organization org
check_has "... with Lume's error" "Error: Virtual machine already exists with name: copy" "$T/.out"
check_rc "pull of a missing tag fails" 1 pull golden:nope other --registry "$R" --organization org
check_has "... with Lume's error" "Error: Failed to fetch image manifest from registry." "$T/.out"
check_rc "pull without credentials from a registry that wants them fails" 1 "$L" pull golden:v1 other --registry "$R" --organization org
check_rc "pull IMAGE@sha256 fails (pull takes name:tag only; the digest is read as a tag)" 1 pull "golden@$D1" other --registry "$R" --organization org
check "pull with GHCR_USERNAME/GHCR_TOKEN and the default name" env GHCR_USERNAME=lume GHCR_TOKEN=s3cret-test "$L" pull golden:latest --registry "$R" --organization org
check "... named image_tag, with the same digest" test "$(cat "$HOME/.lume/golden_latest/.manifest-digest")" = "$D1"

"$L" clone copy copy2 >/dev/null 2>&1
check "clone copies .manifest-digest" test "$(cat "$HOME/.lume/copy2/.manifest-digest")" = "$D1"

# The upload time has a one-second resolution, as Lume's: wait for the next second.
s=$(date +%s); while [ "$(date +%s)" = "$s" ]; do sleep 0.1; done
push golden golden:v1 --registry "$R" --organization org --chunk-size-mb 1 >"$T/push2" 2>&1
D2=$(head_digest v1)
check "a second push of the same VM gives a new digest" sh -c "test -n '$D2' && test '$D2' != '$D1'"
check "... v1 moved, latest did not" test "$(head_digest latest)" = "$D1"
pull golden:v1 copy3 --registry "$R" --organization org >/dev/null 2>&1
check "... and a pull writes the new digest" test "$(cat "$HOME/.lume/copy3/.manifest-digest")" = "$D2"
check "the source VM's disk.img is unchanged by clone and push" test "$(sha "$HOME/.lume/src/disk.img")" = "$SRC"
check "... and so is the pushed clone's" test "$(sha "$HOME/.lume/golden/disk.img")" = "$SRC"

echo n | "$L" delete copy2 >"$T/out" 2>&1
check_has "delete without --force asks, and n cancels" "Deletion cancelled" "$T/out"
check "... leaving the VM" test -d "$HOME/.lume/copy2"
check "delete --force removes the folder" sh -c "'$L' delete copy2 --force >/dev/null && test ! -e '$HOME/.lume/copy2' && test ! -e '$LUME_SIM_DIR/copy2.json'"
check_rc "delete of a missing VM fails" 1 "$L" delete copy2 --force
check_has "... with Lume's error" "Error: Virtual machine not found: copy2" "$T/.out"

mkdir -p "$HOME/.config/lume" "$T/ssd"
cat >"$HOME/.config/lume/config.yaml" <<YAML
# Lume Configuration

defaultLocationName: "ssd"
cacheDirectory: "~/.lume/cache"
cachingEnabled: false
telemetryEnabled: true

# VM Locations
vmLocations:
  - name: "home"
    path: "~/.lume"
  - name: "ssd"
    path: "$T/ssd"
YAML
"$L" config storage list >"$T/locs"
printf 'VM Storage Locations:\n  - home: ~/.lume\n  - ssd: %s (default)\n' "$T/ssd" >"$T/want"
check "config storage list reads config.yaml: sorted by name, the default marked" diff -u "$T/want" "$T/locs"
pull golden:v1 onssd --registry "$R" --organization org >/dev/null 2>&1
check "pull lands in the default location" test "$(cat "$T/ssd/onssd/.manifest-digest")" = "$D2"
"$L" get onssd --format json >"$T/get"
check_grep "... and the VM names it" '"locationName" : "ssd"' "$T/get"

sh "$TOP/tests/registry.sh" stop "$T/reg"
check_rc "pull from a registry that is down fails" 1 pull golden:v1 down --registry "$R" --organization org
check "... leaving no folder" test ! -e "$T/ssd/down"
t_done

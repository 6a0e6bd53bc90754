#!/bin/sh
# shellcheck disable=SC1091 # lib.sh and guest-lib.sh are sourced by path
# Bad input gets a clear error and changes nothing: a tampered or truncated payload, a
# corrupted file, a traversal entry, a link entry, an unlisted file, a payload for the other
# target, placeholders, a held lock, an already-loaded service whose boot-out does not take,
# a bootstrap that fails after the switch, no GUI session, and a failing validation.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"
guest bad

sed -e 's/"id": "m1-ultra-tahoe-26.5"/"id": "test-b"/' \
	"$TOP/manifests/profiles/m1-ultra-tahoe-26.5.json" >"$T/test-b.json"
# The workload with an ExitTimeOut of 1 s: a boot-out that never finishes is given up after 4 s.
mkdir "$T/wl"
sed 's/"exitTimeOut": [0-9]*/"exitTimeOut": 1/' "$TOP/manifests/workloads/llama-server.json" >"$T/wl/llama-server.json"
payload "$T/a.tar.gz" --workload "$T/wl/llama-server.json" || not_ok "build payload a"
A=$SHA
payload "$T/b.tar.gz" --profile "$T/test-b.json" --workload "$T/wl/llama-server.json" || not_ok "build payload b"
B=$SHA
install "$T/ia.json" "$T/a.tar.gz" "$A"
rc_is "setup: install a" 0
install "$T/ib.json" "$T/b.tar.gz" "$B"
rc_is "setup: install b (a previous)" 0
snapshot >"$T/snap"
cp "$T/.install.sh" "$T/good-install.sh"
GOOD=$T/good-install.sh

# refused NAME OUT WHY-REGEX: the last install was refused with exit 1, a failed JSON result
# naming WHY, and nothing changed.
refused() {
	rc_is "$1: exits 1" 1
	is_json "$1: prints one JSON object" "$2"
	jis "$1: result failed" "$2" .result failed
	jget "$2" .reason >"$2.reason"
	check_grep "$1: says why" "$3" "$2.reason"
	same "$1: nothing changed" "$T/snap" "${4:-}"
}

# A tampered payload: one byte changed, the host's SHA-256.
cp "$T/a.tar.gz" "$T/tampered.tar.gz"
flip_byte "$T/tampered.tar.gz" 200
install_from "$GOOD" "$T/o.json" "$T/tampered.tar.gz" "$A"
refused "tampered payload" "$T/o.json" "SHA-256 is [0-9a-f]{64}, expected $A: the upload is tampered with or truncated"

# A truncated payload, with the host's SHA-256 and with its own.
head -c 1000 "$T/a.tar.gz" >"$T/trunc.tar.gz"
install_from "$GOOD" "$T/o.json" "$T/trunc.tar.gz" "$A"
refused "truncated payload" "$T/o.json" "tampered with or truncated"
TR=$(sha256sum <"$T/trunc.tar.gz" | cut -c1-64)
install_from "$GOOD" "$T/o.json" "$T/trunc.tar.gz" "$TR"
refused "truncated payload with its own SHA-256" "$T/o.json" "not a readable tar.gz|cannot unpack"

# A corrupted file: the payload's own SHA-256 matches, a file does not match SHA256SUMS.
unpack "$T/a.tar.gz" "$T/corrupt"
printf '\n' >>"$T/corrupt/profile.json"
repack "$T/corrupt" "$T/corrupt.tar.gz"
install_from "$GOOD" "$T/o.json" "$T/corrupt.tar.gz" "$SHA"
refused "corrupted file" "$T/o.json" "do not match SHA256SUMS: profile.json"
check "corrupted file: no release left for it" test ! -e "$ROOT/releases/$SHA"

# A corrupted file with SHA256SUMS rewritten to match: MANIFEST.json still disagrees.
resum "$T/corrupt"
repack "$T/corrupt" "$T/corrupt2.tar.gz"
install_from "$GOOD" "$T/o.json" "$T/corrupt2.tar.gz" "$SHA"
refused "corrupted file, SHA256SUMS rewritten" "$T/o.json" "MANIFEST.json does not record the SHA-256 of profile.json"

# A file that SHA256SUMS does not list.
unpack "$T/a.tar.gz" "$T/extra"
printf 'x\n' >"$T/extra/bin/extra"
repack "$T/extra" "$T/extra.tar.gz"
install_from "$GOOD" "$T/o.json" "$T/extra.tar.gz" "$SHA"
refused "unlisted file" "$T/o.json" "do not match SHA256SUMS: bin/extra"

# SHA256SUMS itself: a malformed line, a traversal name, a required file left out, none at all.
unpack "$T/a.tar.gz" "$T/sums"
cp "$T/sums/SHA256SUMS" "$T/sums.orig"
sums_case() {
	repack "$T/sums" "$T/sums.tar.gz"
	install_from "$GOOD" "$T/o.json" "$T/sums.tar.gz" "$SHA"
	refused "$1" "$T/o.json" "$2"
	cp "$T/sums.orig" "$T/sums/SHA256SUMS"
}
printf 'not a checksum line\n' >>"$T/sums/SHA256SUMS"
sums_case "SHA256SUMS with a malformed line" "SHA256SUMS has a malformed line"
printf '%064d  ../outside\n' 0 >>"$T/sums/SHA256SUMS"
sums_case "SHA256SUMS naming ../outside" "SHA256SUMS has a malformed line"
grep -v ' shim.env$' "$T/sums.orig" >"$T/sums/SHA256SUMS"
sums_case "SHA256SUMS without shim.env" "payload does not list shim.env in SHA256SUMS"
grep -v ' shim.env$' "$T/sums.orig" | grep -v ' profile.json$' >"$T/sums/SHA256SUMS"
sums_case "SHA256SUMS without two required files" "payload does not list (shim.env profile.json|profile.json shim.env) in SHA256SUMS"
rm "$T/sums/SHA256SUMS"
sums_case "no SHA256SUMS" "payload has no SHA256SUMS"

# A traversal entry and an absolute entry.
unpack "$T/a.tar.gz" "$T/trav/p"
printf 'evil\n' >"$T/trav/evil"
(cd "$T/trav/p" && tar --owner=0 --group=0 -cPzf "$T/trav.tar.gz" MANIFEST.json SHA256SUMS bin ../evil 2>/dev/null)
TS=$(sha256sum <"$T/trav.tar.gz" | cut -c1-64)
if tar -tzf "$T/trav.tar.gz" | grep -qx '../evil'; then ok "traversal: the test payload holds ../evil"; else not_ok "traversal: the test payload holds ../evil"; fi
install_from "$GOOD" "$T/o.json" "$T/trav.tar.gz" "$TS"
refused "traversal entry" "$T/o.json" "entry outside its directory: \\.\\./evil"
check "traversal entry: nothing written beside staging" test ! -e "$ROOT/staging/evil"
check "traversal entry: nothing written beside the root" test ! -e "$ROOT/evil"
(cd "$T/trav/p" && tar --owner=0 --group=0 -cPzf "$T/abs.tar.gz" MANIFEST.json SHA256SUMS "$T/trav/evil" 2>/dev/null)
TS=$(sha256sum <"$T/abs.tar.gz" | cut -c1-64)
install_from "$GOOD" "$T/o.json" "$T/abs.tar.gz" "$TS"
refused "absolute entry" "$T/o.json" "entry outside its directory: /"

# A symbolic link entry.
unpack "$T/a.tar.gz" "$T/link"
rm "$T/link/lib/liblumemetal.so"
ln -s /etc/passwd "$T/link/lib/liblumemetal.so"
repack "$T/link" "$T/link.tar.gz"
install_from "$GOOD" "$T/o.json" "$T/link.tar.gz" "$SHA"
refused "symbolic link entry" "$T/o.json" "link or special entry"

# A payload for the other target (MANIFEST.json and SHA256SUMS consistent with it).
unpack "$T/a.tar.gz" "$T/mac"
old=$(sha256sum <"$T/mac/payload.env" | cut -c1-64)
sed -i 's/^LUME_METAL_TARGET=linux-sim$/LUME_METAL_TARGET=macos/' "$T/mac/payload.env"
new=$(sha256sum <"$T/mac/payload.env" | cut -c1-64)
sed -i "s/$old/$new/" "$T/mac/MANIFEST.json"
resum "$T/mac"
repack "$T/mac" "$T/mac.tar.gz"
install_from "$GOOD" "$T/o.json" "$T/mac.tar.gz" "$SHA"
refused "payload for the macos target" "$T/o.json" "payload is for target macos, this guest runs linux-sim"

# Placeholders cannot be validated; --no-validate lets them through (deploy refuses them).
unpack "$T/a.tar.gz" "$T/ph"
sed -i 's/"path":[[:space:]]*"bin\/lume-metal-probe",/&\n\t\t\t"placeholder": true,/' "$T/ph/MANIFEST.json"
resum "$T/ph"
repack "$T/ph" "$T/ph.tar.gz"
PH=$SHA
install_from "$GOOD" "$T/o.json" "$T/ph.tar.gz" "$PH"
refused "placeholder binaries" "$T/o.json" "placeholder binaries"

# A lock held by a live process; a stale lock is taken over.
mkdir "$ROOT/.lock"
sleep 30 &
holder=$!
t_defer "kill $holder 2>/dev/null"
echo "$holder" >"$ROOT/.lock/pid"
install "$T/o.json" "$T/a.tar.gz" "$A"
rc_is "held lock: exits 1" 1
jis "held lock: result failed" "$T/o.json" .result failed
check_grep "held lock: says why" "holds .*/\\.lock" "$T/o.json"
check "held lock: the lock stays" test -d "$ROOT/.lock"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
install "$T/o.json" "$T/b.tar.gz" "$B"
rc_is "stale lock: taken over" 0
jis "stale lock: the reinstall is unchanged" "$T/o.json" .result unchanged
check "stale lock: released" test ! -e "$ROOT/.lock"

# Usage.
run "$T/o.json" dash "$TOP/guest-payload/install.sh"
rc_is "no arguments: exits 2" 2
is_json "no arguments: prints one JSON object" "$T/o.json"
check_grep "no arguments: usage" '"reason":"usage: install.sh' "$T/o.json"
run "$T/o.json" dash "$TOP/guest-payload/install.sh" --payload "$T/a.tar.gz" --sha256 xyz
rc_is "a bad --sha256: exits 2" 2
run "$T/o.json" dash "$TOP/guest-payload/rollback.sh" sideways
rc_is "rollback with a bad argument: exits 2" 2
is_json "rollback with a bad argument: prints one JSON object" "$T/o.json"
same "usage errors change nothing" "$T/snap"

# An already-loaded service: loaded by hand from an older plist, install boots it out first.
guest loaded
mkdir -p "$AGENTS"
sed "s|__LUME_METAL_HOME__|$HOME|g; s|__LUME_METAL_RELEASE__|/old|g" >"$T/old.plist" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>com.trycua.lume-metal.llama-server</string>
	<key>ProgramArguments</key>
	<array><string>/opt/homebrew/bin/llama-server</string></array>
	<key>RunAtLoad</key>
	<true/>
</dict>
</plist>
EOF
chmod 644 "$T/old.plist"
launchctl bootstrap "gui/$UID_SIM" "$T/old.plist"
is_eq "already loaded: set up by hand" "$(svc path)" "$T/old.plist"
launchctl bootstrap "gui/$UID_SIM" "$T/old.plist" 2>"$T/e"
check_grep "already loaded: a second bootstrap gets the real tool's error" '^Bootstrap failed: 5: Input/output error$' "$T/e"
install "$T/o.json" "$T/a.tar.gz" "$A"
rc_is "already loaded: install exits 0" 0
jis "already loaded: installed" "$T/o.json" .result installed
is_eq "already loaded: the service now comes from the LaunchAgent" "$(svc path)" "$PL"

# An already-loaded service whose boot-out never finishes (a process launchd cannot kill): the
# install waits the job's ExitTimeOut (1 s) and 3 s more, says so, never bootstraps over it, and
# the old service keeps running.
guest sticky
install "$T/o.json" "$T/a.tar.gz" "$A"
rc_is "sticky: install a" 0
snapshot >"$T/snap-sticky"
LUME_METAL_SIM_BOOTOUT_STICKY=1
export LUME_METAL_SIM_BOOTOUT_STICKY
install "$T/o.json" "$T/b.tar.gz" "$B"
unset LUME_METAL_SIM_BOOTOUT_STICKY
rc_is "already loaded, boot-out did not take: exits 1" 1
jis "already loaded, boot-out did not take: failed" "$T/o.json" .result failed
jget "$T/o.json" .reason >"$T/o.reason"
check_grep "already loaded, boot-out did not take: explained" "launchctl bootout gui/$UID_SIM/$LABEL: still loaded 4 s after launchctl bootout \\(its ExitTimeOut is 1 s\\)" "$T/o.reason"
same "already loaded, boot-out did not take: old state kept, service untouched" "$T/snap-sticky"
check "already loaded, boot-out did not take: release b removed" test ! -e "$ROOT/releases/$B"

# The bootstrap of the new release fails after the switch: current and the old LaunchAgent are
# put back and the old service bootstrapped again (same guest: a failure must leave it as it was).
snapshot --no-pid >"$T/snap-sb"
run "$T/o.json" env LUME_METAL_SIM_BOOTSTRAP_FAIL="releases/$B" dash "$T/.install.sh" --payload "$T/b.tar.gz" --sha256 "$B"
rc_is "bootstrap fails after the switch: exits 1" 1
jis "bootstrap fails after the switch: failed" "$T/o.json" .result failed
jis "bootstrap fails after the switch: current is a again" "$T/o.json" .current "$A"
check_grep "bootstrap fails after the switch: says why" 'Bootstrap failed: 5' "$T/o.json"
same "bootstrap fails after the switch: links, releases and LaunchAgent put back" "$T/snap-sb" --no-pid
is_eq "bootstrap fails after the switch: the old service runs again" "$(svc state)" running
launchctl print "gui/$UID_SIM/$LABEL" >"$T/p"
check_grep "bootstrap fails after the switch: it runs release a" "LD_PRELOAD => $ROOT/releases/$A/lib" "$T/p"

# A failing validation: the release is removed, the old state kept (the same guest again).
guest sticky
snapshot >"$T/snap-v"
if [ "$REAL_PROBE" -eq 1 ]; then
	# A guest build whose maxThreadgroupMemoryLength changed its type: the shim fails closed,
	# so the shimmed device stays stock and cannot meet the profile.
	export LUME_METAL_SIM_WRONG_TYPES=1
else
	export LUME_METAL_STANDIN_FAIL=1
fi
install "$T/o.json" "$T/b.tar.gz" "$B"
unset LUME_METAL_SIM_WRONG_TYPES LUME_METAL_STANDIN_FAIL
rc_is "validation fails: exits 1" 1
jis "validation fails: failed" "$T/o.json" .result failed
jis "validation fails: the shimmed probe says it did not pass" "$T/o.json" .shimmed.expect.pass false
jis "validation fails: the stock probe is reported" "$T/o.json" .stock.probe lume-metal-probe
jget "$T/o.json" .reason >"$T/o.reason"
check_grep "validation fails: says why" '^validation failed' "$T/o.reason"
same "validation fails: old state kept" "$T/snap-v"
check "validation fails: release b removed" test ! -e "$ROOT/releases/$B"

# No logged-in GUI session: nothing is left behind by a first install.
guest nogui
run "$T/o.json" env LUME_METAL_SIM_GUI_SESSION=0 dash "$T/.install.sh" --payload "$T/a.tar.gz" --sha256 "$A"
rc_is "no GUI session: exits 1" 1
check_grep "no GUI session: the real tool's error" 'Bootstrap failed: 125: Domain does not support specified action' "$T/o.json"
is_eq "no GUI session: no current" "$(link current)" none
check "no GUI session: the release is removed" test ! -e "$ROOT/releases/$A"
check "no GUI session: no LaunchAgent left" test ! -e "$PL"
t_done

#!/bin/sh
# shellcheck disable=SC1091 # lib.sh and guest-lib.sh are sourced by path
# status.sh: drift detection (a changed, a missing and an unlisted file, an edited LaunchAgent),
# the service state, image.json; a reinstall repairs a drifted release; rollback none keeps
# image.json.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"
guest drift

payload "$T/a.tar.gz" || not_ok "build payload a"
A=$SHA
install "$T/i.json" "$T/a.tar.gz" "$A"
rc_is "install a" 0
REL=$ROOT/releases/$A

# A changed file.
chmod u+w "$REL/profile.json"
printf ' ' >>"$REL/profile.json"
status "$T/s1.json"
rc_is "status with drift exits 0" 0
is_json "status with drift prints one JSON object" "$T/s1.json"
jis "a changed file: drift detected" "$T/s1.json" .driftDetected true
jis "a changed file: named" "$T/s1.json" '.drift[0]' profile.json
jis "a changed file: the release is not intact" "$T/s1.json" '.releases[0].intact' false
jis "a changed file: named in the release" "$T/s1.json" '.releases[0].drift[0]' profile.json

# A missing file and an unlisted one.
chmod u+w "$REL/lib"
rm -f "$REL/lib/libMetal.so"
printf 'x\n' >"$REL/lib/intruder.so"
status "$T/s2.json"
jis "missing and unlisted files: three drifted" "$T/s2.json" '.drift#' 3
jget "$T/s2.json" '.drift[0]' >"$T/d"
jget "$T/s2.json" '.drift[1]' >>"$T/d"
jget "$T/s2.json" '.drift[2]' >>"$T/d"
check_grep "a missing file is drift" '^lib/libMetal.so$' "$T/d"
check_grep "an unlisted file is drift" '^lib/intruder.so$' "$T/d"

# The service and the LaunchAgent.
jis "status: service running" "$T/s2.json" .service.state running
launchctl bootout "gui/$UID_SIM/$LABEL"
printf '<!-- edited -->\n' >>"$PL"
status "$T/s3.json"
jis "a booted-out service: not loaded" "$T/s3.json" .service.loaded false
jis "an edited LaunchAgent: does not match" "$T/s3.json" .launchAgent.matches false
jis "an edited LaunchAgent: is drift" "$T/s3.json" '.drift[3]' "$PL"

# A reinstall of the same payload repairs the release, the LaunchAgent and the service.
install "$T/i2.json" "$T/a.tar.gz" "$A"
rc_is "reinstall over drift exits 0" 0
jis "reinstall over drift: installed, not unchanged" "$T/i2.json" .result installed
jis "reinstall over drift: still no previous" "$T/i2.json" .previous null
status "$T/s4.json"
jis "after the repair: no drift" "$T/s4.json" .driftDetected false
jis "after the repair: the release is intact" "$T/s4.json" '.releases[0].intact' true
jis "after the repair: service loaded" "$T/s4.json" .service.loaded true
jis "after the repair: LaunchAgent matches" "$T/s4.json" .launchAgent.matches true
jis "the service's pid: the one launchd runs" "$T/s4.json" .service.pid "$(svc pid)"
jis "... the shim is active in it" "$T/s4.json" .service.shimActive true
jis "... as the shim's state says" "$T/s4.json" .service.shim.process llama-server

# image.json, stamped by a golden-image build, is reported and survives rollback none.
printf '{\n  "image": "ghcr.io/trycua/macos-tahoe-cua:latest",\n  "digest": "sha256:ed1783e8"\n}\n' >"$ROOT/image.json"
status "$T/s5.json"
is_json "status with image.json prints one JSON object" "$T/s5.json"
jis "status reports image.json" "$T/s5.json" .image.image "ghcr.io/trycua/macos-tahoe-cua:latest"
printf 'not json' >"$ROOT/image.json"
status "$T/s6.json"
is_json "status with a broken image.json still prints one JSON object" "$T/s6.json"
jis "a broken image.json is null" "$T/s6.json" .image null
printf '{"image":"ghcr.io/trycua/macos-tahoe-cua:latest"}\n' >"$ROOT/image.json"
rollback "$T/r.json" none
rc_is "rollback none exits 0" 0
check "rollback none keeps image.json" test -f "$ROOT/image.json"
is_eq "rollback none leaves only image.json" "$(find "$ROOT" -mindepth 1 | sed "s|^$ROOT/||")" image.json
t_done

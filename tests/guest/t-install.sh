#!/bin/sh
# shellcheck disable=SC1091 # lib.sh and guest-lib.sh are sourced by path
# The install, rollback and status lifecycle in a temporary HOME against the simulated guest:
# a fresh install, a second install (previous kept), a reinstall of the same payload (no
# change), an older release pruned, rollback to previous, rollback to none.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"
guest life

# Three payloads that differ only in their profile's id and description: three SHA-256s.
for x in b c; do
	sed -e "s/\"id\": \"m1-ultra-tahoe-26.5\"/\"id\": \"test-$x\"/" -e "s/\"description\": \"/\"description\": \"test $x. /" \
		"$TOP/manifests/profiles/m1-ultra-tahoe-26.5.json" >"$T/test-$x.json"
done
payload "$T/a.tar.gz" || not_ok "build payload a"
A=$SHA
payload "$T/b.tar.gz" --profile "$T/test-b.json" || not_ok "build payload b"
B=$SHA
payload "$T/c.tar.gz" --profile "$T/test-c.json" || not_ok "build payload c"
C=$SHA
if [ "$A" = "$B" ] || [ "$B" = "$C" ] || [ "$A" = "$C" ]; then not_ok "three distinct payloads"; fi

# Fresh install.
install "$T/i1.json" "$T/a.tar.gz" "$A"
rc_is "fresh install exits 0" 0
is_json "fresh install prints one JSON object" "$T/i1.json"
jis "fresh install: result installed" "$T/i1.json" .result installed
jis "fresh install: sha256" "$T/i1.json" .sha256 "$A"
jis "fresh install: current" "$T/i1.json" .current "$A"
jis "fresh install: no previous" "$T/i1.json" .previous null
jis "fresh install: validated" "$T/i1.json" .validated true
jis "fresh install: stock probe embedded, shim inactive" "$T/i1.json" .stock.shim.active false
jis "fresh install: shimmed probe embedded, shim active" "$T/i1.json" .shimmed.shim.active true
jis "fresh install: shimmed probe passed" "$T/i1.json" .shimmed.expect.pass true
jis "fresh install: plist path" "$T/i1.json" .plist "$PL"
check "current is a symlink" test -L "$ROOT/current"
is_eq "current -> releases/<sha> (relative)" "$(link current)" "releases/$A"
check "the release matches its SHA256SUMS (GNU sha256sum)" sh -c "cd \"$ROOT/releases/$A\" && sha256sum --quiet -c SHA256SUMS"
is_eq "release files are read-only" "$(find "$ROOT/releases/$A" -type f -perm -u+w | wc -l)" 0
check "the LaunchAgent is written" test -f "$PL"
is_eq "the LaunchAgent is mode 644" "$(stat -c %a "$PL")" 644
check "the LaunchAgent is well-formed XML" xmllint --noout --nonet "$PL"
check_grep "the LaunchAgent preloads the release's own library" \
	"<string>$ROOT/releases/$A/lib/liblumemetal.so</string>" "$PL"
check_grep "the LaunchAgent's log paths are under HOME" "<string>$HOME/Library/Logs/lume-metal/llama-server.out.log</string>" "$PL"
if grep -q __LUME_METAL_ "$PL"; then not_ok "no token left in the LaunchAgent"; else ok "no token left in the LaunchAgent"; fi
check "the log directory exists (launchd does not create it)" test -d "$HOME/Library/Logs/lume-metal"
is_eq "the service is loaded from the LaunchAgent" "$(svc path)" "$PL"
is_eq "the service is running" "$(svc state)" running
pid1=$(svc pid)
is_eq "staging is left empty" "$(find "$ROOT/staging" -mindepth 1 | wc -l)" 0
check "no lock is left" test ! -e "$ROOT/.lock"
check "launchctl setenv was never used" test ! -e "$LUME_METAL_SIM_DIR/launchd/setenv.log"

status "$T/s1.json"
rc_is "status exits 0" 0
is_json "status prints one JSON object" "$T/s1.json"
jis "status: current" "$T/s1.json" .current "$A"
jis "status: one release" "$T/s1.json" '.releases#' 1
jis "status: the release is intact" "$T/s1.json" '.releases[0].intact' true
jis "status: no drift" "$T/s1.json" '.driftDetected' false
jis "status: service loaded" "$T/s1.json" .service.loaded true
jis "status: service running" "$T/s1.json" .service.state running
jis "status: service pid" "$T/s1.json" .service.pid "$pid1"
jis "status: LaunchAgent matches the release" "$T/s1.json" .launchAgent.matches true
jis "status: guest macOS" "$T/s1.json" .os.productVersion 26.5.2
jis "status: guest build" "$T/s1.json" .os.build 25F84
jis "status: guest model" "$T/s1.json" .model VirtualMac2,1

# Second install: previous kept, the service restarted on the new release.
install "$T/i2.json" "$T/b.tar.gz" "$B"
rc_is "second install exits 0" 0
jis "second install: installed" "$T/i2.json" .result installed
jis "second install: current is b" "$T/i2.json" .current "$B"
jis "second install: previous is a" "$T/i2.json" .previous "$A"
is_eq "current -> releases/b" "$(link current)" "releases/$B"
is_eq "previous -> releases/a" "$(link previous)" "releases/$A"
check "the previous release is kept" test -d "$ROOT/releases/$A"
check_grep "the LaunchAgent now preloads release b" "$ROOT/releases/$B/lib/liblumemetal.so" "$PL"
pid2=$(svc pid)
if [ -n "$pid2" ] && [ "$pid2" != "$pid1" ]; then ok "the service was restarted"; else not_ok "the service was restarted ($pid1 -> $pid2)"; fi
check_grep "the loaded service runs release b" "LD_PRELOAD => $ROOT/releases/$B/lib" "$(launchctl print "gui/$UID_SIM/$LABEL" >"$T/p2"; echo "$T/p2")"

# Reinstalling the same payload changes nothing.
snapshot >"$T/snap2"
ino=$(stat -c %i:%Y "$PL")
install "$T/i3.json" "$T/b.tar.gz" "$B"
rc_is "reinstall exits 0" 0
jis "reinstall: unchanged" "$T/i3.json" .result unchanged
jis "reinstall: current still b" "$T/i3.json" .current "$B"
jis "reinstall: previous still a" "$T/i3.json" .previous "$A"
same "reinstall: links, releases, LaunchAgent and service untouched" "$T/snap2"
is_eq "reinstall: the LaunchAgent file is the same file" "$(stat -c %i:%Y "$PL")" "$ino"

# Third install: c current, b previous, a pruned.
install "$T/i4.json" "$T/c.tar.gz" "$C"
rc_is "third install exits 0" 0
is_eq "third install: previous -> b" "$(link previous)" "releases/$B"
is_eq "third install: only current and previous are kept" "$(find "$ROOT/releases" -mindepth 1 -maxdepth 1 -exec basename {} \; | sort | tr "\n" " ")" \
	"$(printf '%s\n' "$B" "$C" | sort | tr '\n' ' ')"

# Rollback to previous, run from the current release itself (which it removes), as deploy does.
run "$T/r1.json" dash "$ROOT/current/bin/rollback.sh" previous
rc_is "rollback previous exits 0" 0
is_json "rollback prints one JSON object" "$T/r1.json"
jis "rollback: rolled-back" "$T/r1.json" .result rolled-back
jis "rollback: from c" "$T/r1.json" .from "$C"
jis "rollback: current is b" "$T/r1.json" .current "$B"
jis "rollback: previous cleared" "$T/r1.json" .previous null
jis "rollback: release c removed" "$T/r1.json" '.removed[0]' "$ROOT/releases/$C"
is_eq "rollback: current -> releases/b" "$(link current)" "releases/$B"
check "rollback: no previous link" test ! -L "$ROOT/previous"
check "rollback: release c is gone" test ! -e "$ROOT/releases/$C"
check_grep "rollback: the LaunchAgent preloads release b" "$ROOT/releases/$B/lib/liblumemetal.so" "$PL"
is_eq "rollback: the service runs" "$(svc state)" running
launchctl print "gui/$UID_SIM/$LABEL" >"$T/p3"
check_grep "rollback: the loaded service runs release b" "LD_PRELOAD => $ROOT/releases/$B/lib" "$T/p3"

snapshot >"$T/snap3"
rollback "$T/r2.json" previous
rc_is "a second rollback with no previous exits 1" 1
jis "a second rollback fails" "$T/r2.json" .result failed
jis "a second rollback says why" "$T/r2.json" .reason "no previous release to roll back to"
same "a second rollback changes nothing" "$T/snap3"

# Rollback to none.
rollback "$T/r3.json" none
rc_is "rollback none exits 0" 0
is_json "rollback none prints one JSON object" "$T/r3.json"
jis "rollback none: rolled-back" "$T/r3.json" .result rolled-back
jis "rollback none: no current" "$T/r3.json" .current null
jis "rollback none: service booted out" "$T/r3.json" '.bootedOut[0]' "$LABEL"
if loaded "$LABEL"; then not_ok "rollback none: the service is not loaded"; else ok "rollback none: the service is not loaded"; fi
check "rollback none: the LaunchAgent is removed" test ! -e "$PL"
check "rollback none: everything under Application Support/lume-metal is removed" test ! -e "$ROOT"
check "rollback none: the logs are kept" test -d "$HOME/Library/Logs/lume-metal"
rollback "$T/r4.json" none
rc_is "rollback none again exits 0" 0
jis "rollback none again: nothing to do" "$T/r4.json" .result nothing-to-do
rollback "$T/r5.json"
jis "rollback (default previous) with nothing installed: nothing to do" "$T/r5.json" .result nothing-to-do
status "$T/s2.json"
is_json "status with nothing installed prints one JSON object" "$T/s2.json"
jis "status with nothing installed: no current" "$T/s2.json" .current null
jis "status with nothing installed: no releases" "$T/s2.json" '.releases#' 0

# Installing after a rollback to none starts over.
install "$T/i5.json" "$T/a.tar.gz" "$A"
rc_is "install after rollback none exits 0" 0
is_eq "install after rollback none: current -> a" "$(link current)" "releases/$A"

# A release for another workload (another label): the old agent goes, rollback brings it back.
sed -e 's/"id": "llama-server"/"id": "other"/' -e 's/"label": "com.trycua.lume-metal.llama-server"/"label": "com.example.other"/' \
	"$TOP/manifests/workloads/llama-server.json" >"$T/other.json"
payload "$T/o.tar.gz" --workload "$T/other.json" || not_ok "build payload other"
O=$SHA
install "$T/i6.json" "$T/o.tar.gz" "$O"
rc_is "another workload: install exits 0" 0
jis "another workload: its label" "$T/i6.json" .label com.example.other
check "another workload: its LaunchAgent is written" test -f "$AGENTS/com.example.other.plist"
check "another workload: the old LaunchAgent is removed" test ! -e "$PL"
if loaded "$LABEL"; then not_ok "another workload: the old service is booted out"; else ok "another workload: the old service is booted out"; fi
is_eq "another workload: its service runs" "$(svc state com.example.other)" running
rollback "$T/r6.json" previous
rc_is "another workload: rollback exits 0" 0
check "rollback: the other LaunchAgent is removed" test ! -e "$AGENTS/com.example.other.plist"
if loaded com.example.other; then not_ok "rollback: the other service is booted out"; else ok "rollback: the other service is booted out"; fi
is_eq "rollback: the first workload runs again" "$(svc state)" running
check "launchctl setenv was never used" test ! -e "$LUME_METAL_SIM_DIR/launchd/setenv.log"
t_done

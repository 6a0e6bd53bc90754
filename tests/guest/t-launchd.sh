#!/bin/sh
# shellcheck disable=SC1091 # lib.sh and guest-lib.sh are sourced by path
# launchd as it behaves on a real Mac (the simulated launchctl's knobs): the job starts once per
# activation (no kickstart -k after a RunAtLoad bootstrap), a label in launchd's disabled set is
# enabled before its bootstrap, and a boot-out that finishes asynchronously (the job lingers up
# to its ExitTimeOut, bootout may exit 36) is waited for, so install and rollback, and their
# reverts, end with a service loaded.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"

sed -e 's/"id": "m1-ultra-tahoe-26.5"/"id": "test-b"/' \
	"$TOP/manifests/profiles/m1-ultra-tahoe-26.5.json" >"$T/test-b.json"
payload "$T/a.tar.gz" || not_ok "build payload a"
A=$SHA
payload "$T/b.tar.gz" --profile "$T/test-b.json" || not_ok "build payload b"
B=$SHA
# events WHAT: how many times the simulated launchd started or killed (SIGTERM) the workload.
events() { grep -c "^$1 $LABEL " "$LUME_METAL_SIM_DIR/launchd/events" 2>/dev/null; }
# pending: a boot-out still lingers in the simulated launchd (an entry's gone-at, which the last
# launchctl call did not reap), so a job would leave the domain later; none pending means the
# state now is the state for good.
pending() { ls "$LUME_METAL_SIM_DIR"/launchd/gui-*/*/gone-at >/dev/null 2>&1; }
# runs SHA: the loaded service is the one of release SHA.
runs() {
	launchctl print "gui/$UID_SIM/$LABEL" >"$T/p" 2>&1
	check_grep "$1" "LD_PRELOAD => $ROOT/releases/$2/lib" "$T/p"
}

# One start per activation, and the launchd keys of the workload in the plist.
guest starts
install "$T/o.json" "$T/a.tar.gz" "$A"
rc_is "fresh install exits 0" 0
is_eq "fresh install: the job started once, killed never" "$(events start)/$(events kill)" 1/0
is_eq "fresh install: launchd's run count is 1" "$(svc runs)" 1
check_grep "the LaunchAgent sets ProcessType Interactive" '^	<string>Interactive</string>$' "$PL"
check_grep "the LaunchAgent sets the workload's ExitTimeOut" '^	<key>ExitTimeOut</key>$' "$PL"
install "$T/o.json" "$T/b.tar.gz" "$B"
rc_is "second install exits 0" 0
is_eq "second install: the old job killed once, the new one started once" "$(events start)/$(events kill)" 2/1
rollback "$T/o.json" previous
rc_is "rollback exits 0" 0
is_eq "rollback: one kill and one start more" "$(events start)/$(events kill)" 3/2

# A label in launchd's disabled set (launchctl disable, or unload -w, long ago).
guest disabled
launchctl disable "gui/$UID_SIM/$LABEL"
install "$T/o.json" "$T/a.tar.gz" "$A"
rc_is "disabled label: install exits 0" 0
is_eq "disabled label: the service runs" "$(svc state)" running
launchctl print-disabled "gui/$UID_SIM" >"$T/d"
if grep -q "\"$LABEL\" => disabled" "$T/d"; then not_ok "disabled label: enabled"; else ok "disabled label: enabled"; fi
install "$T/o.json" "$T/b.tar.gz" "$B"
launchctl disable "gui/$UID_SIM/$LABEL"
rollback "$T/o.json" previous
rc_is "disabled label: rollback exits 0" 0
is_eq "disabled label: after rollback the service runs" "$(svc state)" running

# A boot-out that takes 2 s (launchd's boot-out is asynchronous, up to the job's ExitTimeOut):
# install waits for it, then bootstraps.
guest linger
install "$T/o.json" "$T/a.tar.gz" "$A"
LUME_METAL_SIM_BOOTOUT_LINGER=2
export LUME_METAL_SIM_BOOTOUT_LINGER
install "$T/o.json" "$T/b.tar.gz" "$B"
rc_is "a 2 s boot-out: install exits 0" 0
jis "a 2 s boot-out: installed" "$T/o.json" .result installed
is_eq "a 2 s boot-out: the service runs" "$(svc state)" running
runs "a 2 s boot-out: it runs release b" "$B"

# ... and the bootstrap of the new release fails: the revert brings the old service back, and
# it is still there once the boot-out is over.
guest linger-revert
unset LUME_METAL_SIM_BOOTOUT_LINGER
install "$T/o.json" "$T/a.tar.gz" "$A"
LUME_METAL_SIM_BOOTOUT_LINGER=2
export LUME_METAL_SIM_BOOTOUT_LINGER
run "$T/o.json" env LUME_METAL_SIM_BOOTSTRAP_FAIL="releases/$B" dash "$T/.install.sh" --payload "$T/b.tar.gz" --sha256 "$B"
rc_is "a 2 s boot-out, then the bootstrap fails: exits 1" 1
jis "a 2 s boot-out, then the bootstrap fails: current is a again" "$T/o.json" .current "$A"
is_eq "... the old service is loaded and runs" "$(svc state)" running
if pending; then not_ok "... for good: no boot-out pending (the revert waited for it)"; else ok "... for good: no boot-out pending (the revert waited for it)"; fi
runs "... release a" "$A"
unset LUME_METAL_SIM_BOOTOUT_LINGER

# bootout exits 36 (Operation now in progress): started, not failed.
guest inprogress
install "$T/o.json" "$T/a.tar.gz" "$A"
LUME_METAL_SIM_BOOTOUT_LINGER=2 LUME_METAL_SIM_BOOTOUT_INPROGRESS=1
export LUME_METAL_SIM_BOOTOUT_LINGER LUME_METAL_SIM_BOOTOUT_INPROGRESS
install "$T/o.json" "$T/b.tar.gz" "$B"
rc_is "bootout exits 36: install exits 0" 0
is_eq "bootout exits 36: the service runs" "$(svc state)" running
runs "bootout exits 36: it runs release b" "$B"
unset LUME_METAL_SIM_BOOTOUT_LINGER LUME_METAL_SIM_BOOTOUT_INPROGRESS

# Rollback under a 2 s boot-out, with a failing bootstrap (the revert), then a good one.
guest rollback
install "$T/o.json" "$T/a.tar.gz" "$A"
install "$T/o.json" "$T/b.tar.gz" "$B"
LUME_METAL_SIM_BOOTOUT_LINGER=2
export LUME_METAL_SIM_BOOTOUT_LINGER
run "$T/o.json" env LUME_METAL_SIM_BOOTSTRAP_FAIL="releases/$A" dash "$TOP/guest-payload/rollback.sh" previous
rc_is "a 2 s boot-out, rollback's bootstrap fails: exits 1" 1
jis "a 2 s boot-out, rollback's bootstrap fails: current is b again" "$T/o.json" .current "$B"
is_eq "... the service is loaded and runs" "$(svc state)" running
if pending; then not_ok "... for good: no boot-out pending (the revert waited for it)"; else ok "... for good: no boot-out pending (the revert waited for it)"; fi
runs "... release b" "$B"
rollback "$T/o.json" previous
rc_is "a 2 s boot-out: rollback exits 0" 0
jis "a 2 s boot-out: rolled back" "$T/o.json" .result rolled-back
runs "a 2 s boot-out: the service runs release a" "$A"
unset LUME_METAL_SIM_BOOTOUT_LINGER

# Rollback to none under a 2 s boot-out: it waits, then removes everything.
guest none
install "$T/o.json" "$T/a.tar.gz" "$A"
LUME_METAL_SIM_BOOTOUT_LINGER=2
export LUME_METAL_SIM_BOOTOUT_LINGER
rollback "$T/o.json" none
rc_is "a 2 s boot-out: rollback none exits 0" 0
jis "a 2 s boot-out: rollback none booted the service out" "$T/o.json" '.bootedOut[0]' "$LABEL"
if loaded "$LABEL"; then not_ok "a 2 s boot-out: nothing is loaded after rollback none"; else ok "a 2 s boot-out: nothing is loaded after rollback none"; fi
check "a 2 s boot-out: the LaunchAgent is removed" test ! -e "$PL"
unset LUME_METAL_SIM_BOOTOUT_LINGER
t_done

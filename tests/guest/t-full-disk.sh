#!/bin/sh
# shellcheck disable=SC1091 # lib.sh and guest-lib.sh are sourced by path
# A full disk in the guest HOME: ~/Library is a small tmpfs, filled up, so the unpack of a new
# release fails with a real ENOSPC. The old release stays current and running, nothing is left
# in staging, and once there is room again the same install goes through.
# Needs to mount a tmpfs: as root directly; otherwise in a user and mount namespace
# (unshare -rm) when the kernel allows one; else the test is skipped (TAP "# SKIP").
if [ "$(id -u)" != 0 ] && [ -z "${LM_FULLDISK_NS:-}" ] && unshare -rm true 2>/dev/null; then
	LM_FULLDISK_NS=1
	export LM_FULLDISK_NS
	exec unshare -rm dash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"
guest full
LIB=$HOME/Library
mkdir -p "$LIB"
if ! mount -t tmpfs -o size=1m,mode=0755 tmpfs "$LIB" 2>"$T/mount.err"; then
	ok "full disk # SKIP cannot mount a tmpfs here: $(head -n 1 "$T/mount.err")"
	t_done
fi
t_defer "umount '$LIB'"

payload "$T/a.tar.gz" || not_ok "build payload a"
A=$SHA
sed -e 's/"id": "m1-ultra-tahoe-26.5"/"id": "test-b"/' \
	"$TOP/manifests/profiles/m1-ultra-tahoe-26.5.json" >"$T/test-b.json"
payload "$T/b.tar.gz" --profile "$T/test-b.json" || not_ok "build payload b"
B=$SHA
install "$T/i.json" "$T/a.tar.gz" "$A"
rc_is "install a on the small disk" 0

# Leave 24 KiB: less than the new release needs, so its unpack stops half-way.
avail=$(df -k "$LIB" | awk 'NR == 2 { print $4 }')
head -c $(((avail - 24) * 1024)) /dev/zero >"$LIB/fill" 2>/dev/null
snapshot >"$T/snap"
install "$T/o.json" "$T/b.tar.gz" "$B"
rc_is "nearly full: install b exits 1" 1
is_json "nearly full: prints one JSON object" "$T/o.json"
jis "nearly full: failed" "$T/o.json" .result failed
jget "$T/o.json" .reason >"$T/reason"
check_grep "nearly full: says the disk is full" 'No space left on device|full disk' "$T/reason"
same "nearly full: the old release stays current, the service untouched" "$T/snap"
is_eq "nearly full: nothing left in staging" "$(find "$ROOT/staging" -mindepth 1 | wc -l)" 0

# Completely full.
head -c 1048576 /dev/zero >"$LIB/fill2" 2>/dev/null
if head -c 4096 /dev/zero >"$LIB/probe" 2>/dev/null; then not_ok "the disk is full"; else ok "the disk is full"; fi
rm -f "$LIB/probe"
install "$T/o.json" "$T/b.tar.gz" "$B"
rc_is "full: install b exits 1" 1
is_json "full: prints one JSON object" "$T/o.json"
same "full: the old release stays current, the service untouched" "$T/snap"
status "$T/s.json"
is_json "full: status still reports" "$T/s.json"
jis "full: status says a is current and intact" "$T/s.json" '.releases[0].intact' true

# Room again: the same install goes through.
rm -f "$LIB/fill" "$LIB/fill2"
install "$T/o.json" "$T/b.tar.gz" "$B"
rc_is "room again: install b exits 0" 0
jis "room again: b current" "$T/o.json" .current "$B"
jis "room again: a previous" "$T/o.json" .previous "$A"
t_done

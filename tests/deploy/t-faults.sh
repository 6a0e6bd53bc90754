# Faults in the guest: killed during upload, a payload cut off on the way, a full disk, and names full of shell syntax.
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
t_san # the ASan build, LeakSanitizer on (tests/lib.sh)

"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null && "$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz" >/dev/null
A=$(cut -c1-64 "$T/a.tar.gz.sha256") B=$(cut -c1-64 "$T/b.tar.gz.sha256")

# The upload dies of SIGXFSZ after 8 KiB of the second payload (the payload goes on the one
# exec's stdin; its writer in the guest is killed mid-transfer).
guest tahoe-u 127.0.0.8 || exit 1
# llama-server requires validation: once for the image version every guest here shares.
validated "validate the guests' image version (llama-server requires it)" tahoe-u --payload "$T/a.tar.gz" --accept-new
validated "... and with payload B (a verdict covers one payload)" tahoe-u --payload "$T/b.tar.gz"
check_rc "a first deploy" 0 lm deploy tahoe-u --payload "$T/a.tar.gz" --accept-new
stop_guest tahoe-u
sh "$TOP/tests/sshd.sh" start "$T/g/tahoe-u" 127.0.0.8 "$PORT" --fsize-limit 16
check_rc "a guest killed during upload fails (exit 1)" 1 lm deploy tahoe-u --payload "$T/b.tar.gz" --json --timeout 8
check_grep "... saying the upload broke" '"state":"(failed|timeout)".*upload of [0-9a-f]{64}.tar.gz failed' "$T/.out"
check "... the previous state is intact" test "$(readlink "$(root tahoe-u)/current")" = "releases/$A"
check "... with no partial upload left" sh -c '! ls -A "$1/staging" | grep -q part' - "$(root tahoe-u)"
check_rc "... status shows no drift" 0 lm status tahoe-u --json
check_grep "... and the service running" '"driftDetected":false' "$T/.out"
stop_guest tahoe-u
# The stream ends after 8 KiB as if the connection were cut (the guest's cat, with no file
# argument, passes on that much and ends well): the driver finds the gzip stream cut before any of
# the upload runs, and the old release stays.
mkdir -p "$T/cut"
printf '#!/bin/sh\n[ $# -gt 0 ] && exec /bin/cat "$@"\nexec head -c 8192\n' >"$T/cut/cat"
chmod +x "$T/cut/cat"
sh "$TOP/tests/sshd.sh" start "$T/g/tahoe-u" 127.0.0.8 "$PORT" --path "$T/cut"
check_rc "a payload cut off on the way fails (exit 1)" 1 lm deploy tahoe-u --payload "$T/b.tar.gz" --json --timeout 8
check_grep "... saying it did not arrive whole" '"state":"failed".*upload of [0-9a-f]{64}.tar.gz failed: it did not arrive whole' "$T/.out"
check "... the previous state is intact" test "$(readlink "$(root tahoe-u)/current")" = "releases/$A"
check "... with no partial upload left" sh -c '! ls -A "$1/staging" | grep -q part' - "$(root tahoe-u)"
stop_guest tahoe-u
sh "$TOP/tests/sshd.sh" start "$T/g/tahoe-u" 127.0.0.8 "$PORT"
# An upload of the old SFTP way that died stays until it is old; make one, and make it old.
touch -t 200001010000 "$(root tahoe-u)/staging/.$B.tar.gz.part.99999"
check_rc "a second deploy succeeds" 0 lm deploy tahoe-u --payload "$T/b.tar.gz" --json
check_grep "... in one exec" '"state":"deployed".*"sshExecs":1' "$T/.out"
check "... and the new payload is current" test "$(readlink "$(root tahoe-u)/current")" = "releases/$B"
check "... with no partial upload left" sh -c '[ -z "$(ls -A "$1/staging" | grep -v "^\.")" ] && ! ls -A "$1/staging" | grep -q part' - "$(root tahoe-u)"

# The staging directory cannot be made (a file where its parent should be): failed, named.
guest tahoe-nodir 127.0.0.12 || exit 1
mkdir -p "$T/g/tahoe-nodir/home/Library/Application Support"
printf 'not a directory\n' >"$T/g/tahoe-nodir/home/Library/Application Support/lume-metal"
check_rc "staging cannot be made: the deploy fails (exit 1)" 1 lm deploy tahoe-nodir --payload "$T/a.tar.gz" --json --accept-new
check_grep "... as failed, naming the directory" '"state":"failed".*cannot create the directory .*/lume-metal/staging' "$T/.out"
rm "$T/g/tahoe-nodir/home/Library/Application Support/lume-metal"
check_rc "... and with the file gone, staging and its parent are made and it deploys" 0 lm deploy tahoe-nodir --payload "$T/a.tar.gz" --json
check_grep "... in one exec (no facts exec, no SFTP)" '"state":"deployed".*"sshExecs":1' "$T/.out"


if [ "$(id -u)" -eq 0 ] && mkdir -p "$T/g/tahoe-full/home" && mount -t tmpfs -o size=1m tmpfs "$T/g/tahoe-full/home" 2>/dev/null; then
	t_defer "umount '$T/g/tahoe-full/home'"
	guest tahoe-full 127.0.0.9 || exit 1
	check_rc "a first deploy onto the small disk" 0 lm deploy tahoe-full --payload "$T/a.tar.gz" --accept-new
	dd if=/dev/zero of="$T/g/tahoe-full/home/filler" bs=4k 2>/dev/null
	rm -f "$T/g/tahoe-full/home/filler" && dd if=/dev/zero of="$T/g/tahoe-full/home/filler" bs=1k \
		count=$(($(df -k "$T/g/tahoe-full/home" | awk 'NR==2{print $4}') - 24)) 2>/dev/null
	check_rc "with the disk full, a deploy fails (exit 1)" 1 lm deploy tahoe-full --payload "$T/b.tar.gz" --json
	check_grep "... as failed, not as a validation verdict" '"state":"failed"' "$T/.out"
	check "... the old release stays current" test "$(readlink "$(root tahoe-full)/current")" = "releases/$A"
	check "... and intact" sh -c 'cd "$1/current" && sha256sum -c --quiet SHA256SUMS' - "$(root tahoe-full)"
	"$LM" ledger --state "$T/state" show >"$T/ledger.out"
	check "... and the ledger records no failure for the image" sh -c '! grep -q "deploy  *fail  *tahoe-full" "$1"' - "$T/ledger.out"
	rm -f "$T/g/tahoe-full/home/filler"
	check_rc "with space again, it deploys" 0 lm deploy tahoe-full --payload "$T/b.tar.gz"
else
	ok "# skip a full guest disk needs root and tmpfs"
fi

# A Lume VM whose name, and a guest HOME whose path, are full of shell syntax.
vm="tahoe \$(touch lm-pwned-$$) \`touch lm-pwned-$$\` 'q' \"d\""
home="$T/g/meta/ho me's \$(x)"
mkdir -p "$T/g/meta"
cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/meta/"
t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/meta'"
sh "$TOP/tests/sshd.sh" start "$T/g/meta" 127.0.0.10 "$PORT" --home "$home"
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" "$vm" running 127.0.0.10 true
check_rc "a VM named with \$(), backticks and quotes deploys" 0 lm deploy "$vm" --payload "$T/a.tar.gz" --accept-new
check "... into a HOME with a space, a quote and \$()" test "$(readlink "$home/Library/Application Support/lume-metal/current")" = "releases/$A"
check_rc "... status reads it back" 0 lm status "$vm" --json
check_grep "... with its name intact" '"vm":"tahoe \$\(touch' "$T/.out"
check "... and nothing in the name ran" sh -c '! ls -d / "$HOME" "$1" "$2" "$PWD" 2>/dev/null | while read -r d; do ls -A "$d"; done | grep -q "lm-pwned"' - "$T" "$home"
t_done

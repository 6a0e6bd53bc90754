#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# Secrets given to the tool: a --password-file that is a FIFO, a password file or private key
# that others may read, and $LUME_METAL_PASSWORD, which no child process may inherit.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

guest tahoe-s 127.0.0.81 || exit 1
G="$ME@127.0.0.81:$PORT"

# No -i and no agent: the password is what would be tried, so the FIFO would be opened.
mkfifo "$T/fifo"
s=$(date +%s)
check_rc "a FIFO as --password-file is refused (exit 1)" 1 timeout 60 "$LM" status --host "$G" --password-file "$T/fifo" \
	--timeout 3 --known-hosts "$T/kh" --accept-new --state "$T/state" --json
el=$(($(date +%s) - s))
check_grep "... naming it" "password file $T/fifo: not a regular file \\(a FIFO\\)" "$T/.out"
check "... at once, not after blocking in open (${el}s, --timeout 3)" test "$el" -le 2

printf 'not-the-password\n' >"$T/pw"
chmod 644 "$T/pw"
check_rc "a password file others can read is refused (exit 1)" 1 "$LM" status --host "$G" --password-file "$T/pw" \
	--known-hosts "$T/kh" --accept-new --state "$T/state" --json
check_has "... naming the chmod 600 that fixes it" "run \`chmod 600 $T/pw\`" "$T/.out"
check_grep "... as auth-failed" '"state":"auth-failed"' "$T/.out"

cp "$T/id_ed25519" "$T/key644"
chmod 644 "$T/key644"
check_rc "a private key others can read is refused (exit 1), as OpenSSH does" 1 "$LM" status --host "$G" -i "$T/key644" \
	--known-hosts "$T/kh" --accept-new --state "$T/state" --json
check_has "... naming the chmod 600 that fixes it" "run \`chmod 600 $T/key644\`" "$T/.out"
chmod 600 "$T/key644"
ln -s "$T/key644" "$T/key-link"
check_rc "a symlink to a mode 600 key is fine" 0 "$LM" status --host "$G" -i "$T/key-link" \
	--known-hosts "$T/kh" --accept-new --state "$T/state" --json

# $LUME_METAL_PASSWORD: a lume that records its environment and stays until the tool's own
# environment has been read ($T/go).
pw="env-pw-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
printf '%s' "$pw" >"$T/pw-pattern"
cat >"$T/fake-lume" <<EOF
#!/bin/sh
env >"$T/lume.env"
i=0; while [ ! -e "$T/go" ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i + 1)); done
echo 'Error: Virtual machine not found' >&2
exit 1
EOF
chmod +x "$T/fake-lume"
LUME_METAL_PASSWORD=$pw "$LM" status tahoe-x --lume "$T/fake-lume" --known-hosts "$T/kh" --state "$T/state" \
	>"$T/env.out" 2>&1 &
lmpid=$!
i=0; while [ ! -s "$T/lume.env" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
tr '\0' '\n' <"/proc/$lmpid/environ" >"$T/lm.environ" 2>/dev/null
: >"$T/go"
wait "$lmpid"
check "lume ran" test -s "$T/lume.env"
check "... and did not inherit \$LUME_METAL_PASSWORD" sh -c '! grep -q -e LUME_METAL_PASSWORD -F -f "$1" "$2"' - \
	"$T/pw-pattern" "$T/lume.env"
check "lume-metal's own environment no longer shows it (/proc/PID/environ)" sh -c \
	'test -s "$2" && ! grep -qF -f "$1" "$2"' - "$T/pw-pattern" "$T/lm.environ"
t_done

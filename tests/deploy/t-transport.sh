# Host keys, authentication, and guests that cannot be reached or never answer.
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

guest tahoe-k 127.0.0.4 || exit 1
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null
check_rc "first contact with --accept-new" 0 lm status tahoe-k --accept-new
old=$(ssh-keygen -lf "$T/g/tahoe-k/host_ed25519.pub" | awk '{print $2}')
stop_guest tahoe-k
sh "$TOP/tests/sshd.sh" start "$T/g/tahoe-k" 127.0.0.4 "$PORT" --rekey
new=$(ssh-keygen -lf "$T/g/tahoe-k/host_ed25519.pub" | awk '{print $2}')
check_rc "a changed host key is refused (exit 1), even with --accept-new" 1 lm deploy tahoe-k --payload "$T/a.tar.gz" --accept-new --json
check_grep "... as hostkey-mismatch" '"state":"hostkey-mismatch"' "$T/.out"
check_has "... showing the recorded fingerprint" "$old" "$T/.out"
check_has "... and the new one" "$new" "$T/.out"
check "... and nothing was sent" test ! -e "$(root tahoe-k)"

ssh-keygen -q -t ed25519 -N '' -f "$T/other"
check_rc "a key the guest does not accept" 1 "$LM" status --host "$ME@127.0.0.4:$PORT" -i "$T/other" \
	--known-hosts "$T/kh2" --accept-new --state "$T/state" --json
check_grep "... is auth-failed" '"state":"auth-failed"' "$T/.out"

# Password authentication, as a dedicated user whose password only a file holds.
if [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null 2>&1; then
	U=lmtest$$
	pw="pw-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
	useradd -M -d "$T/g/pw/home" -s /bin/sh "$U" && printf '%s:%s\n' "$U" "$pw" | chpasswd
	t_defer "userdel '$U' 2>/dev/null"
	# its home and its TMPDIR (tests/sshd.sh: DIR/tmp/) its own, as a Mac user's are
	mkdir -p "$T/g/pw/home" "$T/g/pw/tmp" && chown "$U" "$T/g/pw/home" "$T/g/pw/tmp" && chmod 711 "$T" "$T/g" "$T/g/pw"
	t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/pw'"
	sh "$TOP/tests/sshd.sh" start "$T/g/pw" 127.0.0.5 "$PORT" --password
	(umask 077; printf '%s\n' "$pw" >"$T/pwfile")
	( while :; do ps -eo args >>"$T/ps.log" 2>/dev/null; sleep 0.05; done ) &
	watcher=$!
	"$LM" deploy --host "$U@127.0.0.5:$PORT" --target linux-sim --password-file "$T/pwfile" --known-hosts "$T/kh3" \
		--accept-new --state "$T/state" --validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" --json >"$T/pw.out" 2>&1
	rc=$?
	kill "$watcher" 2>/dev/null
	wait "$watcher" 2>/dev/null
	if [ "$rc" -eq 0 ]; then ok "password auth from --password-file deploys"; else
		not_ok "password auth from --password-file deploys"; sed 's/^/#   /' "$T/pw.out"
	fi
	check_grep "... as deployed" '"state":"deployed"' "$T/pw.out"
	# The pattern comes from the file: a ps still running would see it on grep's command line.
	check "... and the password is in no ps output" sh -c '! grep -qF -f "$1" "$2"' - "$T/pwfile" "$T/ps.log"
	check "... nor in the output, the ledger or the guest" sh -c '! grep -rqF -- "$1" "$2/pw.out" "$2/state" "$2/g/pw/home" "$2/g/pw/sshd.log"' - "$pw" "$T"
	LUME_METAL_PASSWORD=$pw "$LM" status --host "$U@127.0.0.5:$PORT" --known-hosts "$T/kh3" --state "$T/state" >"$T/pw2.out" 2>&1
	check_grep "\$LUME_METAL_PASSWORD works too" ' ok ' "$T/pw2.out"
	(umask 077; printf 'wrong\n' >"$T/badpw")
	check_rc "a wrong password is auth-failed" 1 "$LM" status --host "$U@127.0.0.5:$PORT" --password-file "$T/badpw" \
		--known-hosts "$T/kh3" --state "$T/state" --json
	check_grep "... so named" '"state":"auth-failed"' "$T/.out"
	check_rc "--lume-default-password warns" 1 "$LM" status --host "$U@127.0.0.5:$PORT" --lume-default-password \
		--known-hosts "$T/kh3" --state "$T/state"
	check_grep "... on stderr" "warning: --lume-default-password" "$T/.out"
else
	ok "# skip password auth needs root and useradd"
fi

# A guest that accepts TCP and never speaks.
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.6:$ARGV[0]", Listen => 5, ReuseAddr => 1)
	or die "listen: $!"; print "ready\n"; $| = 1; sleep 60' "$PORT" >"$T/hung.log" &
hung=$!
t_defer "kill $hung 2>/dev/null"
i=0; while ! grep -q ready "$T/hung.log" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
start=$(date +%s)
check_rc "a hung guest fails" 1 "$LM" status --host "$ME@127.0.0.6:$PORT" --timeout 2 --known-hosts "$T/kh" --state "$T/state" --json
check_grep "... as a timeout" '"state":"timeout"' "$T/.out"
el=$(($(date +%s) - start))
if [ "$el" -le 6 ]; then ok "... within the timeout (${el}s for --timeout 2)"; else not_ok "... within the timeout (${el}s for --timeout 2)"; fi
check_rc "a closed port" 1 "$LM" status --host "$ME@127.0.0.7:$PORT" --known-hosts "$T/kh" --state "$T/state" --json
check_grep "... is unreachable" '"state":"unreachable"' "$T/.out"
check_rc "a bad --host is a usage error" 2 "$LM" status --host "a@b:99999" --state "$T/state"
check_grep "... naming it" 'not user@address\[:port\]' "$T/.out"
t_done

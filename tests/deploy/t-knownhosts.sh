#!/bin/sh
# shellcheck disable=SC1091 # sourced libs
# known_hosts as OpenSSH reads it, with OpenSSH's own ssh as the oracle: for each case (a
# known_hosts content and the name the guest is reached by), a real `ssh ... true` and
# `lume-metal status --host` each get their own copy of the file, once with accept-new
# (StrictHostKeyChecking=accept-new; --accept-new) and once strict (=yes; no flag); each one's
# decision (accept: connected, file unchanged; add: connected, a line appended; refuse) and the
# files left behind must be the same. The guest is at 127.0.0.1, so it is also "localhost".
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

guest kh 127.0.0.1 || exit 1
HK=$(cut -d' ' -f1,2 "$T/g/kh/host_ed25519.pub")
ssh-keygen -q -t ed25519 -N '' -f "$T/other" && OTHER=$(cut -d' ' -f1,2 "$T/other.pub")
ssh-keygen -q -t ecdsa -N '' -f "$T/ec" && EC=$(cut -d' ' -f1,2 "$T/ec.pub")
A=127.0.0.1 P=$PORT
OLD_SSH=no
case $(ssh -V 2>&1) in OpenSSH_[1-9].*) OLD_SSH=yes ;; esac
SHORT="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" # a key cut short

# decision FILE-BEFORE FILE-AFTER RC: accept, add or refuse.
decision() {
	if [ "$3" -ne 0 ]; then echo refuse
	elif cmp -s "$1" "$2"; then echo accept
	else echo add
	fi
}

# one NAME HOST MODE WANT: runs both on $T/case (the known_hosts content), MODE accept-new or
# strict; WANT is the decision OpenSSH is expected to make, so that an oracle that answers
# differently from what this table says is seen too.
one() {
	n=$1 h=$2 mode=$3 want=$4
	cp "$T/case" "$T/kh.ssh" && cp "$T/case" "$T/kh.lm"
	if [ "$mode" = strict ]; then shk=yes flag=""; else shk=accept-new flag=--accept-new; fi
	ssh -F /dev/null -o StrictHostKeyChecking=$shk -o UserKnownHostsFile="$T/kh.ssh" \
		-o GlobalKnownHostsFile=/dev/null -o BatchMode=yes -o CheckHostIP=no -o UpdateHostKeys=no \
		-o IdentitiesOnly=yes -o ConnectTimeout=20 -i "$T/id_ed25519" -p "$P" "$ME@$h" true \
		>"$T/ssh.out" 2>&1 </dev/null
	s=$(decision "$T/case" "$T/kh.ssh" $?)
	if [ "$s" = add ] && [ "$(tail -c 1 "$T/case" | od -An -c | tr -d ' ')" != '\n' ] && [ "$OLD_SSH" = yes ]; then
		# OpenSSH before 10.0 appends to a last line without a newline, making one line of two;
		# 10.0 adds the newline first (hostfile.c add_host_to_hostfile), as lume-metal does.
		{ cat "$T/case"; echo; tail -c +"$(($(wc -c <"$T/case") + 1))" "$T/kh.ssh"; } >"$T/kh.ssh10"
		mv "$T/kh.ssh10" "$T/kh.ssh"
	fi
	# shellcheck disable=SC2086 # $flag is one word or none
	"$LM" status --host "$ME@$h:$P" -i "$T/id_ed25519" --known-hosts "$T/kh.lm" --state "$T/state" \
		--timeout 20 --json $flag >"$T/lm.out" 2>&1 </dev/null
	if grep -q '"state":"\(hostkey-mismatch\|refused\)"' "$T/lm.out"; then l=refuse; else l=$(decision "$T/case" "$T/kh.lm" 0); fi
	printf '# %-34s %-10s ssh: %-6s lume-metal: %s\n' "$n" "$mode" "$s" "$l"
	if [ "$s" = "$want" ] && [ "$l" = "$s" ] && cmp -s "$T/kh.ssh" "$T/kh.lm"; then
		ok "$n, $mode: both $s, the same file"
	else
		not_ok "$n, $mode: ssh $s (expected $want), lume-metal $l$(cmp -s "$T/kh.ssh" "$T/kh.lm" || echo ', the files differ')"
		sed 's/^/#   ssh: /' "$T/ssh.out" | head -n 12
		sed 's/^/#   lume-metal: /' "$T/lm.out" | cut -c1-400
		diff "$T/kh.ssh" "$T/kh.lm" | sed 's/^/#   diff: /' | head -n 6
	fi
}

# case NAME HOST WANT-ACCEPT-NEW WANT-STRICT: $T/case from stdin, then both modes.
case_() {
	cat >"$T/case"
	one "$1" "$2" accept-new "$3"
	one "$1" "$2" strict "$4"
}

printf '[%s]:%s %s\n' $A "$P" "$HK" | case_ "exact [host]:port" $A accept accept
printf '%s %s\n' $A "$HK" | case_ "the plain host, another port" $A accept accept
printf '[LOCALHOST]:%s %s\n' "$P" "$HK" | case_ "an upper-case pattern" localhost accept accept
printf '[localhost]:%s %s\n' "$P" "$HK" | case_ "an upper-case host name" LOCALHOST accept accept
printf '[127.0.0.*]:%s %s\n' "$P" "$HK" | case_ "a '*' wildcard" $A accept accept
printf '[127.0.0.*]:* %s\n' "$OTHER" | case_ "a '*' wildcard, another key" $A refuse refuse
printf '[127.0.0.?]:%s %s\n' "$P" "$HK" | case_ "a '?' wildcard" $A accept accept
printf '[127.0.0.*]:*,![%s]:* %s\n' $A "$OTHER" | case_ "a negation, another key" $A add refuse
printf 'nothing,[%s]:%s,!nobody %s\n' $A "$P" "$HK" | case_ "a list with an unmatched negation" $A accept accept
printf '[%s]:%s %s\n' $A "$P" "$HK" >"$T/hashme" && ssh-keygen -q -H -f "$T/hashme" >/dev/null 2>&1
case_ "a hashed name (ssh-keygen -H)" $A accept accept <"$T/hashme"
printf '@revoked * %s\n' "$HK" | case_ "@revoked alone" $A refuse refuse
printf '@revoked * %s\n[%s]:%s %s\n' "$HK" $A "$P" "$HK" | case_ "@revoked and a plain line" $A refuse refuse
printf '@revoked other.example %s\n[%s]:%s %s\n' "$HK" $A "$P" "$HK" | case_ "@revoked for another host" $A accept accept
printf '@cert-authority [127.0.0.*]:* %s\n' "$HK" | case_ "@cert-authority for the host" $A add refuse
printf '[%s]:%s %s\n' $A "$P" "$OTHER" | case_ "a changed key" $A refuse refuse
printf '[%s]:%s %s\n' $A "$P" "$EC" | case_ "known only under another key type" $A refuse refuse
printf '%s %s\n' $A "$OTHER" | case_ "another key for the plain host" $A add refuse
# A hashed name whose salt is 88 base64 characters (66 bytes: the old code decoded it into 64).
salt88=$(printf 'QUFB%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22)
printf 'oldbox ssh-ed25519\n@junk x y z\n|1|%s|AAAA %s\n[%s]:%s %s\n' "$salt88" "$HK" $A "$P" "$HK" |
	case_ "malformed lines of other hosts" $A accept accept
printf '[%s]:%s %s\n' $A "$P" "$SHORT" | case_ "a malformed line for this host" $A add refuse
printf '# mine\n\n   \n\t# indented\n[%s]:%s %s   # the guest\n' $A "$P" "$HK" | case_ "comments and blank lines" $A accept accept
printf 'other.example %s' "$OTHER" | case_ "no final newline, another host" $A add refuse

# What lume-metal says of the lines it skipped: a note naming each, on a connection that went on.
printf '@cert-authority [127.0.0.*]:* %s\n[%s]:%s %s\n[%s]:%s %s\n' "$OTHER" $A "$P" "$SHORT" $A "$P" "$HK" >"$T/kh.notes"
check_rc "status with an unsupported and an unreadable line for the host: ok" 0 "$LM" status --host "$ME@$A:$P" \
	-i "$T/id_ed25519" --known-hosts "$T/kh.notes" --state "$T/state" --json
check_grep "... its result notes both lines, by file and line" \
	"\"knownHostsNote\":\"$T/kh.notes:1: @cert-authority is not supported: line ignored; $T/kh.notes:2: the key" "$T/.out"
"$LM" status --host "$ME@$A:$P" -i "$T/id_ed25519" --known-hosts "$T/kh.notes" --state "$T/state" >"$T/text.out" 2>"$T/text.err"
check_grep "... as a warning on stderr without --json" "^lume-metal: warning: .*: known hosts lines skipped: $T/kh.notes:1: " \
	"$T/text.err"
printf '@revoked * %s\n' "$HK" >"$T/kh.rev"
check_rc "a revoked key, --accept-new: refused (exit 1)" 1 "$LM" status --host "$ME@$A:$P" -i "$T/id_ed25519" \
	--known-hosts "$T/kh.rev" --state "$T/state" --accept-new --json
check_grep "... hostkey-mismatch, saying REVOKED with the file and line" "\"state\":\"hostkey-mismatch\",\"message\":\"[^\"]*\
HOST KEY REVOKED: the guest offers SHA256:[^ ]*, which $T/kh.rev marks @revoked at line 1; refusing" "$T/.out"
t_done

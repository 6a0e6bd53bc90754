#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# scripts/fleet-rollback: rollback --hosts FILE (or --all) behind a confirmation, against two
# real sshd Mac hosts (the simulated lume listing their guests), one guest behind each.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../deploy/common.sh"
FR=$TOP/scripts/fleet-rollback
LUME_METAL=$LM
SHELL=/bin/sh # what script(1) runs its command with
export LUME_METAL SHELL

# mac NAME ADDR: a Mac host whose lume lists the VMs in $T/lume-NAME (as tests/deploy/t-hosts.sh).
mac() {
	mkdir -p "$T/g/$1" "$T/lume-$1"
	cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/$1/"
	t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/$1'"
	sh "$TOP/tests/sshd.sh" start "$T/g/$1" "$2" "$PORT" --path "$TOP/tests/lume-sim" --env "LUME_SIM_DIR=$T/lume-$1"
}
# on HOST VM ADDR DIR: guest VM at ADDR served from $T/g/DIR, listed by HOST's lume only.
on() { guest "$4" "$3" && rm "$LUME_SIM_DIR/$4.json" && sh "$TOP/tests/lume-sim/vm.sh" "$T/lume-$1" "$2" running "$3" true; }

mac mac1 127.0.0.221 && mac mac2 127.0.0.222 || exit 1
on mac1 tahoe-a 127.0.0.223 a1 && on mac2 tahoe-a 127.0.0.224 a2 || exit 1
printf '# the two Macs\n%s@127.0.0.221:%s\n%s@127.0.0.222:%s\n' "$ME" "$PORT" "$ME" "$PORT" >"$T/hosts"
{ cat "$T/hosts"; printf '%s@127.0.0.229:%s  # down: nobody listens\n' "$ME" "$PORT"; } >"$T/hosts3"
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null &&
	"$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz" >/dev/null || exit 1
A=$(cut -c1-64 "$T/a.tar.gz.sha256") B=$(cut -c1-64 "$T/b.tar.gz.sha256")
cur() { readlink "$(root "$1")/current" 2>/dev/null || echo none; }
all_on() { [ "$(cur a1) $(cur a2)" = "releases/$1 releases/$1" ]; }
# fr ARGS...: fleet-rollback with lm's connection flags (the local lume lists none of these
# guests); FR_PRE runs it under another command. $FRQ: the same as a quoted sh -c string.
FR_PRE=""
fr() {
	$FR_PRE "$FR" --lume "$TOP/tests/lume-sim/lume" --port "$PORT" -u "$ME" -i "$T/id_ed25519" \
		--known-hosts "$T/known_hosts" --state "$T/state" "$@"
}
FRQ="'$FR' --lume '$TOP/tests/lume-sim/lume' --port $PORT -u '$ME' -i '$T/id_ed25519' --known-hosts '$T/known_hosts' --state '$T/state'"
# fr_err ARGS...: fr with its stderr in $T/fr.err (stdout alone in check_rc's $T/.out).
fr_err() { fr "$@" 2>"$T/fr.err"; }
# pty CMD INPUT: CMD (one sh -c string) on a pseudo-terminal, INPUT typed into it; the
# terminal's transcript in $T/pty.out, CMD's exit code returned.
pty() { printf '%s\n' "$2" | script -qec "$1" "$T/pty.out" >/dev/null 2>&1; }
# (llama-server requires validation: the first deploy validates the guests' image version.)
deploy() {
	lm deploy --hosts "$T/hosts" --payload "$1" --accept-new --validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" --json >"$T/deploy.out" 2>&1
}

if deploy "$T/a.tar.gz" && deploy "$T/b.tar.gz"; then ok "setup: deploy A, then B, on the two guests"; else
	not_ok "setup: deploy A, then B, on the two guests"; sed 's/^/#   /' "$T/deploy.out"; fi
check "... each on B, with A as its previous release" all_on "$B"

check_rc "--help (exit 0)" 0 "$FR" --help
check_grep "... prints the usage" '^usage: fleet-rollback \[--yes\] \[--hosts FILE\] \[--to previous\|none\] \[--json\]' "$T/.out"
check_has "... and the exit codes" "Exit codes: 0 every VM rolled back" "$T/.out"
check_rc "an unknown option (exit 2)" 2 fr --hosts "$T/hosts" --yes --frobnicate
check_has "... names it" "fleet-rollback: unknown option: --frobnicate" "$T/.out"
check_rc "--to elsewhere (exit 2)" 2 fr --hosts "$T/hosts" --yes --to elsewhere
check_rc "a missing hosts file (exit 2)" 2 fr --hosts "$T/none" --yes

FR_PRE="setsid -w"
check_rc "no terminal and no --yes: refused (exit 2)" 2 fr --hosts "$T/hosts" </dev/null
FR_PRE=""
cp "$T/.out" "$T/notty.out"
check_has "... saying what it would do" "will roll back every VM on the 2 Mac host(s) in $T/hosts (127.0.0.221, 127.0.0.222)" "$T/notty.out"
check_has "... and why it did not" "no terminal to ask on; nothing rolled back (pass --yes" "$T/notty.out"
check "... nothing rolled back" all_on "$B"

check_rc "answering n on the terminal: aborted (exit 1)" 1 pty "$FRQ --hosts '$T/hosts'" n
check_has "... it asked" "Roll back every VM on the 2 Mac host(s) in $T/hosts (127.0.0.221, 127.0.0.222) to its previous release? [y/N]" "$T/pty.out"
check_has "... and aborted" "fleet-rollback: aborted; nothing rolled back" "$T/pty.out"
check "... nothing rolled back" all_on "$B"
check_rc "stdin not a terminal: it asks on /dev/tty, and an empty answer aborts (exit 1)" 1 \
	pty "echo y | $FRQ --hosts='$T/hosts'" ""
check_has "... it asked" "to its previous release? [y/N]" "$T/pty.out"
check "... nothing rolled back" all_on "$B"
check_rc "without --hosts it asks about this Mac's lume ls (n: exit 1)" 1 pty "$FRQ --to none" no
check_has "... naming it" "Roll back every VM lume ls lists here to stock" "$T/pty.out"
check_grep "... and runs rollback --all" "with: .*lume-metal rollback --all --to none --lume " "$T/pty.out"

check_rc "--yes: every VM rolled back (exit 0)" 0 fr --hosts "$T/hosts" --yes
cp "$T/.out" "$T/yes.out"
check "... every guest back on A" all_on "$A"
check_grep "... lume-metal's line per VM" '^127\.0\.0\.222/tahoe-a +rolled-back ' "$T/yes.out"
check_grep "... and its summary" '^# 2 VM\(s\): rolled-back 2 ' "$T/yes.out"
check_has "... and says so" "fleet-rollback: all 2 VM(s) rolled back" "$T/yes.out"

check_rc "to stock with one host down, --json (exit 1)" 1 fr_err --hosts "$T/hosts3" --yes --json --to none --no-probe
cp "$T/.out" "$T/down.out" && cp "$T/fr.err" "$T/down.err"
check "... the guests of the hosts up are stock" test "$(cur a1) $(cur a2)" = "none none"
check_grep "... stdout is lume-metal's JSON" '^\{"summary":\{"rolled-back":2,"unreachable":1,"total":3,' "$T/down.out"
check "... and only that" sh -c '! grep -v "^{" "$1"' - "$T/down.out"
check_has "... the down host named on stderr" "fleet-rollback: 1 VM(s) were not rolled back, of 3 (lume-metal rollback exited 1):" "$T/down.err"
check_has "... with its state" "  127.0.0.229 (unreachable)" "$T/down.err"

check_rc "to stock again: nothing to roll back is exit 0 for lume-metal, 1 here" 1 fr --hosts "$T/hosts" --yes --to=none --no-probe
check_grep "... lume-metal said unchanged" '^127\.0\.0\.221/tahoe-a +unchanged +nothing to roll back' "$T/.out"
check_has "... and exited 0" "fleet-rollback: 2 VM(s) were not rolled back, of 2 (lume-metal rollback exited 0):" "$T/.out"
check_has "... naming each" "  127.0.0.222/tahoe-a (unchanged)" "$T/.out"
t_done

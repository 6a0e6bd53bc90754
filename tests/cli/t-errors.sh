#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced lib; single-quoted $ is for the inner sh
# Honest CLI errors (issue 17, "Errors"): a flag's missing value names the flag, CMD -h is help,
# a misspelt flag gets a suggestion, --host given a file hints at --hosts, a --state that is a
# file and build -o DIR are input errors (exit 2), and --all with no VM says so (exit 0).
. "$(dirname "$0")/../lib.sh"
cd "$T" || exit 1

# err NAME RC WANT CMD...: CMD exits RC and its stderr, one printable line, holds WANT.
err() {
	e_name=$1 e_rc=$2 e_want=$3; shift 3
	check_rc "$e_name (exit $e_rc)" "$e_rc" "$@"
	cp "$T/.out" "$T/err.out"
	check_has "... says \"$e_want\"" "$e_want" "$T/err.out"
	check "... on one printable line" sh -c '[ "$(wc -l <"$1")" -le 1 ] && ! LC_ALL=C grep -q "[^ -~]" "$1"' - "$T/err.out"
}

err "deploy g1 --payload" 2 "lume-metal: deploy: --payload needs a value" "$LM" deploy g1 --payload
err "deploy g1 --parallel" 2 "lume-metal: deploy: --parallel needs a value" "$LM" deploy g1 --parallel
err "status g1 --timeout" 2 "status: --timeout needs a value" "$LM" status g1 --timeout
err "build -o" 2 "build: -o needs a value" "$LM" build -o
err "bench g1 --model m -p" 2 "bench: -p needs a value" "$LM" bench g1 --model m -p
err "a value for a flag that takes none" 2 "deploy: --json takes no value" "$LM" deploy g1 --json=yes
err "an ambiguous prefix" 2 "deploy: --p is ambiguous: --password-file, --parallel" "$LM" deploy g1 --p 3

for c in deploy status build verify ledger report host bench; do
	check_rc "$c -h is help $c (exit 0)" 0 "$LM" "$c" -h
	check_grep "... its usage" "^usage: lume-metal $c " "$T/.out"
done
check_rc "status --help after other flags (exit 0)" 0 "$LM" status g1 --all --help
check_grep "... its usage" "^usage: lume-metal status " "$T/.out"

err "a misspelt long flag" 2 "deploy: unknown flag --paralel; did you mean --parallel?" "$LM" deploy g1 --paralel 4
err "... two letters swapped" 2 "build: unknown flag --traget; did you mean --target?" "$LM" build --traget linux-sim
err "... with =VALUE" 2 "status: unknown flag --sate; did you mean --state?" "$LM" status g1 --sate="$T"
err "... one letter too many in a short name" 2 "unknown flag --alll; did you mean --all?" "$LM" status --alll
err "nothing near: no suggestion" 2 "deploy: unknown flag --frobnicate; see 'lume-metal help deploy'" \
	"$LM" deploy g1 --frobnicate
err "an unknown short flag" 2 "deploy: unknown flag -z; see" "$LM" deploy g1 -z

printf 'lume@mac1.example\n' >"$T/macs.txt"
err "--host given a hosts file's path" 2 "status: --host $T/macs.txt: that is a file, not user@addr[:port]; did you mean --hosts $T/macs.txt?" \
	"$LM" status --host "$T/macs.txt"
err "--host NAME that does not resolve, while a file NAME exists" 2 \
	"status: --host macs.txt: no host has that name, but a file does; did you mean --hosts macs.txt?" \
	"$LM" status --host macs.txt --timeout 2
err "... bench too" 2 "did you mean --hosts macs.txt?" "$LM" bench --host macs.txt --model m

printf 'x\n' >"$T/file"
err "--state that is a file" 2 "status: --state $T/file: not a directory" "$LM" status g1 --state "$T/file"
err "--state under a file" 2 "deploy: --state $T/file/s: not a directory" "$LM" deploy g1 --state "$T/file/s"
err "ledger --state FILE" 2 "ledger: --state $T/file: not a directory" "$LM" ledger --state "$T/file"
err "report --ledger --state FILE" 2 "report: --state $T/file: not a directory" "$LM" report --ledger --state "$T/file"
err "host --state FILE" 2 "host: --state $T/file: not a directory" "$LM" host status --state "$T/file"
# A state that cannot be read (a file where its ledger/ is expected: root reads anything
# chmod 000) stops every command that reaches a VM before it does (tests/deploy/t-state.sh
# has deploy and status against a real guest).
mkdir -p "$T/badstate"
printf 'x\n' >"$T/badstate/ledger"
err "golden with an unreadable --state" 2 "golden: --state $T/badstate: cannot be read: $T/badstate/ledger: Not a directory" \
	"$LM" golden src img:tag --dry-run --target linux-sim --state "$T/badstate"
err "... bench" 2 "bench: --state $T/badstate: cannot be read" "$LM" bench g1 --model m --state "$T/badstate"
err "... validate" 2 "validate: --state $T/badstate: cannot be read" "$LM" validate g1 --model m --target linux-sim \
	--state "$T/badstate"
mkdir "$T/out"
err "build -o DIR" 2 "build: -o $T/out: is a directory; -o names the file to write" "$LM" build --target linux-sim -o "$T/out"
check "... and writes nothing there" sh -c '[ -z "$(ls -A "$1")" ]' - "$T/out"

mkdir "$T/lume"
A() { LUME_SIM_DIR=$T/lume "$LM" "$@" --all --lume "$TOP/tests/lume-sim/lume" --state "$T/state" 2>"$T/err"; }
check_rc "status --all when lume lists no VM (exit 0)" 0 A status
check_has "... prints an empty summary" "# 0 VM(s):" "$T/.out"
check_has "... and says why on stderr" "lume-metal: status: no VMs: lume ls lists none" "$T/err"
check_rc "status --all --json when lume lists no VM (exit 0)" 0 A status --json
check_grep "... one summary object with total 0" '^\{"summary":\{"total":0,' "$T/.out"
check_rc "deploy --all when lume lists no VM (exit 0)" 0 A deploy --target linux-sim

# A missing lume: the same input error with a named VM and with --all.
err "status g1 without lume" 2 "cannot run $T/no/lume: not found" "$LM" status g1 --lume "$T/no/lume" --state "$T/state"
err "status --all without lume" 2 "cannot run $T/no/lume: not found" "$LM" status --all --lume "$T/no/lume" --state "$T/state"

# ledger merge of a folder that holds no ledger document is an error.
mkdir -p "$T/empty/ledger"
err "ledger merge of an empty folder" 2 "ledger merge: $T/empty holds no ledger (ledger.db, *.json" "$LM" ledger merge --state "$T/state" "$T/empty"
# The config file ($XDG_CONFIG_HOME/lume-metal/config): a bad line stops every command that reads
# it, naming FILE:LINE; its values apply where no flag gives one.
CF=$XDG_CONFIG_HOME/lume-metal/config
mkdir -p "${CF%/*}"
printf 'state=%s\nparallel=lots\n' "$T/cstate" >"$CF"
err "a bad number in the config file" 2 "deploy: $CF:2: parallel: 'lots' is not a whole number from 1 to 1024" "$LM" deploy g1
err "... stops ledger too" 2 "ledger: $CF:2: parallel" "$LM" ledger
printf 'state=%s\nlume=%s\nparallel=3\n' "$T/cstate" "$T/no/lume" >"$CF"
check_rc "ledger reads the config file's state=" 0 "$LM" ledger
check_has "... there" "in $T/cstate/ledger.db" "$T/.out"
check_rc "... and --state wins over it" 0 "$LM" ledger --state "$T/state"
check_has "... there" "in $T/state/ledger.db" "$T/.out"
err "status runs the config file's lume=" 2 "cannot run $T/no/lume: not found" "$LM" status g1
check_rc "config shows each value and its source" 0 "$LM" config --parallel 5
check_grep "... state from the file's line 1" "^state +$T/cstate +config:$CF:1\$" "$T/.out"
check_grep "... parallel from the flag" "^parallel +5 +flag\$" "$T/.out"
check_grep "... user: the default" "^user +lume +default\$" "$T/.out"
printf 'user=cfgu\n' >"$CF"
printf 'mac1.example\n' >"$T/nouser.txt"
check_rc "inventory takes the config file's user= for hosts that name none" 0 "$LM" inventory --hosts "$T/nouser.txt"
check_has "... as ansible_user" '"ansible_user":"cfgu"' "$T/.out"
check_rc "... and -u wins over it" 0 "$LM" inventory --hosts "$T/nouser.txt" -u flagu
check_has "... there" '"ansible_user":"flagu"' "$T/.out"
printf 'registry=r.example\norganization=acme\n' >"$CF"
check_rc "golden --dry-run takes registry= and organization= of the config file" 0 "$LM" golden src img:tag --dry-run \
	--model /m.gguf --target linux-sim --state "$T/state"
check_grep "... in the push (under golden's own tag)" "img:golden-[0-9a-f]{32} --registry r\.example --organization acme" "$T/.out"
check_rc "... and --organization wins over it" 0 "$LM" golden src img:tag --dry-run --model /m.gguf --target linux-sim \
	--state "$T/state" --organization mine
check_has "... there" "--registry r.example --organization mine" "$T/.out"
# ~/ is $HOME/ in every path key of the config file and in the path flags (the shell leaves
# --state=~/x as typed): docs/verdicts.md's own setup line, signing-key=~/...
H=$T/th
mkdir -p "$H" && chmod 700 "$H"
printf 'signing-key=~/.config/lume-metal/verdict-key\ntrusted-key=~/a.pub, ~/b.pub\n' >"$CF"
check_rc "config with signing-key=~/... and --state=~/..." 0 env HOME="$H" "$LM" config --state='~/st' --identity='~/id'
check_grep "... signing-key is under \$HOME" "^signing-key +$H/.config/lume-metal/verdict-key +config:" "$T/.out"
check_grep "... each file of trusted-key too" "^trusted-key +$H/a.pub, $H/b.pub +config:" "$T/.out"
check_grep "... and --state=~/st" "^state +$H/st +flag\$" "$T/.out"
check_grep "... and --identity=~/id" "^identity +$H/id +flag\$" "$T/.out"
# trusted-key files are strict (docs/verdicts.md): every key of a file is trusted, anything else
# in it is refused with its line, and so is a file or folder others may write (sshd's StrictModes).
for k in k k2; do HOME=$H "$LM" key generate "$H/$k" >/dev/null || not_ok "key generate $k"; done
{ printf '# the CI key\n'; cat "$H/k.pub"; } >"$H/c.pub"
printf 'trusted-key=~/c.pub\n' >"$CF"
err "a trusted-key file with a comment line" 2 "ledger pull: trusted-key: $H/c.pub:1: not part of a public key" \
	env HOME="$H" "$LM" ledger pull 127.0.0.1:9/org/x:1 --state "$T/state"
printf 'trusted-key=%s\n' "$H/k" >"$CF"
err "a private key as trusted-key" 2 "trusted-key: $H/k:1: a private key (PRIVATE KEY)" \
	env HOME="$H" "$LM" ledger pull 127.0.0.1:9/org/x:1 --state "$T/state"
cat "$H/k.pub" "$H/k2.pub" >"$H/two.pub"
chmod 664 "$H/two.pub"
printf 'trusted-key=~/two.pub\n' >"$CF"
err "a group-writable trusted-key file" 2 "trusted-key: $H/two.pub: refused: a trusted-key file must be owned by you" \
	env HOME="$H" "$LM" ledger pull 127.0.0.1:9/org/x:1 --state "$T/state"
chmod 644 "$H/two.pub" && chmod 770 "$H"
err "... or its folder (\$HOME itself)" 2 "trusted-key: $H/two.pub: refused: its folder $H is writable by its group or others" \
	env HOME="$H" "$LM" ledger pull 127.0.0.1:9/org/x:1 --state "$T/state"
chmod 700 "$H"
check_rc "a file of two keys, 0644 in a 0700 home: the lookup is tried (the registry is down: exit 1)" 1 \
	env HOME="$H" "$LM" ledger pull 127.0.0.1:9/org/x:1 --state "$T/state"
check_has "... past the trust files, to the registry" "registry 127.0.0.1:9 is unreachable" "$T/.out"
rm -f "$CF"
t_done

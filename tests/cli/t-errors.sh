#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced lib; single-quoted $ is for the inner sh
# Honest CLI errors (issue 17, "Errors"): a flag's missing value names the flag, CMD -h is help,
# and a misspelt flag gets a suggestion.
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

t_done

# Shell completions: bash completes the commands and every flag each `lume-metal help CMD`
# shows and each row of its option table has (the function called as bash calls it: COMP_WORDS, COMP_CWORD, then COMPREPLY); fish
# the same through `complete -C`; zsh's file parses and names every flag.
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner bash
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/install/helpflags.sh"
C=$TOP/completions
help_commands >"$T/cmds"

# bcomp WORD...: the completions bash offers for the last word, one per line, sorted.
bcomp() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _lume_metal; printf "%s\n" "${COMPREPLY[@]}"' \
		- "$C/lume-metal.bash" lume-metal "$@" | sort
}
check "bash: the file defines the completion for lume-metal" bash -c '. "$1" && complete -p lume-metal | grep -q _lume_metal' - "$C/lume-metal.bash"
bcomp "" >"$T/got"
check "bash: every command and help at the first word" sh -c '{ cat "$1"; echo help; } | sort | diff - "$2"' - "$T/cmds" "$T/got"
bcomp de >"$T/got"
check "bash: 'de' completes to deploy" sh -c 'test "$(cat "$1")" = deploy' - "$T/got"
bcomp deploy --rollback >"$T/got"
check "bash: 'deploy --rollback' completes to --rollback-on-fail" sh -c 'test "$(cat "$1")" = --rollback-on-fail' - "$T/got"
bcomp deploy --target "" >"$T/got"
check "bash: deploy --target offers macos and linux-sim" sh -c 'test "$(tr "\n" " " <"$1")" = "linux-sim macos "' - "$T/got"
flagged=""
for f in --pull --pull-registry --pull-organization --registry --organization --additional-tags --build-vm; do
	bcomp golden "$f" - >"$T/got"
	grep -q . "$T/got" && flagged="$flagged $f"
	grep -Eq -- "'[*]?$f\\[[^]]*\\]:" "$C/_lume-metal" || flagged="$flagged zsh:$f"
done
check "bash, zsh: golden's --pull IMAGE:TAG and its other flags with a value take one (no flags offered after them)" test -z "$flagged"
bcomp ledger "" >"$T/got"
check "bash: ledger offers show, export, merge, push, pull, prune" sh -c 'test "$(tr "\n" " " <"$1")" = "export merge prune pull push show "' - "$T/got"
while read -r c; do
	bcomp "$c" - >"$T/got"
	all_flags "$c" >"$T/flags"
	missing=$(comm -23 "$T/flags" "$T/got" | tr '\n' ' ')
	if [ -z "$missing" ] && [ -s "$T/flags" ]; then ok "bash: $c - offers its $(wc -l <"$T/flags") flags"; else not_ok "bash: $c - lacks: $missing"; fi
done <"$T/cmds"
bcomp deploy - >"$T/got"
check "bash: deploy's flags and no other command's" sh -c '! grep -qx -- --llama-bench "$1" && grep -qx -- --canary "$1"' - "$T/got"
check "bash: deploy offers what --validate-workload takes (validate's --model, --llama-perplexity)" \
	sh -c 'grep -qx -- --model "$1" && grep -qx -- --llama-perplexity "$1"' - "$T/got"

if command -v fish >/dev/null 2>&1; then
	check "fish: the file parses" fish -n "$C/lume-metal.fish"
	while read -r c; do
		fish -c 'source $argv[1]; complete -C "lume-metal $argv[2] -"' "$C/lume-metal.fish" "$c" | cut -f1 | sort -u >"$T/got"
		all_flags "$c" >"$T/flags"
		missing=$(comm -23 "$T/flags" "$T/got" | tr '\n' ' ')
		if [ -z "$missing" ]; then ok "fish: $c - offers its flags"; else not_ok "fish: $c - lacks: $missing"; fi
	done <"$T/cmds"
else
	not_ok "fish is installed (scripts/deps.sh test)"
fi
if command -v zsh >/dev/null 2>&1; then
	check "zsh: the file parses" zsh -n "$C/_lume-metal"
	check_grep "zsh: it is a #compdef for lume-metal" '^#compdef lume-metal$' "$C/_lume-metal"
	missing=""
	while read -r c; do
		check_grep "zsh: command $c" "^	'$c:" "$C/_lume-metal"
		# a flag is named as FLAG[ (its description), {FLAG, or ,FLAG} (a group of aliases)
		missing=$missing$(all_flags "$c" | awk -v c="$c" 'FILENAME == ARGV[1] { z = z $0 "\n"; next }
			!index(z, $0 "[") && !index(z, "{" $0 ",") && !index(z, "," $0 "}") { printf " %s:%s", c, $0 }' "$C/_lume-metal" -)
	done <"$T/cmds"
	if [ -z "$missing" ]; then ok "zsh: every flag of every command"; else not_ok "zsh: missing$missing"; fi
else
	not_ok "zsh is installed (scripts/deps.sh test)"
fi
t_done

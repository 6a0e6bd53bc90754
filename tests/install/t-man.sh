# The man page (mdoc): man -l renders it, and it names every command `lume-metal help` lists,
# every flag of every `help CMD` and every row of its option table, every exit code and every environment variable the sources read.
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/install/helpflags.sh"
page=$TOP/man/lume-metal.1

check_rc "MANWIDTH=80 man -l renders the page" 0 env MANWIDTH=80 man --warnings -l "$page"
cp "$T/.out" "$T/man.txt"
env MANWIDTH=80 man --warnings -l "$page" 2>"$T/warn" >/dev/null
check "... without a groff warning" test ! -s "$T/warn"
check_grep "... in mdoc" '^\.Dt LUME-METAL 1$' "$page"
help_commands >"$T/cmds"
check "lume-metal help lists the commands" test -s "$T/cmds"
while read -r c; do
	check_grep "the page has command $c" "^     $c( |$)" "$T/man.txt"
	all_flags "$c" >"$T/flags"
	missing=$(unmatched "$page" 'Fl ' '( |$)' 1 <"$T/flags")
	if [ -z "$missing" ] && [ -s "$T/flags" ]; then ok "... and each of its $(wc -l <"$T/flags") flags"; else not_ok "... flags of $c missing from the page:$missing"; fi
done <"$T/cmds"
check_grep "the page has help" '^     help \[command\]' "$T/man.txt"
for code in 0 1 2 3; do
	check "exit code $code is under EXIT STATUS" sh -c 'sed -n "/^EXIT STATUS/,/^[A-Z]/p" "$1" | grep -Eq "^     $2 "' - "$T/man.txt" "$code"
done
grep -oh 'getenv("[A-Z_]*")' "$TOP"/plugin/*/*.c | sed 's/getenv("\(.*\)")/\1/' | sort -u >"$T/env"
envs=$(sed -n '/^ENVIRONMENT/,/^FILES/p' "$T/man.txt")
while read -r v; do
	case $envs in
	*"$v"*) ok "environment variable $v is under ENVIRONMENT" ;;
	*) not_ok "environment variable $v is under ENVIRONMENT" ;;
	esac
done <"$T/env"
check_has "FILES: the installed data folder" "PREFIX/share/lume-metal" "$T/man.txt"
check "FILES: the search order" sh -c 'sed -n "/^FILES/,/^EXIT/p" "$1" | tr -s " \n" "  " |
	grep -q "1\. LUME_METAL_DATADIR, when set and not empty (used whatever it holds); 2\. the installed PREFIX/share/lume-metal"' - "$T/man.txt"
for c in lume-preprovision fleet-rollback; do
	check_grep "the installed command $c" "^     $c " "$T/man.txt"
done
t_done

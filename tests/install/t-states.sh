# The end states: every state the sources give a VM is in plugin/ops/session.h's SESSION_STATES, and
# README.md and the man page say what each of those means.
# shellcheck disable=SC1091 # sourced lib
. "$(dirname "$0")/../lib.sh"

# SESSION_STATES, one per line.
sed -n '/^#define SESSION_STATES/,/[^\\]$/p' "$TOP/plugin/ops/session.h" | grep -o '"[^"]*"' | tr -d '"' | tr ' ' '\n' |
	grep . | sort -u >"$T/states"
check "SESSION_STATES lists the states" test "$(wc -l <"$T/states")" -ge 10
# The literals the sources pass as a state (to session_set_state, session_result_new,
# add_extra; deploy_why_state's returns), without the keys they read with cJSON_*(...).
perl -0777 -ne '
	1 while s/\bcJSON_\w+\s*\([^()]*\)/X/g;
	while (/\b(?:session_set_state|set_state|session_result_new|add_extra)\s*\(([^;]*);/g) {
		my $a = $1; print "$1\n" while $a =~ /"([a-z][a-z-]*)"/g;
	}
	print "$1\n" while /case SSH_\w+: return "([a-z-]+)"/g;' "$TOP"/plugin/*/*.c | sort -u >"$T/set"
check "the sources set states" test "$(wc -l <"$T/set")" -ge 10
missing=$(comm -23 "$T/set" "$T/states" | tr '\n' ' ')
if [ -z "$missing" ]; then ok "every state the sources set is in SESSION_STATES"; else not_ok "SESSION_STATES lacks: $missing"; fi

sed -n '/^Every VM ends in one state/,/^$/p' "$TOP/README.md" | tr '\n' ' ' >"$T/readme"
sed -n '/^Every VM ends in one state/,/^\.El/p' "$TOP/man/lume-metal.1" >"$T/man"
rm_=""; man_=""
while read -r s; do
	grep -q "\`$s\` (" "$T/readme" || rm_="$rm_ $s"
	grep -Eq "^\.It Cm $s\$" "$T/man" || man_="$man_ $s"
done <"$T/states"
if [ -z "$rm_" ]; then ok "README.md says what each state means"; else not_ok "README.md's state list lacks:$rm_"; fi
if [ -z "$man_" ]; then ok "the man page says what each state means"; else not_ok "the man page's state list lacks:$man_"; fi
t_done

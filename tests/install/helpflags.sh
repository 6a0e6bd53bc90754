# Sourced by tests/install/t-*.sh and tests/cli/t-help.sh: the commands `lume-metal help` lists,
# the flags each `lume-metal help CMD` shows (its usage lines and its flag lines), the rows of
# each command's option table (`lume-metal help --flags CMD`), one per line.
help_commands() { "$LM" help | awk '/^  [a-z]+ / {print $1}'; }
help_flags() {
	"$LM" help "$1" | awk 'NR == 1, /^$/ {print; next} /^ *-/ {print $1; print $2}' |
		grep -oE -- '(^|[][ (|,])--?[a-zA-Z][a-z0-9-]*' | sed 's/^[][ (|,]//' | sort -u
}
table_flags() { "$LM" help --flags "$1" | awk '{print $1}' | sort -u; }
# Every flag of CMD: its help's and its option table's (a row its help does not show is still
# one the man page and the completions must know).
all_flags() { { help_flags "$1"; table_flags "$1"; } | sort -u; }

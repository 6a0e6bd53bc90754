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
# one the man page and the completions must know). Asked once a command: kept in $T/.flags.CMD.
all_flags() {
	[ -f "$T/.flags.$1" ] || { help_flags "$1"; table_flags "$1"; } | sort -u >"$T/.flags.$1"
	cat "$T/.flags.$1"
}
# unmatched FILE BEFORE AFTER [CUT]: the flags on stdin (one a line) that no line of FILE
# matches as the extended regex BEFORE FLAG AFTER (the flag without its first CUT characters),
# each after a space. One awk for all of them, where a grep a flag made hundreds of processes.
unmatched() {
	awk -v b="$2" -v a="$3" -v cut="${4:-0}" 'FILENAME == ARGV[1] { l[++n] = $0; next }
	{
		re = b substr($0, cut + 1) a
		for (i = 1; i <= n; i++) if (l[i] ~ re) next
		printf " %s", $0
	}' "$1" -
}

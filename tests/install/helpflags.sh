# Sourced by tests/install/t-*.sh: the commands `lume-metal help` lists, and the flags each
# `lume-metal help CMD` shows (its usage lines and its flag lines), one per line.
help_commands() { "$LM" help | awk '/^  [a-z]+ / {print $1}'; }
help_flags() {
	"$LM" help "$1" | awk 'NR == 1, /^$/ {print; next} /^ *-/ {print $1; print $2}' |
		grep -oE -- '(^|[][ (|,])--?[a-zA-Z][a-z0-9-]*' | sed 's/^[][ (|,]//' | sort -u
}

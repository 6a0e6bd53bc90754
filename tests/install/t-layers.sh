# The host tool's structure: plugin/ is four floors, cmd/ over ops/ over net/ over core/ (the
# Makefile's LAYERS). A file includes only headers of its own floor or one below, every include
# names its floor ("core/ledger.h"), and no module (a .c/.h pair) reaches itself through its
# includes. Each check is also run on a copy with one bad include, so it can fail.
# shellcheck disable=SC1091 # sourced lib
. "$(dirname "$0")/../lib.sh"

floors=$(sed -n 's/^LAYERS *:= *//p' "$TOP/Makefile")
check "the Makefile names the floors" test "$floors" = "cmd ops net core"

# includes DIR: one line per project include, "FROM-FLOOR FROM-MODULE TO", TO as written (one
# awk over every file: the checks below read the tree eight times).
includes() {
	d=$1
	set --
	for f in "$d"/*/*.c "$d"/*/*.h; do [ -f "$f" ] && set -- "$@" "$f"; done
	[ $# -gt 0 ] || return 0
	awk -v top="$d/" '
	FNR == 1 { rel = substr(FILENAME, length(top) + 1); fl = rel; sub(/\/.*/, "", fl)
		mod = substr(rel, length(fl) + 2); sub(/\.[ch]$/, "", mod) }
	match($0, /^#include "[^"]*"/) { print fl, mod, substr($0, 11, RLENGTH - 11) }' "$@"
}

# layering DIR: prints each include that names no floor, an unknown floor, or a floor above its
# own; nothing when all are well.
layering() {
	includes "$1" | awk -v floors="$floors" '
	BEGIN { n = split(floors, f, " "); for (i = 1; i <= n; i++) rank[f[i]] = n - i }
	{
		to = $3; slash = index(to, "/")
		if (slash == 0) { print $1 "/" $2 ": \"" to "\" names no floor"; next }
		tf = substr(to, 1, slash - 1)
		if (!(tf in rank)) { print $1 "/" $2 ": \"" to "\": no floor " tf; next }
		if (rank[tf] > rank[$1]) print $1 "/" $2 ": \"" to "\" runs up from " $1 " to " tf
	}'
}

# cycles DIR: prints a cycle of modules (a .c and its .h are one module), or nothing.
cycles() {
	includes "$1" | awk '
	{ to = $3; sub(/\.h$/, "", to); from = $1 "/" $2; if (to != from) { e[from] = e[from] " " to; node[from] = node[to] = 1 } }
	function visit(v,   k, m, w, i) {
		if (state[v] == 2) return 0
		if (state[v] == 1) { path = v; for (i = depth; i > 0 && stack[i] != v; i--) path = stack[i] " -> " path; print v " -> " path; return 1 }
		state[v] = 1; stack[++depth] = v
		m = split(e[v], w, " ")
		for (k = 1; k <= m; k++) if (visit(w[k])) return 1
		depth--; state[v] = 2
		return 0
	}
	END { for (v in node) if (visit(v)) exit }'
}

layering "$TOP/plugin" >"$T/layering"
if [ ! -s "$T/layering" ]; then ok "every include names its floor, at or below the includer's"
else not_ok "includes out of their floors:"; sed 's/^/#   /' "$T/layering"; fi
cycles "$TOP/plugin" >"$T/cycles"
if [ ! -s "$T/cycles" ]; then ok "no module reaches itself through its includes"
else not_ok "an include cycle: $(cat "$T/cycles")"; fi
check "the checks saw the tree" test "$(includes "$TOP/plugin" | wc -l)" -gt 100

# cmd/ is a front end over the library (in the way git's builtins sit over libgit2): it includes
# ops/ headers, its own, and only these core/ ones, each for a reason:
#   core/util.h    the buffers, error codes and cJSON getters every floor shares
#   core/escape.h  the terminal-safety rule that cli_term.c prints everything with
#   core/ledger.h  the ledger's records and key labels, which ledger, report, golden and the
#                  summaries render
#   core/bench.h   the benchmark tables that bench and report render
cmd_core="core/util.h core/escape.h core/ledger.h core/bench.h"
# front DIR: prints each include of cmd/ that is none of those; nothing when all are well.
front() {
	includes "$1" | awk -v ok="$cmd_core" '
	BEGIN { n = split(ok, a, " "); for (i = 1; i <= n; i++) allowed[a[i]] = 1 }
	$1 == "cmd" && $3 !~ /^(ops|cmd)\// && !($3 in allowed) { print "cmd/" $2 ": \"" $3 "\" is no ops/ header nor a named core/ one" }'
}
front "$TOP/plugin" >"$T/front"
if [ ! -s "$T/front" ]; then ok "cmd/ includes only ops/, its own and the named core/ headers"
else not_ok "cmd/ reaches below ops/:"; sed 's/^/#   /' "$T/front"; fi

# The checks can fail: a copy where core/ledger.h includes ops/deploy.h (an arrow up, and with
# deploy -> ledger a circle), and one with a bare include.
cp -R "$TOP/plugin" "$T/bad"
printf '#include "ops/deploy.h"\n' >>"$T/bad/core/ledger.h"
layering "$T/bad" >"$T/bad.layering"
check_has "an arrow up is found" 'core/ledger: "ops/deploy.h" runs up from core to ops' "$T/bad.layering"
cycles "$T/bad" >"$T/bad.cycles"
check_grep "... and the circle it makes" 'core/ledger' "$T/bad.cycles"
printf '#include "ledger.h"\n' >>"$T/bad/net/ssh.c"
layering "$T/bad" >"$T/bad.layering"
check_has "a bare include is found" 'net/ssh: "ledger.h" names no floor' "$T/bad.layering"
printf '#include "net/ssh.h"\n#include "core/config.h"\n' >>"$T/bad/cmd/cli.h"
front "$T/bad" >"$T/bad.front"
check_has "cmd/ including net/ is found" 'cmd/cli: "net/ssh.h" is no ops/ header nor a named core/ one' "$T/bad.front"
check_has "... and an unnamed core/ header" 'cmd/cli: "core/config.h" is no ops/ header nor a named core/ one' "$T/bad.front"
t_done

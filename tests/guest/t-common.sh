#!/bin/sh
# shellcheck disable=SC1091,SC2016 # lib.sh is sourced by path; the $ in patterns is literal
# Static checks of the guest scripts: the three load common.sh, they parse as
# POSIX sh, use nothing a stock macOS lacks or GNU alone has, never eval or source what they
# read, never `ln -sfn`, never `launchctl setenv`; so do the scripts the controller sends
# (guest-scripts/, embedded in the binary). (shellcheck runs in `make lint`.)
. "$(dirname "$0")/../lib.sh"
P=$TOP/guest-payload
G=$TOP/guest-scripts

for s in install.sh rollback.sh status.sh; do
	check_grep "$s loads the shared helpers from common.sh" '^\[ -n "\$\{LM_COMMON_LOADED:-\}" \] \|\| \. "\$\(dirname "\$0"\)/common\.sh" \|\| exit 2$' "$P/$s"
done
check "common.sh parses under dash -n" dash -n "$P/common.sh"

# The guest-scripts/ files are named relative to the payload folder, like the others.
gs=""
for f in "$G"/*.sh; do gs="$gs ../guest-scripts/${f##*/}"; done
check "guest-scripts/ holds the controller's scripts" test "$(echo "$gs" | wc -w)" -ge 10
# What no script may use: one extended regex a line ([ ] for a space, which a line would hide).
cat >"$T/bad" <<'BAD'
ln -s[a-z]*f
eval[ ]
^[[:space:]]*\.[ ]
(^|[;&|[:space:]])source[ ]
launchctl setenv
sed -i
readlink -[a-z]
stat -c
-printf
sha256sum
xmllint
mktemp --
sort -V
grep -P
(^|[[:space:]])\[\[[[:space:]]
(^|[[:space:]])local[ ]
tar [^|]*--
tar .*-C[ ]
echo -[ne]
xargs -0
date \+%s%N
head -c
cp -a
function[ ]
BAD
for s in common.sh install.sh rollback.sh status.sh run-with-shim $gs; do
	check "$s parses under dash -n" dash -n "$P/$s"
	head -n 1 "$P/$s" >"$T/shebang"
	check_grep "$s is a #!/bin/sh script" '^#!/bin/sh$' "$T/shebang"
	# Comments are stripped so the prose may name what the code must not do.
	# The one file a script may source is its own release's common.sh.
	sed -e 's/^[[:space:]]*#.*//' -e 's/[[:space:]]#[[:space:]].*//' \
		-e '/^\[ -n "\${LM_COMMON_LOADED:-}" \] || \. "\$(dirname "\$0")\/common\.sh" || exit 2$/d' "$P/$s" >"$T/code"
	# One awk a script checks every pattern (a grep a pattern was 25 processes a script). The
	# patterns are read from a file, so awk takes them as written, as grep -E did.
	awk -v s="$s" 'FILENAME == ARGV[1] { bad[++n] = $0; next }
	{ code[++m] = $0 }
	END {
		for (i = 1; i <= n; i++) {
			# host-identity.sh runs on the Mac host, whose BSD head has -c (it cuts a file at 80
			# bytes)
			if (s == "../guest-scripts/host-identity.sh" && bad[i] == "head -c") continue
			hit = ""
			for (j = 1; j <= m; j++) if (code[j] ~ bad[i]) hit = hit "#   " j ":" code[j] "\n"
			printf "%s %s\n%s", hit == "" ? "ok" : "bad", bad[i], hit
		}
	}' "$T/bad" "$T/code" >"$T/hits"
	while IFS= read -r l; do
		case $l in
		"ok "*) ok "$s: no /${l#ok }/" ;;
		"bad "*) not_ok "$s: no /${l#bad }/" ;;
		*) printf '%s\n' "$l" ;;
		esac
	done <"$T/hits"
	# GNU mv -T appears only as the non-BSD branch of mv_link, next to BSD mv -h.
	check "$s: mv -T only beside mv -h (mv_link)" test "$(grep -c 'mv -f -T' "$T/code")" = "$(grep -c 'mv -f -h' "$T/code")"
done

# common.sh stands alone: it calls no function of its loader's (fail) and names what it reads
# (uid, work, label, ...). A shell that loads it and defines no fail(): save_agents, unable to
# back up a LaunchAgent (its copy would go into a folder that does not exist), returns 1 and
# says why, and the loader decides what follows.
mkdir -p "$T/agents"
printf '<plist/>\n' >"$T/agents/x.plist"
dash -c '. "$1" && AGENTS=$2 work=$2/missing && if save_agents x; then echo "returned 0"; else echo "returned 1: $s_err"; fi' \
    - "$P/common.sh" "$T/agents" >"$T/save.out" 2>&1
check_has "save_agents that cannot back up a LaunchAgent returns 1 saying why, calling no fail()" \
    "returned 1: cannot back up $T/agents/x.plist (full disk?)" "$T/save.out"
check "... and says nothing else" test "$(wc -l <"$T/save.out")" -eq 1
# ... and shellcheck sees it all: no script disables SC2154 (a variable read and never set);
# make lint follows common.sh from the others (shellcheck -x, their source directive).
for s in common.sh install.sh rollback.sh status.sh; do
	check "$s disables no SC2154" sh -c '! grep -n "shellcheck disable=.*SC2154" "$1"' - "$P/$s"
done

t_done

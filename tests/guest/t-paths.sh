#!/bin/sh
# shellcheck disable=SC1091 # lib.sh and guest-lib.sh are sourced by path
# A HOME with spaces, &, quotes, <>, and a backslash: the LaunchAgent is XML-escaped and lints,
# launchd gets the real paths back, every JSON string is escaped, the shim still loads (the
# shimmed probe ran through run-with-shim under "Application Support").
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"
odd="$T/we & \"they\" 'q' <x> a\\b"
guest odd "$odd"

payload "$T/a.tar.gz" || not_ok "build payload a"
A=$SHA
install "$T/i.json" "$T/a.tar.gz" "$A"
rc_is "install under an odd HOME exits 0" 0
is_json "install under an odd HOME prints one JSON object" "$T/i.json"
jis "the JSON carries the plist path unharmed" "$T/i.json" .plist "$PL"
jis "the shim was active in the shimmed probe" "$T/i.json" .shimmed.shim.active true
check "the LaunchAgent is well-formed XML" xmllint --noout --nonet "$PL"
check "plutil -lint passes" plutil -lint "$PL"
check_grep "& and <> are escaped in the LaunchAgent" 'we &amp; "they" .q. &lt;x&gt; a\\b/Library' "$PL"
got=$(xmllint --nonet --xpath 'string(/plist/dict/key[.="EnvironmentVariables"]/following-sibling::dict[1]/key[.="LD_PRELOAD"]/following-sibling::*[1])' "$PL")
is_eq "the preload path reads back as the real path" "$got" "$ROOT/releases/$A/lib/liblumemetal.so"
launchctl print "gui/$UID_SIM/$LABEL" >"$T/p"
check "launchd loaded the LaunchAgent at the real path" grep -qxF "	path = $PL" "$T/p"
check "launchd sees the real preload path" grep -qxF "		LD_PRELOAD => $ROOT/releases/$A/lib/liblumemetal.so" "$T/p"

status "$T/s.json"
is_json "status under an odd HOME prints one JSON object" "$T/s.json"
jis "status: root path unharmed" "$T/s.json" .root "$ROOT"
jis "status: the LaunchAgent matches" "$T/s.json" .launchAgent.matches true

"$ROOT/current/bin/run-with-shim" env >"$T/env" 2>/dev/null
check "run-with-shim: preload by name (ld.so splits LD_PRELOAD at spaces)" grep -qx 'LD_PRELOAD=liblumemetal.so' "$T/env"
check "run-with-shim: found through LD_LIBRARY_PATH, the release's own lib/" \
	grep -qxF "LD_LIBRARY_PATH=$ROOT/releases/$A/lib" "$T/env"

rollback "$T/r.json" none
rc_is "rollback none under an odd HOME exits 0" 0
is_json "rollback none prints one JSON object" "$T/r.json"
check "rollback none removed everything" test ! -e "$ROOT"
check "rollback none removed the LaunchAgent" test ! -e "$PL"
t_done

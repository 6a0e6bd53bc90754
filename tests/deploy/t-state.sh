#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# An unreadable --state (issue 17, "No quiet failures"): deploy and status fail before they
# connect to any VM, naming what cannot be read, whether --state or the config file's state=
# named it; and status never reports ok for a VM whose ledger document it could not read. The
# ledger is STATE/ledger.db (issue 32): a foreign file there is refused the same way.
# The tests run as root, whom chmod 000 does not stop: what cannot be read here is a file where
# the ledger's directory is expected, a directory or a FIFO where a document is expected (open
# and read fail, or are refused, for root too), and a document that does not parse.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

guest s1 127.0.0.93 || exit 1
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1
# run NAME CMD STATE [ARGS...]: lume-metal CMD on s1 with a known_hosts that only a connection
# would create ($T/kh-NAME, --accept-new); JSON lines and stderr into $T/out-NAME.
run() {
	r_n=$1 r_c=$2 r_s=$3
	shift 3
	timeout 30 "$LM" "$r_c" s1 --lume "$TOP/tests/lume-sim/lume" --port "$PORT" -u "$ME" -i "$T/id_ed25519" \
		--known-hosts "$T/kh-$r_n" --accept-new ${r_s:+--state "$r_s"} --json "$@" >"$T/out-$r_n" 2>&1
}

mkdir -p "$T/st1"
printf 'x\n' >"$T/st1/ledger"
check_rc "deploy with a file where --state's ledger/ is expected: exit 2" 2 run st1 deploy "$T/st1" --payload "$T/a.tar.gz"
check_has "... naming it" "deploy: --state $T/st1: cannot be read: $T/st1/ledger: Not a directory" "$T/out-st1"
check "... before connecting to the VM" test ! -e "$T/kh-st1"

mkdir -p "$T/st2/ledger/0123456789abcdef.json"
check_rc "status with a directory where a ledger document is expected: exit 2" 2 run st2 status "$T/st2"
check_has "... naming the document" "cannot be read: $T/st2/ledger/0123456789abcdef.json: not a regular file" "$T/out-st2"
check "... before connecting" test ! -e "$T/kh-st2"

mkdir -p "$T/st3/ledger"
mkfifo "$T/st3/ledger/0123456789abcdef.json"
check_rc "deploy with a FIFO as a ledger document: exit 2, without waiting on it" 2 run st3 deploy "$T/st3" \
	--payload "$T/a.tar.gz"
check_has "... naming it" "$T/st3/ledger/0123456789abcdef.json: not a regular file" "$T/out-st3"
check "... before connecting" test ! -e "$T/kh-st3"

mkdir -p "$XDG_CONFIG_HOME/lume-metal"
printf 'state=%s\n' "$T/st1" >"$XDG_CONFIG_HOME/lume-metal/config"
check_rc "status with the config file's state= unreadable: exit 2" 2 run cfg status ""
check_has "... naming it" "status: --state $T/st1: cannot be read: $T/st1/ledger" "$T/out-cfg"
check "... before connecting" test ! -e "$T/kh-cfg"
rm "$XDG_CONFIG_HOME/lume-metal/config"

# A file at ledger.db that is not the ledger's database (issue 32): refused before anything runs,
# named, and left as it is.
mkdir -p "$T/st5" && printf '{"records": []}\n' >"$T/st5/ledger.db"
check_rc "status with a JSON file where the ledger's database is expected: exit 2" 2 run st5 status "$T/st5"
check_has "... naming it" "$T/st5/ledger.db: not this ledger's database (file is not a database)" "$T/out-st5"
check "... before connecting" test ! -e "$T/kh-st5"
check "... and leaving it as it was" test "$(cat "$T/st5/ledger.db")" = '{"records": []}'

# A document that reads but does not parse: status says failed, naming it, not ok (exit 1). The
# image version's JSON document, as an older lume-metal could leave it beside the database ...
check_rc "deploy to s1 (a readable state)" 0 run st4 deploy "$T/st4" --payload "$T/a.tar.gz" \
	--validate-workload --model "$VMODEL" --timeout "$VTIMEOUT"
name=$("$LM" ledger show --json --state "$T/st4" | sed -n 's/.*"path":"[^"]*ledger\.db#\([0-9a-f]\{16\}\)".*/\1/p')
check "... its image version's name in the database (ledger show --json)" test -n "$name"
printf '{' >"$T/st4/ledger/$name.json"
check_rc "status with its ledger document corrupt: exit 1" 1 run st4s status "$T/st4"
check_grep "... state failed, not ok" '"state":"failed"' "$T/out-st4s"
check_has "... saying why" "$T/st4/ledger/$name.json: corrupt ledger file" "$T/out-st4s"
check "... and leaving it as it was" test "$(cat "$T/st4/ledger/$name.json")" = '{'
# ... and a record of the database damaged.
rm "$T/st4/ledger/$name.json"
check "a record of the database damaged (by another program)" python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE records SET record = ? WHERE kind = ?", ("{", "deploy"))
db.commit()' "$T/st4/ledger.db"
check_rc "status with it: exit 1" 1 run st4d status "$T/st4"
check_grep "... state failed, not ok" '"state":"failed"' "$T/out-st4d"
check_has "... saying why" "is not JSON: a corrupt ledger database" "$T/out-st4d"
check "no sanitizer report in any run" sh -c '! grep -l Sanitizer "$1"/out-*' - "$T"
t_done

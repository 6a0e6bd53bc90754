#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced lib; single-quoted $ is for the inner sh
# The JSON store's documents migrated into the database (issue 32), and what the lume-metal
# before the database makes of a migrated state: its ledger, built from git (f1c4dd0, the last
# commit of the JSON store) into scripts/bench-ledger.d/driver.c, the calls its deploy, status
# and ledger show make. It writes its documents; this lume-metal imports them, keeps them
# renamed, leaves the marker; the old one then refuses the state before any VM instead of
# reading an empty ledger (its ledger_readable: "not a regular file", naming the marker), its
# ledger show fails naming it, and what it writes anyway is imported by the next run here.
. "$(dirname "$0")/../lib.sh"
OLD=f1c4dd0
if ! git -C "$TOP" cat-file -e "$OLD^{commit}" 2>/dev/null; then
	ok "# skip the JSON store's commit $OLD is not in this checkout's history (a shallow clone?)"
	t_done
fi
mkdir -p "$T/old/core"
git -C "$TOP" show "$OLD:plugin/core/ledger.c" >"$T/old/core/ledger.c" &&
	git -C "$TOP" show "$OLD:plugin/core/ledger.h" >"$T/old/core/ledger.h" && cp "$TOP/plugin/core/util.h" "$T/old/core/"
# shellcheck disable=SC2046 # pkg-config's words
check "the JSON store's ledger built from git ($OLD)" cc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
	-DLEDGER_JSON_STORE -I"$T/old" $(pkg-config --cflags libcjson) -o "$T/old-ledger" \
	"$TOP/scripts/bench-ledger.d/driver.c" "$T/old/core/ledger.c" "$TOP/plugin/core/util.c" \
	$(pkg-config --libs libcjson libcrypto) -pthread
old() { o=$1; shift; "$T/old-ledger" "$o" "$T/s" "$T/key.json" "$T/rec.json" "$@"; }
printf '{"image":"ghcr.io/x/img:1","imageDigest":null,"guestOS":"26.5.2","guestBuild":"25F84","guestModel":"VirtualMac2,1","hostChip":"Apple M1 Ultra","hostBuild":"25G76"}\n' >"$T/key.json"
printf '{"kind":"deploy","vm":"tahoe-1","verdict":"pass","payloadSha256":"%064d","profile":"p","workload":"w","reasons":[]}\n' 0 >"$T/rec.json"
mkdir -p "$T/s"
check "the old ledger writes 3 records (its document)" sh -c '"$1" fill "$2" "$3" "$4" 3' - "$T/old-ledger" "$T/s" "$T/key.json" "$T/rec.json"
set -- "$T"/s/ledger/*.json
DOC=$1
check "... one document, $(basename "$DOC")" test -f "$DOC"

check_rc "ledger show here: migrated on first use" 0 "$LM" ledger show --state "$T/s"
check_grep "... its 3 records shown" 'deploy +pass +clone-3' "$T/.out"
check "... into ledger.db" test -s "$T/s/ledger.db"
check "... the document kept, renamed *.json.migrated" sh -c 'test ! -e "$1" && test -f "$1.migrated"' - "$DOC"
M=$T/s/ledger/MOVED-TO-ledger.db-this-lume-metal-is-too-old.json
check "... the marker left in ledger/, a directory with a README" test -d "$M" -a -s "$M/README"

check_rc "the old lume-metal's check before deploy and status (ledger_readable) fails" 1 old readable
check_has "... naming the marker: the run stops before any VM" "cannot be read: $M: not a regular file" "$T/.out"
check_rc "the old ledger show fails" 1 old show
check_has "... naming it too" "$M" "$T/.out"
check_rc "(past that check, the old ledger would find no verdict: why the marker is there)" 1 old status
check_has "... (no verdict)" "no verdict" "$T/.out"
check_rc "the old lume-metal appends a record anyway (a deploy past the check, or ledger merge)" 0 old deploy tahoe-9
check "... into a new document of its own" test -f "$DOC"
check_rc "the next ledger show here imports it" 0 "$LM" ledger show --state "$T/s"
check_grep "... 4 records, tahoe-9's among them" 'deploy +pass +tahoe-9' "$T/.out"
check "... and keeps it beside the first one" test -f "$DOC.migrated-2" -a ! -e "$DOC"
check_rc "ledger show --json" 0 "$LM" ledger show --json --state "$T/s"
cp "$T/.out" "$T/show.json"
check "... each record once" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
vms = sorted(r["vm"] for r in d[0]["records"])
assert vms == ["clone-1", "clone-2", "clone-3", "tahoe-9"], vms' "$T/show.json"
t_done

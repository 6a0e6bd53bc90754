# The ledger against a hostile guest and damaged documents: a guest's answer 998 levels deep
# or megabytes long is stored as a small summary and every document parses again; one
# unreadable document (a JSON document an older lume-metal left beside the database) costs only
# its own image version in ledger show/export, report --ledger and ledger merge; merge checks
# each record's shape; the gate names the VM whose record refuses.
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/deploy/common.sh"
t_san # the ASan build, LeakSanitizer on (tests/lib.sh)

F=$TOP/tests/fixtures/llama-bench/tinyllama-m1-ultra
W="TinyLlama 1.1B Q4_K_M (llama.cpp)"
# nest N OPEN CLOSE: OPEN N times, 1, CLOSE N times.
nest() { awk -v n="$1" -v o="$2" -v c="$3" 'BEGIN { for (i = 0; i < n; i++) printf "%s", o; printf "1"
	for (i = 0; i < n; i++) printf "%s", c }'; }
# doc OS BUILD VM MINUTE: a ledger document with a deploy and a bench record, as deploy and bench write them.
"$LM" report "stock=$F/tiny-stock-minimal.json" "shim=$F/tiny-safe-shim-10x-final.json" --json --workload "$W" \
	>"$T/table.json" || not_ok "report --json for the ledger"
doc() {
	printf '{"format":1,"key":{"image":"ghcr.io/x/img:1","imageDigest":null,"guestOS":"%s",' "$1"
	printf '"guestBuild":"%s","guestModel":"VirtualMac2,1","hostChip":"Apple M1 Ultra","hostBuild":"25G76"},' "$2"
	printf '"records":[{"kind":"deploy","vm":"%s","verdict":"pass","time":"2026-08-09T18:00:00Z"},' "$3"
	printf '{"kind":"bench","vm":"%s","workload":"%s","verdict":"effective","time":"2026-08-09T19:%s:00Z","bench":' \
		"$3" "$W" "$4"
	cat "$T/table.json"
	printf '}]}\n'
}

# --- One unreadable document costs only its own image version ---
mkdir -p "$T/src"
doc 26.5.2 25F84 tahoe-1 00 >"$T/src/a.json"
doc 26.6 25G5 tahoe-2 01 >"$T/src/b.json"
check_rc "two image versions merged into a state" 0 "$LM" ledger merge --state "$T/s" "$T/src/a.json" "$T/src/b.json"
# A: where an older lume-metal kept tahoe-1's image version, its name as ledger show --json has it.
A=$("$LM" ledger show --json --state "$T/s" | python3 -c '
import json, sys
print([d["path"] for d in json.load(sys.stdin) if d["records"][0]["vm"] == "tahoe-1"][0].replace("ledger.db#", "ledger/") + ".json")')
# What an old lume-metal wrote there from a 998-deep guest answer: 1001 levels, past cJSON's 1000.
{ printf '{"format":1,"key":{},"records":[{"kind":"deploy","stock":'; nest 998 '[' ']'; printf '}]}\n'; } >"$A"
cp "$A" "$T/A.before"
check_rc "ledger show with one unreadable document is exit 1" 1 "$LM" ledger show --state "$T/s"
check_grep "... still shows the other image version" 'bench +effective +tahoe-2' "$T/.out"
check_has "... and names the unreadable one" "$A: corrupt ledger file" "$T/.out"
check_rc "ledger show --json: exit 1" 1 "$LM" ledger show --json --state "$T/s"
check_grep "... with the other document" '"vm":[[:space:]]*"tahoe-2"' "$T/.out"
check_rc "ledger export: exit 1" 1 "$LM" ledger export --state "$T/s"
check_grep "... with the other's rows" '^ghcr.io/x/img:1,,26.6,25G5,.*,bench,tahoe-2,effective' "$T/.out"
check_has "... naming the unreadable one" "$A" "$T/.out"
check_rc "report --ledger: exit 1" 1 "$LM" report --ledger --state "$T/s"
check_grep "... with the other's bench rows" '26\.6 \(25G5\) .*tahoe-2 .*pp512' "$T/.out"
check_has "... naming the unreadable one" "$A" "$T/.out"
check_rc "report --ledger --json: exit 1" 1 "$LM" report --ledger --json --state "$T/s"
check_grep "... with the other's records" '"vm":[[:space:]]*"tahoe-2"' "$T/.out"
doc 26.5.2 25F84 tahoe-3 02 >"$T/src/a3.json"
doc 26.6 25G5 tahoe-4 03 >"$T/src/b4.json"
check_rc "ledger merge into a state with an unreadable document: exit 1" 1 "$LM" ledger merge --state "$T/s" \
	"$T/src/a3.json" "$T/src/b4.json"
check_has "... naming it" "$A" "$T/.out"
check "... merges the other image version" sh -c '"$1" ledger show --state "$2" | grep -q tahoe-4' - "$LM" "$T/s"
check "... and leaves the unreadable one as it was" cmp -s "$A" "$T/A.before"

# --- ledger merge checks each record's shape ---
sed 's/"kind":"deploy","vm":"tahoe-2",/"kind":"deploy",/' "$T/src/b.json" >"$T/src/novm.json"
sed 's/"verdict":"effective"/"verdict":true/' "$T/src/b.json" >"$T/src/verdict.json"
sed 's/"time":"2026-08-09T18:00:00Z"/"time":18/' "$T/src/b.json" >"$T/src/time.json"
sed 's/"kind":"deploy"/"kind":"status"/' "$T/src/b.json" >"$T/src/kind.json"
sed 's/"guestOS":"26.6"/"guestOS":26.6/' "$T/src/b.json" >"$T/src/key.json"
mkdir -p "$T/empty"
for c in 'novm:records\[0\]: no "vm"' 'verdict:records\[1\]: a bench record.s "verdict"' \
	'time:records\[0\]: no "time"' 'kind:records\[0\]: unknown "kind" "status"' 'key:key: "guestOS" is neither'; do
	f=${c%%:*} why=${c#*:}
	check_rc "merge refuses a source whose record breaks the shape ($f): exit 2" 2 "$LM" ledger merge \
		--state "$T/empty" "$T/src/a.json" "$T/src/$f.json"
	check_grep "... naming the file, the record and what is wrong" "$T/src/$f.json: not a ledger document: $why" "$T/.out"
done
check "... and writes nothing" test ! -e "$T/empty/ledger.db"

# --- A hostile guest: its install answer is 998 levels deep and ~200 KB long (the SSH layer
# refuses answers over SSH_EXEC_OUT_MAX, 256 KiB; t-hostile covers 16 MiB) ---
# Its tar hands `sh -s` a script that prints that answer (as a compromised guest could).
mkdir -p "$T/evil"
{
	printf '{"result":"failed","reason":"'
	awk 'BEGIN { for (i = 0; i < 2000; i++) printf "%s", "validation failed: the device lies about everything. " }'
	printf '","stock":{"probe":"lume-metal-probe","version":"0.1.0","x":'
	nest 998 '[' ']'
	printf '},"shimmed":{"probe":"lume-metal-probe","expect":{"pass":false,"differences":['
	awk 'BEGIN { for (i = 0; i < 400; i++) printf "%s\"families.Apple%d: expected true, got false %0200d\"", i ? "," : "", i, 0 }'
	printf ']}}}\n'
} >"$T/answer.json"
cat >"$T/evil/tar" <<EOF
#!/bin/sh
case \$1 in -xzOf) printf '%s\n' 'cat "$T/answer.json"; exit 1' ;; *) exec /bin/tar "\$@" ;; esac
EOF
chmod +x "$T/evil/tar"
guest evil 127.0.0.61 --path "$T/evil" || exit 1
guest good 127.0.0.62 || exit 1
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || not_ok "build"
check "the hostile answer is ~200 KB, under the SSH layer's cap" test "$(wc -c <"$T/answer.json")" -gt 180000
validated "the workload validates on that image version (llama-server requires it; on good)" good \
	--payload "$T/a.tar.gz" --image ghcr.io/x/shared:1 --accept-new
check_rc "deploy on the hostile guest: validation-failed, exit 1" 1 lm deploy evil --payload "$T/a.tar.gz" \
	--accept-new --image ghcr.io/x/shared:1 --json
check_grep "... validation-failed" '"state":"validation-failed"' "$T/.out"
ledger_docs "$T/state" "$T/docs"
D=$(grep -l '"vm":[[:space:]]*"evil"' "$T"/docs/*.json | head -n 1)
check "... its ledger document parses" python3 -m json.tool "${D:-/dev/null}"
check "... and is small (under 16 KiB) whatever the guest sent" test "$(wc -c <"$D")" -lt 16384
check "... the record names the VM and its address" sh -c 'tr -d "\n\t " <"$1" | grep -q "\"vm\":\"evil\",\"address\":\"127.0.0.61\""' - "$D"
check "... and keeps the probe's known fields, not the 998-deep one" sh -c \
	'grep -q "\"probe\":[[:space:]]*\"lume-metal-probe\"" "$1" && ! grep -q "\"x\"" "$1"' - "$D"
check_rc "ledger show reads it" 0 "$LM" ledger show --state "$T/state"
check_grep "... as a failure of evil" 'deploy +fail +evil' "$T/.out"
check_rc "a healthy VM of that image version is refused (exit 3)" 3 lm deploy good --payload "$T/a.tar.gz" \
	--accept-new --image ghcr.io/x/shared:1
check_grep "... by the record of the VM that failed, with its address and time" \
	'refused by the record of VM evil \(address 127\.0\.0\.61\) at 20[0-9-]+T[0-9:]+Z: validation failed' "$T/.out"
check_has "... and the command that validates it again" 'lume-metal deploy good --force' "$T/.out"
check_rc "deploy --force on the healthy VM validates it again and deploys" 0 lm deploy good --payload "$T/a.tar.gz" \
	--image ghcr.io/x/shared:1 --force
check_rc "the hostile guest again with --force: its failure is recorded, nothing broken" 1 lm deploy evil \
	--payload "$T/a.tar.gz" --image ghcr.io/x/shared:1 --force
ledger_docs "$T/state" "$T/docs"
check "... and the document still parses" python3 -m json.tool "${D:-/dev/null}"
t_done

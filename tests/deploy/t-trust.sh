#!/bin/sh
# shellcheck disable=SC1091 # sourced libs
# The gate against the parties it guards against (docs/verdicts.md, "Threat model"): a guest, someone
# with push access to the repository, a registry, a holder of a trusted key. A REAL registry
# (Debian's docker-registry, the fallback tag), a REAL sshd guest; the artifacts an
# attacker would push are made by hand (tests/deploy/verdict-forge.py), signed with openssl; the
# server a compromised guest names is a STUB that logs what reaches it (capture-stub.py). Each
# check below names the attack; on the code before the trust issue each of them failed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
. "$TOP/tests/pidfile.sh"
L=$TOP/tests/lume-sim/lume
FORGE="python3 $TOP/tests/deploy/verdict-forge.py"
HOME=$T/home LUME_SIM_REGISTRY_HTTP=1 GITHUB_USERNAME=lume GITHUB_TOKEN=s3cret-test FORGE_AUTH=lume:s3cret-test
export HOME LUME_SIM_REGISTRY_HTTP GITHUB_USERNAME GITHUB_TOKEN FORGE_AUTH
unset GHCR_USERNAME GHCR_TOKEN LUME_SIM_IP LUME_LOG_LEVEL
mkdir -p "$HOME"
R=127.0.0.165:$PORT EVIL=127.0.0.166:$PORT
t_defer "sh '$TOP/tests/registry.sh' stop '$T/reg'"
sh "$TOP/tests/registry.sh" start "$T/reg" 127.0.0.165 "$PORT" || exit 1
t_defer "pidfile_stop '$T/evil.pid'"
python3 "$TOP/tests/deploy/capture-stub.py" 127.0.0.166 "$PORT" "$T/evil.pid" "$T/evil.log" 2>"$T/evil.err" &
mkdir -p "$T/g/vb" && cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/vb/"
t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/vb'"
sh "$TOP/tests/sshd.sh" start "$T/g/vb" 127.0.0.167 "$PORT" || exit 1
i=0
while ! [ -s "$T/evil.pid" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
"$LM" build --target linux-sim -o "$T/a.tar.gz" --json >"$T/a.json" || exit 1
PA=$(cut -c1-64 "$T/a.tar.gz.sha256")
KA=$("$LM" key generate "$HOME/keyA" | sed -n 's/^key id //p') && [ -n "$KA" ] || exit 1 # under $HOME: trust files are checked up to it

# The image: pushed to the registry, pulled as vb (its .manifest-digest is D), running on the guest.
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" src0 stopped null null --folder "$HOME/.lume" --disk-kib 64
"$L" push src0 base:1 --registry "$R" --organization org >/dev/null 2>&1 &&
	"$L" pull base:1 vb --registry "$R" --organization org >/dev/null 2>&1 || exit 1
D=$(cat "$HOME/.lume/vb/.manifest-digest")
LUME_SIM_IP=127.0.0.167 "$L" run vb --no-display >/dev/null 2>&1
REF=$R/org/base:1
# stamp REF: the guest's image.json, what a golden build writes and a compromised guest rewrites.
stamp() {
	mkdir -p "$(root vb)"
	printf '{"image":"%s","verdict":"pass"}\n' "$1" >"$(root vb)/image.json"
}
stamp "$REF"

# ctl NAME CMD ARGS...: lume-metal as controller NAME, its own state and config file.
ctl() {
	ctl_n=$1 ctl_c=$2
	shift 2
	mkdir -p "$T/cfg-$ctl_n/lume-metal"
	[ -f "$T/cfg-$ctl_n/lume-metal/config" ] ||
		printf 'verdicts=registry\ntrusted-key=%s.pub\nregistry=%s\n' "$HOME/keyA" "$R" >"$T/cfg-$ctl_n/lume-metal/config"
	case $ctl_c in
	ledger) XDG_CONFIG_HOME=$T/cfg-$ctl_n "$LM" ledger --state "$T/state-$ctl_n" "$@" ;;
	*) XDG_CONFIG_HOME=$T/cfg-$ctl_n "$LM" "$ctl_c" --lume "$L" --port "$PORT" -u "$ME" -i "$T/id_ed25519" \
		--known-hosts "$T/known_hosts" --state "$T/state-$ctl_n" "$@" ;;
	esac
}
# dry NAME: a dry-run deploy of vb by controller NAME (the gate and the lookup, nothing installed).
dry() { ctl "$1" deploy vb --payload "$T/a.tar.gz" --accept-new --dry-run --json; }

# The ledger key of vb, as every controller computes it: from a status run.
ctl K status vb --accept-new --json >"$T/k.json" 2>&1 || { cat "$T/k.json"; exit 1; }
python3 -c 'import json,sys; print(json.dumps(json.loads(open(sys.argv[1]).readline())["key"]))' "$T/k.json" >"$T/key.json"
# statement OUT VERDICT TIME [+golden] [FIELD=JSON...]: a statement about D holding one validate
# record (and with +golden a golden record of the same verdict, as a golden build signs both).
statement() {
	python3 - "$@" "$T/key.json" "$D" "$REF" "$PA" <<'EOF'
import json, sys
out, verdict, time = sys.argv[1:4]
extra, (keyf, d, ref, pa) = sys.argv[4:-4], sys.argv[-4:]
golden = extra[:1] == ["+golden"]
extra = extra[1:] if golden else extra
rec = {"kind": "validate", "vm": "signer-vm", "verdict": verdict, "time": time, "payloadSha256": pa,
       "profile": "m1-ultra-tahoe-26.5", "workload": "llama-server", "target": "linux-sim", "reasons": []}
for e in extra:
    k, v = e.split("=", 1)
    if v == "DELETE":
        rec.pop(k)
    else:
        rec[k] = json.loads(v)
json.dump({"_type": "https://in-toto.io/Statement/v1",
           "subject": [{"name": ref.rsplit(":", 1)[0], "digest": {"sha256": d[7:]}}],
           "predicateType": "https://lume-metal.dev/verdict/v1",
           "predicate": {"key": json.load(open(keyf)), "records": [rec] + ([dict(rec, kind="golden")] if golden else []),
                         "image": ref, "lumeMetal": "0.1.0"}},
          open(out, "w"))
EOF
}
forge() { $FORGE push "$R" org/base "$D" "$@"; }

# --- A guest chooses where verdicts come from (and gets the credentials) ---
stamp "$EVIL/org/base:1"
ctl G status vb --json >"$T/g.json" 2>&1
check "a guest's image.json naming a registry the operator did not: nothing reaches it" test ! -s "$T/evil.log"
check_grep "... said in the result" '"state":"skipped","message":"the registry was not asked: the guest.s image.json names registry 127.0.0.166' "$T/g.json"
ctl G2 status vb --image "$EVIL/org/base:1" --json >"$T/g2.json" 2>&1
check "an operator's --image of another registry is asked" test -s "$T/evil.log"
check "... without the credentials, which are registry='s ($R) only" sh -c "! grep -q ' auth\$' '$T/evil.log'"
check_grep "... and the answer names that registry" "registry $EVIL requires credentials \\(401\\): none are set for it" "$T/g2.json"
stamp "$REF"

# --- Order decides nothing; signed time does ---
statement "$T/s-pass" pass 2026-01-01T00:00:00Z +golden
statement "$T/s-fail" fail 2026-02-01T00:00:00Z 'reasons=["mean KLD 0.9 is above 0.01"]'
P1=$(forge "$T/s-pass" "$HOME/keyA") || exit 1
check_rc "a trusted pass in the registry: B deploys on it (dry run, exit 0)" 0 dry B
check_grep "... imported" '"state":"imported"' "$T/.out"
F1=$(forge "$T/s-fail" "$HOME/keyA") || exit 1
$FORGE order "$R" org/base "$D" "$F1" "$P1"
check_rc "the newer fail, listed first by a re-ordered index: a fresh controller refuses (exit 3)" 3 dry O
check_has "... naming the failing record" "mean KLD 0.9 is above 0.01" "$T/.out"
check_rc "a controller that imported the pass earlier: the fail published later reaches it (exit 3)" 3 dry B
check_grep "... the registry asked again, the fail imported" '"state":"imported"' "$T/.out"
check_rc "... and the next run asks again, finding nothing new: still refused" 3 dry B
check_grep "... nothing read twice" '"state":"current"' "$T/.out"

# --- An older registry pass does not beat a newer local fail ---
mkdir -p "$T/state-N/ledger"
python3 - "$T/key.json" "$PA" >"$T/local-fail.json" <<'EOF'
import json, sys
print(json.dumps({"format": 1, "key": json.load(open(sys.argv[1])), "records": [
    {"kind": "validate", "vm": "vb", "verdict": "fail", "time": "2026-01-15T00:00:00Z", "payloadSha256": sys.argv[2],
     "profile": "m1-ultra-tahoe-26.5", "workload": "llama-server", "reasons": ["local: KLD too high"]}]}))
EOF
$FORGE order "$R" org/base "$D" "$P1"
ctl N ledger merge "$T/local-fail.json" >/dev/null 2>&1
check_rc "a local fail newer than the registry's only pass: refused (exit 3)" 3 dry N
check_has "... by the local record" "local: KLD too high" "$T/.out"

# --- Junk artifacts cannot push a verdict out of the window ---
$FORGE order "$R" org/base "$D" "$P1" "$F1"
statement "$T/s-junk" pass 2026-03-01T00:00:00Z
J1=$(forge "$T/s-junk" - org.opencontainers.image.created=2026-09-01T00:00:00Z) &&
	$FORGE copies "$R" org/base "$D" "$J1" 39 || exit 1
check_rc "40 junk artifacts listed after the fail (the old window was the last 32 listed): refused (exit 3)" 3 dry W
check_has "... on the fail, imported" "mean KLD 0.9 is above 0.01" "$T/.out"
check_grep "... the junk counted for nothing" '"state":"imported","signer"' "$T/.out"
$FORGE order "$R" org/base "$D" "$P1"

# --- A verdict covers one payload; a record without one gates nothing ---
statement "$T/s-nopay" pass 2026-04-01T00:00:00Z payloadSha256=DELETE
X1=$(forge "$T/s-nopay" "$HOME/keyA") || exit 1
$FORGE order "$R" org/base "$D" "$X1"
check_rc "a trusted pass with no payloadSha256: gates nothing, refused (exit 3)" 3 dry Y
check_has "... none of its records counts for this payload" "but none for this payload" "$T/.out"
statement "$T/s-other" pass 2026-04-01T00:00:01Z 'payloadSha256="0000000000000000000000000000000000000000000000000000000000000000"'
X2=$(forge "$T/s-other" "$HOME/keyA") || exit 1
$FORGE order "$R" org/base "$D" "$X2"
check_rc "a trusted pass of another payload: refused (exit 3)" 3 dry Z
check_has "... saying so" "but none for this payload" "$T/.out"

# --- Records are honest about their origin; one statement is imported once ---
$FORGE order "$R" org/base "$D" "$P1"
$FORGE rewrap "$R" org/base "$D" "$P1" x.rewrapped=1 >/dev/null && $FORGE rewrap "$R" org/base "$D" "$P1" x.rewrapped=2 >/dev/null
check_rc "one signed statement wrapped in three artifacts: ledger pull" 0 ctl U ledger pull "$REF"
check_has "... records its two records once" "recorded 2 record(s)" "$T/.out"
statement "$T/s-liar" pass 2026-05-01T00:00:00Z 'source="registry"' 'signer="sha256:0000"' 'artifact="sha256:1111"'
L1=$(forge "$T/s-liar" "$HOME/keyA") || exit 1
statement "$T/s-imp" pass 2026-05-01T00:00:01Z 'imported={"from":"registry","signer":"sha256:0000"}'
I1=$(forge "$T/s-imp" "$HOME/keyA") || exit 1
$FORGE order "$R" org/base "$D" "$L1" "$I1"
ctl V ledger pull "$REF" --json >"$T/v.json" 2>&1
check_grep "a signed record claiming the importer's field: refused" "carries \\\\\"imported\\\\\", which only an import sets" "$T/v.json"
"$LM" ledger show --json --state "$T/state-V" >"$T/show-V.json" 2>&1
check "a signed record claiming source, signer and artifact: imported, with the importer's own" python3 -c '
import json, sys
recs = [r for d in json.load(open(sys.argv[1])) for r in d["records"]]
assert len(recs) == 1, recs
r = recs[0]
assert "signer" not in r and "artifact" not in r and "source" not in r, r
assert r["imported"]["signer"] == sys.argv[2] and r["imported"]["artifact"] == sys.argv[3], r' \
	"$T/show-V.json" "$KA" "$L1"
t_done

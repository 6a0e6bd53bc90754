#!/bin/sh
# shellcheck disable=SC1091 # sourced libs
# Verdicts that tools not ours find and verify (docs/verdicts.md, "Tools that read verdicts"):
# lume-metal pushes an image version's records to a REAL registry (Debian's docker-registry,
# distribution 2.8: no referrers API, so the fallback tag) as Sigstore bundles, signed with an
# Ed25519 key and with an ECDSA P-256 key made by openssl (cosign's kind). skopeo lists and reads
# them; sigstore-js (@sigstore/verify, tests/deploy/sigstore-verify.js) verifies each bundle the
# way cosign's verify-attestation does with a public key, finding the key by the bundle's hint
# (computed here by openssl) and checking the keyid against ssh-keygen's fingerprint. A verdict
# of the old form (a plain envelope whose keyid is "sha256:<hex>") still verifies. Against a STUB
# registry (oci-stub.py), the referrers API's pages: followed by their Link, bounded.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/pidfile.sh"
L=$TOP/tests/lume-sim/lume
LUME_SIM_DIR=$T/lume HOME=$T/home LUME_SIM_REGISTRY_HTTP=1
export LUME_SIM_DIR HOME LUME_SIM_REGISTRY_HTTP
unset GHCR_USERNAME GHCR_TOKEN GITHUB_USERNAME GITHUB_TOKEN LUME_SIM_IP LUME_LOG_LEVEL FORGE_AUTH
mkdir -p "$LUME_SIM_DIR" "$HOME"
PORT=$((30000 + $$ % 20000))
R=127.0.0.171:$PORT S=127.0.0.172:$PORT
MODS=$TOP/.tools/sigstore/node_modules
PRED=https://lume-metal.dev/verdict/v1 BUNDLE=application/vnd.dev.sigstore.bundle.v0.3+json
t_defer "sh '$TOP/tests/registry.sh' stop '$T/reg'"
sh "$TOP/tests/registry.sh" start "$T/reg" 127.0.0.171 "$PORT" || exit 1
t_defer "pidfile_stop '$T/stub.pid'"
python3 "$TOP/tests/deploy/oci-stub.py" 127.0.0.172 "$PORT" "$T/stub.pid" "$T/stub.log" 127.0.0.173 2>"$T/stub.err" &
i=0
while ! curl -s -o /dev/null "http://$S/v2/" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
if [ ! -f "$MODS/@sigstore/verify/package.json" ]; then
	not_ok "sigstore-js is not installed in $MODS (sh scripts/deps.sh test installs it)"
	t_done
fi

# verify BUNDLE KEY.der HINT KEYID: sigstore-js's verdict of BUNDLE (tests/deploy/sigstore-verify.js).
verify() { node "$TOP/tests/deploy/sigstore-verify.js" "$MODS" "$@" "$D" "$PRED"; }

# pae BUNDLE N: the DSSE PAE of BUNDLE's envelope into $T/paeN, its signature into $T/sigN.
pae() {
	python3 -c 'import base64, json, sys
e = json.load(open(sys.argv[1]))["dsseEnvelope"]
b, t = base64.b64decode(e["payload"]), e["payloadType"].encode()
open(sys.argv[2], "wb").write(b"DSSEv1 %d %s %d %s" % (len(t), t, len(b), b))
open(sys.argv[3], "wb").write(base64.b64decode(e["signatures"][0]["sig"]))' "$1" "$T/pae$2" "$T/sig$2"
}

# Keys: A (Ed25519, key generate), E (ECDSA P-256, openssl's, as cosign's are), C (another).
"$LM" key generate "$HOME/keyA" >"$T/keyA.out" || exit 1
KA=$(sed -n 's/^key id //p' "$T/keyA.out") FA=$(sed -n 's/^fingerprint //p' "$T/keyA.out")
"$LM" key generate "$HOME/keyC" >/dev/null || exit 1
(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$HOME/keyE" 2>/dev/null) &&
	openssl pkey -in "$HOME/keyE" -pubout -out "$HOME/keyE.pub" || exit 1
# ids K: what tools not ours say of K.pub: ssh-keygen -l's fingerprint (of the SSH form of the key:
# ssh-keygen converts a P-256 one; an Ed25519 one, which OpenSSH 9.2 does not convert, is written
# from its 32 raw bytes), and the bundle hint, base64 of the SHA-256 of its DER (openssl).
ids() {
	openssl pkey -pubin -in "$HOME/$1.pub" -outform DER >"$T/$1.der"
	if ! ssh-keygen -i -m PKCS8 -f "$HOME/$1.pub" >"$T/$1.ssh" 2>/dev/null; then
		python3 -c 'import base64, sys
raw = open(sys.argv[1], "rb").read()[-32:]
s = lambda b: len(b).to_bytes(4, "big") + b
print("ssh-ed25519", base64.b64encode(s(b"ssh-ed25519") + s(raw)).decode())' "$T/$1.der" >"$T/$1.ssh"
	fi
	ssh-keygen -l -f "$T/$1.ssh" | cut -d' ' -f2 >"$T/$1.fpr"
	openssl dgst -sha256 -binary "$T/$1.der" | base64 >"$T/$1.hint"
}
ids keyA && ids keyE && ids keyC
check "key generate prints the key's fingerprint, as ssh-keygen -l prints it" test "$FA" = "$(cat "$T/keyA.fpr")"

# The image, and a ledger holding a validate and a golden record of it (as a golden build files them).
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" src0 stopped null null --folder "$HOME/.lume" --disk-kib 64
GITHUB_USERNAME=lume GITHUB_TOKEN=unused "$L" push src0 img:1 --registry "$R" --organization org >/dev/null 2>&1 || exit 1
D=$(curl -sI -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$R/v2/org/img/manifests/1" |
	tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p')
H=${D#sha256:}
cat >"$T/doc.json" <<EOF
{"key": {"image": null, "imageDigest": "$D", "guestOS": "26.5", "guestBuild": "25F84",
  "guestModel": "VirtualMac2,1", "hostChip": "Apple M1 Ultra", "hostBuild": "25F84"},
 "records": [
  {"kind": "validate", "vm": "bv", "verdict": "pass", "time": "2026-05-01T10:00:00Z", "payloadSha256": "$H",
   "profile": "m1-ultra-tahoe-26.5", "workload": "llama-server", "reasons": []},
  {"kind": "golden", "vm": "bv", "verdict": "pass", "time": "2026-05-01T10:01:00Z", "payloadSha256": "$H",
   "profile": "m1-ultra-tahoe-26.5", "workload": "llama-server", "reasons": []}]}
EOF
"$LM" ledger merge --state "$T/state" "$T/doc.json" >/dev/null || exit 1
# ctl KEY ARGS...: lume-metal ledger with signing-key KEY and trusted-key A's, E's and C's.
ctl() {
	ctl_k=$1
	shift
	mkdir -p "$T/cfg-$ctl_k/lume-metal"
	printf 'signing-key=%s\ntrusted-key=%s\n' "$HOME/$ctl_k" "$HOME/keyA.pub,$HOME/keyE.pub" >"$T/cfg-$ctl_k/lume-metal/config"
	XDG_CONFIG_HOME=$T/cfg-$ctl_k "$LM" ledger "$@"
}

check_rc "ledger push with the Ed25519 key: exit 0" 0 ctl keyA push "$R/org/img@$D" --state "$T/state" --json
cp "$T/.out" "$T/pushA.json"
check_has "... the envelope's keyid is the key's fingerprint" "\"keyid\":\"$FA\"" "$T/pushA.json"
ART=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["artifacts"][0]["digest"])' "$T/pushA.json")

# skopeo lists the fallback tag's index and reads the artifact (OCI image-spec 1.1).
skopeo inspect --raw --tls-verify=false "docker://$R/org/img:sha256-$H" >"$T/index.json" 2>"$T/skopeo.err"
check "skopeo inspect --raw reads the fallback tag sha256-<hex>, an image index listing the verdict" python3 -c '
import json, sys
i = json.load(open(sys.argv[1]))
assert i["mediaType"] == "application/vnd.oci.image.index.v1+json", i
d = [m for m in i["manifests"] if m["digest"] == sys.argv[2]]
assert d and d[0]["artifactType"] == sys.argv[3], i
a = d[0]["annotations"]
assert a["dev.sigstore.bundle.content"] == "dsse-envelope" and a["dev.sigstore.bundle.predicateType"] == sys.argv[4], a
assert a["org.opencontainers.image.created"] == "2026-05-01T10:01:00Z", a' "$T/index.json" "$ART" "$BUNDLE" "$PRED"
skopeo inspect --raw --tls-verify=false "docker://$R/org/img@$ART" >"$T/art.json" 2>>"$T/skopeo.err"
check "skopeo reads the artifact: a bundle v0.3 referrer of the image, with cosign's bundle annotations" python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
assert m["artifactType"] == sys.argv[3] and m["subject"]["digest"] == sys.argv[2], m
assert m["config"]["mediaType"] == "application/vnd.oci.empty.v1+json" and m["config"]["size"] == 2, m
assert len(m["layers"]) == 1 and m["layers"][0]["mediaType"] == sys.argv[3], m
assert m["layers"][0]["annotations"]["org.opencontainers.image.title"] == "sha256-%s.sigstore.json" % sys.argv[2][7:], m
a = m["annotations"]
assert a["dev.sigstore.bundle.content"] == "dsse-envelope" and a["dev.sigstore.bundle.predicateType"] == sys.argv[4], a
assert a["dev.lume-metal.signer"].startswith("sha256:"), a' "$T/art.json" "$D" "$BUNDLE" "$PRED"
cat "$T/skopeo.err" >&2
# The bundle, through skopeo too: the artifact copied as an OCI layout, its one layer read there.
LAYER=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0]["digest"])' "$T/art.json")
if skopeo copy -q --src-tls-verify=false "docker://$R/org/img@$ART" "oci:$T/oci:verdict" 2>"$T/copy.err"; then
	cp "$T/oci/blobs/sha256/${LAYER#sha256:}" "$T/bundleA.json"
	ok "skopeo copies the artifact (an OCI layout), its layer the bundle"
else
	curl -s "http://$R/v2/org/img/blobs/$LAYER" >"$T/bundleA.json"
	ok "# SKIP skopeo copy: $(head -c 200 "$T/copy.err") (curl read the layer)"
fi
check "... the bundle's bytes are its layer's digest" test "sha256:$(sha256sum "$T/bundleA.json" | cut -c1-64)" = "$LAYER"

check "sigstore-js verifies the bundle with A's public key, found by its hint (openssl's), keyid ssh-keygen's" \
	verify "$T/bundleA.json" "$T/keyA.der" "$(cat "$T/keyA.hint")" "$(cat "$T/keyA.fpr")"
cp "$T/.out" "$T/verifyA.out"
check_rc "... and refuses it with C's key under that hint" 1 \
	verify "$T/bundleA.json" "$T/keyC.der" "$(cat "$T/keyA.hint")" "$(cat "$T/keyA.fpr")"
check_has "... saying the signature does not verify" "FAIL the signature" "$T/.out"
check_rc "... and finds no key when the hint is another key's" 1 \
	verify "$T/bundleA.json" "$T/keyA.der" "$(cat "$T/keyC.hint")" "$(cat "$T/keyA.fpr")"
check_has "... (key not found)" "key not found" "$T/.out"
python3 -c 'import json,sys
b = json.load(open(sys.argv[1]))
b["dsseEnvelope"]["signatures"][0]["keyid"] = sys.argv[2]
json.dump(b, open(sys.argv[3], "w"))' "$T/bundleA.json" "$KA" "$T/oldkeyid.json"
check_rc "... and a keyid of the old form (sha256:<hex>) fails the keyid check go-securesystemslib makes" 1 \
	verify "$T/oldkeyid.json" "$T/keyA.der" "$(cat "$T/keyA.hint")" "$(cat "$T/keyA.fpr")"
pae "$T/bundleA.json" A
check "openssl verifies the envelope inside the bundle over DSSE's PAE (Ed25519)" \
	openssl pkeyutl -verify -pubin -inkey "$HOME/keyA.pub" -rawin -in "$T/paeA" -sigfile "$T/sigA"
# ECDSA P-256: a key teams have (cosign's kind), signing the same records.
check_rc "ledger push with an ECDSA P-256 key made by openssl: exit 0" 0 ctl keyE push "$R/org/img@$D" --state "$T/state" --json
check_has "... the keyid its fingerprint" "\"keyid\":\"$(cat "$T/keyE.fpr")\"" "$T/.out"
ARTE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["artifacts"][0]["digest"])' "$T/.out")
LE=$(curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$R/v2/org/img/manifests/$ARTE" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"])')
curl -s "http://$R/v2/org/img/blobs/$LE" >"$T/bundleE.json"
check "sigstore-js verifies it with E's public key (ECDSA-P256-SHA256, the signature DER)" \
	verify "$T/bundleE.json" "$T/keyE.der" "$(cat "$T/keyE.hint")" "$(cat "$T/keyE.fpr")"
pae "$T/bundleE.json" E
check "openssl verifies its DER signature over the PAE with SHA-256" \
	openssl dgst -sha256 -verify "$HOME/keyE.pub" -signature "$T/sigE" "$T/paeE"
# An artifact of the old form: a plain DSSE envelope, its keyid lume-metal's old sha256:<hex>.
python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(json.dumps({"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": sys.argv[2], "digest": {"sha256": sys.argv[3]}}],
  "predicateType": sys.argv[4], "predicate": {"key": d["key"], "records": d["records"][:1], "lumeMetal": "0.0.9"}}))' \
	"$T/doc.json" "$R/org/img" "$H" "$PRED" >"$T/old-statement.json"
OLD=$(FORGE_KEYID=$KA python3 "$TOP/tests/deploy/verdict-forge.py" push "$R" org/img "$D" "$T/old-statement.json" "$HOME/keyA") || exit 1
mkdir -p "$T/cfg-P/lume-metal" && printf 'trusted-key=%s\n' "$HOME/keyA.pub" >"$T/cfg-P/lume-metal/config"
check_rc "ledger pull (trusting A) reads both forms: exit 0" 0 \
	env XDG_CONFIG_HOME="$T/cfg-P" "$LM" ledger pull "$R/org/img@$D" --state "$T/state-P" --json
cp "$T/.out" "$T/pull.json"
check "... the old envelope (keyid sha256:<hex>) trusted, A's bundle trusted, E's untrusted here (named by its keyid)" python3 -c '
import json, sys
a = {x["artifact"]: x for x in json.load(open(sys.argv[1]))["artifacts"]}
old, art, arte = a[sys.argv[2]], a[sys.argv[3]], a[sys.argv[4]]
assert old["status"] == "trusted" and old["form"] == "envelope" and old["signer"] == sys.argv[5], old
assert art["status"] == "trusted" and art["form"] == "bundle" and art["signer"] == sys.argv[5], art
assert arte["status"] == "untrusted" and arte["form"] == "bundle" and arte["signer"] == sys.argv[6], arte' \
	"$T/pull.json" "$OLD" "$ART" "$ARTE" "$KA" "$(cat "$T/keyE.fpr")"
check_rc "ledger pull trusting E's key too (a PEM public key, as cosign.pub is): exit 0" 0 \
	ctl keyA pull "$R/org/img@$D" --state "$T/state-E" --json
cp "$T/.out" "$T/pullE.json"
check "... E's bundle trusted, its signer E's id (the SHA-256 of its uncompressed point)" python3 -c '
import hashlib, json, sys
a = [x for x in json.load(open(sys.argv[1]))["artifacts"] if x["artifact"] == sys.argv[2]][0]
assert a["status"] == "trusted" and a["signer"] == "sha256:" + hashlib.sha256(open(sys.argv[3], "rb").read()[-65:]).hexdigest(), a' \
	"$T/pullE.json" "$ARTE" "$T/keyE.der"

# The referrers API, paginated: the stub lists two artifacts of another type before the verdict,
# one a page; the pull follows the Link of each (an absolute URL of the registry, then paths).
curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$R/v2/org/img/manifests/1" >"$T/image.json"
for repo in paged endless linkloop linkaway; do
	curl -s -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' --data-binary "@$T/image.json" \
		"http://$S/v2/org/$repo/manifests/1" >/dev/null
done
check_rc "stub: ledger push to a registry with the referrers API: exit 0" 0 ctl keyA push "$S/org/paged:1" --state "$T/state" --json
check_grep "... indexed by the registry" '"referrersApi":true' "$T/.out"
check_rc "stub: ledger pull follows the referrers' pages to the verdict on the third" 0 ctl keyA pull "$S/org/paged:1" --state "$T/state-G" --json
check_grep "... trusted" '"status":"trusted"' "$T/.out"
check "... three pages asked, the second by the first's absolute Link, the third by a path" test \
	"$(grep -c '^GET /v2/org/paged/referrers/' "$T/stub.log")" -eq 3
check_rc "stub: endless pages: the pull stops after 16 and says so (exit 1: no verdict in them)" 1 \
	ctl keyA pull "$S/org/endless:1" --state "$T/state-G" --json
check_grep "... truncated" '"truncated":true' "$T/.out"
check "... 16 pages asked" test "$(grep -c '^GET /v2/org/endless/referrers/' "$T/stub.log")" -eq 16
check_rc "stub: a Link to a page it answered already: refused (exit 1)" 1 ctl keyA pull "$S/org/linkloop:1" --state "$T/state-G"
check_has "... naming it" "is one it answered already" "$T/.out"
check_rc "stub: a Link to another host: not followed (exit 1)" 1 ctl keyA pull "$S/org/linkaway:1" --state "$T/state-G"
check_has "... naming it" "answered a Link to the next page elsewhere (http://127.0.0.173:$PORT/" "$T/.out"
check "... nothing asked of that host" sh -c "! grep -q '@127.0.0.173' '$T/stub.log'"
if [ -n "${COSIGN_KEEP:-}" ]; then cp "$T/pushA.json" "$T/index.json" "$T/art.json" "$T/bundleA.json" "$T/verifyA.out" \
	"$T/pull.json" "$COSIGN_KEEP/"; fi
t_done

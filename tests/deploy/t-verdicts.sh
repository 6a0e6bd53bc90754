#!/bin/sh
# shellcheck disable=SC1091 # sourced libs
# Verdicts travel with the image (plugin/ops/verdicts.h): controller A builds a golden image
# (the simulated Lume, a REAL sshd guest) and pushes it to a REAL registry (Debian's
# docker-registry, distribution 2.8, basic auth: no referrers API, so the fallback tag), with its
# verdict signed and attached; skopeo, curl and openssl (tools not ours) read and verify it.
# Controller B (another --state and config file) deploys a VM pulled from the tag on A's verdict,
# without validating; C, trusting another key, is refused naming A's key.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
L=$TOP/tests/lume-sim/lume
HOME=$T/home LUME_SIM_REGISTRY_HTTP=1 GITHUB_USERNAME=lume GITHUB_TOKEN=s3cret-test
export HOME LUME_SIM_REGISTRY_HTTP GITHUB_USERNAME GITHUB_TOKEN
unset GHCR_USERNAME GHCR_TOKEN LUME_SIM_IP LUME_LOG_LEVEL
mkdir -p "$HOME"
R=127.0.0.155:$PORT DOWN=127.0.0.154:$PORT
t_defer "sh '$TOP/tests/registry.sh' stop '$T/reg'"
sh "$TOP/tests/registry.sh" start "$T/reg" 127.0.0.155 "$PORT" --htpasswd lume:s3cret-test --accesslog || exit 1
# sshd_at NAME ADDR: a real guest a VM's LUME_SIM_IP points at.
sshd_at() {
	mkdir -p "$T/g/$1"
	cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/$1/"
	t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/$1'"
	sh "$TOP/tests/sshd.sh" start "$T/g/$1" "$2" "$PORT"
}
sshd_at build 127.0.0.156 && sshd_at b1 127.0.0.157 && sshd_at c1 127.0.0.158 || exit 1
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1
# ctl NAME CMD ARGS...: lume-metal as controller NAME: its own state and config file.
ctl() {
	ctl_n=$1 ctl_c=$2
	shift 2
	case $ctl_c in
	ledger) XDG_CONFIG_HOME=$T/cfg-$ctl_n "$LM" ledger --state "$T/state-$ctl_n" "$@" ;;
	*) XDG_CONFIG_HOME=$T/cfg-$ctl_n "$LM" "$ctl_c" --lume "$L" --port "$PORT" -u "$ME" -i "$T/id_ed25519" \
		--known-hosts "$T/known_hosts" --state "$T/state-$ctl_n" "$@" ;;
	esac
}
mkdir -p "$T/cfg-A/lume-metal" "$T/cfg-B/lume-metal" "$T/cfg-C/lume-metal" "$T/state-A" "$T/state-B" "$T/state-C"

# Keys: A signs; C has a key of its own.
check_rc "key generate writes a key pair" 0 "$LM" key generate "$HOME/keyA"
check_grep "... naming its id" '^key id sha256:[0-9a-f]{64}$' "$T/.out"
KA=$(sed -n 's/^key id //p' "$T/.out")
# FA: its fingerprint, the keyid its signatures carry, how an untrusted one is named (FAE: as an ERE)
FA=$(sed -n 's/^fingerprint //p' "$T/.out")
FAE=$(printf '%s' "$FA" | sed 's/+/\\+/g')
check "... the private key 0600, the public one 0644" test "$(stat -c %a "$HOME/keyA")" = 600 -a "$(stat -c %a "$HOME/keyA.pub")" = 644
check "... both read by openssl as Ed25519" sh -c "openssl pkey -in '$HOME/keyA' -noout -text | grep -q ED25519 &&
	openssl pkey -pubin -in '$HOME/keyA.pub' -noout -text | grep -q ED25519"
check_rc "... a second generate to the same PATH: exit 2" 2 "$LM" key generate "$HOME/keyA"
check_has "... never overwriting it" "never overwritten" "$T/.out"
"$LM" key generate "$HOME/keyC" >/dev/null || exit 1
# A pushes to the test registry, the one the environment's GITHUB_* credentials are for
# (registry=). B asks it for what its guests' image.json names (verdict-registries), with
# credentials for that host only, as Docker keeps them (registry-auth); C names it registry=.
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$R" "$(printf 'lume:s3cret-test' | base64)" >"$T/auth-B.json"
chmod 600 "$T/auth-B.json"
printf 'signing-key=%s\ntrusted-key=%s.pub\nregistry=%s\n' "$HOME/keyA" "$HOME/keyA" "$R" >"$T/cfg-A/lume-metal/config"
printf 'verdicts=registry\ntrusted-key=%s.pub\nverdict-registries=%s\nregistry-auth=%s\n' "$HOME/keyA" "$R" "$T/auth-B.json" \
	>"$T/cfg-B/lume-metal/config"
printf 'verdicts=registry\ntrusted-key=%s.pub\nregistry=%s\n' "$HOME/keyC" "$R" >"$T/cfg-C/lume-metal/config"
check_rc "config shows verdicts, signing-key and trusted-key with their source" 0 \
	env XDG_CONFIG_HOME="$T/cfg-B" "$LM" config
check_grep "... verdicts registry from the file" "^verdicts +registry +config:$T/cfg-B/lume-metal/config:1" "$T/.out"
check_grep "... trusted-key" "^trusted-key +$HOME/keyA.pub +config:" "$T/.out"

# Controller A: a golden build of llama-server (requires validation), its verdict attached.
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" src0 stopped null null --folder "$HOME/.lume" --disk-kib 64
"$L" push src0 base:1 --registry "$R" --organization org >/dev/null 2>&1 &&
	"$L" pull base:1 src --registry "$R" --organization org >/dev/null 2>&1 || exit 1
head -c 20000 /dev/urandom >"$T/g/build/model.gguf"
LUME_SIM_IP=127.0.0.156 ctl A golden --payload "$T/a.tar.gz" --accept-new --wait 10 src shim:1 --registry "$R" \
	--organization org --build-vm bv --model "$T/g/build/model.gguf" --json >"$T/gA" 2>"$T/gA.err"
check "A: the golden build exits 0" test $? -eq 0
check_grep "... published" '"state":"published"' "$T/gA"
check_grep "... its attach step done" '"step":"attach","command":"ledger push [^"]*","state":"done"' "$T/gA"
check_grep "... signed by A's key" "\"signer\":\"$KA\"" "$T/gA"
check_grep "... through the fallback tag (distribution 2.8 has no referrers API)" '"referrersApi":false' "$T/gA"
D=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$T/gA")
H=${D#sha256:}
ART=$(sed -n 's/.*"artifacts":\[{"digest":"\(sha256:[0-9a-f]*\)".*/\1/p' "$T/gA")
check "... an artifact digest" sh -c "printf '%s' '$ART' | grep -Eqx 'sha256:[0-9a-f]{64}'"

# What tools not ours read: the fallback tag's index (curl), the artifact's manifest (skopeo),
# the envelope (curl), its signature over DSSE's PAE (openssl).
curl -s -u lume:s3cret-test -H 'Accept: application/vnd.oci.image.index.v1+json' \
	"http://$R/v2/org/shim/manifests/sha256-$H" >"$T/index.json"
check_grep "curl: the fallback tag sha256-<hex> is an image index" '"mediaType":"application/vnd.oci.image.index.v1\+json"' "$T/index.json"
check_grep "... listing the artifact with its artifactType, a Sigstore bundle" "\"digest\":\"$ART\".*\"artifactType\":\"application/vnd.dev.sigstore.bundle.v0.3\+json\"" "$T/index.json"
if command -v skopeo >/dev/null 2>&1; then
	skopeo inspect --raw --tls-verify=false --creds lume:s3cret-test "docker://$R/org/shim@$ART" >"$T/art.json" 2>"$T/skopeo.err"
	check "skopeo inspect --raw reads the artifact's manifest" test -s "$T/art.json"
	cat "$T/skopeo.err" >&2
else
	curl -s -u lume:s3cret-test -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		"http://$R/v2/org/shim/manifests/$ART" >"$T/art.json"
	ok "# SKIP skopeo is not installed (scripts/deps.sh test installs it): curl read the manifest"
fi
check_grep "... its artifactType" '"artifactType":"application/vnd.dev.sigstore.bundle.v0.3\+json"' "$T/art.json"
check_grep "... its subject the image's manifest" "\"subject\":\\{\"mediaType\":\"application/vnd.oci.image.manifest.v1\+json\",\"digest\":\"$D\"" "$T/art.json"
check_grep "... one layer, the bundle" '"layers":\[\{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3\+json"' "$T/art.json"
cp "$T/art.json" "$T/artifact-manifest.json" # for the closing note: VERDICTS_KEEP=DIR keeps it
BLOB=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0]["digest"])' "$T/art.json")
curl -s -u lume:s3cret-test "http://$R/v2/org/shim/blobs/$BLOB" >"$T/env.json"
check "curl: the bundle's bytes are its digest" test "sha256:$(sha256sum "$T/env.json" | cut -c1-64)" = "$BLOB"
python3 - "$T/env.json" "$T" <<'EOF' || not_ok "the bundle's envelope decodes"
import base64, json, sys
e = json.load(open(sys.argv[1]))["dsseEnvelope"]
body = base64.b64decode(e["payload"])
t = e["payloadType"].encode()
open(sys.argv[2] + "/pae", "wb").write(b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body))
open(sys.argv[2] + "/sig", "wb").write(base64.b64decode(e["signatures"][0]["sig"]))
open(sys.argv[2] + "/statement.json", "wb").write(body)
EOF
check "openssl verifies the Ed25519 signature over DSSE's PAE with A's public key" \
	openssl pkeyutl -verify -pubin -inkey "$HOME/keyA.pub" -rawin -in "$T/pae" -sigfile "$T/sig"
check "... and not with C's" sh -c "! openssl pkeyutl -verify -pubin -inkey '$HOME/keyC.pub' -rawin -in '$T/pae' -sigfile '$T/sig'"
check "the statement: in-toto v1, subject the image, the KLD figures and the payload in its records" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["_type"] == "https://in-toto.io/Statement/v1" and s["subject"][0]["digest"]["sha256"] == sys.argv[2], s["subject"]
p = s["predicate"]
assert s["predicateType"] == "https://lume-metal.dev/verdict/v1" and p["key"]["imageDigest"] == "sha256:" + sys.argv[2]
kinds = sorted(r["kind"] for r in p["records"])
assert kinds == ["golden", "validate"], kinds
v = [r for r in p["records"] if r["kind"] == "validate"][0]
assert v["validation"]["meanKld"] < 0.01 and v["payloadSha256"], v
g = [r for r in p["records"] if r["kind"] == "golden"][0]
assert g["shimmed"]["maxThreadgroupMemoryLength"] == 65536, g' "$T/statement.json" "$H"

# Controller B never saw the build: a VM pulled from shim:1 (its disk carries the stamp).
"$L" pull shim:1 vb --registry "$R" --organization org >/dev/null 2>&1
check "the VM pulled from shim:1 has the published digest" test "$(cat "$HOME/.lume/vb/.manifest-digest")" = "$D"
stamp="$T/g/build/home/Library/Application Support/lume-metal/image.json"
mkdir -p "$(root b1)" "$(root c1)" && cp "$stamp" "$(root b1)/" && cp "$stamp" "$(root c1)/"
LUME_SIM_IP=127.0.0.157 "$L" run vb --no-display >/dev/null 2>&1
grep -c '"GET /v2/' "$T/reg/registry.log" >"$T/n0"
ctl B deploy vb --payload "$T/a.tar.gz" --accept-new --json >"$T/dB" 2>&1
rc=$?
check "B: deploy of vb with an empty ledger exits 0" test "$rc" -eq 0
check_grep "... deployed" '"state":"deployed"' "$T/dB"
check_grep "... on the registry's verdict, imported" '"verdicts":\{"source":"registry","repository":"[^"]*org/shim","requests":[0-9]+,"ms":[0-9]+,"state":"imported"' "$T/dB"
check_grep "... naming its signer" "\"signer\":\"$KA\"" "$T/dB"
if grep -q '"meanKld"' "$T/dB" || grep -q 'llama-perplexity' "$T/dB"; then not_ok "... without a validate run on B"; else ok "... without a validate run on B"; fi
ledger_docs "$T/state-B" "$T/docs-B"
check "... and B's ledger records name the registry, the signer, the artifact and the statement" python3 -c '
import glob, json, sys
recs = [r for f in glob.glob(sys.argv[1] + "/*.json") for r in json.load(open(f))["records"]]
imp = [r for r in recs if "imported" in r]
assert sorted(r["kind"] for r in imp) == ["golden", "validate"], recs
assert all(r["imported"]["from"] == "registry" and r["imported"]["signer"] == sys.argv[2] and
           r["imported"]["artifact"] == sys.argv[3] and r["imported"]["statement"].startswith("sha256:") for r in imp), imp
assert not [r for r in imp if "signer" in r or "artifact" in r or r.get("source") == "registry"], imp
assert [r["kind"] for r in recs if "imported" not in r] == ["deploy"], recs
assert not [r for r in recs if r["kind"] == "validate" and "imported" not in r], "B validated"' \
	"$T/docs-B" "$KA" "$ART"
check_rc "B: ledger show names the registry verdict and its signer" 0 ctl B ledger
check_grep "... golden pass, from the registry" "golden +pass .*from the registry, signer ${KA%"${KA#???????????????????????}"}" "$T/.out"
cp "$T/dB" "$T/done-when-1.json"

# C trusts another key: A's verdict is never used; refused, naming A's key.
"$L" pull shim:1 vc --registry "$R" --organization org >/dev/null 2>&1
LUME_SIM_IP=127.0.0.158 "$L" run vc --no-display >/dev/null 2>&1
ctl C deploy vc --payload "$T/a.tar.gz" --accept-new --json >"$T/dC" 2>&1
rc=$?
check "C (trusting another key): exit 3" test "$rc" -eq 3
check_grep "... refused" '"state":"refused"' "$T/dC"
check_grep "... naming the untrusted signer by its keyid, the key's fingerprint" "signed by $FAE, a key this controller does not trust" "$T/dC"
check_grep "... and the command to run" 'validate it first: lume-metal validate vc --workload llama-server' "$T/dC"
ledger_text "$T/state-C" >"$T/ledger-C.txt"
check "... nothing of A's written into C's ledger" sh -c "! grep -qs '\"imported\"' '$T/ledger-C.txt'"
cp "$T/dC" "$T/done-when-2.json"

# Registry down: the gate falls back to the local ledger and says so.
ctl C deploy vc --payload "$T/a.tar.gz" --image "$DOWN/org/shim:1" --json >"$T/dD" 2>&1
check "a registry that is down: exit 3 (no verdict anywhere)" test $? -eq 3
check_grep "... saying the registry could not be read and the local ledger was used" \
	"registry verdicts not read \\(registry $DOWN is unreachable[^)]*\\); the gate used the local ledger only" "$T/dD"
check_grep "... refused with the command to run" '"message":"this workload requires validation and this image version has no validate record; validate it first: lume-metal validate vc' "$T/dD"

# One lookup per image version per run, not per VM: two VMs of shim:1, a fresh controller.
mkdir -p "$T/cfg-B2" && cp -R "$T/cfg-B/lume-metal" "$T/cfg-B2/" && mkdir -p "$T/state-B2"
n0=$(grep -c '"[A-Z]* /v2/' "$T/reg/registry.log")
ctl B2 deploy vb vc --payload "$T/a.tar.gz" --json >"$T/dB2" 2>&1
check "two VMs of one version in one run: exit 0" test $? -eq 0
check "... one looked the verdict up, the other waited for it" test "$(grep -c '"state":"imported"' "$T/dB2")" -eq 2 -a \
	"$(grep -c '"shared":true' "$T/dB2")" -eq 1
check "... 5 registry requests in its access log, not 10" test "$(($(grep -c '"[A-Z]* /v2/' "$T/reg/registry.log") - n0))" -eq 5
check_rc "status --verdicts registry on a fresh controller" 0 env XDG_CONFIG_HOME="$T/cfg-C" "$LM" status vb --lume "$L" \
	--port "$PORT" -u "$ME" -i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state-S2" \
	--verdicts registry --json
check_grep "... with another key trusted: the verdict unrecorded, the untrusted signer named" \
	"\"state\":\"untrusted\",\"signer\":\"$FAE\"" "$T/.out"
check_grep "... verdict unrecorded" '"verdict":"unrecorded"' "$T/.out"
check_rc "status --verdicts registry trusting A's key" 0 env XDG_CONFIG_HOME="$T/cfg-B" "$LM" status vb --lume "$L" \
	--port "$PORT" -u "$ME" -i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state-S2" --json
check_grep "... the registry's verdict: pass" '"verdict":"pass"' "$T/.out"

# libcurl is loaded the first time a registry is spoken to (net/curl_lazy.h): one that cannot be
# loaded fails that command, naming it, and leaves the others as they were.
check_rc "ledger pull where libcurl cannot be loaded (LUME_METAL_LIBCURL): exit 1" 1 env LUME_METAL_LIBCURL="$T/none/libcurl.so.4" \
	XDG_CONFIG_HOME="$T/cfg-B" "$LM" ledger pull "$R/org/shim:1" --state "$T/state-P"
check_has "... naming the library" "lume-metal: cannot load libcurl: $T/none/libcurl.so.4: cannot open shared object file" "$T/.out"
check "... recording nothing" test ! -e "$T/state-P/ledger.db"
check_rc "... a library without libcurl's functions: exit 1" 1 env LUME_METAL_LIBCURL=libz.so.1 \
	XDG_CONFIG_HOME="$T/cfg-B" "$LM" ledger pull "$R/org/shim:1" --state "$T/state-P"
check_has "... naming the function it lacks" "lume-metal: cannot load libcurl (libz.so.1): it has no curl_global_init" "$T/.out"
check_rc "... and a command that speaks to no registry runs as ever" 0 env LUME_METAL_LIBCURL="$T/none/libcurl.so.4" \
	"$LM" ledger show --state "$T/state-A"
# ledger pull: explicitly, into a third state; twice adds nothing.
check_rc "ledger pull of shim:1 exits 0" 0 env XDG_CONFIG_HOME="$T/cfg-B" "$LM" ledger pull "$R/org/shim:1" --state "$T/state-P"
check_grep "... the artifact trusted, its signer named" "trusted +signer $KA" "$T/.out"
check_grep "... two records recorded" 'recorded 2 record\(s\)' "$T/.out"
check_rc "... again: exit 0" 0 env XDG_CONFIG_HOME="$T/cfg-B" "$LM" ledger pull "$R/org/shim:1" --state "$T/state-P"
check_grep "... recording nothing twice" 'recorded 0 record\(s\)' "$T/.out"
check_rc "ledger pull with another key trusted: exit 3" 3 env XDG_CONFIG_HOME="$T/cfg-C" "$LM" ledger pull "$R/org/shim:1" --state "$T/state-Q"
check_grep "... shown untrusted, naming the signer" "untrusted +signer $FAE" "$T/.out"
check "... and nothing recorded" test ! -e "$T/state-Q/ledger"

# ledger push by hand: the same records again make the same artifact, listed once.
check_rc "ledger push of shim:1 on A exits 0" 0 ctl A ledger push "$R/org/shim:1"
check_has "... the same artifact (deterministic)" "$ART" "$T/.out"
curl -s -u lume:s3cret-test -H 'Accept: application/vnd.oci.image.index.v1+json' \
	"http://$R/v2/org/shim/manifests/sha256-$H" >"$T/index2.json"
check "... listed once in the index" test "$(grep -o "$ART" "$T/index2.json" | wc -l)" -eq 1
check_rc "ledger push without a signing key: exit 2" 2 ctl B ledger push "$R/org/shim:1"
check_has "... saying how to make one" "lume-metal key generate" "$T/.out"

# The referrers API, against a STUB registry (tests/deploy/oci-stub.py: distribution 2.8 has
# none): the push is indexed by the registry itself (OCI-Subject), the pull asks /referrers/.
S=127.0.0.159:$PORT
. "$TOP/tests/pidfile.sh"
t_defer "pidfile_stop '$T/stub.pid'"
python3 "$TOP/tests/deploy/oci-stub.py" 127.0.0.159 "$PORT" "$T/stub.pid" "$T/stub.log" 127.0.0.160 2>"$T/stub.err" &
i=0
while ! { curl -s -o /dev/null "http://$S/v2/" && curl -s -o /dev/null "http://127.0.0.160:$PORT/v2/"; } && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
curl -s -u lume:s3cret-test -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$R/v2/org/shim/manifests/1" >"$T/image.json"
for repo in shim tamper huge loop deepidx moved away plain; do
	curl -s -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' --data-binary "@$T/image.json" \
		"http://$S/v2/org/$repo/manifests/1" >/dev/null
done
check_rc "stub: ledger push through the referrers API exits 0" 0 ctl A ledger push "$S/org/shim:1" --json
check_grep "... the registry indexed it (OCI-Subject)" '"referrersApi":true' "$T/.out"
check "... no fallback tag written" sh -c "! grep -q 'manifests/sha256-' '$T/stub.log'"
check_rc "stub: ledger pull reads the referrers API" 0 env XDG_CONFIG_HOME="$T/cfg-B" "$LM" ledger pull "$S/org/shim:1" --state "$T/state-S"
check_grep "... the artifact trusted" "trusted +signer $KA" "$T/.out"
check_grep "... said to be the referrers API" 'verdict artifact\(s\) \(referrers API\)' "$T/.out"
check_grep "... asked unfiltered (a verdict is a bundle, or an envelope of an older version)" "GET /v2/org/shim/referrers/$D\$" "$T/stub.log"
# Hostile answers: each refused with its reason, nothing recorded.
# A blob's redirect: followed to another loopback address, whose answer is checked and named;
# never to plain http elsewhere (192.0.2.1), which is refused before any connection.
ctl A ledger push "$S/org/moved:1" >/dev/null 2>&1
check_rc "stub: a blob redirected from the loopback registry to another loopback address: followed" 0 \
	env XDG_CONFIG_HOME="$T/cfg-B" "$LM" ledger pull "$S/org/moved:1" --state "$T/state-M"
check_grep "... the artifact trusted" "trusted +signer $KA" "$T/.out"
check_grep "... its bytes from the storage host" "^GET /storage/sha256:[0-9a-f]{64} @127\.0\.0\.160\$" "$T/stub.log"
for h in "tamper:whose SHA-256 is not" "huge:more than 262144 bytes" "loop:redirected more than 3 times" \
	"away:127.0.0.160:$PORT (where registry $S redirected) answered a blob whose SHA-256 is not" \
	"plain:registry $S redirected to http://192.0.2.1:$PORT/storage/sha256:"; do
	repo=${h%%:*} why=${h#*:}
	ctl A ledger push "$S/org/$repo:1" >/dev/null 2>&1
	check_rc "stub: a pull from org/$repo is refused (exit 3)" 3 env XDG_CONFIG_HOME="$T/cfg-B" "$LM" ledger pull "$S/org/$repo:1" --state "$T/state-H"
	check_has "... saying: $why" "$why" "$T/.out"
done
check_rc "stub: referrers nested 5000 levels: exit 1" 1 env XDG_CONFIG_HOME="$T/cfg-B" "$LM" ledger pull "$S/org/deepidx:1" --state "$T/state-H"
check_has "... not an image index, refused" "are not an image index: refused" "$T/.out"
check "... nothing of them recorded" test ! -e "$T/state-H/ledger"

if [ -n "${VERDICTS_KEEP:-}" ]; then cp "$T/done-when-1.json" "$T/done-when-2.json" "$T/artifact-manifest.json" \
	"$T/index.json" "$VERDICTS_KEEP/"; fi
t_done

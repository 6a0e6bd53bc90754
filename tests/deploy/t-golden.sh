#!/bin/sh
# shellcheck disable=SC1091 # sourced libs
# lume-metal golden: a build VM cloned by the simulated Lume, served by a REAL sshd guest (its
# LUME_SIM_IP), deployed and validated, stamped, pushed to a REAL registry on loopback
# (tests/registry.sh, basic auth) and recorded under the digest the registry answers.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
L=$TOP/tests/lume-sim/lume
HOME=$T/home LUME_SIM_REGISTRY_HTTP=1 GITHUB_USERNAME=lume GITHUB_TOKEN=s3cret-test
export HOME LUME_SIM_REGISTRY_HTTP GITHUB_USERNAME GITHUB_TOKEN
unset XDG_CONFIG_HOME GHCR_USERNAME GHCR_TOKEN LUME_SIM_IP LUME_LOG_LEVEL
mkdir -p "$HOME"
R=127.0.0.153:$PORT DOWN=127.0.0.154:$PORT
t_defer "sh '$TOP/tests/registry.sh' stop '$T/reg'"
sh "$TOP/tests/registry.sh" start "$T/reg" 127.0.0.153 "$PORT" --htpasswd lume:s3cret-test || exit 1
# sshd_at NAME ADDR [sshd.sh options]: the real guest a build VM's LUME_SIM_IP points at.
sshd_at() {
	g=$1 a=$2
	shift 2
	mkdir -p "$T/g/$g"
	cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/$g/"
	t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/$g'"
	sh "$TOP/tests/sshd.sh" start "$T/g/$g" "$a" "$PORT" "$@"
}
sshd_at good 127.0.0.151 && sshd_at bad 127.0.0.152 --env LUME_METAL_SIM_WRONG_TYPES=1 || exit 1
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1
# llama-server requires validation, so its golden builds take --model (a file the guests read).
M=$VMODEL
# A test copy of the data directory with a workload that does not ("plain"), and its payload.
DD=$T/data
mkdir -p "$DD" && ln -s "$TOP/guest-payload" "$TOP/build" "$DD/" && cp -R "$TOP/manifests" "$DD/manifests"
sed -e 's/"id": "llama-server"/"id": "plain"/' -e '/"requireValidation"/d' "$TOP/manifests/workloads/llama-server.json" \
	>"$DD/manifests/workloads/plain.json"
LUME_METAL_DATADIR=$DD "$LM" build --target linux-sim --workload plain -o "$T/plain.tar.gz" >/dev/null || exit 1
sha() { sha256sum "$1" | cut -c1-64; }
# head_digest REPO TAG: what the registry answers for it (curl -I), empty when it has none.
head_digest() {
	curl -sI -u lume:s3cret-test -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		"http://$R/v2/$1/manifests/$2" | tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p'
}
code_of() {
	curl -s -o /dev/null -w '%{http_code}' -u lume:s3cret-test -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		"http://$R/v2/$1/manifests/$2"
}
# golden ARGS...: lume-metal golden with the harness's connection flags and the payload.
golden() { lm golden --payload "$T/a.tar.gz" --accept-new --wait 10 "$@"; }

# The source: a stopped VM pulled from the registry, so it has a base digest.
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" src0 stopped null null --folder "$HOME/.lume" --disk-kib 64
"$L" push src0 base:1 --registry "$R" --organization org >/dev/null 2>&1 &&
	"$L" pull base:1 src --registry "$R" --organization org >/dev/null 2>&1 || exit 1
BASE=$(head_digest org/base 1)
SRC=$(sha "$HOME/.lume/src/disk.img")

check_rc "llama-server requires validation: golden without --model is a usage error" 2 \
	golden src shim:1 --registry "$R" --organization org --build-vm b0
check_has "... saying to give it" 'the workload llama-server requires validation (requireValidation): give --model PATH' "$T/.out"
check_rc "--dry-run exits 0" 0 golden src shim:1 --registry "$R" --organization org --build-vm b0 --dry-run --model "$M"
check_has "... printing the clone's command" "lume clone src b0" "$T/.out"
check_grep "... the push's, under a tag of its own, with its flags" \
	"push b0 shim:golden-[0-9a-f]{32} --registry $R --organization org\$" "$T/.out"
check_grep "... then the tag step: shim:1 pointed at what was pushed, read back" \
	"tag +PUT http://$R/v2/org/shim/manifests/1: those bytes; .* GET each tag back" "$T/.out"
check_has "... and the stamp's, one quoted exec" "\"\$HOME\"/'Library/Application Support/lume-metal' < image.json" "$T/.out"
check "... and runs nothing: no clone appears" test ! -e "$HOME/.lume/b0" -a ! -e "$LUME_SIM_DIR/b0.json"
check "... and the registry has no such tag" test "$(code_of org/shim 1)" = 404

# The workload's own validation too (the simulated llama-perplexity, a model in the guest).
head -c 20000 /dev/urandom >"$T/g/good/model.gguf"
LUME_SIM_IP=127.0.0.151 golden src shim:1 --registry "$R" --organization org --additional-tags latest \
	--build-vm b1 --model "$T/g/good/model.gguf" --json >"$T/g1" 2>"$T/g1.err"
rc=$?
check "a golden build that passes exits 0" test "$rc" -eq 0
check_grep "... published" '"state":"published"' "$T/g1"
check_grep "... with progress per step and the elapsed time on stderr" 'golden \[ *[0-9.]+ s\] push +done' "$T/g1.err"
# The steps' names, printed and in the result, are the table's in the order docs/interfaces.md
# lists them (this build has no pull).
want=$(sed -n 's/^golden steps: .pull. //p' "$TOP/docs/interfaces.md" | tr -d '`')
got=$(sed -n 's/^golden \[ *[0-9.]* s\] \([a-z]*\) .*/\1/p' "$T/g1.err" | uniq | tr '\n' ' ')
check "... the progress lines name the steps docs/interfaces.md lists, in order: $want" test -n "$want" -a "$got" = "$want "
got=$(python3 -c 'import json,sys; print(" ".join(s["step"] for s in json.load(open(sys.argv[1]))["steps"]))' "$T/g1")
check "... and so do the result's steps" test "$got" = "$want"
D=$(head_digest org/shim 1)
check "... pushed: the registry has shim:1 (curl -I)" sh -c "printf '%s' '$D' | grep -Eqx 'sha256:[0-9a-f]{64}'"
check "... and the additional tag, the same manifest" test "$(head_digest org/shim latest)" = "$D"
check_has "... the digest it reports is the registry's" "\"digest\":\"$D\"" "$T/g1"
ledger_docs "$T/state" "$T/ledger-docs"
grep -l '"kind":[[:space:]]*"golden"' "$T/ledger-docs/"*.json >"$T/docs" 2>/dev/null
check "... one ledger document has a golden record" test "$(wc -l <"$T/docs")" -eq 1
doc=$(head -n 1 "$T/docs")
check_grep "... keyed by the registry's digest" "\"imageDigest\":[[:space:]]*\"$D\"" "${doc:-/dev/null}"
check_grep "... with the image null in the key" '"image":[[:space:]]*null' "${doc:-/dev/null}"
check_grep "... the reference as its label" "\"image\":[[:space:]]*\"$R/org/shim:1\"" "${doc:-/dev/null}"
check_grep "... the verdict pass" '"verdict":[[:space:]]*"pass"' "${doc:-/dev/null}"
check_grep "... the VM it was built from as \"sourceVm\" (\"source\" says where an imported record came from)" \
	'"sourceVm":[[:space:]]*"src"' "${doc:-/dev/null}"
check_grep "... and the shim's figures" '"maxThreadgroupMemoryLength":[[:space:]]*65536' "${doc:-/dev/null}"
check_grep "... and the workload's: validated, its KL divergence" '"meanKld":[[:space:]]*0\.0' "${doc:-/dev/null}"
check "... and the validate record, a pass, filed under the pushed digest too" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
v = [r for r in d["records"] if r["kind"] == "validate"]
assert d["key"]["imageDigest"] == sys.argv[2] and len(v) == 1 and v[0]["verdict"] == "pass", v
assert v[0]["digest"] == sys.argv[2] and v[0]["validation"]["meanKld"] < 0.01 and v[0]["hashes"]["modelSha256"], v' \
	"${doc:-/dev/null}" "$D"
check "... once: one validate record in the whole ledger (it was filed under the build VM's key too)" \
	test "$(ledger_text "$T/state" | grep -c '"kind":[[:space:]]*"validate"')" -eq 1
check_grep "the build ran the workload validation" '"step":"workload","command":"validate --model [^"]*","state":"done"' "$T/g1"
if grep -q '"record":' "$T/g1" && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if "record" in d.get("validate", {}) else 1)' "$T/g1"; then
	not_ok "... its result keeps no copy of the record"
else
	ok "... its result keeps no copy of the record"
fi
img="$T/g/good/home/Library/Application Support/lume-metal/image.json"
check_has "the guest is stamped: image.json names the reference" "\"image\":\"$R/org/shim:1\"" "$img"
check_has "... the base digest" "\"baseDigest\":\"$BASE\"" "$img"
check_has "... the payload" "\"payloadSha256\":\"$(cut -c1-64 "$T/a.tar.gz.sha256")\"" "$img"
check_grep "... the verdict, the time and the version" '"verdict":"pass","time":"20[0-9-]+T[0-9:]+Z","lumeMetal":"[0-9.]+"' "$img"
check "the source's disk.img is unchanged" test "$(sha "$HOME/.lume/src/disk.img")" = "$SRC"
check "... and the source is still stopped" grep -q '"status" : "stopped"' "$LUME_SIM_DIR/src.json"
check "without --keep the build VM is deleted" test ! -e "$HOME/.lume/b1" -a ! -e "$LUME_SIM_DIR/b1.json"

# A VM pulled from the published tag is known by its digest: its deploys and status find the
# golden record (the key of the Mac's .manifest-digest, not "unknown" or the stamped label).
"$L" pull shim:1 copy --registry "$R" --organization org >/dev/null 2>&1
LUME_SIM_IP=127.0.0.151 "$L" run copy --no-display >/dev/null 2>&1
check "a VM pulled from shim:1 has the published digest" test "$(cat "$HOME/.lume/copy/.manifest-digest")" = "$D"
lm deploy copy --payload "$T/a.tar.gz" --force --json >"$T/d7" 2>&1
check_grep "... its deploy is keyed by that digest" "\"key\":\\{\"imageDigest\":\"$D\",\"image\":null" "$T/d7"
# --force: past the unchanged shortcut (the build left this payload current) to the gate.
check_grep "... and passes the validate gate with the build's record" '"state":"(deployed|unchanged)"' "$T/d7"
if grep -q '"meanKld"' "$T/d7"; then not_ok "... without validating again"; else ok "... without validating again"; fi
lm status copy --json >"$T/s7" 2>&1
check "... and status finds the golden verdict (not unrecorded)" test "$(grep -o '"verdict":"[a-z]*"' "$T/s7" | tail -n 1)" = '"verdict":"pass"'
"$L" stop copy >/dev/null 2>&1

LUME_SIM_IP=127.0.0.152 golden src shim:bad --registry "$R" --organization org --build-vm b2 --keep --model "$M" >"$T/g2" 2>&1
rc=$?
check "a failed validation exits 1" test "$rc" -eq 1
check_has "... says so" "validation-failed" "$T/g2"
check "... and pushes nothing: the registry has no such tag (404)" test "$(code_of org/shim bad)" = 404
check "... --keep keeps the build VM" test -f "$HOME/.lume/b2/disk.img"
check "... stopped" grep -q '"status" : "stopped"' "$LUME_SIM_DIR/b2.json"
check_has "... and says where" "build VM kept: b2" "$T/g2"
check "... the kept delete step in one progress line, not two" test "$(grep -c '^golden \[.*\] delete ' "$T/g2")" -eq 1
check_rc "the failure is in the ledger under the base image's key" 0 "$LM" ledger --state "$T/state" show
check_grep "... as the deploy's fail verdict" 'deploy +fail +b2' "$T/.out"
check_grep "... beside the published build's golden record, naming the VM it was built from" \
	'golden +pass +b1 .* built from src' "$T/.out"
"$L" delete b2 --force >/dev/null 2>&1

# A workload that does not require validation ("plain", of the test data directory): no --model.
(
	export LUME_METAL_DATADIR="$DD"
	LUME_SIM_IP=127.0.0.151 lm golden --payload "$T/plain.tar.gz" --accept-new --wait 10 src shim:2 \
		--registry "$DOWN" --organization org --build-vm b3 >"$T/g3" 2>&1
)
rc=$?
check "a registry that is down: exit 1" test "$rc" -eq 1
check_has "... naming the registry and saying nothing was pushed" "push of shim:2 to registry $DOWN failed" "$T/g3"
check_has "... with Lume's error" "Could not connect to the server" "$T/g3"
check "... the build VM is deleted" test ! -e "$HOME/.lume/b3"
check_grep "... without --model (plain requires no validation) the workload step is skipped" \
	'^golden \[ *[0-9.]+ s\] workload +skipped: no --model$' "$T/g3"
check "... in one progress line, not two" test "$(grep -c '^golden \[.*\] workload ' "$T/g3")" -eq 1

LUME_SIM_IP=127.0.0.151 GITHUB_TOKEN=wrong golden src shim:3 --registry "$R" --organization org --build-vm b4 \
	--model "$M" >"$T/g4" 2>&1
rc=$?
check "credentials the registry refuses: exit 1" test "$rc" -eq 1
check_has "... naming the registry, not pushed" "push of shim:3 to registry $R failed" "$T/g4"
check_grep "... and nothing recorded" 'not pushed, nothing recorded' "$T/g4"
check "... the registry has no shim:3" test "$(code_of org/shim 3)" = 404

LUME_SIM_IP=127.0.0.152 golden --pull base:1 --pull-registry "$R" --pull-organization org shim:p \
	--registry "$R" --organization org --build-vm b7 --model "$M" --json >"$T/g6" 2>&1
rc=$?
check "--pull BASE:TAG pulls the source first (Lume's name base_1)" test -f "$HOME/.lume/base_1/disk.img"
check "... with the base's digest" test "$(cat "$HOME/.lume/base_1/.manifest-digest")" = "$BASE"
check_has "... which the build reports" "\"baseDigest\":\"$BASE\"" "$T/g6"
check "... its validation fails here (the bad guest): exit 1, nothing pushed" test "$rc" -eq 1 -a "$(code_of org/shim p)" = 404
check_rc "... and the verdict is recorded under the base's reference" 0 "$LM" ledger --state "$T/state" show --image "$R/org/base:1"
check_grep "... as a fail" 'deploy +fail +b7' "$T/.out"
# Without NAME a pull is named as Lume names it (base_1), which now exists: the build picks a
# free name and says which, and the pull lands there, never on the existing VM.
check_rc "--pull without NAME when base_1 exists: --dry-run plans a free name" 0 golden --pull base:1 \
	--pull-registry "$R" --pull-organization org shim:q --registry "$R" --organization org --build-vm b10 --model "$M" --dry-run
check_has "... saying which" "base_1 is taken (a VM of that name exists): pulling base:1 as base_1-2" "$T/.out"
check_grep "... and pulls into it" 'pull +base:1 base_1-2 .*' "$T/.out"
check_grep "... then clones it" 'clone +base_1-2 b10' "$T/.out"

LUME_SIM_IP=127.0.0.151 lm golden --payload "$T/a.tar.gz" --wait 10 --known-hosts "$T/empty_known_hosts" src shim:5 \
	--registry "$R" --organization org --build-vm b8 --model "$M" >"$T/g8" 2>&1
rc=$?
check "an unknown host key without --accept-new: refused by the gate, exit 3" test "$rc" -eq 3
check "... nothing pushed, the build VM deleted" test "$(code_of org/shim 5)" = 404 -a ! -e "$HOME/.lume/b8"
check_grep "... naming the key once: \"REF refused: ...unknown host key\"" "org/shim:5 refused: [^ ]+: unknown host key SHA256:" "$T/g8"
mkdir -p "$T/g/good/bad-kld"
printf '#!/bin/sh\nLUME_METAL_SIM_PPL=bad-kld exec "%s" "$@"\n' "$TOP/tests/guest-sim/bin/llama-perplexity" \
	>"$T/g/good/bad-kld/llama-perplexity"
chmod +x "$T/g/good/bad-kld/llama-perplexity"
LUME_SIM_IP=127.0.0.151 golden src shim:6 --registry "$R" --organization org --build-vm b9 \
	--model "$T/g/good/model.gguf" --llama-perplexity "$T/g/good/bad-kld/llama-perplexity" >"$T/g9" 2>&1
rc=$?
check "a workload validation that fails (mean KLD over its bound): exit 1" test "$rc" -eq 1
check_grep "... said" 'org/shim:6 validation-failed: workload validation: validation-failed' "$T/g9"
check "... nothing pushed, the build VM deleted" test "$(code_of org/shim 6)" = 404 -a ! -e "$HOME/.lume/b9"
check_rc "IMAGE without a tag is a usage error" 2 golden src shim --registry "$R" --organization org --model "$M"
check_rc "a missing source VM is an input error" 2 golden nosuch shim:9 --registry "$R" --organization org --build-vm b6 --model "$M"
# golden signs exactly what it pushed. A re-tag racing the push (the simulated lume's
# LUME_SIM_PUSH_RETAG): right after lume's push, another party with push access points shim:r at
# shim:1's manifest; golden records the manifest it pushed, under the tag only it knew.
LUME_SIM_IP=127.0.0.151 LUME_SIM_PUSH_RETAG=r=1 golden src shim:r --registry "$R" --organization org \
	--build-vm b11 --model "$T/g/good/model.gguf" --json >"$T/g11" 2>"$T/g11.err"
rc=$?
jget() { python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v.get(k) if isinstance(v, dict) else None
print(v if isinstance(v, str) else "")' "$@" 2>/dev/null; }
D11=$(jget "$T/g11" digest) NONCE=$(jget "$T/g11" pushTag tag)
check "a re-tag racing the push: golden publishes (exit 0)" test "$rc" -eq 0
check "... the digest it records is not shim:1's, which the re-tag put on shim:r" test -n "$D11" -a "$D11" != "$D"
check "... it is the manifest lume pushed, under golden's own tag golden-<32 hex>" sh -c \
	"printf '%s' '$NONCE' | grep -Eqx 'golden-[0-9a-f]{32}' && test '$(head_digest org/shim "${NONCE:-none}")' = '$D11'"
check "... and shim:r names it again: the re-tag is overwritten" test "$(head_digest org/shim r)" = "$D11"
"$LM" ledger show --json --state "$T/state" >"$T/show11.json" 2>&1
check "... shim:1's ledger document holds b1's golden record only, none of b11" python3 -c '
import json, sys
docs = json.load(open(sys.argv[1]))
g = [(d["key"]["imageDigest"], r["vm"]) for d in docs for r in d["records"] if r["kind"] == "golden"]
assert (sys.argv[2], "b11") not in g and (sys.argv[3], "b11") in g, g' "$T/show11.json" "$D" "${D11:-none}"
check_grep "... docker-registry 2.8 keeps golden's own tag (it deletes none), said" \
	'"pushTag":\{"tag":"golden-[0-9a-f]{32}","removed":false,"message":"registry [^"]* answered HTTP 400 to DELETE' "$T/g11"
# A re-tag racing golden's own tagging: a STUB registry (oci-stub.py) whose org/race points a tag
# back at the manifest it named whenever it is pushed. golden reads shim:r back, finds another
# digest, and fails recording nothing, rather than sign what the tag names.
. "$TOP/tests/pidfile.sh"
S=127.0.0.160:$PORT
t_defer "pidfile_stop '$T/stub.pid'"
python3 "$TOP/tests/deploy/oci-stub.py" 127.0.0.160 "$PORT" "$T/stub.pid" "$T/stub.log" 2>"$T/stub.err" &
i=0
while ! curl -s -o /dev/null "http://$S/v2/" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":%s,"digest":"%s","size":2},"layers":[],"annotations":{"seed":"%s"}}' \
	'"application/vnd.oci.empty.v1+json"' "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" "$T" >"$T/seed.json"
SEED=sha256:$(sha "$T/seed.json")
curl -s -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' --data-binary "@$T/seed.json" \
	"http://$S/v2/org/race/manifests/r" >/dev/null
LUME_SIM_IP=127.0.0.151 golden src race:r --registry "$S" --organization org --build-vm b12 --model "$T/g/good/model.gguf" \
	--json >"$T/g12" 2>"$T/g12.err"
rc=$?
check "a re-tag racing golden's tagging (stub): exit 1" test "$rc" -eq 1
check_grep "... saying the tag names another digest than the pushed one, nothing recorded" \
	"could not tag it: tag r names $SEED, not the pushed sha256:[0-9a-f]{64}: another push re-tagged it in between; nothing recorded" "$T/g12"
check_grep "... not recorded" '"recorded":false' "$T/g12"
check "... no ledger document under the re-tagged digest" sh -c "! grep -rqs '\"imageDigest\":[[:space:]]*\"$SEED\"' '$T/state/ledger'"
check_grep "... golden's own tag deleted, where the registry deletes tags (OCI distribution 1.1)" \
	'"pushTag":\{"tag":"golden-[0-9a-f]{32}","removed":true\}' "$T/g12"
check_grep "... by tag, never by digest (which would take the manifest and every tag)" \
	'^DELETE /v2/org/race/manifests/golden-[0-9a-f]{32}$' "$T/stub.log"

# A lume whose push succeeds and then loses the registry: pushed, but no digest to record under.
cat >"$T/lume-gone" <<EOF
#!/bin/sh
"$L" "\$@" || exit \$?
[ "\$1" != push ] || sh "$TOP/tests/registry.sh" stop "$T/reg"
EOF
chmod +x "$T/lume-gone"
LUME_SIM_IP=127.0.0.151 "$LM" golden --lume "$T/lume-gone" --port "$PORT" -u "$ME" -i "$T/id_ed25519" \
	--known-hosts "$T/known_hosts" --state "$T/state" --payload "$T/a.tar.gz" --wait 10 src shim:4 \
	--registry "$R" --organization org --build-vm b5 --model "$M" >"$T/g5" 2>&1
rc=$?
check "the registry gone after the push: exit 1" test "$rc" -eq 1
check_has "... said plainly" "pushed shim:4 but could not read its digest from $R: registry $R is unreachable" "$T/g5"
check_has "... nothing recorded" "; nothing recorded" "$T/g5"
ledger_docs "$T/state" "$T/ledger-docs"
check "... and the ledger has no golden record more (b1's and b11's, two documents)" \
	test "$(grep -l '"kind":[[:space:]]*"golden"' "$T/ledger-docs/"*.json | wc -l)" -eq 2
t_done

#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# validate against real sshd guests with the simulated llama-perplexity (tests/guest-sim/bin),
# whose device lines and figures follow the Metal device the shim really produced in it (the
# real probe under its environment and name): the shim arm must really run through the
# payload's run-with-shim, and the shim must really activate and raise the device to Apple7, for
# its kernels (and figures) to differ; a shim that fails closed leaves both arms alike. Then the gate: a
# workload that requires validation (a test copy of manifests/ through LUME_METAL_DATADIR)
# deploys only to an image version with a passing validate record.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

guest tahoe-v 127.0.0.13 || exit 1
G=$T/g/tahoe-v/home
head -c 20000 /dev/urandom >"$G/model.gguf"
V() { lm validate tahoe-v --target linux-sim --model "$G/model.gguf" "$@"; }
# all: every ledger document in one file, for check_grep (which reads one file).
all() { ledger_text "$T/state" >"$T/ledger.all"; printf '%s' "$T/ledger.all"; }
records() { ledger_text "$T/state" | grep -c '"kind":[[:space:]]*"validate"'; }
# scratch: the validate scratch folders in the guest's TMPDIR (its own: tests/sshd.sh).
scratch() { find "$T/g/tahoe-v/tmp" -maxdepth 1 -name 'lume-metal-validate.*' 2>/dev/null | wc -l; }
# sim NAME MODE [VAR=VALUE]: a llama-perplexity of that name in the guest that runs the
# simulation with LUME_METAL_SIM_PPL=MODE (and VAR=VALUE); named llama-perplexity, run-with-shim
# scopes the shim to it.
sim() {
	mkdir -p "$G/$2${3:+-$3}"
	printf '#!/bin/sh\nLUME_METAL_SIM_PPL=%s %s exec "%s" "$@"\n' "$2" "${3:-}" "$TOP/tests/guest-sim/bin/llama-perplexity" \
		>"$G/$2${3:+-$3}/$1"
	chmod +x "$G/$2${3:+-$3}/$1"
	printf '%s' "$G/$2${3:+-$3}/$1"
}
TEXT_SHA=$(sha256sum "$TOP/manifests/texts/gfdl-1.3.txt" | cut -c1-64)
MODEL_SHA=$(sha256sum "$G/model.gguf" | cut -c1-64)
n0=$(scratch)

check_rc "validate" 0 V --accept-new --evidence "$T/ev" --json
check_grep "... is validated" '"state":"validated"' "$T/.out"
check_grep "... mean KLD, 99.9% KLD, same top token and PPL ratio read" \
	'"pplRatio":1\.000231,"meanKld":0\.000412,"kld999":0\.010731,.*"sameTopPercent":99\.214' "$T/.out"
check_grep "... the stock arm on the Apple5 path, no simdgroup matrix" '"stockMetal":\{[^}]*"apple_family":1005[^}]*"simdgroup_matrix_mul":false' "$T/.out"
check_grep "... the shim arm on Apple9 with it" '"shimMetal":\{[^}]*"apple_family":1009[^}]*"simdgroup_matrix_mul":true' "$T/.out"
check_has "... the model's SHA-256" "\"modelSha256\":\"$MODEL_SHA\"" "$T/.out"
check_has "... the text's SHA-256" "\"textSha256\":\"$TEXT_SHA\"" "$T/.out"
check_has "... llama.cpp's build line" '"build":"10167 (ee3d1b54c) with Apple clang' "$T/.out"
check_grep "... progress per arm with its time, on stderr" 'tahoe-v: stock arm finished at [0-9.]+ s' "$T/.out"
check_grep "... both arms" 'tahoe-v: shim arm finished at [0-9.]+ s' "$T/.out"
want=$(sed -n 's/^validate arms: //p' "$TOP/docs/interfaces.md" | tr -d '`')
got=$(sed -n 's/^lume-metal: tahoe-v: \([a-z]*\) arm started at .*/\1/p' "$T/.out" | tr '\n' ' ')
check "... the arms named as docs/interfaces.md lists them, in order: $want" test -n "$want" -a "$got" = "$want "
check "... and the guest's scratch directory is gone" test "$(scratch)" -eq "$n0"
check_grep "... it was in the guest's own TMPDIR (llama-perplexity saved its logits there)" \
	"saving all logits to $T/g/tahoe-v/tmp/+lume-metal-validate\\.[A-Za-z0-9]+/base\\.kld" "$T/ev/stock.stderr"
check "the evidence has both arms' raw output, the record and SHA256SUMS" sh -c 'cd "$1" &&
	for f in stock.stdout stock.stderr shim.stdout shim.stderr record.json SHA256SUMS; do test -s "$f" || exit 1; done &&
	sha256sum -c --quiet SHA256SUMS' - "$T/ev"
check_grep "... the shim arm's statistics in it" 'Mean    KLD:   0\.000412' "$T/ev/shim.stdout"
check_grep "... and the stock arm's device lines" 'simdgroup matrix mul\. = false' "$T/ev/stock.stderr"
check "one ledger record of kind validate" test "$(records)" -eq 1
check_grep "... a pass" '"verdict":[[:space:]]*"pass"' "$(all)"
check_grep "... with the text named" '"text":[[:space:]]*"manifests/texts/gfdl-1.3.txt"' "$(all)"
check_grep "... and the command of the stock arm, llama-perplexity's own" '"command":[[:space:]]*".[^ ]*/llama-perplexity. .-m. .*--kl-divergence-base' "$(all)"
check_rc "text output" 0 V
check_grep "... shows the figures against the thresholds" 'mean KLD +0\.000412 +\(at most 0\.01\)' "$T/.out"
check_grep "... and each arm's path" 'shim arm: +Apple family 1009, simdgroup matrix mul\. true' "$T/.out"

# Failing checks record a fail.
nrec=$(records)
check_rc "broken kernels (mean KLD 1.87) fail" 1 V --llama-perplexity "$(sim llama-perplexity bad-kld)"
check_grep "... as validation-failed, the KLD named" 'validation-failed: mean KLD 1\.873412 is above 0\.01' "$T/.out"
check "... recorded" test "$(records)" -eq $((nrec + 1))
check_grep "... every reason in the record" 'same top token 41\.237% is below 97%' "$(all)"
check_rc "a shim arm that crashes fails" 1 V --llama-perplexity "$(sim llama-perplexity crash)" --json
check_grep "... naming the signal" '"state":"validation-failed".*killed by SIGSEGV' "$T/.out"
check "... recorded" test "$(records)" -eq $((nrec + 2))
printf '#!/bin/sh\nexec llama-perplexity "$@"\n' >"$G/ppl-wrapper" && chmod +x "$G/ppl-wrapper"
check_rc "a shim arm that took the stock path fails (KLD 0 proves nothing)" 1 V --llama-perplexity "$G/ppl-wrapper"
check_grep "... saying nothing was compared" 'did not take the simdgroup paths' "$T/.out"
check_grep "... and that the shim said nothing (it is not scoped to ppl-wrapper's child)" \
	'nothing was compared; the shim said nothing \(it was not loaded into the process, or not scoped to its name\)' "$T/.out"
# A shim that fails closed in the shim arm: this payload's shim.env sets
# LUME_METAL_APPLE_FAMILY_MAX=1000, out of range (the shim takes 1001..1999), so the shim leaves
# llama-perplexity stock; the arms run the same kernels and agree exactly (KLD 0), which proves
# nothing. (The old simulation read the variables, not the device: it validated this.)
mkdir -p "$T/ed"
"$LM" build --target linux-sim -o "$T/closed.tar.gz" >/dev/null && tar -xzf "$T/closed.tar.gz" -C "$T/ed"
# edit FILE SED: FILE of $T/ed edited by SED (the same length), its SHA-256 rewritten where
# MANIFEST.json and SHA256SUMS name it, and MANIFEST.json's in SHA256SUMS, as a build writes them.
edit() {
	e_old=$(sha256sum <"$T/ed/$1" | cut -c1-64) m_old=$(sha256sum <"$T/ed/MANIFEST.json" | cut -c1-64)
	sed -i "$2" "$T/ed/$1"
	sed -i "s/$e_old/$(sha256sum <"$T/ed/$1" | cut -c1-64)/" "$T/ed/MANIFEST.json" "$T/ed/SHA256SUMS"
	sed -i "s/$m_old/$(sha256sum <"$T/ed/MANIFEST.json" | cut -c1-64)/" "$T/ed/SHA256SUMS"
}
edit shim.env 's/^LUME_METAL_APPLE_FAMILY_MAX=1009$/LUME_METAL_APPLE_FAMILY_MAX=1000/'
(cd "$T/ed" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort |
	tar --no-recursion --owner=0 --group=0 --numeric-owner --mtime=@946684800 -cf - -T -) | gzip -n >"$T/closed.tar.gz"
printf '%s  closed.tar.gz\n' "$(sha256sum <"$T/closed.tar.gz" | cut -c1-64)" >"$T/closed.tar.gz.sha256"
nrec=$(records)
check_rc "a shim that fails closed in the shim arm (LUME_METAL_APPLE_FAMILY_MAX=1000) fails" 1 \
	V --payload "$T/closed.tar.gz" --evidence "$T/ev-closed" --json
check_grep "... validation-failed: nothing was compared" '"state":"validation-failed".*"reasons":\["the shim arm did not take the simdgroup paths' "$T/.out"
check_grep "... the shim arm's device is the stock one, Apple5 without simdgroup matrix" \
	'"shimMetal":\{[^}]*"apple_family":1005[^}]*"simdgroup_matrix_mul":false' "$T/.out"
check_grep "... naming why, in the shim's own words" \
	'"reasons":\["the shim arm did not take the simdgroup paths \(ggml_metal_device_init: simdgroup matrix mul\. is not true\): nothing was compared; the shim said: llama-perplexity stays stock: LUME_METAL_APPLE_FAMILY_MAX=\\"1000\\" is out of range 1001\.\.1999"' "$T/.out"
check_grep "... and the arms agree exactly: mean KLD 0, same top token 100%" '"meanKld":0,.*"sameTopPercent":100[,}]' "$T/.out"
check_has "... the shim's own reason is in the shim arm's stderr (the evidence)" \
	'[lume-metal] llama-perplexity stays stock: LUME_METAL_APPLE_FAMILY_MAX="1000" is out of range 1001..1999' "$T/ev-closed/shim.stderr"
check "... recorded" test "$(records)" -eq $((nrec + 1))

# Input the parser refuses, and errors that say nothing of the image: no record.
nrec=$(records)
check_rc "CRLF line ends and extra lines read the same" 0 V --llama-perplexity "$(sim llama-perplexity crlf)" --json
check_grep "... figures and all" '"state":"validated".*"meanKld":0\.000412' "$T/.out"
nrec=$(records)
for m in nan negative twice; do
	check_rc "hostile statistics ($m) are refused" 1 V --llama-perplexity "$(sim llama-perplexity $m)"
	check_grep "... as failed, not a verdict" 'tahoe-v: failed: llama-perplexity' "$T/.out"
done
check "... and none recorded" test "$(records)" -eq "$nrec"
check_rc "ESC and BEL in llama.cpp's build line" 0 V --llama-perplexity "$(sim llama-perplexity esc)"
check_has "... reach the terminal as '?'" 'build: 10167 (ee3d1b54c) ?]0;owned?with' "$T/.out"
check "... and no control character" sh -c '! LC_ALL=C grep -q "$(printf "[\033\007]")" "$1"' - "$T/.out"
check_has "... and the ledger as '?' too" '10167 (ee3d1b54c) ?]0;owned?with' "$(all)"
nrec=$(records)
printf '#!/bin/sh\necho "main: error: unable to load model" >&2\nexit 1\n' >"$G/ppl-fails" && chmod +x "$G/ppl-fails"
check_rc "a stock arm that exits 1" 1 V --llama-perplexity "$G/ppl-fails"
check_grep "... fails with its last words" 'stock arm\) exited 1: main: error: unable to load model' "$T/.out"
check_rc "a missing model is a usage error" 2 lm validate tahoe-v --target linux-sim --model "$G/nope.gguf"
check_grep "... naming it" "model not found in the guest: $G/nope.gguf" "$T/.out"
check_rc "a missing llama-perplexity is a usage error" 2 V --llama-perplexity no-such-perplexity
check_grep "... saying where it looked" 'llama-perplexity not found in the guest: no-such-perplexity \(looked in /opt/homebrew/bin:/usr/local/bin and PATH\)' "$T/.out"
check_rc "no --model is a usage error" 2 lm validate tahoe-v --target linux-sim
check_rc "an evidence directory that exists is refused" 1 V --evidence "$T/ev"
check_grep "... naming it" 'ev: already exists' "$T/.out"
check "... and records nothing" test "$(records)" -eq "$nrec"
printf 'tiny' >"$T/short.txt"
check_rc "a text of fewer bytes than 2 x context tokens is a usage error, before any VM" 2 V --text "$T/short.txt"
check_has "... saying why" "validate: the validation text $T/short.txt has 4 bytes: llama-perplexity needs at least 2 x context = 1024 tokens of it" "$T/.out"
if grep -q 'arm started' "$T/.out"; then not_ok "... and nothing run"; else ok "... and nothing run"; fi
# 3000 bytes pass that check but are 750 tokens here (the simulation's 4 bytes a token): the real
# llama-perplexity needs 2 x context (1024) and says so, then exits 0 with its base file holding
# a header alone, so the shim arm compares nothing. Its words, not "fewer than 100 positions".
head -c 6000 /dev/urandom | od -An -v -tx1 | head -c 3000 >"$T/750.txt"
check_rc "a text of 750 tokens for a context of 512 (1024 needed): a usage error" 2 V --text "$T/750.txt" --json
check_grep "... failed with llama-perplexity's own error lines, though it exits 0" \
	'"state":"failed".*"message":"llama-perplexity \(stock arm\) failed \(it exits 0 after its own errors\): perplexity: you need at least 1024 tokens to evaluate perplexity with a context of 512; perplexity: the data file you provided tokenizes to only 750 tokens"' "$T/.out"
check_grep "... an input error" '"inputError":true' "$T/.out"
if grep -q 'fewer than 100' "$T/.out"; then not_ok "... not the misleading \"fewer than 100 positions\""; else ok "... not the misleading \"fewer than 100 positions\""; fi
check "... and nothing recorded" test "$(records)" -eq "$nrec"
# The shim arm's model evaluation fails ("kl_divergence : failed to eval"), exit 0: a verdict.
check_rc "a shim arm whose evaluation fails (exit 0) fails validation" 1 V --llama-perplexity "$(sim llama-perplexity eval)" --json
check_grep "... validation-failed with its error line" '"state":"validation-failed".*"message":"llama-perplexity \(shim arm\) could not evaluate the model: kl_divergence : failed to eval"' "$T/.out"
check "... recorded" test "$(records)" -eq $((nrec + 1))
nrec=$(records)
# llama.cpp before the Metal device split (b5970): ggml_metal_init lines, the device's name alone.
check_rc "a build before the Metal device split (b5970: ggml_metal_init lines) validates" 0 \
	V --llama-perplexity "$(sim llama-perplexity none LUME_METAL_SIM_LLAMA_BUILD=5970)" --evidence "$T/ev-5970" --json
check_grep "... validated" '"state":"validated"' "$T/.out"
check_grep "... its lines are the older ones" '^ggml_metal_init: simdgroup matrix mul\. = true$' "$T/ev-5970/shim.stderr"
check_grep "... the stock arm read from them: Apple5, no simdgroup matrix" '"stockMetal":\{"gpu_name":"Apple Paravirtual device","apple_family":1005[^}]*"simdgroup_matrix_mul":false' "$T/.out"
check_grep "... the shim arm: Apple9 with it" '"shimMetal":\{"gpu_name":"Apple Paravirtual device","apple_family":1009[^}]*"simdgroup_matrix_mul":true' "$T/.out"
check_has "... and its build line" '"build":"5970 (07a19e27) with Apple clang' "$T/.out"
check_rc "... and a shim that fails closed there is named with that build's function" 1 \
	V --payload "$T/closed.tar.gz" --llama-perplexity "$(sim llama-perplexity none LUME_METAL_SIM_LLAMA_BUILD=5970)" --json
check_grep "... ggml_metal_init" 'the shim arm did not take the simdgroup paths \(ggml_metal_init: simdgroup matrix mul\. is not true\)' "$T/.out"
nrec=$(records)
head -c 30000 /dev/urandom | od -An -v -tx1 | head -c 20000 >"$T/other.txt"
check_rc "--text FILE" 0 V --text "$T/other.txt" --json
check_has "... is the text hashed and recorded" "\"textSha256\":\"$(sha256sum "$T/other.txt" | cut -c1-64)\"" "$T/.out"
check "... and the guest's scratch directories are all gone" test "$(scratch)" -eq "$n0"

# The gate: llama-server requires validation. A test copy of the data directory adds two
# workloads: "few" (a context too short for statistics) and "plain" (requires none).
D=$T/data
mkdir -p "$D"
ln -s "$TOP/guest-payload" "$TOP/build" "$D/"
cp -R "$TOP/manifests" "$D/manifests"
check_has "the shipped llama-server workload requires validation" '"requireValidation": true' "$TOP/manifests/workloads/llama-server.json"
sed 's/"context": 512/"context": 128/' "$D/manifests/workloads/llama-server.json" >"$D/manifests/workloads/few.json"
sed -i 's/"id": "llama-server"/"id": "few"/' "$D/manifests/workloads/few.json"
sed -e 's/"id": "llama-server"/"id": "plain"/' -e '/"requireValidation"/d' "$D/manifests/workloads/llama-server.json" \
	>"$D/manifests/workloads/plain.json"
# A profile whose ceiling is Apple6: the shim is active, but the device it makes has no Apple7,
# so llama.cpp takes no simdgroup kernels and the shim arm computes what the stock arm did.
sed -e 's/"id": "m1-ultra-tahoe-26.5"/"id": "apple6"/' -e 's/"appleFamilyMax": 1009/"appleFamilyMax": 1006/' \
	"$TOP/manifests/profiles/m1-ultra-tahoe-26.5.json" >"$D/manifests/profiles/apple6.json"
export LUME_METAL_DATADIR="$D"
check_rc "a profile whose ceiling is Apple6 (the shim active, no Apple7) fails" 1 \
	lm validate tahoe-v --target linux-sim --profile apple6 --model "$G/model.gguf" --image img-6 --json
check_grep "... validation-failed: nothing was compared" '"state":"validation-failed".*"reasons":\["the shim arm did not take the simdgroup paths' "$T/.out"
check_grep "... the shim arm's device is Apple6, without simdgroup matrix" \
	'"shimMetal":\{[^}]*"apple_family":1006[^}]*"simdgroup_matrix_mul":false' "$T/.out"
check_grep "... naming why: the shim was active with the ceiling Apple6" \
	'nothing was compared; the shim said: active in llama-perplexity \(AppleParavirtDevice\): appleFamilyMax=1006 ' "$T/.out"
guest tahoe-w 127.0.0.14 || exit 1
W=$T/g/tahoe-w/home
cp "$G/model.gguf" "$W/model.gguf"

check_rc "too few positions (context 128, one chunk: 63)" 1 lm validate tahoe-v --target linux-sim --workload few \
	--model "$G/model.gguf" --chunks 1 --image few
check_grep "... is an error that says to raise --chunks, not a pass" 'failed: llama-perplexity printed no statistics block.*raise --chunks' "$T/.out"

check_rc "deploy of a workload that requires validation, unvalidated version: refused" 3 \
	lm deploy tahoe-w --target linux-sim --image img-a --accept-new
check_has "... with the exact command to run" "this workload requires validation and this image version has no validate record; validate it first: lume-metal validate tahoe-w --workload llama-server --target linux-sim --model PATH" "$T/.out"
check "... and nothing installed" test ! -e "$(root tahoe-w)/current"
check_rc "--validate-workload without --model is a usage error" 2 \
	lm deploy tahoe-w --target linux-sim --image img-a --validate-workload
check_rc "deploy --validate-workload validates first, then deploys" 0 \
	lm deploy tahoe-w --target linux-sim --image img-a --validate-workload --model "$W/model.gguf" --json
check_grep "... deployed, with the validation's figures" '"state":"deployed".*"meanKld":0\.000412' "$T/.out"
check "... and installed" test -L "$(root tahoe-w)/current"
check_rc "another VM of the validated version deploys without validating" 0 \
	lm deploy tahoe-v --target linux-sim --image img-a --json
check_grep "... deployed" '"state":"deployed"' "$T/.out"
if grep -q '"validation"' "$T/.out"; then not_ok "... without running llama-perplexity"; else ok "... without running llama-perplexity"; fi
check_rc "validate a version whose kernels are broken" 1 \
	lm validate tahoe-v --target linux-sim --model "$G/model.gguf" --image img-b --llama-perplexity "$(sim llama-perplexity bad-kld)"
check_rc "... its deploys are refused, --force too" 3 lm deploy tahoe-w --target linux-sim --image img-b --force
check_grep "... naming the failed record and its VM" "last validate record failed: VM tahoe-v .*mean KLD 1\.873412 is above 0\.01" "$T/.out"
check_rc "a passing validate then lets it through" 0 \
	lm validate tahoe-v --target linux-sim --model "$G/model.gguf" --image img-b
check_rc "... deploy" 0 lm deploy tahoe-w --target linux-sim --image img-b --force
check_rc "two VMs of one unvalidated version in one run" 0 \
	lm deploy tahoe-v tahoe-w --target linux-sim --image img-p --validate-workload --model "$G/model.gguf" --force --json
cp "$T/.out" "$T/two.out"
check "... both pass the gate" test "$(grep -Ec '"state":"(deployed|unchanged)"' "$T/two.out")" -eq 2
check "... one of them validated, the other read its record" test "$(grep -c '"meanKld"' "$T/two.out")" -eq 1
ledger_docs "$T/state" "$T/docs"
check "... one validate record for the version" sh -c 'grep -l "\"img-p\"" "$1"/*.json | xargs cat | grep -c "\"kind\":[[:space:]]*\"validate\"" | grep -qx 1' - "$T/docs"
check_rc "two VMs of a version whose kernels are broken, in one run" 1 \
	lm deploy tahoe-v tahoe-w --target linux-sim --image img-q --validate-workload --model "$G/model.gguf" --force \
	--llama-perplexity "$(sim llama-perplexity bad-kld)" --json
cp "$T/.out" "$T/two.out"
check "... one fails validation" test "$(grep -c '"state":"validation-failed"' "$T/two.out")" -eq 1
check_grep "... the other is refused by its verdict, without running it again" '"state":"refused".*mean KLD 1\.873412 is above 0\.01 \(in this run\)' "$T/two.out"
check_rc "a workload without requireValidation deploys unvalidated" 0 \
	lm deploy tahoe-w --target linux-sim --workload plain --image img-c --force
unset LUME_METAL_DATADIR
t_done

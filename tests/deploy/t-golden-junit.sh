#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# golden --format junit: one testsuite, one testcase per step of golden's result, each as its
# "steps" entry says (done passed, failed a failure, skipped or planned skipped), checked by
# `xmllint --schema tests/junit.xsd` and read back by junitparser. A build that publishes (a
# REAL registry on loopback, tests/registry.sh), one whose validation fails (the shim cannot
# change the bad guest's simulated device: the deploy step fails with its cause) and a dry run.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
. "$TOP/tests/outputs/junit.sh"
HOME=$T/home LUME_SIM_REGISTRY_HTTP=1 GITHUB_USERNAME=lume GITHUB_TOKEN=s3cret-test
export HOME LUME_SIM_REGISTRY_HTTP GITHUB_USERNAME GITHUB_TOKEN
unset XDG_CONFIG_HOME GHCR_USERNAME GHCR_TOKEN LUME_SIM_IP LUME_LOG_LEVEL
mkdir -p "$HOME"
R=127.0.0.153:$PORT
t_defer "sh '$TOP/tests/registry.sh' stop '$T/reg'"
sh "$TOP/tests/registry.sh" start "$T/reg" 127.0.0.153 "$PORT" --htpasswd lume:s3cret-test || exit 1
# The build VMs' guests (each build VM answers at LUME_SIM_IP); the source, a stopped VM.
for g in good:127.0.0.151 bad:127.0.0.152; do
	mkdir -p "$T/g/${g%%:*}" && cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/${g%%:*}/"
	t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/${g%%:*}'"
done
sh "$TOP/tests/sshd.sh" start "$T/g/good" 127.0.0.151 "$PORT" &&
	sh "$TOP/tests/sshd.sh" start "$T/g/bad" 127.0.0.152 "$PORT" --env LUME_METAL_SIM_WRONG_TYPES=1 || exit 1
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" src stopped null null --folder "$HOME/.lume" --disk-kib 64
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1
A=$(cut -c1-64 "$T/a.tar.gz.sha256")
golden() { lm golden --payload "$T/a.tar.gz" --accept-new --wait 10 --registry "$R" --organization org "$@"; }

LUME_SIM_IP=127.0.0.151 golden src shim:1 --build-vm b1 --model "$VMODEL" --format junit >"$T/g1.xml" 2>"$T/g1.err"
check "a golden build that publishes, --format junit: exit 0" test $? -eq 0
junit "golden" "$T/g1.xml"
check_grep "... one suite named by the reference" "^suite lume-metal golden: $R/org/shim:1\\|tests=[0-9]+\\|failures=0\\|errors=0\\|" "$T/g1.xml.read"
for s in clone run ssh deploy workload stamp stop push digest record delete; do
	check_grep "... step $s passed" "^case [^|]*\\|$s\\|lume-metal\\.golden\\|[0-9.]+\\|pass\\|" "$T/g1.xml.read"
done
check_grep "... attach skipped (no signing key), its reason the message" '^case [^|]*\|attach\|lume-metal\.golden\|[0-9.]+\|skipped\|skipped\|.*sign' "$T/g1.xml.read"
check_grep "... the pushed digest a property" '^property [^|]*\|digest=sha256:[0-9a-f]{64}$' "$T/g1.xml.read"
check_grep "... the payload" "^property [^|]*\\|payload=$A\$" "$T/g1.xml.read"
check_grep "... the state" '^property [^|]*\|state=published$' "$T/g1.xml.read"
check "... as many testcases as golden's JSON has steps" test "$(grep -c '^case ' "$T/g1.xml.read")" -eq \
	"$(grep -o '<testcase ' "$T/g1.xml" | wc -l)"

LUME_SIM_IP=127.0.0.152 golden src shim:bad --build-vm b2 --model "$VMODEL" --format junit >"$T/g2.xml" 2>"$T/g2.err"
check "a golden build whose validation fails, --format junit: exit 1" test $? -eq 1
junit "a failed golden" "$T/g2.xml"
check_grep "... the deploy step a failure" '^case [^|]*\|deploy\|lume-metal\.golden\|[0-9.]+\|failure\|failed\|' "$T/g2.xml.read"
check_grep "... its text the deploy's result: the state" '^text [^|]*\|deploy\|state: validation-failed$' "$T/g2.xml.read"
check_grep "... and the cause (the image version)" '^text [^|]*\|deploy\|cause: image$' "$T/g2.xml.read"
check_grep "... the VM's differences from the profile" '^text [^|]*\|deploy\|differences: .*maxThreadgroupMemoryLength' "$T/g2.xml.read"
check_grep "... the state a property" '^property [^|]*\|state=validation-failed$' "$T/g2.xml.read"
if grep -q '^case [^|]*|push|' "$T/g2.xml.read"; then not_ok "... and no push step (nothing pushed)"; else ok "... and no push step (nothing pushed)"; fi

golden src shim:2 --build-vm b3 --model "$VMODEL" --dry-run --format junit >"$T/g3.xml" 2>"$T/g3.err"
check "golden --dry-run --format junit: exit 0" test $? -eq 0
junit "a dry run" "$T/g3.xml"
check "... every step skipped (planned), none run" sh -c 'test "$(grep -c "^case " "$1")" -gt 5 &&
	! grep "^case " "$1" | grep -qv "|skipped|planned|"' - "$T/g3.xml.read"
check_grep "... the message the step's command" '^case [^|]*\|clone\|[^|]*\|[0-9.]+\|skipped\|planned\|[^|]*lume clone src b3$' "$T/g3.xml.read"
t_done

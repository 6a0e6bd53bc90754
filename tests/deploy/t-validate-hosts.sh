#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# validate --hosts: three Mac hosts (real sshd, the simulated lume), five guests behind them, three
# image versions (a version is the digest and the Mac's chip and build): one VM of each version
# runs llama-perplexity's two arms and records once; the others report its verdict, naming it.
# Each guest's llama-perplexity is a wrapper that logs every run to $T/ppl.log and runs the
# simulated one in the mode $T/mode-DIR says (bad-kld: broken kernels; fail: the stock arm exits 1).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

D1=sha256:1111111111111111111111111111111111111111111111111111111111111111
D2=sha256:2222222222222222222222222222222222222222222222222222222222222222
mac() { # NAME ADDR CHIP BUILD
	mkdir -p "$T/g/$1" "$T/lume-$1"
	cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/$1/"
	t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/$1'"
	sh "$TOP/tests/sshd.sh" start "$T/g/$1" "$2" "$PORT" --path "$TOP/tests/lume-sim" \
		--env "LUME_SIM_DIR=$T/lume-$1" --env "LUME_METAL_SIM_CPU_BRAND=$3" --env "LUME_METAL_SIM_OS_BUILD=$4"
}
on() { # MAC VM ADDR DIR DIGEST
	mkdir -p "$T/ppl-$4"
	cat >"$T/ppl-$4/llama-perplexity" <<SH
#!/bin/sh
case " \$* " in *" --kl-divergence "*) arm=shim ;; *) arm=stock ;; esac
echo "$4 \$arm" >>"$T/ppl.log"
mode=\$(cat "$T/mode-$4" 2>/dev/null)
if [ "\$mode" = fail ] && [ \$arm = stock ]; then echo "main: error: unable to load model" >&2; exit 1; fi
LUME_METAL_SIM_PPL=\$mode exec "$TOP/tests/guest-sim/bin/llama-perplexity" "\$@"
SH
	chmod +x "$T/ppl-$4/llama-perplexity"
	guest "$4" "$3" --path "$T/ppl-$4" && rm "$LUME_SIM_DIR/$4.json" &&
		sh "$TOP/tests/lume-sim/vm.sh" "$T/lume-$1" "$2" running "$3" true --folder "$T/g/$1/home/.lume" --disk-kib 1 &&
		printf '%s\n' "$5" >"$T/g/$1/home/.lume/$2/.manifest-digest"
}
mac mac1 127.0.0.181 "Apple M1 Ultra" 25G11 && mac mac2 127.0.0.182 "Apple M1 Ultra" 25G11 &&
	mac mac3 127.0.0.183 "Apple M4 Max" 25G22 || exit 1
on mac1 tahoe-a 127.0.0.184 a1 "$D1" && on mac1 tahoe-b 127.0.0.185 b1 "$D2" && on mac2 tahoe-a 127.0.0.186 a2 "$D1" &&
	on mac2 tahoe-b 127.0.0.187 b2 "$D2" && on mac3 tahoe-a 127.0.0.188 a3 "$D1" || exit 1
printf '%s@127.0.0.18%s:%s\n' "$ME" 1 "$PORT" "$ME" 2 "$PORT" "$ME" 3 "$PORT" >"$T/hosts"
echo bad-kld >"$T/mode-b1" && echo bad-kld >"$T/mode-b2"
: >"$T/ppl.log"
V() { lm validate --hosts "$T/hosts" --lume /nonexistent --target linux-sim --model "$VMODEL" --timeout "$VTIMEOUT" "$@"; }
# runs DIR...: the arms run in those guests, as "stock shim" sorted ("shim stock" for a pair).
runs() { for d in "$@"; do grep "^$d " "$T/ppl.log"; done | cut -d' ' -f2 | sort | tr '\n' ' '; }
# line VM: its JSON object in $T/run.out.
line() { grep "^{\"vm\":\"$1\"" "$T/run.out"; }
docs() { ledger_docs "$T/state" "$T/docs" && grep -l '"kind":[[:space:]]*"validate"' "$T"/docs/*.json | wc -l; }

check_rc "validate --hosts: five guests of three image versions, one failing (exit 1)" 1 \
	V --accept-new --evidence "$T/ev" --json
cp "$T/.out" "$T/run.out"
check "... one llama-perplexity pair for the M1 Macs' tahoe-a (one version)" test "$(runs a1 a2)" = "shim stock "
check "... one for their tahoe-b (another digest)" test "$(runs b1 b2)" = "shim stock "
check "... one for the M4's tahoe-a (the same digest on another Mac)" test "$(runs a3)" = "shim stock "
check "... and no other run" test "$(wc -l <"$T/ppl.log")" -eq 6
check "... one validate record per version: three documents" test "$(docs)" -eq 3
check "... each with one record" sh -c 'for f in "$1"/*.json; do
	[ "$(grep -c "\"kind\":[[:space:]]*\"validate\"" "$f")" -eq 1 ] || exit 1; done' - "$T/docs"
check_grep "... the summary: three validated, two failed, by image version" \
	'"summary":\{"validated":3,"validation-failed":2,"total":5,"byImage":\{' "$T/run.out"
check "... the M4's tahoe-a validated itself, with its figures" sh -c \
	'grep "^{\"vm\":\"127.0.0.183/tahoe-a\",\"state\":\"validated\"" "$1" | grep -q "\"meanKld\":0\.000412"' - "$T/run.out"
# first A B: ran, the one of VMs A and B that ran (it has the figures); other, the other one.
first() { if line "$1" | grep -q '"meanKld"'; then ran=$1 other=$2; else ran=$2 other=$1; fi; }
first 127.0.0.181/tahoe-a 127.0.0.182/tahoe-a
check "... of the M1 tahoe-a, $ran validated, with its figures" sh -c 'grep "^{\"vm\":\"$1\"" "$2" |
	grep -q "\"state\":\"validated\".*\"meanKld\":0\.000412"' - "$ran" "$T/run.out"
check "... $other is validated by it, named, without running" sh -c 'grep "^{\"vm\":\"$1\",\"state\":\"validated\"" "$3" |
	grep -F "\"message\":\"its image version was validated on $2 in this run\",\"validatedBy\":\"$2\"" | grep -vq meanKld' \
	- "$other" "$ran" "$T/run.out"
first 127.0.0.181/tahoe-b 127.0.0.182/tahoe-b
check "... of the tahoe-b, $ran failed validation, with the reason" sh -c 'grep "^{\"vm\":\"$1\",\"state\":\"validation-failed\"" "$2" |
	grep -q "\"message\":\"mean KLD 1\.873412 is above 0\.01\""' - "$ran" "$T/run.out"
check "... and $other failed with it, naming it" sh -c 'grep "^{\"vm\":\"$1\",\"state\":\"validation-failed\"" "$3" | grep -F \
	"\"message\":\"its image version failed validation on $2 in this run: mean KLD 1.873412 is above 0.01\",\"validatedBy\":\"$2\"" |
	grep -vq meanKld' - "$other" "$ran" "$T/run.out"
check "... the evidence: a directory for each VM that ran, and only those" test "$(find "$T/ev" -name SHA256SUMS | wc -l)" -eq 3
check "... named after the host and the VM" test -s "$T/ev/127.0.0.183_tahoe-a/shim.stdout"

# A rerun validates again, once per version; the tahoe-b's stock arm now fails on mac1 (nothing
# recorded), so mac2's tahoe-b is skipped. --parallel 1 and --order input: a set order, as text.
echo fail >"$T/mode-b1"
: >"$T/ppl.log"
check_rc "a rerun, as text, in input order, one at a time (exit 1)" 1 V --parallel 1 --order input
cp "$T/.out" "$T/text.out"
check "... again one pair per version, and one stock arm for the tahoe-b" test "$(runs a1 a2 b1 b2 a3)" = "shim shim stock stock stock "
check_grep "... mac1's tahoe-a ran, its figures on its line" \
	'^127\.0\.0\.181/tahoe-a +validated +mean KLD 0\.000412, same top token 99\.214%, PPL\(Q\)/PPL\(base\) 1\.000231$' "$T/text.out"
check_grep "... mac1's tahoe-b could not run" '^127\.0\.0\.181/tahoe-b +failed +llama-perplexity \(stock arm\) exited 1: main: error: unable to load model$' "$T/text.out"
check_grep "... mac2's tahoe-a is validated by it" '^127\.0\.0\.182/tahoe-a +validated +its image version was validated on 127\.0\.0\.181/tahoe-a in this run$' "$T/text.out"
check_grep "... mac2's tahoe-b is skipped, saying why" '^127\.0\.0\.182/tahoe-b +skipped +not validated: 127\.0\.0\.181/tahoe-b, of the same image version, ran first in this run and recorded no verdict; run validate again$' "$T/text.out"
check "... every line in the hosts file's order" test "$(sed -n 's/^\(127[^ ]*\) .*/\1/p' "$T/text.out" | tr '\n' ' ')" = \
	"127.0.0.181/tahoe-a 127.0.0.181/tahoe-b 127.0.0.182/tahoe-a 127.0.0.182/tahoe-b 127.0.0.183/tahoe-a "
check_grep "... and the summary" '^# 5 VM\(s\): validated 3 failed 1 skipped 1 ' "$T/text.out"
rm "$T/mode-b1" "$T/mode-b2"
check_rc "once every version passes (exit 0)" 0 V --json
check_grep "... all five validated" '"summary":\{"validated":5,"total":5,' "$T/.out"
check_rc "--evidence DIR that exists is refused before anything runs (exit 2)" 2 V --evidence "$T/ev"
check_grep "... naming it" "validate: --evidence $T/ev: already exists" "$T/.out"
check_rc "--hosts without --model is a usage error (exit 2)" 2 lm validate --hosts "$T/hosts" --target linux-sim
check_rc "two VMs without --hosts are still refused (exit 2)" 2 lm validate a1 a2 --model "$VMODEL"
check_grep "... saying --hosts takes many" 'takes exactly one VM .*, or --hosts FILE' "$T/.out"
t_done

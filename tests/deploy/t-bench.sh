#!/bin/sh
# shellcheck disable=SC1091,SC2016,SC2030,SC2031 # sourced libs; single-quoted $ is for the inner sh; mac_bench sets PATH in its subshell only
# bench against a real sshd guest with the simulated llama-bench (tests/guest-sim/bin), whose
# figures follow the shim's variables in its environment: the shim arm must really run through
# the installed release's run-with-shim for its figures to differ.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

# $T/hostile comes first on the guest's PATH: empty until the hostile-guest checks at the end.
mkdir -p "$T/hostile"
guest tahoe-b 127.0.0.11 --path "$T/hostile" || exit 1
G=$T/g/tahoe-b/home
head -c 20000 /dev/urandom >"$G/model.gguf"
B() { lm bench tahoe-b --model "$G/model.gguf" -r 5 "$@"; }

check_rc "bench before any deploy fails" 1 B --accept-new
check_grep "... saying to deploy first" 'no lume-metal release is current in the guest; deploy first' "$T/.out"
validated "validate the guests' image version (llama-server requires it)" tahoe-b
check_rc "deploy" 0 lm deploy tahoe-b --target linux-sim

check_rc "bench" 0 B --evidence "$T/ev" --json
check_grep "... is benchmarked" '"state":"benchmarked"' "$T/.out"
check_grep "... the stock arm took the Apple5 path" '"stock":\{[^}]*"apple_family":1005' "$T/.out"
check_grep "... the shim arm Apple9 with simdgroup matrix" '"shim":\{[^}]*"apple_family":1009' "$T/.out"
check_grep "... and it says the shim was effective" '"shim_effective":true' "$T/.out"
check_has "... the guest's llama-bench and model are hashed" "\"modelSha256\":\"$(sha256sum "$G/model.gguf" | cut -c1-64)\"" "$T/.out"
check "the evidence has every arm's raw output, the table and metadata" sh -c 'cd "$1" &&
	for f in stock.json stock.stderr shim.json shim.stderr results.csv metadata.md SHA256SUMS; do test -s "$f" || exit 1; done' - "$T/ev"
check "... and SHA256SUMS verifies it" sh -c 'cd "$1" && sha256sum -c --quiet SHA256SUMS' - "$T/ev"
# metadata.md's host line is the Mac that runs the VM, as the ledger key has it: here this
# machine as the Mac (only the simulated sysctl on PATH, an M2 Max's values), never the
# controller's own CPU and kernel.
mkdir -p "$T/macbin"
ln -s "$TOP/tests/guest-sim/bin/sysctl" "$T/macbin/sysctl"
mac_bench() (
	export PATH="$T/macbin:$PATH" LUME_METAL_SIM_CPU_BRAND="Apple M2 Max" LUME_METAL_SIM_HW_MODEL="Mac14,13" \
		LUME_METAL_SIM_OS_VERSION=26.6 LUME_METAL_SIM_OS_BUILD=25G99
	B "$@"
)
check_rc "bench with this machine as the Mac" 0 mac_bench --evidence "$T/ev-mac"
check_grep "... metadata.md names that Mac, from the key's host part" '^- host: Apple M2 Max, Mac14,13, macOS 26\.6 \(25G99\) \[local\]$' "$T/ev-mac/metadata.md"
check_grep "... and without a Mac to ask, says the chip is the guest's" '^- host: Apple M1 Ultra \(Virtual\), \?, macOS \? \(\?\) \[guest: ' "$T/ev/metadata.md"
check_grep "results.csv has the published columns" "^workload,metric,unit,host_baremetal,stock_guest,safe_shim_guest,guest_ratio,shim_to_host_percent\$" "$T/ev/results.csv"
check_grep "... and the medians and ratio of the simulated run" ',pp512,tokens/s,,431\.86,4786\.7,11\.0839,$' "$T/ev/results.csv"
check_rc "report reads the evidence back" 0 "$LM" report stock="$T/ev/stock.json" shim="$T/ev/shim.json" --csv
cp "$T/.out" "$T/report.csv"
check "... to the same CSV" diff -u "$T/ev/results.csv" "$T/report.csv"
check_rc "report --ledger" 0 "$LM" report --ledger --state "$T/state"
check_grep "... shows the recorded run" 'pp512 +431\.86 +4786\.70' "$T/.out"

# The bare-metal arm runs on this host (the simulation's host figures).
check_rc "bench --host-baseline" 0 env LUME_METAL_SIM_BENCH=host PATH="$TOP/tests/guest-sim/bin:$PATH" \
	"$LM" bench tahoe-b --model "$G/model.gguf" -r 5 --host-baseline --lume "$TOP/tests/lume-sim/lume" --port "$PORT" \
	-u "$ME" -i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state" --json
check_grep "... shim as a share of bare metal" '"shim_to_host_percent":98\.24' "$T/.out"
mkdir -p "$T/hostmodels" && head -c 20000 /dev/urandom >"$T/hostmodels/model.gguf"
records() { ledger_text "$T/state" | grep -c '"kind":[[:space:]]*"bench"'; }
nrec=$(records)
check_rc "a host model that differs from the guest's is refused" 1 env LUME_METAL_SIM_BENCH=host PATH="$TOP/tests/guest-sim/bin:$PATH" \
	"$LM" bench tahoe-b --model "$G/model.gguf" -r 5 --host-baseline --host-model "$T/hostmodels/model.gguf" --lume "$TOP/tests/lume-sim/lume" \
	--port "$PORT" -u "$ME" -i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state"
check_grep "... saying so" "the guest's model and this host's differ" "$T/.out"
check "... and records nothing" test "$(records)" -eq "$nrec"
check_rc "--allow-different-model compares them anyway" 0 env LUME_METAL_SIM_BENCH=host PATH="$TOP/tests/guest-sim/bin:$PATH" \
	"$LM" bench tahoe-b --model "$G/model.gguf" -r 5 --host-baseline --host-model "$T/hostmodels/model.gguf" --allow-different-model \
	--lume "$TOP/tests/lume-sim/lume" --port "$PORT" -u "$ME" -i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state"

# A wrapper with another name: run-with-shim scopes the shim to the wrapper, so llama-bench,
# its child, stays stock. That is reported, not counted as a speedup.
printf '#!/bin/sh\nexec llama-bench "$@"\n' >"$G/bench-wrapper" && chmod +x "$G/bench-wrapper"
check_rc "a shim arm that took the stock path is exit 1" 1 B --llama-bench "$G/bench-wrapper" --json
check_grep "... as shim-not-effective" '"state":"shim-not-effective"' "$T/.out"

check_rc "a missing model is a usage error" 2 lm bench tahoe-b --model "$G/nope.gguf"
check_grep "... naming it" "model not found in the guest: $G/nope.gguf" "$T/.out"
printf '#!/bin/sh\necho "main: error: failed to load model" >&2\nexit 1\n' >"$G/lb-fails" && chmod +x "$G/lb-fails"
check_rc "a llama-bench that exits 1" 1 B --llama-bench "$G/lb-fails"
check_grep "... fails, with its last words" 'llama-bench \(stock arm\) exited 1: main: error: failed to load model' "$T/.out"
printf '#!/bin/sh\nkill -KILL $$\n' >"$G/lb-killed" && chmod +x "$G/lb-killed"
check_rc "a llama-bench killed by a signal" 1 B --llama-bench "$G/lb-killed"
check_grep "... fails, saying so" 'killed by SIGKILL' "$T/.out"
printf '#!/bin/sh\necho "[{\\"n_prompt\\": 512,"\n' >"$G/lb-garbage" && chmod +x "$G/lb-garbage"
check_rc "JSON that does not parse" 1 B --llama-bench "$G/lb-garbage"
check_grep "... fails, naming the arm" 'stock\.json' "$T/.out"
check_rc "two samples are refused" 1 lm bench tahoe-b --model "$G/model.gguf" -r 2
check_grep "... naming the minimum" 'stock\.json.*(3|min)' "$T/.out"
check_rc "... unless --min-samples allows them" 0 lm bench tahoe-b --model "$G/model.gguf" -r 2 --min-samples 2
check_rc "an evidence directory that exists is refused" 1 B --evidence "$T/ev"
check_grep "... naming it" 'ev: already exists' "$T/.out"
# A hostile guest answers the hash step with anything: its sh prints $HOME/hostile-hashes for
# that step and runs every other command. Each answer is refused without a crash.
printf '#!/bin/sh\ncase $* in *"shasum -a 256"*) cat "$HOME/hostile-hashes"; exit 0 ;; esac\nexec /bin/sh "$@"\n' \
	>"$T/hostile/sh" && chmod +x "$T/hostile/sh"
hostile() { # NAME: the output in $G/hostile-hashes is refused, the tool saying why, not crashing
	check_rc "hostile hash output, $1: bench fails" 1 B
	check_grep "... saying so" 'tahoe-b: failed: (the guest.s hash step printed no llama-bench path|shasum in the guest printed no SHA-256)' "$T/.out"
	if grep -Eq 'AddressSanitizer|runtime error|SEGV' "$T/.out"; then not_ok "... without a crash"; sed 's/^/#   /' "$T/.out"; else ok "... without a crash"; fi
}
head -c 150 /dev/zero | tr '\0' A >"$G/hostile-hashes"
hostile "150 bytes and no newline"
{ head -c 200 /dev/zero | tr '\0' A; echo; } >"$G/hostile-hashes"
hostile "a line of 200 bytes"
{ head -c 5000 /dev/zero | tr '\0' A; printf '\n%s\n' 0123; } >"$G/hostile-hashes"
hostile "a first line of 5000 bytes"
printf '/bin/true\n' >"$G/hostile-hashes"
hostile "the path alone"
rm -f "$T/hostile/sh"

# A real Mac's non-login SSH shell has PATH /usr/bin:/bin:/usr/sbin:/sbin, and Homebrew's
# llama-bench is in /opt/homebrew/bin. This guest's sshd runs in a private mount namespace with
# a tmpfs on /opt holding /opt/homebrew/bin/llama-bench, and the simulated commands bound over
# tests/guest-sim/bin without llama-bench: the host's /opt is never touched, and llama-bench is
# on the guest's PATH nowhere. That copy finds the tree's probe through LUME_METAL_SIM_PROBE.
if [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2>/dev/null; then
	mkdir -p "$T/simbin" "$T/g/tahoe-brew"
	for f in "$TOP"/tests/guest-sim/bin/*; do [ "${f##*/}" = llama-bench ] || cp -p "$f" "$T/simbin/"; done
	cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/tahoe-brew/"
	t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/tahoe-brew'"
	unshare -m --propagation private sh -c 'mount -t tmpfs lm-opt /opt && mkdir -p /opt/homebrew/bin &&
		cp -p "$1/bin/llama-bench" /opt/homebrew/bin/ && cp -p "$1/metal-device.sh" /opt/homebrew/ &&
		mount --bind "$2" "$1/bin" && shift 2 && exec sh "$@"' - "$TOP/tests/guest-sim" "$T/simbin" \
		"$TOP/tests/sshd.sh" start "$T/g/tahoe-brew" 127.0.0.12 "$PORT" \
		--env "LUME_METAL_SIM_PROBE=$TOP/build/linux/lume-metal-probe" || exit 1
	sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" tahoe-brew running 127.0.0.12 true
	Gb=$T/g/tahoe-brew/home
	head -c 20000 /dev/urandom >"$Gb/model.gguf"
	check_rc "a guest whose llama-bench is only in /opt/homebrew/bin: deploy" 0 lm deploy tahoe-brew --target linux-sim --accept-new
	check_rc "... bench finds it there" 0 lm bench tahoe-brew --model "$Gb/model.gguf" -r 5 --json
	check_grep "... and benchmarks with it" '"state":"benchmarked".*"llamaBench":"/opt/homebrew/bin/llama-bench"' "$T/.out"
	check_rc "a name in none of /opt/homebrew/bin, /usr/local/bin and PATH is a usage error" 2 \
		lm bench tahoe-brew --model "$Gb/model.gguf" --llama-bench lm-no-such-bench
	check_grep "... saying where it looked" 'llama-bench not found in the guest: lm-no-such-bench \(looked in /opt/homebrew/bin:/usr/local/bin and PATH\)' "$T/.out"
else
	ok "# skip /opt/homebrew/bin in the guest needs root and a private mount namespace (unshare -m)"
fi
t_done

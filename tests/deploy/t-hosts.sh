#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# Many Mac hosts: real sshd "hosts" (AllowTcpForwarding, the simulated lume listing their
# guests) and real sshd guests behind them, reached only through each host's one session.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

# mac NAME ADDR: a Mac host whose lume lists the VMs in $T/lume-NAME.
mac() {
	mkdir -p "$T/g/$1" "$T/lume-$1"
	cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/$1/"
	t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/$1'"
	sh "$TOP/tests/sshd.sh" start "$T/g/$1" "$2" "$PORT" --path "$TOP/tests/lume-sim" \
		--env "LUME_SIM_DIR=$T/lume-$1" --loglevel DEBUG1
}
# on HOST VM ADDR DIR: guest VM at ADDR served from $T/g/DIR, listed by HOST's lume (and not
# by this machine's). Both hosts have a tahoe-a and a tahoe-b, as real Macs would.
on() { guest "$4" "$3" && rm "$LUME_SIM_DIR/$4.json" && sh "$TOP/tests/lume-sim/vm.sh" "$T/lume-$1" "$2" running "$3" true; }

mac mac1 127.0.0.41 && mac mac2 127.0.0.42 || exit 1
on mac1 tahoe-a 127.0.0.43 a1 && on mac1 tahoe-b 127.0.0.44 b1 && on mac2 tahoe-a 127.0.0.45 a2 &&
	on mac2 tahoe-b 127.0.0.46 b2 || exit 1
printf '# the two Macs\n%s@127.0.0.41:%s\n\n%s@127.0.0.42:%s  # second\n' "$ME" "$PORT" "$ME" "$PORT" >"$T/hosts"
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null
A=$(cut -c1-64 "$T/a.tar.gz.sha256")
cur() { readlink "$(root "$1")/current" 2>/dev/null || echo none; }

check_rc "deploy --hosts: two hosts with two guests each (exit 0)" 0 \
	env ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=connect -o "$T/strace" "$LM" deploy --hosts "$T/hosts" --lume /nonexistent --port "$PORT" \
	-u "$ME" -i "$T/id_ed25519" --known-hosts "$T/known_hosts" --state "$T/state" --payload "$T/a.tar.gz" \
	--accept-new --validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" --json
cp "$T/.out" "$T/deploy.out"
check_grep "... every guest deployed, named by its host" '"summary":\{"deployed":4,"total":4,' "$T/deploy.out"
check "... after one validation of their image version (llama-server requires it)" \
	test "$(grep -c '"meanKld"' "$T/deploy.out")" -eq 1
for vm in 127.0.0.41/tahoe-a 127.0.0.41/tahoe-b 127.0.0.42/tahoe-a 127.0.0.42/tahoe-b; do
	check_has "... $vm deployed" "\"vm\":\"$vm\",\"state\":\"deployed\"" "$T/deploy.out"
done
check "... each guest has the payload current" test "$(cur a1) $(cur b1) $(cur a2) $(cur b2)" = \
	"releases/$A releases/$A releases/$A releases/$A"
check "... the controller connected to the two hosts" sh -c 'grep -q "127.0.0.41" "$1" && grep -q "127.0.0.42" "$1"' - "$T/strace"
check "... and to no guest" sh -c '! grep -E "inet_addr\(\"127\.0\.0\.4[3-6]\"\)" "$1"' - "$T/strace"
check "... each host opened a direct-tcpip channel to its own guests" sh -c \
	'grep -q "target 127.0.0.43 port" "$1/mac1/sshd.log" && grep -q "target 127.0.0.44 port" "$1/mac1/sshd.log" &&
	grep -q "target 127.0.0.45 port" "$1/mac2/sshd.log" && ! grep -q "target 127.0.0.45 port" "$1/mac1/sshd.log"' - "$T/g"
check "... guest host keys are known by host and VM, not by the NAT address" grep -q '^127.0.0.41/tahoe-a ' "$T/known_hosts"
ledger_text "$T/state" >"$T/ledger.txt"
check "... the ledger records name the host and the VM" sh -c \
	'tr -d "\n\t " <"$1" | grep -q "\"vm\":\"127.0.0.42/tahoe-b\",\"address\":\"127.0.0.46\",\"host\":\"127.0.0.42\""' - "$T/ledger.txt"

# The same hosts as a JSON inventory, with labels; one host down; one VM stopped.
cat >"$T/hosts.json" <<JSON
{"hosts": [{"name": "mac1", "address": "127.0.0.41", "user": "$ME", "port": $PORT},
 {"name": "mac2", "address": "127.0.0.42", "user": "$ME", "port": $PORT},
 {"name": "mac3", "address": "127.0.0.49", "user": "$ME", "port": $PORT}]}
JSON
sed -i 's/"status" : "running"/"status" : "stopped"/' "$T/lume-mac2/tahoe-b.json"
check_rc "status --hosts with a JSON inventory, a host down and a VM stopped (exit 1)" 1 \
	lm status --hosts "$T/hosts.json" --known-hosts "$T/known_hosts2" --accept-new --json
check_grep "... the reachable guests answer" '"vm":"mac1/tahoe-a","state":"ok"' "$T/.out"
check_grep "... the stopped VM is unreachable, saying so" '"vm":"mac2/tahoe-b","host":"mac2","state":"unreachable","message":"VM tahoe-b on host mac2 is stopped"' "$T/.out"
check_grep "... the down host is unreachable, named" '"vm":"mac3","host":"mac3","state":"unreachable","message":"host mac3: ' "$T/.out"
check_grep "... and counted" '"summary":\{"ok":3,"unreachable":2,"total":5,' "$T/.out"
names() { sed -n 's/^{"vm":"\([^"]*\)".*/\1/p' "$1" | tr '\n' ' '; }
check "... in finishing order: the stopped VM and the down host, known before any VM ran, first" \
	test "$(names "$T/.out" | cut -d' ' -f1-2)" = "mac2/tahoe-b mac3"
check_rc "status --hosts --order input (exit 1)" 1 \
	lm status --hosts "$T/hosts.json" --known-hosts "$T/known_hosts2" --json --order input
cp "$T/.out" "$T/order.out"
check "... the file's order: each host's VMs in its lume ls order, the down host in its place" \
	test "$(names "$T/order.out")" = "mac1/tahoe-a mac1/tahoe-b mac2/tahoe-a mac2/tahoe-b mac3 "
check_has "... the summary lists them so" '"order":["mac1/tahoe-a","mac1/tahoe-b","mac2/tahoe-a","mac2/tahoe-b","mac3"]}}' "$T/order.out"
HOME="$T/g/mac1/home" "$TOP/tests/guest-sim/bin/defaults" write com.apple.gpusw.ParavirtualizedGraphics \
	ForceUnrestrictedDeviceFeatureLevel -bool true
check_rc "host status --hosts: each Mac's preference and VM slots (exit 1: mac3 is down)" 1 \
	lm host status --hosts "$T/hosts.json" --known-hosts "$T/known_hosts2" --json
cp "$T/.out" "$T/host.out"
check_grep "... mac1 has it set, both slots in use" '"host":"mac1","address":"127.0.0.41","state":"ok","value":"true","slotsUsed":2,"slots":2,"running":\["tahoe-a","tahoe-b"\],"vms":2' "$T/host.out"
check_grep "... mac2 has not, one slot in use (tahoe-b is stopped)" '"host":"mac2","address":"127.0.0.42","state":"ok","value":"not set","slotsUsed":1,"slots":2,"running":\["tahoe-a"\],"vms":2' "$T/host.out"
check_grep "... mac3 is unreachable" '"host":"mac3","address":"127.0.0.49","state":"unreachable","message":' "$T/host.out"
check_grep "... and a summary" '^\{"summary":\{"hosts":3,"enabled":1,"failed":1\}\}$' "$T/host.out"
check_rc "host status --hosts as text (exit 0)" 0 lm host status --hosts "$T/hosts" --known-hosts "$T/known_hosts2"
check_grep "... one line per host" '^127\.0\.0\.42: com\.apple\.gpusw\.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel: not set; VM slots in use: 1 of 2 \(tahoe-a\)$' "$T/.out"
check_rc "host enable --hosts is refused (exit 2): it runs on the Mac" 2 lm host enable --hosts "$T/hosts"
check_rc "VM names filter the hosts' VMs" 0 lm status tahoe-a --hosts "$T/hosts" --json
check_grep "... to the two tahoe-a" '"summary":\{"ok":2,"total":2,' "$T/.out"
check_rc "a VM no host lists is unreachable (exit 1)" 1 lm status tahoe-z --hosts "$T/hosts" --json
check_grep "... saying so" '"vm":"tahoe-z","state":"unreachable","message":"VM tahoe-z: no host in ' "$T/.out"
printf 'nobody@127.0.0.41:%s extra\n' "$PORT" >"$T/bad-hosts"
check_rc "a bad hosts line is a usage error (exit 2)" 2 lm status --hosts "$T/bad-hosts"
check_grep "... naming the file and line" 'bad-hosts: line 1: "nobody@127.0.0.41:[0-9]+ extra" is not user@host\[:port\]' "$T/.out"
check_rc "a missing hosts file is a usage error (exit 2)" 2 lm status --hosts "$T/none"

# A Mac whose defaults(1) fails for a reason other than a missing default: host status says it
# failed, naming defaults' own words, and never "not set"; and it asks defaults once, in the
# host's identity exec (no second exec). The stand-in logs each call and fails like a defaults
# that cannot read its preferences (exit 1, no "does not exist").
mkdir -p "$T/brokenbin" "$T/lume-mac4" "$T/g/mac4"
cat >"$T/brokenbin/defaults" <<EOF
#!/bin/sh
# TEST STAND-IN for a failing macOS defaults(1): logs its call, then fails (exit 1).
echo "\$*" >>"$T/defaults.calls"
echo 'defaults: Could not read preferences: Operation not permitted' >&2
exit 1
EOF
chmod +x "$T/brokenbin/defaults"
cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/mac4/"
t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/mac4'"
sh "$TOP/tests/sshd.sh" start "$T/g/mac4" 127.0.0.48 "$PORT" --path "$T/brokenbin:$TOP/tests/lume-sim" \
	--env "LUME_SIM_DIR=$T/lume-mac4" || exit 1
printf '%s@127.0.0.48:%s\n' "$ME" "$PORT" >"$T/hosts4"
check_rc "host status --hosts where defaults fails: failed (exit 1)" 1 \
	lm host status --hosts "$T/hosts4" --known-hosts "$T/known_hosts4" --accept-new --json
check_grep "... saying defaults failed, in its words" '"state":"failed","message":"[^"]*127.0.0.48:[0-9]+: defaults read com.apple.gpusw.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel failed \(exit 1\): defaults: Could not read preferences: Operation not permitted"' "$T/.out"
check "... never \"not set\"" sh -c '! grep -q "not set" "$1"' - "$T/.out"
check "... defaults was run once, in the host's one identity exec" test "$(wc -l <"$T/defaults.calls")" -eq 1

sed -i 's/"status" : "stopped"/"status" : "running"/' "$T/lume-mac2/tahoe-b.json"
check_rc "rollback --hosts goes through the same engine" 0 lm rollback --hosts "$T/hosts" --to none --payload "$T/a.tar.gz" --json
cp "$T/.out" "$T/rollback.out"
check_grep "... every guest rolled back" '"summary":\{"rolled-back":4,"total":4,' "$T/rollback.out"
check "... and nothing is current" test "$(cur a1)$(cur b1)$(cur a2)$(cur b2)" = nonenonenonenone
check_grep "... each showing the stock answers, probed through its host" '"vm":"127.0.0.42/tahoe-b","state":"rolled-back".*"probe":\{[^}]*"stock":\{"probe":"lume-metal-probe"' "$T/rollback.out"
t_done

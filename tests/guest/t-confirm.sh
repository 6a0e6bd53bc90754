#!/bin/sh
# shellcheck disable=SC1091 # sourced libs
# Step 8's confirmation: after the bootstrap, install waits until the process launchd runs (the
# SIMULATED launchd runs it for real: tests/guest-sim/bin/launchctl) has the shim active, by the
# state the shim leaves for its pid, with no exit since. A job that stays stock (a hardened
# program: dyld drops the shim; a process name the shim is not scoped to), aborts (arm64e: dyld
# cannot insert the arm64 shim; a hardened program without disable-library-validation: library
# validation refuses the ad-hoc signed shim), crash-loops or cannot be spawned is reverted: the old
# release and its service are back, running with the shim, and the reason says which; "cause" says
# whether it is the image version's ("image": the shim never seen active in the job, an exit before
# any state included) or this workload's ("workload": it exited or crash-looped after its shim was
# active). --confirm-timeout and --confirm-settle (deploy's) win over the environment's knobs and
# come back in "confirm". The programs are guest-lib.sh's fake Mach-O files; the simulated
# launchctl runs the workload stand-in for them.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"

# The wait for the shim's state is 10 s (a loaded machine), 2 s where it must run out (a hardened
# program: no state ever comes). launchd's respawn is 5 s away (10 s on a Mac): install sees the
# first exit at once, and a respawn sooner would append its own lines to the stderr log before a
# loaded install reads the log's end for its reason (it did, with 0.2 s, on a CI run).
LUME_METAL_SIM_THROTTLE=5 LUME_METAL_CONFIRM_TIMEOUT=10
export LUME_METAL_SIM_THROTTLE LUME_METAL_CONFIRM_TIMEOUT

P=$T/progs
mkdir -p "$P"
macho "$P/arm64" $ARM64 0 2 131074
macho "$P/arm64e" $ARM64 2147483650 2 131074
macho "$P/hardened" $ARM64 0 2 65538
macho "$P/hardened-dyld" $ARM64 0 2 65538 "$(ents allow-dyld-environment-variables)"
macho "$P/hardened-both" $ARM64 0 2 65538 "$(ents allow-dyld-environment-variables disable-library-validation)"
# The library-validation flag (0x2000, CS_REQUIRE_LV) without the hardened runtime: 0x2002.
macho "$P/lv" $ARM64 0 2 8194
macho "$T/shim.dylib" $ARM64 0 6 131074
# A script that crashes a second after it starts. /bin/sh is SIP-protected: the simulated launchd
# purges DYLD_* (LD_PRELOAD with them) there as macOS does, so no shim state comes from it (on
# the old simulation the shim's state in sh, "not in LUME_METAL_PROCESSES", came first). The
# same script under an interpreter outside SIP's paths (a copy of sh, as a Homebrew bash would
# be) gets the shim, whose process is the interpreter, not the script.
printf '#!/bin/sh\nsleep 1\necho "llama-server: cannot load the model" >&2\nexit 3\n' >"$P/crash"
mkdir -p "$P/bin"
cp "$(command -v sh)" "$P/bin/sh"
printf '#!%s\nsleep 30\n' "$P/bin/sh" >"$P/wrapped"
chmod +x "$P/crash" "$P/wrapped"

# wl NAME PROGRAM PROCESS [LIB]: a workload NAME (the default's label, so it replaces that
# service) running PROGRAM, the shim scoped to PROCESS; builds its payload $T/NAME.tar.gz, sets
# SHA. With LIB its LaunchAgent also sets DYLD_INSERT_LIBRARIES=LIB (a workload may not: the
# payload is edited and its sums rewritten), for the simulated dyld of a Mach-O program: the
# linux-sim release itself preloads with LD_PRELOAD. wl_json NAME PROGRAM PROCESS [ENV
# [READINESS]] writes the workload alone, with ENV (a JSON object) as its environment and
# READINESS as its "readiness".
wl_json() {
	mkdir -p "$T/wl"
	printf '{"id":"%s","label":"%s","profile":"m1-ultra-tahoe-26.5","programArguments":["%s","--port","8080"],"processes":["%s"],"stdoutPath":"~/Library/Logs/lume-metal/%s.out.log","stderrPath":"~/Library/Logs/lume-metal/%s.err.log","runAtLoad":true,"keepAlive":true,"throttleInterval":1,"exitTimeOut":5%s%s}\n' \
		"$1" "$LABEL" "$2" "$3" "$1" "$1" "${4:+,\"environment\":$4}" "${5:+,\"readiness\":$5}" >"$T/wl/$1.json"
}
wl() {
	wl_json "$1" "$2" "$3"
	payload "$T/$1.tar.gz" --workload "$T/wl/$1.json" || return 1
	[ $# -ge 4 ] || return 0
	rm -rf "$T/edit"
	unpack "$T/$1.tar.gz" "$T/edit"
	w_old=$(sha256sum <"$T/edit/LaunchAgent.plist" | cut -c1-64)
	sed -i "/<key>EnvironmentVariables<\/key>/{n;a\\
\t\t<key>DYLD_INSERT_LIBRARIES</key>\\
\t\t<string>$4</string>
}" "$T/edit/LaunchAgent.plist"
	w_new=$(sha256sum <"$T/edit/LaunchAgent.plist" | cut -c1-64)
	sed -i "s/$w_old/$w_new/" "$T/edit/MANIFEST.json"
	resum "$T/edit"
	repack "$T/edit" "$T/$1.tar.gz"
}
# alive NAME PID: PID runs (not a zombie).
alive() {
	a_s=""
	IFS= read -r a_s <"/proc/$2/stat" 2>/dev/null
	case ${a_s##*) } in '' | Z*) not_ok "$1 (pid '$2')" ;; *) ok "$1" ;; esac
}
SD=com.trycua.lume-metal.llama-server.shim
DYLD=$T/shim.dylib

# A normal install: the process launchd runs has the shim, and the install says so.
guest ok
payload "$T/a.tar.gz" || not_ok "build payload a"
A=$SHA
install "$T/a.json" "$T/a.tar.gz" "$A"
rc_is "install exits 0" 0
pid=$(svc pid)
jis "the install names the pid launchd runs" "$T/a.json" .process.pid "$pid"
jis "... with the shim active in it" "$T/a.json" .process.shimActive true
jis "... the shim's own state: the process" "$T/a.json" .process.shim.process llama-server
jis "... and its ceiling" "$T/a.json" .process.shim.appleFamilyMax 1009
jis "... no cause: it passed" "$T/a.json" .cause null
jis "... the wait it allowed (the environment's LUME_METAL_CONFIRM_TIMEOUT)" "$T/a.json" .confirm.timeout 10
jis "... and the watch after (LUME_METAL_CONFIRM_SETTLE)" "$T/a.json" .confirm.settle 0
# llama-server's manifest says how to know it serves ("readiness": its /health answers 200): the
# time from the bootstrap to that answer (the simulated server is ready once its device is up).
ms=$(jget "$T/a.json" .readyMs)
check_range "... and the time to ready, from the bootstrap to /health's 200 (ms)" "$ms" 0 10000
alive "... that process runs" "$pid"
check_has "install.json keeps it" "\"process\":{\"pid\":$pid,\"shimActive\":true" "$ROOT/install.json"
check_has "the shim's state is the pid's file under the logs folder" '"active":true' "$HOME/Library/Logs/lume-metal/$SD/$pid"

# reverted NAME PAYLOAD-NAME REASON-ERE CAUSE [install options]: installing it fails with REASON
# and CAUSE, and all is as before: release a current, its service running (a live pid) with the
# shim active.
reverted() {
	r_n=$1 r_p=$2 r_re=$3 r_c=$4
	shift 4
	snapshot --no-pid >"$T/before"
	install "$T/o.json" "$T/$r_p.tar.gz" "$SHA" "$@"
	set -- "$r_n" "$r_p" "$r_re" "$r_c"
	rc_is "$1: install exits 1" 1
	jis "$1: failed" "$T/o.json" .result failed
	jis "$1: cause $4" "$T/o.json" .cause "$4"
	jget "$T/o.json" .reason >"$T/reason" || : >"$T/reason"
	check_grep "$1: the reason" "$3" "$T/reason"
	same "$1: links, releases, LaunchAgent and service as before" "$T/before" --no-pid
	r_pid=$(svc pid)
	alive "$1: the old service runs again" "$r_pid"
	check_has "$1: ... with the shim active" '"active":true' "$HOME/Library/Logs/lume-metal/$SD/$r_pid"
	runs "$1: ... release a" "$A"
}
runs() {
	launchctl print "gui/$UID_SIM/$LABEL" >"$T/p" 2>&1
	check_grep "$1" "LD_PRELOAD => $ROOT/releases/$2/lib" "$T/p"
}

# Each of these is the image version's: the shim never showed active in the job. A crash loop
# that leaves no shim state (the script's sh is protected: no shim) is the ambiguous case: an exit
# before any state is what dyld's abort looks like, so it counts as the image's too.
wl crash "$P/crash" crash
reverted "a crash loop" crash "^the workload launchd runs does not have the shim: $P/crash exited \\(last exit code 3, [0-9]+ runs\\): it crashes; its stderr log ends: .*llama-server: cannot load the model" image
wl wrapped "$P/wrapped" wrapped
reverted "a script under an interpreter SIP does not protect" wrapped "^the workload launchd runs does not have the shim: the shim stays stock in $P/wrapped \\(pid [0-9]+\\): process sh is not in LUME_METAL_PROCESSES\$" image
wl arm64e "$P/arm64e" arm64e "$DYLD"
reverted "an arm64e program (dyld aborts it)" arm64e "^the workload launchd runs does not have the shim: $P/arm64e exited \\(terminated by Abort trap: 6, [0-9]+ runs\\): it crashes; its stderr log ends: dyld\\[[0-9]+\\]: terminating because inserted dylib '$T/shim.dylib' could not be loaded: .*have 'arm64', need 'arm64e'" image
wl hardened "$P/hardened" hardened "$DYLD"
reverted "a hardened program (dyld drops the shim)" hardened "^the workload launchd runs does not have the shim: no shim state from $P/hardened \\(pid [0-9]+, state running\\) within 2 s" image --confirm-timeout 2
jis "... --confirm-timeout 2 won over the environment's 10" "$T/o.json" .confirm.timeout 2
# allow-dyld-environment-variables alone: library validation refuses the ad-hoc signed shim (no
# LC_UUID in this one: dyld's zeros) and dyld aborts the process (install keeps 400 characters
# of its log).
wl hardened-dyld "$P/hardened-dyld" hardened-dyld "$DYLD"
reverted "a hardened program without disable-library-validation (dyld aborts it)" hardened-dyld "^the workload launchd runs does not have the shim: $P/hardened-dyld exited \\(terminated by Abort trap: 6, [0-9]+ runs\\): it crashes; its stderr log ends: dyld\\[[0-9]+\\]: terminating because inserted dylib '$DYLD' could not be loaded: tried: '$DYLD' \\(code signature in <00000000-0000-0000-0000-000000000000> '$DYLD' not valid for use in process: mapping process and mapped file \\(non-platform\\) have different Team IDs\\), '" image
# The library-validation flag alone asks for library validation: dyld aborts it as above.
wl lv "$P/lv" lv "$DYLD"
reverted "a program with the library-validation flag (dyld aborts it)" lv "^the workload launchd runs does not have the shim: $P/lv exited \\(terminated by Abort trap: 6, [0-9]+ runs\\): it crashes; its stderr log ends: dyld\\[[0-9]+\\]: terminating because inserted dylib '$DYLD' could not be loaded: tried: '$DYLD' \\(code signature in <00000000-0000-0000-0000-000000000000> '$DYLD' not valid for use in process: mapping process and mapped file \\(non-platform\\) have different Team IDs\\), '" image
wl named /opt/homebrew/bin/llama-server ollama
reverted "a process the shim is not scoped to" named "^the workload launchd runs does not have the shim: the shim stays stock in /opt/homebrew/bin/llama-server \\(pid [0-9]+\\): process llama-server is not in LUME_METAL_PROCESSES\$" image
wl missing "$T/no-such-server" missing
reverted "a program that does not exist (launchd: EX_CONFIG)" missing "exited \\(last exit code 78: EX_CONFIG, [0-9]+ runs\\)" image

# Before anything live changes, install checks the LaunchAgent's program with run-with-shim
# --check: on macOS (a macos payload, its arm64 shim; uname says Darwin here) an arm64e or a
# hardened program (without either entitlement, or with allow-dyld-environment-variables alone) is
# refused with run-with-shim's reason, whole, and the old service keeps running (same pid).
if [ -f "$TOP/build/macos/liblumemetal.dylib" ] && [ -f "$TOP/build/macos/lume-metal-probe" ]; then
	mkdir -p "$T/darwin"
	printf '#!/bin/sh\necho Darwin\n' >"$T/darwin/uname"
	chmod +x "$T/darwin/uname"
	for c in "arm64e|is arm64e; the shim is arm64 only: dyld would abort it" \
		"hardened|has the hardened runtime without com.apple.security.cs.allow-dyld-environment-variables and com.apple.security.cs.disable-library-validation: dyld would drop the shim and it would run stock" \
		"hardened-dyld|has the hardened runtime without com.apple.security.cs.disable-library-validation: its library validation would refuse the ad-hoc signed shim and dyld would abort it" \
		"lv|is signed with the library-validation flag: dyld admits only libraries signed by Apple or with its Team ID, whatever its entitlements, so it would refuse the ad-hoc signed shim and abort it"; do
		n=${c%%|*}
		wl_json "mac-$n" "$P/$n" "$n"
		payload "$T/mac-$n.tar.gz" --target macos --workload "$T/wl/mac-$n.json"
		snapshot >"$T/before"
		PATH="$T/darwin:$PATH" install "$T/o.json" "$T/mac-$n.tar.gz" "$SHA" --no-validate
		rc_is "--check, $n program: install exits 1" 1
		jget "$T/o.json" .reason >"$T/reason" || : >"$T/reason"
		is_eq "... refused before bootstrap, with the reason" "$(cat "$T/reason")" \
			"the LaunchAgent's program cannot take the shim: $P/$n ${c#*|}"
		same "... the old service untouched (same pid and runs)" "$T/before"
	done
else
	ok "# skip --check before bootstrap: no build/macos shim and probe (make shim with zig)"
fi

# A server that cannot load its model exits soon after its Metal device is up, the shim active:
# install watches it LUME_METAL_CONFIRM_SETTLE seconds more (8 here) and sees the exit. It exits
# 4 s after its device, not the stand-in's 0.3 s: on a loaded machine (four test programs on two
# cores) install's first launchctl print after the shim's state file came later than 0.3 s, and
# later than 1.5 s too, and a pid it never saw running has no .process to check.
wl_json settle /opt/homebrew/bin/llama-server llama-server '{"LM_SIM_WORKLOAD_EXIT":"1","LM_SIM_WORKLOAD_EXIT_AFTER":"4"}'
payload "$T/settle.tar.gz" --workload "$T/wl/settle.json"
snapshot --no-pid >"$T/before"
LUME_METAL_CONFIRM_SETTLE=8 install "$T/o.json" "$T/settle.tar.gz" "$SHA"
rc_is "an exit after the shim is active: install exits 1" 1
jget "$T/o.json" .reason >"$T/reason" || : >"$T/reason"
check_grep "... the reason: it exited, with its log" "^the workload launchd runs does not have the shim: /opt/homebrew/bin/llama-server exited \\((last exit code 1|pid [0-9]+ gone), [0-9]+ runs\\): it crashes; its stderr log ends: .*SIMULATED: failed to load the model" "$T/reason"
jis "... the workload's failure, not the image's: its shim was active" "$T/o.json" .cause workload
jis "... the shim active in the pid it watched" "$T/o.json" .process.shimActive true
jis "... the environment's settle used" "$T/o.json" .confirm.settle 8
same "... links, releases, LaunchAgent and service as before" "$T/before" --no-pid
alive "... the old service runs again" "$(svc pid)"

# A server that exits at once after its device is up crash-loops with the shim active: its
# processes' state says so even when install never saw one of them running (a workload cause).
wl_json loop /opt/homebrew/bin/llama-server llama-server '{"LM_SIM_WORKLOAD_EXIT":"1","LM_SIM_WORKLOAD_EXIT_AFTER":"0"}'
payload "$T/loop.tar.gz" --workload "$T/wl/loop.json"
reverted "a crash loop with the shim active" loop "^the workload launchd runs does not have the shim: /opt/homebrew/bin/llama-server exited \\((last exit code 1|pid [0-9]+ gone), [0-9]+ runs\\): it crashes" workload --confirm-settle 2

# --confirm-settle decides how long install watches: a server that exits 3 s after its device is
# up passes a settle of 0 (the environment's here) and is caught by --confirm-settle 10, which
# wins over the environment (install fails as soon as it sees the exit, not after 10 s).
wl_json late /opt/homebrew/bin/llama-server llama-server '{"LM_SIM_WORKLOAD_EXIT":"1","LM_SIM_WORKLOAD_EXIT_AFTER":"3"}'
payload "$T/late.tar.gz" --workload "$T/wl/late.json"
LATE=$SHA
reverted "exits 3 s after its device, --confirm-settle 10" late "^the workload launchd runs does not have the shim: /opt/homebrew/bin/llama-server exited .*SIMULATED: failed to load the model" workload --confirm-settle 10
jis "... the settle it used: the flag's" "$T/o.json" .confirm.settle 10
install "$T/o.json" "$T/late.tar.gz" "$LATE"
rc_is "... the same with the environment's settle of 0: installed" 0
jis "... the settle it used" "$T/o.json" .confirm.settle 0
install "$T/o.json" "$T/a.tar.gz" "$A"
rc_is "... and back to release a" 0

# Readiness: a workload whose manifest says how to know it serves (llama-server's /health) is
# installed only once that answers 200, within --confirm-timeout from the bootstrap, then settles;
# readyMs is the time to that answer. The simulated server answers 503 while it loads its model
# (LM_SIM_WORKLOAD_READY_AFTER), as llama.cpp's does. One that exits after its device is up but
# before it is ready, or never answers 200, is reverted, the workload's failure (its shim was
# active), even without a settle (the environment's 0 here).
RD='{"url":"http://127.0.0.1:8080/health"}'
wl_json slow /opt/homebrew/bin/llama-server llama-server '{"LM_SIM_WORKLOAD_READY_AFTER":"2"}' "$RD"
payload "$T/slow.tar.gz" --workload "$T/wl/slow.json"
install "$T/o.json" "$T/slow.tar.gz" "$SHA"
rc_is "ready 2 s after its device is up (503 until then): installed" 0
ms=$(jget "$T/o.json" .readyMs)
# (1800: the two mtimes it is timed by come from Linux's coarse clock, which in this VM lags by
# more than its 4 ms tick when a vCPU waits for the hypervisor: 1968 in a loaded run. An install
# that did not wait for the 200 reports the time to the device, a few hundred ms.)
check_range "... readyMs: most of the 2 s it loaded, within the wait of 10" "$ms" 1800 10000
check_has "... its log said it loaded its model before" "main: model loaded" "$HOME/Library/Logs/lume-metal/slow.err.log"
install "$T/o.json" "$T/a.tar.gz" "$A"
rc_is "... and back to release a" 0
wl_json early /opt/homebrew/bin/llama-server llama-server '{"LM_SIM_WORKLOAD_READY_AFTER":"5","LM_SIM_WORKLOAD_EXIT":"1","LM_SIM_WORKLOAD_EXIT_AFTER":"1"}' "$RD"
payload "$T/early.tar.gz" --workload "$T/wl/early.json"
reverted "exits 1 s after its device is up, before it is ready" early "^the workload launchd runs was not ready: /opt/homebrew/bin/llama-server exited \\((last exit code 1|pid [0-9]+ gone), [0-9]+ runs\\) before it answered 200 at http://127.0.0.1:8080/health: it crashes; its stderr log ends: .*SIMULATED: failed to load the model" workload
jis "... no time to ready" "$T/o.json" .readyMs null
wl_json never /opt/homebrew/bin/llama-server llama-server '{"LM_SIM_WORKLOAD_READY_AFTER":"never"}' "$RD"
payload "$T/never.tar.gz" --workload "$T/wl/never.json"
reverted "never ready (503 throughout), --confirm-timeout 2" never "^the workload launchd runs was not ready: /opt/homebrew/bin/llama-server \\(pid [0-9]+\\) did not answer 200 at http://127.0.0.1:8080/health within 2 s of its bootstrap \\(its last answer: HTTP 503\\), the shim active in it\$" workload --confirm-timeout 2

# --mark-settle (deploy's driver, which then goes on with other VMs): once the shim is active and
# the settle begins, two lines before the JSON, the settle's seconds and the mark. They promise
# nothing: a server that exits during the settle is still reverted, the workload's failure, and
# the JSON stays the last line. Without a settle there is no mark.
snapshot --no-pid >"$T/before"
install "$T/o.json" "$T/late.tar.gz" "$LATE" --confirm-settle 10 --mark-settle
rc_is "--mark-settle, a server that exits 3 s into a settle of 10: install exits 1" 1
is_eq "... the settle's two lines first" "$(sed -n 1,2p "$T/o.json" | tr '\n' ' ')" "lume-metal:settle 10 lume-metal:settling "
tail -n 1 "$T/o.json" >"$T/o1.json"
is_json "... then one JSON object, the last line" "$T/o1.json"
jis "... failed" "$T/o1.json" .result failed
jis "... cause workload" "$T/o1.json" .cause workload
same "... links, releases, LaunchAgent and service as before" "$T/before" --no-pid
install "$T/o.json" "$T/late.tar.gz" "$LATE" --confirm-settle 0 --mark-settle
rc_is "--mark-settle with --confirm-settle 0: installed" 0
is_json "... no mark: one JSON object and nothing else" "$T/o.json"
install "$T/o.json" "$T/a.tar.gz" "$A"
rc_is "... and back to release a" 0

# Bad values are usage errors (exit 2) naming them, before anything changes.
for c in "--confirm-timeout 0" "--confirm-timeout 3601" "--confirm-timeout 1x" "--confirm-settle 601" \
	"--confirm-settle -1" "--confirm-settle"; do
	snapshot >"$T/before"
	# shellcheck disable=SC2086 # the flag and its value are two words
	install "$T/o.json" "$T/a.tar.gz" "$A" $c
	rc_is "$c: exit 2" 2
	jget "$T/o.json" .reason >"$T/reason" || : >"$T/reason"
	check_grep "... the reason names it" "^usage: install.sh .*\\($c(: not a whole number| needs seconds)" "$T/reason"
	same "... nothing changed" "$T/before"
done

# An arm64 program with the shim inserted: dyld loads it, the shim is active in the process.
wl arm64 "$P/arm64" arm64 "$DYLD"
install "$T/o.json" "$T/arm64.tar.gz" "$SHA"
rc_is "an arm64 program: install exits 0" 0
jis "an arm64 program: the shim is active in it" "$T/o.json" .process.shimActive true
jis "... in the process named as the program" "$T/o.json" .process.shim.process arm64
status "$T/s.json"
jis "status: the service's pid" "$T/s.json" .service.pid "$(svc pid)"
jis "status: the shim is active in it" "$T/s.json" .service.shimActive true

# A hardened program with both entitlements takes the shim.
wl hardened-both "$P/hardened-both" hardened-both "$DYLD"
install "$T/o.json" "$T/hardened-both.tar.gz" "$SHA"
rc_is "a hardened program with both entitlements: install exits 0" 0
jis "... the shim is active in it" "$T/o.json" .process.shimActive true

# Installed without validation (no confirmation), a process that stays stock shows in status.
wl named /opt/homebrew/bin/llama-server ollama
install "$T/o.json" "$T/named.tar.gz" "$SHA" --no-validate
rc_is "--no-validate: installed without the confirmation" 0
jis "... which it did not make" "$T/o.json" .process null
status "$T/s.json"
jis "status: the shim stays stock in the running process" "$T/s.json" .service.shimActive false
jis "... with the shim's reason" "$T/s.json" .service.shim.reason "process llama-server is not in LUME_METAL_PROCESSES"

# rollback clears the earlier processes' state, as install does (a pid can come again).
rollback "$T/r.json" previous
rc_is "rollback exits 0" 0
is_eq "after rollback: the state folder holds the running pid's file alone" \
	"$(cd "$HOME/Library/Logs/lume-metal/$SD" && echo .[!.]* *)" ".[!.]* $(svc pid)"
t_done

# shellcheck shell=sh
# bench-fleet's account of the simulation's CPU in the guests (sourced by scripts/bench-fleet).
# Every command of tests/guest-sim/bin (the simulated launchctl, plutil, shasum, sw_vers, id,
# sysctl, defaults, codesign, lipo, the llama.cpp tools, and the curl wrapper) is reached in the
# guests through DIR/bin/NAME, first on their PATH: a link to build/simcpu
# (scripts/bench-fleet.d/simcpu.c), which runs the tool, waits for it and appends "NAME USER_US
# SYS_US" to DIR/acct/tools, the CPU of the tool and of everything it waited for (a tool that
# another runs by its path, as launchctl runs lipo and codesign, is in its caller's figure, never
# twice). These run in the guests' sessions, so their CPU is part of the guests' sshd CPU that
# bench-fleet measures. The simulated launchd's supervisors, daemons outside every session that
# stand for launchd (they spawn and wait for the workload), run under simcpu too, as "launchd"
# (LUME_METAL_SIM_CPU, tests/guest-sim/bin/launchctl): their line comes when they exit, after a
# run, when bench-fleet's next reset stops them.

# simcpu_setup DIR: the links in DIR/bin (and simcpu itself), the account folder DIR/acct.
simcpu_setup() {
	mkdir -p "$1/bin" "$1/acct"
	ln -sf "$TOP/build/simcpu" "$1/bin/simcpu"
	for s_t in "$TOP"/tests/guest-sim/bin/*; do
		ln -sf "$TOP/build/simcpu" "$1/bin/${s_t##*/}"
	done
}
# simcpu_take DIR KIND: the account's lines so far taken out (the file renamed, so a line written
# meanwhile starts the next), and of those of KIND ("tools": every name but launchd; "launchd")
# prints the CPU in ms, then NAME=MS per name, on one line.
simcpu_take() {
	s_f=$1/acct/taken.$$
	mv -f "$1/acct/tools" "$s_f" 2>/dev/null || : >"$s_f"
	awk -v kind="$2" '
		(kind == "launchd") != ($1 == "launchd") { next }
		{ t += $2 + $3; per[$1] += $2 + $3 }
		END {
			printf "%d", t / 1000 + 0.5
			for (k in per) printf " %s=%d", k, per[k] / 1000 + 0.5
			print ""
		}' "$s_f"
	rm -f "$s_f"
}

# Sourced by tests/sshd.sh and tests/registry.sh (POSIX sh): stopping a daemon they started.
# pidfile_stop FILE: TERM to the pid in FILE, a wait of up to 5 s until it is gone or a zombie
# (a daemon's parent is init, which may reap it only seconds later), then KILL; FILE removed.
# Nothing to do when FILE does not exist.
pidfile_stop() {
	[ -f "$1" ] || return 0
	p_pid=$(cat "$1")
	kill "$p_pid" 2>/dev/null || true
	p_i=0
	while kill -0 "$p_pid" 2>/dev/null && ! ps -o stat= -p "$p_pid" | grep -q Z && [ $p_i -lt 100 ]; do
		sleep 0.05; p_i=$((p_i + 1))
	done
	kill -9 "$p_pid" 2>/dev/null || true
	rm -f "$1"
}

#!/bin/sh
# shellcheck disable=SC1091,SC2016 # the sourced lib; single-quoted $ is for awk and the deferred cleanup
# The delay proxy bench-fleet --rtt uses (scripts/bench-fleet.d/netdelay.c): bytes arrive intact
# and in order both ways, a round trip takes at least twice the one-way delay, a bandwidth cap
# holds a transfer back, and its log counts the turns (client spoke, then the target answered).
# Only lower bounds on time are checked.
. "$(dirname "$0")/../lib.sh"
ND=$TOP/build/netdelay
[ -x "$ND" ] || make -C "$TOP" -s build/netdelay >/dev/null
port=$((20000 + $$ % 20000))
# An echo server on 127.0.0.1: every byte back, closing after the client's EOF.
cat >"$T/echo.py" <<'PY'
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
open(sys.argv[2], "w").write("up\n")
def serve(c):
    while True:
        b = c.recv(65536)
        if not b:
            break
        c.sendall(b)
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
# The client: mode bulk sends FILE whole and checks the echo equals it; mode ping times N
# one-byte round trips after the connection is up, and the connect-to-first-answer time.
cat >"$T/client.py" <<'PY'
import socket, sys, time, threading
mode, port = sys.argv[1], int(sys.argv[3])
c = socket.create_connection((sys.argv[2], port))
if mode == "bulk":
    data = open(sys.argv[4], "rb").read()
    got = bytearray()
    def rd():
        while True:
            b = c.recv(65536)
            if not b:
                break
            got.extend(b)
    t = threading.Thread(target=rd); t.start()
    t0 = time.monotonic()
    c.sendall(data); c.shutdown(socket.SHUT_WR); t.join()
    print("intact" if bytes(got) == data else "differ %d %d" % (len(got), len(data)))
    print("ms %d" % ((time.monotonic() - t0) * 1000))
else:
    for i in range(int(sys.argv[4])):
        t0 = time.monotonic()
        c.sendall(b"x")
        assert c.recv(1) == b"x"
        print("rt %d" % ((time.monotonic() - t0) * 1000))
    c.shutdown(socket.SHUT_WR)
    c.recv(1)
PY
python3 "$T/echo.py" "$port" "$T/echo.up" 2>"$T/echo.err" &
echo $! >"$T/echo.pid"
t_defer 'kill "$(cat "$T/echo.pid")" 2>/dev/null'
n=0
while [ ! -s "$T/echo.up" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
# start_nd NAME ARGS...: a proxy on 127.0.0.1:$port+N (its ready line awaited).
start_nd() {
	nm=$1
	shift
	"$ND" -l "$T/$nm.log" "$@" >"$T/$nm.out" 2>"$T/$nm.err" &
	echo $! >"$T/$nm.pid"
	t_defer "kill \"\$(cat '$T/$nm.pid')\" 2>/dev/null"
	n=0
	while ! grep -q '^netdelay: ready' "$T/$nm.out" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
}
start_nd d0 -d 0 "127.0.0.1:$((port + 1))=127.0.0.1:$port" "127.0.0.1:$((port + 2))=127.0.0.1:$port"
start_nd d50 -d 50 "127.0.0.1:$((port + 3))=127.0.0.1:$port"
start_nd bw -d 5 -b 8 "127.0.0.1:$((port + 4))=127.0.0.1:$port"
check_grep "netdelay serves two pairs from one process" '^netdelay: ready 2$' "$T/d0.out"

head -c 3000000 /dev/urandom >"$T/blob"
python3 "$T/client.py" bulk 127.0.0.1 $((port + 2)) "$T/blob" >"$T/bulk0" 2>&1
check_grep "3 MB through the proxy and back arrive intact, in order (no delay)" '^intact$' "$T/bulk0"
python3 "$T/client.py" bulk 127.0.0.1 $((port + 3)) "$T/blob" >"$T/bulk50" 2>&1
check_grep "3 MB through the proxy and back arrive intact, in order (50 ms one way)" '^intact$' "$T/bulk50"

python3 "$T/client.py" ping 127.0.0.1 $((port + 3)) 3 >"$T/ping50" 2>&1
check "three round trips at 50 ms one way each take at least 100 ms" \
	awk '/^rt / { n++; if ($2 < 100) bad = 1 } END { exit !(n == 3 && !bad) }' "$T/ping50"
# netdelay logs a connection's line when it closes: wait for the ping's, the second through that
# port after the bulk transfer's (5 s at most).
n=0
while [ "$(grep -c "^conn 127.0.0.1:$((port + 3)) " "$T/d50.log" 2>/dev/null)" -lt 2 ] && [ $n -lt 50 ]; do
	sleep 0.1; n=$((n + 1))
done
check_grep "the log counts the ping connection's 3 turns (and the bytes each way)" \
	"^conn 127.0.0.1:$((port + 3)) up=3 down=3 turns=3$" "$T/d50.log"
python3 "$T/client.py" ping 127.0.0.1 $((port + 1)) 1 >"$T/ping0" 2>&1
check_grep "without delay a round trip still works" '^rt ' "$T/ping0"

head -c 250000 /dev/urandom >"$T/blob2"
python3 "$T/client.py" bulk 127.0.0.1 $((port + 4)) "$T/blob2" >"$T/bulkbw" 2>&1
check_grep "250 kB capped at 8 Mbit/s arrive intact" '^intact$' "$T/bulkbw"
check "250 kB capped at 8 Mbit/s take at least 250 ms" awk '/^ms / { exit !($2 >= 250) }' "$T/bulkbw"

check_rc "a bad pair is refused, exit 2" 2 "$ND" -d 1 "127.0.0.1:$((port + 5))=nowhere"
t_done

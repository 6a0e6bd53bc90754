#!/bin/sh
# Real OpenSSH sshd guests on loopback for the tests.
#   tests/sshd.sh start DIR ADDR PORT [--password] [--rekey]
#       DIR/home is the guest HOME; the guest-sim commands come first on its PATH. Writes the
#       guest's host key, a client key DIR/id_ed25519 that it accepts, and DIR/sshd.pid.
#       --rekey makes a new host key (a rebuilt guest); --home DIR another HOME (it may hold
#       spaces and quotes); --env K=V more environment (e.g. LUME_METAL_SIM_* for the simulated
#       device); --sftp-limit BLOCKS runs the SFTP server under `ulimit -f BLOCKS`, so an upload
#       larger than that kills it mid-transfer (SIGXFSZ), as a guest dying during upload;
#       --fsize-limit BLOCKS runs every session command under `ulimit -f BLOCKS` (ForceCommand), so
#       a payload written on an exec's stdin dies the same way;
#       --path DIR puts DIR first on PATH (a "Mac host" gets the simulated lume this way);
#       --loglevel LEVEL sets sshd's LogLevel (default ERROR) for DIR/sshd.log;
#       --keytype TYPE serves only a host key of that type (ssh-keygen -t: ed25519, the default,
#       ecdsa, rsa), kept in DIR/host_TYPE, as a guest that comes back with another key type.
#   tests/sshd.sh stop DIR      stops that sshd by its pid, and waits for it.
# The login user is whoever runs the tests; sshd's SetEnv gives it the guest's HOME, PATH and
# TMPDIR (DIR/tmp/: a Mac's ssh session has a TMPDIR of its user's own, /var/folders/.../T/, so no
# two guests, nor two tests, share a scratch folder), and
# LUME_METAL_CONFIRM_SETTLE=0: install.sh does not watch the workload on after its shim is seen
# active (tests/guest/t-confirm.sh tests that wait; --env may set it again (sshd takes a
# variable's first SetEnv value: --env comes first), and deploy
# --confirm-settle wins over it: tests/deploy/t-confirm.sh).
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/tests/pidfile.sh"
cmd=$1 dir=$2
case $cmd in
stop)
	pidfile_stop "$dir/sshd.pid"
	exit 0
	;;
start) ;;
*) echo "usage: $0 start|stop DIR ..." >&2; exit 2 ;;
esac
addr=$3 port=$4
shift 4
password=no rekey=no home=$dir/home env="" sftp=internal-sftp path="" loglevel=ERROR keytype=ed25519 force=""
while [ $# -gt 0 ]; do
	case $1 in
	--password) password=yes ;;
	--rekey) rekey=yes ;;
	--home) home=$2; shift ;;
	--env) env="$env \"$2\""; shift ;;
	--path) path="$2:"; shift ;;
	--loglevel) loglevel=$2; shift ;;
	--keytype) keytype=$2; shift ;;
	--sftp-limit)
		printf '#!/bin/sh\nulimit -f %s\nexec /usr/lib/openssh/sftp-server\n' "$2" >"$dir/sftp-limited"
		chmod +x "$dir/sftp-limited"
		sftp=$dir/sftp-limited
		shift ;;
	--fsize-limit)
		# shellcheck disable=SC2016 # $SSH_ORIGINAL_COMMAND is the wrapper's
		printf '#!/bin/sh\nulimit -f %s\nexec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n' "$2" >"$dir/exec-limited"
		chmod +x "$dir/exec-limited"
		force="ForceCommand $dir/exec-limited"
		shift ;;
	*) echo "sshd.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
mkdir -p "$dir" "$home" "$dir/tmp"
[ "$(id -u)" -ne 0 ] || mkdir -p /run/sshd
if [ ! -f "$dir/host_$keytype" ] || [ $rekey = yes ]; then
	rm -f "$dir/host_$keytype" "$dir/host_$keytype.pub"
	ssh-keygen -q -t "$keytype" -N '' -C guest-host-key -f "$dir/host_$keytype"
fi
[ -f "$dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C lume-metal-test -f "$dir/id_ed25519"
cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
cat >"$dir/sshd_config" <<CONF
ListenAddress $addr:$port
HostKey $dir/host_$keytype
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication $password
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin yes
AllowTcpForwarding yes
SetEnv$env "HOME=$home" "TMPDIR=$dir/tmp/" PATH=$path$TOP/tests/guest-sim/bin:/usr/local/bin:/usr/bin:/bin LUME_METAL_CONFIRM_SETTLE=0
Subsystem sftp $sftp
LogLevel $loglevel
MaxStartups 100
$force
CONF
# -r: each connection is served by a fork of the listener rather than a fresh exec of sshd, the
# same server code with about 420 fewer page faults (some 10 ms of CPU here) a connection, and
# the tests make about 2,000 (docs/performance.md). OpenSSH 9.8 and later always re-exec (their
# sshd-session) and accept -r as deprecated.
/usr/sbin/sshd -r -f "$dir/sshd_config" -E "$dir/sshd.log"
# sshd writes its pid file once it listens.
i=0
while [ ! -s "$dir/sshd.pid" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
[ -s "$dir/sshd.pid" ] || { cat "$dir/sshd.log" >&2; exit 1; }

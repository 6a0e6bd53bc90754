#!/bin/sh
# A real OCI registry on loopback for the tests: Debian's docker-registry (distribution 2.8).
#   tests/registry.sh start DIR ADDR PORT [--htpasswd USER:PASS]
#       DIR/config.yml, its storage DIR/storage, its log DIR/registry.log, its pid DIR/registry.pid.
#       Plain http on ADDR:PORT (a loopback address). --htpasswd turns on basic auth with one
#       bcrypt user (the registry accepts bcrypt only), written by htpasswd (apache2-utils) from
#       stdin, so the password is on no command line. --accesslog logs every request to
#       DIR/registry.log (to count them). Returns once /v2/ answers (200 or 401).
#   tests/registry.sh stop DIR      stops that registry by its pid, and waits for it.
set -eu
# shellcheck source=tests/pidfile.sh disable=SC1091
. "$(dirname "$0")/pidfile.sh"
cmd=${1:-} dir=${2:-}
case $cmd in
stop)
	pidfile_stop "$dir/registry.pid"
	exit 0
	;;
start) ;;
*) echo "usage: $0 start DIR ADDR PORT [--htpasswd USER:PASS] [--accesslog] | stop DIR" >&2; exit 2 ;;
esac
[ $# -ge 4 ] || { echo "usage: $0 start DIR ADDR PORT [--htpasswd USER:PASS]" >&2; exit 2; }
addr=$3 port=$4
shift 4
auth="" access=true
while [ $# -gt 0 ]; do
	case $1 in
	--htpasswd)
		[ $# -ge 2 ] || { echo "registry.sh: --htpasswd needs USER:PASS" >&2; exit 2; }
		user=${2%%:*} pass=${2#*:}
		mkdir -p "$dir"
		printf '%s\n' "$pass" | htpasswd -ciB "$dir/htpasswd" "$user" 2>/dev/null
		auth="auth:
  htpasswd:
    realm: lume-metal-test
    path: $dir/htpasswd"
		shift ;;
	--accesslog) access=false ;;
	*) echo "registry.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
mkdir -p "$dir/storage"
cat >"$dir/config.yml" <<CONF
version: 0.1
log:
  level: error
  accesslog:
    disabled: $access
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: $addr:$port
  secret: lume-metal-test-only
$auth
CONF
docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
echo $! >"$dir/registry.pid"
i=0
while [ $i -lt 200 ]; do
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://$addr:$port/v2/" || true)
	case $code in 200 | 401) exit 0 ;; esac
	kill -0 "$(cat "$dir/registry.pid")" 2>/dev/null || break
	sleep 0.05; i=$((i + 1))
done
cat "$dir/registry.log" >&2
sh "$0" stop "$dir"
exit 1

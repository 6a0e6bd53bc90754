#!/bin/sh
# bench-fleet's pssh way: pssh.sh WORK SHA PARALLEL
# parallel-scp the payload to every guest's $HOME (legacy SCP protocol, -O, so that the remote
# shell expands $HOME: these guests' HOME is not their login directory), then parallel-ssh the
# guest side (guest-install.sh on stdin). WORK holds hosts, ssh_config and p.tar.gz; per-host
# output goes to WORK/pssh-out and WORK/pssh-err.
set -eu
w=$1 sha=$2 par=$3
d=$(cd "$(dirname "$0")" && pwd)
rm -rf "$w/pssh-out" "$w/pssh-err"
parallel-scp -h "$w/hosts" -p "$par" -t 0 -x "-O -F '$w/ssh_config'" -e "$w/pssh-err" \
	"$w/p.tar.gz" "\$HOME/$sha.tar.gz" >/dev/null
parallel-ssh -h "$w/hosts" -p "$par" -t 0 -x "-F '$w/ssh_config'" -o "$w/pssh-out" -e "$w/pssh-err" \
	-I sh -s -- "$sha" <"$d/guest-install.sh" >/dev/null

#!/bin/sh
# bench-fleet's one-connection pssh way (issue 20): pssh1.sh WORK SHA PARALLEL
# The way a person who knows pssh writes it: one parallel-ssh, the payload piped into every
# guest on stdin (-I), written to ~/p.tgz, and the payload's own install.sh run from it, all in
# one connection per guest, PARALLEL at a time (the command has pssh's default, -p 32;
# bench-fleet runs it at lume-metal's parallelism, and at 32 as the way pssh1-p32). WORK holds
# hosts, ssh_config and p.tar.gz; per-host output goes to WORK/pssh1-out and WORK/pssh1-err.
set -eu
w=$1 sha=$2 par=$3
rm -rf "$w/pssh1-out" "$w/pssh1-err"
parallel-ssh -h "$w/hosts" -p "$par" -t 0 -x "-F '$w/ssh_config'" -o "$w/pssh1-out" -e "$w/pssh1-err" -I \
	"cat >~/p.tgz && tar -xzOf ~/p.tgz bin/common.sh bin/install.sh | sh -s -- --payload ~/p.tgz --sha256 $sha" \
	<"$w/p.tar.gz" >/dev/null

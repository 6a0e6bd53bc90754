#!/bin/sh
# bench-fleet's one-connection pssh way (issue 20): pssh1.sh WORK SHA
# The way a person who knows pssh writes it: one parallel-ssh, the payload piped into every
# guest on stdin (-I), written to ~/p.tgz, and the payload's own install.sh run from it, all in
# one connection per guest, 32 at a time; the command as the issue gives it. WORK holds hosts,
# ssh_config and p.tar.gz; per-host output goes to WORK/pssh1-out and WORK/pssh1-err.
set -eu
w=$1 sha=$2
rm -rf "$w/pssh1-out" "$w/pssh1-err"
parallel-ssh -h "$w/hosts" -p 32 -t 0 -x "-F '$w/ssh_config'" -o "$w/pssh1-out" -e "$w/pssh1-err" -I \
	"cat >~/p.tgz && tar -xzOf ~/p.tgz bin/common.sh bin/install.sh | sh -s -- --payload ~/p.tgz --sha256 $sha" \
	<"$w/p.tar.gz" >/dev/null

#!/bin/sh
# bench-fleet's serial way: serial.sh WORK SHA
# For each guest in turn (WORK/hosts, guest i's HOME WORK/g/vmI/home): scp the payload to its
# HOME, then ssh the guest side (guest-install.sh on stdin). Output in WORK/serial-out/vmI.
set -eu
w=$1 sha=$2
d=$(cd "$(dirname "$0")" && pwd)
rm -rf "$w/serial-out"
mkdir "$w/serial-out"
i=0
while read -r a; do
	i=$((i + 1))
	scp -q -F "$w/ssh_config" "$w/p.tar.gz" "$a:$w/g/vm$i/home/$sha.tar.gz" </dev/null
	ssh -F "$w/ssh_config" "$a" sh -s -- "$sha" <"$d/guest-install.sh" >"$w/serial-out/vm$i"
done <"$w/hosts"

#!/bin/sh
# probe.sh DIR TARGET: the probe, stock and shimmed, in DIR (scratch.sh made it; the payload
# was uploaded there as payload.tar.gz), which it removes. TARGET is the payload's (macos or
# linux-sim): a payload for another target cannot run here, which it says, not "Exec format
# error" (exit 3). Prints {"stock":...,"shimmed":...,"pass":BOOL} (ops/probe.c).
case $(uname -s) in Darwin) t=macos ;; *) t=linux-sim ;; esac
[ "$t" = "$2" ] || { rm -rf "$1"; echo "the probe payload is for $2 but this guest runs $t; pass --target $t (or --payload FILE of that target, or --no-probe)" >&2; exit 3; }
cd "$1" || exit 1
trap 'rm -rf "$1"' EXIT
tar -xzf payload.tar.gz bin/lume-metal-probe bin/run-with-shim lib profile.json shim.env || exit 1
./bin/lume-metal-probe >stock.json || exit 1
./bin/run-with-shim "$1/bin/lume-metal-probe" --expect profile.json --stock stock.json >shim.json; rc=$?
printf '{"stock":%s,"shimmed":%s,"pass":%s}\n' "$(cat stock.json)" "$(cat shim.json)" "$([ $rc -eq 0 ] && echo true || echo false)"

#!/bin/sh
# bench-fleet's guest side for the pssh and serial ways, sent on stdin: `sh -s -- SHA` after the
# payload was copied to $HOME/SHA.tar.gz. The same guest work as lume-metal deploy (plugin/ops/deploy.c):
# the payload into staging/, then its own install.sh (SHA-256 check, unpack, probe stock and
# shimmed, switch current, LaunchAgent), the upload removed. Prints install.sh's JSON line.
set -u
sha=$1
st="$HOME/Library/Application Support/lume-metal/staging"
mkdir -p "$st" && mv -f "$HOME/$sha.tar.gz" "$st/$sha.tar.gz" || exit 1
p="$st/$sha.tar.gz"
tar -xzOf "$p" bin/common.sh bin/install.sh | sh -s -- --payload "$p" --sha256 "$sha"
rc=$?
rm -f "$p"
exit $rc

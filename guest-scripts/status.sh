#!/bin/sh
# status.sh ROOT: the installed release's bin/status.sh (its JSON), or an empty install's
# JSON when there is none (ops/status.c).
for r in current previous; do f="$1/$r/bin/status.sh"; [ -f "$f" ] && exec sh "$f"; done
printf '{"root":null,"current":null,"previous":null,"releases":[],"installed":false}\n'

#!/bin/sh
# rollback.sh ROOT TO: the installed release's bin/rollback.sh TO (its JSON), or
# "nothing-to-do" when nothing is installed (ops/rollback.c).
for r in current previous; do f="$1/$r/bin/rollback.sh"; [ -f "$f" ] && exec sh "$f" "$2"; done
printf '{"result":"nothing-to-do","to":"%s","reason":"nothing is installed"}\n' "$2"

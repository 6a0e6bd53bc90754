#!/bin/sh
# in-dir.sh DIR COMMAND [ARG...]: runs the command in DIR (exit 97 when there is no DIR).
cd "$1" || exit 97
shift
exec "$@"

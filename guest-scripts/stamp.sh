#!/bin/sh
# stamp.sh DIR: image.json (on stdin) into DIR beside current and previous, written whole or
# not at all: a temporary file in the same directory, then rename (ops/golden.c).
umask 022; mkdir -p "$1" || exit 1; t="$1/.image.json.$$"
if ! { cat >"$t" && mv -f "$t" "$1/image.json"; }; then rm -f "$t"; exit 1; fi

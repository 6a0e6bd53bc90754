#!/bin/sh
# scratch.sh NAME: makes a scratch directory lume-metal-NAME.XXXXXX in the guest's TMPDIR and
# prints its path (probe: NAME probe; validate: NAME validate, which validate-clean.sh removes).
mktemp -d "${TMPDIR:-/tmp}/lume-metal-$1.XXXXXX"

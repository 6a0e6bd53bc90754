# shellcheck shell=sh disable=SC2016 # single-quoted $ is for the inner sh
# The readers of --format junit for the output tests (tests/deploy/t-outputs.sh, t-golden-junit.sh),
# sourced after tests/lib.sh: xmllint against tests/junit.xsd and junitparser through
# tests/outputs/junit-read.py, with Debian's python3 when another one on PATH lacks junitparser.
XSD=$TOP/tests/junit.xsd
READ=$TOP/tests/outputs/junit-read.py
PYJ=""
for p in python3 /usr/bin/python3; do "$p" -c 'import junitparser' 2>/dev/null && PYJ=$p && break; done
[ -n "$PYJ" ] || not_ok "python3-junitparser is installed (scripts/deps.sh test)"
# junit NAME FILE: FILE is valid under tests/junit.xsd, and junitparser reads it (its reading in
# FILE.read) with counts that agree with its testcases.
junit() {
	check "$1: xmllint --schema tests/junit.xsd accepts it" xmllint --noout --schema "$XSD" "$2"
	check "... junitparser reads it, the counts agreeing with the testcases" sh -c '"$1" "$2" "$3" >"$3.read"' - \
		"${PYJ:-python3}" "$READ" "$2"
}

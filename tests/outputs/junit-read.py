#!/usr/bin/env python3
"""Reads a JUnit XML file with junitparser (python3-junitparser, what CI tools' readers are
modelled on) and prints what it understood, one line per item, for the shell tests to grep:

    suite NAME|tests=N|failures=N|errors=N|skipped=N|time=T|timestamp=T|hostname=H
    property SUITE|NAME=VALUE
    case SUITE|NAME|CLASSNAME|TIME|OUTCOME|TYPE|MESSAGE
    text SUITE|NAME|first line of the failure's or error's text

OUTCOME is pass, failure, error or skipped. Exit 1 when a suite's counts differ from its
testcases (what a reader that trusts the attributes would show wrongly), 2 when it does not
parse."""
import sys

from junitparser import Error, Failure, JUnitXml, Skipped


def one_line(s):
    return (s or "").replace("\n", "\\n")


def main(path):
    try:
        xml = JUnitXml.fromfile(path)
    except Exception as e:  # noqa: BLE001 - any parse error is the answer
        print("junitparser: %s: %s" % (path, e), file=sys.stderr)
        return 2
    bad = 0
    for suite in xml:
        counts = {"tests": 0, "failure": 0, "error": 0, "skipped": 0}
        print("suite %s|tests=%s|failures=%s|errors=%s|skipped=%s|time=%s|timestamp=%s|hostname=%s" % (
            suite.name, suite.tests, suite.failures, suite.errors, suite.skipped, suite.time,
            suite.timestamp, suite.hostname))
        for p in suite.properties():
            print("property %s|%s=%s" % (suite.name, p.name, p.value))
        for case in suite:
            counts["tests"] += 1
            results = case.result if isinstance(case.result, list) else [case.result] if case.result else []
            outcome, typ, msg, text = "pass", "", "", ""
            for r in results:
                if isinstance(r, Failure):
                    outcome = "failure"
                elif isinstance(r, Error):
                    outcome = "error"
                elif isinstance(r, Skipped):
                    outcome = "skipped"
                else:
                    continue
                typ, msg, text = r.type or "", r.message or "", r.text or ""
            if outcome != "pass":
                counts[outcome] += 1
            print("case %s|%s|%s|%s|%s|%s|%s" % (suite.name, case.name, case.classname, case.time, outcome, typ,
                                                 one_line(msg)))
            for line in text.split("\n"):
                if line:
                    print("text %s|%s|%s" % (suite.name, case.name, line))
        want = (counts["tests"], counts["failure"], counts["error"], counts["skipped"])
        got = (suite.tests, suite.failures, suite.errors, suite.skipped)
        if want != got:
            print("counts %s: attributes say %s, testcases %s" % (suite.name, got, want), file=sys.stderr)
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

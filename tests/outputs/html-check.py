#!/usr/bin/env python3
"""Checks lume-metal's HTML report (report --html) with python3's own html.parser and prints
what it holds, one line per item, for the shell tests to grep:

    section TITLE|VERDICT
    bar TEST|ARM|VALUE|HEIGHT      each bar of each chart: its data-value and its height
    gauge VALUE|THRESHOLD|WIDTH    each validation gauge

It fails (exit 1, saying why) when the page fetches or runs anything (a script, an element or
attribute that loads a resource, url( or @import in CSS, no Content-Security-Policy of
default-src 'none'), when a bar's height is not its data-value over the chart's largest, times
the plot height, when a gauge's bar is not its value on its scale, or, with --table FILE
(report --json output: one table, or an array of ledger documents whose bench records hold
tables), when a median of FILE has no bar of that value."""
import json
import math
import sys
from html.parser import HTMLParser

LOADS = {"script", "iframe", "object", "embed", "link", "img", "audio", "video", "source", "frame", "base", "form"}


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.errors, self.sections, self.charts, self.gauges = [], [], [], []
        self.chart = self.gauge = None
        self.csp = False
        self.in_style = self.in_h2 = False
        self.style = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in LOADS:
            self.errors.append("a <%s> element" % tag)
        for k, v in attrs:
            if k in ("src", "href", "action", "srcset", "poster", "data", "xlink:href") or k.startswith("on"):
                self.errors.append("attribute %s=%r on <%s>" % (k, v, tag))
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp = "default-src 'none'" in (a.get("content") or "")
        if tag == "style":
            self.in_style = True
        if tag == "section":
            self.sections.append(["", "?"])
        if tag == "h2":
            self.in_h2 = True
        if tag == "span" and "verdict" in (a.get("class") or "").split() and self.sections:
            self.sections[-1][1] = a.get("data-verdict", "?")
        cls = (a.get("class") or "").split()
        if tag == "svg" and "chart" in cls:
            self.chart = {"test": a.get("data-test"), "plot": float(a.get("data-plot-height", "nan")), "bars": []}
            self.charts.append(self.chart)
        if tag == "svg" and "gauge" in cls:
            self.gauge = {k: float(a.get("data-" + k, "nan")) for k in ("value", "threshold", "scale")}
            self.gauges.append(self.gauge)
        if tag == "rect" and "bar" in cls and self.chart is not None:
            self.chart["bars"].append((a.get("data-arm"), float(a["data-value"]), float(a["height"])))
        if tag == "rect" and self.gauge is not None and ("ok" in cls or "bad" in cls):
            self.gauge["width"] = float(a["width"])

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "svg":
            self.chart = self.gauge = None
        if tag == "style":
            self.in_style = False
        if tag == "h2":
            self.in_h2 = False

    def handle_data(self, data):
        if self.in_style:
            self.style += data
        if self.in_h2 and self.sections:
            self.sections[-1][0] += data


def medians(doc):
    """(test, arm, median) of a table, or of every bench table in ledger documents."""
    tables = [doc] if isinstance(doc, dict) else [r["bench"] for d in doc for r in d["records"]]
    return [(t["test"], arm, t[arm]["median"]) for tab in tables for t in tab["tests"]
            for arm in ("stock", "shim", "host") if isinstance(t.get(arm), dict)]


def main(argv):
    page = Page()
    page.feed(open(argv[1], encoding="utf-8").read())
    errors = page.errors
    if "url(" in page.style or "@import" in page.style:
        errors.append("the CSS loads something (url( or @import)")
    if not page.csp:
        errors.append("no Content-Security-Policy meta with default-src 'none'")
    for title, verdict in page.sections:
        print("section %s|%s" % (title, verdict))
    for c in page.charts:
        top = max(v for _, v, _ in c["bars"])
        for arm, v, h in c["bars"]:
            print("bar %s|%s|%r|%.2f" % (c["test"], arm, v, h))
            if abs(h - v / top * c["plot"]) > 0.011:
                errors.append("%s %s: height %.2f for %r, not %.2f" % (c["test"], arm, h, v, v / top * c["plot"]))
    for g in page.gauges:
        print("gauge %r|%r|%.2f" % (g["value"], g["threshold"], g.get("width", float("nan"))))
        want = min(max(g["value"], 0) / g["scale"], 1) * 180
        if not abs(g.get("width", -1) - want) <= 0.011:
            errors.append("gauge %r on scale %r: width %r, not %.2f" % (g["value"], g["scale"], g.get("width"), want))
    if len(argv) > 3 and argv[2] == "--table":
        bars = [(c["test"], arm, v) for c in page.charts for arm, v, _ in c["bars"]]
        for test, arm, m in medians(json.load(open(argv[3], encoding="utf-8"))):
            if not any(t == test and a == arm and math.isclose(v, m, rel_tol=1e-12) for t, a, v in bars):
                errors.append("the median %r of %s %s has no bar" % (m, test, arm))
    for e in errors:
        print("html-check: %s: %s" % (argv[1], e), file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

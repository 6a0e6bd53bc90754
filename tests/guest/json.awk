# json.awk: reads one JSON document, checks it strictly (one value, no trailing text, no raw
# control characters in strings, no duplicate keys) and prints one "PATH<TAB>VALUE" line per
# scalar: .a.b for object members, [N] for array elements, PATH# for an array's length, {} and
# [] for empty containers. Strings are printed decoded (newlines as \n). Exit 1 on bad JSON.
# Test helper only (POSIX awk; runs under mawk and gawk).
BEGIN {
	for (i = 1; i < 32; i++) ctl = ctl sprintf("%c", i)
}
{ s = s (NR > 1 ? "\n" : "") $0 }
END {
	n = length(s); p = 1
	if (!val("")) bad("bad value")
	ws()
	if (p <= n) bad("trailing text")
	exit 0
}
function bad(why) { printf "json.awk: %s at offset %d\n", why, p > "/dev/stderr"; exit 1 }
function ws() { while (p <= n && index(" \t\n\r", substr(s, p, 1))) p++ }
function out(path, v) { gsub(/\n/, "\\n", v); printf "%s\t%s\n", path, v }
function val(path,   c, rest) {
	ws()
	c = substr(s, p, 1)
	if (c == "{") return obj(path)
	if (c == "[") return arr(path)
	if (c == "\"") { if (!str()) return 0; out(path, sv); return 1 }
	rest = substr(s, p)
	if (match(rest, /^(true|false|null)/) || match(rest, /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/)) {
		out(path, substr(rest, 1, RLENGTH)); p += RLENGTH; return 1
	}
	return 0
}
function str(   c, e, r, h) {
	p++; r = ""
	while (p <= n) {
		c = substr(s, p, 1)
		if (c == "\"") { p++; sv = r; return 1 }
		if (index(ctl, c)) bad("raw control character in a string")
		if (c == "\\") {
			e = substr(s, p + 1, 1)
			if (e == "n") r = r "\n"
			else if (e == "t") r = r "\t"
			else if (e == "r") r = r "\r"
			else if (e == "b" || e == "f") r = r " "
			else if (e == "\"" || e == "\\" || e == "/") r = r e
			else if (e == "u") {
				h = substr(s, p + 2, 4)
				if (h !~ /^[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]$/) bad("bad \\u escape")
				r = r "?"; p += 4
			} else bad("bad escape")
			p += 2
			continue
		}
		r = r c; p++
	}
	return 0
}
function obj(path,   k, key) {
	p++; ws()
	if (substr(s, p, 1) == "}") { p++; out(path, "{}"); return 1 }
	while (1) {
		ws()
		if (substr(s, p, 1) != "\"" || !str()) bad("expected a key")
		k = sv; key = path "." k
		if (key in seen) bad("duplicate key " key)
		seen[key] = 1
		ws()
		if (substr(s, p, 1) != ":") bad("expected ':'")
		p++
		if (!val(key)) bad("bad value for " key)
		ws()
		if (substr(s, p, 1) == ",") { p++; continue }
		if (substr(s, p, 1) == "}") { p++; return 1 }
		bad("expected ',' or '}'")
	}
}
function arr(path,   i) {
	p++; ws(); i = 0
	if (substr(s, p, 1) == "]") { p++; out(path, "[]"); out(path "#", 0); return 1 }
	while (1) {
		if (!val(path "[" i "]")) bad("bad array element")
		i++
		ws()
		if (substr(s, p, 1) == ",") { p++; continue }
		if (substr(s, p, 1) == "]") { p++; out(path "#", i); return 1 }
		bad("expected ',' or ']'")
	}
}

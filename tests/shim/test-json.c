/* shim-json: the probe's strict JSON reader and writer (shim/probe_json.c). Prints TAP lines. */
#include <stdio.h>
#include <string.h>

#include "probe_json.h"

static int failed;

static void ok(int cond, const char *name)
{
	printf("%s - json: %s\n", cond ? "ok" : "not ok", name);
	if (!cond)
		failed++;
}

static int parses(const char *text)
{
	struct pj_value *v;
	char err[128];
	int rc = pj_parse(&v, text, strlen(text), err, sizeof err);

	pj_free(v);
	return rc == 0;
}

int main(void)
{
	static const char *const good[] = {
		"{}", "[]", " {\"a\" : [1, -2, 0, 3.5e-2, true, false, null, \"x\"]} \n",
		"\"\\u00e9\\ud83d\\ude00\\n\\\"\"", "-0", "{\"a\":{\"b\":{\"c\":[]}}}", "\"caf\xc3\xa9\"",
	};
	static const char *const bad[] = {
		"", " ", "{", "[1,]", "{\"a\":1,}", "{\"a\":1 \"b\":2}", "{\"a\":1,\"a\":2}", "01",
		"1.", ".5", "+1", "-", "1e", "tru", "nul", "[1] [2]", "{'a':1}", "// c\n{}",
		"\"a\tb\"", "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\u0000\"", "\"\\u12\"",
		"\"\xc3\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf5\x80\x80\x80\"", "\"abc", "NaN",
		"{\"a\"}", "{1:2}", "[1 2]",
	};
	static const char doc[] = "{\"id\":\"p\",\"n\":1009,\"big\":99999999999999999999,"
	    "\"f\":1.5,\"s\":\"\\u00e9\",\"l\":[1,2,3]}";
	char deep[2 * PJ_MAX_DEPTH + 8];
	struct pj_value *v;
	struct pj_buf b = { 0 };
	char err[128], name[96];
	long long n;
	size_t i;

	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		snprintf(name, sizeof name, "accepts good input %zu", i);
		ok(parses(good[i]), name);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(name, sizeof name, "rejects bad input %zu", i);
		ok(!parses(bad[i]), name);
	}
	ok(pj_parse(&v, "{\"a\":1}\0", 8, err, sizeof err) < 0 && strstr(err, "NUL") != NULL,
	    "rejects a NUL byte and says so");
	pj_free(v);

	memset(deep, '[', PJ_MAX_DEPTH);
	memset(deep + PJ_MAX_DEPTH, ']', PJ_MAX_DEPTH);
	deep[2 * PJ_MAX_DEPTH] = '\0';
	ok(parses(deep), "accepts nesting at the limit");
	memset(deep, '[', PJ_MAX_DEPTH + 1);
	memset(deep + PJ_MAX_DEPTH + 1, ']', PJ_MAX_DEPTH + 1);
	deep[2 * PJ_MAX_DEPTH + 2] = '\0';
	ok(!parses(deep), "rejects nesting past the limit");

	ok(pj_parse(&v, doc, strlen(doc), err, sizeof err) == 0, "parses a document");
	ok(pj_int(pj_get(v, "n"), &n) == 0 && n == 1009, "reads an integer");
	ok(pj_type(pj_get(v, "big")) == PJ_NUMBER && pj_int(pj_get(v, "big"), &n) < 0,
	    "does not read an overflowing number as an integer");
	ok(pj_int(pj_get(v, "f"), &n) < 0, "does not read a fraction as an integer");
	ok(pj_str(pj_get(v, "s")) && strcmp(pj_str(pj_get(v, "s")), "\xc3\xa9") == 0,
	    "decodes a \\u escape to UTF-8");
	ok(pj_count(pj_get(v, "l")) == 3 && pj_int(pj_at(pj_get(v, "l"), 2), &n) == 0 && n == 3,
	    "reads array elements");
	ok(pj_get(v, "missing") == NULL && pj_get(pj_get(v, "n"), "x") == NULL,
	    "absent members are NULL");
	pj_free(v);

	ok(pj_parse(&v, "[1,", 3, err, sizeof err) < 0 && strstr(err, "byte 3") != NULL,
	    "says where the error is");
	pj_free(v);

	pj_buf_str(&b, "a\"b\\c\n\x01\xc3\xa9\xff");
	ok(pj_buf_ok(&b) && strcmp(b.data, "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\\ufffd\"") == 0,
	    "escapes strings and replaces invalid UTF-8");
	ok(pj_parse(&v, b.data, b.len, err, sizeof err) == 0, "its own output reads back");
	pj_free(v);
	pj_buf_free(&b);
	for (i = 0; i < 2000; i++)
		pj_buf_addf(&b, "%zu,", i);
	ok(pj_buf_ok(&b) && b.len == strlen(b.data) && strncmp(b.data, "0,1,2,", 6) == 0,
	    "the buffer grows");
	pj_buf_free(&b);
	return failed ? 1 : 0;
}

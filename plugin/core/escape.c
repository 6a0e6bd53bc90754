/* escape: the terminal-safety rule, one place. Everything a guest, a Mac host, the ledger or a
 * file sends back is written through it before a terminal (cmd/cli_term.c prints with it; ops
 * applies it where a message quotes a name a host sent). Never prints. */
#include <stdint.h>
#include <string.h>

#include "core/escape.h"

/* The length of the well-formed UTF-8 sequence at s (n bytes there), its code point in *cp;
 * 0 when s starts no such sequence (a stray, overlong, surrogate or out-of-range encoding). */
static size_t
utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 :
	    s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;

	if (len == 0 || n < len)
		return 0;
	*cp = s[0] & (0x7fu >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3fu);
	}
	if ((len == 3 && *cp < 0x800) || (len == 4 && (*cp < 0x10000 || *cp > 0x10ffff)) ||
	    (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

/* A code point a terminal acts on or that reorders what it shows: the C1 controls U+0080..U+009F
 * (U+009B is CSI) and the bidirectional embeddings, overrides and isolates. */
static int
unsafe_cp(uint32_t cp)
{
	return cp <= 0x9f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

int
escape_text(lm_buf *b, const char *s, size_t n, int keep_nl)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t run = i, len;
		uint32_t cp;

		while (run < n && p[run] >= 0x20 && p[run] < 0x7f)
			run++;
		if (run > i && lm_buf_add(b, p + i, run - i) != 0)
			return -1;
		if ((i = run) >= n)
			break;
		if ((len = utf8_seq(p + i, n - i, &cp)) > 0 && !unsafe_cp(cp)) {
			if (lm_buf_add(b, p + i, len) != 0)
				return -1;
			i += len;
			continue;
		}
		for (size_t k = 0, end = len ? len : 1; k < end; k++, i++) {
			int c = p[i];

			if (c == '\n' && keep_nl ? lm_buf_add(b, "\n", 1) :
			    c == '\n' ? lm_buf_add(b, "\\n", 2) : c == '\r' ? lm_buf_add(b, "\\r", 2) :
			    c == '\t' ? lm_buf_add(b, "\\t", 2) : lm_buf_addf(b, "\\x%02x", (unsigned)c))
				return -1;
		}
	}
	return 0;
}

int
escape_json(lm_buf *b, const char *json)
{
	const unsigned char *p = (const unsigned char *)json;
	size_t n = strlen(json);
	int rc = 0;

	/* Bytes over 0x7e are only inside JSON strings, where \uXXXX means the same. */
	for (size_t i = 0; i < n && rc == 0;) {
		size_t run = i, len;
		uint32_t cp;

		while (run < n && p[run] < 0x7f)
			run++;
		rc = lm_buf_add(b, p + i, run - i);
		if ((i = run) >= n || rc != 0)
			break;
		if ((len = utf8_seq(p + i, n - i, &cp)) > 0 && !unsafe_cp(cp))
			rc = lm_buf_add(b, p + i, len);
		else
			rc = lm_buf_addf(b, "\\u%04x", len ? (unsigned)cp : p[i] == 0x7f ? 0x7fu : 0xfffdu);
		i += len ? len : 1;
	}
	return rc;
}

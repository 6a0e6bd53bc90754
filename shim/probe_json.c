/* probe_json: see probe_json.h. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_json.h"

#define PJ_MAX_NODES 65536

struct pj_value {
	enum pj_type type;
	long long ival;
	char *str;                   /* strings */
	char *key;                   /* members of an object */
	struct pj_value *child;      /* arrays and objects: first element */
	struct pj_value *next;
	size_t count;
};

struct pj_parser {
	const char *s;
	size_t len, pos, nodes;
	int depth;
	char *err;
	size_t errlen;
};

static int pj_error(struct pj_parser *p, const char *what)
{
	if (p->err && p->errlen && p->err[0] == '\0')
		snprintf(p->err, p->errlen, "%s at byte %zu", what, p->pos);
	return -1;
}

static void pj_ws(struct pj_parser *p)
{
	while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos] != '\0')
		p->pos++;
}

static struct pj_value *pj_node(struct pj_parser *p, enum pj_type type)
{
	struct pj_value *v;

	if (++p->nodes > PJ_MAX_NODES) {
		pj_error(p, "too many values");
		return NULL;
	}
	v = calloc(1, sizeof *v);
	if (!v)
		pj_error(p, "out of memory");
	else
		v->type = type;
	return v;
}

void pj_free(struct pj_value *v)
{
	while (v) {
		struct pj_value *next = v->next;

		pj_free(v->child);
		free(v->str);
		free(v->key);
		free(v);
		v = next;
	}
}

static int pj_hex4(struct pj_parser *p, unsigned *out)
{
	unsigned v = 0;

	if (p->len - p->pos < 4)
		return pj_error(p, "short \\u escape");
	for (int i = 0; i < 4; i++) {
		char c = p->s[p->pos++];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return pj_error(p, "bad \\u escape");
	}
	*out = v;
	return 0;
}

static size_t pj_utf8_put(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* pj_utf8_len: the length of the valid UTF-8 sequence at S (up to N bytes), or 0. */
static size_t pj_utf8_len(const unsigned char *s, size_t n)
{
	size_t need;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		need = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		need = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		need = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((need == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (need == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return need;
}

/* pj_string: a string literal at p->pos into a new NUL-terminated buffer *out. */
static int pj_string(struct pj_parser *p, char **out)
{
	char *buf;
	size_t n = 0, k;

	p->pos++; /* the opening quote */
	/* The decoded string is never longer than the literal. */
	buf = malloc(p->len - p->pos + 1);
	if (!buf)
		return pj_error(p, "out of memory");
	for (;;) {
		unsigned char c;

		if (p->pos >= p->len) {
			free(buf);
			return pj_error(p, "unterminated string");
		}
		c = (unsigned char)p->s[p->pos];
		if (c == '"') {
			p->pos++;
			break;
		}
		if (c < 0x20) {
			free(buf);
			return pj_error(p, "control character in string");
		}
		if (c == '\\') {
			unsigned cp, lo;

			if (++p->pos >= p->len) {
				free(buf);
				return pj_error(p, "unterminated string");
			}
			c = (unsigned char)p->s[p->pos++];
			switch (c) {
			case '"': case '\\': case '/':
				buf[n++] = (char)c;
				break;
			case 'b': buf[n++] = '\b'; break;
			case 'f': buf[n++] = '\f'; break;
			case 'n': buf[n++] = '\n'; break;
			case 'r': buf[n++] = '\r'; break;
			case 't': buf[n++] = '\t'; break;
			case 'u':
				if (pj_hex4(p, &cp) < 0)
					goto bad;
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (p->len - p->pos < 2 || p->s[p->pos] != '\\' ||
					    p->s[p->pos + 1] != 'u') {
						pj_error(p, "lone surrogate");
						goto bad;
					}
					p->pos += 2;
					if (pj_hex4(p, &lo) < 0)
						goto bad;
					if (lo < 0xdc00 || lo > 0xdfff) {
						pj_error(p, "lone surrogate");
						goto bad;
					}
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				} else if (cp >= 0xdc00 && cp <= 0xdfff) {
					pj_error(p, "lone surrogate");
					goto bad;
				} else if (cp == 0) {
					pj_error(p, "\\u0000 in string");
					goto bad;
				}
				n += pj_utf8_put(buf + n, cp);
				break;
			default:
				p->pos--;
				pj_error(p, "bad escape");
				goto bad;
			}
			continue;
		}
		k = pj_utf8_len((const unsigned char *)p->s + p->pos, p->len - p->pos);
		if (k == 0) {
			free(buf);
			return pj_error(p, "invalid UTF-8");
		}
		memcpy(buf + n, p->s + p->pos, k);
		n += k;
		p->pos += k;
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
bad:
	free(buf);
	return -1;
}

static int pj_digits(struct pj_parser *p)
{
	size_t start = p->pos;

	while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
		p->pos++;
	return p->pos > start ? 0 : pj_error(p, "digit expected");
}

static int pj_number(struct pj_parser *p, struct pj_value *v)
{
	size_t start = p->pos;
	int integer = 1;
	char tmp[32], *end;
	long long n;

	if (p->s[p->pos] == '-')
		p->pos++;
	if (p->pos < p->len && p->s[p->pos] == '0') {
		p->pos++;
		if (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
			return pj_error(p, "leading zero");
	} else if (pj_digits(p) < 0) {
		return -1;
	}
	if (p->pos < p->len && p->s[p->pos] == '.') {
		p->pos++;
		integer = 0;
		if (pj_digits(p) < 0)
			return -1;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		p->pos++;
		integer = 0;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (pj_digits(p) < 0)
			return -1;
	}
	v->type = PJ_NUMBER;
	if (!integer || p->pos - start >= sizeof tmp)
		return 0;
	memcpy(tmp, p->s + start, p->pos - start);
	tmp[p->pos - start] = '\0';
	errno = 0;
	n = strtoll(tmp, &end, 10);
	if (errno == 0 && *end == '\0') {
		v->type = PJ_INT;
		v->ival = n;
	}
	return 0;
}

static int pj_literal(struct pj_parser *p, const char *word)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return pj_error(p, "unexpected character");
	p->pos += n;
	return 0;
}

static int pj_value_at(struct pj_parser *p, struct pj_value **out);

static int pj_members(struct pj_parser *p, struct pj_value *v, int object)
{
	struct pj_value **tail = &v->child;
	char close = object ? '}' : ']';

	if (++p->depth > PJ_MAX_DEPTH)
		return pj_error(p, "nested too deeply");
	p->pos++;
	pj_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		p->depth--;
		return 0;
	}
	for (;;) {
		struct pj_value *m;
		char *key = NULL;

		pj_ws(p);
		if (object) {
			if (p->pos >= p->len || p->s[p->pos] != '"')
				return pj_error(p, "member name expected");
			if (pj_string(p, &key) < 0)
				return -1;
			for (m = v->child; m; m = m->next)
				if (strcmp(m->key, key) == 0) {
					free(key);
					return pj_error(p, "duplicate member name");
				}
			pj_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':') {
				free(key);
				return pj_error(p, "':' expected");
			}
			p->pos++;
		}
		if (pj_value_at(p, &m) < 0) {
			free(key);
			return -1;
		}
		m->key = key;
		*tail = m;
		tail = &m->next;
		v->count++;
		pj_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == close) {
			p->pos++;
			p->depth--;
			return 0;
		}
		return pj_error(p, object ? "',' or '}' expected" : "',' or ']' expected");
	}
}

static int pj_value_at(struct pj_parser *p, struct pj_value **out)
{
	struct pj_value *v;
	int rc;
	char c;

	pj_ws(p);
	if (p->pos >= p->len)
		return pj_error(p, "value expected");
	c = p->s[p->pos];
	v = pj_node(p, PJ_NULL);
	if (!v)
		return -1;
	if (c == '{' || c == '[') {
		v->type = c == '{' ? PJ_OBJECT : PJ_ARRAY;
		rc = pj_members(p, v, c == '{');
	} else if (c == '"') {
		v->type = PJ_STRING;
		rc = pj_string(p, &v->str);
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		rc = pj_number(p, v);
	} else if (c == 't') {
		v->type = PJ_TRUE;
		rc = pj_literal(p, "true");
	} else if (c == 'f') {
		v->type = PJ_FALSE;
		rc = pj_literal(p, "false");
	} else if (c == 'n') {
		rc = pj_literal(p, "null");
	} else {
		rc = pj_error(p, "unexpected character");
	}
	if (rc < 0) {
		pj_free(v);
		return -1;
	}
	*out = v;
	return 0;
}

int pj_parse(struct pj_value **out, const char *text, size_t len, char *err, size_t errlen)
{
	struct pj_parser p = { text, len, 0, 0, 0, err, errlen };
	struct pj_value *v;

	if (err && errlen)
		err[0] = '\0';
	*out = NULL;
	if (len > PJ_MAX_INPUT)
		return pj_error(&p, "input too large");
	if (memchr(text, '\0', len))
		return pj_error(&p, "NUL byte in input");
	if (pj_value_at(&p, &v) < 0)
		return -1;
	pj_ws(&p);
	if (p.pos != len) {
		pj_free(v);
		return pj_error(&p, "trailing characters");
	}
	*out = v;
	return 0;
}

enum pj_type pj_type(const struct pj_value *v)
{
	return v ? v->type : PJ_NULL;
}

const struct pj_value *pj_get(const struct pj_value *v, const char *key)
{
	if (!v || v->type != PJ_OBJECT)
		return NULL;
	for (v = v->child; v; v = v->next)
		if (strcmp(v->key, key) == 0)
			return v;
	return NULL;
}

int pj_int(const struct pj_value *v, long long *out)
{
	if (!v || v->type != PJ_INT)
		return -1;
	*out = v->ival;
	return 0;
}

const char *pj_str(const struct pj_value *v)
{
	return v && v->type == PJ_STRING ? v->str : NULL;
}

size_t pj_count(const struct pj_value *v)
{
	return v && v->type == PJ_ARRAY ? v->count : 0;
}

const struct pj_value *pj_at(const struct pj_value *v, size_t i)
{
	if (!v || v->type != PJ_ARRAY)
		return NULL;
	for (v = v->child; v && i > 0; v = v->next)
		i--;
	return v;
}

/* ---- output ---- */

static int pj_buf_grow(struct pj_buf *b, size_t more)
{
	size_t cap;
	char *d;

	if (b->failed)
		return -1;
	if (more < b->cap - b->len)
		return 0;
	if (more > ((size_t)-1) / 2 - b->len) {
		b->failed = 1;
		return -1;
	}
	cap = b->cap ? b->cap : 256;
	while (cap - b->len <= more)
		cap *= 2;
	d = realloc(b->data, cap);
	if (!d) {
		b->failed = 1;
		return -1;
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

void pj_buf_add(struct pj_buf *b, const char *s)
{
	size_t n = strlen(s);

	if (pj_buf_grow(b, n) < 0)
		return;
	memcpy(b->data + b->len, s, n + 1);
	b->len += n;
}

void pj_buf_addf(struct pj_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = 1;
		return;
	}
	if (pj_buf_grow(b, (size_t)n) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void pj_buf_str(struct pj_buf *b, const char *s)
{
	char esc[8];

	if (!s) {
		pj_buf_add(b, "null");
		return;
	}
	pj_buf_add(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			esc[2] = '\0';
		} else if (c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f') {
			esc[0] = '\\';
			esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : c == '\b' ? 'b' : 'f';
			esc[2] = '\0';
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof esc, "\\u%04x", c);
		} else if (c >= 0x80) {
			size_t k = pj_utf8_len((const unsigned char *)s, strlen(s));

			if (k == 0) {
				pj_buf_add(b, "\\ufffd");
				continue;
			}
			memcpy(esc, s, k);
			esc[k] = '\0';
			s += k - 1;
		} else {
			esc[0] = (char)c;
			esc[1] = '\0';
		}
		pj_buf_add(b, esc);
	}
	pj_buf_add(b, "\"");
}

int pj_buf_ok(const struct pj_buf *b)
{
	return !b->failed && b->data != NULL;
}

void pj_buf_free(struct pj_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

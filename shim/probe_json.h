/*
 * probe_json: a small strict JSON reader and an output buffer, for the probe (which is
 * cross-built for macOS, where no JSON library is at hand).
 *
 * The reader takes RFC 8259 JSON and nothing else: no comments, no trailing commas, no
 * duplicate keys, no leading zeros, no control characters or invalid UTF-8 in strings, one
 * value with only whitespace around it, nesting at most PJ_MAX_DEPTH deep.
 */
#ifndef PROBE_JSON_H
#define PROBE_JSON_H

#include <stddef.h>

#define PJ_MAX_DEPTH 32
#define PJ_MAX_INPUT (1024 * 1024)

enum pj_type { PJ_NULL, PJ_FALSE, PJ_TRUE, PJ_INT, PJ_NUMBER, PJ_STRING, PJ_ARRAY, PJ_OBJECT };

struct pj_value;

/*
 * pj_parse: parses TEXT[0..len) into *out, which the caller frees with pj_free. Returns 0, or
 * -1 with a message (and the byte offset) in err.
 */
int pj_parse(struct pj_value **out, const char *text, size_t len, char *err, size_t errlen);
void pj_free(struct pj_value *v);

enum pj_type pj_type(const struct pj_value *v);
/* pj_get: the member KEY of object V, or NULL (also when V is not an object). */
const struct pj_value *pj_get(const struct pj_value *v, const char *key);
/* pj_int: 0 and *out when V is an integer that fits a long long; -1 otherwise. */
int pj_int(const struct pj_value *v, long long *out);
/* pj_str: the NUL-terminated string of V (owned by V), or NULL when V is not a string. */
const char *pj_str(const struct pj_value *v);
/* pj_count / pj_at: the elements of an array (0 and NULL for anything else). */
size_t pj_count(const struct pj_value *v);
const struct pj_value *pj_at(const struct pj_value *v, size_t i);

/* An output buffer that grows; on allocation failure it stays failed and pj_buf_ok says so. */
struct pj_buf {
	char *data;
	size_t len, cap;
	int failed;
};

void pj_buf_add(struct pj_buf *b, const char *s);
void pj_buf_addf(struct pj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* pj_buf_str: S as a JSON string literal, quotes included; NULL gives null. */
void pj_buf_str(struct pj_buf *b, const char *s);
int pj_buf_ok(const struct pj_buf *b);
void pj_buf_free(struct pj_buf *b);

#endif

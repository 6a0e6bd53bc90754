/* util: error buffers, whole-file I/O, atomic writes, SHA-256, the cJSON getters. No printing, no exit. */
#ifndef LM_UTIL_H
#define LM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define LM_ERRLEN 512

/* A macro's value as a string literal. */
#define LM_XSTR(x) #x
#define LM_STR(x) LM_XSTR(x)

/* Error codes returned (negated) by every module; main maps them to exit codes. */
enum {
	LM_OK = 0,
	LM_EFAIL = -1,    /* the operation failed (exit 1) */
	LM_EINPUT = -2,   /* bad usage or input (exit 2) */
	LM_EREFUSED = -3, /* refused by a gate (exit 3) */
};

/* Formats into err (LM_ERRLEN bytes, may be NULL) and returns code. */
int lm_err(char *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* snprintf that reports truncation: returns 0 when it fit, -1 otherwise. */
int lm_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reads all of path (at most max bytes) into *out, NUL-terminated; *len excludes the NUL.
 * *out belongs to the caller (free). */
int lm_read_file(char **out, size_t *len, const char *path, size_t max, char *err);

/* Writes data to path atomically: a temporary file beside it (O_EXCL), fsync, rename, fsync
 * of the directory. On any failure nothing is left at path or beside it. */
int lm_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode, char *err);

/* Creates a unique temporary file beside path and returns its fd; *tmp (caller frees)
 * receives its name. */
int lm_tmp_beside(char **tmp, const char *path, char *err);

/* Finishes a temporary file from lm_tmp_beside: fsync, close, rename onto path, fsync the
 * directory. Closes fd and unlinks tmp on failure. */
int lm_commit_tmp(int fd, const char *tmp, const char *path, char *err);

/* v[0..n) into *out (caller frees; NUL-terminated) with a leading "~/" as $HOME/: a shell expands
 * ~ only at a word's start, so a config file's value and a flag's --state=~/x reach us as typed.
 * list: v is comma-separated and each item's "~/", after its blanks, is expanded. LM_EINPUT when
 * a "~/" is there and HOME is unset or empty, LM_EFAIL out of memory; *out NULL then. */
int lm_home_expand(char **out, const char *v, size_t n, int list);

/* mkdir -p with mode 0700 for what it creates. */
int lm_mkdirs(const char *path, char *err);

/* SHA-256 of a buffer or of a file, as 64 lowercase hex digits plus NUL. */
void lm_sha256_hex(char out[65], const void *data, size_t len);
int lm_sha256_file(char out[65], const char *path, char *err);

/* Incremental SHA-256; one context per stream, freed by lm_sha256_final or lm_sha256_free. */
typedef struct lm_sha256 lm_sha256;
lm_sha256 *lm_sha256_new(void);
void lm_sha256_update(lm_sha256 *c, const void *data, size_t len);
void lm_sha256_final(lm_sha256 *c, char out[65]);
void lm_sha256_free(lm_sha256 *c);

/* Zeroes n bytes at p (NULL or 0: nothing) in a way the compiler may not remove as a dead store:
 * explicit_bzero where the C library has it, memset_s on macOS (which lacks explicit_bzero),
 * else memset through a volatile function pointer. Every secret (a password, a token, the
 * environment's copy of one) is wiped with this and nothing else. */
void lm_wipe(void *p, size_t n);

/* Monotonic milliseconds, for deadlines. */
int64_t lm_now_ms(void);

/* Names with where they came from, sorted for n log n repeat checks and lookups. */
typedef struct {
	const char *name;
	size_t pos;
} lm_name_at;
/* Sorts v[0..n) by name (bytewise), then pos. */
void lm_name_sort(lm_name_at *v, size_t n);
/* In v[0..n) sorted by lm_name_sort, an entry named name, or NULL. */
const lm_name_at *lm_name_find(const lm_name_at *v, size_t n, const char *name);

/* The first of names[0..n), in order, equal to an earlier one: its index; n when they all
 * differ; (size_t)-1 when out of memory. Sorts a copy once: n log n. */
size_t lm_first_repeat(const char *const *names, size_t n);

/* The edit distance of a's first la bytes and b (Levenshtein, a swap of two neighbours counting
 * as one edit): for "did you mean" on short names; SIZE_MAX when either is 64 bytes or more. */
size_t lm_edits(const char *a, size_t la, const char *b);

/* s with each byte outside printable ASCII shown as '?', cut to fit out (len bytes, ending in
 * "..."); "?" for NULL: untrusted text fit for a message. Returns out. */
char *lm_printable(char *out, size_t len, const char *s);

/* Standard base64 of data (padded with '=' when pad), NUL-terminated; caller frees. NULL when
 * out of memory. */
char *lm_base64(const void *data, size_t len, int pad);
/* Decodes base64 (standard or URL-safe, padding optional) into *out (caller frees), *len bytes.
 * -1 on anything else, or out of memory. */
int lm_unbase64(unsigned char **out, size_t *len, const char *s);

/* True when s is 64 lowercase hex digits. */
int lm_is_sha256(const char *s);
/* True when s is an image or blob digest as this tool takes them: "sha256:" and 64 lowercase hex
 * digits (NULL is not). */
int lm_is_digest(const char *s);
/* The digest of len bytes at data: "sha256:" and their SHA-256 in lowercase hex, NUL-terminated. */
void lm_digest(char out[72], const void *data, size_t len);

/* Growable byte buffer. lm_buf_free releases it; b->data is NUL-terminated when non-NULL. */
typedef struct {
	char *data;
	size_t len, cap;
} lm_buf;
int lm_buf_add(lm_buf *b, const void *data, size_t len);
int lm_buf_addf(lm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lm_buf_free(lm_buf *b);

/* Runs argv (no shell; argv[0] looked up on $PATH) to its end, reading stdout and stderr
 * together (4 MiB of each kept; past that the stream is closed, so the child gets SIGPIPE or
 * EPIPE if it writes more); *status is its exit status, 128+N for signal N. A command that
 * cannot be started is LM_EINPUT. */
int lm_run(lm_buf *out, lm_buf *errout, int *status, const char *const *argv, char *err);

/* lm_run with a deadline (lm_now_ms() time; 0: none). With one, the child leads its own
 * process group; at the deadline that group is killed (SIGKILL) and reaped, and the call
 * fails (LM_EFAIL) with "ARGV0 timed out after N s", *status unset. */
int lm_run_deadline(lm_buf *out, lm_buf *errout, int *status, const char *const *argv, int64_t deadline_ms,
    char *err);

/* The cJSON getters, the one set: o's member named k (case-sensitive; o may be NULL or not an
 * object). Strings returned belong to o. */
struct cJSON;
/* Its text when it is a string, else NULL. */
const char *lm_jstr(const struct cJSON *o, const char *k);
/* Its text when it is a string, else dflt (e.g. "" where an absent field prints as nothing). */
const char *lm_jstr_or(const struct cJSON *o, const char *k, const char *dflt);
/* Its value when it is a number, else NAN. */
double lm_jnum(const struct cJSON *o, const char *k);
/* The member itself when it is an object, else NULL. */
const struct cJSON *lm_jobj(const struct cJSON *o, const char *k);
/* Adds member k to o: v, or null when v is NULL (lm_jadd_str) or not finite (lm_jadd_num). */
void lm_jadd_str(struct cJSON *o, const char *k, const char *v);
void lm_jadd_num(struct cJSON *o, const char *k, double v);

#endif

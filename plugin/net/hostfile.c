/* hostfile: see hostfile.h. Each rule names the OpenSSH function it follows. */
#include "net/hostfile.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/obj_mac.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NOTES_MAX 8

static int
is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static char
lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* s[0..len) decoded as __b64_pton does (whitespace skipped, '=' padding whose unused bits are
 * zero, nothing but whitespace after it), into *out (caller frees, sized from len): the byte
 * count, or -1. */
static long
b64_decode(unsigned char **out, const char *s, size_t len)
{
	static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char *o = calloc(len / 4 * 3 + 4, 1);
	size_t i, n = 0;
	int state = 0;

	if ((*out = o) == NULL)
		return -1;
	for (i = 0; i < len && s[i] != '='; i++) {
		const char *p = s[i] ? strchr(alpha, s[i]) : NULL;
		unsigned v;

		if (is_ws((unsigned char)s[i]))
			continue;
		if (p == NULL)
			return -1;
		v = (unsigned)(p - alpha);
		switch (state) {
		case 0: o[n] = (unsigned char)(v << 2); break;
		case 1: o[n++] |= (unsigned char)(v >> 4); o[n] = (unsigned char)((v & 0x0f) << 4); break;
		case 2: o[n++] |= (unsigned char)(v >> 2); o[n] = (unsigned char)((v & 0x03) << 6); break;
		default: o[n++] |= (unsigned char)v; break;
		}
		state = (state + 1) % 4;
	}
	if (i == len)
		return state == 0 ? (long)n : -1;
	if (state < 2)
		return -1;
	if (state == 2) { /* one byte of data: a second '=' must follow */
		for (i++; i < len && is_ws((unsigned char)s[i]); i++)
			;
		if (i == len || s[i] != '=')
			return -1;
	}
	for (i++; i < len; i++)
		if (!is_ws((unsigned char)s[i]))
			return -1;
	return o[n] == 0 ? (long)n : -1;
}

/* match_pattern: '*' any run, '?' any one byte, else the byte itself. */
static int
glob(const char *s, const char *p, size_t plen)
{
	size_t si = 0, pi = 0, star = SIZE_MAX, mark = 0, slen = strlen(s);

	while (si < slen) {
		if (pi < plen && p[pi] == '*') {
			star = pi++;
			mark = si;
		} else if (pi < plen && (p[pi] == '?' || p[pi] == s[si])) {
			si++;
			pi++;
		} else if (star != SIZE_MAX) {
			pi = star + 1;
			si = ++mark;
		} else
			return 0;
	}
	while (pi < plen && p[pi] == '*')
		pi++;
	return pi == plen;
}

/* match_hostname and match_pattern_list: name lower-cased, each pattern too; 1, 0, or -1 when a
 * negated pattern matches. */
static int
match_list(const char *name, const char *pat, size_t len)
{
	char *low = malloc(strlen(name) + 1), *sub = malloc(len + 1);
	size_t i = 0, k;
	int positive = 0, rc = -2;

	if (low == NULL || sub == NULL)
		goto done;
	for (k = 0; name[k] != '\0'; k++)
		low[k] = lower(name[k]);
	low[k] = '\0';
	while (i < len && rc == -2) {
		int neg = pat[i] == '!';

		i += (size_t)neg;
		for (k = 0; i < len && pat[i] != ','; i++, k++)
			sub[k] = lower(pat[i]);
		if (k >= 1023) /* OpenSSH's sub[1024]: too long a pattern fails the list */
			rc = 0;
		else if (neg && glob(low, sub, k))
			rc = -1;
		else if (!neg)
			positive |= glob(low, sub, k);
		i += i < len; /* the comma */
	}
	if (rc == -2)
		rc = positive;
done:
	free(low);
	free(sub);
	return rc == -2 ? 0 : rc;
}

/* match_maybe_hashed and host_hash: "|1|" base64(salt) "|" base64(HMAC-SHA1(salt, name)). */
static int
match_hashed(const char *field, size_t len, const char *name)
{
	const char *bar;
	unsigned char *salt = NULL, mac[EVP_MAX_MD_SIZE], enc[2][32];
	unsigned mlen = 0;
	long n;
	size_t slen;
	int rc = -1;

	if (len < 3 || memcmp(field, "|1|", 3) != 0 || (bar = memchr(field + 3, '|', len - 3)) == NULL)
		return -1;
	slen = (size_t)(bar - field - 3);
	if (slen == 0 || slen > 1024 || (n = b64_decode(&salt, field + 3, slen)) != 20)
		goto done;
	if (HMAC(EVP_sha1(), salt, 20, (const unsigned char *)name, strlen(name), mac, &mlen) == NULL || mlen != 20)
		goto done;
	EVP_EncodeBlock(enc[0], salt, 20); /* 28 characters each */
	EVP_EncodeBlock(enc[1], mac, 20);
	rc = len == 3 + 28 + 1 + 28 && memcmp(field + 3, enc[0], 28) == 0 && field[31] == '|' &&
	    memcmp(field + 32, enc[1], 28) == 0;
done:
	free(salt);
	return rc;
}

int
hostfile_match_hosts(const char *field, size_t len, const char *name)
{
	if (len > 0 && field[0] == '|')
		return match_hashed(field, len, name);
	return match_list(name, field, len) == 1;
}

char *
hostfile_name(const char *host, int port, const char *alias)
{
	unsigned char addr[16];
	int bracket = port != 0 && port != 22, rc;
	lm_buf b = {0};

	if (alias != NULL)
		return strdup(alias);
	rc = bracket ? lm_buf_addf(&b, "[%s]:%d", host, port) : lm_buf_addf(&b, "%s", host);
	if (rc != 0) {
		lm_buf_free(&b);
		return NULL;
	}
	if (inet_pton(AF_INET, host, addr) != 1 && strchr(host, ':') == NULL) /* ssh.c: a name, not an address */
		for (size_t i = 0; host[i] != '\0'; i++)
			b.data[i + (size_t)bracket] = lower(host[i]);
	return b.data;
}

/* A key blob, read field by field (sshbuf's SSH strings: a 32-bit length, then the bytes). */
typedef struct {
	const unsigned char *p;
	size_t n;
} blob_rd;

static int
get_str(blob_rd *r, const unsigned char **s, size_t *len)
{
	uint32_t l;

	if (r->n < 4)
		return -1;
	l = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	if (l > r->n - 4)
		return -1;
	*s = r->p + 4;
	*len = l;
	r->p += 4 + (size_t)l;
	r->n -= 4 + (size_t)l;
	return 0;
}

static int
get_is(blob_rd *r, const char *want)
{
	const unsigned char *s;
	size_t l;

	return get_str(r, &s, &l) == 0 && l == strlen(want) && memcmp(s, want, l) == 0 ? 0 : -1;
}

/* sshbuf_get_bignum2_bytes_direct: not negative, at most 16384 bits; *bits its size. */
static int
get_mpint(blob_rd *r, size_t *bits)
{
	const unsigned char *d;
	size_t l;

	if (get_str(r, &d, &l) != 0 || (l > 0 && (d[0] & 0x80)) || l > 2049 || (l == 2049 && d[0] != 0))
		return -1;
	for (; l > 0 && *d == 0; d++, l--)
		;
	*bits = l ? (l - 1) * 8 : 0;
	for (unsigned c = l ? d[0] : 0; c; c >>= 1)
		++*bits;
	return 0;
}

/* sshbuf_get_eckey: an uncompressed point on the curve, not at infinity. */
static int
get_point(blob_rd *r, int nid)
{
	const unsigned char *d;
	size_t l;
	EC_GROUP *g;
	EC_POINT *pt = NULL;
	int ok;

	if (get_str(r, &d, &l) != 0 || l == 0 || l > 133 || d[0] != 0x04)
		return -1;
	if ((g = EC_GROUP_new_by_curve_name(nid)) == NULL || (pt = EC_POINT_new(g)) == NULL)
		ok = 0;
	else
		ok = EC_POINT_oct2point(g, pt, d, l, NULL) == 1 && !EC_POINT_is_at_infinity(g, pt);
	EC_POINT_free(pt);
	EC_GROUP_free(g);
	return ok ? 0 : -1;
}

enum { K_ED25519, K_ECDSA, K_RSA, K_DSS, K_SK_ED25519, K_SK_ECDSA };

static const struct {
	const char *name, *blob; /* the type on the line, and the blob's own name */
	int kind, nid;
	const char *curve;
} key_types[] = {
	{"ssh-ed25519", "ssh-ed25519", K_ED25519, 0, NULL},
	{"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256", K_ECDSA, NID_X9_62_prime256v1, "nistp256"},
	{"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384", K_ECDSA, NID_secp384r1, "nistp384"},
	{"ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521", K_ECDSA, NID_secp521r1, "nistp521"},
	{"ssh-rsa", "ssh-rsa", K_RSA, 0, NULL},
	{"rsa-sha2-256", "ssh-rsa", K_RSA, 0, NULL},
	{"rsa-sha2-512", "ssh-rsa", K_RSA, 0, NULL},
	{"ssh-dss", "ssh-dss", K_DSS, 0, NULL},
	{"sk-ssh-ed25519@openssh.com", "sk-ssh-ed25519@openssh.com", K_SK_ED25519, 0, NULL},
	{"sk-ecdsa-sha2-nistp256@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com", K_SK_ECDSA,
	    NID_X9_62_prime256v1, "nistp256"},
};

/* The blob's fields for its kind (each key type's deserialize_public), nothing after them. */
static const char *
blob_problem(const unsigned char *blob, size_t len, size_t t)
{
	blob_rd r = {blob, len};
	const unsigned char *s;
	size_t l, bits;
	int k = key_types[t].kind, bad = 0;

	if (get_is(&r, key_types[t].blob) != 0)
		return "the key is not of the type the line names";
	if (k == K_ED25519 || k == K_SK_ED25519)
		bad = get_str(&r, &s, &l) != 0 || l != 32;
	else if (k == K_ECDSA || k == K_SK_ECDSA)
		bad = get_is(&r, key_types[t].curve) != 0 || get_point(&r, key_types[t].nid) != 0;
	else if (k == K_RSA) {
		if (get_mpint(&r, &bits) != 0 || get_mpint(&r, &bits) != 0)
			bad = 1;
		else if (bits < 1024)
			return "an RSA key of fewer than 1024 bits";
	} else
		for (int i = 0; i < 4 && !bad; i++)
			bad = get_mpint(&r, &bits) != 0;
	if (!bad && (k == K_SK_ED25519 || k == K_SK_ECDSA))
		bad = get_str(&r, &s, &l) != 0; /* the application */
	return bad ? "the key's fields are cut short or malformed" : r.n ? "bytes after the key's fields" : NULL;
}

int
hostfile_read_key(const char *s, unsigned char **blob, size_t *len, char *why, size_t whylen)
{
	size_t tl = strcspn(s, " \t"), bl, t = 0, n = sizeof key_types / sizeof key_types[0];
	const char *b, *problem = NULL;
	long got;

	*blob = NULL;
	*len = 0;
	if (s[tl] == '\0')
		problem = tl ? "no key after the key type" : "no key type";
	for (; problem == NULL && t < n; t++)
		if (strlen(key_types[t].name) == tl && memcmp(s, key_types[t].name, tl) == 0)
			break;
	if (problem == NULL && t == n)
		problem = tl > 21 && memcmp(s + tl - 21, "-cert-v01@openssh.com", 21) == 0 ?
		    "a certificate, which is not supported"
		    : "an unknown key type";
	if (problem == NULL) {
		for (b = s + tl; *b == ' ' || *b == '\t'; b++)
			;
		bl = strcspn(b, " \t");
		if (bl == 0)
			problem = "no key after the key type";
		else if ((got = b64_decode(blob, b, bl)) < 0)
			problem = "the key is not base64";
		else if ((problem = blob_problem(*blob, (size_t)got, t)) == NULL)
			*len = (size_t)got;
	}
	if (problem == NULL)
		return LM_OK;
	free(*blob);
	*blob = NULL;
	snprintf(why, whylen, "%s", problem);
	return LM_EINPUT;
}

/* check_markers: "@cert-authority" or "@revoked" ended by the first space (else tab) on the line;
 * one at most. Moves *cp past it and the blanks after it; -1 for a bad marker. */
static int
read_marker(const char **cp)
{
	const char *c = *cp, *sp;
	int mark = HOSTFILE_MARK_NONE;

	while (*c == '@') {
		if (mark != HOSTFILE_MARK_NONE || ((sp = strchr(c, ' ')) == NULL && (sp = strchr(c, '\t')) == NULL))
			return -1;
		if ((size_t)(sp - c) == strlen("@cert-authority") && memcmp(c, "@cert-authority", (size_t)(sp - c)) == 0)
			mark = HOSTFILE_MARK_CA;
		else if ((size_t)(sp - c) == strlen("@revoked") && memcmp(c, "@revoked", (size_t)(sp - c)) == 0)
			mark = HOSTFILE_MARK_REVOKED;
		else
			return -1;
		for (c = sp; *c == ' ' || *c == '\t'; c++)
			;
	}
	*cp = c;
	return mark;
}

/* hostfile_line for up to two names: *which gets bit i set when the host field names names[i]. */
static int
line_read(hostfile_entry *e, const char *line, const char *const names[2], int *which, char *why, size_t whylen)
{
	const char *cp = line + strspn(line, " \t"), *end;
	char *copy;
	int rc;

	memset(e, 0, sizeof *e);
	*which = 0;
	if (*cp == '\0' || *cp == '#' || *cp == '\n' || *cp == '\r')
		return 0;
	if ((e->marker = read_marker(&cp)) < 0) {
		snprintf(why, whylen, "an unknown or repeated @marker");
		return -1;
	}
	end = cp + strcspn(cp, " \t\n");
	if (*end != ' ' && *end != '\t') {
		snprintf(why, whylen, "nothing after the host names");
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		int m = names[i] ? hostfile_match_hosts(cp, (size_t)(end - cp), names[i]) : i == 0;

		if (m < 0) {
			snprintf(why, whylen, "a hashed host name that is not |1|SALT|HASH with a 20-byte salt");
			return -1;
		}
		*which |= m << i;
	}
	if (*which == 0)
		return 0;
	for (cp = end; *cp == ' ' || *cp == '\t'; cp++)
		;
	if (*cp == '\0' || *cp == '#' || *cp == '\n') {
		snprintf(why, whylen, "no key type");
		return -1;
	}
	if ((copy = strndup(cp, strcspn(cp, "\n"))) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	rc = hostfile_read_key(copy, &e->key, &e->key_len, why, whylen);
	free(copy);
	return rc == LM_OK ? 1 : -1;
}

int
hostfile_line(hostfile_entry *e, const char *line, const char *name, char *why, size_t whylen)
{
	const char *names[2] = {name, NULL};
	int which;

	return line_read(e, line, names, &which, why, whylen);
}

/* What the lines for one name say, as check_hostkeys_by_key_or_type and check_key_not_revoked
 * see them. */
typedef struct {
	unsigned long match, changed, revoked;
	int same_type;
	char type[48];
	unsigned char *old;
	size_t old_len;
} verdict;

/* The type name a blob starts with, into out; "" when it has none. */
static void
blob_type(char *out, size_t outlen, const unsigned char *blob, size_t len)
{
	blob_rd r = {blob, len};
	const unsigned char *s;
	size_t l;

	if (get_str(&r, &s, &l) != 0 || l >= outlen)
		l = 0;
	memcpy(out, l ? (const char *)s : "", l);
	out[l] = '\0';
}

static void
note(hostfile_result *r, const char *path, unsigned long line, const char *why)
{
	if (r->nnotes++ < NOTES_MAX)
		lm_buf_addf(&r->notes, "%s%s:%lu: %s", r->notes.len ? "; " : "", path, line, why);
}

static void
tally(verdict *v, const hostfile_entry *e, unsigned long line, const unsigned char *key, size_t len,
    const char *offered)
{
	int same = e->key_len == len && memcmp(e->key, key, len) == 0;
	char t[48];

	if (e->marker == HOSTFILE_MARK_REVOKED) {
		if (same && v->revoked == 0)
			v->revoked = line;
		return;
	}
	if (v->match)
		return;
	if (same) {
		v->match = line;
		return;
	}
	blob_type(t, sizeof t, e->key, e->key_len);
	v->same_type |= strcmp(t, offered) == 0;
	v->changed = line;
	snprintf(v->type, sizeof v->type, "%s", t);
	free(v->old);
	v->old = malloc(e->key_len);
	if (v->old != NULL)
		memcpy(v->old, e->key, e->key_len);
	v->old_len = v->old ? e->key_len : 0;
}

static int
status_of(const verdict *v)
{
	return v->revoked ? HOSTFILE_REVOKED : v->match ? HOSTFILE_MATCH : v->changed ? HOSTFILE_CHANGED
	    : HOSTFILE_UNKNOWN;
}

/* Every line of f, for names[0] and (when not NULL) names[1]. */
static int
scan(hostfile_result *r, verdict v[2], FILE *f, const char *path, const char *const names[2],
    const unsigned char *key, size_t len, char *err)
{
	char *line = NULL, why[128], offered[48];
	unsigned long no = 0;
	size_t cap = 0;
	int rc = LM_OK;

	blob_type(offered, sizeof offered, key, len);
	while (getline(&line, &cap, f) > 0) {
		hostfile_entry e;
		int which, got = line_read(&e, line, names, &which, why, sizeof why);

		no++;
		if (got < 0)
			note(r, path, no, why);
		else if (got > 0 && e.marker == HOSTFILE_MARK_CA)
			note(r, path, no, "@cert-authority is not supported: line ignored");
		else if (got > 0)
			for (int i = 0; i < 2; i++)
				if (which & (1 << i))
					tally(&v[i], &e, no, key, len, offered);
		free(e.key);
	}
	if (ferror(f))
		rc = lm_err(err, LM_EINPUT, "cannot read known hosts %s: %s", path, strerror(errno));
	free(line);
	return rc;
}

int
hostfile_check(hostfile_result *r, const char *path, const char *host, int port, const char *alias,
    const unsigned char *key, size_t len, char *err)
{
	verdict v[2] = {{0}, {0}};
	char *plain = NULL;
	const char *names[2];
	struct stat st;
	FILE *f;
	int rc;

	memset(r, 0, sizeof *r);
	if ((r->name = hostfile_name(host, port, alias)) == NULL ||
	    (alias == NULL && port != 0 && port != 22 && (plain = hostfile_name(host, 22, NULL)) == NULL)) {
		free(r->name);
		r->name = NULL;
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	names[0] = r->name;
	names[1] = plain;
	if (stat(path, &st) != 0) {
		r->sys_errno = errno;
		rc = errno == ENOENT ? LM_OK : lm_err(err, LM_EINPUT, "known hosts %s: %s", path, strerror(errno));
		goto done;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = lm_err(err, LM_EINPUT, "known hosts %s: not a regular file", path);
		goto done;
	}
	if ((f = fopen(path, "re")) == NULL) {
		r->sys_errno = errno;
		rc = lm_err(err, LM_EINPUT, "cannot read known hosts %s: %s", path, strerror(errno));
		goto done;
	}
	rc = scan(r, v, f, path, names, key, len, err);
	fclose(f);
done:
	if (r->nnotes > NOTES_MAX)
		lm_buf_addf(&r->notes, "; and %u more such lines", r->nnotes - NOTES_MAX);
	r->status = status_of(&v[0]);
	/* sshconnect.c: "checking without port identifier", where only a match counts; a @revoked
	 * key there is refused too (OpenSSH records it under [host]:port). */
	if (r->status == HOSTFILE_UNKNOWN && plain != NULL && status_of(&v[1]) != HOSTFILE_CHANGED &&
	    status_of(&v[1]) != HOSTFILE_UNKNOWN) {
		r->status = status_of(&v[1]);
		r->line = r->status == HOSTFILE_REVOKED ? v[1].revoked : v[1].match;
	} else
		r->line = r->status == HOSTFILE_REVOKED ? v[0].revoked : r->status == HOSTFILE_MATCH ? v[0].match
		    : v[0].changed;
	if (r->status == HOSTFILE_CHANGED) {
		snprintf(r->type, sizeof r->type, "%s", v[0].type);
		r->old = v[0].old;
		r->old_len = v[0].old_len;
		v[0].old = NULL;
		r->other_types = !v[0].same_type;
	}
	free(v[0].old);
	free(v[1].old);
	free(plain);
	return rc;
}

void
hostfile_result_free(hostfile_result *r)
{
	free(r->name);
	free(r->old);
	lm_buf_free(&r->notes);
	memset(r, 0, sizeof *r);
}

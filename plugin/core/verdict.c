/* verdict: see verdict.h. */
#include "core/verdict.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "core/ledger.h"

struct verdict_key {
	EVP_PKEY *pkey;
	int priv;
	char id[VERDICT_KEYID_LEN + 1];
};

/* The id of pkey: "sha256:" + hex SHA-256 of its raw public key. */
static int
key_id(char out[VERDICT_KEYID_LEN + 1], EVP_PKEY *pkey)
{
	unsigned char raw[32];
	size_t n = sizeof raw;

	if (EVP_PKEY_get_raw_public_key(pkey, raw, &n) != 1 || n != sizeof raw)
		return -1;
	memcpy(out, "sha256:", 7);
	lm_sha256_hex(out + 7, raw, n);
	return 0;
}

void
verdict_key_free(verdict_key *k)
{
	if (k == NULL)
		return;
	EVP_PKEY_free(k->pkey);
	free(k);
}

const char *
verdict_key_id(const verdict_key *k)
{
	return k->id;
}

/* Writes len bytes of data to a new file path (O_EXCL|O_NOFOLLOW, mode), fsynced. */
static int
write_new(const char *path, const void *data, size_t len, mode_t mode, char *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	const char *p = data;

	if (fd < 0)
		return lm_err(err, errno == EEXIST ? LM_EINPUT : LM_EFAIL, "%s: %s%s", path, strerror(errno),
		    errno == EEXIST ? " (a key is never overwritten: choose another PATH, or remove it first)" : "");
	if (fchmod(fd, mode) != 0)
		goto fail;
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto fail;
		p += w, len -= (size_t)w;
	}
	if (fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	return LM_OK;
fail:
	lm_err(err, LM_EFAIL, "%s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(path);
	return LM_EFAIL;
}

/* The PEM text of pkey's private (priv) or public half into *out (caller wipes and frees). */
static int
pem_of(char **out, size_t *len, EVP_PKEY *pkey, int priv)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long n;
	int ok;

	*out = NULL;
	if (b == NULL)
		return -1;
	ok = priv ? PEM_write_bio_PrivateKey(b, pkey, NULL, NULL, 0, NULL, NULL) : PEM_write_bio_PUBKEY(b, pkey);
	if (ok == 1 && (n = BIO_get_mem_data(b, &p)) > 0 && (*out = malloc((size_t)n)) != NULL) {
		memcpy(*out, p, (size_t)n);
		*len = (size_t)n;
		lm_wipe(p, (size_t)n);
	}
	BIO_free(b);
	return *out ? 0 : -1;
}

int
verdict_key_generate(char keyid[VERDICT_KEYID_LEN + 1], const char *path, char *err)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
	EVP_PKEY *pkey = NULL;
	char pub[4096], *priv_pem = NULL, *pub_pem = NULL;
	size_t priv_len = 0, pub_len = 0;
	struct stat st;
	int rc;

	keyid[0] = '\0';
	if (lm_fmt(pub, sizeof pub, "%s.pub", path) != 0) {
		rc = lm_err(err, LM_EINPUT, "%s: path too long", path);
		goto done;
	}
	/* Both names are checked before either is written: nothing half-done. */
	if (lstat(path, &st) == 0 || lstat(pub, &st) == 0) {
		rc = lm_err(err, LM_EINPUT, "%s exists: a key is never overwritten (choose another PATH, or remove it "
		    "first)", lstat(path, &st) == 0 ? path : pub);
		goto done;
	}
	if (ctx == NULL || EVP_PKEY_keygen_init(ctx) != 1 || EVP_PKEY_keygen(ctx, &pkey) != 1 ||
	    key_id(keyid, pkey) != 0 || pem_of(&priv_pem, &priv_len, pkey, 1) != 0 ||
	    pem_of(&pub_pem, &pub_len, pkey, 0) != 0) {
		rc = lm_err(err, LM_EFAIL, "libcrypto could not make an Ed25519 key");
		goto done;
	}
	if ((rc = write_new(path, priv_pem, priv_len, 0600, err)) != LM_OK)
		goto done;
	if ((rc = write_new(pub, pub_pem, pub_len, 0644, err)) != LM_OK)
		unlink(path);
done:
	if (priv_pem != NULL)
		lm_wipe(priv_pem, priv_len);
	free(priv_pem);
	free(pub_pem);
	EVP_PKEY_free(pkey);
	EVP_PKEY_CTX_free(ctx);
	if (rc != LM_OK)
		keyid[0] = '\0';
	return rc;
}

/* No passphrase: a key that asks for one is refused, never prompted for. */
static int
no_pass(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return -1;
}

/* The keys of a trusted-key file, as trust_parse reads them. */
static int trust_parse(verdict_trust *out, const char *path, const char *text, size_t len, char *err);

int
verdict_key_load(verdict_key **out, const char *path, int priv, char *err)
{
	char *text = NULL;
	size_t len = 0;
	struct stat st;
	BIO *b = NULL;
	EVP_PKEY *pkey = NULL;
	verdict_key *k = NULL;
	verdict_trust one = {0};
	int rc;

	*out = NULL;
	if ((rc = lm_read_file(&text, &len, path, VERDICT_KEYFILE_MAX, err)) != LM_OK)
		return LM_EINPUT;
	if (!priv) { /* a public key file, as strictly as a trusted-key file: one key */
		if ((rc = trust_parse(&one, path, text, len, err)) == LM_OK && one.n != 1)
			rc = lm_err(err, LM_EINPUT, "%s: %zu public keys: want one", path, one.n);
		if (rc == LM_OK)
			*out = one.keys[0], one.n = 0;
		verdict_trust_clear(&one);
		goto done;
	}
	if (stat(path, &st) != 0 || (st.st_mode & 077) != 0) {
		rc = lm_err(err, LM_EINPUT, "%s: a private key others can read is refused (chmod 600 it)", path);
		goto done;
	}
	if ((b = BIO_new_mem_buf(text, (int)len)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	if (strstr(text, "PRIVATE KEY-----") != NULL)
		pkey = PEM_read_bio_PrivateKey(b, NULL, no_pass, NULL);
	if (pkey == NULL) {
		rc = lm_err(err, LM_EINPUT, "%s: not a PEM private key (want the files `lume-metal key generate` writes, "
		    "without a passphrase)", path);
		goto done;
	}
	if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_ED25519) {
		rc = lm_err(err, LM_EINPUT, "%s: not an Ed25519 key", path);
		goto done;
	}
	if ((k = calloc(1, sizeof *k)) == NULL || key_id(k->id, pkey) != 0) {
		rc = lm_err(err, LM_EFAIL, "%s: cannot read its public key", path);
		goto done;
	}
	k->pkey = pkey;
	k->priv = priv;
	pkey = NULL;
	*out = k;
	k = NULL;
	rc = LM_OK;
done:
	BIO_free(b);
	EVP_PKEY_free(pkey);
	free(k);
	if (text != NULL)
		lm_wipe(text, len);
	free(text);
	return rc;
}

/* sshd's StrictModes (OpenSSH's safe_path) for a trusted-key file: its canonical path (links
 * resolved) is a regular file, and it and each directory above it, up to and including $HOME
 * when the file is under it, else up to /, is owned by root or this user and writable by
 * neither its group nor others. canon gets the canonical path. */
static int
strict_modes(char canon[PATH_MAX], const char *path, char *err)
{
	char home[PATH_MAX], dir[PATH_MAX], *slash;
	const char *h = getenv("HOME");
	int stop_home = h != NULL && *h != '\0' && realpath(h, home) != NULL;
	struct stat st;

	if (realpath(path, canon) == NULL)
		return lm_err(err, LM_EINPUT, "%s: %s", path, strerror(errno));
	if (stat(canon, &st) != 0 || !S_ISREG(st.st_mode))
		return lm_err(err, LM_EINPUT, "%s: not a regular file", path);
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022) != 0)
		return lm_err(err, LM_EINPUT, "%s: refused: a trusted-key file must be owned by you or root and writable by "
		    "no one else (as sshd's StrictModes wants authorized_keys; chmod go-w it)", path);
	memcpy(dir, canon, PATH_MAX);
	while ((slash = strrchr(dir, '/')) != NULL) {
		int bad;

		slash[slash == dir] = '\0'; /* the parent; "/" stays "/" */
		bad = stat(dir, &st) != 0 ? 1 : (st.st_mode & 022) != 0 ? 2 : st.st_uid != 0 && st.st_uid != geteuid() ? 3 : 0;
		if (bad)
			return lm_err(err, LM_EINPUT, "%s: refused: its folder %s is %s (a trusted-key file's folders, up to "
			    "your home or /, must be owned by you or root and writable by no one else, as sshd's StrictModes "
			    "wants)", path, dir, bad == 1 ? "unreadable" : bad == 2 ? "writable by its group or others" :
			    "owned by another user");
		if ((stop_home && strcmp(dir, home) == 0) || strcmp(dir, "/") == 0)
			break;
	}
	return LM_OK;
}

/* Why line (n bytes) of a trusted-key file, outside a public key block, is refused. */
static int
refuse_line(const char *path, int line, const char *s, size_t n, char *err)
{
	char label[48];
	size_t ln = n > 16 ? n - 16 : 0;

	if (ln > 0 && ln < sizeof label && memcmp(s, "-----BEGIN ", 11) == 0 && memcmp(s + n - 5, "-----", 5) == 0 &&
	    strspn(s + 11, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ") == ln) {
		memcpy(label, s + 11, ln);
		label[ln] = '\0';
		if (strstr(label, "PRIVATE KEY") != NULL)
			return lm_err(err, LM_EINPUT, "%s:%d: a private key (%s): a trusted-key file holds public keys only "
			    "(trust the .pub file `lume-metal key generate` wrote beside it)", path, line, label);
		return lm_err(err, LM_EINPUT, "%s:%d: a %s, not a public key: refused (want BEGIN PUBLIC KEY blocks, as "
		    "`openssl pkey -pubout` writes them)", path, line, strstr(label, "CERTIFICATE") ? "certificate" : label);
	}
	return lm_err(err, LM_EINPUT, "%s:%d: not part of a public key: refused (a trusted-key file holds -----BEGIN PUBLIC "
	    "KEY----- blocks and blank lines, nothing else)", path, line);
}

/* Adds the key of the PEM block pem (len bytes, BEGIN to END), begun on line, to out, unless
 * out has it already; refused past VERDICT_TRUST_MAX. */
static int
trust_add(verdict_trust *out, const char *path, int line, const char *pem, size_t len, char *err)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	unsigned char *der = NULL;
	const unsigned char *q;
	long dlen = 0;
	EVP_PKEY *pkey = NULL;
	verdict_key *k = NULL;
	char id[VERDICT_KEYID_LEN + 1];
	int rc = LM_OK;

	if (b == NULL || PEM_bytes_read_bio(&der, &dlen, NULL, PEM_STRING_PUBLIC, b, no_pass, NULL) != 1 ||
	    (q = der, pkey = d2i_PUBKEY(NULL, &q, dlen)) == NULL || q != der + dlen)
		rc = lm_err(err, LM_EINPUT, "%s:%d: the public key block does not decode to a public key", path, line);
	else if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_ED25519)
		rc = lm_err(err, LM_EINPUT, "%s:%d: not an Ed25519 key (want the .pub file `lume-metal key generate` writes)",
		    path, line);
	else if (key_id(id, pkey) != 0)
		rc = lm_err(err, LM_EINPUT, "%s:%d: cannot read the public key", path, line);
	for (size_t i = 0; rc == LM_OK && i < out->n; i++)
		if (strcmp(out->keys[i]->id, id) == 0)
			goto done; /* listed twice: trusted once */
	if (rc == LM_OK && out->n == VERDICT_TRUST_MAX)
		rc = lm_err(err, LM_EINPUT, "%s:%d: more than %d trusted keys: refused", path, line, VERDICT_TRUST_MAX);
	else if (rc == LM_OK && (k = calloc(1, sizeof *k)) == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	else if (rc == LM_OK) {
		memcpy(k->id, id, sizeof id);
		k->pkey = pkey;
		pkey = NULL;
		out->keys[out->n++] = k;
	}
done:
	EVP_PKEY_free(pkey);
	OPENSSL_free(der);
	BIO_free(b);
	return rc;
}

/* Every key of a trusted-key file's text: blank lines and -----BEGIN/END PUBLIC KEY----- blocks
 * of base64 lines, nothing else (each refused with its line), at least one key. */
static int
trust_parse(verdict_trust *out, const char *path, const char *text, size_t len, char *err)
{
	static const char begin[] = "-----BEGIN PUBLIC KEY-----", end[] = "-----END PUBLIC KEY-----";
	const char *p = text, *stop = text + len, *block = NULL;
	int line = 0, start = 0, keys = 0, rc;

	while (p < stop) {
		const char *nl = memchr(p, '\n', (size_t)(stop - p)), *e = nl ? nl : stop;
		size_t n = (size_t)(e - p);

		line++;
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (block == NULL && strspn(p, " \t") >= n)
			; /* blank */
		else if (block == NULL && n == sizeof begin - 1 && memcmp(p, begin, n) == 0)
			block = p, start = line;
		else if (block == NULL)
			return refuse_line(path, line, p, n, err);
		else if (n == sizeof end - 1 && memcmp(p, end, n) == 0) {
			if ((rc = trust_add(out, path, start, block, (size_t)(e - block), err)) != LM_OK)
				return rc;
			block = NULL;
			keys++;
		} else if (n == 0 || n > 76 || strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") < n)
			return lm_err(err, LM_EINPUT, "%s:%d: not base64 inside the public key begun on line %d: refused", path,
			    line, start);
		p = nl ? nl + 1 : stop;
	}
	if (block != NULL)
		return lm_err(err, LM_EINPUT, "%s:%d: the public key begun here has no %s line", path, start, end);
	if (keys == 0)
		return lm_err(err, LM_EINPUT, "%s: no public key in it", path);
	return LM_OK;
}

int
verdict_trust_load(verdict_trust *out, const char *list, char *err)
{
	const char *p = list ? list : "";
	char canon[PATH_MAX], *path = NULL, *text = NULL;
	size_t len = 0;
	int rc = LM_OK;

	memset(out, 0, sizeof *out);
	while (*p && rc == LM_OK) {
		size_t n = strcspn(p, ","), a = 0, b = n;

		while (a < b && (p[a] == ' ' || p[a] == '\t'))
			a++;
		while (b > a && (p[b - 1] == ' ' || p[b - 1] == '\t'))
			b--;
		if (b > a && (rc = lm_home_expand(&path, p + a, b - a, 0)) != LM_OK)
			rc = lm_err(err, rc, rc == LM_EINPUT ? "~/ with no HOME set" : "out of memory");
		else if (b > a && (rc = strict_modes(canon, path, err)) == LM_OK &&
		    (rc = lm_read_file(&text, &len, canon, VERDICT_KEYFILE_MAX, err)) == LM_OK)
			rc = trust_parse(out, path, text, len, err);
		free(path);
		free(text);
		path = text = NULL;
		p += n + (p[n] == ',');
	}
	if (rc != LM_OK)
		verdict_trust_clear(out);
	return rc == LM_OK ? LM_OK : rc == LM_EFAIL ? LM_EFAIL : LM_EINPUT;
}

void
verdict_trust_clear(verdict_trust *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++)
		verdict_key_free(t->keys[i]);
	t->n = 0;
}

int
verdict_pae(lm_buf *out, const char *type, const void *body, size_t len)
{
	if (lm_buf_addf(out, "DSSEv1 %zu %s %zu ", strlen(type), type, len) != 0 || lm_buf_add(out, body, len) != 0)
		return -1;
	return 0;
}

/* Standard base64 of data (caller frees). */
static char *
b64_encode(const void *data, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);

	if (out != NULL)
		EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

/* Decodes base64 (standard or URL-safe, padding optional) into *out (caller frees), *len
 * bytes. -1 on anything else. */
static int
b64_decode(unsigned char **out, size_t *len, const char *s)
{
	size_t n = strlen(s), o = 0;
	unsigned acc = 0;
	int bits = 0;
	unsigned char *d;

	while (n > 0 && s[n - 1] == '=')
		n--;
	if (strlen(s) - n > 2 || n % 4 == 1 || (d = malloc(n * 3 / 4 + 1)) == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i], v;

		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '+' || c == '-')
			v = 62;
		else if (c == '/' || c == '_')
			v = 63;
		else {
			free(d);
			return -1;
		}
		acc = (acc << 6) | (unsigned)v;
		if ((bits += 6) >= 8) {
			bits -= 8;
			d[o++] = (unsigned char)(acc >> bits);
		}
	}
	*out = d;
	*len = o;
	return 0;
}

cJSON *
verdict_statement(const char *name, const char *digest, const char *reference, const cJSON *key,
    const cJSON *records)
{
	cJSON *s, *subj, *d, *p;

	if (name == NULL || digest == NULL || key == NULL || records == NULL || strncmp(digest, "sha256:", 7) != 0 ||
	    !lm_is_sha256(digest + 7) || (s = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddStringToObject(s, "_type", VERDICT_STATEMENT_TYPE);
	subj = cJSON_AddArrayToObject(s, "subject");
	d = cJSON_CreateObject();
	cJSON_AddItemToArray(subj, d);
	cJSON_AddStringToObject(d, "name", name);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(d, "digest"), "sha256", digest + 7);
	cJSON_AddStringToObject(s, "predicateType", VERDICT_PREDICATE_TYPE);
	p = cJSON_AddObjectToObject(s, "predicate");
	cJSON_AddItemToObject(p, "key", cJSON_Duplicate(key, 1));
	cJSON_AddItemToObject(p, "records", cJSON_Duplicate(records, 1));
	if (reference)
		cJSON_AddStringToObject(p, "image", reference);
	cJSON_AddStringToObject(p, "lumeMetal", LM_VERSION);
	if (cJSON_GetObjectItemCaseSensitive(p, "lumeMetal") == NULL ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(p, "records"))) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

int
verdict_sign(char **out, size_t *len, const cJSON *statement, const verdict_key *k, char *err)
{
	char *payload = cJSON_PrintUnformatted(statement), *p64 = NULL, *s64 = NULL;
	lm_buf pae = {0};
	unsigned char sig[64];
	size_t siglen = sizeof sig;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	cJSON *env = NULL, *sigs, *one;
	int rc = LM_OK;

	*out = NULL;
	if (!k->priv) {
		rc = lm_err(err, LM_EINPUT, "a public key cannot sign");
		goto done;
	}
	if (payload == NULL || md == NULL || verdict_pae(&pae, VERDICT_PAYLOAD_TYPE, payload, strlen(payload)) != 0) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	if (EVP_DigestSignInit(md, NULL, NULL, NULL, k->pkey) != 1 ||
	    EVP_DigestSign(md, sig, &siglen, (const unsigned char *)pae.data, pae.len) != 1 || siglen != sizeof sig) {
		rc = lm_err(err, LM_EFAIL, "libcrypto could not sign with the Ed25519 key");
		goto done;
	}
	if ((p64 = b64_encode(payload, strlen(payload))) == NULL || (s64 = b64_encode(sig, siglen)) == NULL ||
	    (env = cJSON_CreateObject()) == NULL) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	cJSON_AddStringToObject(env, "payloadType", VERDICT_PAYLOAD_TYPE);
	cJSON_AddStringToObject(env, "payload", p64);
	sigs = cJSON_AddArrayToObject(env, "signatures");
	cJSON_AddItemToArray(sigs, one = cJSON_CreateObject());
	cJSON_AddStringToObject(one, "keyid", k->id);
	cJSON_AddStringToObject(one, "sig", s64);
	if ((*out = cJSON_PrintUnformatted(env)) == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	else if ((*len = strlen(*out)) > VERDICT_ENVELOPE_MAX) {
		rc = lm_err(err, LM_EINPUT, "the signed verdict is larger than %u bytes", VERDICT_ENVELOPE_MAX);
		free(*out);
		*out = NULL;
	}
done:
	cJSON_Delete(env);
	EVP_MD_CTX_free(md);
	lm_buf_free(&pae);
	free(payload);
	free(p64);
	free(s64);
	return rc;
}

const char *
verdict_status_name(int status)
{
	switch (status) {
	case VERDICT_TRUSTED: return "trusted";
	case VERDICT_UNTRUSTED: return "untrusted";
	case VERDICT_UNSIGNED: return "unsigned";
	default: return "refused";
	}
}

int
verdict_too_deep(const char *s, size_t len, int max)
{
	int depth = 0, in_str = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
		} else if (c == '"')
			in_str = 1;
		else if (c == '[' || c == '{') {
			if (++depth > max)
				return 1;
		} else if (c == ']' || c == '}')
			depth--;
	}
	return 0;
}

void
verdict_opened_clear(verdict_opened *o)
{
	if (o == NULL)
		return;
	cJSON_Delete(o->key);
	cJSON_Delete(o->records);
	o->key = o->records = NULL;
}

static int
refuse(verdict_opened *o, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
refuse(verdict_opened *o, int status, const char *fmt, ...)
{
	va_list ap;

	o->status = status;
	va_start(ap, fmt);
	vsnprintf(o->why, sizeof o->why, fmt, ap);
	va_end(ap);
	verdict_opened_clear(o);
	return LM_EREFUSED;
}

/* A keyid as an envelope names it, kept only when it is printable ASCII of a sane length. */
static void
claimed_id(char out[VERDICT_KEYID_LEN + 1], const cJSON *id)
{
	out[0] = '\0';
	if (!cJSON_IsString(id) || strlen(id->valuestring) > VERDICT_KEYID_LEN || id->valuestring[0] == '\0')
		return;
	for (const char *p = id->valuestring; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			return;
	strcpy(out, id->valuestring);
}

static const char *
gstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The statement's checks (verdict_open, once a trusted key verified it). */
static int
check_statement(verdict_opened *o, const unsigned char *payload, size_t plen, const char *digest)
{
	cJSON *st = NULL, *pred;
	const cJSON *subj, *e, *key, *recs;
	const char *s;
	char why[160];
	int found = 0, n = 0, rc = LM_OK;

	if (verdict_too_deep((const char *)payload, plen, VERDICT_DEPTH_MAX))
		return refuse(o, VERDICT_BAD, "the statement nests deeper than %d levels", VERDICT_DEPTH_MAX);
	if ((st = cJSON_ParseWithLength((const char *)payload, plen)) == NULL || !cJSON_IsObject(st))
		rc = refuse(o, VERDICT_BAD, "the signed payload is not a JSON object");
	else if ((s = gstr(st, "_type")) == NULL || strcmp(s, VERDICT_STATEMENT_TYPE) != 0)
		rc = refuse(o, VERDICT_BAD, "the signed payload is not an in-toto Statement v1");
	else if ((s = gstr(st, "predicateType")) == NULL || strcmp(s, VERDICT_PREDICATE_TYPE) != 0)
		rc = refuse(o, VERDICT_BAD, "the statement's predicateType is not %s", VERDICT_PREDICATE_TYPE);
	if (rc != LM_OK)
		goto done;
	subj = cJSON_GetObjectItemCaseSensitive(st, "subject");
	cJSON_ArrayForEach(e, subj) {
		s = gstr(cJSON_GetObjectItemCaseSensitive(e, "digest"), "sha256");
		found |= s != NULL && strcmp(s, digest + 7) == 0;
	}
	if (!cJSON_IsArray(subj) || !found) {
		rc = refuse(o, VERDICT_BAD, "the statement's subject is not this image (%.24s...): signed for another one",
		    digest);
		goto done;
	}
	pred = cJSON_GetObjectItemCaseSensitive(st, "predicate");
	key = cJSON_GetObjectItemCaseSensitive(pred, "key");
	recs = cJSON_GetObjectItemCaseSensitive(pred, "records");
	if (!cJSON_IsObject(key) || (s = gstr(key, "imageDigest")) == NULL || strcmp(s, digest) != 0) {
		rc = refuse(o, VERDICT_BAD, "the predicate's key is not of this image's digest");
		goto done;
	}
	cJSON_ArrayForEach(e, key) {
		if (++n > 16 || (!cJSON_IsString(e) && !cJSON_IsNull(e)) ||
		    (cJSON_IsString(e) && strlen(e->valuestring) > LEDGER_STR_MAX)) {
			rc = refuse(o, VERDICT_BAD, "the predicate's key is not a ledger key (at most 16 strings or nulls)");
			goto done;
		}
	}
	if (!cJSON_IsArray(recs) || cJSON_GetArraySize(recs) < 1 || cJSON_GetArraySize(recs) > VERDICT_RECORDS_MAX) {
		rc = refuse(o, VERDICT_BAD, "the predicate holds no records, or more than %d", VERDICT_RECORDS_MAX);
		goto done;
	}
	n = 0;
	cJSON_ArrayForEach(e, recs) {
		const char *bad = ledger_record_problem(e, why);

		if (bad != NULL) {
			rc = refuse(o, VERDICT_BAD, "the predicate's record %d is not a ledger record: %s", n, bad);
			goto done;
		}
		if (cJSON_HasObjectItem(e, LEDGER_IMPORTED)) {
			rc = refuse(o, VERDICT_BAD, "the predicate's record %d carries \"" LEDGER_IMPORTED "\", which only "
			    "an import sets: a signer cannot say where its own record came from", n);
			goto done;
		}
		if (ledger_time_cmp(gstr(e, "time"), o->time) > 0)
			snprintf(o->time, sizeof o->time, "%s", gstr(e, "time"));
		n++;
	}
	{
		char hex[65];

		lm_sha256_hex(hex, payload, plen);
		snprintf(o->statement, sizeof o->statement, "sha256:%s", hex);
	}
	o->key = cJSON_DetachItemFromObjectCaseSensitive(pred, "key");
	o->records = cJSON_DetachItemFromObjectCaseSensitive(pred, "records");
done:
	cJSON_Delete(st);
	return rc;
}

int
verdict_open(verdict_opened *o, const void *env, size_t len, const char *digest, const verdict_trust *trust)
{
	cJSON *doc = NULL;
	const cJSON *sigs, *sg, *t, *p;
	unsigned char *payload = NULL, *sig = NULL;
	size_t plen = 0, slen = 0;
	lm_buf pae = {0};
	int rc = LM_EREFUSED, nsig = 0, named_trusted = -1;

	memset(o, 0, sizeof *o);
	o->status = VERDICT_BAD;
	if (digest == NULL || strncmp(digest, "sha256:", 7) != 0 || !lm_is_sha256(digest + 7))
		return refuse(o, VERDICT_BAD, "no image digest to check the statement against");
	if (len > VERDICT_ENVELOPE_MAX)
		return refuse(o, VERDICT_BAD, "the envelope is larger than %u bytes", VERDICT_ENVELOPE_MAX);
	if (verdict_too_deep(env, len, VERDICT_DEPTH_MAX))
		return refuse(o, VERDICT_BAD, "the envelope nests deeper than %d levels", VERDICT_DEPTH_MAX);
	if ((doc = cJSON_ParseWithLength(env, len)) == NULL || !cJSON_IsObject(doc)) {
		rc = refuse(o, VERDICT_BAD, "not a DSSE envelope: not a JSON object");
		goto done;
	}
	t = cJSON_GetObjectItemCaseSensitive(doc, "payloadType");
	p = cJSON_GetObjectItemCaseSensitive(doc, "payload");
	sigs = cJSON_GetObjectItemCaseSensitive(doc, "signatures");
	if (!cJSON_IsString(t) || strcmp(t->valuestring, VERDICT_PAYLOAD_TYPE) != 0) {
		rc = refuse(o, VERDICT_BAD, "the envelope's payloadType is not %s", VERDICT_PAYLOAD_TYPE);
		goto done;
	}
	if (!cJSON_IsString(p) || b64_decode(&payload, &plen, p->valuestring) != 0) {
		rc = refuse(o, VERDICT_BAD, "the envelope's payload is not base64");
		goto done;
	}
	if (sigs != NULL && (!cJSON_IsArray(sigs) || cJSON_GetArraySize(sigs) > VERDICT_SIGS_MAX)) {
		rc = refuse(o, VERDICT_BAD, "the envelope's signatures are not an array of at most %d", VERDICT_SIGS_MAX);
		goto done;
	}
	if (verdict_pae(&pae, VERDICT_PAYLOAD_TYPE, payload, plen) != 0) {
		rc = refuse(o, VERDICT_BAD, "out of memory");
		goto done;
	}
	cJSON_ArrayForEach(sg, sigs) {
		const cJSON *s64 = cJSON_GetObjectItemCaseSensitive(sg, "sig");
		char claimed[VERDICT_KEYID_LEN + 1];

		if (!cJSON_IsString(s64) || s64->valuestring[0] == '\0')
			continue;
		nsig++;
		claimed_id(claimed, cJSON_GetObjectItemCaseSensitive(sg, "keyid"));
		if (o->signer[0] == '\0')
			strcpy(o->signer, claimed);
		free(sig);
		sig = NULL;
		if (b64_decode(&sig, &slen, s64->valuestring) != 0)
			continue;
		/* Every trusted key is tried: a keyid is a hint, not a claim to believe. */
		for (size_t k = 0; trust != NULL && k < trust->n; k++) {
			EVP_MD_CTX *md = EVP_MD_CTX_new();
			int ok = md != NULL && slen == 64 && EVP_DigestVerifyInit(md, NULL, NULL, NULL, trust->keys[k]->pkey) == 1 &&
			    EVP_DigestVerify(md, sig, slen, (const unsigned char *)pae.data, pae.len) == 1;

			EVP_MD_CTX_free(md);
			if (ok) {
				strcpy(o->signer, trust->keys[k]->id);
				o->status = VERDICT_TRUSTED;
				rc = check_statement(o, payload, plen, digest);
				goto done;
			}
			if (strcmp(claimed, trust->keys[k]->id) == 0)
				named_trusted = (int)k;
		}
	}
	if (nsig == 0)
		rc = refuse(o, VERDICT_UNSIGNED, "unsigned: the envelope holds no signature");
	else if (named_trusted >= 0) {
		strcpy(o->signer, trust->keys[named_trusted]->id);
		rc = refuse(o, VERDICT_BAD, "the signature does not verify with the trusted key %s it names: signed over "
		    "other bytes", trust->keys[named_trusted]->id);
	} else
		rc = refuse(o, VERDICT_UNTRUSTED, "signed by %s, a key this controller does not trust (trusted-key)",
		    o->signer[0] ? o->signer : "a key with no keyid");
done:
	cJSON_Delete(doc);
	lm_buf_free(&pae);
	free(payload);
	free(sig);
	return rc;
}

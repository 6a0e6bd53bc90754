/* verdict_key: the keys of verdicts (see verdict.h): Ed25519 and ECDSA P-256 key files, their ids, and
 * trusted-key files. */
#include "core/verdict.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

struct verdict_key {
	EVP_PKEY *pkey;
	int priv, ec;                       /* ec: ECDSA P-256, else Ed25519 */
	char id[VERDICT_KEYID_LEN + 1];     /* lume-metal's: "sha256:" + hex of the raw public key */
	char fpr[VERDICT_FPR_LEN + 1];      /* OpenSSH's: "SHA256:" + base64 of the SSH public key blob */
	char hint[VERDICT_HINT_LEN + 1];    /* RFC 6962's: base64 of the SHA-256 of the DER SPKI */
};

/* 0 for an Ed25519 key, 1 for ECDSA on the named curve P-256, -1 for anything else. */
static int
key_kind(EVP_PKEY *pkey)
{
	char group[32];

	if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_ED25519)
		return 0;
	if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC &&
	    EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, NULL) == 1 &&
	    strcmp(group, "prime256v1") == 0)
		return 1;
	return -1;
}

/* The raw public key: Ed25519's 32 bytes, or P-256's uncompressed point (0x04, X, Y: 65). */
static int
raw_public(unsigned char out[65], size_t *n, EVP_PKEY *pkey, int ec)
{
	BIGNUM *x = NULL, *y = NULL;
	int ok;

	if (!ec) {
		*n = 32;
		return EVP_PKEY_get_raw_public_key(pkey, out, n) == 1 && *n == 32 ? 0 : -1;
	}
	ok = EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_X, &x) == 1 &&
	    EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_Y, &y) == 1 && BN_bn2binpad(x, out + 1, 32) == 32 &&
	    BN_bn2binpad(y, out + 33, 32) == 32;
	out[0] = 4;
	*n = 65;
	BN_free(x);
	BN_free(y);
	return ok ? 0 : -1;
}

/* Appends an SSH string (a 32-bit big-endian length, then the bytes) to out at *at. */
static void
ssh_string(unsigned char *out, size_t *at, const void *s, size_t n)
{
	out[(*at)++] = (unsigned char)(n >> 24);
	out[(*at)++] = (unsigned char)(n >> 16);
	out[(*at)++] = (unsigned char)(n >> 8);
	out[(*at)++] = (unsigned char)n;
	memcpy(out + *at, s, n);
	*at += n;
}

/* A new key of pkey (taken: freed on failure too) with its three ids. NULL when pkey is not
 * Ed25519 or P-256 (*kind -1) or out of memory. */
static verdict_key *
key_new(EVP_PKEY *pkey, int priv, int *kind)
{
	unsigned char raw[65], blob[128], h[32], *der = NULL;
	size_t n = 0, at = 0;
	int dl;
	char *s = NULL;
	verdict_key *k = NULL;

	if ((*kind = key_kind(pkey)) < 0 || (k = calloc(1, sizeof *k)) == NULL)
		goto fail;
	k->pkey = pkey;
	k->priv = priv;
	k->ec = *kind;
	/* Go, and so cosign, hash the uncompressed point: the same key has the same hint. */
	if (k->ec)
		EVP_PKEY_set_utf8_string_param(pkey, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, "uncompressed");
	if (raw_public(raw, &n, pkey, k->ec) != 0)
		goto fail;
	memcpy(k->id, "sha256:", 7);
	lm_sha256_hex(k->id + 7, raw, n);
	/* The SSH public key blob: ssh-keygen -l's fingerprint, go-securesystemslib's SHA256KeyID. */
	ssh_string(blob, &at, k->ec ? "ecdsa-sha2-nistp256" : "ssh-ed25519", k->ec ? 19 : 11);
	if (k->ec)
		ssh_string(blob, &at, "nistp256", 8);
	ssh_string(blob, &at, raw, n);
	if (EVP_Digest(blob, at, h, NULL, EVP_sha256(), NULL) != 1 || (s = lm_base64(h, sizeof h, 0)) == NULL)
		goto fail;
	snprintf(k->fpr, sizeof k->fpr, "SHA256:%s", s);
	free(s);
	s = NULL;
	if ((dl = i2d_PUBKEY(pkey, &der)) <= 0 || EVP_Digest(der, (size_t)dl, h, NULL, EVP_sha256(), NULL) != 1 ||
	    (s = lm_base64(h, sizeof h, 1)) == NULL)
		goto fail;
	snprintf(k->hint, sizeof k->hint, "%s", s);
	free(s);
	OPENSSL_free(der);
	return k;
fail:
	OPENSSL_free(der);
	free(s);
	free(k);
	EVP_PKEY_free(pkey);
	return NULL;
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

const char *
verdict_key_fingerprint(const verdict_key *k)
{
	return k->fpr;
}

const char *
verdict_key_hint(const verdict_key *k)
{
	return k->hint;
}

int
verdict_key_sign_raw(unsigned char **sig, size_t *siglen, const verdict_key *k, const void *data, size_t len,
    char *err)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	size_t n = 0;
	int ok;

	*sig = NULL;
	*siglen = 0;
	if (!k->priv) {
		EVP_MD_CTX_free(md);
		return lm_err(err, LM_EINPUT, "a public key cannot sign");
	}
	ok = md != NULL && EVP_DigestSignInit(md, NULL, k->ec ? EVP_sha256() : NULL, NULL, k->pkey) == 1 &&
	    EVP_DigestSign(md, NULL, &n, data, len) == 1 && (*sig = malloc(n)) != NULL &&
	    EVP_DigestSign(md, *sig, &n, data, len) == 1;
	EVP_MD_CTX_free(md);
	if (!ok) {
		free(*sig);
		*sig = NULL;
		return lm_err(err, LM_EFAIL, "libcrypto could not sign with the %s key", k->ec ? "ECDSA P-256" : "Ed25519");
	}
	*siglen = n;
	return LM_OK;
}

int
verdict_key_verify(const verdict_key *k, const void *data, size_t len, const unsigned char *sig, size_t siglen)
{
	EVP_MD_CTX *md;
	int ok;

	if (siglen == 0 || siglen > 72 || (!k->ec && siglen != 64) || (md = EVP_MD_CTX_new()) == NULL)
		return 0;
	ok = EVP_DigestVerifyInit(md, NULL, k->ec ? EVP_sha256() : NULL, NULL, k->pkey) == 1 &&
	    EVP_DigestVerify(md, sig, siglen, data, len) == 1;
	EVP_MD_CTX_free(md);
	return ok;
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
verdict_key_generate(char keyid[VERDICT_KEYID_LEN + 1], char fpr[VERDICT_FPR_LEN + 1], const char *path, char *err)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
	EVP_PKEY *pkey = NULL;
	verdict_key *k = NULL;
	char pub[4096], *priv_pem = NULL, *pub_pem = NULL;
	size_t priv_len = 0, pub_len = 0;
	struct stat st;
	int rc, kind;

	keyid[0] = '\0';
	if (fpr != NULL)
		fpr[0] = '\0';
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
	    (k = key_new(pkey, 1, &kind)) == NULL || pem_of(&priv_pem, &priv_len, k->pkey, 1) != 0 ||
	    pem_of(&pub_pem, &pub_len, k->pkey, 0) != 0) {
		pkey = NULL; /* key_new took it */
		rc = lm_err(err, LM_EFAIL, "libcrypto could not make an Ed25519 key");
		goto done;
	}
	pkey = NULL;
	snprintf(keyid, VERDICT_KEYID_LEN + 1, "%s", k->id);
	if (fpr != NULL)
		snprintf(fpr, VERDICT_FPR_LEN + 1, "%s", k->fpr);
	if ((rc = write_new(path, priv_pem, priv_len, 0600, err)) != LM_OK)
		goto done;
	if ((rc = write_new(pub, pub_pem, pub_len, 0644, err)) != LM_OK)
		unlink(path);
done:
	if (priv_pem != NULL)
		lm_wipe(priv_pem, priv_len);
	free(priv_pem);
	free(pub_pem);
	verdict_key_free(k);
	EVP_PKEY_free(pkey);
	EVP_PKEY_CTX_free(ctx);
	if (rc != LM_OK && fpr != NULL)
		fpr[0] = '\0';
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
	verdict_trust one = {0};
	int rc, kind;

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
	if ((*out = key_new(pkey, 1, &kind)) == NULL)
		rc = kind < 0 ? lm_err(err, LM_EINPUT, "%s: not an Ed25519 or ECDSA P-256 key", path)
		              : lm_err(err, LM_EFAIL, "%s: cannot read its public key", path);
	pkey = NULL; /* key_new took it */
done:
	BIO_free(b);
	EVP_PKEY_free(pkey);
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
	int rc = LM_OK, kind = 0;

	if (b == NULL || PEM_bytes_read_bio(&der, &dlen, NULL, PEM_STRING_PUBLIC, b, no_pass, NULL) != 1 ||
	    (q = der, pkey = d2i_PUBKEY(NULL, &q, dlen)) == NULL || q != der + dlen)
		rc = lm_err(err, LM_EINPUT, "%s:%d: the public key block does not decode to a public key", path, line);
	else if ((k = key_new(pkey, 0, &kind)) == NULL) { /* key_new takes pkey, either way */
		pkey = NULL;
		rc = kind < 0 ? lm_err(err, LM_EINPUT, "%s:%d: not an Ed25519 or ECDSA P-256 key (want the .pub file "
		    "`lume-metal key generate` writes, or a cosign.pub)", path, line)
		              : lm_err(err, LM_EFAIL, "out of memory");
	} else
		pkey = NULL;
	for (size_t i = 0; rc == LM_OK && i < out->n; i++)
		if (strcmp(out->keys[i]->id, k->id) == 0)
			goto done; /* listed twice: trusted once */
	if (rc == LM_OK && out->n == VERDICT_TRUST_MAX)
		rc = lm_err(err, LM_EINPUT, "%s:%d: more than %d trusted keys: refused", path, line, VERDICT_TRUST_MAX);
	else if (rc == LM_OK) {
		out->keys[out->n++] = k;
		k = NULL;
	}
done:
	verdict_key_free(k);
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

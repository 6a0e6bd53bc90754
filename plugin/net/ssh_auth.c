/* ssh_auth: authentication (the agent, private keys, a password) and the checks of the secrets
 * before anything goes out; $LUME_METAL_PASSWORD's keeping (ssh_take_env_password). */
#include "net/ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/ssh_int.h"

/* Tries each key of the agent; *offered gets how many it holds. */
int
ssh_auth_agent(ssh_conn *c, int *offered)
{
	LIBSSH2_AGENT *a;
	struct libssh2_agent_publickey *id = NULL, *prev = NULL;
	int ok = 0;

	*offered = 0;
	if (getenv("SSH_AUTH_SOCK") == NULL || (a = libssh2_agent_init(c->s)) == NULL)
		return 0;
	if (libssh2_agent_connect(a) == 0 && libssh2_agent_list_identities(a) == 0)
		while (!ok && ssh_time_left(c) && libssh2_agent_get_identity(a, &id, prev) == 0) {
			++*offered;
			ok = libssh2_agent_userauth(a, c->o->user, id) == 0;
			prev = id;
		}
	libssh2_agent_disconnect(a);
	libssh2_agent_free(a);
	return ok;
}

/* $LUME_METAL_PASSWORD, taken out of the environment at start (ssh_take_env_password). */
static char env_pw[1024];
static size_t env_pw_len;

int
ssh_take_env_password(void)
{
	char *v = getenv("LUME_METAL_PASSWORD");
	size_t n;

	if (v == NULL)
		return 0;
	n = strlen(v);
	if (n < sizeof env_pw) {
		memcpy(env_pw, v, n);
		env_pw_len = n;
	}
	lm_wipe(v, n); /* the environment block itself, which /proc/PID/environ shows */
	unsetenv("LUME_METAL_PASSWORD");
	return n < sizeof env_pw ? 1 : -1;
}

/* Whether the first bytes of a key file are a public key's line ("ssh-ed25519 AAAA...") or
 * its name ends in .pub: what `ssh-keygen` writes beside the private key. */
static int
public_key(int fd, const char *path)
{
	static const char *const pre[] = {"ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-"};
	char head[16];
	ssize_t n = pread(fd, head, sizeof head, 0);
	size_t len = strlen(path);

	if (len > 4 && strcmp(path + len - 4, ".pub") == 0)
		return 1;
	for (size_t i = 0; n > 0 && i < sizeof pre / sizeof pre[0]; i++)
		if ((size_t)n >= strlen(pre[i]) && memcmp(head, pre[i], strlen(pre[i])) == 0)
			return 1;
	return 0;
}

/* Opens a secret (a password file, a private key) for reading, or says why not: it must be a
 * regular file (a FIFO or a device is refused; O_NONBLOCK keeps open from waiting for a FIFO's
 * writer past the deadline) that neither group nor others may read or write, as OpenSSH
 * requires of a private key. A symlink to such a file is followed: it is the file that counts.
 * A private key (key) that does not exist or is a public key says so first.
 * *fd, when fd is not NULL, belongs to the caller; else the file is only checked. */
static int
secret_open(int *fd, const char *what, const char *path, int key, char *err)
{
	struct stat st;
	int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), rc = LM_OK;

	if (f < 0 && (errno == EMFILE || errno == ENFILE)) {
		ssh_nofds_note();
		return lm_err(err, LM_EFAIL, "%s %s: cannot open it: out of file descriptors (this process's limit; "
		    "fewer at once with --parallel, or raise ulimit -n)", what, path);
	}
	if (f < 0 && key && errno == ENOENT)
		return lm_err(err, LM_EINPUT, "%s %s does not exist: -i takes the private key file (such as "
		    "~/.ssh/id_ed25519)", what, path);
	if (f < 0)
		return lm_err(err, LM_EINPUT, "%s %s: %s", what, path, strerror(errno));
	if (fstat(f, &st) != 0)
		rc = lm_err(err, LM_EINPUT, "%s %s: %s", what, path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = lm_err(err, LM_EINPUT, "%s %s: not a regular file (%s); refusing it", what, path,
		    S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : "a device or socket");
	else if (key && public_key(f, path))
		rc = lm_err(err, LM_EINPUT, "%s %s is a public key: -i takes the private key (%.*s, without .pub)",
		    what, path, (int)(strlen(path) > 4 && strcmp(path + strlen(path) - 4, ".pub") == 0 ?
		    strlen(path) - 4 : strlen(path)), path);
	else if (st.st_mode & 077)
		rc = lm_err(err, LM_EINPUT, "%s %s: group or others may read or write it (mode %04o); refusing it: "
		    "run `chmod 600 %s`", what, path, (unsigned)(st.st_mode & 07777), path);
	if (rc != LM_OK || fd == NULL)
		close(f);
	else
		*fd = f;
	return rc;
}

/* The identity and the password file are checked before anything goes out. */
int
ssh_check_secrets(const ssh_opts *o, char *err)
{
	int rc = LM_OK;

	if (o->identity != NULL)
		rc = secret_open(NULL, "private key", o->identity, 1, err);
	if (rc == LM_OK && o->password_file != NULL)
		rc = secret_open(NULL, "password file", o->password_file, 0, err);
	return rc;
}

/* Whether the private key on fd is protected by a passphrase: a PEM key with "ENCRYPTED" in its
 * header, or an OpenSSH key ("openssh-key-v1") whose cipher is not "none". libssh2 is given no
 * passphrase, so such a key works only through the agent. */
static int
key_encrypted(int fd)
{
	static const char begin[] = "-----BEGIN OPENSSH PRIVATE KEY-----";
	static const char magic[] = "openssh-key-v1";
	char buf[4096], b64[89];
	unsigned char raw[66];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	const char *p;
	size_t k = 0;
	uint32_t clen;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (strstr(buf, "ENCRYPTED") != NULL)
		return 1;
	if ((p = strstr(buf, begin)) == NULL)
		return 0;
	for (p += sizeof begin - 1; *p && k < sizeof b64 - 1; p++)
		if (*p != '\n' && *p != '\r')
			b64[k++] = *p;
	b64[k - k % 4] = '\0';
	if (k < 44 || EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)(k - k % 4)) < 23 ||
	    memcmp(raw, magic, sizeof magic) != 0)
		return 0;
	clen = (uint32_t)raw[15] << 24 | (uint32_t)raw[16] << 16 | (uint32_t)raw[17] << 8 | raw[18];
	return !(clen == 4 && memcmp(raw + 19, "none", 4) == 0);
}

/* Tries -i, else the configured identities, else OpenSSH's default ones, skipping those that
 * do not exist: 1 authenticated, 0 not. *offered counts the keys sent; *locked names (when
 * empty so far) the first that is protected by a passphrase, and *loose one that others may
 * read, neither of which is sent. */
int
ssh_auth_keys(ssh_conn *c, int *offered, char locked[4096], char loose[4096])
{
	static const char *const dflt[] = {"id_ed25519", "id_ecdsa", "id_rsa"};
	const char *home = getenv("HOME");
	char path[4096];
	int ok = 0;

	*offered = 0;
	for (size_t i = 0; !ok && ssh_time_left(c); i++) {
		const char *k;
		char msg[LM_ERRLEN];
		int fd, enc;

		if (c->o->identity != NULL)
			k = i == 0 ? c->o->identity : NULL;
		else if (c->o->identities != NULL)
			k = c->o->identities[i];
		else if (i < sizeof dflt / sizeof dflt[0] && lm_fmt(path, sizeof path, "%s/.ssh/%s",
		    home ? home : ".", dflt[i]) == 0)
			k = path;
		else
			k = NULL;
		if (k == NULL)
			break;
		if (access(k, F_OK) != 0 && c->o->identity == NULL)
			continue;
		if (secret_open(&fd, "private key", k, 1, msg) != LM_OK) {
			if (!*loose)
				snprintf(loose, 4096, "%s", k);
			continue;
		}
		enc = key_encrypted(fd);
		close(fd);
		if (enc) {
			if (!*locked)
				snprintf(locked, 4096, "%s", k);
			continue;
		}
		++*offered;
		ok = libssh2_userauth_publickey_fromfile(c->s, c->o->user, NULL, k, NULL) == 0;
	}
	return ok;
}

/* Whether a password can be tried (ssh_auth_password would send one). */
int
ssh_has_password(const ssh_opts *o)
{
	return o->password_file != NULL || (o->env_password && env_pw_len > 0) || o->lume_default_password;
}

/* Tries the password of --password-file, else the one taken from $LUME_METAL_PASSWORD, else
 * Lume's default when allowed: 1 authenticated, 0 not, -1 the file could not be read. Every
 * copy made here is wiped, the one libssh2 was given included. */
int
ssh_auth_password(ssh_conn *c, char *err)
{
	char pw[1024];
	size_t n = 0;
	ssize_t got;
	int ok = 0, fd;

	if (c->o->password_file != NULL) {
		if (secret_open(&fd, "password file", c->o->password_file, 0, err) != LM_OK)
			return -1;
		while (n < sizeof pw - 1 && ((got = read(fd, pw + n, sizeof pw - 1 - n)) > 0 ||
		    (got < 0 && errno == EINTR)))
			if (got > 0)
				n += (size_t)got;
		close(fd);
		pw[n] = '\0';
		n = strcspn(pw, "\r\n");
	} else if (c->o->env_password && env_pw_len > 0) {
		memcpy(pw, env_pw, n = env_pw_len);
	} else if (c->o->lume_default_password) {
		memcpy(pw, "lume", n = 4);
	} else
		return 0;
	ok = n > 0 && ssh_time_left(c) &&
	    libssh2_userauth_password_ex(c->s, c->o->user, (unsigned)strlen(c->o->user), pw, (unsigned)n, NULL) == 0;
	lm_wipe(pw, sizeof pw);
	return ok;
}

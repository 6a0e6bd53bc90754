/* ssh: see ssh.h. Blocking libssh2 calls, each bounded by the time left to the deadline. */
#include "net/ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <netdb.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/image.h"
#include "net/hostfile.h"

/* An upload's read buffer, on the heap: a pool thread's stack pages stay resident for the
 * whole run once touched, a freed buffer is reused by the next upload. */
#define UPLOAD_CHUNK (32u << 10)

struct ssh_conn {
	int fd;
	LIBSSH2_SESSION *s;
	ssh_opts opt; /* a copy; its strings must outlive the connection */
	const ssh_opts *o;
	char where[300]; /* user@host:port, for messages */
	char notes[LM_ERRLEN]; /* known_hosts lines skipped (ssh_known_hosts_notes), or "" */
	unsigned execs;  /* channels opened: exec, SFTP, SCP */
	/* Round trips (ssh.h): turns so far, and at the first channel's opening; whether bytes went
	 * out since the last turn (a send that asks for no answer is muted), and whether the last
	 * read found nothing (what comes next was waited for). */
	unsigned turns, turns_hs;
	int sent, starved, mute;
	/* The handshake gate's ticket while in the handshake, and whether it is out of the gate
	 * meanwhile, waiting on the guest (gate_yield). */
	struct gate_ticket *ticket;
	int gate_out;
	int64_t gate_wait; /* ms waited for the gate, in all */
};

static void gate_yield(ssh_conn *c, int out);

/* Set when this thread's connection ran out of file descriptors (see ssh_nofds_take). */
static _Thread_local int nofds;

void
ssh_nofds_note(void)
{
	nofds = 1;
}

int
ssh_nofds_take(void)
{
	int was = nofds;

	nofds = 0;
	return was;
}

/* Sets the session's per-call timeout to what is left; false when nothing is left. */
static int
time_left(ssh_conn *c)
{
	int64_t left = c->o->deadline_ms - lm_now_ms();

	if (left <= 0)
		return 0;
	libssh2_session_set_timeout(c->s, left > 0x7fffffff ? 0x7fffffff : (long)left);
	return 1;
}

static const char *
sess_err(ssh_conn *c)
{
	char *msg = NULL;

	libssh2_session_last_error(c->s, &msg, NULL, 0);
	return msg ? msg : "unknown error";
}

/* libssh2's socket I/O, counting the turns (ssh.h): data read after a read that found nothing,
 * with bytes sent since the last turn, starts a turn. */
static LIBSSH2_SEND_FUNC(count_send)
{
	ssh_conn *c = *abstract;
	ssize_t n;

	gate_yield(c, 0);
	n = send(socket, buffer, length, flags);

	if (n < 0)
		return -errno;
	if (n > 0 && !c->mute) {
		c->sent = 1;
		c->starved = 0;
	}
	return n;
}

static LIBSSH2_RECV_FUNC(count_recv)
{
	ssh_conn *c = *abstract;
	ssize_t n;

	gate_yield(c, 0);
	n = recv(socket, buffer, length, flags);
	if (n < 0) {
		int e = errno;

		if (e == EAGAIN || e == EWOULDBLOCK) {
			c->starved = 1;
			gate_yield(c, 1); /* libssh2 now waits for the guest: outside the gate */
		}
		return -e;
	}
	if (n > 0 && c->sent && c->starved) {
		c->turns++;
		c->sent = 0;
	}
	c->starved = 0;
	return n;
}

/* A channel opened: the first one ends the handshake's turns. */
static void
chan_opened(ssh_conn *c)
{
	if (c->execs++ == 0)
		c->turns_hs = c->turns;
}

/* Non-blocking connect to each address in turn, within the deadline. */
static int
tcp_connect(ssh_conn *c, int *why, char *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC}, *res, *ai;
	char port[8];
	int rc, last = 0;

	snprintf(port, sizeof port, "%d", c->o->port ? c->o->port : 22);
	if ((rc = getaddrinfo(c->o->host, port, &hints, &res)) != 0) {
		*why = SSH_UNREACHABLE;
		return lm_err(err, LM_EFAIL, "%s: cannot resolve: %s", c->where, gai_strerror(rc));
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol), soerr = 0;
		socklen_t sl = sizeof soerr;
		struct pollfd p;
		int64_t left;

		if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
			freeaddrinfo(res);
			ssh_nofds_note();
			*why = SSH_NOFDS;
			return lm_err(err, LM_EFAIL, "%s: cannot connect: out of file descriptors (this process's "
			    "limit; fewer at once with --parallel, or raise ulimit -n)", c->where);
		}
		if (fd < 0) {
			last = errno;
			continue;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS) {
			p = (struct pollfd){.fd = fd, .events = POLLOUT};
			left = c->o->deadline_ms - lm_now_ms();
			rc = left > 0 ? poll(&p, 1, (int)(left > 0x7fffffff ? 0x7fffffff : left)) : 0;
			if (rc == 0) {
				close(fd);
				freeaddrinfo(res);
				*why = SSH_TIMEOUT;
				return lm_err(err, LM_EFAIL, "%s: connect timed out", c->where);
			}
			if (rc > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0) {
				fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
				c->fd = fd;
				c->turns = 1; /* SYN out, SYN-ACK (and the guest's banner) back */
				freeaddrinfo(res);
				return LM_OK;
			}
			last = soerr ? soerr : errno;
		} else
			last = errno;
		close(fd);
	}
	freeaddrinfo(res);
	*why = SSH_UNREACHABLE;
	return lm_err(err, LM_EFAIL, "%s: cannot connect: %s%s", c->where, strerror(last),
	    last == EHOSTUNREACH || last == ENETUNREACH
	    ? " (on macOS, check the Local Network privacy setting for this tool)" : "");
}

/* Waits until the socket is ready in the direction libssh2 is blocked on, within the deadline. */
static int
wait_socket(ssh_conn *c, char *err)
{
	int dir = libssh2_session_block_directions(c->s);
	struct pollfd p = {.fd = c->fd};
	int64_t left = c->o->deadline_ms - lm_now_ms();

	p.events = (dir & LIBSSH2_SESSION_BLOCK_INBOUND ? POLLIN : 0) |
	    (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND ? POLLOUT : 0);
	if (p.events == 0)
		p.events = POLLIN;
	if (left <= 0 || poll(&p, 1, (int)(left > 0x7fffffff ? 0x7fffffff : left)) == 0)
		return lm_err(err, LM_EFAIL, "%s: timed out waiting for the command", c->where);
	return LM_OK;
}

void
ssh_fingerprint(char out[64], const unsigned char *blob, size_t len)
{
	unsigned char d[32], b64[48];
	unsigned n = 0;
	int m;

	EVP_Digest(blob, len, d, &n, EVP_sha256(), NULL);
	m = EVP_EncodeBlock(b64, d, 32);
	while (m > 0 && b64[m - 1] == '=')
		m--;
	snprintf(out, 64, "SHA256:%.*s", m, (char *)b64);
}

/* The name a host key is known under (hostfile_name adds the port). */
static const char *
key_name(const ssh_conn *c)
{
	return c->o->host_key_alias ? c->o->host_key_alias : c->o->host;
}

/* Lume has no rule of its own for VM names (trycua/cua libs/lume: LumeController's
 * normalizeVMName only turns "name:tag" into "name_tag", and Home.getVMDirectory makes the name a
 * directory), so this is a conservative one: letters, digits, '.', '_' and '-', not starting
 * with '-' or '.', at most 64 bytes. */
int
ssh_vm_name_ok(const char *name)
{
	return image_vm_name_ok(name); /* one rule for a VM name, wherever it is used */
}

/* A name fit to be written into known_hosts: host names and addresses (IPv6 and its %zone
 * included) only, so no space, newline, comma, wildcard, negation or marker can turn one line
 * into another host's entry; the VM of an alias "HOST/VM" must also pass ssh_vm_name_ok. */
static int
key_name_ok(const ssh_conn *c)
{
	const char *name = key_name(c), *vm = c->o->host_key_alias ? strrchr(name, '/') : NULL;
	size_t n = strlen(name);

	if (n == 0 || n > 255 || name[0] == '-' ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:%/") != n)
		return 0;
	return vm == NULL || ssh_vm_name_ok(vm + 1);
}

/* name as it may go into a message: what is not printable ASCII becomes '?'. */
static const char *
printable(char out[80], const char *name)
{
	size_t i;

	for (i = 0; name[i] != '\0' && i < 79; i++)
		out[i] = name[i] > 0x20 && name[i] < 0x7f ? name[i] : '?';
	out[i] = '\0';
	return out;
}

/* OpenSSH's name of a libssh2 host key type. */
static const char *
key_type_name(int type)
{
	switch (type) {
	case LIBSSH2_HOSTKEY_TYPE_RSA: return "ssh-rsa";
	case LIBSSH2_HOSTKEY_TYPE_DSS: return "ssh-dss";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return "ecdsa-sha2-nistp256";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return "ecdsa-sha2-nistp384";
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return "ecdsa-sha2-nistp521";
	case LIBSSH2_HOSTKEY_TYPE_ED25519: return "ssh-ed25519";
	default: return NULL;
	}
}

/* Appends "NAME KEYTYPE BASE64\n" to known_hosts with O_APPEND, as OpenSSH does: every other
 * line and comment stays as it is, a symlink is followed (the file it names gets the line),
 * and a file without a final newline gets one first. */
static int
append_known(ssh_conn *c, const char *name, const char *key, size_t len, int type, char *err)
{
	char *b64 = NULL, last = '\n';
	lm_buf line = {0};
	struct stat st;
	int fd = -1, rc = LM_OK;
	size_t off = 0;
	ssize_t w;

	if ((b64 = malloc(4 * ((len + 2) / 3) + 1)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)key, (int)len);
	if ((fd = open(c->o->known_hosts, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0600)) < 0 ||
	    fstat(fd, &st) != 0) {
		if (errno == EMFILE || errno == ENFILE)
			ssh_nofds_note();
		rc = lm_err(err, LM_EFAIL, "%s: %s", c->o->known_hosts, strerror(errno));
		goto done;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = lm_err(err, LM_EFAIL, "%s: not a regular file", c->o->known_hosts);
		goto done;
	}
	if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
		last = '\n';
	if ((last != '\n' && lm_buf_add(&line, "\n", 1) != 0) ||
	    lm_buf_addf(&line, "%s %s %s\n", name, key_type_name(type), b64) != 0) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	for (; off < line.len; off += (size_t)w)
		if ((w = write(fd, line.data + off, line.len - off)) < 0) {
			rc = lm_err(err, LM_EFAIL, "%s: %s", c->o->known_hosts, strerror(errno));
			goto done;
		}
done:
	if (fd >= 0)
		close(fd);
	lm_buf_free(&line);
	free(b64);
	return rc;
}

/* The known_hosts verdict on the offered key (hostfile.h) into *r: LM_OK for a match or an
 * unknown key (r->status says which), else a refusal, why and err saying what it is: a changed
 * key (both fingerprints, and the line), a revoked one (the line), or a file that cannot be read.
 * meanwhile: said of a changed key found on the check under the lock. */
static int
known_verdict(ssh_conn *c, hostfile_result *r, const char *key, size_t len, int type, const char *meanwhile,
    int *why, char *err)
{
	char fp[64], old[64], typ[128] = "", msg[LM_ERRLEN];
	int rc = hostfile_check(r, c->o->known_hosts, c->o->host, c->o->port, c->o->host_key_alias,
	    (const unsigned char *)key, len, msg);

	*why = rc == LM_OK && r->status != HOSTFILE_MATCH && r->status != HOSTFILE_UNKNOWN ? SSH_HOSTKEY_MISMATCH
	    : SSH_HOSTKEY_UNKNOWN;
	if (rc != LM_OK) {
		if (r->sys_errno == EMFILE || r->sys_errno == ENFILE)
			ssh_nofds_note();
		return lm_err(err, rc, "%s: %s", c->where, msg);
	}
	ssh_fingerprint(fp, (const unsigned char *)key, len);
	if (r->status == HOSTFILE_REVOKED)
		return lm_err(err, LM_EFAIL, "%s: HOST KEY REVOKED: the guest offers %s, which %s marks @revoked at line "
		    "%lu%s; refusing", c->where, fp, c->o->known_hosts, r->line, meanwhile);
	if (r->status != HOSTFILE_CHANGED)
		return LM_OK;
	ssh_fingerprint(old, r->old, r->old_len);
	if (r->other_types)
		snprintf(typ, sizeof typ, " (%s; the host is known only by other key types)", key_type_name(type));
	return lm_err(err, LM_EFAIL, "%s: HOST KEY CHANGED: the guest offers %s%s but %s has %s at line %lu%s; refusing "
	    "(if the guest was really rebuilt, remove its line from %s)", c->where, fp, typ, c->o->known_hosts, old,
	    r->line, meanwhile, c->o->known_hosts);
}

/* Adds a host key to known_hosts. Workers of one run and other runs may add keys at the same
 * time: the file is read and checked again under a mutex and an flock on FILE.lock, then the
 * one line is appended, so no writer drops another's line and a key added meanwhile is
 * checked like any other. */
static int
add_known(ssh_conn *c, const char *key, size_t len, int type, int *why, char *err)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	hostfile_result r;
	char lock[4200];
	int fd = -1, rc;

	*why = SSH_HOSTKEY_UNKNOWN;
	if (lm_fmt(lock, sizeof lock, "%s.lock", c->o->known_hosts) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", c->o->known_hosts);
	pthread_mutex_lock(&mu);
	if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0 || flock(fd, LOCK_EX) != 0) {
		if (errno == EMFILE || errno == ENFILE)
			ssh_nofds_note();
		rc = lm_err(err, LM_EFAIL, "%s: %s", lock, strerror(errno));
		goto done;
	}
	if ((rc = known_verdict(c, &r, key, len, type, " (added meanwhile)", why, err)) == LM_OK &&
	    r.status == HOSTFILE_UNKNOWN) /* else added meanwhile */
		rc = append_known(c, r.name, key, len, type, err);
	hostfile_result_free(&r);
done:
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&mu);
	return rc;
}

static int
check_hostkey(ssh_conn *c, int *why, char *err)
{
	hostfile_result r;
	const char *key;
	char fp[64];
	size_t len;
	int type, rc;

	*why = SSH_PROTOCOL;
	if ((key = libssh2_session_hostkey(c->s, &len, &type)) == NULL || key_type_name(type) == NULL)
		return lm_err(err, LM_EFAIL, "%s: no usable host key", c->where);
	rc = known_verdict(c, &r, key, len, type, "", why, err);
	if (rc == LM_OK && r.status == HOSTFILE_UNKNOWN && !c->o->accept_new) {
		ssh_fingerprint(fp, (const unsigned char *)key, len);
		rc = lm_err(err, LM_EFAIL, "%s: unknown host key %s (not in %s); pass --accept-new to trust it",
		    c->where, fp, c->o->known_hosts);
	} else if (rc == LM_OK && r.status == HOSTFILE_UNKNOWN)
		rc = add_known(c, key, len, type, why, err);
	/* What was skipped: after a refusal's message, else for the caller (ssh_known_hosts_notes). */
	if (r.notes.len && rc != LM_OK && strlen(err) < LM_ERRLEN - 1)
		snprintf(err + strlen(err), LM_ERRLEN - strlen(err), " (known hosts lines skipped: %s)", r.notes.data);
	else if (r.notes.len)
		snprintf(c->notes, sizeof c->notes, "%s", r.notes.data);
	hostfile_result_free(&r);
	return rc;
}

/* Tries each key of the agent; *offered gets how many it holds. */
static int
auth_agent(ssh_conn *c, int *offered)
{
	LIBSSH2_AGENT *a;
	struct libssh2_agent_publickey *id = NULL, *prev = NULL;
	int ok = 0;

	*offered = 0;
	if (getenv("SSH_AUTH_SOCK") == NULL || (a = libssh2_agent_init(c->s)) == NULL)
		return 0;
	if (libssh2_agent_connect(a) == 0 && libssh2_agent_list_identities(a) == 0)
		while (!ok && time_left(c) && libssh2_agent_get_identity(a, &id, prev) == 0) {
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
static int
check_secrets(const ssh_opts *o, char *err)
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
static int
auth_keys(ssh_conn *c, int *offered, char locked[4096], char loose[4096])
{
	static const char *const dflt[] = {"id_ed25519", "id_ecdsa", "id_rsa"};
	const char *home = getenv("HOME");
	char path[4096];
	int ok = 0;

	*offered = 0;
	for (size_t i = 0; !ok && time_left(c); i++) {
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

/* Whether a password can be tried (auth_password would send one). */
static int
has_password(const ssh_opts *o)
{
	return o->password_file != NULL || (o->env_password && env_pw_len > 0) || o->lume_default_password;
}

/* Tries the password of --password-file, else the one taken from $LUME_METAL_PASSWORD, else
 * Lume's default when allowed: 1 authenticated, 0 not, -1 the file could not be read. Every
 * copy made here is wiped, the one libssh2 was given included. */
static int
auth_password(ssh_conn *c, char *err)
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
	ok = n > 0 && time_left(c) &&
	    libssh2_userauth_password_ex(c->s, c->o->user, (unsigned)strlen(c->o->user), pw, (unsigned)n, NULL) == 0;
	lm_wipe(pw, sizeof pw);
	return ok;
}

/* OpenSSH's order of host key types, limited to what this libssh2 knows (1.10 has no
 * rsa-sha2-*, and its method_pref mishandles names it does not know). */
static void
prefer_hostkeys(LIBSSH2_SESSION *s)
{
	static const char *const order[] = {"ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
		"ecdsa-sha2-nistp521", "rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"};
	const char **have = NULL;
	char pref[256] = "";
	int n = libssh2_session_supported_algs(s, LIBSSH2_METHOD_HOSTKEY, &have);

	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
		for (int j = 0; j < n; j++)
			if (strcmp(order[i], have[j]) == 0) {
				strcat(pref, *pref ? "," : "");
				strcat(pref, order[i]);
			}
	if (n > 0)
		libssh2_free(s, have);
	if (*pref)
		libssh2_session_method_pref(s, LIBSSH2_METHOD_HOSTKEY, pref);
}

/* The handshake gate: at most gate_cap connections at once working in the handshake and
 * authentication, the CPU-heavy part of a connection: --parallel 256 would otherwise run 256
 * key exchanges at once on a few cores. A connection is in it only while it computes or sends:
 * while libssh2 waits for the guest's next packet it is out (gate_yield), so a round trip of
 * 80 ms holds no place (an unchanged rerun of 64 guests at RTT 80 took 2424 ms holding it
 * through the waits, most of it queueing for the 16 places). A holder inside for longer than
 * GATE_STALL_MS (a guest stalled mid-send) stops counting, so stalled guests cannot hold up
 * the rest for long; nothing waits for the gate while inside it, so it cannot deadlock. The
 * TCP connect is outside it. */
#define GATE_STALL_MS 3000

typedef struct gate_ticket {
	int64_t since;
	struct gate_ticket *next;
} gate_ticket;

static pthread_once_t gate_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static gate_ticket *gate_in; /* the holders; each ticket lives on its thread's stack */
static int gate_cap;

static void
gate_init(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	/* 8 per core, 16 to 64: below that the fleet waits on the gate, above it on the cores. */
	gate_cap = n < 2 ? 16 : n > 8 ? 64 : (int)n * 8;
}

/* Under gate_mu: the holders that count at now; *wake gets when the first of them stops. */
static int
gate_count(int64_t now, int64_t *wake)
{
	int n = 0;

	*wake = INT64_MAX;
	for (const gate_ticket *t = gate_in; t != NULL; t = t->next)
		if (now - t->since < GATE_STALL_MS) {
			n++;
			if (t->since + GATE_STALL_MS < *wake)
				*wake = t->since + GATE_STALL_MS;
		}
	return n;
}

/* Waits for a place in the gate. The wait is the controller's time, not the guest's: c's
 * deadline moves by it. */
static void
gate_enter(ssh_conn *c, gate_ticket *me)
{
	int64_t t0 = lm_now_ms(), now, wake;

	pthread_once(&gate_once, gate_init);
	pthread_mutex_lock(&gate_mu);
	while (gate_count(now = lm_now_ms(), &wake) >= gate_cap) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts); /* macOS has no pthread_condattr_setclock */
		ts.tv_sec += (wake - now) / 1000;
		ts.tv_nsec += (long)((wake - now) % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&gate_cv, &gate_mu, &ts);
	}
	me->since = now;
	me->next = gate_in;
	gate_in = me;
	pthread_mutex_unlock(&gate_mu);
	c->opt.deadline_ms += now - t0;
	c->gate_wait += now - t0;
}

static void
gate_leave(gate_ticket *me)
{
	pthread_mutex_lock(&gate_mu);
	for (gate_ticket **p = &gate_in; *p != NULL; p = &(*p)->next)
		if (*p == me) {
			*p = me->next;
			break;
		}
	pthread_cond_signal(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

/* Leaves the gate (out) when libssh2 is about to wait for the guest, or enters it again before
 * its next read or write; nothing outside the handshake (no ticket). */
static void
gate_yield(ssh_conn *c, int out)
{
	if (c->ticket == NULL || c->gate_out == out)
		return;
	c->gate_out = out;
	if (out)
		gate_leave(c->ticket);
	else
		gate_enter(c, c->ticket);
}

/* The SSH layer over c->fd: handshake, host key, authentication. */
static int
session_handshake(ssh_conn *c, int *why_out, char *err)
{
	const ssh_opts *o = c->o;
	int why = SSH_PROTOCOL, rc, r = 0, agent = 0, keys = 0;
	char locked[4096] = "", loose[4096] = "";

	if ((c->s = libssh2_session_init_ex(NULL, NULL, NULL, c)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "%s: out of memory", c->where);
		goto fail;
	}
	libssh2_session_set_blocking(c->s, 1);
	libssh2_session_callback_set(c->s, LIBSSH2_CALLBACK_SEND, (void *)count_send);
	libssh2_session_callback_set(c->s, LIBSSH2_CALLBACK_RECV, (void *)count_recv);
	prefer_hostkeys(c->s);
	if (!time_left(c) || (r = libssh2_session_handshake(c->s, c->fd)) != 0) {
		why = !time_left(c) || r == LIBSSH2_ERROR_TIMEOUT ? SSH_TIMEOUT : SSH_PROTOCOL;
		rc = lm_err(err, LM_EFAIL, "%s: SSH handshake %s", c->where,
		    why == SSH_TIMEOUT ? "timed out" : sess_err(c));
		goto fail;
	}
	if ((rc = check_hostkey(c, &why, err)) != LM_OK)
		goto fail;
	/* No "none" request for the server's list of methods (libssh2_userauth_list): it is a round
	 * trip, and a key or password is offered whatever the list says (OpenSSH answers a method
	 * it does not allow as it answers a wrong key). */
	if (!time_left(c)) {
		why = SSH_TIMEOUT;
		rc = lm_err(err, LM_EFAIL, "%s: timed out", c->where);
		goto fail;
	}
	if (!auth_agent(c, &agent) && !auth_keys(c, &keys, locked, loose)) {
		r = auth_password(c, err);
		if (r < 0) {
			why = SSH_AUTH;
			rc = LM_EINPUT;
			goto fail;
		}
		if (r == 0) {
			why = time_left(c) ? SSH_AUTH : SSH_TIMEOUT;
			if (why == SSH_TIMEOUT)
				rc = lm_err(err, LM_EFAIL, "%s: timed out authenticating", c->where);
			else if (*locked && !agent)
				rc = lm_err(err, LM_EFAIL, "%s: private key %s is protected by a passphrase and no ssh-agent "
				    "holds it: run `ssh-add %s` (lume-metal asks for no passphrase)", c->where, locked, locked);
			else if (!agent && !keys && !has_password(o))
				rc = lm_err(err, LM_EFAIL, "%s: no credentials to offer: no ssh-agent key (%s), no -i, none of "
				    "~/.ssh/id_ed25519, id_ecdsa, id_rsa%s%s%s%s, and no --password-file or $LUME_METAL_PASSWORD",
				    c->where, getenv("SSH_AUTH_SOCK") ? "the agent holds none" : "SSH_AUTH_SOCK is unset",
				    o->identities ? " or the OpenSSH configuration's IdentityFile" : "",
				    *loose ? " (skipped " : "", loose, *loose ? ": group or others may read it; chmod 600 it)" : "");
			else
				rc = lm_err(err, LM_EFAIL, "%s: authentication failed (tried the agent, the identity file and "
				    "any password)", c->where);
			goto fail;
		}
	}
	return LM_OK;
fail:
	if (why_out)
		*why_out = why;
	return rc;
}

/* Waits, within the connection's own deadline, for the guest to speak first (an SSH server
 * sends its banner as soon as it accepts): one that never does must not take a place in the
 * gate, where it would hold up the others and stretch their deadlines. */
static int
wait_banner(ssh_conn *c, int *why, char *err)
{
	struct pollfd p = {.fd = c->fd, .events = POLLIN};
	int64_t left;
	int rc;

	do {
		left = c->o->deadline_ms - lm_now_ms();
		rc = left > 0 ? poll(&p, 1, (int)(left > 0x7fffffff ? 0x7fffffff : left)) : 0;
	} while (rc < 0 && errno == EINTR);
	if (rc == 0) {
		if (why)
			*why = SSH_TIMEOUT;
		return lm_err(err, LM_EFAIL, "%s: SSH handshake timed out (the guest sent no SSH banner)", c->where);
	}
	return LM_OK;
}

/* session_handshake through the gate, once the guest has spoken. */
static int
session_start(ssh_conn *c, int *why_out, char *err)
{
	gate_ticket me;
	int rc;

	if ((rc = wait_banner(c, why_out, err)) != LM_OK)
		return rc;
	gate_enter(c, &me);
	c->ticket = &me;
	c->gate_out = 0;
	rc = session_handshake(c, why_out, err);
	if (!c->gate_out)
		gate_leave(&me);
	c->ticket = NULL;
	return rc;
}

static ssh_conn *
conn_new(const ssh_opts *o, int fd)
{
	ssh_conn *c = calloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	c->fd = fd;
	c->opt = *o;
	c->o = &c->opt;
	snprintf(c->where, sizeof c->where, "%s@%s%s%s:%d", o->user, strchr(o->host, ':') ? "[" : "", o->host,
	    strchr(o->host, ':') ? "]" : "", o->port ? o->port : 22);
	return c;
}

/* What is refused before anything goes out: a host-key name that could forge a known_hosts
 * line, and secrets that others may read or that are not files. */
static int
conn_check(ssh_conn *c, int *why, char *err)
{
	char shown[80];
	int rc;

	if (!key_name_ok(c)) {
		if (why)
			*why = SSH_HOSTKEY_UNKNOWN;
		return lm_err(err, LM_EFAIL, "%s: refusing the host-key name \"%s\": only letters, digits, '.', '_', "
		    "'-' (and ':', '%%', '/' between host and VM) may name a host or a Lume VM in known_hosts",
		    c->where, printable(shown, key_name(c)));
	}
	if ((rc = check_secrets(c->o, err)) != LM_OK && why)
		*why = nofds ? SSH_NOFDS : SSH_AUTH;
	return rc;
}

int
ssh_connect(ssh_conn **out, int *why, const ssh_opts *o, char *err)
{
	ssh_conn *c = conn_new(o, -1);
	int w = 0, rc;

	*out = NULL;
	if (c == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if ((rc = conn_check(c, &w, err)) == LM_OK && (rc = tcp_connect(c, &w, err)) == LM_OK &&
	    (rc = session_start(c, &w, err)) == LM_OK) {
		*out = c;
		return LM_OK;
	}
	if (why)
		*why = w;
	ssh_close(c);
	return rc;
}

int
ssh_connect_fd(ssh_conn **out, int *why, const ssh_opts *o, int fd, char *err)
{
	ssh_conn *c = conn_new(o, fd);
	int rc;

	*out = NULL;
	if (c == NULL) {
		close(fd);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	if ((rc = conn_check(c, why, err)) != LM_OK || (rc = session_start(c, why, err)) != LM_OK) {
		ssh_close(c);
		return rc;
	}
	*out = c;
	return LM_OK;
}

unsigned
ssh_exec_count(const ssh_conn *c)
{
	return c->execs;
}

int64_t
ssh_gate_wait_ms(const ssh_conn *c)
{
	return c->gate_wait;
}

void
ssh_round_trips(const ssh_conn *c, unsigned *total, unsigned *after_handshake)
{
	*total = c->turns;
	*after_handshake = c->execs ? c->turns - c->turns_hs : 0;
}

struct _LIBSSH2_SESSION *
ssh_session(ssh_conn *c)
{
	return c->s;
}

int
ssh_fd(const ssh_conn *c)
{
	return c->fd;
}

const char *
ssh_where(const ssh_conn *c)
{
	return c->where;
}

const char *
ssh_known_hosts_notes(const ssh_conn *c)
{
	return c->notes[0] ? c->notes : NULL;
}

void
ssh_close(ssh_conn *c)
{
	if (c == NULL)
		return;
	if (c->s != NULL) {
		libssh2_session_set_timeout(c->s, 2000);
		libssh2_session_disconnect(c->s, "lume-metal done");
		libssh2_session_free(c->s);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

void
ssh_result_free(ssh_result *r)
{
	lm_buf_free(&r->out);
	lm_buf_free(&r->err);
}

/* Opens local for an upload and gives a read buffer (*buf, UPLOAD_CHUNK bytes, the caller's):
 * the descriptor, or an LM_* error (a lack of descriptors noted: ssh_nofds_note). */
static int
upload_open(const char *local, char **buf, char *err)
{
	int fd;

	if ((fd = open(local, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno == EMFILE || errno == ENFILE)
			ssh_nofds_note();
		return lm_err(err, LM_EINPUT, "%s: %s", local, strerror(errno));
	}
	if ((*buf = malloc(UPLOAD_CHUNK)) == NULL) {
		close(fd);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	return fd;
}

struct ssh_chan {
	ssh_conn *c;
	LIBSSH2_CHANNEL *ch;
	ssh_result r;
	int eof_sent;
};

int
ssh_chan_open(ssh_chan **out, ssh_conn *c, const remote_cmd *cmd, char *err)
{
	ssh_chan *h;

	*out = NULL;
	if ((h = calloc(1, sizeof *h)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	h->c = c;
	h->r.exit_code = -1;
	if (!time_left(c) || (h->ch = libssh2_channel_open_session(c->s)) == NULL) {
		lm_err(err, LM_EFAIL, "%s: cannot open a channel: %s", c->where, time_left(c) ? sess_err(c) : "timed out");
		ssh_chan_free(h);
		return LM_EFAIL;
	}
	chan_opened(c);
	if (libssh2_channel_exec(h->ch, rcmd_text(cmd)) != 0) {
		lm_err(err, LM_EFAIL, "%s: cannot run the command: %s", c->where, sess_err(c));
		ssh_chan_free(h);
		return LM_EFAIL;
	}
	*out = h;
	return LM_OK;
}

void
ssh_chan_free(ssh_chan *h)
{
	if (h == NULL)
		return;
	libssh2_session_set_blocking(h->c->s, 1);
	if (h->ch != NULL)
		libssh2_channel_free(h->ch);
	ssh_result_free(&h->r);
	free(h);
}

int
ssh_chan_write(ssh_chan *h, const void *in, size_t inlen, char *err)
{
	ssh_conn *c = h->c;
	ssize_t n;

	for (size_t off = 0; off < inlen; off += (size_t)n)
		if (!time_left(c) || (n = libssh2_channel_write(h->ch, (const char *)in + off, inlen - off)) < 0) {
			/* Cleaning up after a dead guest must not take another whole timeout. */
			libssh2_session_set_timeout(c->s, 1000);
			return lm_err(err, LM_EFAIL, "%s: writing the command's input: %s", c->where,
			    time_left(c) ? sess_err(c) : "timed out");
		}
	return LM_OK;
}

int
ssh_chan_write_file(ssh_chan *h, const char *local, uint64_t *sent, char *err)
{
	char *buf;
	ssize_t n;
	int fd, rc = LM_OK;

	*sent = 0;
	if ((fd = upload_open(local, &buf, err)) < 0)
		return fd;
	while (rc == LM_OK && (n = read(fd, buf, UPLOAD_CHUNK)) > 0)
		if ((rc = ssh_chan_write(h, buf, (size_t)n, err)) == LM_OK)
			*sent += (uint64_t)n;
	if (rc == LM_OK && n < 0)
		rc = lm_err(err, LM_EFAIL, "%s: read: %s", local, strerror(errno));
	free(buf);
	close(fd);
	return rc;
}

/* Reads both streams into h->r, without blocking on either (they share one window, so a
 * chatty stderr cannot stall stdout), until the command's EOF, or with mark until stdout
 * holds a line equal to mark. Bounded by SSH_EXEC_OUT_MAX and SSH_EXEC_ERR_MAX. With waiting,
 * it never sleeps on the socket: where it would, *waiting is set and it returns LM_OK. */
static int
chan_pump(ssh_chan *h, const char *mark, int *waiting, char *err)
{
	ssh_conn *c = h->c;
	size_t mlen = mark ? strlen(mark) : 0;
	char buf[16384];
	ssize_t n;
	int rc = LM_OK, spun = 0;

	libssh2_session_set_blocking(c->s, 0);
	for (;;) {
		int got = 0, eof = libssh2_channel_eof(h->ch); /* before reading: data that came with EOF is read */

		for (int stream = 0; stream <= SSH_EXTENDED_DATA_STDERR; stream += SSH_EXTENDED_DATA_STDERR) {
			lm_buf *b = stream ? &h->r.err : &h->r.out;

			while ((n = libssh2_channel_read_ex(h->ch, stream, buf, sizeof buf)) > 0) {
				size_t max = stream ? SSH_EXEC_ERR_MAX : SSH_EXEC_OUT_MAX;

				got = 1;
				if (b->len + (size_t)n > max) {
					rc = lm_err(err, LM_EFAIL, "%s: the guest's answer exceeds %zu bytes (on %s); stopped "
					    "reading it", c->where, max, stream ? "stderr" : "stdout");
					goto capped;
				}
				if (lm_buf_add(b, buf, (size_t)n) != 0) {
					rc = lm_err(err, LM_EFAIL, "%s: out of memory", c->where);
					goto capped;
				}
			}
			if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
				rc = lm_err(err, LM_EFAIL, "%s: %s", c->where, sess_err(c));
				goto done;
			}
		}
		if (mark && h->r.out.len > mlen) {
			const char *o = h->r.out.data, *e = o + h->r.out.len - mlen - 1;

			if (memcmp(e, mark, mlen) == 0 && e[mlen] == '\n' && (e == o || e[-1] == '\n'))
				break; /* the mark ends what was printed (the guest says nothing until it is answered) */
		}
		if (eof)
			break;
		/* The reads may have taken EOF off the socket: look again before sleeping on it. A read
		 * of one stream also takes the other stream's packets off the socket into libssh2's
		 * queue: data queued so is read before sleeping (once: a packet of a stream nobody reads
		 * must not spin), or the guest's last line waits in the queue for the deadline. */
		if (!got && !libssh2_channel_eof(h->ch)) {
			unsigned long queued = 0;

			libssh2_channel_window_read_ex(h->ch, &queued, NULL);
			if (queued > 0 && !spun) {
				spun = 1;
				continue;
			}
			if (waiting != NULL && lm_now_ms() < c->o->deadline_ms) {
				*waiting = 1;
				goto done;
			}
			if ((rc = wait_socket(c, err)) != LM_OK)
				goto done;
		}
		spun = 0;
	}
	goto done;
capped:
	/* The rest is not read: freeing the channel closes it, and what the guest sent meanwhile is at
	 * most the channel's window, which is never opened further. The guest's command gets EPIPE. */
done:
	/* Cleaning up after a failed read (the channel's close, the disconnect) must not take
	 * another whole timeout: libssh2's was set when the channel opened. */
	if (rc != LM_OK)
		libssh2_session_set_timeout(c->s, 1000);
	libssh2_session_set_blocking(c->s, 1);
	return rc;
}

void
ssh_chan_send_eof(ssh_chan *h)
{
	/* The EOF asks nothing (roundTrips): what comes after it is the command's own answer. */
	if (!h->eof_sent) {
		h->c->mute = 1;
		libssh2_channel_send_eof(h->ch);
		h->c->mute = 0;
	}
	h->eof_sent = 1;
}

int
ssh_chan_read_until(ssh_chan *h, const char *mark, const char **out, char *err)
{
	int rc = chan_pump(h, mark, NULL, err);

	*out = h->r.out.data ? h->r.out.data : "";
	return rc;
}

int
ssh_chan_ready(ssh_chan *h, int *fd, int64_t *deadline)
{
	char err[LM_ERRLEN];
	int waiting = 0;

	*fd = h->c->fd;
	*deadline = h->c->o->deadline_ms;
	/* An error here comes again from ssh_chan_finish, which says it. */
	return chan_pump(h, NULL, &waiting, err) != LM_OK || !waiting;
}

int
ssh_chan_finish(ssh_chan *h, ssh_result *r, char *err)
{
	ssh_conn *c = h->c;
	char *sig = NULL;
	size_t siglen = 0;
	int rc;

	memset(r, 0, sizeof *r);
	r->exit_code = -1;
	ssh_chan_send_eof(h);
	if ((rc = chan_pump(h, NULL, NULL, err)) != LM_OK)
		goto done;
	c->mute = 1; /* nor does the close: the guest closes once its command has ended */
	rc = libssh2_channel_close(h->ch);
	c->mute = 0;
	if (rc != 0 || libssh2_channel_wait_closed(h->ch) != 0) {
		rc = lm_err(err, LM_EFAIL, "%s: the channel did not close cleanly: %s", c->where, sess_err(c));
		goto done;
	}
	/* get_exit_status answers 0 when there is none: look for a signal first. */
	if (libssh2_channel_get_exit_signal(h->ch, &sig, &siglen, NULL, NULL, NULL, NULL) == 0 && sig != NULL) {
		snprintf(r->signal, sizeof r->signal, "%.*s", (int)siglen, sig);
		rc = lm_err(err, LM_EFAIL, "%s: the remote command was killed by SIG%s", c->where, r->signal);
	} else {
		*r = h->r; /* the output moves to r */
		memset(&h->r, 0, sizeof h->r);
		r->exit_code = libssh2_channel_get_exit_status(h->ch);
	}
	libssh2_free(c->s, sig);
done:
	ssh_chan_free(h);
	return rc;
}

int
ssh_exec(ssh_conn *c, const remote_cmd *cmd, const void *in, size_t inlen, ssh_result *r, char *err)
{
	ssh_chan *h;
	int rc;

	memset(r, 0, sizeof *r);
	r->exit_code = -1;
	if ((rc = ssh_chan_open(&h, c, cmd, err)) != LM_OK)
		return rc;
	if ((rc = ssh_chan_write(h, in, inlen, err)) != LM_OK) {
		ssh_chan_free(h);
		return rc;
	}
	return ssh_chan_finish(h, r, err);
}

/* mkdir -p over SFTP of the first len bytes of path: a directory once this returns 0. One
 * stat when it already exists; missing parents are made first. */
static int
sftp_mkdirs(LIBSSH2_SFTP *sftp, const char *path, unsigned len)
{
	LIBSSH2_SFTP_ATTRIBUTES a;
	unsigned parent = len;

	if (libssh2_sftp_stat_ex(sftp, path, len, LIBSSH2_SFTP_STAT, &a) == 0)
		return LIBSSH2_SFTP_S_ISDIR(a.permissions) ? 0 : -1;
	while (parent > 0 && path[parent - 1] != '/')
		parent--;
	if (parent <= 1 || sftp_mkdirs(sftp, path, parent - 1) != 0)
		return -1;
	if (libssh2_sftp_mkdir_ex(sftp, path, len, 0755) == 0)
		return 0;
	/* another upload made it meanwhile */
	return libssh2_sftp_stat_ex(sftp, path, len, LIBSSH2_SFTP_STAT, &a) == 0 &&
	    LIBSSH2_SFTP_S_ISDIR(a.permissions) ? 0 : -1;
}

int
ssh_upload(ssh_conn *c, const char *local, const char *dir, const char *name, uint64_t *sent, char *err)
{
	LIBSSH2_SFTP *sftp = NULL;
	LIBSSH2_SFTP_HANDLE *h = NULL;
	char tmp[4096], dst[4096], *buf;
	ssize_t n, w;
	int fd = -1, rc = LM_OK;

	*sent = 0;
	if (lm_fmt(tmp, sizeof tmp, "%s/.%s.part.%ld", dir, name, (long)getpid()) < 0 ||
	    lm_fmt(dst, sizeof dst, "%s/%s", dir, name) < 0)
		return lm_err(err, LM_EINPUT, "%s: remote path too long", name);
	if ((fd = upload_open(local, &buf, err)) < 0)
		return fd;
	if (!time_left(c) || (sftp = libssh2_sftp_init(c->s)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "%s: cannot start SFTP: %s", c->where, time_left(c) ? sess_err(c) : "timed out");
		goto done;
	}
	chan_opened(c);
	if (!time_left(c) || sftp_mkdirs(sftp, dir, (unsigned)strlen(dir)) != 0) {
		rc = lm_err(err, LM_EFAIL, "%s: cannot create the directory %s (SFTP error %lu)", c->where, dir,
		    libssh2_sftp_last_error(sftp));
		goto done;
	}
	h = libssh2_sftp_open(sftp, tmp, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC | LIBSSH2_FXF_EXCL,
	    LIBSSH2_SFTP_S_IRUSR | LIBSSH2_SFTP_S_IWUSR);
	if (h == NULL) {
		rc = lm_err(err, LM_EFAIL, "%s: cannot create %s (SFTP error %lu)", c->where, tmp,
		    libssh2_sftp_last_error(sftp));
		goto done;
	}
	while ((n = read(fd, buf, UPLOAD_CHUNK)) > 0)
		for (ssize_t off = 0; off < n; off += w) {
			if (!time_left(c) || (w = libssh2_sftp_write(h, buf + off, (size_t)(n - off))) < 0) {
				rc = lm_err(err, LM_EFAIL, "%s: upload of %s failed: %s", c->where, name,
				    time_left(c) ? "write error (the guest's disk is full or its SFTP server died)"
				    : "timed out (the guest's SFTP server stopped answering)");
				goto done;
			}
			*sent += (uint64_t)w;
		}
	if (n < 0) {
		rc = lm_err(err, LM_EFAIL, "%s: read: %s", local, strerror(errno));
		goto done;
	}
	if (libssh2_sftp_fsync(h) != 0 || libssh2_sftp_close(h) != 0) {
		h = NULL;
		rc = lm_err(err, LM_EFAIL, "%s: upload of %s could not be synced (disk full?)", c->where, name);
		goto done;
	}
	h = NULL;
	/* SFTP v3 (OpenSSH) renames only onto a free name, and libssh2 1.10 has no posix-rename:
	 * a stale copy of this very upload is removed first. */
	libssh2_sftp_unlink(sftp, dst);
	if (libssh2_sftp_rename_ex(sftp, tmp, (unsigned)strlen(tmp), dst, (unsigned)strlen(dst),
	    LIBSSH2_SFTP_RENAME_OVERWRITE | LIBSSH2_SFTP_RENAME_ATOMIC | LIBSSH2_SFTP_RENAME_NATIVE) != 0)
		rc = lm_err(err, LM_EFAIL, "%s: cannot rename the upload into %s (SFTP error %lu)", c->where, dst,
		    libssh2_sftp_last_error(sftp));
done:
	/* Cleaning up after a dead guest must not take another whole timeout. */
	if (rc != LM_OK)
		libssh2_session_set_timeout(c->s, 1000);
	if (h != NULL)
		libssh2_sftp_close(h);
	if (rc != LM_OK && sftp != NULL)
		libssh2_sftp_unlink(sftp, tmp);
	if (sftp != NULL)
		libssh2_sftp_shutdown(sftp);
	free(buf);
	close(fd);
	return rc;
}

int
ssh_upload_scp(ssh_conn *c, const char *local, const char *dir, const char *name, uint64_t *sent, char *err)
{
	LIBSSH2_CHANNEL *ch = NULL;
	char tmp[4096], dst[4096], *buf = NULL;
	const char *mv[] = {"mv", "-f", "--", tmp, dst, NULL};
	struct stat st;
	remote_cmd *cmd = NULL;
	ssh_result r;
	ssize_t n, w;
	int fd, rc = LM_OK;

	*sent = 0;
	if (lm_fmt(tmp, sizeof tmp, "%s/.%s.part.%ld", dir, name, (long)getpid()) < 0 ||
	    lm_fmt(dst, sizeof dst, "%s/%s", dir, name) < 0)
		return lm_err(err, LM_EINPUT, "%s: remote path too long", name);
	if ((fd = open(local, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0) {
		if (errno == EMFILE || errno == ENFILE)
			ssh_nofds_note();
		rc = lm_err(err, LM_EINPUT, "%s: %s", local, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if ((buf = malloc(UPLOAD_CHUNK)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	if (!time_left(c) || (ch = libssh2_scp_send64(c->s, tmp, 0600, st.st_size, 0, 0)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "%s: cannot start SCP to %s: %s", c->where, tmp,
		    time_left(c) ? sess_err(c) : "timed out");
		goto done;
	}
	chan_opened(c);
	while ((n = read(fd, buf, UPLOAD_CHUNK)) > 0)
		for (ssize_t off = 0; off < n; off += w) {
			if (!time_left(c) || (w = libssh2_channel_write(ch, buf + off, (size_t)(n - off))) < 0) {
				rc = lm_err(err, LM_EFAIL, "%s: SCP upload of %s failed", c->where, name);
				goto done;
			}
			*sent += (uint64_t)w;
		}
	libssh2_channel_send_eof(ch);
	libssh2_channel_wait_eof(ch);
	libssh2_channel_close(ch);
	libssh2_channel_wait_closed(ch);
	libssh2_channel_free(ch);
	ch = NULL;
	if (rcmd_argv(&cmd, mv) != LM_OK) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	if ((rc = ssh_exec(c, cmd, NULL, 0, &r, err)) != LM_OK)
		goto done;
	if (r.exit_code != 0)
		rc = lm_err(err, LM_EFAIL, "%s: cannot rename the upload into %s", c->where, dst);
	ssh_result_free(&r);
done:
	if (ch != NULL)
		libssh2_channel_free(ch);
	rcmd_free(cmd);
	free(buf);
	close(fd);
	return rc;
}

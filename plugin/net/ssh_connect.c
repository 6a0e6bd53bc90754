/* ssh_connect: ssh_connect and ssh_connect_fd (ssh.h): the TCP connect, the handshake gate, the
 * handshake, the host key's check and authentication, in that order. Blocking libssh2 calls,
 * each bounded by the time left to the deadline. */
#include "net/ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/ssh_int.h"

static void gate_yield(ssh_conn *c, int out);

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
	if (!ssh_time_left(c) || (r = libssh2_session_handshake(c->s, c->fd)) != 0) {
		why = !ssh_time_left(c) || r == LIBSSH2_ERROR_TIMEOUT ? SSH_TIMEOUT : SSH_PROTOCOL;
		rc = lm_err(err, LM_EFAIL, "%s: SSH handshake %s", c->where,
		    why == SSH_TIMEOUT ? "timed out" : ssh_sess_err(c));
		goto fail;
	}
	if ((rc = ssh_check_hostkey(c, &why, err)) != LM_OK)
		goto fail;
	/* No "none" request for the server's list of methods (libssh2_userauth_list): it is a round
	 * trip, and a key or password is offered whatever the list says (OpenSSH answers a method
	 * it does not allow as it answers a wrong key). */
	if (!ssh_time_left(c)) {
		why = SSH_TIMEOUT;
		rc = lm_err(err, LM_EFAIL, "%s: timed out", c->where);
		goto fail;
	}
	if (!ssh_auth_agent(c, &agent) && !ssh_auth_keys(c, &keys, locked, loose)) {
		r = ssh_auth_password(c, err);
		if (r < 0) {
			why = SSH_AUTH;
			rc = LM_EINPUT;
			goto fail;
		}
		if (r == 0) {
			why = ssh_time_left(c) ? SSH_AUTH : SSH_TIMEOUT;
			if (why == SSH_TIMEOUT)
				rc = lm_err(err, LM_EFAIL, "%s: timed out authenticating", c->where);
			else if (*locked && !agent)
				rc = lm_err(err, LM_EFAIL, "%s: private key %s is protected by a passphrase and no ssh-agent "
				    "holds it: run `ssh-add %s` (lume-metal asks for no passphrase)", c->where, locked, locked);
			else if (!agent && !keys && !ssh_has_password(o))
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

	if (!ssh_key_name_ok(c)) {
		if (why)
			*why = SSH_HOSTKEY_UNKNOWN;
		return lm_err(err, LM_EFAIL, "%s: refusing the host-key name \"%s\": only letters, digits, '.', '_', "
		    "'-' (and ':', '%%', '/' between host and VM) may name a host or a Lume VM in known_hosts",
		    c->where, printable(shown, ssh_key_name(c)));
	}
	if ((rc = ssh_check_secrets(c->o, err)) != LM_OK && why)
		*why = ssh_nofds ? SSH_NOFDS : SSH_AUTH;
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

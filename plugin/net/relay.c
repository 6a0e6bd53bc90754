/* relay: see relay.h. */
#include "net/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RELAY_BUF 16384

/* A request to open a channel; freed by the waiter, or by the relay when the waiter gave up. */
typedef struct req {
	struct req *next;
	size_t host;
	char addr[256];
	int port, fd;               /* fd: the relay's end of the socketpair */
	int done, rc, why, abandoned;
	char err[LM_ERRLEN];
} req;

/* One guest connection: a channel and the relay's end of its socketpair. */
typedef struct bridge {
	struct bridge *next;
	LIBSSH2_CHANNEL *ch;
	int fd;
	char up[RELAY_BUF], down[RELAY_BUF]; /* socket to channel; channel to socket */
	size_t uplen, downoff, downlen;
	int wpending;                        /* a channel write of up[] is half done */
	int sock_eof, ch_eof, shut, closing, dead;
} bridge;

typedef struct {
	ssh_conn *c;
	LIBSSH2_SESSION *s;
	int fd, dead;
	req *queue, *opening;  /* opens waiting, in order; the one in progress */
	bridge *bridges;
	const void *blocked;   /* the request or bridge whose send is half done */
} rhost;

struct relay {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	int wake[2], stop;
	rhost **hosts;
	size_t nhosts;
	req *incoming;
	struct pollfd *pfd;
	size_t npfd;
};

static int
outbound(const rhost *h)
{
	return (libssh2_session_block_directions(h->s) & LIBSSH2_SESSION_BLOCK_OUTBOUND) != 0;
}

/* A libssh2 call returned rc (< 0) for who: remember who holds a half-sent packet; mark the
 * host dead when its socket is gone. Returns 1 when the call should be tried again later. */
static int
again(rhost *h, const void *who, long rc)
{
	if (rc == LIBSSH2_ERROR_EAGAIN) {
		if (outbound(h))
			h->blocked = who;
		return 1;
	}
	if (rc == LIBSSH2_ERROR_SOCKET_DISCONNECT || rc == LIBSSH2_ERROR_SOCKET_RECV || rc == LIBSSH2_ERROR_SOCKET_SEND)
		h->dead = 1;
	return 0;
}

/* A request failed: tells its waiter, or frees it when the waiter gave up. */
static void
finish(relay *r, req *q, int why, const char *msg)
{
	close(q->fd);
	pthread_mutex_lock(&r->mu);
	if (q->abandoned) {
		pthread_mutex_unlock(&r->mu);
		free(q);
		return;
	}
	q->rc = LM_EFAIL;
	q->why = why;
	snprintf(q->err, sizeof q->err, "%s", msg);
	q->done = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* A channel for q is open: hands it to its waiter and returns 1, or, when the waiter gave up,
 * frees q and returns 0. Either way q is not the relay's any more; q->fd stays valid for the
 * bridge only when 1 is returned, so it is read before. */
static int
opened(relay *r, req *q)
{
	pthread_mutex_lock(&r->mu);
	if (q->abandoned) {
		pthread_mutex_unlock(&r->mu);
		close(q->fd);
		free(q);
		return 0;
	}
	q->rc = LM_OK;
	q->done = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return 1;
}

/* Moves data both ways for one bridge; returns 1 when anything moved. */
static int
bridge_step(rhost *h, bridge *b)
{
	int prog = 0;
	ssize_t n;

	if (b->closing) {
		if ((n = libssh2_channel_free(b->ch)) < 0 && again(h, b, n))
			return 0;
		h->blocked = h->blocked == b ? NULL : h->blocked;
		b->dead = 1;
		return 1;
	}
	if (!b->sock_eof && !b->wpending && b->uplen < RELAY_BUF) {
		n = recv(b->fd, b->up + b->uplen, RELAY_BUF - b->uplen, MSG_DONTWAIT);
		if (n > 0)
			b->uplen += (size_t)n, prog = 1;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			b->sock_eof = 1, prog = 1;
	}
	if (b->uplen > 0) {
		if ((n = libssh2_channel_write(b->ch, b->up, b->uplen)) >= 0) {
			memmove(b->up, b->up + n, b->uplen - (size_t)n);
			b->uplen -= (size_t)n;
			b->wpending = 0;
			h->blocked = h->blocked == b ? NULL : h->blocked;
			prog |= n > 0;
		} else if (again(h, b, n)) {
			b->wpending = 1;
			if (h->blocked == b)
				return prog;
		} else
			b->uplen = 0, b->sock_eof = 1, b->ch_eof = 1;
	}
	/* The client closed its end (it never half-closes): the guest connection is over. */
	if (b->sock_eof && b->uplen == 0) {
		b->closing = 1;
		return 1;
	}
	if (b->downoff == b->downlen && !b->ch_eof) {
		b->downoff = b->downlen = 0;
		if ((n = libssh2_channel_read(b->ch, b->down, sizeof b->down)) > 0) {
			b->downlen = (size_t)n;
			prog = 1;
		} else if (n == 0 || libssh2_channel_eof(b->ch) || !again(h, b, n))
			b->ch_eof = 1, prog = 1;
		if (h->blocked == b && n >= 0)
			h->blocked = NULL;
	}
	if (b->downoff < b->downlen) {
		n = send(b->fd, b->down + b->downoff, b->downlen - b->downoff, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0)
			b->downoff += (size_t)n, prog = 1;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			b->downoff = b->downlen, b->sock_eof = 1, prog = 1;
	}
	if (b->ch_eof && b->downoff == b->downlen && !b->shut) {
		shutdown(b->fd, SHUT_WR);
		b->shut = 1;
		prog = 1;
	}
	return prog;
}

static void
bridge_add(rhost *h, LIBSSH2_CHANNEL *ch, int fd)
{
	bridge *b = calloc(1, sizeof *b);

	if (b == NULL) {
		libssh2_channel_free(ch); /* gives EAGAIN at worst; the session frees it at the end */
		close(fd);
		return;
	}
	b->ch = ch;
	b->fd = fd;
	b->next = h->bridges;
	h->bridges = b;
}

/* Works on one host: the open in progress, then every bridge. Returns 1 when anything moved. */
static int
host_step(relay *r, rhost *h)
{
	int prog = 0;
	char msg[LM_ERRLEN];

	if (h->opening == NULL && h->queue != NULL) {
		h->opening = h->queue;
		h->queue = h->queue->next;
	}
	if (h->opening && !h->dead && (h->blocked == NULL || h->blocked == h->opening)) {
		req *q = h->opening;
		LIBSSH2_CHANNEL *ch = libssh2_channel_direct_tcpip_ex(h->s, q->addr, q->port, "127.0.0.1", 22);
		int e = ch ? 0 : libssh2_session_last_errno(h->s);

		if (ch != NULL || !again(h, q, e)) {
			h->blocked = h->blocked == q ? NULL : h->blocked;
			h->opening = NULL;
			prog = 1;
			if (ch != NULL) {
				int fd = q->fd;

				if (opened(r, q))
					bridge_add(h, ch, fd);
				else
					libssh2_channel_free(ch); /* EAGAIN at worst: then it goes with the session */
			} else {
				char *m = NULL;

				libssh2_session_last_error(h->s, &m, NULL, 0);
				snprintf(msg, sizeof msg, "%s cannot reach %s port %d: %s", ssh_where(h->c), q->addr, q->port,
				    e == LIBSSH2_ERROR_CHANNEL_FAILURE ? "the host could not connect (the guest is down, or "
				    "not at that address)" : m ? m : "the host's session failed");
				finish(r, q, e == LIBSSH2_ERROR_CHANNEL_FAILURE ? SSH_UNREACHABLE : SSH_PROTOCOL, msg);
			}
		}
	}
	if (h->dead) {
		snprintf(msg, sizeof msg, "%s: the session to the host was lost", ssh_where(h->c));
		for (req *q = h->opening ? h->opening : h->queue, *next; q != NULL; q = next) {
			next = q == h->opening ? h->queue : q->next;
			finish(r, q, SSH_PROTOCOL, msg);
		}
		h->opening = h->queue = NULL;
		for (bridge *b = h->bridges; b; b = b->next)
			b->dead = 1;
	}
	for (bridge *b = h->bridges; b && !h->dead; b = b->next)
		if (h->blocked == NULL || h->blocked == b)
			prog |= bridge_step(h, b);
	for (bridge **bp = &h->bridges; *bp;) {
		bridge *b = *bp;

		if (!b->dead) {
			bp = &b->next;
			continue;
		}
		*bp = b->next;
		close(b->fd);
		free(b);
	}
	return prog;
}

static int
pfd_add(relay *r, size_t *n, int fd, short events)
{
	if (*n == r->npfd) {
		struct pollfd *p = reallocarray(r->pfd, r->npfd * 2 + 16, sizeof *p);

		if (p == NULL)
			return -1;
		r->pfd = p;
		r->npfd = r->npfd * 2 + 16;
	}
	r->pfd[(*n)++] = (struct pollfd){.fd = fd, .events = events};
	return 0;
}

/* The relay thread: takes new requests, steps every host, and sleeps in poll when idle. */
static void *
pump(void *arg)
{
	relay *r = arg;

	for (;;) {
		size_t nh, n = 0;
		int prog = 0;
		char c[64];

		pthread_mutex_lock(&r->mu);
		if (r->stop) {
			pthread_mutex_unlock(&r->mu);
			return NULL;
		}
		while (r->incoming) {
			req *q = r->incoming, **tail;

			r->incoming = q->next;
			q->next = NULL;
			for (tail = &r->hosts[q->host]->queue; *tail; tail = &(*tail)->next)
				;
			*tail = q;
		}
		nh = r->nhosts;
		pthread_mutex_unlock(&r->mu);
		for (size_t i = 0; i < nh; i++) {
			pthread_mutex_lock(&r->mu);
			rhost *h = r->hosts[i];
			pthread_mutex_unlock(&r->mu);
			prog |= host_step(r, h);
		}
		pfd_add(r, &n, r->wake[0], POLLIN);
		for (size_t i = 0; i < nh; i++) {
			pthread_mutex_lock(&r->mu);
			rhost *h = r->hosts[i];
			pthread_mutex_unlock(&r->mu);
			int want = h->opening != NULL;

			for (bridge *b = h->bridges; b; b = b->next) {
				short ev = (short)((!b->sock_eof && !b->wpending && b->uplen < RELAY_BUF ? POLLIN : 0) |
				    (b->downoff < b->downlen ? POLLOUT : 0));

				want |= b->uplen > 0 || b->closing || (b->downoff == b->downlen && !b->ch_eof);
				if (ev && pfd_add(r, &n, b->fd, ev) != 0)
					break;
			}
			if (!h->dead && (want || h->blocked))
				pfd_add(r, &n, h->fd, (short)(POLLIN | (outbound(h) ? POLLOUT : 0)));
		}
		if (poll(r->pfd, n, prog ? 0 : 200) > 0 && (r->pfd[0].revents & POLLIN))
			while (read(r->wake[0], c, sizeof c) > 0)
				;
	}
}

int
relay_new(relay **out, char *err)
{
	relay *r = calloc(1, sizeof *r);
	pthread_condattr_t ca;

	*out = NULL;
	if (r == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if (pipe(r->wake) != 0) {
		free(r);
		return lm_err(err, LM_EFAIL, "pipe: %s", strerror(errno));
	}
	for (int i = 0; i < 2; i++)
		fcntl(r->wake[i], F_SETFD, FD_CLOEXEC), fcntl(r->wake[i], F_SETFL, O_NONBLOCK);
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&r->th, NULL, pump, r) != 0) {
		close(r->wake[0]);
		close(r->wake[1]);
		free(r);
		return lm_err(err, LM_EFAIL, "cannot start the relay thread");
	}
	*out = r;
	return LM_OK;
}

int
relay_add(relay *r, ssh_conn *c, size_t *idx, char *err)
{
	rhost *h = calloc(1, sizeof *h), **v;

	if (h == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	h->c = c;
	h->s = ssh_session(c);
	h->fd = ssh_fd(c);
	libssh2_session_set_blocking(h->s, 0);
	pthread_mutex_lock(&r->mu);
	if ((v = reallocarray(r->hosts, r->nhosts + 1, sizeof *v)) == NULL) {
		pthread_mutex_unlock(&r->mu);
		free(h);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	v[r->nhosts] = h;
	*idx = r->nhosts++;
	r->hosts = v;
	pthread_mutex_unlock(&r->mu);
	return LM_OK;
}

int
relay_open(relay *r, size_t idx, const char *addr, int port, int64_t deadline_ms, int *fd, int *why, char *err)
{
	req *q = calloc(1, sizeof *q);
	int sv[2], rc;
	int64_t now;

	*fd = -1;
	*why = SSH_PROTOCOL;
	if (q == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	pthread_mutex_lock(&r->mu);
	rc = idx < r->nhosts && lm_fmt(q->addr, sizeof q->addr, "%s", addr) == 0;
	pthread_mutex_unlock(&r->mu);
	if (!rc) {
		free(q);
		return lm_err(err, LM_EINPUT, "relay: no host %zu, or address too long", idx);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		int e = errno;

		free(q);
		if (e == EMFILE || e == ENFILE) {
			ssh_nofds_note();
			*why = SSH_NOFDS;
			return lm_err(err, LM_EFAIL, "cannot open a relay channel: out of file descriptors (this "
			    "process's limit; fewer at once with --parallel, or raise ulimit -n)");
		}
		return lm_err(err, LM_EFAIL, "socketpair: %s", strerror(e));
	}
	fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
	q->host = idx;
	q->port = port ? port : 22;
	q->fd = sv[1];
	pthread_mutex_lock(&r->mu);
	q->next = r->incoming;
	r->incoming = q;
	pthread_mutex_unlock(&r->mu);
	if (write(r->wake[1], "o", 1) < 0 && errno != EAGAIN) {
		/* the thread still polls every 200 ms */
	}
	pthread_mutex_lock(&r->mu);
	while (!q->done && (now = lm_now_ms()) < deadline_ms) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (deadline_ms - now) / 1000;
		ts.tv_nsec += (long)((deadline_ms - now) % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
	}
	if (!q->done) {
		q->abandoned = 1; /* the relay frees it */
		pthread_mutex_unlock(&r->mu);
		close(sv[0]);
		*why = SSH_TIMEOUT;
		return lm_err(err, LM_EFAIL, "opening a channel to %s port %d through the host timed out", addr, q->port);
	}
	pthread_mutex_unlock(&r->mu);
	rc = q->rc;
	if (rc == LM_OK)
		*fd = sv[0];
	else {
		close(sv[0]);
		*why = q->why;
		lm_err(err, rc, "%s", q->err);
	}
	free(q);
	return rc;
}

void
relay_free(relay *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_mutex_unlock(&r->mu);
	if (write(r->wake[1], "s", 1) < 0) {
		/* the thread wakes within 200 ms anyway */
	}
	pthread_join(r->th, NULL);
	for (size_t i = 0; i < r->nhosts; i++) {
		rhost *h = r->hosts[i];

		for (req *q = h->opening ? h->opening : h->queue, *next; q != NULL; q = next) {
			next = q == h->opening ? h->queue : q->next;
			close(q->fd);
			free(q);
		}
		libssh2_session_set_blocking(h->s, 1);
		libssh2_session_set_timeout(h->s, 1000);
		while (h->bridges) {
			bridge *b = h->bridges;

			h->bridges = b->next;
			libssh2_channel_free(b->ch);
			close(b->fd);
			free(b);
		}
		ssh_close(h->c);
		free(h);
	}
	for (req *q = r->incoming, *next; q; q = next) {
		next = q->next;
		close(q->fd);
		free(q);
	}
	free(r->hosts);
	free(r->pfd);
	close(r->wake[0]);
	close(r->wake[1]);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
}

/* netdelay: a TCP delay proxy for benchmarks, no kernel module (no netem needed).
 *
 *   netdelay [-d MS] [-b MBIT] [-q KB] [-l LOG] [-f PAIRS] [LISTEN=TARGET ...]
 *
 * Listens on every LISTEN (IPv4 a.b.c.d:port) and forwards each connection to its TARGET, in
 * both directions, byte order kept, each byte held MS milliseconds one way (so a round trip
 * costs 2*MS) and, with -b, each direction of each connection serialized at MBIT megabits/s (a
 * link of that speed per guest). The TCP handshake's own round trip is modelled too: the target
 * is connected MS after the accept, and the client's first bytes reach it no sooner than 3*MS
 * after the accept, as over a real link. -f reads more pairs, one LISTEN TARGET a line. At most
 * -q KB (default 1024) wait in each direction of a connection; its source is not read meanwhile.
 * One process, one poll loop, for any number of pairs and connections (a fleet of 1024 guests).
 * Prints "netdelay: ready PAIRS" on stdout once every listener is open. With -l, one line per
 * connection when it ends: "conn LISTEN up=BYTES down=BYTES turns=N", where a turn is the client
 * having sent bytes and then the target answering (a change of direction, client then target,
 * counted as the bytes arrive here). SIGTERM or SIGINT end it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct chunk {
	struct chunk *next;
	int64_t at; /* when it may be delivered, us */
	size_t len, off;
	char data[];
} chunk;

typedef struct {
	int from, to;        /* the two ends' fds */
	chunk *head, *tail;
	size_t queued;
	int64_t link_free;   /* -b: when the link has sent what it holds, us */
	int64_t floor;       /* nothing is delivered before this, us */
	int eof, shut, dead; /* source ended; SHUT_WR sent to the sink; reset */
	uint64_t bytes;
} dir;

typedef struct conn {
	int cfd, tfd, connecting, started;
	int64_t start_at; /* when the target is connected, us */
	int lst;          /* the pair's index */
	dir up, down;     /* client to target, target to client */
	int last;         /* 1: the client spoke last, 2: the target */
	uint64_t turns;
	struct conn *next;
} conn;

typedef struct {
	struct sockaddr_in l, t;
	int fd;
	char name[32];
} pair;

static pair *pairs;
static size_t npairs, cap_pairs;
static conn *conns;
static int64_t delay_us, queue_max = 1024 * 1024;
static double bits_per_us; /* 0: no cap */
static FILE *logfp;
static volatile sig_atomic_t stop;

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int
parse_addr(struct sockaddr_in *sa, const char *s)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (colon == NULL || (size_t)(colon - s) >= sizeof host)
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535)
		return -1;
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static int
add_pair(const char *l, const char *t)
{
	if (npairs == cap_pairs) {
		pair *p = realloc(pairs, (cap_pairs = cap_pairs ? cap_pairs * 2 : 64) * sizeof *p);

		if (p == NULL)
			return -1;
		pairs = p;
	}
	if (parse_addr(&pairs[npairs].l, l) != 0 || parse_addr(&pairs[npairs].t, t) != 0) {
		fprintf(stderr, "netdelay: bad pair %s=%s (a.b.c.d:port=a.b.c.d:port)\n", l, t);
		return -1;
	}
	snprintf(pairs[npairs].name, sizeof pairs[npairs].name, "%s", l);
	npairs++;
	return 0;
}

static void
nonblock(int fd)
{
	int one = 1;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void
dir_init(dir *d, int from, int to)
{
	memset(d, 0, sizeof *d);
	d->from = from;
	d->to = to;
}

static void
dir_free(dir *d)
{
	while (d->head) {
		chunk *c = d->head;

		d->head = c->next;
		free(c);
	}
	d->tail = NULL;
	d->queued = 0;
}

/* Reads what the source has into the queue, stamped with its delivery time. */
static void
dir_read(conn *k, dir *d, int who, int64_t now)
{
	char buf[65536];
	ssize_t n = recv(d->from, buf, sizeof buf, 0);
	chunk *c;
	int64_t at;

	if (n == 0) {
		d->eof = 1;
		return;
	}
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			d->dead = 1;
		return;
	}
	if (who == 2 && k->last == 1)
		k->turns++;
	k->last = who;
	d->bytes += (uint64_t)n;
	at = now;
	if (bits_per_us > 0) {
		d->link_free = (d->link_free > now ? d->link_free : now) + (int64_t)((double)n * 8 / bits_per_us);
		at = d->link_free;
	}
	at += delay_us;
	if (at < d->floor)
		at = d->floor;
	if ((c = malloc(sizeof *c + (size_t)n)) == NULL) {
		d->dead = 1;
		return;
	}
	c->next = NULL;
	c->at = at;
	c->len = (size_t)n;
	c->off = 0;
	memcpy(c->data, buf, (size_t)n);
	if (d->tail)
		d->tail->next = c;
	else
		d->head = c;
	d->tail = c;
	d->queued += (size_t)n;
}

/* Writes what is due to the sink; shuts it for writing once the source ended and all is out. */
static void
dir_write(dir *d, int64_t now)
{
	while (d->head && d->head->at <= now) {
		chunk *c = d->head;
		ssize_t n = send(d->to, c->data + c->off, c->len - c->off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				d->dead = 1;
			return;
		}
		c->off += (size_t)n;
		d->queued -= (size_t)n;
		if (c->off < c->len)
			return;
		d->head = c->next;
		if (d->head == NULL)
			d->tail = NULL;
		free(c);
	}
	if (d->eof && !d->head && !d->shut) {
		shutdown(d->to, SHUT_WR);
		d->shut = 1;
	}
}

static void
conn_end(conn *k)
{
	if (logfp) {
		fprintf(logfp, "conn %s up=%llu down=%llu turns=%llu\n", pairs[k->lst].name,
		    (unsigned long long)k->up.bytes, (unsigned long long)k->down.bytes, (unsigned long long)k->turns);
		fflush(logfp);
	}
	dir_free(&k->up);
	dir_free(&k->down);
	close(k->cfd);
	if (k->tfd >= 0)
		close(k->tfd);
}

static void
on_accept(int li, int64_t now)
{
	int fd = accept4(pairs[li].fd, NULL, NULL, SOCK_CLOEXEC);
	conn *k;

	if (fd < 0)
		return;
	if ((k = calloc(1, sizeof *k)) == NULL) {
		close(fd);
		return;
	}
	nonblock(fd);
	k->cfd = fd;
	k->tfd = -1;
	k->lst = li;
	k->start_at = now + delay_us;
	dir_init(&k->up, fd, -1);
	dir_init(&k->down, -1, fd);
	k->up.floor = now + 3 * delay_us;
	k->next = conns;
	conns = k;
}

static int
start_target(conn *k)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	nonblock(fd);
	if (connect(fd, (struct sockaddr *)&pairs[k->lst].t, sizeof pairs[k->lst].t) != 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	k->tfd = fd;
	k->up.to = fd;
	k->down.from = fd;
	k->connecting = 1;
	k->started = 1;
	return 0;
}

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int
usage(void)
{
	fprintf(stderr, "usage: netdelay [-d MS] [-b MBIT] [-q KB] [-l LOG] [-f PAIRS] [LISTEN=TARGET ...]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	struct pollfd *pf = NULL;
	conn **pk = NULL;
	size_t cap = 0;
	int opt;

	while ((opt = getopt(argc, argv, "d:b:q:l:f:")) != -1) {
		switch (opt) {
		case 'd':
			delay_us = (int64_t)(atof(optarg) * 1000);
			break;
		case 'b':
			bits_per_us = atof(optarg); /* Mbit/s = bits/us */
			break;
		case 'q':
			queue_max = atol(optarg) * 1024;
			break;
		case 'l':
			if ((logfp = fopen(optarg, "a")) == NULL) {
				perror(optarg);
				return 1;
			}
			break;
		case 'f': {
			FILE *f = fopen(optarg, "r");
			char l[64], t[64];

			if (f == NULL) {
				perror(optarg);
				return 1;
			}
			while (fscanf(f, "%63s %63s", l, t) == 2)
				if (add_pair(l, t) != 0)
					return 2;
			fclose(f);
			break;
		}
		default:
			return usage();
		}
	}
	if (delay_us < 0 || bits_per_us < 0 || queue_max < 65536)
		return usage();
	for (int i = optind; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (eq == NULL)
			return usage();
		*eq = 0;
		if (add_pair(argv[i], eq + 1) != 0)
			return 2;
	}
	if (npairs == 0)
		return usage();
	for (size_t i = 0; i < npairs; i++) {
		int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
		    bind(fd, (struct sockaddr *)&pairs[i].l, sizeof pairs[i].l) != 0 || listen(fd, 1024) != 0) {
			fprintf(stderr, "netdelay: cannot listen on %s: %s\n", pairs[i].name, strerror(errno));
			return 1;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		pairs[i].fd = fd;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("netdelay: ready %zu\n", npairs);
	fflush(stdout);
	while (!stop) {
		int64_t now = now_us(), wake = -1;
		size_t n = 0, nconn = 0;

		for (conn *k = conns; k; k = k->next)
			nconn++;
		if (npairs + 2 * nconn > cap) {
			cap = (npairs + 2 * nconn) * 2;
			pf = realloc(pf, cap * sizeof *pf);
			pk = realloc(pk, cap * sizeof *pk);
			if (pf == NULL || pk == NULL)
				return 1;
		}
		for (size_t i = 0; i < npairs; i++) {
			pf[n] = (struct pollfd){.fd = pairs[i].fd, .events = POLLIN};
			pk[n++] = NULL;
		}
		for (conn *k = conns; k; k = k->next) {
			short ce = 0, te = 0;
			dir *ds[2] = {&k->up, &k->down};

			if (!k->started) {
				if (k->start_at <= now && start_target(k) != 0)
					k->up.dead = 1;
				else if (k->start_at > now && (wake < 0 || k->start_at < wake))
					wake = k->start_at;
			}
			for (int j = 0; j < 2; j++) {
				dir *d = ds[j];
				short *src = j ? &te : &ce, *dst = j ? &ce : &te;

				if (!d->eof && (size_t)d->queued < (size_t)queue_max && (j == 0 || (k->started && !k->connecting)))
					*src |= POLLIN;
				if (d->head && (j == 1 || (k->started && !k->connecting))) {
					if (d->head->at <= now)
						*dst |= POLLOUT;
					else if (wake < 0 || d->head->at < wake)
						wake = d->head->at;
				}
			}
			if (k->connecting)
				te |= POLLOUT;
			pf[n] = (struct pollfd){.fd = k->cfd, .events = ce};
			pk[n++] = k;
			pf[n] = (struct pollfd){.fd = k->tfd, .events = te}; /* -1 before the connect: ignored */
			pk[n++] = k;
		}
		int timeout = wake < 0 ? -1 : (int)((wake - now + 999) / 1000);

		if (poll(pf, n, timeout) < 0 && errno != EINTR)
			return 1;
		now = now_us();
		for (size_t i = 0; i < npairs; i++)
			if (pf[i].revents & POLLIN)
				on_accept((int)i, now);
		for (size_t i = npairs; i < n; i += 2) {
			conn *k = pk[i];
			short cr = pf[i].revents, tr = pf[i + 1].revents;

			if (k->connecting && tr) {
				int soerr = 0;
				socklen_t sl = sizeof soerr;

				if (getsockopt(k->tfd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0)
					k->up.dead = 1;
				k->connecting = 0;
				tr &= ~POLLOUT;
			}
			if (cr & (POLLIN | POLLHUP | POLLERR))
				dir_read(k, &k->up, 1, now);
			if (tr & (POLLIN | POLLHUP | POLLERR))
				dir_read(k, &k->down, 2, now);
		}
		/* Every connection writes what is due, and ends when both directions have. */
		for (conn **kp = &conns; *kp;) {
			conn *k = *kp;

			if (k->started && !k->connecting)
				dir_write(&k->up, now);
			dir_write(&k->down, now);
			if (k->up.dead || k->down.dead || (k->up.shut && k->down.shut)) {
				*kp = k->next;
				conn_end(k);
				free(k);
			} else
				kp = &k->next;
		}
	}
	for (conn *k = conns; k; k = k->next)
		conn_end(k);
	return 0;
}

/* fleet: see fleet.h. */
#include "ops/fleet.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "net/ssh.h"
#include "ops/rollback.h"
#include "core/util.h"

/* File descriptors one VM in flight may hold at once: its socket (or both ends of a relay
 * socketpair), known_hosts being read, a password file or key being checked, lume's pipes.
 * Some stay spare for the rest of the process (stdio, ledger, payload, the known_hosts lock
 * and append, one thread at a time); the relay's host sessions, opened before, count as open. */
#define FDS_PER_VM 4
#define FDS_SPARE 16
/* Raised no higher than this: a descriptor limit in the millions buys nothing. */
#define FDS_WANTED 65536

/* Set by fleet_interrupt; VMs in flight. Lock-free, so a signal handler may read them. */
static volatile sig_atomic_t interrupted;
static atomic_size_t running;

void
fleet_interrupt(void)
{
	interrupted = 1;
}

int
fleet_interrupted(void)
{
	return interrupted != 0;
}

size_t
fleet_running(void)
{
	return atomic_load(&running);
}

/* A VM handed to the watcher (fleet_defer): its index and result, queued by `at`; the watcher's
 * own: the socket to poll (-1: none yet) and whether to ask ready again. */
typedef struct {
	fleet_later *l;
	size_t i;
	cJSON *res;
	int fd, ask;
	int64_t deadline;
} later_vm;

/* The watcher's longest sleep: a VM queued meanwhile is asked first within it. */
#define WATCH_TICK_MS 1000

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;           /* the watcher's queue changed, or the pool ended */
	later_vm *q;                 /* the watcher's queue, by `at`; capacity hold */
	size_t nq, held, hold;       /* queued; deferred and not settled yet; how many may be */
	int pool_done;               /* the wave's pool has ended: the watcher drains and ends */
	size_t next, start, n, failed, done; /* next wave's first VM; this wave's; all; failures; finished */
	int stopped;
	const char *why;              /* why the run stopped */
	guest_target **targets;
	cJSON **results;
	int64_t *t0;                  /* when each VM started (lm_now_ms), 0 when it did not */
	fleet_fn fn;
	const session_opts *o;
	const fleet_opts *f;
} run;

int
fleet_failed(const cJSON *r)
{
	static const char *const good[] = {"deployed", "unchanged", "ok", "probed", "rolled-back", "benchmarked",
		"skipped", "validated", NULL};
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "state");

	for (size_t i = 0; cJSON_IsString(s) && good[i]; i++)
		if (strcmp(s->valuestring, good[i]) == 0)
			return 0;
	return 1;
}

static int
over_budget(const run *r)
{
	const fleet_opts *f = r->f;

	return (f->max_fail >= 0 && r->failed > (size_t)f->max_fail) ||
	    (f->max_fail_pct >= 0 && r->failed * 100 > (size_t)f->max_fail_pct * r->n);
}

static cJSON *
skipped(const guest_target *t, const char *why)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "vm", t->name);
	cJSON_AddStringToObject(o, "state", "skipped");
	cJSON_AddStringToObject(o, "message", why);
	return o;
}

int
fleet_fd_limit(void)
{
	struct rlimit rl;
	rlim_t want = FDS_WANTED;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
#ifdef OPEN_MAX
	if (want > OPEN_MAX) /* macOS refuses a soft limit above OPEN_MAX, whatever the hard one */
		want = OPEN_MAX;
#endif
	if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
		want = rl.rlim_max;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT_MAX ? INT_MAX : (int)rl.rlim_cur;
	/* macOS also refuses more than kern.maxfilesperproc: halve until it takes. */
	for (rlim_t was = rl.rlim_cur; want > was; want /= 2) {
		rl.rlim_cur = want;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			break;
		rl.rlim_cur = was;
	}
	return rl.rlim_cur > INT_MAX ? INT_MAX : (int)rl.rlim_cur;
}

/* Descriptors open now: the entries of /dev/fd (Linux and macOS), less the directory's own. */
static long
fds_open(long limit)
{
	DIR *d = opendir("/dev/fd");
	struct dirent *e;
	long n = 0;

	if (d == NULL) /* out of descriptors already, or no /dev/fd: probe them */
		for (long fd = 0; fd < limit && fd < 4096; fd++)
			n += fcntl((int)fd, F_GETFD) != -1;
	else {
		while ((e = readdir(d)) != NULL)
			n += e->d_name[0] != '.';
		closedir(d);
		n--;
	}
	return n;
}

int
fleet_parallel_max(void)
{
	struct rlimit rl;
	long limit, left;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1L << 24)
		return 1 << 20;
	limit = (long)rl.rlim_cur;
	left = (limit - fds_open(limit) - FDS_SPARE) / FDS_PER_VM;
	return left < 1 ? 1 : left > 1 << 20 ? 1 << 20 : (int)left;
}

typedef struct {
	pthread_mutex_t mu;
	size_t next, n;
	void (*fn)(void *, size_t);
	void *ctx;
} each_run;

static void *
each_worker(void *arg)
{
	each_run *e = arg;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&e->mu);
		i = e->next++;
		pthread_mutex_unlock(&e->mu);
		if (i >= e->n)
			return NULL;
		e->fn(e->ctx, i);
	}
}

void
fleet_each(size_t n, int parallel, void (*fn)(void *ctx, size_t i), void *ctx)
{
	each_run e = {.mu = PTHREAD_MUTEX_INITIALIZER, .n = n, .fn = fn, .ctx = ctx};
	size_t nth = (size_t)(parallel > 0 ? parallel : 1), started = 0, fit;
	pthread_attr_t at;
	pthread_t *th;

	if (nth > n)
		nth = n;
	if (nth > 1 && nth > (fit = (size_t)fleet_parallel_max()))
		nth = fit;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 512u << 10); /* the deepest path (SFTP upload) touches ~40 KiB */
	if (nth > 1 && (th = calloc(nth, sizeof *th)) != NULL) {
		for (; started < nth; started++)
			if (pthread_create(&th[started], &at, each_worker, &e) != 0)
				break;
		if (started == 0)
			each_worker(&e);
		for (size_t i = 0; i < started; i++)
			pthread_join(th[i], NULL);
		free(th);
	} else
		each_worker(&e);
	pthread_attr_destroy(&at);
}

void
fleet_stamp(cJSON *res, int64_t t0)
{
	time_t now = time(NULL);
	struct tm tm;
	char when[32];

	if (t0 == 0 || res == NULL)
		return;
	gmtime_r(&now, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!cJSON_HasObjectItem(res, "seconds"))
		cJSON_AddNumberToObject(res, "seconds", (double)(lm_now_ms() - t0) / 1000.0);
	if (!cJSON_HasObjectItem(res, "time"))
		cJSON_AddStringToObject(res, "time", when);
}

/* Stores VM i's result, counts it against the budget (unless the controller itself ran out of
 * file descriptors: not the VM's fault) and reports it. Under r->mu. */
static void
settle(run *r, size_t i, cJSON *res, int ours)
{
	if (r->t0)
		fleet_stamp(res, r->t0[i]);
	r->results[i] = res;
	r->done++;
	if (fleet_failed(res) && !ours) {
		r->failed++;
		if (over_budget(r) && !r->stopped) {
			r->stopped = 1;
			r->why = "the failure budget was exceeded; not started";
		}
	}
	if (r->f->progress)
		r->f->progress(r->f->progress_ctx, i, res, r->done, r->n);
}

/* A VM that failed because this process ran out of file descriptors is `failed`, whatever the
 * connection's state said (`unreachable` for a socket that could not be made): the VM is not
 * at fault, so it does not count against --max-fail either. */
static void
nofds_failed(cJSON *res)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(res, "message");
	char msg[LM_ERRLEN + 160];

	snprintf(msg, sizeof msg, "this controller ran out of file descriptors (not the VM's fault; not counted "
	    "against --max-fail): %s", cJSON_IsString(m) ? m->valuestring : "");
	cJSON_ReplaceItemInObjectCaseSensitive(res, "state", cJSON_CreateString("failed"));
	if (m != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(res, "message", cJSON_CreateString(msg));
	else
		cJSON_AddStringToObject(res, "message", msg);
}

/* The run and the VM this thread is running, for fleet_defer; l once it took one. */
static _Thread_local run *cur_run;
static _Thread_local fleet_later *cur_later;

int
fleet_defer(fleet_later *l)
{
	run *r = cur_run;
	int took = 0;

	if (r == NULL || cur_later != NULL || r->f->max_fail >= 0 || r->f->max_fail_pct >= 0)
		return 0;
	pthread_mutex_lock(&r->mu);
	if (r->q != NULL && r->held < r->hold) {
		r->held++; /* run_vm queues it when fn returns */
		cur_later = l;
		took = 1;
	}
	pthread_mutex_unlock(&r->mu);
	return took;
}

/* Queues VM i's deferred work by its `at`, under r->mu. */
static void
queue_later(run *r, size_t i, cJSON *res, fleet_later *l)
{
	size_t k = r->nq++;

	while (k > 0 && r->q[k - 1].l->at > l->at) {
		r->q[k] = r->q[k - 1];
		k--;
	}
	r->q[k] = (later_vm){.l = l, .i = i, .res = res};
	pthread_cond_broadcast(&r->cv);
}

/* Finishes watched VM w, settles it, and takes it off the watcher's list (of *n). */
static void
finish_vm(run *r, later_vm *w, size_t k, size_t *n)
{
	later_vm v = w[k];

	w[k] = w[--*n];
	v.l->finish(v.l, v.res);
	pthread_mutex_lock(&r->mu);
	r->held--;
	settle(r, v.i, v.res, 0);
	atomic_fetch_sub(&running, 1);
	pthread_mutex_unlock(&r->mu);
}

/* The wave's watcher: takes the queue into its own list, finishes a VM as soon as its answer
 * has come (its socket polled, ready asked), or at its `at` without ready, until the pool has
 * ended (every deferred VM queued) and nothing is left. A guest hung in its settle waits for its
 * own deadline and holds up no other. */
static void *
watcher(void *arg)
{
	run *r = arg;
	later_vm *w = calloc(r->hold, sizeof *w);
	struct pollfd *p = calloc(r->hold, sizeof *p);
	size_t n = 0;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		int64_t now, wake;
		size_t np = 0, k;

		while (r->nq == 0 && n == 0 && !r->pool_done)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->nq == 0 && n == 0)
			break;
		if (w == NULL || p == NULL) { /* out of memory: the queue in order of `at`, as it comes */
			later_vm v = r->q[0];

			memmove(r->q, r->q + 1, --r->nq * sizeof *r->q);
			pthread_mutex_unlock(&r->mu);
			v.fd = -1;
			finish_vm(r, &v, 0, &(size_t){1});
			pthread_mutex_lock(&r->mu);
			continue;
		}
		for (k = 0; k < r->nq; k++) { /* held <= hold: the list has room */
			w[n] = r->q[k];
			w[n].fd = -1;
			w[n++].ask = 1;
		}
		r->nq = 0;
		pthread_mutex_unlock(&r->mu);
		now = lm_now_ms();
		wake = now + WATCH_TICK_MS;
		for (k = 0; k < n; k++) {
			fleet_later *l = w[k].l;

			if (l->ready == NULL ? l->at <= now : w[k].ask && l->ready(l, &w[k].fd, &w[k].deadline))
				break;
			if (l->ready == NULL || w[k].fd < 0) {
				if (l->at > now && l->at < wake)
					wake = l->at;
				continue;
			}
			w[k].ask = 0;
			if (w[k].deadline < wake)
				wake = w[k].deadline;
			p[np++] = (struct pollfd){.fd = w[k].fd, .events = POLLIN};
		}
		if (k < n) {
			finish_vm(r, w, k, &n);
			pthread_mutex_lock(&r->mu);
			continue;
		}
		if (wake > now)
			poll(p, np, (int)(wake - now));
		/* Ask again whatever has something to read, is past its deadline or its `at` (a tick). */
		now = lm_now_ms();
		for (k = 0, np = 0; k < n; k++) {
			if (w[k].l->ready == NULL || w[k].fd < 0)
				continue;
			w[k].ask = (p[np].revents != 0) | (w[k].l->at <= now) | (w[k].deadline <= now);
			np++;
		}
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	free(w);
	free(p);
	return NULL;
}

/* One VM of the current wave; none is started once the run has stopped. */
static void
run_vm(void *arg, size_t k)
{
	run *r = arg;
	size_t i = r->start + k;
	char err[LM_ERRLEN];
	cJSON *res = NULL;
	int ours, rc;

	pthread_mutex_lock(&r->mu);
	if (r->stopped || interrupted) {
		pthread_mutex_unlock(&r->mu);
		return;
	}
	atomic_fetch_add(&running, 1);
	if (r->t0)
		r->t0[i] = lm_now_ms();
	pthread_mutex_unlock(&r->mu);
	if (r->f->started)
		r->f->started(r->f->progress_ctx, i);
	ssh_nofds_take();
	cur_run = r;
	cur_later = NULL;
	rc = r->fn(&res, r->targets[i], r->o, err);
	cur_run = NULL;
	if (cur_later != NULL) { /* fn returned LM_OK and its result (fleet_defer's contract) */
		pthread_mutex_lock(&r->mu);
		queue_later(r, i, res, cur_later);
		pthread_mutex_unlock(&r->mu);
		cur_later = NULL;
		return;
	}
	if (rc != LM_OK || res == NULL) {
		cJSON_Delete(res);
		res = cJSON_CreateObject();
		cJSON_AddStringToObject(res, "vm", r->targets[i]->name);
		cJSON_AddStringToObject(res, "state", "failed");
		cJSON_AddStringToObject(res, "message", err);
	}
	if ((ours = ssh_nofds_take() && fleet_failed(res)))
		nofds_failed(res);
	pthread_mutex_lock(&r->mu);
	settle(r, i, res, ours);
	atomic_fetch_sub(&running, 1);
	pthread_mutex_unlock(&r->mu);
}

/* Runs the VMs from r->next up to end on the pool, and the watcher beside it when VMs may be
 * deferred: as many as the file descriptors left hold beside the pool's (fleet_parallel_max),
 * at most the wave. The wave ends when every VM of it is settled. */
static void
wave(run *r, size_t end)
{
	size_t pool = (size_t)(r->f->parallel > 0 ? r->f->parallel : 1), fit = (size_t)fleet_parallel_max();
	pthread_t th;
	int watching = 0;

	r->start = r->next;
	r->hold = fit > pool ? fit - pool : 0;
	if (r->hold > end - r->start)
		r->hold = end - r->start;
	r->pool_done = 0;
	r->nq = r->held = 0;
	if (r->hold > 0 && (r->q = calloc(r->hold, sizeof *r->q)) != NULL) {
		if (pthread_create(&th, NULL, watcher, r) == 0)
			watching = 1;
		else {
			free(r->q);
			r->q = NULL;
		}
	}
	fleet_each(end - r->start, r->f->parallel, run_vm, r);
	if (watching) {
		pthread_mutex_lock(&r->mu);
		r->pool_done = 1;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		pthread_join(th, NULL);
	}
	free(r->q);
	r->q = NULL;
	r->next = end;
}

/* Rolls VM i back to previous when its result says this run deployed it. */
static void
roll_back_vm(void *arg, size_t i)
{
	run *r = arg;
	session_opts o = *r->o;
	char err[LM_ERRLEN];
	const cJSON *s = r->results[i] ? cJSON_GetObjectItemCaseSensitive(r->results[i], "state") : NULL;
	cJSON *rb = NULL, *wrap;

	if (!cJSON_IsString(s) || strcmp(s->valuestring, "deployed") != 0)
		return;
	o.to = "previous";
	o.payload = NULL;
	rollback_one(&rb, r->targets[i], &o, err);
	wrap = rb ? rb : skipped(r->targets[i], err);
	pthread_mutex_lock(&r->mu);
	cJSON_AddItemToObject(wrap, "deploy", r->results[i]);
	r->results[i] = wrap;
	if (r->f->progress)
		r->f->progress(r->f->progress_ctx, i, wrap, r->done, r->n);
	pthread_mutex_unlock(&r->mu);
}

int
fleet_run(cJSON **results, guest_target **targets, size_t n, fleet_fn fn, const session_opts *o, const fleet_opts *f)
{
	run r = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .n = n, .targets = targets, .results = results, .fn = fn, .o = o,
		.f = f, .t0 = calloc(n ? n : 1, sizeof(int64_t))};
	size_t size;

	if (f->canary > 0) {
		wave(&r, (size_t)f->canary < n ? (size_t)f->canary : n);
		for (size_t i = 0; i < r.next; i++)
			if (results[i] != NULL && fleet_failed(results[i]) && !r.stopped) {
				r.stopped = 1;
				r.why = "the canary failed; not started";
			}
	}
	size = f->batch > 0 ? (size_t)f->batch : f->batch_pct > 0 ? (n * (size_t)f->batch_pct + 99) / 100 : n;
	if (size == 0)
		size = 1;
	while (!r.stopped && !interrupted && r.next < n)
		wave(&r, r.next + size < n ? r.next + size : n);
	if (interrupted && !r.stopped) {
		r.stopped = 1;
		r.why = "interrupted";
	}
	for (size_t i = 0; i < n; i++)
		if (results[i] == NULL) {
			pthread_mutex_lock(&r.mu);
			settle(&r, i, skipped(targets[i], r.why ? r.why : "not started"), 0);
			pthread_mutex_unlock(&r.mu);
		}
	if (r.stopped && f->rollback_on_fail && !interrupted)
		fleet_each(n, f->parallel, roll_back_vm, &r);
	free(r.t0);
	return r.stopped;
}

/* fleet: see fleet.h. */
#include "fleet.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct {
	pthread_mutex_t mu;
	size_t next, end, n, failed;  /* next VM; end of the current wave; all; failures so far */
	int stopped;
	const char *why;              /* why the run stopped */
	guest_target **targets;
	cJSON **results;
	fleet_fn fn;
	const deploy_opts *o;
	const fleet_opts *f;
} run;

int
fleet_failed(const cJSON *r)
{
	static const char *const good[] = {"deployed", "unchanged", "ok", "probed", "rolled-back", "benchmarked",
		"skipped", NULL};
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

static void *
worker(void *arg)
{
	run *r = arg;
	char err[LM_ERRLEN];

	for (;;) {
		size_t i;
		cJSON *res = NULL;

		pthread_mutex_lock(&r->mu);
		if (r->next >= r->end || r->stopped) {
			pthread_mutex_unlock(&r->mu);
			return NULL;
		}
		i = r->next++;
		pthread_mutex_unlock(&r->mu);
		if (r->fn(&res, r->targets[i], r->o, err) != LM_OK || res == NULL) {
			cJSON_Delete(res);
			res = cJSON_CreateObject();
			cJSON_AddStringToObject(res, "vm", r->targets[i]->name);
			cJSON_AddStringToObject(res, "state", "failed");
			cJSON_AddStringToObject(res, "message", err);
		}
		pthread_mutex_lock(&r->mu);
		r->results[i] = res;
		if (fleet_failed(res)) {
			r->failed++;
			if (over_budget(r) && !r->stopped) {
				r->stopped = 1;
				r->why = "the failure budget was exceeded; not started";
			}
		}
		pthread_mutex_unlock(&r->mu);
	}
}

/* Runs the VMs from r->next up to end on the pool. */
static void
wave(run *r, size_t end)
{
	size_t nth = (size_t)(r->f->parallel > 0 ? r->f->parallel : 1), started = 0;
	pthread_t *th;

	r->end = end;
	if (nth > end - r->next)
		nth = end - r->next;
	if ((th = calloc(nth ? nth : 1, sizeof *th)) != NULL)
		for (; started < nth; started++)
			if (pthread_create(&th[started], NULL, worker, r) != 0)
				break;
	if (started == 0)
		worker(r);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
}

/* Rolls back, to previous, every VM whose result says this run deployed it. */
static void
roll_back(run *r)
{
	deploy_opts o = *r->o;
	char err[LM_ERRLEN];

	o.to = "previous";
	o.payload = NULL;
	for (size_t i = 0; i < r->n; i++) {
		const cJSON *s = r->results[i] ? cJSON_GetObjectItemCaseSensitive(r->results[i], "state") : NULL;
		cJSON *rb = NULL, *wrap;

		if (!cJSON_IsString(s) || strcmp(s->valuestring, "deployed") != 0)
			continue;
		deploy_rollback(&rb, r->targets[i], &o, err);
		wrap = rb ? rb : skipped(r->targets[i], err);
		cJSON_AddItemToObject(wrap, "deploy", r->results[i]);
		r->results[i] = wrap;
	}
}

int
fleet_run(cJSON **results, guest_target **targets, size_t n, fleet_fn fn, const deploy_opts *o, const fleet_opts *f)
{
	run r = {.mu = PTHREAD_MUTEX_INITIALIZER, .n = n, .targets = targets, .results = results, .fn = fn, .o = o,
		.f = f};
	size_t size;

	if (f->canary > 0) {
		wave(&r, (size_t)f->canary < n ? (size_t)f->canary : n);
		for (size_t i = 0; i < r.next; i++)
			if (fleet_failed(results[i]) && !r.stopped) {
				r.stopped = 1;
				r.why = "the canary failed; not started";
			}
	}
	size = f->batch > 0 ? (size_t)f->batch : f->batch_pct > 0 ? (n * (size_t)f->batch_pct + 99) / 100 : n;
	if (size == 0)
		size = 1;
	while (!r.stopped && r.next < n)
		wave(&r, r.next + size < n ? r.next + size : n);
	for (size_t i = 0; i < n; i++)
		if (results[i] == NULL)
			results[i] = skipped(targets[i], r.why ? r.why : "not started");
	if (r.stopped && f->rollback_on_fail)
		roll_back(&r);
	return r.stopped;
}

/* fleet's watcher: a deferred VM whose guest never answers is finished at its connection's
 * deadline, even when that comes before the VM's `at` (a slow upload pushed the settle's end past
 * it), and the watcher does not spin meanwhile. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/util.h"
#include "ops/fleet.h"
#include "unit.h"

/* A guest that never answers: its socket stands in as a pipe nobody writes. */
typedef struct {
	fleet_later later;
	int fds[2];
	int64_t deadline;
} hung;

static int64_t finished_at;

static int
hung_ready(fleet_later *l, int *fd, int64_t *deadline)
{
	hung *h = (hung *)l;

	*fd = h->fds[0];
	*deadline = h->deadline;
	return lm_now_ms() >= h->deadline; /* ssh_chan_ready: a read past the deadline fails at once */
}

static void
hung_finish(fleet_later *l, cJSON *r)
{
	hung *h = (hung *)l;

	finished_at = lm_now_ms();
	cJSON_ReplaceItemInObjectCaseSensitive(r, "state", cJSON_CreateString("failed"));
	close(h->fds[0]);
	close(h->fds[1]);
	free(h);
}

/* The VM: past its deadline 100 ms from now, its settle due 3 s from now. */
static int
defer_hung(cJSON **out, guest_target *t, const session_opts *o, char *err)
{
	hung *h = calloc(1, sizeof *h);

	(void)o;
	if (h == NULL || pipe(h->fds) != 0) {
		free(h);
		snprintf(err, LM_ERRLEN, "setup");
		return LM_EFAIL;
	}
	h->deadline = lm_now_ms() + 100;
	h->later = (fleet_later){.at = lm_now_ms() + 3000, .finish = hung_finish, .ready = hung_ready};
	*out = cJSON_CreateObject();
	cJSON_AddStringToObject(*out, "vm", t->name);
	cJSON_AddStringToObject(*out, "state", "deploying");
	if (!fleet_defer(&h->later)) {
		hung_finish(&h->later, *out);
		finished_at = 0;
	}
	return LM_OK;
}

static int64_t
cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

int
main(void)
{
	guest_target t = {.name = "hung"}, *targets[] = {&t};
	cJSON *results[1] = {NULL};
	session_opts o = {0};
	fleet_opts f = {.parallel = 1, .max_fail = -1, .max_fail_pct = -1};
	int64_t t0 = lm_now_ms(), c0 = cpu_ms(), at;

	fleet_run(results, targets, 1, defer_hung, &o, &f);
	UNIT_OK(finished_at != 0, "the VM was handed to the watcher");
	UNIT_OK(results[0] && strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(results[0], "state")), "failed") == 0,
	    "its result is finished");
	at = t0 + 3000;
	UNIT_OK(finished_at < at, "finished at its deadline, %lld ms in, not at its `at` (3000 ms)",
	    (long long)(finished_at - t0));
	printf("# the run: %lld ms of wall time, %lld ms of CPU\n", (long long)(lm_now_ms() - t0),
	    (long long)(cpu_ms() - c0));
	cJSON_Delete(results[0]);
	UNIT_DONE();
}

/* cli_vms: the VMs a command names (resolved by ops/targets.h) run on the fleet engine, and the
 * three forms of output: live on a TTY, plain lines, or JSON. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/render.h"
#include "core/ledger.h"
#include "ops/targets.h"

static void
count(cJSON *obj, const char *name, int delta)
{
	cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (c == NULL)
		cJSON_AddNumberToObject(obj, name, delta);
	else if (c->valuedouble + delta == 0)
		cJSON_DeleteItemFromObjectCaseSensitive(obj, name);
	else
		cJSON_SetNumberValue(c, c->valuedouble + delta);
}

/* The shimmed probe's differences from its profile ("maxThreadgroupMemoryLength: want 65536,
 * got 32768"), from a deploy's install answer or a probe's own; NULL when there are none. */
static const cJSON *
differences(const cJSON *res)
{
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(res, "shimmed"), *d;

	if (!cJSON_IsObject(sh))
		sh = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "install"), "shimmed");
	d = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sh, "expect"), "differences");
	return cJSON_IsArray(d) && cJSON_GetArraySize(d) > 0 ? d : NULL;
}

/* A short SHA-256: its first 12 hex digits, or "none". */
static const char *
short_sha(char *out, size_t len, const cJSON *o, const char *k)
{
	const char *v = lm_jstr_or(o, k, NULL);

	snprintf(out, len, "%.12s", v && *v ? v : "none");
	return out;
}

/* status in words: current and previous release, the service and whether the shim is active in
 * its process, the LaunchAgent (which is what sets the shim for the process launchd runs), the image version's verdict, and drift. */
static void
print_status(const cJSON *res, const cJSON *st)
{
	const cJSON *svc = cJSON_GetObjectItemCaseSensitive(st, "service");
	const cJSON *la = cJSON_GetObjectItemCaseSensitive(st, "launchAgent");
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(svc, "pid"), *drift = cJSON_GetObjectItemCaseSensitive(st, "drift");
	char cur[16], prev[16];

	cli_printf("%-24s %-18s current %s, previous %s; service ", lm_jstr_or(res, "vm", "?"), lm_jstr_or(res, "state", "?"),
	    short_sha(cur, sizeof cur, st, "current"), short_sha(prev, sizeof prev, st, "previous"));
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(svc, "loaded")))
		printf("not loaded");
	else if (cJSON_IsNumber(pid) && pid->valuedouble > 0) {
		const cJSON *act = cJSON_GetObjectItemCaseSensitive(svc, "shimActive");

		/* What the shim left in that process (status.sh reads its state file for the pid); a
		 * status.sh of an older release says nothing of it, and neither does this line. */
		cli_printf("%s, pid %.0f", lm_jstr_or(svc, "state", "loaded"), pid->valuedouble);
		if (cJSON_IsTrue(act))
			printf(", shim active in it");
		else if (cJSON_IsFalse(act))
			cli_printf(", shim stays stock in it: %.200s",
			    lm_jstr_or(cJSON_GetObjectItemCaseSensitive(svc, "shim"), "reason", "no reason given"));
		else if (cJSON_IsNull(act))
			printf(", no shim state for it");
	} else
		cli_printf("%s, no pid", lm_jstr_or(svc, "state", "loaded"));
	printf("; shim %s", !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(la, "present")) ? "not set (no LaunchAgent)" :
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(la, "matches")) ? "set by its LaunchAgent" :
	    "unknown (the LaunchAgent differs from the release's)");
	cli_printf("; image verdict %s; drift ", lm_jstr_or(res, "verdict", "unknown"));
	if (!cJSON_IsArray(drift) || cJSON_GetArraySize(drift) == 0)
		printf("none");
	for (const cJSON *it = cJSON_IsArray(drift) ? drift->child : NULL; it; it = it->next)
		cli_printf("%s%s", it == drift->child ? "" : ", ", cJSON_IsString(it) ? it->valuestring : "?");
	printf("\n");
}

static void
print_line_rest(const cJSON *res)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
	const char *msg = lm_jstr_or(res, "message", ""), *see = strstr(msg, " (see shimmed.expect.differences)");
	const cJSON *d = strcmp(lm_jstr_or(res, "state", ""), "validation-failed") == 0 ? differences(res) : NULL;

	if (cJSON_IsObject(st) && cJSON_GetObjectItemCaseSensitive(res, "message") == NULL) {
		print_status(res, st);
		return;
	}
	if (d == NULL) {
		const char *cleaned = lm_jstr_or(cJSON_GetObjectItemCaseSensitive(res, "install"), "cleaned", "");

		cli_printf("%-24s %-18s %s", lm_jstr_or(res, "vm", "?"), lm_jstr_or(res, "state", "?"), msg);
		if (*cleaned) /* what an earlier, interrupted run left in the guest */
			cli_printf("%scleaned up after an earlier run: %s", *msg ? "; " : "", cleaned);
		printf("\n");
		return;
	}
	/* The differences in words, not a pointer into the JSON. */
	cli_printf("%-24s %-18s %.*s:", lm_jstr_or(res, "vm", "?"), lm_jstr_or(res, "state", "?"),
	    (int)(see ? (size_t)(see - msg) : strlen(msg)), msg);
	for (const cJSON *it = d->child; it; it = it->next)
		cli_printf("%s %s", it == d->child ? "" : ";", cJSON_IsString(it) ? it->valuestring : "?");
	printf("\n");
}

/* One probe answer in words: "Apple9, 64 KiB threadgroup memory, shim active". */
static void
probe_words(const cJSON *p)
{
	const cJSON *fam = cJSON_GetObjectItemCaseSensitive(p, "families");
	const cJSON *tg = cJSON_GetObjectItemCaseSensitive(p, "maxThreadgroupMemoryLength");
	const cJSON *shim = cJSON_GetObjectItemCaseSensitive(p, "shim");
	int top = 0;

	for (int k = 1; k <= 20; k++) {
		char name[24];

		snprintf(name, sizeof name, "Apple%d", k);
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fam, name)))
			top = k;
	}
	if (top > 0)
		printf("Apple%d", top);
	else
		printf("no Apple family");
	if (cJSON_IsNumber(tg))
		printf(", %.0f KiB threadgroup memory", tg->valuedouble / 1024);
	printf(", shim %s", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(shim, "active")) ? "active" : "not active");
}

static void
print_line(const cJSON *res)
{
	const cJSON *stock = cJSON_GetObjectItemCaseSensitive(res, "stock");
	const cJSON *shimmed = cJSON_GetObjectItemCaseSensitive(res, "shimmed");
	const cJSON *val = cJSON_GetObjectItemCaseSensitive(res, "validation");
	const cJSON *kld = cJSON_GetObjectItemCaseSensitive(val, "meanKld"), *top = cJSON_GetObjectItemCaseSensitive(val,
	    "sameTopPercent"), *ratio = cJSON_GetObjectItemCaseSensitive(val, "pplRatio");

	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(res, "action"))) { /* --dry-run's plan */
		char cur[16], nw[16];
		const char *act = lm_jstr_or(res, "action", "?");

		cli_printf("%-24s %-18s current %s, new %s: %s%s%s\n", lm_jstr_or(res, "vm", "?"), strcmp(act, "install") == 0 ?
		    "would install" : strcmp(act, "unchanged") == 0 ? "unchanged" : "would be refused",
		    short_sha(cur, sizeof cur, res, "current"), short_sha(nw, sizeof nw, res, "new"),
		    strcmp(act, "install") == 0 ? "install" : act, strcmp(act, "unchanged") == 0 ? "" : ": ",
		    strcmp(act, "unchanged") == 0 ? "" : lm_jstr_or(res, "message", ""));
		return;
	}
	if (strcmp(lm_jstr_or(res, "state", ""), "validated") == 0 && cJSON_IsNumber(kld) && cJSON_IsNumber(top) &&
	    cJSON_IsNumber(ratio)) { /* validate: its figures */
		cli_printf("%-24s %-18s mean KLD %.6f, same top token %.3f%%, PPL(Q)/PPL(base) %.6f\n", lm_jstr_or(res, "vm", "?"),
		    "validated", kld->valuedouble, top->valuedouble, ratio->valuedouble);
		return;
	}
	if (strcmp(lm_jstr_or(res, "state", ""), "probed") == 0 && cJSON_IsObject(stock) && cJSON_IsObject(shimmed)) {
		/* probe, side by side: the highest Apple family, threadgroup memory, the shim */
		cli_printf("%-24s %-18s stock: ", lm_jstr_or(res, "vm", "?"), lm_jstr_or(res, "state", "?"));
		probe_words(stock);
		printf(" | shimmed: ");
		probe_words(shimmed);
		printf(" | %s\n", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "pass")) ? "pass" : "FAIL");
		return;
	}
	print_line_rest(res);
}

/* Output as each VM finishes: on a TTY its line above a live progress line; otherwise its line,
 * or with --json its object, flushed at once (a pipe or a CI log sees it then, and a run killed
 * by `timeout` has printed what it finished). A watcher thread ticks the live line every second
 * and takes SIGINT and SIGTERM: the first stops starting VMs (fleet_interrupt), a second
 * abandons the running ones (their sessions close as this process exits). */
typedef struct {
	pthread_mutex_t mu; /* stdout, and everything below */
	int tty, json, input; /* input: --order input */
	int doc;              /* --format junit|openmetrics: one document at the end (render.h) */
	const char *cmd;
	time_t wall;          /* when the run began, for the document */
	int64_t start;
	cJSON *states;  /* count per state */
	cJSON **res;    /* each VM's result so far (a copy): a rolled-back VM moves from "deployed" */
	unsigned char *started;
	size_t base, done, total; /* results settled before the engine's run; finished; all results */
	guest_target **targets;
	size_t ntargets;
	/* --order input: at[k] is the result at input position k; results at positions below next
	 * are printed; again[i], result i came again (a rollback) after it was printed. */
	size_t *at, next;
	unsigned char *again;
	cJSON *order;   /* every VM's name in input order, for the summary */
	int pipe[2];    /* the signal handler's self-pipe */
	pthread_t watcher;
	int watching;
} live;

static int sig_fd = -1;

static void
on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	int e = errno;

	if (sig_fd >= 0 && write(sig_fd, &b, 1) < 0) {
		/* nothing to do: a full pipe has a signal in it already */
	}
	errno = e;
}

/* The progress line, under l->mu: done/total, counts by state, VMs in progress, the elapsed
 * seconds and, once two VMs have finished, an estimate of the time left. */
static void
live_line(live *l)
{
	double el = (double)(lm_now_ms() - l->start) / 1000;
	size_t done = l->done, run = fleet_running();

	printf("\r\033[K[%zu/%zu]", l->base + done, l->total);
	for (const cJSON *it = l->states->child; it; it = it->next)
		cli_printf(" %s %d", it->string, (int)it->valuedouble);
	printf(" | %zu running | %.0fs elapsed", run, el);
	if (done >= 2 && l->base + done < l->total)
		printf(", ETA %.0fs", el / (double)done * (double)(l->total - l->base - done));
	fflush(stdout);
}

static void
started(void *ctx, size_t i)
{
	live *l = ctx;

	pthread_mutex_lock(&l->mu);
	l->started[i] = 1;
	pthread_mutex_unlock(&l->mu);
}

static void
show(const live *l, const cJSON *res)
{
	const cJSON *kn = cJSON_GetObjectItemCaseSensitive(res, "knownHostsNote");

	if (l->json)
		cli_print_json(res);
	else if (!l->doc)
		print_line(res);
	if (!l->json && cJSON_IsString(kn))
		cli_error(0, "warning: %s: known hosts lines skipped: %s", lm_jstr_or(res, "vm", "?"), kn->valuestring);
}

/* With --order input: every result whose turn has come (all before it printed). */
static void
show_ready(live *l)
{
	for (; l->next < l->total && l->res[l->at[l->next]] != NULL; l->next++)
		show(l, l->res[l->at[l->next]]);
}

static int
printed(const live *l, size_t i)
{
	for (size_t k = 0; k < l->next; k++)
		if (l->at[k] == i)
			return 1;
	return 0;
}

/* With --order input: the results that came again after they were printed, in input order. */
static void
show_again(live *l)
{
	for (size_t k = 0; l->again && k < l->total; k++)
		if (l->again[l->at[k]]) {
			show(l, l->res[l->at[k]]);
			l->again[l->at[k]] = 0;
		}
}

static void
progress(void *ctx, size_t i, const cJSON *res, size_t done, size_t n)
{
	live *l = ctx;

	(void)n;
	pthread_mutex_lock(&l->mu);
	if (l->res[i] != NULL)
		count(l->states, lm_jstr_or(l->res[i], "state", "?"), -1);
	if (l->input && l->res[i] != NULL && printed(l, i))
		l->again[i] = 1;
	cJSON_Delete(l->res[i]);
	l->res[i] = cJSON_Duplicate(res, 1);
	count(l->states, lm_jstr_or(res, "state", "?"), 1);
	l->done = done;
	if (l->tty)
		printf("\r\033[K");
	if (!l->input)
		show(l, res);
	else if (l->res[i] != NULL)
		show_ready(l);
	if (l->tty)
		live_line(l);
	fflush(stdout);
	pthread_mutex_unlock(&l->mu);
}

static int print_end(const live *l, const char *textfile, cJSON **res, size_t n, int rc);

/* A second interrupt: the running VMs are abandoned (said per VM), the summary is printed with
 * what is known, and the process exits 130; its sessions close with it. Under l->mu. */
static void
abandon(live *l)
{
	cJSON **res = calloc(l->total, sizeof *res);
	unsigned char *quiet = calloc(l->total, 1); /* the VMs never started: counted, not printed */
	size_t n = 0;

	if (l->tty)
		printf("\r\033[K");
	for (size_t i = 0; res != NULL && i < l->total; i++) {
		if (l->res[i] != NULL) {
			res[n++] = l->res[i];
			continue;
		}
		if (i >= l->ntargets)
			continue;
		res[n] = l->res[i] = cJSON_CreateObject();
		cJSON_AddStringToObject(res[n], "vm", l->targets[i]->name);
		cJSON_AddStringToObject(res[n], "state", l->started[i] ? "abandoned" : "skipped");
		cJSON_AddStringToObject(res[n], "message", l->started[i] ? "interrupted twice: its session was closed "
		    "mid-run; nothing recorded" : "interrupted");
		if (l->started[i] && !l->input)
			show(l, res[n]);
		else if (!l->started[i] && quiet != NULL)
			quiet[i] = 1;
		n++;
	}
	/* --order input: what was held back and the abandoned VMs, in input order. */
	for (size_t k = l->input ? l->next : l->total; res != NULL && quiet != NULL && k < l->total; k++)
		if (l->res[l->at[k]] != NULL && !quiet[l->at[k]])
			show(l, l->res[l->at[k]]);
	if (l->input)
		show_again(l);
	print_end(l, NULL, res, n, 130);
	fflush(stdout);
	fflush(stderr);
	_exit(130);
}

static void *
watch(void *arg)
{
	live *l = arg;
	int seen = 0;
	sigset_t ss;

	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	pthread_sigmask(SIG_UNBLOCK, &ss, NULL); /* this thread takes them, no worker */
	for (;;) {
		struct pollfd pf = {.fd = l->pipe[0], .events = POLLIN};
		unsigned char b;
		int k = poll(&pf, 1, 1000);

		if (k < 0 && errno == EINTR)
			continue;
		pthread_mutex_lock(&l->mu);
		if (k == 0 && l->tty)
			live_line(l);
		if (k > 0 && read(l->pipe[0], &b, 1) == 1) {
			if (b == 0) { /* the run is over */
				pthread_mutex_unlock(&l->mu);
				return NULL;
			}
			if (seen++ > 0)
				abandon(l);
			fleet_interrupt();
			if (l->tty)
				printf("\r\033[K");
			fflush(stdout);
			cli_error(0, "interrupted: finishing %zu running VMs; press Ctrl-C again to abandon them",
			    fleet_running());
			if (l->tty)
				live_line(l);
		}
		pthread_mutex_unlock(&l->mu);
	}
}

/* Starts the watcher with SIGINT and SIGTERM sent to it alone; 0, or -1 (then no interrupt is
 * caught and the run goes on as before). */
static int
watch_start(live *l, sigset_t *old, struct sigaction *oint, struct sigaction *oterm)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigset_t ss;

	if (pipe(l->pipe) != 0)
		return -1;
	fcntl(l->pipe[1], F_SETFL, O_NONBLOCK);
	sig_fd = l->pipe[1];
	sigemptyset(&sa.sa_mask);
	sigemptyset(&ss);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &ss, old); /* the workers inherit it */
	/* A signal ignored on entry stays ignored (nohup, a script's background job). */
	sigaction(SIGINT, NULL, oint);
	sigaction(SIGTERM, NULL, oterm);
	if (oint->sa_handler != SIG_IGN)
		sigaction(SIGINT, &sa, NULL);
	if (oterm->sa_handler != SIG_IGN)
		sigaction(SIGTERM, &sa, NULL);
	if (pthread_create(&l->watcher, NULL, watch, l) != 0) {
		sigaction(SIGINT, oint, NULL);
		sigaction(SIGTERM, oterm, NULL);
		pthread_sigmask(SIG_SETMASK, old, NULL);
		close(l->pipe[0]);
		close(l->pipe[1]);
		sig_fd = -1;
		return -1;
	}
	l->watching = 1;
	return 0;
}

static void
watch_stop(live *l, const sigset_t *old, const struct sigaction *oint, const struct sigaction *oterm)
{
	unsigned char b = 0;

	if (!l->watching)
		return;
	while (write(l->pipe[1], &b, 1) < 0 && errno == EINTR)
		;
	pthread_join(l->watcher, NULL);
	sigaction(SIGINT, oint, NULL);
	sigaction(SIGTERM, oterm, NULL);
	sig_fd = -1;
	pthread_sigmask(SIG_SETMASK, old, NULL);
	close(l->pipe[0]);
	close(l->pipe[1]);
	l->watching = 0;
}

/* --dry-run: the waves --canary and --batch would make, as fleet_run makes them. */
static void
print_waves(guest_target **t, size_t n, const fleet_opts *f, int json)
{
	cJSON *waves = cJSON_CreateArray();
	size_t next = 0, size = f->batch > 0 ? (size_t)f->batch : f->batch_pct > 0 ? (n * (size_t)f->batch_pct + 99) / 100 : n;

	if (size == 0)
		size = 1;
	while (next < n) {
		size_t end = next == 0 && f->canary > 0 ? (size_t)f->canary : next + size;
		cJSON *w = cJSON_CreateArray();

		if (end > n)
			end = n;
		for (; next < end; next++)
			cJSON_AddItemToArray(w, cJSON_CreateString(t[next]->name));
		cJSON_AddItemToArray(waves, w);
	}
	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddItemToObject(o, "waves", waves);
		cli_print_json(o);
		cJSON_Delete(o);
		return;
	}
	printf("# plan: %d wave(s)", cJSON_GetArraySize(waves));
	if (f->max_fail >= 0 || f->max_fail_pct >= 0)
		printf(", stopping when more than %d%s fail", f->max_fail >= 0 ? f->max_fail : f->max_fail_pct,
		    f->max_fail >= 0 ? "" : "%");
	printf("\n");
	{
		int k = 0;

		for (const cJSON *w = waves->child; w; w = w->next, k++) {
			printf("#   %s:", k == 0 && f->canary > 0 ? "canary" : "wave");
			for (const cJSON *v = w->child; v; v = v->next)
				cli_printf(" %s", v->valuestring);
			printf("\n");
		}
	}
	cJSON_Delete(waves);
}

/* The summary: counts by state, and by image version and state; in JSON, the VMs' names in
 * input order (order). */
static void
print_summary(cJSON **res, size_t n, int json, double secs, const cJSON *order)
{
	cJSON *states = cJSON_CreateObject(), *images = cJSON_CreateObject();
	char img[600];

	for (size_t i = 0; i < n; i++) {
		cJSON *per;

		count(states, lm_jstr_or(res[i], "state", "?"), 1);
		render_image_label(img, sizeof img, res[i]);
		if ((per = cJSON_GetObjectItemCaseSensitive(images, img)) == NULL)
			per = cJSON_AddObjectToObject(images, img);
		count(per, lm_jstr_or(res[i], "state", "?"), 1);
	}
	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(states, "total", (double)n);
		cJSON_AddItemToObject(states, "byImage", images);
		cJSON_AddNumberToObject(states, "seconds", secs);
		cJSON_AddItemToObject(states, "order", order ? cJSON_Duplicate(order, 1) : cJSON_CreateArray());
		cJSON_AddItemToObject(o, "summary", states);
		cli_print_json(o);
		cJSON_Delete(o);
		return;
	}
	printf("# %zu VM(s):", n);
	for (const cJSON *it = states->child; it; it = it->next)
		cli_printf(" %s %d", it->string, (int)it->valuedouble);
	printf(" (%.1fs)\n", secs);
	for (const cJSON *im = images->child; im; im = im->next)
		for (const cJSON *it = im->child; it; it = it->next)
			cli_printf("#   %-52s %-18s %d\n", im->string, it->string, (int)it->valuedouble);
	cJSON_Delete(states);
	cJSON_Delete(images);
}

/* The summary, or with --format junit|openmetrics the document of every result (render.h); then
 * status --textfile's metrics, written whole unless the run was interrupted (rc 130). Returns rc,
 * or the exit code of a write that failed. */
static int
print_end(const live *l, const char *textfile, cJSON **res, size_t n, int rc)
{
	char err[LM_ERRLEN];
	lm_buf b = {0};
	int k;

	if (!l->doc)
		print_summary(res, n, l->json, (double)(lm_now_ms() - l->start) / 1000, l->order);
	else if (render_vms(&b, l->doc, l->cmd, res, n, l->wall) == 0)
		render_put(&b);
	lm_buf_free(&b);
	if (textfile == NULL || rc == 130 || (k = render_textfile(textfile, res, n, err)) == LM_OK)
		return rc;
	return cli_fail(k, err);
}

int
cli_run_vms(cli_conn *c, int nvms, char **vms, int (*fn)(cJSON **, guest_target *, const session_opts *, char *),
    session_opts *o, const char *cmd)
{
	ops_targets p = {0};
	cJSON **results = NULL;
	live l = {.mu = PTHREAD_MUTEX_INITIALIZER, .start = lm_now_ms(), .json = c->json, .doc = c->doc, .cmd = cmd,
		.wall = time(NULL), .tty = !c->json && !c->doc && isatty(STDOUT_FILENO)};
	int rc, stopped;
	fleet_opts f = c->r.fleet;
	sigset_t oldmask;
	struct sigaction oint, oterm;
	size_t all;
	char err[LM_ERRLEN];

	ops_session_opts(&c->r, o);
	if ((rc = ops_targets_resolve(&p, &c->r, nvms, vms, err)) != LM_OK) {
		rc = cli_fail(rc, err);
		goto done;
	}
	all = p.n + p.nextra;
	if (all == 0) { /* nothing to do is no failure: exit 0, saying so, and an empty summary */
		rc = cli_error(EXIT_OK, "%s: no VMs: %s lists none", cmd, c->r.hosts_file ? c->r.hosts_file : "lume ls");
		rc = print_end(&l, c->textfile, NULL, 0, rc);
		goto done;
	}
	if ((results = calloc(all, sizeof *results)) == NULL || (l.res = calloc(all, sizeof *l.res)) == NULL ||
	    (l.started = calloc(all, 1)) == NULL || (l.states = cJSON_CreateObject()) == NULL ||
	    (l.at = calloc(all, sizeof *l.at)) == NULL || (l.again = calloc(all, 1)) == NULL ||
	    (l.order = cJSON_CreateArray()) == NULL) {
		rc = cli_error(EXIT_SOMEFAIL, "out of memory");
		goto done;
	}
	/* Input positions: the targets' and the extras', in the order targets() met them. */
	for (size_t i = 0; i < all; i++)
		l.at[i < p.n ? p.tpos[i] : p.xpos[i - p.n]] = i;
	for (size_t k = 0; k < all; k++)
		cJSON_AddItemToArray(l.order, cJSON_CreateString(l.at[k] < p.n ? p.targets[l.at[k]]->name :
		    lm_jstr_or(p.extra[l.at[k] - p.n], "vm", "?")));
	l.input = c->order_input;
	l.total = all;
	l.targets = p.targets;
	l.ntargets = p.n;
	if (l.tty) {
		pthread_mutex_lock(&l.mu);
		live_line(&l); /* at once, before any VM answers */
		pthread_mutex_unlock(&l.mu);
	}
	for (size_t i = 0; i < p.nextra; i++)
		progress(&l, p.n + i, p.extra[i], i + 1, all);
	l.base = p.nextra;
	l.done = 0;
	f.progress = progress;
	f.progress_ctx = &l;
	f.started = started;
	watch_start(&l, &oldmask, &oint, &oterm);
	stopped = p.n ? fleet_run(results, p.targets, p.n, fn, o, &f) : 0;
	watch_stop(&l, &oldmask, &oint, &oterm);
	if (p.nextra > 0)
		memcpy(results + p.n, p.extra, p.nextra * sizeof *results);
	p.nextra = 0;
	if (l.tty)
		printf("\r\033[K");
	if (l.input) /* a VM returned by --rollback-on-fail, again */
		show_again(&l);
	if (o->dry_run && p.n > 0 && !c->doc)
		print_waves(p.targets, p.n, &f, c->json);
	/* a stopped run is exit 1; an interrupted one 130, as a shell reports SIGINT */
	rc = fleet_interrupted() ? 130 : stopped ? EXIT_SOMEFAIL : session_exit_code(results, all);
	rc = print_end(&l, c->textfile, results, all, rc);
	for (size_t i = 0; i < all; i++)
		cJSON_Delete(results[i]);
done:
	cJSON_Delete(l.states);
	cJSON_Delete(l.order);
	free(l.at);
	free(l.again);
	for (size_t i = 0; l.res && i < l.total; i++)
		cJSON_Delete(l.res[i]);
	free(l.res);
	free(l.started);
	ops_targets_free(&p);
	free(results);
	return rc;
}

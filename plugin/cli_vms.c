/* cli_vms: the VMs a command names (names, --host, --hosts, --all), run on the fleet engine,
 * and the three forms of output: live on a TTY, plain lines, or JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hosts.h"
#include "identity.h"
#include "image.h"
#include "ledger.h"
#include "lume.h"
#include "relay.h"

/* The VMs to run, in order, and results for what could not be started (a host that could not
 * be reached, a stopped VM on a host). */
typedef struct {
	guest_target **targets;
	size_t n;
	cJSON **extra;
	size_t nextra;
	relay *relay;
} target_list;

static int
add_target(target_list *p, guest_target *t)
{
	guest_target **v = reallocarray(p->targets, p->n + 1, sizeof *v);

	if (v == NULL) {
		guest_target_free(t);
		return -1;
	}
	v[p->n++] = t;
	p->targets = v;
	return 0;
}

static int
add_extra(target_list *p, const char *vm, const char *host, const char *state, const char *msg)
{
	cJSON **v = reallocarray(p->extra, p->nextra + 1, sizeof *v), *r;

	if (v == NULL)
		return -1;
	p->extra = v;
	r = v[p->nextra++] = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "vm", vm);
	if (host)
		cJSON_AddStringToObject(r, "host", host);
	cJSON_AddStringToObject(r, "state", state);
	cJSON_AddStringToObject(r, "message", msg);
	return 0;
}

static int
named(const char *name, int nvms, char **vms, int *found)
{
	for (int i = 0; i < nvms; i++)
		if (strcmp(vms[i], name) == 0) {
			found[i] = 1;
			return 1;
		}
	return nvms == 0;
}

/* A guest on host label, reached through the relay's host idx, with who it is as its host
 * said (id: its facts and its VMs' digests). */
static int
relayed(target_list *p, const cli_conn *c, const char *label, size_t idx, const lume_vm *vm,
    const identity_host *id)
{
	guest_target *t = calloc(1, sizeof *t);
	char name[600], digest[IMAGE_DIGEST_LEN + 1], why[LM_ERRLEN];

	if (t == NULL)
		return -1;
	snprintf(name, sizeof name, "%s/%s", label, vm->name);
	t->name = strdup(name);
	t->lume = strdup(vm->name);
	t->user = strdup(c->ssh.user);
	t->host = strdup(vm->ip);
	t->via = strdup(label);
	t->port = c->port;
	t->relay = p->relay;
	t->relay_host = idx;
	if (vm->location && (t->location = strdup(vm->location)) == NULL)
		goto oom;
	if (id->mac_ok ? (t->mac = malloc(sizeof *t->mac)) == NULL : (t->mac_why = strdup(id->mac_why)) == NULL)
		goto oom;
	if (t->mac)
		*t->mac = id->mac;
	if (identity_host_digest(digest, id, vm->name, vm->location, why, sizeof why) == LM_OK ?
	    (t->digest = strdup(digest)) == NULL : (t->no_digest = strdup(why)) == NULL)
		goto oom;
	if (!t->name || !t->lume || !t->user || !t->host || !t->via) {
oom:
		guest_target_free(t);
		return -1;
	}
	return add_target(p, t);
}

/* Every VM of the --hosts FILE hosts (those named, when VMs are named), reached through the
 * host's one session. */
static int
from_hosts(target_list *p, cli_conn *c, int nvms, char **vms, int *found)
{
	guest_target **hv;
	hosts_conn *hc;
	size_t hn;
	char err[LM_ERRLEN], msg[LM_ERRLEN + 300];
	int rc;

	if ((rc = hosts_load(&hv, &hn, c->hosts_file, c->ssh.user, err)) != LM_OK)
		return cli_fail(rc, err);
	if ((hc = calloc(hn, sizeof *hc)) == NULL || relay_new(&p->relay, err) != LM_OK) {
		free(hc);
		hosts_free(hv, hn);
		return cli_error(EXIT_SOMEFAIL, "cannot start the relay");
	}
	hosts_connect(hc, hv, hn, &c->ssh, c->timeout_s, c->fleet.parallel);
	for (size_t i = 0; i < hn; i++) {
		size_t idx;

		if (hc[i].c == NULL) {
			snprintf(msg, sizeof msg, "host %s: %s", hv[i]->name, hc[i].err);
			add_extra(p, hv[i]->name, hv[i]->name, deploy_why_state(hc[i].why), msg);
		} else if (relay_add(p->relay, hc[i].c, &idx, err) != LM_OK) {
			add_extra(p, hv[i]->name, hv[i]->name, "failed", err);
		} else {
			hc[i].c = NULL; /* the relay's now */
			for (size_t j = 0; j < hc[i].nvms; j++) {
				const lume_vm *vm = hc[i].vms[j];

				if (!named(vm->name, nvms, vms, found))
					continue;
				snprintf(msg, sizeof msg, "%s/%s", hv[i]->name, vm->name);
				if (!image_vm_name_ok(vm->name)) {
					char why[300];
					lm_buf e = {0};

					/* Before any connection: such a name would be a host key's name and a path. */
					cli_escape(&e, vm->name);
					snprintf(why, sizeof why, "host %s lists a VM name this tool refuses (letters, digits, . _ -, "
					    "at most %d): %.100s", hv[i]->name, IMAGE_NAME_MAX, e.data ? e.data : "");
					lm_buf_free(&e);
					add_extra(p, msg, hv[i]->name, "refused", why);
				} else if (strcmp(vm->status, "running") != 0 || vm->ip == NULL || *vm->ip == '\0') {
					char why[300];

					snprintf(why, sizeof why, "VM %s on host %s is %s%s", vm->name, hv[i]->name, vm->status,
					    strcmp(vm->status, "running") == 0 ? " but has no IP address yet" : "");
					add_extra(p, msg, hv[i]->name, "unreachable", why);
				} else if (relayed(p, c, hv[i]->name, idx, vm, &hc[i].id) != 0)
					add_extra(p, msg, hv[i]->name, "failed", "out of memory");
			}
		}
		hosts_conn_clear(&hc[i]);
	}
	free(hc);
	hosts_free(hv, hn);
	for (int i = 0; i < nvms; i++)
		if (!found[i]) {
			snprintf(msg, sizeof msg, "VM %s: no host in %s lists it", vms[i], c->hosts_file);
			add_extra(p, vms[i], NULL, "unreachable", msg);
		}
	return EXIT_OK;
}

static int
targets(target_list *p, cli_conn *c, int nvms, char **vms)
{
	char err[LM_ERRLEN];
	int rc;

	if (c->hosts_file != NULL) {
		int *found = calloc((size_t)nvms + 1, sizeof *found);

		rc = found ? from_hosts(p, c, nvms, vms, found) : cli_error(EXIT_SOMEFAIL, "out of memory");
		free(found);
		if (rc != EXIT_OK)
			return rc;
		nvms = 0; /* they filtered the hosts' VMs */
	}
	for (int i = 0; i < nvms; i++) {
		guest_target *t;

		if (guest_target_lume(&t, vms[i], c->ssh.user, err) != LM_OK || (t->port = c->port, add_target(p, t)) != 0)
			return cli_fail(LM_EFAIL, err);
	}
	for (size_t i = 0; i < c->nhosts; i++) {
		guest_target *t;

		if ((rc = guest_target_host(&t, c->hosts[i], c->ssh.user, err)) != LM_OK)
			return cli_fail(rc, err);
		if (add_target(p, t) != 0)
			return cli_error(EXIT_SOMEFAIL, "out of memory");
	}
	if (c->all && c->hosts_file == NULL) {
		lume_vm **all;
		size_t n;

		if ((rc = lume_list(&all, &n, c->lume, err)) != LM_OK)
			return cli_fail(rc, err);
		for (size_t i = 0; i < n; i++) {
			guest_target *t = NULL;

			if (guest_target_lume(&t, all[i]->name, c->ssh.user, err) == LM_OK) {
				/* A running VM's address is in the listing: no `lume get` per VM. */
				if (strcmp(all[i]->status, "running") == 0 && all[i]->ip != NULL && *all[i]->ip != '\0' &&
				    all[i]->ssh_available != 0)
					t->host = strdup(all[i]->ip);
				if (all[i]->location != NULL)
					t->location = strdup(all[i]->location);
				t->port = c->port;
				add_target(p, t);
			}
			lume_vm_free(all[i]);
		}
		free(all);
	}
	return EXIT_OK;
}

static const char *
str(const cJSON *o, const char *k, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* "REF@sha256:1a2b3c4d… (macOS 26.5 25F71)" as ledger_key_label names the result's image
 * version ("REF (no digest)", "unknown@..."), or "unknown (not reached)". */
static void
image_label(char *out, size_t len, const cJSON *res)
{
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(res, "key"), *in = res;
	char label[600];

	if (!cJSON_IsObject(key)) {
		in = cJSON_GetObjectItemCaseSensitive(res, "deploy");
		key = cJSON_GetObjectItemCaseSensitive(in, "key");
	}
	if (!cJSON_IsObject(key))
		snprintf(out, len, "unknown (not reached)");
	else
		snprintf(out, len, "%s (macOS %s %s)", ledger_key_label(label, sizeof label, key, str(in, "image", NULL)),
		    str(key, "guestOS", "?"), str(key, "guestBuild", "?"));
}

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

static void
print_line(const cJSON *res)
{
	cli_printf("%-24s %-18s %s\n", str(res, "vm", "?"), str(res, "state", "?"), str(res, "message", ""));
}

/* Live output on a TTY: one line per finished VM and a progress line beneath them. */
typedef struct {
	int64_t start;
	cJSON *states;  /* count per state */
	char **last;    /* each VM's state so far: a rolled-back VM moves from "deployed" */
	size_t base, total; /* results settled before the engine's run; all results */
} live;

static void
progress(void *ctx, size_t i, const cJSON *res, size_t done, size_t n)
{
	live *l = ctx;
	double el = (double)(lm_now_ms() - l->start) / 1000;

	if (l->last[i] != NULL)
		count(l->states, l->last[i], -1);
	free(l->last[i]);
	l->last[i] = strdup(str(res, "state", "?"));
	count(l->states, str(res, "state", "?"), 1);
	printf("\r\033[K");
	print_line(res);
	(void)n;
	printf("[%zu/%zu]", l->base + done, l->total);
	for (const cJSON *it = l->states->child; it; it = it->next)
		cli_printf(" %s %d", it->string, (int)it->valuedouble);
	printf(" | %.1fs elapsed", el);
	if (done > 0 && l->base + done < l->total)
		printf(", ETA %.0fs", el / (double)done * (double)(l->total - l->base - done));
	fflush(stdout);
}

/* The summary: counts by state, and by image version and state. */
static void
print_summary(cJSON **res, size_t n, int json, double secs)
{
	cJSON *states = cJSON_CreateObject(), *images = cJSON_CreateObject();
	char img[600];

	for (size_t i = 0; i < n; i++) {
		cJSON *per;

		count(states, str(res[i], "state", "?"), 1);
		image_label(img, sizeof img, res[i]);
		if ((per = cJSON_GetObjectItemCaseSensitive(images, img)) == NULL)
			per = cJSON_AddObjectToObject(images, img);
		count(per, str(res[i], "state", "?"), 1);
	}
	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(states, "total", (double)n);
		cJSON_AddItemToObject(states, "byImage", images);
		cJSON_AddNumberToObject(states, "seconds", secs);
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

int
cli_run_vms(cli_conn *c, int nvms, char **vms, int (*fn)(cJSON **, guest_target *, const deploy_opts *, char *),
    deploy_opts *o, const char *cmd)
{
	target_list p = {0};
	cJSON **results = NULL;
	live l = {.start = lm_now_ms()};
	int rc, stopped, tty = !c->json && isatty(STDOUT_FILENO);
	fleet_opts f = c->fleet;
	size_t all;

	o->state = c->state;
	o->lume = c->lume;
	o->ssh = c->ssh;
	o->timeout_s = c->timeout_s;
	o->wait_s = c->wait_s;
	if ((rc = targets(&p, c, nvms, vms)) != EXIT_OK)
		goto done;
	all = p.n + p.nextra;
	if (all == 0) { /* nothing to do is no failure: exit 0, saying so, and an empty summary */
		rc = cli_error(EXIT_OK, "%s: no VMs: %s lists none", cmd, c->hosts_file ? c->hosts_file : "lume ls");
		print_summary(NULL, 0, c->json, (double)(lm_now_ms() - l.start) / 1000);
		goto done;
	}
	if ((results = calloc(all, sizeof *results)) == NULL) {
		rc = cli_error(EXIT_SOMEFAIL, "out of memory");
		goto done;
	}
	if (tty && (l.last = calloc(all, sizeof *l.last)) != NULL) {
		l.states = cJSON_CreateObject();
		l.total = all;
		for (size_t i = 0; i < p.nextra; i++)
			progress(&l, p.n + i, p.extra[i], i + 1, all);
		l.base = p.nextra;
		f.progress = progress;
		f.progress_ctx = &l;
	}
	stopped = p.n ? fleet_run(results, p.targets, p.n, fn, o, &f) : 0;
	if (p.nextra > 0)
		memcpy(results + p.n, p.extra, p.nextra * sizeof *results);
	p.nextra = 0;
	if (tty)
		printf("\r\033[K");
	for (size_t i = 0; !tty && i < all; i++) {
		if (c->json)
			cli_print_json(results[i]);
		else
			print_line(results[i]);
	}
	print_summary(results, all, c->json, (double)(lm_now_ms() - l.start) / 1000);
	rc = stopped ? EXIT_SOMEFAIL : deploy_exit_code(results, all); /* a stopped run is exit 1 */
	for (size_t i = 0; i < all; i++)
		cJSON_Delete(results[i]);
done:
	cJSON_Delete(l.states);
	for (size_t i = 0; l.last && i < p.n + p.nextra; i++)
		free(l.last[i]);
	free(l.last);
	relay_free(p.relay);
	for (size_t i = 0; i < p.n; i++)
		guest_target_free(p.targets[i]);
	for (size_t i = 0; i < p.nextra; i++)
		cJSON_Delete(p.extra[i]);
	free(p.targets);
	free(p.extra);
	free(results);
	return rc;
}

/* targets: the VMs a request names (names, --host, --hosts, --all), resolved to guest targets
 * in input order, and a result for each one that cannot be started (targets.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/escape.h"
#include "core/image.h"
#include "net/identity.h"
#include "net/lume.h"
#include "ops/hosts.h"
#include "ops/targets.h"

/* The VMs to run, in order, and results for what could not be started (a host that could not
 * be reached, a stopped VM on a host); each one's input position (--order input) in tpos and
 * xpos, counted by npos. */
/* Appends the next input position to *v (n entries); 0, or -1 out of memory. */
static int
add_pos(size_t **v, size_t n, size_t pos)
{
	size_t *w = reallocarray(*v, n + 1, sizeof *w);

	if (w == NULL)
		return -1;
	w[n] = pos;
	*v = w;
	return 0;
}

static int
add_target(ops_targets *p, guest_target *t)
{
	guest_target **v = reallocarray(p->targets, p->n + 1, sizeof *v);

	if (v == NULL || add_pos(&p->tpos, p->n, p->npos) != 0) {
		if (v)
			p->targets = v;
		guest_target_free(t);
		return -1;
	}
	v[p->n++] = t;
	p->targets = v;
	p->npos++;
	return 0;
}

static int
add_extra(ops_targets *p, const char *vm, const char *host, const char *state, const char *msg)
{
	cJSON **v = reallocarray(p->extra, p->nextra + 1, sizeof *v), *r;

	if (v == NULL)
		return -1;
	p->extra = v;
	if (add_pos(&p->xpos, p->nextra, p->npos) != 0)
		return -1;
	p->npos++;
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
relayed(ops_targets *p, const ops_request *c, const char *label, size_t idx, const lume_vm *vm,
    const identity_host *id)
{
	guest_target *t = calloc(1, sizeof *t);
	char name[600], digest[IMAGE_DIGEST_LEN + 1], why[LM_ERRLEN];

	if (t == NULL)
		return -1;
	snprintf(name, sizeof name, "%s/%s", label, vm->name);
	t->name = strdup(name);
	t->lume = strdup(vm->name);
	t->user = strdup(c->ssh.user ? c->ssh.user : GUEST_DEFAULT_USER);
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
from_hosts(ops_targets *p, const ops_request *c, int nvms, char **vms, int *found, char *err)
{
	guest_target **hv;
	hosts_conn *hc;
	size_t hn;
	char msg[LM_ERRLEN + 300];
	int rc;

	if ((rc = hosts_load(&hv, &hn, c->hosts_file, c->ssh.user, err)) != LM_OK)
		return rc;
	if ((hc = calloc(hn, sizeof *hc)) == NULL || relay_new(&p->relay, msg) != LM_OK) {
		rc = lm_err(err, LM_EFAIL, "cannot start the relay: %s", hc ? msg : "out of memory");
		free(hc);
		hosts_free(hv, hn);
		return rc;
	}
	hosts_connect(hc, hv, hn, &c->ssh, c->timeout_s, c->fleet.parallel);
	for (size_t i = 0; i < hn; i++) {
		size_t idx;

		if (hc[i].c == NULL) {
			snprintf(msg, sizeof msg, "host %s: %s", hv[i]->name, hc[i].err);
			add_extra(p, hv[i]->name, hv[i]->name, session_why_state(hc[i].why), msg);
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
					escape_text(&e, vm->name, strlen(vm->name), 0);
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
	return LM_OK;
}

/* Whether lume (a path, or a name looked up on $PATH) can be run. */
static int
lume_runnable(const char *lume)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (strchr(lume, '/') != NULL)
		return access(lume, X_OK) == 0;
	for (const char *d = path ? path : "/usr/bin:/bin"; d != NULL; d = strchr(d, ':') ? strchr(d, ':') + 1 : NULL) {
		size_t len = strchr(d, ':') ? (size_t)(strchr(d, ':') - d) : strlen(d);

		snprintf(buf, sizeof buf, "%.*s/%s", (int)len, len ? d : ".", lume);
		if (access(buf, X_OK) == 0)
			return 1;
	}
	return 0;
}

int
ops_targets_resolve(ops_targets *p, const ops_request *c, int nvms, char **vms, char *err)
{
	int rc;

	/* Lume VMs by name or --all need lume: without it every one would fail alike; say it once,
	 * with the same exit code either way (an input error: the setup, not a VM). */
	if (c->hosts_file == NULL && (nvms > 0 || c->all) && !lume_runnable(c->lume))
		return lm_err(err, LM_EINPUT, "cannot run %s: not found (install Lume, or pass --lume PATH, --host "
		    "user@addr or --hosts FILE)", c->lume);

	if (c->hosts_file != NULL) {
		int *found = calloc((size_t)nvms + 1, sizeof *found);

		rc = found ? from_hosts(p, c, nvms, vms, found, err) : lm_err(err, LM_EFAIL, "out of memory");
		free(found);
		if (rc != LM_OK)
			return rc;
		nvms = 0; /* they filtered the hosts' VMs */
	}
	for (int i = 0; i < nvms; i++) {
		guest_target *t;

		if (guest_target_lume(&t, vms[i], c->ssh.user, err) != LM_OK)
			return LM_EFAIL;
		if ((t->port = c->port, add_target(p, t)) != 0)
			return lm_err(err, LM_EFAIL, "out of memory");
	}
	for (size_t i = 0; i < c->nhosts; i++) {
		guest_target *t;

		if ((rc = guest_target_host(&t, c->hosts[i], c->ssh.user, err)) != LM_OK)
			return rc;
		if (add_target(p, t) != 0)
			return lm_err(err, LM_EFAIL, "out of memory");
	}
	if (c->all && c->hosts_file == NULL) {
		lume_vm **all;
		size_t n;

		if ((rc = lume_list(&all, &n, c->lume, err)) != LM_OK)
			return rc;
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
	return LM_OK;
}

void
ops_targets_free(ops_targets *p)
{
	free(p->tpos);
	free(p->xpos);
	relay_free(p->relay);
	for (size_t i = 0; i < p->n; i++)
		guest_target_free(p->targets[i]);
	for (size_t i = 0; i < p->nextra; i++)
		cJSON_Delete(p->extra[i]);
	free(p->targets);
	free(p->extra);
	memset(p, 0, sizeof *p);
}

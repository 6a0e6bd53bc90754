/* hosts: see hosts.h. */
#include "ops/hosts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ops/fleet.h"
#include "core/util.h"

#define HOSTS_MAX (4u << 20)

/* The hosts as loaded, each with where it came from (a line, or an index in "hosts"). */
typedef struct {
	guest_target **v;
	int *at;
	size_t n, cap;
} hostlist;

static int
add(hostlist *l, guest_target *t, int at, char *err)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		guest_target **nv = reallocarray(l->v, cap, sizeof *nv);
		int *na;

		if (nv != NULL)
			l->v = nv;
		if (nv == NULL || (na = reallocarray(l->at, cap, sizeof *na)) == NULL) {
			guest_target_free(t);
			return lm_err(err, LM_EFAIL, "out of memory");
		}
		l->at = na;
		l->cap = cap;
	}
	l->v[l->n] = t;
	l->at[l->n++] = at;
	return LM_OK;
}

/* The first host, in file order, whose label an earlier one has (lm_first_repeat). */
static size_t
first_repeat(const hostlist *l)
{
	const char **names = l->n ? calloc(l->n, sizeof *names) : NULL;
	size_t r;

	if (names == NULL)
		return l->n ? (size_t)-1 : 0;
	for (size_t i = 0; i < l->n; i++)
		names[i] = l->v[i]->name;
	r = lm_first_repeat(names, l->n);
	free(names);
	return r;
}

static int
load_text(hostlist *hl, char *text, const char *path, const char *user, char *err)
{
	char *save = NULL, msg[LM_ERRLEN];
	int line = 0, rc = LM_OK;

	for (char *l = text; rc == LM_OK && l != NULL; l = save) {
		char *end = strchr(l, '\n'), *s = l;
		guest_target *t;

		save = end ? end + 1 : NULL;
		if (end)
			*end = '\0';
		line++;
		s[strcspn(s, "#")] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		for (size_t k = strlen(s); k > 0 && strchr(" \t\r", s[k - 1]); k--)
			s[k - 1] = '\0';
		if (*s == '\0')
			continue;
		if (strpbrk(s, " \t") != NULL || guest_target_host(&t, s, user, msg) != LM_OK)
			return lm_err(err, LM_EINPUT, "%s: line %d: \"%s\" is not user@host[:port]", path, line, s);
		/* The label is the address; the user and port are how to reach it. */
		free(t->name);
		if ((t->name = strdup(t->host)) == NULL) {
			guest_target_free(t);
			return lm_err(err, LM_EFAIL, "out of memory");
		}
		rc = add(hl, t, line, err);
	}
	return rc;
}

static int
load_json(hostlist *l, const char *text, const char *path, const char *user, char *err)
{
	cJSON *doc = cJSON_Parse(text), *hosts = cJSON_GetObjectItemCaseSensitive(doc, "hosts"), *h;
	int rc = LM_OK, i = 0;

	if (!cJSON_IsArray(hosts)) {
		cJSON_Delete(doc);
		return lm_err(err, LM_EINPUT, "%s: not a JSON inventory: want {\"hosts\": [{\"address\": ...}]}", path);
	}
	cJSON_ArrayForEach(h, hosts) {
		const cJSON *addr = cJSON_GetObjectItemCaseSensitive(h, "address"),
			*u = cJSON_GetObjectItemCaseSensitive(h, "user"), *p = cJSON_GetObjectItemCaseSensitive(h, "port"),
			*name = cJSON_GetObjectItemCaseSensitive(h, "name");
		guest_target *t = calloc(1, sizeof *t);
		char where[32];

		snprintf(where, sizeof where, "hosts[%d]", i++);
		if (t == NULL) {
			rc = lm_err(err, LM_EFAIL, "out of memory");
			break;
		}
		if (!cJSON_IsString(addr) || *addr->valuestring == '\0' || (u && !cJSON_IsString(u)) ||
		    (name && !cJSON_IsString(name)) ||
		    (p && (!cJSON_IsNumber(p) || p->valuedouble < 1 || p->valuedouble > 65535 ||
			p->valuedouble != (int)p->valuedouble))) {
			free(t);
			rc = lm_err(err, LM_EINPUT, "%s: %s: wants \"address\" (string), and optional \"user\" (string), "
			    "\"port\" (1-65535) and \"name\" (string)", path, where);
			break;
		}
		t->host = strdup(addr->valuestring);
		t->user = strdup(u ? u->valuestring : user ? user : GUEST_DEFAULT_USER);
		t->name = strdup(name && *name->valuestring ? name->valuestring : addr->valuestring);
		t->port = p ? (int)p->valuedouble : 22;
		t->want_cfg = 1; /* the address may be a Host alias of the OpenSSH configuration */
		t->user_given = u != NULL || user != NULL;
		t->port_given = p != NULL;
		if (t->host == NULL || t->user == NULL || t->name == NULL) {
			guest_target_free(t);
			rc = lm_err(err, LM_EFAIL, "out of memory");
			break;
		}
		if ((rc = add(l, t, i - 1, err)) != LM_OK)
			break;
	}
	cJSON_Delete(doc);
	return rc;
}

int
hosts_load(guest_target ***out, size_t *n, const char *path, const char *user, char *err)
{
	hostlist l = {0};
	char *text = NULL, *s, msg[LM_ERRLEN] = "";
	size_t len, dup;
	int rc, json;

	*out = NULL;
	*n = 0;
	if ((rc = lm_read_file(&text, &len, path, HOSTS_MAX, err)) != LM_OK)
		return rc == LM_EFAIL ? LM_EINPUT : rc;
	for (s = text; *s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'; s++)
		;
	json = *s == '{';
	rc = json ? load_json(&l, text, path, user, msg) : load_text(&l, text, path, user, msg);
	free(text);
	/* A label given twice before any other error is the error (the hosts come in file order). */
	if ((dup = first_repeat(&l)) == (size_t)-1)
		rc = lm_err(msg, LM_EFAIL, "out of memory");
	else if (dup < l.n)
		rc = lm_err(msg, LM_EINPUT, json ? "%s: hosts[%d]: host %s is listed twice" :
		    "%s: line %d: host %s is listed twice", path, l.at[dup], l.v[dup]->name);
	else if (rc == LM_OK && l.n == 0)
		rc = lm_err(msg, LM_EINPUT, "%s: lists no hosts", path);
	free(l.at);
	if (rc != LM_OK) {
		hosts_free(l.v, l.n);
		return lm_err(err, rc, "%s", msg);
	}
	*out = l.v;
	*n = l.n;
	return LM_OK;
}

void
hosts_free(guest_target **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		guest_target_free(v[i]);
	free(v);
}

typedef struct {
	hosts_conn *out;
	guest_target **hosts;
	const ssh_opts *base;
	int timeout_s;
} connect_run;

static void
connect_one(void *arg, size_t i)
{
	connect_run *r = arg;
	hosts_conn *h = &r->out[i];
	ssh_opts o = *r->base;
	int rc;

	memset(h, 0, sizeof *h);
	o.deadline_ms = lm_now_ms() + (int64_t)r->timeout_s * 1000;
	/* Here, in the pool: one `ssh -G` per host, side by side. */
	if ((rc = guest_target_resolve(r->hosts[i], o.deadline_ms, h->err)) != LM_OK) {
		h->why = guest_resolve_why(rc, o.deadline_ms);
		return;
	}
	guest_target_opts(&o, r->hosts[i]);
	o.host = r->hosts[i]->host;
	o.port = r->hosts[i]->port;
	o.user = r->hosts[i]->user;
	if (ssh_connect(&h->c, &h->why, &o, h->err) != LM_OK)
		return;
	if (identity_host_read(&h->id, &h->vms, &h->nvms, h->c, h->err) != LM_OK) {
		ssh_close(h->c);
		h->c = NULL;
	}
}

void
hosts_connect(hosts_conn *out, guest_target **hosts, size_t n, const ssh_opts *base, int timeout_s, int parallel)
{
	connect_run r = {.out = out, .hosts = hosts, .base = base, .timeout_s = timeout_s};

	fleet_each(n, parallel, connect_one, &r);
}

void
hosts_conn_clear(hosts_conn *h)
{
	ssh_close(h->c);
	for (size_t i = 0; i < h->nvms; i++)
		lume_vm_free(h->vms[i]);
	free(h->vms);
	identity_host_clear(&h->id);
	memset(h, 0, sizeof *h);
}

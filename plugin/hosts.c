/* hosts: see hosts.h. */
#include "hosts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fleet.h"
#include "util.h"

#define HOSTS_MAX (4u << 20)

static int
add(guest_target ***v, size_t *n, guest_target *t, const char *path, const char *where, char *err)
{
	guest_target **nv;

	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i]->name, t->name) == 0) {
			guest_target_free(t);
			return lm_err(err, LM_EINPUT, "%s: %s: host %s is listed twice", path, where, (*v)[i]->name);
		}
	if ((nv = reallocarray(*v, *n + 1, sizeof *nv)) == NULL) {
		guest_target_free(t);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	nv[(*n)++] = t;
	*v = nv;
	return LM_OK;
}

static int
load_text(guest_target ***v, size_t *n, char *text, const char *path, const char *user, char *err)
{
	char *save = NULL, where[32], msg[LM_ERRLEN];
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
		snprintf(where, sizeof where, "line %d", line);
		if (strpbrk(s, " \t") != NULL || guest_target_host(&t, s, user, msg) != LM_OK)
			return lm_err(err, LM_EINPUT, "%s: %s: \"%s\" is not user@host[:port]", path, where, s);
		/* The label is the address; the user and port are how to reach it. */
		free(t->name);
		if ((t->name = strdup(t->host)) == NULL) {
			guest_target_free(t);
			return lm_err(err, LM_EFAIL, "out of memory");
		}
		rc = add(v, n, t, path, where, err);
	}
	return rc;
}

static int
load_json(guest_target ***v, size_t *n, const char *text, const char *path, const char *user, char *err)
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
		t->user = strdup(u ? u->valuestring : user);
		t->name = strdup(name && *name->valuestring ? name->valuestring : addr->valuestring);
		t->port = p ? (int)p->valuedouble : 22;
		if (t->host == NULL || t->user == NULL || t->name == NULL) {
			guest_target_free(t);
			rc = lm_err(err, LM_EFAIL, "out of memory");
			break;
		}
		if ((rc = add(v, n, t, path, where, err)) != LM_OK)
			break;
	}
	cJSON_Delete(doc);
	return rc;
}

int
hosts_load(guest_target ***out, size_t *n, const char *path, const char *user, char *err)
{
	char *text = NULL, *s;
	size_t len;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = lm_read_file(&text, &len, path, HOSTS_MAX, err)) != LM_OK)
		return rc == LM_EFAIL ? LM_EINPUT : rc;
	for (s = text; *s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'; s++)
		;
	rc = *s == '{' ? load_json(out, n, text, path, user, err) : load_text(out, n, text, path, user, err);
	free(text);
	if (rc == LM_OK && *n == 0)
		rc = lm_err(err, LM_EINPUT, "%s: lists no hosts", path);
	if (rc != LM_OK) {
		hosts_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
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

	memset(h, 0, sizeof *h);
	o.host = r->hosts[i]->host;
	o.port = r->hosts[i]->port;
	o.user = r->hosts[i]->user;
	o.deadline_ms = lm_now_ms() + (int64_t)r->timeout_s * 1000;
	if (ssh_connect(&h->c, &h->why, &o, h->err) != LM_OK)
		return;
	if (lume_list_remote(&h->vms, &h->nvms, h->c, h->err) != LM_OK) {
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
	memset(h, 0, sizeof *h);
}

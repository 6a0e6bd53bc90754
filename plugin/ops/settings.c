/* settings: each setting in force and where it came from (settings.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/settings.h"

/* s's source: "flag" when a flag gave it (the request's given bits, by config_keys index), the
 * file's line when it sets it, else def. */
static void
source_of(ops_setting *s, const ops_request *c, const char *def)
{
	unsigned bit = 0;
	int line = 0;

	for (unsigned k = 0; config_keys[k]; k++)
		if (strcmp(config_keys[k], s->key) == 0)
			bit = 1u << k;
	if (c->given & bit)
		snprintf(s->source, sizeof s->source, "flag");
	else if (config_get(c->cfg, s->key, &line) != NULL)
		snprintf(s->source, sizeof s->source, "config:%s:%d", config_path(c->cfg), line);
	else
		snprintf(s->source, sizeof s->source, "%s", def);
}

/* A setting whose flag the request does not track (golden's registry and organization; deploy's
 * confirm-timeout and confirm-settle, never given here): flag (given here), else the file's,
 * else builtin. */
static void
golden_setting(ops_setting *s, const ops_request *c, const char *key, const char *flag, const char *builtin)
{
	const char *file = config_get(c->cfg, key, NULL);

	*s = (ops_setting){key, flag ? flag : file ? file : builtin, ""};
	source_of(s, c, "default");
	if (flag != NULL)
		snprintf(s->source, sizeof s->source, "flag");
}

int
ops_settings_read(ops_settings *s, const ops_request *c, const char *registry, const char *organization, char *err)
{
	const char *home = getenv("HOME");
	ops_setting *v = s->v;
	guest_target *t = NULL;
	char *known = s->known, *ids = s->ids, *parallel = s->parallel, *user0 = NULL;
	int rc, n = 0;

	memset(s, 0, sizeof *s);
	s->file = config_path(c->cfg);
	s->file_exists = config_exists(c->cfg);
	/* With --host ALIAS: what ssh -G says of it, where the flags and the file say nothing. */
	if (c->nhosts == 1) {
		s->host_spec = c->hosts[0];
		if ((rc = guest_target_host(&t, c->hosts[0], c->ssh.user, err)) == LM_OK && (user0 = strdup(t->user)) == NULL)
			rc = lm_err(err, LM_EFAIL, "out of memory");
		if (rc == LM_OK)
			rc = guest_target_resolve(t, lm_now_ms() + 10000, err);
		s->host = t, s->user0 = user0;
		if (rc != LM_OK)
			return rc;
	}
	snprintf(known, sizeof s->known, "%s/.ssh/known_hosts", home ? home : ".");
	snprintf(parallel, sizeof s->parallel, "%d", c->fleet.parallel);
	for (size_t k = 0; t && t->cfg && k < t->cfg->nids; k++)
		snprintf(ids + strlen(ids), sizeof s->ids - strlen(ids), "%s%s", k ? ", " : "", t->cfg->ids[k]);

	v[n] = (ops_setting){"user", c->ssh.user ? c->ssh.user : t ? t->user : GUEST_DEFAULT_USER, ""};
	source_of(&v[n], c, t && strcmp(t->user, user0) != 0 ? "ssh-config" : "default");
	if (t && strchr(c->hosts[0], '@') != NULL)
		snprintf(v[n].source, sizeof v[n].source, "flag");
	n++;
	v[n] = (ops_setting){"identity", c->ssh.identity ? c->ssh.identity : *ids ? ids : NULL, ""};
	source_of(&v[n++], c, *ids ? "ssh-config" : "default");
	v[n] = (ops_setting){"password-file", c->ssh.password_file, ""};
	source_of(&v[n++], c, "default");
	v[n] = (ops_setting){"known-hosts", c->ssh.known_hosts ? c->ssh.known_hosts :
	    t && t->cfg && t->cfg->known_hosts ? t->cfg->known_hosts : known, ""};
	source_of(&v[n++], c, t && t->cfg && t->cfg->known_hosts ? "ssh-config" : "default");
	v[n] = (ops_setting){"state", c->state, ""};
	source_of(&v[n++], c, "default");
	v[n] = (ops_setting){"parallel", parallel, ""};
	source_of(&v[n++], c, "default");
	v[n] = (ops_setting){"lume", c->lume, ""};
	source_of(&v[n++], c, "default");
	golden_setting(&v[n++], c, "registry", registry, "ghcr.io");
	golden_setting(&v[n++], c, "organization", organization, "trycua");
	v[n] = (ops_setting){"verdicts", ops_request_setting(c, "verdicts") ? ops_request_setting(c, "verdicts") : "local", ""};
	source_of(&v[n++], c, "default");
	v[n] = (ops_setting){"signing-key", ops_request_setting(c, "signing-key"), ""};
	source_of(&v[n++], c, "default");
	v[n] = (ops_setting){"trusted-key", ops_request_setting(c, "trusted-key"), ""};
	source_of(&v[n++], c, "default");
	v[n] = (ops_setting){"verdict-registries", ops_request_setting(c, "verdict-registries"), ""};
	source_of(&v[n++], c, "default");
	v[n] = (ops_setting){"registry-auth", ops_request_setting(c, "registry-auth"), ""};
	source_of(&v[n++], c, "default");
	/* install.sh's own defaults (a guest whose environment sets LUME_METAL_CONFIRM_* uses that) */
	golden_setting(&v[n++], c, "confirm-timeout", NULL, "60");
	golden_setting(&v[n++], c, "confirm-settle", NULL, "5");
	/* None: every record is kept until `ledger prune` (which then keeps its default, 20). */
	v[n] = (ops_setting){"ledger-keep", ops_request_setting(c, "ledger-keep"), ""};
	source_of(&v[n++], c, "default");

	s->n = n;
	return LM_OK;
}

void
ops_settings_free(ops_settings *s)
{
	free(s->user0);
	guest_target_free(s->host);
	s->user0 = NULL;
	s->host = NULL;
}

/* lume-metal config: each setting in force and where it came from: a flag, the config file
 * (config:FILE:LINE), the OpenSSH configuration (ssh-config, with --host ALIAS), or the
 * built-in default. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "core/config.h"
#include "net/guest.h"

typedef struct {
	const char *key, *value; /* value NULL: none (shown as "-", null in JSON) */
	char source[4200];
} setting;

/* s's source: "flag" when a flag gave it (cli_conn's given bits, by config_keys index), the
 * file's line when it sets it, else def. */
static void
source_of(setting *s, const cli_conn *c, const char *def)
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

/* A setting whose flag cli_conn does not track (golden's registry and organization; deploy's
 * confirm-timeout and confirm-settle, never given here): flag (given here), else the file's,
 * else builtin. */
static void
golden_setting(setting *s, const cli_conn *c, const char *key, const char *flag, const char *builtin)
{
	const char *file = config_get(c->cfg, key, NULL);

	*s = (setting){key, flag ? flag : file ? file : builtin, ""};
	source_of(s, c, "default");
	if (flag != NULL)
		snprintf(s->source, sizeof s->source, "flag");
}

int
cmd_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{"user", required_argument, NULL, 'u'}, {"identity", required_argument, NULL, 'i'},
		{"password-file", required_argument, NULL, 1001}, {"known-hosts", required_argument, NULL, 1002},
		{"host", required_argument, NULL, 1004}, {"parallel", required_argument, NULL, 1006},
		{"state", required_argument, NULL, 1007}, {"json", no_argument, NULL, 1008},
		{"lume", required_argument, NULL, 1009}, {"format", required_argument, NULL, 1015},
		{"registry", required_argument, NULL, 'r'}, {"organization", required_argument, NULL, 'o'},
		{NULL, 0, NULL, 0},
	};
	const char *registry = NULL, *organization = NULL, *home = getenv("HOME");
	setting v[20];
	guest_target *t = NULL;
	char err[LM_ERRLEN], known[4096], ids[4096] = "", parallel[16], *user0 = NULL;
	int c, rc, n = 0;
	cli_conn conn;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "config", CLI_CONN_SHORT, opts)) != -1) {
		if ((rc = cli_conn_flag(&conn, c, optarg, "config")) != 0) {
			if (rc < 0)
				goto usage;
			continue;
		}
		if (c == 'r')
			registry = optarg;
		else if (c == 'o')
			organization = optarg;
		else
			goto usage;
	}
	if (optind < argc || conn.nhosts > 1) {
		cli_error(EXIT_USAGE, "config: takes no arguments and at most one --host; see 'lume-metal help config'");
		goto usage;
	}
	if ((rc = cli_conn_ready(&conn, "config")) != EXIT_OK)
		goto done;
	/* With --host ALIAS: what ssh -G says of it, where the flags and the file say nothing. */
	if (conn.nhosts == 1) {
		if ((rc = guest_target_host(&t, conn.hosts[0], conn.ssh.user, err)) == LM_OK && (user0 = strdup(t->user)) == NULL)
			rc = lm_err(err, LM_EFAIL, "out of memory");
		if (rc == LM_OK)
			rc = guest_target_resolve(t, lm_now_ms() + 10000, err);
		if (rc != LM_OK) {
			rc = cli_fail(rc, err);
			goto done;
		}
	}
	snprintf(known, sizeof known, "%s/.ssh/known_hosts", home ? home : ".");
	snprintf(parallel, sizeof parallel, "%d", conn.fleet.parallel);
	for (size_t k = 0; t && t->cfg && k < t->cfg->nids; k++)
		snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%s", k ? ", " : "", t->cfg->ids[k]);

	v[n] = (setting){"user", conn.ssh.user ? conn.ssh.user : t ? t->user : GUEST_DEFAULT_USER, ""};
	source_of(&v[n], &conn, t && strcmp(t->user, user0) != 0 ? "ssh-config" : "default");
	if (t && strchr(conn.hosts[0], '@') != NULL)
		snprintf(v[n].source, sizeof v[n].source, "flag");
	n++;
	v[n] = (setting){"identity", conn.ssh.identity ? conn.ssh.identity : *ids ? ids : NULL, ""};
	source_of(&v[n++], &conn, *ids ? "ssh-config" : "default");
	v[n] = (setting){"password-file", conn.ssh.password_file, ""};
	source_of(&v[n++], &conn, "default");
	v[n] = (setting){"known-hosts", conn.ssh.known_hosts ? conn.ssh.known_hosts :
	    t && t->cfg && t->cfg->known_hosts ? t->cfg->known_hosts : known, ""};
	source_of(&v[n++], &conn, t && t->cfg && t->cfg->known_hosts ? "ssh-config" : "default");
	v[n] = (setting){"state", conn.state, ""};
	source_of(&v[n++], &conn, "default");
	v[n] = (setting){"parallel", parallel, ""};
	source_of(&v[n++], &conn, "default");
	v[n] = (setting){"lume", conn.lume, ""};
	source_of(&v[n++], &conn, "default");
	golden_setting(&v[n++], &conn, "registry", registry, "ghcr.io");
	golden_setting(&v[n++], &conn, "organization", organization, "trycua");
	v[n] = (setting){"verdicts", cli_conn_setting(&conn, "verdicts") ? cli_conn_setting(&conn, "verdicts") : "local", ""};
	source_of(&v[n++], &conn, "default");
	v[n] = (setting){"signing-key", cli_conn_setting(&conn, "signing-key"), ""};
	source_of(&v[n++], &conn, "default");
	v[n] = (setting){"trusted-key", cli_conn_setting(&conn, "trusted-key"), ""};
	source_of(&v[n++], &conn, "default");
	v[n] = (setting){"verdict-registries", cli_conn_setting(&conn, "verdict-registries"), ""};
	source_of(&v[n++], &conn, "default");
	v[n] = (setting){"registry-auth", cli_conn_setting(&conn, "registry-auth"), ""};
	source_of(&v[n++], &conn, "default");
	/* install.sh's own defaults (a guest whose environment sets LUME_METAL_CONFIRM_* uses that) */
	golden_setting(&v[n++], &conn, "confirm-timeout", NULL, "60");
	golden_setting(&v[n++], &conn, "confirm-settle", NULL, "5");
	/* None: every record is kept until `ledger prune` (which then keeps its default, 20). */
	v[n] = (setting){"ledger-keep", cli_conn_setting(&conn, "ledger-keep"), ""};
	source_of(&v[n++], &conn, "default");

	if (conn.json) {
		cJSON *o = cJSON_CreateObject(), *s = cJSON_AddObjectToObject(o, "settings");

		cJSON_AddStringToObject(o, "file", config_path(conn.cfg) ? config_path(conn.cfg) : "");
		cJSON_AddBoolToObject(o, "fileExists", config_exists(conn.cfg));
		if (t != NULL) {
			cJSON *h = cJSON_AddObjectToObject(o, "host");

			cJSON_AddStringToObject(h, "spec", conn.hosts[0]);
			cJSON_AddStringToObject(h, "hostname", t->host);
			cJSON_AddNumberToObject(h, "port", t->port);
			if (t->jump)
				cJSON_AddStringToObject(h, "proxyJump", t->jump);
		}
		for (int i = 0; i < n; i++) {
			cJSON *e = cJSON_AddObjectToObject(s, v[i].key);

			if (v[i].value)
				cJSON_AddStringToObject(e, "value", v[i].value);
			else
				cJSON_AddNullToObject(e, "value");
			cJSON_AddStringToObject(e, "source", v[i].source);
		}
		cli_print_json(o);
		cJSON_Delete(o);
	} else {
		cli_printf("# config file: %s (%s)\n", config_path(conn.cfg) ? config_path(conn.cfg) : "none: no HOME",
		    config_exists(conn.cfg) ? "read" : "not there");
		if (t != NULL)
			cli_printf("# --host %s: %s port %d%s%s\n", conn.hosts[0], t->host, t->port,
			    t->jump ? ", ProxyJump " : "", t->jump ? t->jump : "");
		for (int i = 0; i < n; i++)
			cli_printf("%-15s %-40s %s\n", v[i].key, v[i].value ? v[i].value : "-", v[i].source);
	}
	rc = EXIT_OK;
	goto done;
usage:
	rc = EXIT_USAGE;
done:
	free(user0);
	guest_target_free(t);
	cli_conn_free(&conn);
	return rc;
}

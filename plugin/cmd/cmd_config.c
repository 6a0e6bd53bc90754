/* lume-metal config: each setting in force and where it came from: a flag, the config file
 * (config:FILE:LINE), the OpenSSH configuration (ssh-config, with --host ALIAS), or the
 * built-in default. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "ops/settings.h"

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
	const char *registry = NULL, *organization = NULL;
	ops_settings set = {0};
	const ops_setting *v = set.v;
	const guest_target *t;
	char err[LM_ERRLEN];
	int c, rc;
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
	if (optind < argc || conn.r.nhosts > 1) {
		cli_error(EXIT_USAGE, "config: takes no arguments and at most one --host; see 'lume-metal help config'");
		goto usage;
	}
	if ((rc = cli_conn_ready(&conn, "config")) != EXIT_OK)
		goto done;
	if ((rc = ops_settings_read(&set, &conn.r, registry, organization, err)) != LM_OK) {
		rc = cli_fail(rc, err);
		goto done;
	}
	t = set.host;
	if (conn.json) {
		cJSON *o = cJSON_CreateObject(), *s = cJSON_AddObjectToObject(o, "settings");

		cJSON_AddStringToObject(o, "file", set.file ? set.file : "");
		cJSON_AddBoolToObject(o, "fileExists", set.file_exists);
		if (t != NULL) {
			cJSON *h = cJSON_AddObjectToObject(o, "host");

			cJSON_AddStringToObject(h, "spec", conn.r.hosts[0]);
			cJSON_AddStringToObject(h, "hostname", t->host);
			cJSON_AddNumberToObject(h, "port", t->port);
			if (t->jump)
				cJSON_AddStringToObject(h, "proxyJump", t->jump);
		}
		for (int i = 0; i < set.n; i++) {
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
		cli_printf("# config file: %s (%s)\n", set.file ? set.file : "none: no HOME",
		    set.file_exists ? "read" : "not there");
		if (t != NULL)
			cli_printf("# --host %s: %s port %d%s%s\n", conn.r.hosts[0], t->host, t->port,
			    t->jump ? ", ProxyJump " : "", t->jump ? t->jump : "");
		for (int i = 0; i < set.n; i++)
			cli_printf("%-15s %-40s %s\n", v[i].key, v[i].value ? v[i].value : "-", v[i].source);
	}
	rc = EXIT_OK;
	goto done;
usage:
	rc = EXIT_USAGE;
done:
	ops_settings_free(&set);
	cli_conn_free(&conn);
	return rc;
}

/* lume-metal config: each setting in force and where it came from: a flag, the config file
 * (config:FILE:LINE), the OpenSSH configuration (ssh-config, with --host ALIAS), or the
 * built-in default. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "ops/settings.h"

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	{"user", required_argument, NULL, 'u'}, {"identity", required_argument, NULL, 'i'},
	{"password-file", required_argument, NULL, CLI_OPT_PASSWORD_FILE}, {"known-hosts", required_argument, NULL, CLI_OPT_KNOWN_HOSTS},
	{"host", required_argument, NULL, CLI_OPT_HOST}, {"parallel", required_argument, NULL, CLI_OPT_PARALLEL},
	{"state", required_argument, NULL, CLI_OPT_STATE}, {"json", no_argument, NULL, CLI_OPT_JSON},
	{"lume", required_argument, NULL, CLI_OPT_LUME}, {"format", required_argument, NULL, CLI_OPT_FORMAT},
	{"registry", required_argument, NULL, 'r'}, {"organization", required_argument, NULL, 'o'},
	{NULL, 0, NULL, 0},
};

static int
cmd_config(int argc, char **argv)
{
	const char *registry = NULL, *organization = NULL;
	ops_settings set = {0};
	const ops_setting *v = set.v;
	const guest_target *t;
	char err[LM_ERRLEN];
	int c, rc;
	cli_conn conn;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "config", CLI_CONN_SHORT, options)) != -1) {
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

const cli_command cli_cmd_config = {
	.name = "config", .fn = cmd_config, .options = options,
	.summary = "the settings in force and where each one comes from",
	.usage =
	    "config [--host ALIAS] [--format json|text] [SETTING FLAGS]\n\n"
	    "Prints each setting the config file may hold, its value in force and its source: flag,\n"
	    "config:FILE:LINE, ssh-config (the OpenSSH configuration, with --host) or default. The order,\n"
	    "first wins: the flags, the config file, `ssh -G` for a --host or --hosts address (User,\n"
	    "IdentityFile, UserKnownHostsFile), the built-in defaults.\n\n"
	    "The config file is $XDG_CONFIG_HOME/lume-metal/config (default ~/.config/lume-metal/config):\n"
	    "one KEY=VALUE a line, blank lines and # comments allowed, ~/ in a path is $HOME/. Its keys:\n"
	    "user, identity, password-file, known-hosts, state, parallel (1-1024), lume, registry and\n"
	    "organization (golden's), verdicts (local or registry: deploy's and status's --verdicts),\n"
	    "signing-key (the private key golden and ledger push sign verdicts with), trusted-key\n"
	    "(public key files, comma-separated: whose verdicts a gate uses; every key of a file, at most\n"
	    "32, nothing else in it, and no file or folder up to $HOME others may write; docs/verdicts.md),\n"
	    "confirm-timeout (1-3600) and confirm-settle (0-600; deploy's), ledger-keep (1-1000000:\n"
	    "each record a run appends keeps what `ledger prune --keep N` would, for its VM; unset: all).\n"
	    "A bad line (an unknown key, no =, a bad number, a key twice) stops\n"
	    "every command that reads it with exit 2, naming FILE:LINE, before anything runs. An identity\n"
	    "or password file it names must be one only you can read, as on the command line.\n\n"
	    "  --host ALIAS          also show what the OpenSSH configuration says of ALIAS\n"
	    "  --json                one object: {\"file\", \"fileExists\", \"settings\": {KEY: {\"value\",\n"
	    "                        \"source\"}}}, and \"host\" with --host\n"
	    "  --format json|text    the same as --json, or text (the default)\n"
	    "\nSetting flags (shown with source flag; each as the other commands take it):\n"
	    "  -u, --user USER       the guest user\n"
	    "  -i, --identity FILE   the private key\n"
	    "  --password-file F     the password file\n"
	    "  --known-hosts FILE    the host keys\n"
	    "  --state DIR           ledger and caches\n"
	    "  --parallel N          VMs at once\n"
	    "  --lume PATH           the lume binary\n"
	    "  --registry R          golden's registry\n"
	    "  --organization O      golden's organization\n",
	.examples = "  lume-metal config\n"
	    "  lume-metal config --host tahoe-1 --format json\n",
};

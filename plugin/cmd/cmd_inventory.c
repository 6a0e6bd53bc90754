/* lume-metal inventory: the --hosts file as an Ansible dynamic inventory (the JSON an
 * inventory script prints for --list and --host NAME). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "ops/hosts.h"

/* ansible_host, ansible_user and ansible_port of t. */
static cJSON *
host_vars(const guest_target *t)
{
	cJSON *v = cJSON_CreateObject();

	cJSON_AddStringToObject(v, "ansible_host", t->host);
	cJSON_AddStringToObject(v, "ansible_user", t->user);
	cJSON_AddNumberToObject(v, "ansible_port", t->port);
	return v;
}

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	{"hosts", required_argument, NULL, 'f'}, {"list", no_argument, NULL, 'l'},
	{"host", required_argument, NULL, 'n'}, {"user", required_argument, NULL, 'u'},
	{"json", no_argument, NULL, 'j'}, {"format", required_argument, NULL, 'F'}, {NULL, 0, NULL, 0},
};

static int
cmd_inventory(int argc, char **argv)
{
	const char *file = NULL, *name = NULL, *user;
	char err[LM_ERRLEN];
	cli_conn conn; /* -u and the config file's user= */
	guest_target **hosts = NULL;
	size_t n = 0;
	cJSON *out = NULL;
	int c, list = 0, rc, json = 1;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "inventory", "u:", options)) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 'l': list = 1; break;
		case 'n': name = optarg; break;
		case 'u': cli_conn_flag(&conn, 'u', optarg, "inventory"); break;
		case 'j': break; /* its only output is JSON: --json is accepted, as every command does */
		case 'F':
			if (cli_format(optarg, "inventory", &json) < 0)
				return EXIT_USAGE;
			if (!json)
				return cli_error(EXIT_USAGE, "inventory: prints JSON only (an Ansible inventory); "
				    "--format text is not offered");
			break;
		default: return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_error(EXIT_USAGE, "inventory: unexpected argument '%s'; see 'lume-metal help inventory'",
		    argv[optind]);
	if (file == NULL)
		return cli_error(EXIT_USAGE, "inventory: --hosts FILE is required");
	if (list && name != NULL)
		return cli_error(EXIT_USAGE, "inventory: takes --list or --host NAME, not both");
	if ((rc = cli_conn_ready(&conn, "inventory")) != EXIT_OK)
		return rc;
	/* Ansible needs a user for each host: -u, else user= of the config file, else lume. */
	user = ops_user(&conn.r);
	if ((rc = hosts_load(&hosts, &n, file, user, err)) != LM_OK)
		return cli_fail(rc, err);
	if (name != NULL) {
		for (size_t i = 0; i < n && out == NULL; i++)
			if (strcmp(hosts[i]->name, name) == 0)
				out = host_vars(hosts[i]);
		if (out == NULL) {
			hosts_free(hosts, n);
			return cli_error(EXIT_USAGE, "inventory: %s lists no host named \"%s\"", file, name);
		}
	} else {
		cJSON *group = cJSON_CreateObject(), *labels = cJSON_AddArrayToObject(group, "hosts"),
		      *meta = cJSON_CreateObject(), *hostvars = cJSON_AddObjectToObject(meta, "hostvars");

		out = cJSON_CreateObject();
		for (size_t i = 0; i < n; i++) {
			cJSON_AddItemToArray(labels, cJSON_CreateString(hosts[i]->name));
			cJSON_AddItemToObject(hostvars, hosts[i]->name, host_vars(hosts[i]));
		}
		cJSON_AddItemToObject(out, "mac_hosts", group);
		cJSON_AddItemToObject(out, "_meta", meta);
	}
	cli_print_json(out);
	cJSON_Delete(out);
	hosts_free(hosts, n);
	return EXIT_OK;
}

const cli_command cli_cmd_inventory = {
	.name = "inventory", .fn = cmd_inventory, .options = options,
	.summary = "the --hosts file as an Ansible dynamic inventory",
	.usage =
	    "inventory --hosts FILE [--list | --host NAME] [-u USER]\n\n"
	    "Prints the Mac hosts of FILE (user@host[:port] lines or a JSON inventory, as deploy --hosts\n"
	    "reads it) as the JSON Ansible wants from an inventory script. --list (the default): the group\n"
	    "mac_hosts and, under _meta.hostvars, each host's ansible_host, ansible_user and ansible_port.\n"
	    "--host NAME: that host's variables; a name FILE does not list is exit 2.\n"
	    "scripts/ansible/inventory runs it for `ansible -i`.\n\n"
	    "  --hosts FILE      the hosts file; a bad line is exit 2, naming the file and line\n"
	    "  -u, --user USER   the user of hosts that name none (default: user= of the config file,\n"
	    "                    else lume)\n"
	    "  --json            accepted, as every command takes it: the output is JSON already\n"
	    "  --format json     the same\n",
	.examples = "  lume-metal inventory --hosts macs.txt --list\n"
	    "  ansible -i scripts/ansible/inventory mac_hosts -m ping\n",
};

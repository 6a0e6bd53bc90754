/* lume-metal host: the paravirtual-graphics preference on this Mac. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "host.h"
#include "lume.h"

static const char *
word(int v)
{
	return v < 0 ? "not set" : v ? "true" : "false";
}

/* Running VMs keep the graphics device they started with. */
static void
running_vms(const char *lume, cJSON *out)
{
	char err[LM_ERRLEN];
	lume_vm **all;
	size_t n;

	if (lume_list(&all, &n, lume, err) != LM_OK) {
		cJSON_AddStringToObject(out, "lumeError", err);
		return;
	}
	cJSON *arr = cJSON_AddArrayToObject(out, "restartNeeded");
	for (size_t i = 0; i < n; i++) {
		if (strcmp(all[i]->status, "running") == 0)
			cJSON_AddItemToArray(arr, cJSON_CreateString(all[i]->name));
		lume_vm_free(all[i]);
	}
	free(all);
}

int
cmd_host(int argc, char **argv)
{
	static const struct option opts[] = {
		{"state", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
		{"lume", required_argument, NULL, 'l'}, {NULL, 0, NULL, 0},
	};
	const char *verb = "status";
	char err[LM_ERRLEN];
	cli_conn conn;
	cJSON *out = cJSON_CreateObject(), *vms;
	int c, rc, v = -1, before = -1;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "host", "", opts)) != -1) {
		switch (c) {
		case 's': conn.state = optarg; break;
		case 'j': conn.json = 1; break;
		case 'l': conn.lume = optarg; break;
		default: cJSON_Delete(out); return EXIT_USAGE;
		}
	}
	if (argc - optind > 1 || (argc - optind == 1 && strcmp(verb = argv[optind], "status") != 0 &&
	    strcmp(verb, "enable") != 0 && strcmp(verb, "disable") != 0)) {
		cJSON_Delete(out);
		return cli_error(EXIT_USAGE, "host: takes status, enable or disable; see 'lume-metal help host'");
	}
	if (strcmp(verb, "enable") == 0)
		rc = host_pref_enable(conn.state, &before, err);
	else if (strcmp(verb, "disable") == 0)
		rc = host_pref_disable(conn.state, &before, err);
	else
		rc = LM_OK;
	if (rc == LM_OK)
		rc = host_pref_read(&v, err);
	if (rc != LM_OK) {
		cJSON_Delete(out);
		return cli_fail(rc, err);
	}
	cJSON_AddStringToObject(out, "domain", HOST_DOMAIN);
	cJSON_AddStringToObject(out, "key", HOST_KEY);
	cJSON_AddStringToObject(out, "value", word(v));
	if (strcmp(verb, "status") != 0) {
		cJSON_AddStringToObject(out, strcmp(verb, "enable") == 0 ? "before" : "restored", word(before));
		running_vms(conn.lume, out);
	}
	if (conn.json) {
		cli_print_json(out);
	} else {
		printf("%s %s: %s\n", HOST_DOMAIN, HOST_KEY, word(v));
		if ((vms = cJSON_GetObjectItemCaseSensitive(out, "restartNeeded")) && cJSON_GetArraySize(vms) > 0) {
			cJSON *it;

			printf("restart these running VMs to see the change (lume stop, then lume run):");
			cJSON_ArrayForEach(it, vms)
				printf(" %s", it->valuestring);
			printf("\n");
		} else if (strcmp(verb, "status") != 0)
			printf("no running VM needs a restart%s\n",
			    cJSON_GetObjectItemCaseSensitive(out, "lumeError") ? " (lume could not be asked)" : "");
		if (strcmp(verb, "status") == 0 && v != 1)
			printf("lume-metal host enable sets it (the shim's published evidence ran with it set)\n");
	}
	cJSON_Delete(out);
	return EXIT_OK;
}

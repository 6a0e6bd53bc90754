/* lume-metal host: the paravirtual-graphics preference on this Mac, or on each Mac host of a
 * --hosts FILE with the VM slots in use there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "ops/hostpref.h"
#include "ops/hosts.h"

static const char *
word(int v)
{
	return v < 0 ? "not set" : v ? "true" : "false";
}

/* host status --hosts: one Mac host's answer, filled in by the pool. */
typedef struct {
	guest_target **hosts;
	hosts_conn *hc;
	cJSON **out;
} remote_run;

static void
remote_one(void *ctx, size_t i)
{
	remote_run *r = ctx;
	hosts_conn *h = &r->hc[i];
	cJSON *o = cJSON_CreateObject(), *running;

	cJSON_AddStringToObject(o, "host", r->hosts[i]->name);
	cJSON_AddStringToObject(o, "address", r->hosts[i]->host);
	r->out[i] = o;
	if (h->c == NULL) {
		cJSON_AddStringToObject(o, "state", h->why ? session_why_state(h->why) : "failed");
		cJSON_AddStringToObject(o, "message", h->err);
		return;
	}
	/* The preference as the host's identity exec read it (hosts_connect): no second exec. */
	if (h->id.mac.pref == -2) {
		cJSON_AddStringToObject(o, "state", "failed");
		cJSON_AddStringToObject(o, "message", *h->id.pref_why ? h->id.pref_why : "the preference was not read");
		return;
	}
	cJSON_AddStringToObject(o, "state", "ok");
	cJSON_AddStringToObject(o, "value", word(h->id.mac.pref));
	running = cJSON_CreateArray();
	for (size_t j = 0; j < h->nvms; j++)
		if (strcmp(h->vms[j]->status, "running") == 0)
			cJSON_AddItemToArray(running, cJSON_CreateString(h->vms[j]->name));
	cJSON_AddNumberToObject(o, "slotsUsed", cJSON_GetArraySize(running));
	cJSON_AddNumberToObject(o, "slots", HOST_VM_SLOTS);
	cJSON_AddItemToObject(o, "running", running);
	cJSON_AddNumberToObject(o, "vms", (double)h->nvms);
}

/* host status --hosts FILE: every host at once on the fleet pool; exit 1 if one gave no answer. */
static int
remote_status(const cli_conn *conn)
{
	guest_target **hv;
	hosts_conn *hc;
	cJSON **out;
	size_t n;
	char err[LM_ERRLEN];
	int rc, failed = 0, enabled = 0;

	if ((rc = hosts_load(&hv, &n, conn->r.hosts_file, conn->r.ssh.user, err)) != LM_OK)
		return cli_fail(rc, err);
	hc = calloc(n, sizeof *hc);
	out = calloc(n, sizeof *out);
	if (hc == NULL || out == NULL) {
		free(hc);
		free(out);
		hosts_free(hv, n);
		return cli_error(EXIT_SOMEFAIL, "out of memory");
	}
	hosts_connect(hc, hv, n, &conn->r.ssh, conn->r.timeout_s, conn->r.fleet.parallel);
	fleet_each(n, conn->r.fleet.parallel, remote_one, &(remote_run){.hosts = hv, .hc = hc, .out = out});
	for (size_t i = 0; i < n; i++) {
		const char *state = cJSON_GetObjectItemCaseSensitive(out[i], "state")->valuestring;
		const cJSON *val = cJSON_GetObjectItemCaseSensitive(out[i], "value");

		failed += strcmp(state, "ok") != 0;
		enabled += cJSON_IsString(val) && strcmp(val->valuestring, "true") == 0;
		if (conn->json)
			cli_print_json(out[i]);
		else if (strcmp(state, "ok") != 0)
			cli_printf("%s: %s: %s\n", hv[i]->name, state,
			    cJSON_GetObjectItemCaseSensitive(out[i], "message")->valuestring);
		else {
			const cJSON *running = cJSON_GetObjectItemCaseSensitive(out[i], "running"), *it;

			cli_printf("%s: %s %s: %s; VM slots in use: %d of %d", hv[i]->name, HOST_DOMAIN, HOST_KEY,
			    val->valuestring, cJSON_GetArraySize(running), HOST_VM_SLOTS);
			cJSON_ArrayForEach(it, running)
				cli_printf("%s%s", it == running->child ? " (" : ", ", it->valuestring);
			printf("%s\n", running->child ? ")" : "");
		}
		cJSON_Delete(out[i]);
		hosts_conn_clear(&hc[i]);
	}
	if (conn->json) {
		cJSON *s = cJSON_CreateObject(), *sum = cJSON_AddObjectToObject(s, "summary");

		cJSON_AddNumberToObject(sum, "hosts", (double)n);
		cJSON_AddNumberToObject(sum, "enabled", enabled);
		cJSON_AddNumberToObject(sum, "failed", failed);
		cli_print_json(s);
		cJSON_Delete(s);
	} else
		printf("# %zu host(s): %d with the preference set to true, %d without an answer\n", n, enabled, failed);
	free(out);
	free(hc);
	hosts_free(hv, n);
	return failed ? EXIT_SOMEFAIL : EXIT_OK;
}

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {CLI_CONN_OPTIONS, {NULL, 0, NULL, 0}};

static int
cmd_host(int argc, char **argv)
{
	const char *verb = "status";
	char err[LM_ERRLEN];
	cli_conn conn;
	cJSON *out, *vms;
	int c, rc, v = -1, before = -1;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "host", CLI_CONN_SHORT, options)) != -1)
		if ((rc = cli_conn_flag(&conn, c, optarg, "host")) != 1) {
			cli_conn_free(&conn);
			return EXIT_USAGE;
		}
	if (argc - optind > 1 || (argc - optind == 1 && strcmp(verb = argv[optind], "status") != 0 &&
	    strcmp(verb, "enable") != 0 && strcmp(verb, "disable") != 0)) {
		cli_conn_free(&conn);
		return cli_error(EXIT_USAGE, "host: takes status, enable or disable; see 'lume-metal help host'");
	}
	if (conn.r.nhosts > 0 || conn.r.all) {
		cli_conn_free(&conn);
		return cli_error(EXIT_USAGE, "host: takes --hosts FILE for Mac hosts, not --host or --all");
	}
	if ((rc = cli_conn_ready(&conn, "host")) != EXIT_OK) {
		cli_conn_free(&conn);
		return rc;
	}
	if (conn.r.hosts_file != NULL) {
		if (strcmp(verb, "status") != 0) {
			cli_conn_free(&conn);
			return cli_error(EXIT_USAGE, "host %s: runs on the Mac itself; with --hosts FILE only status", verb);
		}
		rc = remote_status(&conn);
		cli_conn_free(&conn);
		return rc;
	}
	out = cJSON_CreateObject();
	if (strcmp(verb, "status") != 0)
		rc = ops_hostpref_set(conn.r.state, strcmp(verb, "enable") == 0, &before, err);
	else
		rc = LM_OK;
	if (rc == LM_OK)
		rc = ops_hostpref_read(&v, err);
	if (rc != LM_OK) {
		cJSON_Delete(out);
		return cli_fail(rc, err);
	}
	cJSON_AddStringToObject(out, "domain", HOST_DOMAIN);
	cJSON_AddStringToObject(out, "key", HOST_KEY);
	cJSON_AddStringToObject(out, "value", word(v));
	if (strcmp(verb, "status") != 0) {
		cJSON_AddStringToObject(out, strcmp(verb, "enable") == 0 ? "before" : "restored", word(before));
		ops_hostpref_running(conn.r.lume, out);
	}
	if (conn.json) {
		cli_print_json(out);
	} else {
		printf("%s %s: %s\n", HOST_DOMAIN, HOST_KEY, word(v));
		if ((vms = cJSON_GetObjectItemCaseSensitive(out, "restartNeeded")) && cJSON_GetArraySize(vms) > 0) {
			cJSON *it;

			printf("restart these running VMs to see the change (lume stop, then lume run):");
			cJSON_ArrayForEach(it, vms)
				cli_printf(" %s", it->valuestring);
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

const cli_command cli_cmd_host = {
	.name = "host", .fn = cmd_host, .options = options,
	.summary = "the host's paravirtual-graphics preference",
	.usage =
	    "host [status|enable|disable] [--json] [--state DIR] [--lume PATH]\n"
	    "       host status --hosts FILE [connection flags] [--json]\n\n"
	    "Reads, sets or restores com.apple.gpusw.ParavirtualizedGraphics\n"
	    "ForceUnrestrictedDeviceFeatureLevel with defaults(1) for this user. enable records the value\n"
	    "it replaces; disable restores it. Both list the running VMs that must be restarted.\n\n"
	    "With --hosts FILE, status asks every Mac host of FILE over SSH (--parallel at once): the\n"
	    "preference there and the VM slots in use (running VMs of the 2 a Mac may run). One line per\n"
	    "host (--json: {\"host\", \"address\", \"state\", \"value\", \"slotsUsed\", \"slots\", \"running\",\n"
	    "\"vms\"}, or \"state\" unreachable, auth-failed, hostkey-mismatch, timeout or failed with\n"
	    "\"message\"), then a summary. Exit 1 when a host gave no answer. enable and disable run on the\n"
	    "Mac itself (run them there, e.g. from Ansible).\n"
	    CLI_CONN_HELP,
	.examples = "  lume-metal host status\n"
	    "  lume-metal host enable\n"
	    "  lume-metal host status --hosts macs.txt --json\n",
};

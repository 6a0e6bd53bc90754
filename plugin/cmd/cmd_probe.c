/* lume-metal probe: the capability probe stock and shimmed in each VM; installs nothing. */
#include <stdio.h>

#include "cmd/cli.h"
#include "ops/probe.h"

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {CLI_CONN_OPTIONS, CLI_ORDER_OPTION, CLI_PAYLOAD_OPTIONS, {NULL, 0, NULL, 0}};

static int
cmd_probe(int argc, char **argv)
{
	session_opts o = {0};
	cli_conn conn;
	int c, rc;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "probe", CLI_CONN_SHORT, options)) != -1)
		if ((rc = cli_conn_flag(&conn, c, optarg, "probe")) <= 0) {
			cli_conn_free(&conn);
			return EXIT_USAGE;
		}
	if ((rc = cli_conn_check(&conn, argc - optind, "probe")) == EXIT_OK &&
	    (rc = cli_conn_payload(&conn, &o)) == EXIT_OK)
		rc = cli_run_vms(&conn, argc - optind, argv + optind, probe_one, &o, "probe");
	cli_conn_free(&conn);
	return rc;
}

const cli_command cli_cmd_probe = {
	.name = "probe", .fn = cmd_probe, .options = options,
	.summary = "run the capability probe stock and shimmed, install nothing",
	.usage =
	    "probe VM... | --host user@addr[:port]... | --all [PAYLOAD FLAGS]\n\n"
	    "Uploads the payload to the guest's staging directory, runs its probe stock and through\n"
	    "run-with-shim with --expect in a scratch directory, prints both, and removes them all.\n"
	    CLI_PAYLOAD_HELP CLI_ORDER_HELP CLI_CONN_HELP,
	.examples = "  lume-metal probe tahoe-1\n"
	    "  lume-metal probe --host lume@192.168.64.5 --payload lume-metal-macos.tar.gz --json\n",
};

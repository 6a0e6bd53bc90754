/* lume-metal probe: the capability probe stock and shimmed in each VM; installs nothing. */
#include <stdio.h>

#include "cmd/cli.h"
#include "ops/probe.h"

int
cmd_probe(int argc, char **argv)
{
	static const struct option opts[] = {CLI_CONN_OPTIONS, CLI_ORDER_OPTION, CLI_PAYLOAD_OPTIONS, {NULL, 0, NULL, 0}};
	session_opts o = {0};
	cli_conn conn;
	int c, rc;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "probe", CLI_CONN_SHORT, opts)) != -1)
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

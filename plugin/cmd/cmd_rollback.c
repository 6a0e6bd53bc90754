/* lume-metal rollback: back to the previous release, or to stock (--to none). */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "ops/rollback.h"

int
cmd_rollback(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_CONN_OPTIONS, CLI_ORDER_OPTION, {"to", required_argument, NULL, 'T'}, {"image", required_argument, NULL, 'm'},
		CLI_PAYLOAD_OPTIONS, {"no-probe", no_argument, NULL, 'N'}, {NULL, 0, NULL, 0},
	};
	session_opts o = {.to = "previous"};
	cli_conn conn;
	int c, rc, probe = 1;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "rollback", CLI_CONN_SHORT, opts)) != -1) {
		if ((rc = cli_conn_flag(&conn, c, optarg, "rollback")) != 0) {
			if (rc < 0)
				return EXIT_USAGE;
			continue;
		}
		switch (c) {
		case 'T': o.to = optarg; break;
		case 'm': o.image = optarg; break;
		case 'N': probe = 0; break;
		default: cli_conn_free(&conn); return EXIT_USAGE;
		}
	}
	if (strcmp(o.to, "previous") != 0 && strcmp(o.to, "none") != 0)
		return cli_error(EXIT_USAGE, "rollback: --to %s: must be previous or none", o.to);
	if ((rc = cli_conn_check(&conn, argc - optind, "rollback")) != EXIT_OK)
		goto done;
	if (strcmp(o.to, "none") == 0 && probe) {
		if ((rc = cli_conn_payload(&conn, &o)) != EXIT_OK)
			goto done;
	}
	rc = cli_run_vms(&conn, argc - optind, argv + optind, rollback_one, &o, "rollback");
done:
	cli_conn_free(&conn);
	return rc;
}

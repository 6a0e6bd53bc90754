/* lume-metal status: what is installed, the service, drift, and the ledger's verdict. */
#include <stdio.h>
#include <sys/stat.h>

#include "cmd/cli.h"
#include "ops/status.h"

int
cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_CONN_OPTIONS, CLI_ORDER_OPTION, {"image", required_argument, NULL, 'm'},
		{"verdicts", required_argument, NULL, 1050}, {"textfile", required_argument, NULL, 1054}, {NULL, 0, NULL, 0},
	};
	session_opts o = {0};
	cli_conn conn;
	verdicts_cfg vc;
	verdict_trust trust = {0};
	const char *verdicts = NULL;
	struct stat st;
	int c, rc;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "status", CLI_CONN_SHORT, opts)) != -1) {
		if ((rc = cli_conn_flag(&conn, c, optarg, "status")) != 0) {
			if (rc < 0)
				return EXIT_USAGE;
			continue;
		}
		if (c == 1050 || c == 1054) {
			if (c == 1050)
				verdicts = optarg;
			else
				conn.textfile = optarg;
			continue;
		}
		if (c != 'm') {
			cli_conn_free(&conn);
			return EXIT_USAGE;
		}
		o.image = optarg;
	}
	if (conn.textfile && (stat(conn.textfile, &st) != 0 || !S_ISDIR(st.st_mode))) {
		cli_conn_free(&conn);
		return cli_error(EXIT_USAGE, "status: --textfile %s: not a directory (node_exporter's "
		    "--collector.textfile.directory)", conn.textfile);
	}
	if ((rc = cli_conn_check(&conn, argc - optind, "status")) == EXIT_OK &&
	    (rc = cli_verdicts_setup(&vc, &trust, &conn, verdicts, "status")) == EXIT_OK) {
		o.verdicts = &vc;
		rc = cli_run_vms(&conn, argc - optind, argv + optind, status_one, &o, "status");
	}
	ops_verdicts_clear(&trust);
	cli_conn_free(&conn);
	return rc;
}

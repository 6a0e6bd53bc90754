/* lume-metal status: what is installed, the service, drift, and the ledger's verdict. */
#include <stdio.h>
#include <sys/stat.h>

#include "cmd/cli.h"
#include "ops/status.h"

/* status's own flag without a short letter. */
enum { OPT_TEXTFILE = CLI_OPT_OWN };

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	CLI_CONN_OPTIONS, CLI_ORDER_OPTION, {"image", required_argument, NULL, 'm'},
	{"verdicts", required_argument, NULL, CLI_OPT_VERDICTS}, {"textfile", required_argument, NULL, OPT_TEXTFILE},
	{NULL, 0, NULL, 0},
};

static int
cmd_status(int argc, char **argv)
{
	session_opts o = {0};
	cli_conn conn;
	verdicts_cfg vc;
	verdict_trust trust = {0};
	const char *verdicts = NULL;
	struct stat st;
	int c, rc;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "status", CLI_CONN_SHORT, options)) != -1) {
		if ((rc = cli_conn_flag(&conn, c, optarg, "status")) != 0) {
			if (rc < 0)
				return EXIT_USAGE;
			continue;
		}
		if (c == CLI_OPT_VERDICTS || c == OPT_TEXTFILE) {
			if (c == CLI_OPT_VERDICTS)
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

const cli_command cli_cmd_status = {
	.name = "status", .fn = cmd_status, .options = options,
	.summary = "what is installed, service state, drift, ledger verdict",
	.usage =
	    "status VM... | --host user@addr[:port]... | --all [--image REF] [--verdicts registry|local]"
	    " [--textfile DIR]\n\n"
	    "Prints each VM's releases, current and previous, the service state, drift (files that no\n"
	    "longer match their checksums, an edited LaunchAgent) and the ledger's verdict for its image\n"
	    "version. State ok or drift; exit 1 when any VM has drift or cannot be read.\n"
	    "  --verdicts registry|local  as deploy's: with registry, a version this ledger has no verdict\n"
	    "                      for is looked up in its image's registry (trusted-key), and recorded\n"
	    "  --textfile DIR      also write the metrics (as --format openmetrics prints them) to\n"
	    "                      DIR/lume-metal.prom for node_exporter's textfile collector: a temporary\n"
	    "                      file in DIR renamed over it; stdout keeps its format\n" CLI_ORDER_HELP CLI_CONN_HELP,
	.examples = "  lume-metal status tahoe-1\n"
	    "  lume-metal status --hosts macs.txt --format json\n"
	    "  lume-metal status --all --order input > before.txt\n"
	    "  lume-metal status --all --textfile /var/lib/prometheus/node-exporter\n",
};

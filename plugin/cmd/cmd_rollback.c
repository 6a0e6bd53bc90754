/* lume-metal rollback: back to the previous release, or to stock (--to none). */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "ops/rollback.h"

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	CLI_CONN_OPTIONS, CLI_ORDER_OPTION, {"to", required_argument, NULL, 'T'}, {"image", required_argument, NULL, 'm'},
	CLI_PAYLOAD_OPTIONS, {"no-probe", no_argument, NULL, 'N'}, {NULL, 0, NULL, 0},
};

static int
cmd_rollback(int argc, char **argv)
{
	session_opts o = {.to = "previous"};
	cli_conn conn;
	int c, rc, probe = 1;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "rollback", CLI_CONN_SHORT, options)) != -1) {
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

const cli_command cli_cmd_rollback = {
	.name = "rollback", .fn = cmd_rollback, .options = options,
	.summary = "return one VM or the fleet to the previous release or to stock",
	.usage =
	    "rollback VM... | --host user@addr[:port]... | --all [--to previous|none] [--image REF]\n"
	    "         [--target T | --payload FILE | --no-probe]\n\n"
	    "previous: the previous release becomes current and its LaunchAgent is bootstrapped.\n"
	    "none: the service is booted out and everything lume-metal installed is removed; then the\n"
	    "probe of a payload for --target (default macos; --profile and --workload as deploy's) or\n"
	    "--payload runs in a scratch directory to\n"
	    "show the stock answers (--no-probe skips it). The rollback is recorded in the ledger.\n"
	    CLI_ORDER_HELP CLI_CONN_HELP,
	.examples = "  lume-metal rollback tahoe-1\n"
	    "  lume-metal rollback --all --to none --no-probe\n",
};

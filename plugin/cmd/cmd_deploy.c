/* lume-metal deploy: push, verify, install, validate, activate, record. */
#include <stdio.h>

#include "cmd/cli.h"
#include "net/host.h"

int
cmd_deploy(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_CONN_OPTIONS, CLI_ORDER_OPTION, CLI_PAYLOAD_OPTIONS, CLI_FLEET_OPTIONS, {"image", required_argument, NULL, 'm'}, {"force", no_argument, NULL, 'F'},
		{"dry-run", no_argument, NULL, 'n'}, CLI_VALIDATE_OPTIONS, {"validate-workload", no_argument, NULL, 1044},
		{"verdicts", required_argument, NULL, 1050}, {NULL, 0, NULL, 0},
	};
	session_opts o = {0};
	cli_validate cv = {0};
	cli_conn conn;
	verdicts_cfg vc;
	verdict_trust trust = {0};
	const char *verdicts = NULL;
	char err[LM_ERRLEN];
	int c, rc, pref;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "deploy", CLI_CONN_SHORT, opts)) != -1) {
		if ((rc = cli_conn_flag(&conn, c, optarg, "deploy")) != 0 ||
		    (rc = cli_validate_flag(&cv, c, optarg, "deploy")) != 0) {
			if (rc < 0)
				return EXIT_USAGE;
			continue;
		}
		switch (c) {
		case 'm': o.image = optarg; break;
		case 'F': o.force = 1; break;
		case 'n': o.dry_run = 1; break;
		case 1050: verdicts = optarg; break;
		default: cli_conn_free(&conn); return EXIT_USAGE;
		}
	}
	if ((rc = cli_conn_check(&conn, argc - optind, "deploy")) != EXIT_OK ||
	    (rc = cli_conn_payload(&conn, &o)) != EXIT_OK ||
	    (rc = cli_validate_setup(&cv, &conn, &o, cv.asked, "deploy")) != EXIT_OK ||
	    (rc = cli_verdicts_setup(&vc, &trust, &conn, verdicts, "deploy")) != EXIT_OK)
		goto done;
	o.verdicts = &vc;
	if (cv.asked && !conn.timeout_given) /* validation runs llama-perplexity twice */
		conn.timeout_s = 3600;
	if (host_pref_read(&pref, err) == LM_OK && pref != 1)
		fprintf(stderr, "lume-metal: warning: this host's %s %s is %s; the shim's evidence ran with it "
		    "set (lume-metal host enable)\n", HOST_DOMAIN, HOST_KEY, pref < 0 ? "not set" : "false");
	rc = cli_run_vms(&conn, argc - optind, argv + optind, deploy_one, &o, "deploy");
done:
	verdict_trust_clear(&trust);
	cli_conn_free(&conn);
	return rc;
}

/* lume-metal deploy: push, verify, install, validate, activate, record. */
#include <stdio.h>

#include "cmd/cli.h"
#include "ops/hostpref.h"

/* The guest's confirmation (install.sh's step 8): its wait, --confirm-timeout (1..3600 s), and
 * its watch after, --confirm-settle (0..600 s), each from the flag, else the config file's key of
 * that name; s[i] the value sent (NULL: neither gave it), n[i] its seconds (the guest's defaults,
 * 60 and 5, when not sent). */
typedef struct {
	const char *s[2];
	char buf[2][8];
	int n[2];
} confirm_knobs;

static const char *const knob_flag[2] = {"--confirm-timeout", "--confirm-settle"};

/* Takes v for knob i; -1 after printing why it is no whole number in range. */
static int
knob_set(confirm_knobs *k, int i, const char *v)
{
	if (cli_number(v, knob_flag[i], "deploy", i ? 0 : 1, i ? 600 : 3600, &k->n[i]) < 0)
		return -1;
	snprintf(k->buf[i], sizeof k->buf[i], "%d", k->n[i]);
	k->s[i] = k->buf[i];
	return 0;
}

int
cmd_deploy(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_CONN_OPTIONS, CLI_ORDER_OPTION, CLI_PAYLOAD_OPTIONS, CLI_FLEET_OPTIONS, {"image", required_argument, NULL, 'm'}, {"force", no_argument, NULL, 'F'},
		{"dry-run", no_argument, NULL, 'n'}, CLI_VALIDATE_OPTIONS, {"validate-workload", no_argument, NULL, 1044},
		{"verdicts", required_argument, NULL, 1050}, {"confirm-timeout", required_argument, NULL, 1052},
		{"confirm-settle", required_argument, NULL, 1053}, {NULL, 0, NULL, 0},
	};
	session_opts o = {0};
	cli_validate cv = {0};
	confirm_knobs k = {{NULL, NULL}, {"", ""}, {60, 5}};
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
		case 1052:
		case 1053:
			if (knob_set(&k, c - 1052, optarg) == 0)
				break;
			/* fall through */
		default: cli_conn_free(&conn); return EXIT_USAGE;
		}
	}
	if ((rc = cli_conn_check(&conn, argc - optind, "deploy")) != EXIT_OK ||
	    (rc = cli_conn_payload(&conn, &o)) != EXIT_OK ||
	    (rc = cli_validate_setup(&cv, &conn, &o, cv.asked, "deploy")) != EXIT_OK ||
	    (rc = cli_verdicts_setup(&vc, &trust, &conn, verdicts, "deploy")) != EXIT_OK)
		goto done;
	o.verdicts = &vc;
	if (cv.asked && !conn.r.timeout_given) /* validation runs llama-perplexity twice */
		conn.r.timeout_s = 3600;
	for (int i = 0; i < 2; i++) /* the file's values, where no flag gave one (config_load checked them) */
		if (k.s[i] == NULL && cli_conn_setting(&conn, knob_flag[i] + 2) != NULL &&
		    knob_set(&k, i, cli_conn_setting(&conn, knob_flag[i] + 2)) < 0) {
			rc = EXIT_USAGE;
			goto done;
		}
	/* The guest's confirmation must end before the VM's --timeout does. */
	if ((k.s[0] || k.s[1]) && k.n[0] + k.n[1] >= conn.r.timeout_s) {
		rc = cli_error(EXIT_USAGE, "deploy: --confirm-timeout %d%s and --confirm-settle %d%s do not fit in --timeout %d: "
		    "the VM's deploy would time out while its guest still waits", k.n[0], k.s[0] ? "" : " (the default)", k.n[1],
		    k.s[1] ? "" : " (the default)", conn.r.timeout_s);
		goto done;
	}
	o.confirm_timeout = k.s[0];
	o.confirm_settle = k.s[1];
	if (ops_hostpref_read(&pref, err) == LM_OK && pref != 1)
		fprintf(stderr, "lume-metal: warning: this host's %s %s is %s; the shim's evidence ran with it "
		    "set (lume-metal host enable)\n", HOST_DOMAIN, HOST_KEY, pref < 0 ? "not set" : "false");
	rc = cli_run_vms(&conn, argc - optind, argv + optind, deploy_one, &o, "deploy");
done:
	ops_verdicts_clear(&trust);
	cli_conn_free(&conn);
	return rc;
}

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

/* deploy's own flags without a short letter. */
enum { OPT_CONFIRM_TIMEOUT = CLI_OPT_OWN, OPT_CONFIRM_SETTLE };

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

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	CLI_CONN_OPTIONS, CLI_ORDER_OPTION, CLI_PAYLOAD_OPTIONS, CLI_FLEET_OPTIONS, {"image", required_argument, NULL, 'm'}, {"force", no_argument, NULL, 'F'},
	{"dry-run", no_argument, NULL, 'n'}, CLI_VALIDATE_OPTIONS, {"validate-workload", no_argument, NULL, CLI_OPT_VALIDATE_WORKLOAD},
	{"verdicts", required_argument, NULL, CLI_OPT_VERDICTS}, {"confirm-timeout", required_argument, NULL, OPT_CONFIRM_TIMEOUT},
	{"confirm-settle", required_argument, NULL, OPT_CONFIRM_SETTLE}, {NULL, 0, NULL, 0},
};

static int
cmd_deploy(int argc, char **argv)
{
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
	while ((c = cli_getopt(argc, argv, "deploy", CLI_CONN_SHORT, options)) != -1) {
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
		case CLI_OPT_VERDICTS: verdicts = optarg; break;
		case OPT_CONFIRM_TIMEOUT:
		case OPT_CONFIRM_SETTLE:
			if (knob_set(&k, c - OPT_CONFIRM_TIMEOUT, optarg) == 0)
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

const cli_command cli_cmd_deploy = {
	.name = "deploy", .fn = cmd_deploy, .options = options,
	.summary = "push, verify, install, validate, activate, record",
	.usage =
	    "deploy VM... | --host user@addr[:port]... | --all [PAYLOAD FLAGS] [--image REF] [--force] [--dry-run]\n"
	    "       [--confirm-timeout SEC] [--confirm-settle SEC]\n\n"
	    "Reads the guest's facts (macOS version and build, hw.model, chip, image.json), consults\n"
	    "the ledger for that image version (a recorded failure is refused with exit 3 unless\n"
	    "--force), reports \"unchanged\" without sending a byte when the payload is already current,\n"
	    "else uploads it, verifies and unpacks it, probes stock and shimmed, and only on a pass\n"
	    "switches current and bootstraps the LaunchAgent. The verdict is recorded per image version.\n"
	    CLI_PAYLOAD_HELP
	    "  --image REF         the image reference for the ledger (default: the guest's image.json)\n"
	    "  --force             validate an image version recorded as failing, and reinstall a\n"
	    "                      payload that is already current (repairs drift)\n"
	    "  --dry-run           print the plan and change nothing\n"
	    "  --validate-workload when the workload requires validation (\"requireValidation\") and this\n"
	    "                      image version has no passing validate record, run `validate` on this VM\n"
	    "                      first (with --model PATH, and --text, --chunks, --llama-perplexity as\n"
	    "                      there; --timeout then defaults to 3600); without it such a VM is refused\n"
	    "                      (exit 3) with the command to run. Other VMs of a validated version only\n"
	    "                      read the ledger.\n"
	    "  --verdicts registry|local  registry: a VM whose image version has no verdict in this ledger\n"
	    "                      gets the one attached to its image in the registry (the reference from\n"
	    "                      --image or the guest's image.json), signed by a trusted-key, recorded\n"
	    "                      here first; one lookup per image version (default: verdicts= of the\n"
	    "                      config file, else local; docs/verdicts.md)\n"
	    "  --confirm-timeout SEC  how long the guest waits, after the bootstrap, for the process\n"
	    "                      launchd runs to have the shim active and, for a workload with a\n"
	    "                      readiness URL, to answer 200 there (1..3600; default: the config\n"
	    "                      file's confirm-timeout, else the guest's LUME_METAL_CONFIRM_TIMEOUT,\n"
	    "                      else 60)\n"
	    "  --confirm-settle SEC   how long it then watches that process stay up (0..600; default:\n"
	    "                      confirm-settle, else LUME_METAL_CONFIRM_SETTLE, else 5). Both must fit\n"
	    "                      in --timeout. A workload that exits after its shim was active, or is\n"
	    "                      never ready, fails this VM alone; a shim that never shows active\n"
	    "                      fails the image version.\n"
	    "\nStaged rollout (like Ansible's serial and max_fail_percentage):\n"
	    "  --canary K          deploy to the first K VMs; go on only if all of them pass\n"
	    "  --batch N|P%        then waves of N VMs (or P% of all); default one wave\n"
	    "  --max-fail N|P%     failure budget: more failures than this and no further VM is started\n"
	    "                      (running ones finish); checked before each VM, not only per wave\n"
	    "  --rollback-on-fail  when the run stops, VMs it deployed go back to their previous release\n"
	    CLI_ORDER_HELP CLI_CONN_HELP,
	.examples = "  lume-metal deploy tahoe-1 --accept-new --validate-workload --model ~/m.gguf\n"
	    "  lume-metal deploy --all --dry-run\n"
	    "  lume-metal deploy --hosts macs.txt --canary 1 --batch 25% --max-fail 5% --rollback-on-fail\n"
	    "  lume-metal deploy --all --json | jq -c 'select(.state != \"unchanged\")'\n"
	    "  lume-metal deploy --hosts macs.txt --format junit > deploy-report.xml\n",
};

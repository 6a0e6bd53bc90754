/* lume-metal golden: build a validated image from a stopped VM and publish it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/render.h"
#include "ops/golden.h"
#include "core/ledger.h"

/* One stderr line per step start and end, with the elapsed time; everything escaped. */
static void
progress(void *ctx, int step, const char *state, const char *detail, int64_t elapsed_ms)
{
	lm_buf b = {0};

	(void)ctx;
	if (cli_bprintf(&b, "golden [%6.1f s] %-8s %s%s%s\n", (double)elapsed_ms / 1000.0, golden_step_name(step),
	    strcmp(state, "start") == 0 ? "" : state, detail && strcmp(state, "start") != 0 ? ": " : "",
	    detail ? detail : "") == 0 && b.data)
		fputs(b.data, stderr);
	lm_buf_free(&b);
}

static void
print_text(const cJSON *r)
{
	const char *st = lm_jstr(r, "state"), *msg = lm_jstr(r, "message");
	const cJSON *s;

	if (lm_jstr(r, "sourcePicked"))
		cli_printf("%s\n", lm_jstr(r, "sourcePicked"));
	if (strcmp(st, "planned") == 0) {
		int i = 1;

		cli_printf("plan for %s (nothing run):\n", lm_jstr(r, "reference"));
		cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(r, "steps"))
			cli_printf("  %2d. %-8s %s\n", i++, lm_jstr(s, "step"), lm_jstr(s, "command"));
		return;
	}
	if (strcmp(st, "published") == 0) {
		char label[256];

		cli_printf("published %s %s\n", lm_jstr(r, "reference"), lm_jstr(r, "digest"));
		ledger_key_label(label, sizeof label, cJSON_GetObjectItemCaseSensitive(r, "key"), lm_jstr(r, "reference"));
		cli_printf("recorded: golden pass under %s\n", label);
		return;
	}
	cli_printf("%s %s: %s%s%s\n", lm_jstr(r, "reference"), st, msg ? msg : "",
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "kept")) ? "; build VM kept: " : "",
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "kept")) ? lm_jstr(r, "build") : "");
}

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	CLI_CONN_OPTIONS, CLI_PAYLOAD_OPTIONS, CLI_VALIDATE_OPTIONS,
	{"pull", required_argument, NULL, 'P'}, {"pull-registry", required_argument, NULL, 'R'},
	{"pull-organization", required_argument, NULL, 'O'}, {"registry", required_argument, NULL, 'r'},
	{"organization", required_argument, NULL, 'o'}, {"additional-tags", required_argument, NULL, 't'},
	{"build-vm", required_argument, NULL, 'b'}, {"keep", no_argument, NULL, 'k'},
	{"dry-run", no_argument, NULL, 'n'}, {"image", required_argument, NULL, 'I'},
	{"evidence", required_argument, NULL, 'E'}, {NULL, 0, NULL, 0},
};

static int
cmd_golden(int argc, char **argv)
{
	golden_opts g = {0};
	cli_validate cv = {0};
	cli_conn conn;
	verdicts_cfg vc;
	verdict_trust trust = {0};
	const char **tags = NULL;
	char err[LM_ERRLEN] = "", build[64], pulled[IMAGE_NAME_MAX + 1];
	cJSON *res = NULL;
	int c, rc = EXIT_OK, npos;
	time_t wall;

	cli_conn_init(&conn);
	if ((tags = calloc((size_t)argc + 1, sizeof *tags)) == NULL)
		return cli_error(EXIT_SOMEFAIL, "out of memory");
	while (rc == EXIT_OK && (c = cli_getopt(argc, argv, "golden", CLI_CONN_SHORT, options)) != -1) {
		int f = cli_conn_flag(&conn, c, optarg, "golden");

		if (f == 0)
			f = cli_validate_flag(&cv, c, optarg, "golden");
		if (f != 0) {
			rc = f < 0 ? EXIT_USAGE : EXIT_OK;
			continue;
		}
		switch (c) {
		case 'P': g.pull = optarg; break;
		case 'R': g.pull_registry = optarg; break;
		case 'O': g.pull_organization = optarg; break;
		case 'r': g.registry = optarg; break;
		case 'o': g.organization = optarg; break;
		case 't': tags[g.ntags++] = optarg; break;
		case 'b': g.build = optarg; break;
		case 'k': g.keep = 1; break;
		case 'n': g.dry_run = 1; break;
		case 'E': cv.v.evidence = optarg; break;
		case 'I': g.deploy.image = optarg; break;
		default: rc = EXIT_USAGE;
		}
	}
	if (rc != EXIT_OK)
		goto done;
	npos = argc - optind;
	if (conn.r.nhosts || conn.r.hosts_file || conn.r.all) {
		rc = cli_error(EXIT_USAGE, "golden: builds on this Mac's Lume; --host, --hosts and --all do not apply");
		goto done;
	}
	if (g.pull ? npos < 1 || npos > 2 : npos != 2) {
		rc = cli_error(EXIT_USAGE, "golden: usage: golden SOURCE IMAGE:TAG, or golden --pull BASE:TAG [NAME] IMAGE:TAG");
		goto done;
	}
	g.image_tag = argv[argc - 1];
	if (npos == 2)
		g.source = argv[optind];
	else {
		/* Lume's own name for a pull: image_tag. */
		size_t i;

		snprintf(pulled, sizeof pulled, "%s", g.pull);
		for (i = 0; pulled[i]; i++)
			if (pulled[i] == ':' || pulled[i] == '/')
				pulled[i] = '_';
		g.source = pulled;
		g.pull_pick = 1; /* a VM of that name already there: the build picks a free one */
	}
	if (g.build == NULL) {
		snprintf(build, sizeof build, "lume-metal-golden-%ld", (long)getpid());
		g.build = build;
	}
	if ((rc = cli_state_readable(&conn, "golden")) != EXIT_OK)
		goto done;
	if (g.registry == NULL) /* the config file's, else golden.c's default */
		g.registry = cli_conn_setting(&conn, "registry");
	if (g.organization == NULL)
		g.organization = cli_conn_setting(&conn, "organization");
	if ((rc = cli_conn_payload(&conn, &g.deploy)) != EXIT_OK ||
	    (rc = cli_validate_setup(&cv, &conn, &g.deploy, cv.v.model != NULL, "golden")) != EXIT_OK ||
	    (rc = cli_verdicts_setup(&vc, &trust, &conn, NULL, "golden")) != EXIT_OK)
		goto done;
	vc.registry = 0; /* the build validates in full; its verdict is attached when signing-key is set */
	if (g.registry != NULL) /* the environment's credentials go where lume push sends them */
		vc.registry_default = g.registry;
	g.deploy.verdicts = &vc;
	/* A workload that requires validation would refuse every VM pulled from an image without a
	 * validate record: its golden image is validated here or not built. */
	if (g.deploy.require_validation && cv.v.model == NULL) {
		rc = cli_error(EXIT_USAGE, "golden: the workload %s requires validation (requireValidation): give --model "
		    "PATH (the model's path in the guest)", conn.r.info->workload);
		goto done;
	}
	g.model = cv.v.model;
	g.tags = tags;
	g.port = conn.r.port;
	g.deploy.state = conn.r.state, g.deploy.lume = conn.r.lume, g.deploy.ssh = conn.r.ssh;
	g.deploy.timeout_s = conn.r.timeout_s;
	g.deploy.wait_s = conn.r.wait_s ? conn.r.wait_s : GOLDEN_SHORT_S;
	g.progress = progress;
	wall = time(NULL);
	rc = golden_build(&res, &g, err);
	if (res == NULL) {
		rc = cli_fail(rc, err);
		goto done;
	}
	if (conn.doc) {
		lm_buf b = {0};

		render_junit_golden(&b, res, wall);
		render_put(&b);
	} else if (conn.json)
		cli_print_json(res);
	else
		print_text(res);
	rc = rc == LM_OK ? EXIT_OK : rc == LM_EINPUT ? EXIT_USAGE : rc == LM_EREFUSED ? EXIT_REFUSED : EXIT_SOMEFAIL;
done:
	cJSON_Delete(res);
	free(tags);
	ops_verdicts_clear(&trust);
	cli_conn_free(&conn);
	return rc;
}

const cli_command cli_cmd_golden = {
	.name = "golden", .fn = cmd_golden, .options = options,
	.summary = "clone, validate, stamp, push and record a golden image",
	.usage =
	    "golden SOURCE IMAGE:TAG | --pull BASE:TAG [NAME] IMAGE:TAG [--registry R] [--organization O]\n"
	    "       [--additional-tags TAG]... [--build-vm NAME] [--keep] [--dry-run] [PAYLOAD FLAGS]\n\n"
	    "Builds on a `lume clone` of SOURCE (a stopped local VM, never changed; --pull pulls BASE:TAG\n"
	    "first, as NAME, or as Lume's BASE_TAG, or BASE_TAG-2, -3, ... when a VM has that name): runs it (lume run, detached and without a display), waits for SSH,\n"
	    "deploys the payload with full validation (as deploy --force), stamps\n"
	    "~/Library/Application Support/lume-metal/image.json in the guest, stops it, pushes it\n"
	    "under a tag only this run knows, IMAGE:golden-HEX (lume push, credentials from\n"
	    "GITHUB_USERNAME/GITHUB_TOKEN or GHCR_*), reads that manifest's digest from its bytes,\n"
	    "points IMAGE:TAG and the additional tags at it and reads them back (another digest there:\n"
	    "re-tagged by someone else, exit 1, nothing recorded), records one ledger record of kind\n"
	    "golden under that digest, and deletes the build VM. A failed validation pushes nothing (its verdict is\n"
	    "recorded under the base image); the build VM is then stopped and deleted, or kept with\n"
	    "--keep. Progress per step on stderr; --json prints one object.\n\n"
	    "  --registry R        as lume push (default ghcr.io); --organization O (default trycua)\n"
	    "  --additional-tags T more tags pointed at the pushed manifest (repeatable)\n"
	    "  --pull-registry R, --pull-organization O   where --pull finds BASE:TAG\n"
	    "  --build-vm NAME     the clone's name (default lume-metal-golden-PID)\n"
	    "  --keep              keep the build VM (stopped) after the build\n"
	    "  --dry-run           print every step's command and run none\n"
	    "  --model PATH        also validate the workload (as lume-metal validate: llama-perplexity stock\n"
	    "                      and shimmed, KL divergence) on the build VM; a fail pushes nothing. Required\n"
	    "                      when the workload has requireValidation. --text, --chunks,\n"
	    "                      --llama-perplexity and --evidence DIR as for validate\n"
	    "  --image REF         the base image's reference for the deploy's ledger record\n"
	    "  --wait SECONDS      the wait for SSH (default 300)\n"
	    CLI_PAYLOAD_HELP CLI_CONN_HELP,
	.examples = "  lume-metal golden tahoe-base macos-tahoe-shim:26.5 --model ~/m.gguf --dry-run\n"
	    "  lume-metal golden --pull macos-tahoe-cua:latest shim:26.5 --model ~/m.gguf\n",
};

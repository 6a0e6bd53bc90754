/* lume-metal validate: llama-perplexity stock and through run-with-shim in one VM, compared by
 * KL divergence, recorded per image version (the gate of workloads that require it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cli.h"
#include "cmd/render.h"

/* Each arm's start and end on stderr, escaped: the stock arm takes about ten times as long. */
static void
show_progress(void *ctx, const char *vm, const char *arm, const char *phase, double elapsed_s)
{
	lm_buf b = {0};

	(void)ctx;
	if (strcmp(phase, "start") == 0)
		cli_bprintf(&b, "lume-metal: %s: %s arm started at %.1f s\n", vm, arm, elapsed_s);
	else
		cli_bprintf(&b, "lume-metal: %s: %s arm finished at %.1f s\n", vm, arm, elapsed_s);
	if (b.data)
		fputs(b.data, stderr);
	lm_buf_free(&b);
}

static const char *
metal_line(char *out, size_t len, const cJSON *m)
{
	const cJSON *fam = cJSON_GetObjectItemCaseSensitive(m, "apple_family");
	const cJSON *mm = cJSON_GetObjectItemCaseSensitive(m, "simdgroup_matrix_mul");

	if (!cJSON_IsObject(m))
		snprintf(out, len, "no ggml_metal_device_init (or ggml_metal_init) lines");
	else
		snprintf(out, len, "Apple family %d, simdgroup matrix mul. %s", cJSON_IsNumber(fam) ? fam->valueint : 0,
		    cJSON_IsTrue(mm) ? "true" : cJSON_IsFalse(mm) ? "false" : "unknown");
	return out;
}

static void
print_text(const cJSON *res)
{
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(res, "message");
	const cJSON *val = cJSON_GetObjectItemCaseSensitive(res, "validation");
	const cJSON *build = cJSON_GetObjectItemCaseSensitive(res, "build");
	char a[96], b[96];

	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(val, "meanKld"))) {
		cli_printf("  mean KLD        %.6f  (at most %g)\n", lm_jnum(val, "meanKld"),
		    lm_jnum(cJSON_GetObjectItemCaseSensitive(val, "thresholds"), "maxMeanKld"));
		cli_printf("  99.9%% KLD       %.6f\n", lm_jnum(val, "kld999"));
		cli_printf("  same top token  %.3f%%  (at least %g%%)\n", lm_jnum(val, "sameTopPercent"),
		    lm_jnum(cJSON_GetObjectItemCaseSensitive(val, "thresholds"), "minSameTopPercent"));
		cli_printf("  PPL(Q)/PPL(base) %.6f  (within %g of 1)\n", lm_jnum(val, "pplRatio"),
		    lm_jnum(cJSON_GetObjectItemCaseSensitive(val, "thresholds"), "maxPplRatioDeviation"));
	}
	if (cJSON_IsObject(val)) {
		cli_printf("  stock arm: %s\n", metal_line(a, sizeof a, cJSON_GetObjectItemCaseSensitive(val, "stockMetal")));
		cli_printf("  shim arm:  %s\n", metal_line(b, sizeof b, cJSON_GetObjectItemCaseSensitive(val, "shimMetal")));
	}
	if (cJSON_IsString(build) && *build->valuestring)
		cli_printf("  llama.cpp build: %s\n", build->valuestring);
	cli_printf("%s: %s%s%s\n", cJSON_GetObjectItemCaseSensitive(res, "vm")->valuestring,
	    cJSON_GetObjectItemCaseSensitive(res, "state")->valuestring, cJSON_IsString(msg) ? ": " : "",
	    cJSON_IsString(msg) ? msg->valuestring : "");
}

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	CLI_CONN_OPTIONS, CLI_ORDER_OPTION, CLI_PAYLOAD_OPTIONS, CLI_VALIDATE_OPTIONS,
	{"evidence", required_argument, NULL, 'E'}, {"image", required_argument, NULL, 'I'}, {NULL, 0, NULL, 0},
};

static int
cmd_validate(int argc, char **argv)
{
	cli_validate cv = {.v = {.progress = show_progress}};
	session_opts o = {0};
	cli_conn conn;
	cJSON *res = NULL;
	char err[LM_ERRLEN];
	int c, f, rc = EXIT_OK;

	cli_conn_init(&conn);
	while (rc == EXIT_OK && (c = cli_getopt(argc, argv, "validate", CLI_CONN_SHORT, options)) != -1) {
		if ((f = cli_conn_flag(&conn, c, optarg, "validate")) != 0 ||
		    (f = cli_validate_flag(&cv, c, optarg, "validate")) != 0) {
			rc = f < 0 ? EXIT_USAGE : EXIT_OK;
			continue;
		}
		switch (c) {
		case 'E': cv.v.evidence = optarg; break;
		case 'I': o.image = optarg; break;
		default: rc = EXIT_USAGE;
		}
	}
	if (rc != EXIT_OK)
		goto done;
	if (conn.r.hosts_file == NULL && (argc - optind + (int)conn.r.nhosts != 1 || conn.r.all)) {
		rc = cli_error(EXIT_USAGE, "validate: takes exactly one VM (a Lume name or --host user@addr[:port]), or "
		    "--hosts FILE: validation is per image version, so one VM of each version is enough");
		goto done;
	}
	if (cv.v.model == NULL) {
		rc = cli_error(EXIT_USAGE, "validate: --model PATH (the model's path in the guest) is required");
		goto done;
	}
	if (conn.r.hosts_file) {
		struct stat st;

		/* Every VM of the hosts, each image version validated once (validate_once), evidence per VM. */
		if ((rc = cli_conn_check(&conn, argc - optind, "validate")) != EXIT_OK ||
		    (rc = cli_conn_payload(&conn, &o)) != EXIT_OK ||
		    (rc = cli_validate_setup(&cv, &conn, &o, 1, "validate")) != EXIT_OK)
			goto done;
		if (cv.v.evidence && lstat(cv.v.evidence, &st) == 0) {
			rc = cli_error(EXIT_USAGE, "validate: --evidence %s: already exists", cv.v.evidence);
			goto done;
		}
		cv.v.evidence_per_vm = 1;
		if (!conn.r.timeout_given) /* validation runs llama-perplexity twice */
			conn.r.timeout_s = 3600;
		rc = cli_run_vms(&conn, argc - optind, argv + optind, validate_once, &o, "validate");
		goto done;
	}
	if ((rc = cli_state_readable(&conn, "validate")) != EXIT_OK ||
	    (conn.r.nhosts && (rc = cli_host_check(conn.r.hosts[0], "validate")) != EXIT_OK) ||
	    (rc = cli_conn_payload(&conn, &o)) != EXIT_OK ||
	    (rc = cli_validate_setup(&cv, &conn, &o, 1, "validate")) != EXIT_OK)
		goto done;
	{
		guest_target *t = NULL;
		int64_t t0 = lm_now_ms();
		time_t wall = time(NULL);

		/* Two llama-perplexity runs of a large model, the stock one on the slow kernels. */
		if ((rc = cli_one_vm(&t, &conn, argv[optind], &o, 3600)) != EXIT_OK)
			goto done;
		validate_once(&res, t, &o, err);
		ops_one_vm_free(t);
		fleet_stamp(res, t0);
		if (conn.doc) {
			lm_buf b = {0};

			render_junit_vms(&b, "validate", &res, 1, wall);
			render_put(&b);
		} else if (conn.json)
			cli_print_json(res);
		else
			print_text(res);
	}
	{
		const char *st = cJSON_GetObjectItemCaseSensitive(res, "state")->valuestring;

		rc = strcmp(st, "validated") == 0 ? EXIT_OK
		    : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "inputError")) ? EXIT_USAGE : EXIT_SOMEFAIL;
	}
done:
	cJSON_Delete(res);
	cli_conn_free(&conn);
	return rc;
}

const cli_command cli_cmd_validate = {
	.name = "validate", .fn = cmd_validate, .options = options,
	.summary = "llama-perplexity stock vs shim in a guest: the kernels compute the same",
	.usage =
	    "validate VM | --host user@addr[:port] | --hosts FILE [VM...] --model PATH [--text FILE] [--chunks N]\n"
	    "      [--llama-perplexity PATH] [--evidence DIR] [--image REF] [PAYLOAD FLAGS]\n\n"
	    "Proves that the kernels the shim unlocks compute what the stock ones do, with llama.cpp's own\n"
	    "tool. Uploads the payload and the text to a scratch directory in the guest and runs there,\n"
	    "with the same model and text:\n"
	    "  1. stock: llama-perplexity -m M -f TEXT -c 512 --chunks N (saves its logits)\n"
	    "  2. shim:  run-with-shim llama-perplexity -m M -c 512 (compares with them)\n"
	    "  both with --kl-divergence-base B; the shim arm adds --kl-divergence;\n"
	    "and reads Mean PPL(Q)/PPL(base), Mean KLD, 99.9% KLD and Same top p, each arm's\n"
	    "ggml_metal_device_init lines (ggml_metal_init before about b6500) and its own error lines:\n"
	    "llama-perplexity exits 0 after them (\"you need at least N tokens\": the text must hold 2 x\n"
	    "context tokens; one under 2 x context bytes is refused before anything runs).\n"
	    "Pass: both arms exit 0 without an error line, the shim arm took the simdgroup paths and\n"
	    "the stock arm did not, mean KLD <= 0.01, same top token >= 97%, PPL ratio within 0.01 of 1\n"
	    "(the workload manifest's \"validation\" object sets them). A pass or a fail is recorded per\n"
	    "image version (kind validate: figures, model, text and llama.cpp build); a workload with\n"
	    "\"requireValidation\" deploys only to a version whose last validate record passed. Exit 0\n"
	    "validated, 1 validation failed or could not run, 2 bad input (no model or llama-perplexity in\n"
	    "the guest, a text too short). Progress per arm goes to stderr.\n\n"
	    "With --hosts FILE: every VM the hosts list (VM names filter them), as deploy reaches them.\n"
	    "One VM of each image version runs the two arms and records the verdict once; a version is\n"
	    "the image digest and the Mac's chip, model and build, so Macs that differ validate apart.\n"
	    "The other VMs of that version wait for it and report its verdict: validated or\n"
	    "validation-failed, the message and \"validatedBy\" naming the VM that ran it (or skipped when\n"
	    "that run recorded none: failed, timeout). One line per VM, then a summary, as deploy's; exit 0\n"
	    "when every VM is validated, 1 otherwise. --evidence DIR then holds one directory per VM that\n"
	    "ran (HOST_VM).\n\n"
	    "  --model PATH            the model's path in the guest (required)\n"
	    "  --text FILE             a text on this host (default: the workload's, under manifests/)\n"
	    "  --chunks N              chunks of 512 tokens (default: the workload's, 8); fewer than 100\n"
	    "                          positions print no statistics, which is an error, not a pass\n"
	    "  --llama-perplexity P    its name or path in the guest (default llama-perplexity, looked up in\n"
	    "                          /opt/homebrew/bin and /usr/local/bin first: a non-login SSH shell's\n"
	    "                          PATH on macOS has neither)\n"
	    "  --evidence DIR          a new directory: each arm's stdout and stderr (their last MiB),\n"
	    "                          record.json and SHA256SUMS\n"
	    "  --image REF             the image reference for the ledger (default: the guest's image.json)\n"
	    "  --timeout SECONDS       defaults to 3600 here: a large model's stock arm runs on the slow\n"
	    "                          kernels, about ten times the shim arm's time\n"
	    CLI_PAYLOAD_HELP CLI_ORDER_HELP CLI_CONN_HELP,
	.examples = "  lume-metal validate tahoe-1 --model ~/models/tinyllama.gguf\n"
	    "  lume-metal validate tahoe-1 --model ~/m.gguf --chunks 16 --evidence ev/ --json\n"
	    "  lume-metal validate --hosts macs.txt --model ~/m.gguf --order input\n",
};

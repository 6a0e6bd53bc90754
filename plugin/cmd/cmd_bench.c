/* lume-metal bench: llama-bench in one VM stock and through run-with-shim (and on this host),
 * side by side, as evidence and a ledger record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench.h"
#include "cmd/cli.h"
#include "ops/bench_vm.h"

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	CLI_CONN_OPTIONS,
	{"model", required_argument, NULL, 'm'}, {"llama-bench", required_argument, NULL, 'L'},
	{"host-baseline", no_argument, NULL, 'H'}, {"host-llama-bench", required_argument, NULL, 'B'},
	{"host-model", required_argument, NULL, 'M'}, {"threads", required_argument, NULL, 'T'},
	{"allow-different-model", no_argument, NULL, 'A'}, {"min-samples", required_argument, NULL, 'S'},
	{"evidence", required_argument, NULL, 'E'}, {"workload", required_argument, NULL, 'W'},
	{"image", required_argument, NULL, 'I'}, {NULL, 0, NULL, 0},
};

static int
cmd_bench(int argc, char **argv)
{
	bench_vm_opts b = {.llama_bench = "llama-bench", .p = 512, .n = 128, .r = 10,
		.min_samples = BENCH_MIN_SAMPLES};
	session_opts o = {.bench = &b};
	cli_conn conn;
	cJSON *res = NULL;
	lm_buf text = {0};
	char err[LM_ERRLEN];
	int c, rc = EXIT_OK;

	cli_conn_init(&conn);
	while (rc == EXIT_OK && (c = cli_getopt(argc, argv, "bench", CLI_CONN_SHORT "p:n:r:", options)) != -1) {
		int f = cli_conn_flag(&conn, c, optarg, "bench");

		if (f != 0) {
			rc = f < 0 ? EXIT_USAGE : EXIT_OK;
			continue;
		}
		switch (c) {
		case 'm': b.model = optarg; break;
		case 'L': b.llama_bench = optarg; break;
		case 'H': b.host_baseline = 1; break;
		case 'B': b.host_llama_bench = optarg; break;
		case 'M': b.host_model = optarg; break;
		case 'A': b.allow_different_model = 1; break;
		case 'E': b.evidence = optarg; break;
		case 'W': b.workload = optarg; break;
		case 'I': o.image = optarg; break;
		case 'p': rc = cli_number(optarg, "-p", "bench", 0, 100000, &b.p) < 0 ? EXIT_USAGE : EXIT_OK; break;
		case 'n': rc = cli_number(optarg, "-n", "bench", 0, 100000, &b.n) < 0 ? EXIT_USAGE : EXIT_OK; break;
		case 'r': rc = cli_number(optarg, "-r", "bench", 1, 100000, &b.r) < 0 ? EXIT_USAGE : EXIT_OK; break;
		case 'T': rc = cli_number(optarg, "--threads", "bench", 1, 100000, &b.threads) < 0 ? EXIT_USAGE : EXIT_OK; break;
		case 'S': rc = cli_number(optarg, "--min-samples", "bench", 1, 100000, &b.min_samples) < 0 ? EXIT_USAGE : EXIT_OK; break;
		default: rc = EXIT_USAGE;
		}
	}
	if (rc != EXIT_OK)
		goto done;
	if (b.model == NULL) {
		rc = cli_error(EXIT_USAGE, "bench: --model PATH (the model's path in the guest) is required");
		goto done;
	}
	if (argc - optind + (int)conn.r.nhosts != 1 || conn.r.all) {
		rc = cli_error(EXIT_USAGE, "bench: takes exactly one VM (a Lume name or --host user@addr[:port])");
		goto done;
	}
	if ((rc = cli_state_readable(&conn, "bench")) != EXIT_OK ||
	    (conn.r.nhosts && (rc = cli_host_check(conn.r.hosts[0], "bench")) != EXIT_OK))
		goto done;
	{
		guest_target *t = NULL;

		/* a benchmark runs longer than a deploy */
		if ((rc = cli_one_vm(&t, &conn, argv[optind], &o, 3600)) != EXIT_OK)
			goto done;
		bench_vm_run(&res, t, &o, err);
		ops_one_vm_free(t);
	}
	if (conn.json) {
		cli_print_json(res);
	} else {
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(res, "message");
		const cJSON *tab = cJSON_GetObjectItemCaseSensitive(res, "bench");

		if (tab && bench_render(&text, tab, BENCH_TEXT, NULL, err) == LM_OK)
			cli_text(stdout, text.data, 1);
		cli_printf("%s: %s%s%s\n", cJSON_GetObjectItemCaseSensitive(res, "vm")->valuestring,
		    cJSON_GetObjectItemCaseSensitive(res, "state")->valuestring, cJSON_IsString(msg) ? ": " : "",
		    cJSON_IsString(msg) ? msg->valuestring : "");
	}
	{
		const char *st = cJSON_GetObjectItemCaseSensitive(res, "state")->valuestring;

		rc = strcmp(st, "benchmarked") == 0 ? EXIT_OK
		    : cJSON_IsString(cJSON_GetObjectItemCaseSensitive(res, "message")) &&
			strstr(cJSON_GetObjectItemCaseSensitive(res, "message")->valuestring, "not found") ? EXIT_USAGE
		    : EXIT_SOMEFAIL;
	}
done:
	cJSON_Delete(res);
	lm_buf_free(&text);
	cli_conn_free(&conn);
	return rc;
}

const cli_command cli_cmd_bench = {
	.name = "bench", .fn = cmd_bench, .options = options,
	.summary = "llama-bench stock vs shim (vs bare metal) in a guest, as evidence",
	.usage =
	    "bench VM | --host user@addr[:port] --model PATH [--llama-bench PATH] [-p 512 -n 128 -r 10]\n"
	    "      [--threads N] [--host-baseline [--host-llama-bench PATH] [--host-model PATH]]\n"
	    "      [--allow-different-model] [--min-samples N] [--evidence DIR] [--workload NAME] [--image REF]\n\n"
	    "Runs llama-bench -o json in the guest twice with identical arguments, stock and through the\n"
	    "installed release's run-with-shim (deploy first), and with --host-baseline on this host too.\n"
	    "Hashes llama-bench and the model on each side first (a guest model that differs from the\n"
	    "host's is refused unless --allow-different-model). Figures are medians of samples_ts; the\n"
	    "stderr shows which Metal path each arm took, and a shim arm on the stock path is reported as\n"
	    "shim-not-effective (exit 1). Writes one ledger record and, with --evidence, a new directory:\n"
	    "raw JSON and stderr of every arm, results.csv, metadata.md, SHA256SUMS. --timeout defaults\n"
	    "to 3600 here.\n" CLI_CONN_HELP,
	.examples = "  lume-metal bench tahoe-1 --model ~/models/tinyllama.gguf --host-baseline --evidence ev/\n",
};

/* lume-metal build: writes the payload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "cmd/cli.h"
#include "ops/payloads.h"

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	{"target", required_argument, NULL, 't'}, {"profile", required_argument, NULL, 'p'},
	{"workload", required_argument, NULL, 'w'}, {"output", required_argument, NULL, 'o'},
	{"json", no_argument, NULL, 'j'}, {"format", required_argument, NULL, 'F'}, {NULL, 0, NULL, 0},
};

static int
cmd_build(int argc, char **argv)
{
	payload_build_opts o = {.datadir = cli_datadir(), .target = "macos", .workload = "llama-server"};
	char err[LM_ERRLEN], defout[64];
	payload_info *info;
	struct stat st;
	int c, json = 0, rc;

	while ((c = cli_getopt(argc, argv, "build", "o:", options)) != -1) {
		switch (c) {
		case 't': o.target = optarg; break;
		case 'p': o.profile = optarg; break;
		case 'w': o.workload = optarg; break;
		case 'o': o.out = optarg; break;
		case 'j': json = 1; break;
		case 'F': if (cli_format(optarg, "build", &json) < 0) return EXIT_USAGE; break;
		default: return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_error(EXIT_USAGE, "build: unexpected argument '%s'", argv[optind]);
	if (o.out != NULL && stat(o.out, &st) == 0 && S_ISDIR(st.st_mode))
		return cli_error(EXIT_USAGE, "build: -o %s: is a directory; -o names the file to write "
		    "(e.g. DIR/lume-metal-%s.tar.gz)", o.out, o.target);
	if (o.out == NULL) {
		snprintf(defout, sizeof defout, "lume-metal-%s.tar.gz", o.target);
		o.out = defout;
	}
	if ((rc = ops_payload_build(&info, &o, err)) != LM_OK)
		return cli_fail(rc, err);
	cli_print_payload(info, o.out, json);
	ops_payload_free(info);
	return EXIT_OK;
}

const cli_command cli_cmd_build = {
	.name = "build", .fn = cmd_build, .options = options,
	.summary = "write the deterministic, checksummed payload",
	.usage =
	    "build [--target macos|linux-sim] [--profile ID] [--workload ID] [-o FILE] [--json]\n\n"
	    "Writes one tar.gz holding MANIFEST.json, SHA256SUMS, the shim and probe for the target,\n"
	    "the profile, the rendered LaunchAgent and the guest scripts, and FILE.sha256 beside it.\n"
	    "Two builds of the same tree are byte-identical. Prints the payload's SHA-256.\n\n"
	    "  --target T     macos (default) or linux-sim (the Linux test build, simulated device)\n"
	    "  --profile ID   capability profile (default: the workload's)\n"
	    "  --workload ID  workload definition (default: llama-server)\n"
	    "  -o FILE        output (default: lume-metal-TARGET.tar.gz); also --output FILE\n"
	    "  --json         print the result as JSON (--format json|text: the same, or text)\n",
	.examples = "  lume-metal build\n"
	    "  lume-metal build --target linux-sim --profile m1-ultra-tahoe-26.5 -o sim.tar.gz --json\n",
};

/* lume-metal verify: checks a payload. */
#include <stdio.h>

#include "cmd/cli.h"
#include "ops/payloads.h"

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	{"sha256-file", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'}, {"format", required_argument, NULL, 'F'},
	{NULL, 0, NULL, 0},
};

static int
cmd_verify(int argc, char **argv)
{
	const char *sha = NULL;
	char err[LM_ERRLEN];
	payload_info *info;
	int c, json = 0, rc;

	while ((c = cli_getopt(argc, argv, "verify", "", options)) != -1) {
		switch (c) {
		case 's': sha = optarg; break;
		case 'j': json = 1; break;
		case 'F': if (cli_format(optarg, "verify", &json) < 0) return EXIT_USAGE; break;
		default: return EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return cli_error(EXIT_USAGE, "verify: takes one FILE; see 'lume-metal help verify'");
	if ((rc = ops_payload_verify(&info, argv[optind], sha, err)) != LM_OK)
		return cli_fail(rc, err);
	cli_print_payload(info, argv[optind], json);
	ops_payload_free(info);
	return EXIT_OK;
}

const cli_command cli_cmd_verify = {
	.name = "verify", .fn = cmd_verify, .options = options,
	.summary = "check a payload against its manifest and checksum",
	.usage =
	    "verify FILE [--sha256-file F] [--json]\n\n"
	    "Reads FILE back and checks every entry against MANIFEST.json, and FILE against\n"
	    "FILE.sha256 (or F). Exit 2 names the first bad entry: a changed byte, a missing or extra\n"
	    "entry, an absolute path, .., a link, a device file, or an entry over 64 MiB.\n",
	.examples = "  lume-metal verify lume-metal-macos.tar.gz\n"
	    "  lume-metal verify payload.tgz --sha256-file payload.tgz.sha256 --format json\n",
};

/* lume-metal verify: checks a payload. */
#include <stdio.h>

#include "cmd/cli.h"
#include "ops/payloads.h"

int
cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{"sha256-file", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'}, {"format", required_argument, NULL, 'F'},
		{NULL, 0, NULL, 0},
	};
	const char *sha = NULL;
	char err[LM_ERRLEN];
	payload_info *info;
	int c, json = 0, rc;

	while ((c = cli_getopt(argc, argv, "verify", "", opts)) != -1) {
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

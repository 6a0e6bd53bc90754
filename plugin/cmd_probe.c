/* lume-metal probe: the capability probe stock and shimmed in each VM; installs nothing. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int
cmd_probe(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_CONN_OPTIONS,
		{"target", required_argument, NULL, 't'}, {"profile", required_argument, NULL, 'p'},
		{"workload", required_argument, NULL, 'w'}, {"payload", required_argument, NULL, 'f'},
		{NULL, 0, NULL, 0},
	};
	const char *target = "macos", *profile = NULL, *workload = "llama-server", *file = NULL;
	deploy_opts o = {0};
	payload_info *info = NULL;
	char *path = NULL;
	cli_conn conn;
	int c, rc;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "probe", CLI_CONN_SHORT, opts)) != -1) {
		if ((rc = cli_conn_flag(&conn, c, optarg, "probe")) != 0) {
			if (rc < 0)
				return EXIT_USAGE;
			continue;
		}
		switch (c) {
		case 't': target = optarg; break;
		case 'p': profile = optarg; break;
		case 'w': workload = optarg; break;
		case 'f': file = optarg; break;
		default: return EXIT_USAGE;
		}
	}
	if ((rc = cli_conn_check(&conn, argc - optind, "probe")) != EXIT_OK ||
	    (rc = cli_payload(&info, &path, file, target, profile, workload, conn.state)) != EXIT_OK)
		goto done;
	o.payload = path;
	o.info = info;
	rc = cli_run_vms(&conn, argc - optind, argv + optind, deploy_probe, &o, "probe");
done:
	payload_info_free(info);
	free(path);
	cli_conn_free(&conn);
	return rc;
}

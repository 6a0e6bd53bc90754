/* lume-metal: the command table, in the manner of git.c. */
#include <stdarg.h>
#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"

/* The commands, in the order --help lists them; each one's options, usage and examples are in
 * its cmd_<name>.c. */
const cli_command *const cli_commands[] = {
	&cli_cmd_build,
	&cli_cmd_verify,
	&cli_cmd_probe,
	&cli_cmd_deploy,
	&cli_cmd_golden,
	&cli_cmd_status,
	&cli_cmd_rollback,
	&cli_cmd_ledger,
	&cli_cmd_key,
	&cli_cmd_inventory,
	&cli_cmd_host,
	&cli_cmd_bench,
	&cli_cmd_validate,
	&cli_cmd_report,
	&cli_cmd_config,
	NULL,
};

static int
usage(FILE *f)
{
	fprintf(f, "usage: lume-metal [--version] [--help] COMMAND [ARGS]\n\n"
	    "Makes the Metal capability shim safe to run across a fleet of Lume guests.\n\n");
	for (size_t i = 0; cli_commands[i]; i++)
		fprintf(f, "  %-9s %s%s\n", cli_commands[i]->name, cli_commands[i]->summary,
		    cli_commands[i]->issue ? " (not built yet)" : "");
	fprintf(f, "\n'lume-metal help COMMAND' shows one command's flags.\n"
	    "Exit codes: 0 all good, 1 some VM failed, 2 usage or input error, 3 refused by a\n"
	    "gate, 130 interrupted (Ctrl-C once: running VMs finish and are recorded; twice:\n"
	    "they are abandoned).\n"
	    "Data (guest scripts, manifests, shim): $LUME_METAL_DATADIR, else the installed\n"
	    "PREFIX/share/lume-metal, else the source tree; 'lume-metal --version' shows which.\n");
	return f == stdout ? EXIT_OK : EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	const cli_command *c;
	int too_long, rc = ops_process_init(&too_long);

	if (too_long)
		fprintf(stderr, "lume-metal: warning: $LUME_METAL_PASSWORD is too long (1023 bytes at most); not using it\n");
	if (rc != LM_OK)
		return cli_error(EXIT_SOMEFAIL, "libssh2_init failed");
	/* A guest or relay socket that closes under a write is an error to report, not a death. */
	signal(SIGPIPE, SIG_IGN);
#ifdef M_ARENA_MAX
	/* glibc gives each pool thread its own arena (~220 KB resident each); the pool's threads
	 * wait on the network, not on malloc, so two arenas do: 256 guests at once fit in 64 MB. */
	mallopt(M_ARENA_MAX, 2);
#endif

	if (argc < 2)
		return usage(stderr);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return usage(stdout);
	if (strcmp(argv[1], "--version") == 0)
		return cli_version();
	if (strcmp(argv[1], "help") == 0)
		return argc > 3 && strcmp(argv[2], "--flags") == 0 ? cli_help_flags(argv[3]) :
		    argc > 2 ? cli_help(argv[2]) : usage(stdout);
	if (argv[1][0] == '-')
		return cli_error(EXIT_USAGE, "unknown flag '%s'; see 'lume-metal --help'", argv[1]);
	if ((c = cli_find(argv[1])) == NULL)
		return cli_error(EXIT_USAGE, "'%s' is not a lume-metal command; see 'lume-metal --help'", argv[1]);
	/* CMD --help and CMD -h are help CMD. */
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return cli_help(c->name);
	if (c->fn == NULL)
		return cli_error(EXIT_USAGE, "%s: not built yet (arrives with issue %s)", c->name, c->issue);
	return c->fn(argc - 1, argv + 1);
}

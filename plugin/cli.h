/* cli: the command table's shared pieces. Only main.c and cmd_*.c print or exit. */
#ifndef LM_CLI_H
#define LM_CLI_H

#include <getopt.h>

#include "payload.h"
#include "util.h"

/* Exit codes of the design. */
enum { EXIT_OK = 0, EXIT_SOMEFAIL = 1, EXIT_USAGE = 2, EXIT_REFUSED = 3 };

typedef struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage; /* the full help text after "usage: lume-metal " */
	const char *issue; /* set while the command is not built yet */
} cli_command;

const cli_command *cli_find(const char *name);

/* Prints "lume-metal: MSG" to stderr and returns code (git's error() habit). */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Maps a module's error code to the design's exit code, printing err. */
int cli_fail(int rc, const char *err);

/* Prints the usage of a command to stdout (help) and returns 0. */
int cli_help(const char *name);

/* getopt_long with the house rules: "-h/--help" prints help, an unknown flag is exit 2.
 * Returns the option, -1 at the end, or '?' after printing the reason. */
int cli_getopt(int argc, char **argv, const char *cmd, const char *shortopts, const struct option *longopts);

/* Where guest-payload/, manifests/ and build/ are: $LUME_METAL_DATADIR or the build tree. */
const char *cli_datadir(void);

/* Prints a payload's identity as text or, with json, one JSON object. */
void cli_print_payload(const payload_info *p, const char *path, int json);

int cmd_build(int argc, char **argv);
int cmd_verify(int argc, char **argv);

#endif

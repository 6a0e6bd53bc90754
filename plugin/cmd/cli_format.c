/* cli_format: --format, as Lume spells it: json or text, and for the commands that make one, a
 * document of render.h (junit, openmetrics). */
#include <stddef.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/render.h"

/* The documents beside json and text, and the commands that make each (render.h). */
static const struct {
	const char *name;
	int doc;
	const char *cmds; /* " deploy status ..." */
} formats[] = {
	{"junit", RENDER_JUNIT, " deploy status rollback validate golden "},
	{"openmetrics", RENDER_OPENMETRICS, " status "},
};

/* Whether formats[k] is made by cmd. */
static int
makes(int k, const char *cmd)
{
	const char *p = strstr(formats[k].cmds, cmd);

	return cmd[0] != '\0' && p != NULL && p[-1] == ' ' && p[strlen(cmd)] == ' ';
}

/* What cmd's --format error lists beside json and text, or NULL: nothing. */
static const char *
doc_formats(const char *cmd)
{
	int a = makes(0, cmd), b = makes(1, cmd);

	return a && b ? "junit or openmetrics" : a ? "junit" : b ? "openmetrics" : NULL;
}

/* The render_doc arg names for cmd, RENDER_NONE when cmd makes no such document. */
static int
doc_format(const char *arg, const char *cmd)
{
	for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++)
		if (strcmp(arg, formats[k].name) == 0 && makes((int)k, cmd))
			return formats[k].doc;
	return RENDER_NONE;
}

int
cli_format(const char *arg, const char *cmd, int *json)
{
	if (strcmp(arg, "json") == 0 || strcmp(arg, "text") == 0) {
		*json = arg[0] == 'j';
		return 1;
	}
	cli_error(EXIT_USAGE, "%s: --format %s: not json or text", cmd, arg);
	return -1;
}

int
cli_conn_format(cli_conn *c, const char *arg, const char *cmd)
{
	const char *docs = doc_formats(cmd);
	int d = doc_format(arg, cmd);

	if (d != RENDER_NONE || docs == NULL || strcmp(arg, "json") == 0 || strcmp(arg, "text") == 0) {
		c->doc = d;
		return d != RENDER_NONE ? (c->json = 0, 1) : cli_format(arg, cmd, &c->json);
	}
	cli_error(EXIT_USAGE, "%s: --format %s: not json, text, %s", cmd, arg, docs);
	return -1;
}

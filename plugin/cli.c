/* cli: helpers shared by main.c and the cmd_*.c files. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int
cli_error(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("lume-metal: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

int
cli_fail(int rc, const char *err)
{
	int code = rc == LM_EINPUT ? EXIT_USAGE : rc == LM_EREFUSED ? EXIT_REFUSED : EXIT_SOMEFAIL;

	return cli_error(code, "%s", err);
}

int
cli_getopt(int argc, char **argv, const char *cmd, const char *shortopts, const struct option *longopts)
{
	int idx = 0, c;

	opterr = 0;
	c = getopt_long(argc, argv, shortopts, longopts, &idx);
	if (c == '?') {
		if (optopt)
			cli_error(EXIT_USAGE, "%s: unknown flag or missing value: -%c", cmd, optopt);
		else
			cli_error(EXIT_USAGE, "%s: unknown flag or missing value: %s", cmd, argv[optind - 1]);
	} else if (c == ':')
		c = '?';
	return c;
}

const char *
cli_datadir(void)
{
	const char *d = getenv("LUME_METAL_DATADIR");

	return d && *d ? d : LM_DATADIR;
}

/* Prints a payload's identity, as text or as one JSON object. */
void
cli_print_payload(const payload_info *p, const char *path, int json)
{
	if (json) {
		cJSON *o = cJSON_CreateObject();
		char *s;

		cJSON_AddStringToObject(o, "path", path);
		cJSON_AddStringToObject(o, "sha256", p->sha256);
		cJSON_AddNumberToObject(o, "size", (double)p->size);
		cJSON_AddNumberToObject(o, "files", p->nfiles);
		cJSON_AddNumberToObject(o, "placeholders", p->placeholders);
		cJSON_AddStringToObject(o, "target", p->target);
		cJSON_AddStringToObject(o, "profile", p->profile);
		cJSON_AddStringToObject(o, "workload", p->workload);
		cJSON_AddStringToObject(o, "label", p->label);
		cJSON_AddStringToObject(o, "version", p->version);
		s = cJSON_PrintUnformatted(o);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(o);
		return;
	}
	printf("%s  %s\n", p->sha256, path);
	printf("# %s payload %s: target %s, profile %s, workload %s, %d files, %ju bytes\n",
	    p->placeholders ? "PLACEHOLDER" : "ok", p->version, p->target, p->profile, p->workload,
	    p->nfiles, (uintmax_t)p->size);
}


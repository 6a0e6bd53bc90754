/* cli: helpers shared by main.c and the cmd_*.c files. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <sys/stat.h>

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
		cli_print_json(o);
		cJSON_Delete(o);
		return;
	}
	printf("%s  %s\n", p->sha256, path);
	printf("# %s payload %s: target %s, profile %s, workload %s, %d files, %ju bytes\n",
	    p->placeholders ? "PLACEHOLDER" : "ok", p->version, p->target, p->profile, p->workload,
	    p->nfiles, (uintmax_t)p->size);
}


void
cli_conn_init(cli_conn *c)
{
	static char state[4096], known[4096];
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	memset(c, 0, sizeof *c);
	if (xdg && *xdg)
		snprintf(state, sizeof state, "%s/lume-metal", xdg);
	else
		snprintf(state, sizeof state, "%s/.local/state/lume-metal", home ? home : ".");
	snprintf(known, sizeof known, "%s/.ssh/known_hosts", home ? home : ".");
	c->state = state;
	c->lume = "lume";
	c->ssh.user = "lume";
	c->ssh.known_hosts = known;
	c->ssh.env_password = 1;
	c->timeout_s = 120;
	c->fleet.parallel = 32;
	c->fleet.max_fail = c->fleet.max_fail_pct = -1;
	c->port = 22;
	c->target = "macos";
	c->workload = "llama-server";
}

int
cli_number(const char *arg, const char *flag, const char *cmd, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (*arg == '\0' || *end != '\0' || v < lo || v > hi) {
		cli_error(EXIT_USAGE, "%s: %s %s: not a whole number from %d to %d", cmd, flag, arg, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 1;
}

/* "N" into *n, or "P%" (1..100) into *pct. */
static int
count_or_pct(const char *arg, const char *flag, const char *cmd, int lo, int *n, int *pct)
{
	size_t len = strlen(arg);
	char num[16];

	if (len > 1 && len < sizeof num && arg[len - 1] == '%') {
		snprintf(num, sizeof num, "%.*s", (int)len - 1, arg);
		if (cli_number(num, flag, cmd, lo, 100, pct) < 0)
			return -1;
		*n = -1;
		return 1;
	}
	if (cli_number(arg, flag, cmd, lo, 100000, n) < 0)
		return -1;
	*pct = -1;
	return 1;
}

int
cli_conn_flag(cli_conn *c, int opt, const char *arg, const char *cmd)
{
	switch (opt) {
	case 'u': c->ssh.user = arg; return 1;
	case 'i': c->ssh.identity = arg; return 1;
	case 1001: c->ssh.password_file = arg; return 1;
	case 1002: c->ssh.known_hosts = arg; return 1;
	case 1003: c->ssh.accept_new = 1; return 1;
	case 1004: {
		const char **h = reallocarray(c->hosts, c->nhosts + 1, sizeof *h);

		if (h == NULL)
			return -1;
		h[c->nhosts++] = arg;
		c->hosts = h;
		return 1;
	}
	case 1005: return cli_number(arg, "--timeout", cmd, 1, 86400, &c->timeout_s);
	case 1006: return cli_number(arg, "--parallel", cmd, 1, 1024, &c->fleet.parallel);
	case 1030: return cli_number(arg, "--canary", cmd, 1, 100000, &c->fleet.canary);
	case 1031: return count_or_pct(arg, "--batch", cmd, 1, &c->fleet.batch, &c->fleet.batch_pct);
	case 1032: return count_or_pct(arg, "--max-fail", cmd, 0, &c->fleet.max_fail, &c->fleet.max_fail_pct);
	case 1033: c->fleet.rollback_on_fail = 1; return 1;
	case 1007: c->state = arg; return 1;
	case 1008: c->json = 1; return 1;
	case 1009: c->lume = arg; return 1;
	case 1010: return cli_number(arg, "--wait", cmd, 0, 86400, &c->wait_s);
	case 1011: c->all = 1; return 1;
	case 1012: c->ssh.lume_default_password = 1; return 1;
	case 1013: return cli_number(arg, "--port", cmd, 1, 65535, &c->port);
	case 1014: c->hosts_file = arg; return 1;
	case 1020: c->target = arg; return 1;
	case 1021: c->profile = arg; return 1;
	case 1022: c->workload = arg; return 1;
	case 1023: c->payload_file = arg; return 1;
	}
	return 0;
}

int
cli_conn_check(cli_conn *c, int nvms, const char *cmd)
{
	if (c->all && (nvms > 0 || c->nhosts > 0))
		return cli_error(EXIT_USAGE, "%s: --all takes no VM names or --host", cmd);
	if (!c->all && nvms == 0 && c->nhosts == 0 && c->hosts_file == NULL)
		return cli_error(EXIT_USAGE, "%s: name at least one VM, --host user@addr, --hosts FILE, or --all", cmd);
	if (c->ssh.lume_default_password)
		fprintf(stderr, "lume-metal: warning: --lume-default-password: trying Lume's published default "
		    "password; set a real one on any guest that is reachable by others\n");
	return EXIT_OK;
}

void
cli_conn_free(cli_conn *c)
{
	free(c->hosts);
	c->hosts = NULL;
	payload_info_free(c->info);
	c->info = NULL;
	free(c->payload);
	c->payload = NULL;
}

int
cli_conn_payload(cli_conn *c, deploy_opts *o)
{
	payload_build_opts b = {.datadir = cli_datadir(), .target = c->target, .profile = c->profile,
		.workload = c->workload};
	payload_info **info = &c->info;
	char **path = &c->payload;
	const char *file = c->payload_file, *state = c->state, *target = c->target, *profile = c->profile,
		*workload = c->workload;
	char err[LM_ERRLEN], dir[4096], out[4400];
	int rc;

	*info = NULL;
	*path = NULL;
	if (file != NULL) {
		if ((rc = payload_verify(info, file, NULL, err)) != LM_OK)
			return cli_fail(rc, err);
		*path = strdup(file);
	} else {
		if (lm_fmt(dir, sizeof dir, "%s/payloads", state) < 0 || lm_fmt(out, sizeof out, "%s/lume-metal-%s-%s-%s.tar.gz",
		    dir, target, profile ? profile : "default", workload) < 0)
			return cli_error(EXIT_USAGE, "--state %s: path too long", state);
		if (strchr(out + strlen(dir) + 1, '/') != NULL)
			return cli_error(EXIT_USAGE, "--profile and --workload take ids here, not paths");
		if ((rc = lm_mkdirs(dir, err)) != LM_OK)
			return cli_fail(rc, err);
		b.out = out;
		if ((rc = payload_build(info, &b, err)) != LM_OK)
			return cli_fail(rc, err);
		*path = strdup(out);
	}
	if (*path == NULL)
		return cli_error(EXIT_SOMEFAIL, "out of memory");
	if ((*info)->placeholders > 0)
		return cli_error(EXIT_REFUSED, "%s: holds %d placeholder file(s); it cannot be deployed", *path,
		    (*info)->placeholders);
	o->payload = *path;
	o->info = *info;
	return EXIT_OK;
}

void
cli_print_json(const cJSON *v)
{
	char *s = cJSON_PrintUnformatted(v);

	printf("%s\n", s ? s : "null");
	free(s);
}

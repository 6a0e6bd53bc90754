/* cli: the flags every command shares, turned into the request ops takes (ops/request.h), and
 * getopt with the house rules. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"

/* Why getopt_long refused the long flag arg ("--name" or "--name=value"), printed. */
static void
bad_long(const char *cmd, const char *arg, const struct option *longopts, int missing)
{
	const char *name = arg + 2, *best = NULL, *match[3];
	size_t n = strcspn(name, "="), bestd = SIZE_MAX, nmatch = 0;
	const struct option *exact = NULL;

	for (const struct option *o = longopts; o->name; o++) {
		size_t d = lm_edits(name, n, o->name);

		if (strlen(o->name) == n && strncmp(o->name, name, n) == 0)
			exact = o;
		else if (n > 0 && strncmp(o->name, name, n) == 0 && nmatch < 3)
			match[nmatch++] = o->name;
		if (d < bestd)
			bestd = d, best = o->name;
	}
	if (missing || (exact && exact->has_arg == required_argument && name[n] == '\0'))
		cli_error(EXIT_USAGE, "%s: --%.*s needs a value", cmd, (int)n, name);
	else if (exact && name[n] == '=')
		cli_error(EXIT_USAGE, "%s: --%.*s takes no value", cmd, (int)n, name);
	else if (nmatch > 1)
		cli_error(EXIT_USAGE, "%s: --%.*s is ambiguous: --%s, --%s%s", cmd, (int)n, name, match[0], match[1],
		    nmatch > 2 ? ", ..." : "");
	else if (best && bestd <= (n / 3 > 1 ? n / 3 : 1))
		cli_error(EXIT_USAGE, "%s: unknown flag --%.*s; did you mean --%s?", cmd, (int)n, name, best);
	else
		cli_error(EXIT_USAGE, "%s: unknown flag --%.*s; see 'lume-metal help %s'", cmd, (int)n, name, cmd);
}

int
cli_getopt(int argc, char **argv, const char *cmd, const char *shortopts, const struct option *longopts)
{
	char so[64];
	const char *arg;
	int idx = 0, c, isl = 0;

	/* The leading ':' makes a missing value ':' rather than '?'. */
	if (lm_fmt(so, sizeof so, ":%s", shortopts) < 0)
		return cli_error(EXIT_USAGE, "%s: too many short flags", cmd), '?';
	opterr = 0;
	c = getopt_long(argc, argv, so, longopts, &idx);
	if (c != '?' && c != ':')
		return c;
	/* A long flag's error leaves optind past it; a short one's, in a cluster (-xy), may not. */
	arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	if (strncmp(arg, "--", 2) == 0 && arg[2] != '\0') {
		isl = optopt == 0;
		for (const struct option *o = longopts; !isl && o->name; o++)
			isl = o->val == optopt && strncmp(o->name, arg + 2, strcspn(arg + 2, "=")) == 0;
	}
	if (isl)
		bad_long(cmd, arg, longopts, c == ':');
	else if (optopt == 0 || optopt > 0x7f) /* not a short flag: say what getopt stopped at */
		cli_error(EXIT_USAGE, "%s: unknown flag or missing value near %s; see 'lume-metal help %s'", cmd, arg, cmd);
	else if (c == ':')
		cli_error(EXIT_USAGE, "%s: -%c needs a value", cmd, optopt);
	else
		cli_error(EXIT_USAGE, "%s: unknown flag -%c; see 'lume-metal help %s'", cmd, optopt, cmd);
	return '?';
}

const char *
cli_datadir(void)
{
	char note[LM_ERRLEN];
	const char *d = ops_datadir(note);

	if (*note)
		cli_error(EXIT_SOMEFAIL, "%s", note);
	return d;
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
	cli_printf("%s  %s\n", p->sha256, path);
	cli_printf("# %s payload %s: target %s, profile %s, workload %s, %d files, %ju bytes\n",
	    p->placeholders ? "PLACEHOLDER" : "ok", p->version, p->target, p->profile, p->workload,
	    p->nfiles, (uintmax_t)p->size);
}


void
cli_conn_init(cli_conn *c)
{
	memset(c, 0, sizeof *c);
	ops_request_init(&c->r);
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

/* A shared flag that sets a config key (ops_request_give): that key, else NULL. */
static const char *
flag_key(int opt)
{
	static const struct { int opt; const char *key; } map[] = {
		{'u', "user"}, {'i', "identity"}, {CLI_OPT_PASSWORD_FILE, "password-file"}, {CLI_OPT_KNOWN_HOSTS, "known-hosts"}, {CLI_OPT_STATE, "state"},
		{CLI_OPT_PARALLEL, "parallel"}, {CLI_OPT_LUME, "lume"},
	};

	for (size_t i = 0; i < sizeof map / sizeof *map; i++)
		if (map[i].opt == opt)
			return map[i].key;
	return NULL;
}

/* A path flag's value with a leading "~/" as $HOME/, as the config file's (the shell leaves
 * --state=~/x as typed); *out gets it, kept till exit. 1, or -1 said. */
static int
home_flag(const char **out, const char *arg, const char *flag, const char *cmd)
{
	static char **kept; /* reachable till exit, as the config file's values are */
	static size_t nkept;
	char **k, *v = NULL;
	int rc;

	*out = arg;
	if (strncmp(arg, "~/", 2) != 0)
		return 1;
	if ((rc = lm_home_expand(&v, arg, strlen(arg), 0)) != LM_OK || (k = realloc(kept, (nkept + 1) * sizeof *k)) == NULL) {
		free(v);
		cli_error(EXIT_USAGE, "%s: %s %s: %s", cmd, flag, arg,
		    rc == LM_EINPUT ? "~/ with no HOME set" : "out of memory");
		return -1;
	}
	kept = k;
	kept[nkept++] = v;
	*out = v;
	return 1;
}

int
cli_conn_flag(cli_conn *c, int opt, const char *arg, const char *cmd)
{
	if (flag_key(opt) != NULL)
		ops_request_give(&c->r, flag_key(opt));
	switch (opt) {
	case 'u': c->r.ssh.user = arg; return 1;
	case 'i': return home_flag(&c->r.ssh.identity, arg, "-i", cmd);
	case CLI_OPT_PASSWORD_FILE: return home_flag(&c->r.ssh.password_file, arg, "--password-file", cmd);
	case CLI_OPT_KNOWN_HOSTS: return home_flag(&c->r.ssh.known_hosts, arg, "--known-hosts", cmd);
	case CLI_OPT_ACCEPT_NEW: c->r.ssh.accept_new = 1; return 1;
	case CLI_OPT_HOST: {
		const char **h = reallocarray(c->r.hosts, c->r.nhosts + 1, sizeof *h);

		if (h == NULL)
			return -1;
		h[c->r.nhosts++] = arg;
		c->r.hosts = h;
		return 1;
	}
	case CLI_OPT_TIMEOUT: c->r.timeout_given = 1; return cli_number(arg, "--timeout", cmd, 1, 86400, &c->r.timeout_s);
	case CLI_OPT_PARALLEL: return cli_number(arg, "--parallel", cmd, 1, 1024, &c->r.fleet.parallel);
	case CLI_OPT_CANARY: return cli_number(arg, "--canary", cmd, 1, 100000, &c->r.fleet.canary);
	case CLI_OPT_BATCH: return count_or_pct(arg, "--batch", cmd, 1, &c->r.fleet.batch, &c->r.fleet.batch_pct);
	case CLI_OPT_MAX_FAIL: return count_or_pct(arg, "--max-fail", cmd, 0, &c->r.fleet.max_fail, &c->r.fleet.max_fail_pct);
	case CLI_OPT_ROLLBACK_ON_FAIL: c->r.fleet.rollback_on_fail = 1; return 1;
	case CLI_OPT_STATE: return home_flag(&c->r.state, arg, "--state", cmd);
	case CLI_OPT_JSON: c->json = 1, c->doc = 0; return 1;
	case CLI_OPT_FORMAT: return cli_conn_format(c, arg, cmd);
	case CLI_OPT_ORDER:
		if (strcmp(arg, "input") == 0 || strcmp(arg, "finish") == 0) {
			c->order_input = arg[0] == 'i';
			return 1;
		}
		cli_error(EXIT_USAGE, "%s: --order %s: not finish or input", cmd, arg);
		return -1;
	case CLI_OPT_LUME: return home_flag(&c->r.lume, arg, "--lume", cmd);
	case CLI_OPT_WAIT: return cli_number(arg, "--wait", cmd, 0, 86400, &c->r.wait_s);
	case CLI_OPT_ALL: c->r.all = 1; return 1;
	case CLI_OPT_LUME_DEFAULT_PASSWORD: c->r.ssh.lume_default_password = 1; return 1;
	case CLI_OPT_PORT: return cli_number(arg, "--port", cmd, 1, 65535, &c->r.port);
	case CLI_OPT_HOSTS: c->r.hosts_file = arg; return 1;
	case CLI_OPT_TARGET: c->r.target = arg; return 1;
	case CLI_OPT_PROFILE: c->r.profile = arg; return 1;
	case CLI_OPT_WORKLOAD: c->r.workload = arg; return 1;
	case CLI_OPT_PAYLOAD: c->r.payload_file = arg; return 1;
	}
	return 0;
}

int
cli_validate_flag(cli_validate *v, int opt, const char *arg, const char *cmd)
{
	switch (opt) {
	case CLI_OPT_MODEL: v->v.model = arg; return 1;
	case CLI_OPT_TEXT: v->text_flag = arg; return 1;
	case CLI_OPT_CHUNKS: return cli_number(arg, "--chunks", cmd, 1, 100000, &v->chunks);
	case CLI_OPT_LLAMA_PERPLEXITY: v->v.llama_perplexity = arg; return 1;
	case CLI_OPT_VALIDATE_WORKLOAD: v->asked = 1; return 1;
	}
	return 0;
}

int
cli_validate_setup(cli_validate *v, cli_conn *c, session_opts *o, int run, const char *cmd)
{
	char err[LM_ERRLEN];

	if (ops_validation_setup(v, &c->r, cli_datadir(), o, run, err) != LM_OK)
		return cli_error(EXIT_USAGE, "%s: %s", cmd, err);
	return EXIT_OK;
}

int
cli_one_vm(guest_target **out, cli_conn *c, const char *vm, session_opts *o, int long_timeout_s)
{
	char err[LM_ERRLEN];
	int rc = ops_one_vm(out, &c->r, vm, o, long_timeout_s, err);

	return rc == LM_OK ? EXIT_OK : cli_fail(rc, err);
}

int
cli_host_check(const char *spec, const char *cmd)
{
	char err[LM_ERRLEN];

	if (ops_host_check(spec, err) != LM_OK)
		return cli_error(EXIT_USAGE, "%s: %s", cmd, err);
	return EXIT_OK;
}

const char *
cli_conn_setting(const cli_conn *c, const char *key)
{
	return ops_request_setting(&c->r, key);
}

int
cli_conn_ready(cli_conn *c, const char *cmd)
{
	char err[LM_ERRLEN];

	if (ops_request_ready(&c->r, err) != LM_OK)
		return cli_error(EXIT_USAGE, "%s: %s", cmd, err);
	return EXIT_OK;
}

int
cli_state_readable(cli_conn *c, const char *cmd)
{
	char err[LM_ERRLEN];

	if (ops_request_readable(&c->r, err) != LM_OK)
		return cli_error(EXIT_USAGE, "%s: %s", cmd, err);
	return EXIT_OK;
}

int
cli_conn_check(cli_conn *c, int nvms, const char *cmd)
{
	int rc;

	if ((rc = cli_state_readable(c, cmd)) != EXIT_OK)
		return rc;
	for (size_t i = 0; i < c->r.nhosts; i++)
		if ((rc = cli_host_check(c->r.hosts[i], cmd)) != EXIT_OK)
			return rc;
	if (c->r.all && (nvms > 0 || c->r.nhosts > 0))
		return cli_error(EXIT_USAGE, "%s: --all takes no VM names or --host", cmd);
	if (!c->r.all && nvms == 0 && c->r.nhosts == 0 && c->r.hosts_file == NULL)
		return cli_error(EXIT_USAGE, "%s: name at least one VM, --host user@addr, --hosts FILE, or --all", cmd);
	if (c->r.ssh.lume_default_password)
		fprintf(stderr, "lume-metal: warning: --lume-default-password: trying Lume's published default "
		    "password; set a real one on any guest that is reachable by others\n");
	return EXIT_OK;
}

void
cli_conn_free(cli_conn *c)
{
	ops_request_free(&c->r);
}

int
cli_conn_payload(cli_conn *c, session_opts *o)
{
	char err[LM_ERRLEN];
	int rc = ops_payload(&c->r, cli_datadir(), o, err);

	return rc == LM_OK ? EXIT_OK : cli_fail(rc, err);
}

/* cli: helpers shared by main.c and the cmd_*.c files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <netdb.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "core/config.h"
#include "core/datadir.h"
#include "core/ledger.h"
#include "core/manifest.h"

/* Terminal-safe text. Everything a guest, a Mac host, the ledger or a file sends back goes
 * through here before a terminal: printed raw, "\033[2J\033]0;pwned\007" would clear the screen
 * and retitle the window, and "\r\033[1A\033[2Kgood deployed" would rewrite an earlier line. */

/* The length of the well-formed UTF-8 sequence at s (n bytes there), its code point in *cp;
 * 0 when s starts no such sequence (a stray, overlong, surrogate or out-of-range encoding). */
static size_t
utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 :
	    s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;

	if (len == 0 || n < len)
		return 0;
	*cp = s[0] & (0x7fu >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3fu);
	}
	if ((len == 3 && *cp < 0x800) || (len == 4 && (*cp < 0x10000 || *cp > 0x10ffff)) ||
	    (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

/* A code point a terminal acts on or that reorders what it shows: the C1 controls U+0080..U+009F
 * (U+009B is CSI) and the bidirectional embeddings, overrides and isolates. */
static int
unsafe_cp(uint32_t cp)
{
	return cp <= 0x9f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Appends n bytes of s to b: printable ASCII and well-formed UTF-8 as they are; \n (unless
 * keep_nl), \r and \t as those two characters; every other C0 control, DEL, a C1 control or
 * bidi override (each of its bytes) and a byte that is not UTF-8 as \xNN. */
static int
escape(lm_buf *b, const char *s, size_t n, int keep_nl)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t run = i, len;
		uint32_t cp;

		while (run < n && p[run] >= 0x20 && p[run] < 0x7f)
			run++;
		if (run > i && lm_buf_add(b, p + i, run - i) != 0)
			return -1;
		if ((i = run) >= n)
			break;
		if ((len = utf8_seq(p + i, n - i, &cp)) > 0 && !unsafe_cp(cp)) {
			if (lm_buf_add(b, p + i, len) != 0)
				return -1;
			i += len;
			continue;
		}
		for (size_t k = 0, end = len ? len : 1; k < end; k++, i++) {
			int c = p[i];

			if (c == '\n' && keep_nl ? lm_buf_add(b, "\n", 1) :
			    c == '\n' ? lm_buf_add(b, "\\n", 2) : c == '\r' ? lm_buf_add(b, "\\r", 2) :
			    c == '\t' ? lm_buf_add(b, "\\t", 2) : lm_buf_addf(b, "\\x%02x", (unsigned)c))
				return -1;
		}
	}
	return 0;
}

/* One conversion of a cli_printf format into b; *fmt is past the '%' and is moved past the
 * conversion. Strings (%s, %c) are escaped, precision counting the bytes taken from the
 * argument and width the escaped bytes written; numbers are formatted as printf does. */
static int
convert(lm_buf *b, const char **fmt, va_list *ap)
{
	const char *p = *fmt, *fl = p;
	char spec[64], len[3] = "";
	int width = -1, prec = -1, left;
	size_t nfl = strspn(p, "-+ #0");

	left = memchr(fl, '-', nfl) != NULL;
	p += nfl;
	if (*p == '*') {
		width = va_arg(*ap, int);
		if (width < 0)
			left = 1, width = -width;
		p++;
	} else
		for (width = 0; *p >= '0' && *p <= '9' && width < 100000; p++)
			width = width * 10 + (*p - '0');
	if (*p == '.') {
		p++;
		if (*p == '*') {
			prec = va_arg(*ap, int);
			p++;
		} else
			for (prec = 0; *p >= '0' && *p <= '9' && prec < 100000; p++)
				prec = prec * 10 + (*p - '0');
	}
	if (*p != '\0' && strchr("hljztL", *p)) {
		len[0] = *p++;
		if ((len[0] == 'h' || len[0] == 'l') && *p == len[0])
			len[1] = *p++;
	}
	if (*p == '\0' || nfl > 5)
		return -1;
	*fmt = p + 1;
	if (*p == '%')
		return lm_buf_add(b, "%", 1);
	if (*p == 's' || *p == 'c') {
		char ch;
		const char *s;
		size_t n, at = b->len, w;

		if (*p == 'c') {
			ch = (char)va_arg(*ap, int);
			s = &ch, n = 1;
		} else {
			s = va_arg(*ap, const char *);
			if (s == NULL)
				s = "(null)";
			n = prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
		}
		if (escape(b, s, n, 0) != 0)
			return -1;
		if ((w = b->len - at) >= (size_t)(width > 0 ? width : 0))
			return 0;
		for (size_t k = w; k < (size_t)width; k++)
			if (lm_buf_add(b, " ", 1) != 0)
				return -1;
		if (!left) { /* right-aligned: the padding goes before the text */
			memmove(b->data + b->len - w, b->data + at, w);
			memset(b->data + at, ' ', (size_t)width - w);
		}
		return 0;
	}
	/* A number: printf itself, with the width and precision written out. */
	{
		char w[16] = "", pr[16] = "";

		if (width > 0)
			snprintf(w, sizeof w, "%d", width);
		if (prec >= 0)
			snprintf(pr, sizeof pr, ".%d", prec);
		snprintf(spec, sizeof spec, "%%%s%.*s%s%s%s%c", left && memchr(fl, '-', nfl) == NULL ? "-" : "",
		    (int)nfl, fl, w, pr, len, *p);
	}
	switch (*p) {
	case 'd': case 'i':
		return !*len || *len == 'h' ? lm_buf_addf(b, spec, va_arg(*ap, int)) :
		    strcmp(len, "l") == 0 ? lm_buf_addf(b, spec, va_arg(*ap, long)) :
		    strcmp(len, "ll") == 0 ? lm_buf_addf(b, spec, va_arg(*ap, long long)) :
		    *len == 'j' ? lm_buf_addf(b, spec, va_arg(*ap, intmax_t)) :
		    *len == 'z' ? lm_buf_addf(b, spec, va_arg(*ap, ssize_t)) :
		    *len == 't' ? lm_buf_addf(b, spec, va_arg(*ap, ptrdiff_t)) : -1;
	case 'u': case 'o': case 'x': case 'X':
		return !*len || *len == 'h' ? lm_buf_addf(b, spec, va_arg(*ap, unsigned)) :
		    strcmp(len, "l") == 0 ? lm_buf_addf(b, spec, va_arg(*ap, unsigned long)) :
		    strcmp(len, "ll") == 0 ? lm_buf_addf(b, spec, va_arg(*ap, unsigned long long)) :
		    *len == 'j' ? lm_buf_addf(b, spec, va_arg(*ap, uintmax_t)) :
		    *len == 'z' ? lm_buf_addf(b, spec, va_arg(*ap, size_t)) :
		    *len == 't' ? lm_buf_addf(b, spec, va_arg(*ap, ptrdiff_t)) : -1;
	case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
		return *len == 'L' ? lm_buf_addf(b, spec, va_arg(*ap, long double)) :
		    lm_buf_addf(b, spec, va_arg(*ap, double));
	case 'p':
		return lm_buf_addf(b, "%p", va_arg(*ap, void *));
	}
	return -1; /* %n and the rest: never used by the CLI */
}

/* fmt with its arguments into b, every string argument escaped. */
static int
vformat(lm_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int rc = 0;

	va_copy(aq, ap);
	while (*fmt && rc == 0) {
		size_t n = strcspn(fmt, "%");

		if (n > 0)
			rc = lm_buf_add(b, fmt, n);
		fmt += n;
		if (*fmt == '%' && rc == 0) {
			fmt++;
			rc = convert(b, &fmt, &aq);
		}
	}
	va_end(aq);
	return rc;
}

static int
put(FILE *f, const lm_buf *b, int rc)
{
	if (rc == 0 && b->len > 0 && fwrite(b->data, 1, b->len, f) != b->len)
		rc = -1;
	return rc == 0 ? (int)b->len : -1;
}

int
cli_printf(const char *fmt, ...)
{
	lm_buf b = {0};
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = put(stdout, &b, vformat(&b, fmt, ap));
	va_end(ap);
	lm_buf_free(&b);
	return rc;
}

int
cli_bprintf(lm_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vformat(b, fmt, ap);
	va_end(ap);
	return rc;
}

int
cli_text(FILE *f, const char *s, int keep_nl)
{
	lm_buf b = {0};
	int rc = put(f, &b, s ? escape(&b, s, strlen(s), keep_nl) : 0);

	lm_buf_free(&b);
	return rc;
}

int
cli_escape(lm_buf *out, const char *s)
{
	return escape(out, s, strlen(s), 0);
}

int
cli_escape_n(lm_buf *out, const char *s, size_t n, int keep_nl)
{
	return escape(out, s, n, keep_nl);
}

int
cli_error(int code, const char *fmt, ...)
{
	lm_buf b = {0};
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = lm_buf_add(&b, "lume-metal: ", 12) == 0 ? vformat(&b, fmt, ap) : -1;
	va_end(ap);
	if (rc == 0)
		rc = lm_buf_add(&b, "\n", 1);
	put(stderr, &b, rc);
	lm_buf_free(&b);
	return code;
}

int
cli_fail(int rc, const char *err)
{
	int code = rc == LM_EINPUT ? EXIT_USAGE : rc == LM_EREFUSED ? EXIT_REFUSED : EXIT_SOMEFAIL;

	return cli_error(code, "%s", err);
}

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
	const char *d = datadir_path(note);

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
	static char state[4096];
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	memset(c, 0, sizeof *c);
	if (xdg && *xdg)
		snprintf(state, sizeof state, "%s/lume-metal", xdg);
	else
		snprintf(state, sizeof state, "%s/.local/state/lume-metal", home ? home : ".");
	c->state = state;
	c->lume = "lume";
	/* user and known_hosts stay NULL until a flag or the config file gives them: the OpenSSH
	 * configuration, then GUEST_DEFAULT_USER and ~/.ssh/known_hosts, apply after (guest.c). */
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

/* The config_keys bit of a shared flag, 0 for the others. */
static unsigned
flag_key(int opt)
{
	static const struct { int opt; const char *key; } map[] = {
		{'u', "user"}, {'i', "identity"}, {1001, "password-file"}, {1002, "known-hosts"}, {1007, "state"},
		{1006, "parallel"}, {1009, "lume"},
	};

	for (size_t i = 0; i < sizeof map / sizeof *map; i++)
		if (map[i].opt == opt)
			for (unsigned k = 0; config_keys[k]; k++)
				if (strcmp(config_keys[k], map[i].key) == 0)
					return 1u << k;
	return 0;
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
	c->given |= flag_key(opt);
	switch (opt) {
	case 'u': c->ssh.user = arg; return 1;
	case 'i': return home_flag(&c->ssh.identity, arg, "-i", cmd);
	case 1001: return home_flag(&c->ssh.password_file, arg, "--password-file", cmd);
	case 1002: return home_flag(&c->ssh.known_hosts, arg, "--known-hosts", cmd);
	case 1003: c->ssh.accept_new = 1; return 1;
	case 1004: {
		const char **h = reallocarray(c->hosts, c->nhosts + 1, sizeof *h);

		if (h == NULL)
			return -1;
		h[c->nhosts++] = arg;
		c->hosts = h;
		return 1;
	}
	case 1005: c->timeout_given = 1; return cli_number(arg, "--timeout", cmd, 1, 86400, &c->timeout_s);
	case 1006: return cli_number(arg, "--parallel", cmd, 1, 1024, &c->fleet.parallel);
	case 1030: return cli_number(arg, "--canary", cmd, 1, 100000, &c->fleet.canary);
	case 1031: return count_or_pct(arg, "--batch", cmd, 1, &c->fleet.batch, &c->fleet.batch_pct);
	case 1032: return count_or_pct(arg, "--max-fail", cmd, 0, &c->fleet.max_fail, &c->fleet.max_fail_pct);
	case 1033: c->fleet.rollback_on_fail = 1; return 1;
	case 1007: return home_flag(&c->state, arg, "--state", cmd);
	case 1008: c->json = 1, c->doc = 0; return 1;
	case 1015: return cli_conn_format(c, arg, cmd);
	case 1016:
		if (strcmp(arg, "input") == 0 || strcmp(arg, "finish") == 0) {
			c->order_input = arg[0] == 'i';
			return 1;
		}
		cli_error(EXIT_USAGE, "%s: --order %s: not finish or input", cmd, arg);
		return -1;
	case 1009: return home_flag(&c->lume, arg, "--lume", cmd);
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
cli_validate_flag(cli_validate *v, int opt, const char *arg, const char *cmd)
{
	switch (opt) {
	case 1040: v->v.model = arg; return 1;
	case 1041: v->text_flag = arg; return 1;
	case 1042: return cli_number(arg, "--chunks", cmd, 1, 100000, &v->chunks);
	case 1043: v->v.llama_perplexity = arg; return 1;
	case 1044: v->asked = 1; return 1;
	}
	return 0;
}

int
cli_validate_setup(cli_validate *v, cli_conn *c, session_opts *o, int run, const char *cmd)
{
	manifest_workload *w = NULL;
	validate_workload vw;
	char err[LM_ERRLEN];
	int rc;

	if ((rc = manifest_workload_load(&w, cli_datadir(), c->info->workload, err)) != LM_OK)
		return cli_error(EXIT_USAGE, "%s: the payload's workload %s: %s", cmd, c->info->workload, err);
	validate_workload_read(&vw, w->json);
	o->require_validation = vw.required;
	v->v.th = vw.th;
	if (v->chunks > 0)
		v->v.th.chunks = v->chunks;
	if (v->v.llama_perplexity == NULL)
		v->v.llama_perplexity = "llama-perplexity";
	rc = EXIT_OK;
	if (!run)
		goto done;
	if (v->v.model == NULL) {
		rc = cli_error(EXIT_USAGE, "%s: --model PATH (the model's path in the guest) is required", cmd);
		goto done;
	}
	if (v->text_flag)
		rc = lm_fmt(v->text, sizeof v->text, "%s", v->text_flag);
	else if (vw.text)
		rc = lm_fmt(v->text, sizeof v->text, "%s/%s", cli_datadir(), vw.text);
	else {
		rc = cli_error(EXIT_USAGE, "%s: the workload %s names no validation text; give --text FILE", cmd, w->id);
		goto done;
	}
	if (rc != 0 || access(v->text, R_OK) != 0) {
		rc = cli_error(EXIT_USAGE, "%s: the validation text %s cannot be read", cmd, v->text);
		goto done;
	}
	if (validate_text_check(v->text, v->v.th.context, err) != LM_OK) {
		rc = cli_error(EXIT_USAGE, "%s: %s", cmd, err);
		goto done;
	}
	v->v.text = v->text;
	snprintf(v->label, sizeof v->label, "%s", v->text_flag ? v->text_flag : vw.text);
	v->v.text_label = v->label;
	o->validate = &v->v;
done:
	manifest_workload_free(w);
	return rc;
}

int
cli_one_vm(guest_target **out, cli_conn *c, const char *vm, session_opts *o, int long_timeout_s)
{
	char err[LM_ERRLEN];
	int rc = c->nhosts ? guest_target_host(out, c->hosts[0], c->ssh.user, err)
	    : guest_target_lume(out, vm, c->ssh.user, err);

	if (rc != LM_OK)
		return cli_fail(rc, err);
	if (!c->nhosts)
		(*out)->port = c->port;
	o->state = c->state, o->lume = c->lume, o->ssh = c->ssh, o->timeout_s = c->timeout_s;
	o->wait_s = c->wait_s;
	if (!c->timeout_given)
		o->timeout_s = long_timeout_s;
	return EXIT_OK;
}

/* --state that exists and is not a directory (or lies under a file): EXIT_USAGE, said so. */
static int
state_check(const char *state, const char *cmd)
{
	struct stat st;

	if (stat(state, &st) == 0 ? !S_ISDIR(st.st_mode) : errno == ENOTDIR)
		return cli_error(EXIT_USAGE, "%s: --state %s: not a directory", cmd, state);
	return EXIT_OK;
}

int
cli_host_check(const char *spec, const char *cmd)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	guest_target *t;
	struct stat st;
	char err[LM_ERRLEN];
	int rc;

	if (stat(spec, &st) != 0 || !S_ISREG(st.st_mode))
		return EXIT_OK;
	if (strchr(spec, '/') != NULL || guest_target_host(&t, spec, "lume", err) != LM_OK)
		return cli_error(EXIT_USAGE, "%s: --host %s: that is a file, not user@addr[:port]; did you mean "
		    "--hosts %s?", cmd, spec, spec);
	rc = getaddrinfo(t->host, NULL, &hints, &ai);
	guest_target_free(t);
	if (ai != NULL)
		freeaddrinfo(ai);
	if (rc != 0)
		return cli_error(EXIT_USAGE, "%s: --host %s: no host has that name, but a file does; did you mean "
		    "--hosts %s?", cmd, spec, spec);
	return EXIT_OK;
}

const char *
cli_conn_setting(const cli_conn *c, const char *key)
{
	for (unsigned k = 0; config_keys[k]; k++)
		if (strcmp(config_keys[k], key) == 0 && (c->given & 1u << k))
			return NULL;
	return config_get(c->cfg, key, NULL);
}

int
cli_conn_ready(cli_conn *c, const char *cmd)
{
	static config *loaded; /* read once for the process; reachable till exit */
	char path[4096], err[LM_ERRLEN];
	const char *v;

	if (loaded == NULL && config_default_path(path, sizeof path) == 0 && config_load(&loaded, path, err) != LM_OK)
		return cli_error(EXIT_USAGE, "%s: %s", cmd, err);
	c->cfg = loaded;
	if ((v = cli_conn_setting(c, "user")) != NULL)
		c->ssh.user = v;
	if ((v = cli_conn_setting(c, "identity")) != NULL)
		c->ssh.identity = v;
	if ((v = cli_conn_setting(c, "password-file")) != NULL)
		c->ssh.password_file = v;
	if ((v = cli_conn_setting(c, "known-hosts")) != NULL)
		c->ssh.known_hosts = v;
	if ((v = cli_conn_setting(c, "state")) != NULL)
		c->state = v;
	if ((v = cli_conn_setting(c, "lume")) != NULL)
		c->lume = v;
	if ((v = cli_conn_setting(c, "parallel")) != NULL)
		c->fleet.parallel = atoi(v); /* config_load checked it: 1..1024 */
	/* Every append of this run keeps what ledger prune would (core/ledger.h). */
	if ((v = cli_conn_setting(c, "ledger-keep")) != NULL)
		ledger_retention(atoi(v)); /* config_load checked it: 1..1000000 */
	return state_check(c->state, cmd);
}

int
cli_state_readable(cli_conn *c, const char *cmd)
{
	char err[LM_ERRLEN];
	int rc;

	if ((rc = cli_conn_ready(c, cmd)) != EXIT_OK)
		return rc;
	/* The ledger the gates and status read: readable before any VM is reached. */
	if (ledger_readable(c->state, err) != LM_OK)
		return cli_error(EXIT_USAGE, "%s: --state %s: %s", cmd, c->state, err);
	return EXIT_OK;
}

int
cli_conn_check(cli_conn *c, int nvms, const char *cmd)
{
	int rc;

	if ((rc = cli_state_readable(c, cmd)) != EXIT_OK)
		return rc;
	for (size_t i = 0; i < c->nhosts; i++)
		if ((rc = cli_host_check(c->hosts[i], cmd)) != EXIT_OK)
			return rc;
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
cli_conn_payload(cli_conn *c, session_opts *o)
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
	const unsigned char *p = (const unsigned char *)(s ? s : "null");
	size_t n = strlen((const char *)p);
	lm_buf b = {0};
	int rc = 0;

	/* Bytes over 0x7e are only inside JSON strings, where \uXXXX means the same. */
	for (size_t i = 0; i < n && rc == 0;) {
		size_t run = i, len;
		uint32_t cp;

		while (run < n && p[run] < 0x7f)
			run++;
		rc = lm_buf_add(&b, p + i, run - i);
		if ((i = run) >= n || rc != 0)
			break;
		if ((len = utf8_seq(p + i, n - i, &cp)) > 0 && !unsafe_cp(cp))
			rc = lm_buf_add(&b, p + i, len);
		else
			rc = lm_buf_addf(&b, "\\u%04x", len ? (unsigned)cp : p[i] == 0x7f ? 0x7fu : 0xfffdu);
		i += len ? len : 1;
	}
	if (rc == 0)
		rc = lm_buf_add(&b, "\n", 1);
	put(stdout, &b, rc);
	lm_buf_free(&b);
	free(s);
}

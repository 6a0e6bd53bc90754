/* sshcfg: see sshcfg.h. */
#include "net/sshcfg.h"

#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

void
sshcfg_free(sshcfg *c)
{
	if (c == NULL)
		return;
	free(c->hostname);
	free(c->user);
	for (size_t i = 0; i < c->nids; i++)
		free(c->ids[i]);
	free(c->known_hosts);
	free(c->proxyjump);
	free(c);
}

/* $HOME, else the login's home directory, else "". */
static const char *
home_dir(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h && *h)
		return h;
	pw = getpwuid(getuid());
	return pw && pw->pw_dir ? pw->pw_dir : "";
}

/* An IdentityFile as ssh -G prints it (unexpanded) made a path: "~/" from home_dir(), and the
 * tokens OpenSSH expands in it (%% %d %h %r %u %p). NULL when out of memory or unknown token. */
static char *
expand_id(const char *v, const sshcfg *c, const char *login)
{
	lm_buf b = {0};
	int rc = 0;

	if (strncmp(v, "~/", 2) == 0) {
		rc |= lm_buf_addf(&b, "%s/", home_dir());
		v += 2;
	}
	for (; *v && rc == 0; v++) {
		if (*v != '%') {
			rc |= lm_buf_add(&b, v, 1);
			continue;
		}
		switch (*++v) {
		case '%': rc |= lm_buf_add(&b, "%", 1); break;
		case 'd': rc |= lm_buf_addf(&b, "%s", home_dir()); break;
		case 'h': rc |= lm_buf_addf(&b, "%s", c->hostname ? c->hostname : ""); break;
		case 'r': rc |= lm_buf_addf(&b, "%s", c->user); break;
		case 'u': rc |= lm_buf_addf(&b, "%s", login); break;
		case 'p': rc |= lm_buf_addf(&b, "%d", c->port); break;
		default: rc = -1; break;
		}
	}
	if (rc != 0 || b.data == NULL) {
		lm_buf_free(&b);
		return NULL;
	}
	return b.data;
}

/* OpenSSH's default UserKnownHostsFile, "H/.ssh/known_hosts H/.ssh/known_hosts2". */
static int
default_known(const char *v)
{
	const char *sp = strchr(v, ' ');
	size_t n = sp ? (size_t)(sp - v) : 0;

	return sp && n >= 17 && strncmp(v + n - 17, "/.ssh/known_hosts", 17) == 0 && strncmp(sp + 1, v, n) == 0 &&
	    strcmp(sp + 1 + n, "2") == 0;
}

static int
printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

int
sshcfg_parse(sshcfg **out, const char *text, size_t len, const char *login, char *err)
{
	sshcfg *c = calloc(1, sizeof *c);
	char *ids[SSHCFG_IDS_MAX];
	size_t nids = 0, line = 0;
	int rc = LM_OK, have_port = 0;

	*out = NULL;
	if (c == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if (len > SSHCFG_OUT_MAX || memchr(text, '\0', len) != NULL) {
		rc = lm_err(err, LM_EFAIL, "ssh -G: its answer is over %u bytes or holds a NUL", SSHCFG_OUT_MAX);
		goto done;
	}
	for (const char *p = text, *end = text + len; rc == LM_OK && p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end, *v;
		size_t klen, vlen;
		char key[64], **slot = NULL;

		line++;
		klen = strcspn(p, " \n");
		if (p + klen > e)
			klen = (size_t)(e - p);
		v = p + klen < e ? p + klen + 1 : e;
		vlen = (size_t)(e - v);
		if (klen == 0 || klen >= sizeof key || !printable(p, (size_t)(e - p))) {
			rc = lm_err(err, LM_EFAIL, "ssh -G: line %zu is not \"keyword value\"", line);
			break;
		}
		memcpy(key, p, klen);
		key[klen] = '\0';
		p = nl ? nl + 1 : end;
		if (strcmp(key, "hostname") == 0)
			slot = &c->hostname;
		else if (strcmp(key, "user") == 0)
			slot = &c->user;
		else if (strcmp(key, "userknownhostsfile") == 0)
			slot = &c->known_hosts;
		else if (strcmp(key, "proxyjump") == 0)
			slot = &c->proxyjump;
		else if (strcmp(key, "port") == 0) {
			char num[8], *x;
			long n;

			if (have_port++ || vlen == 0 || vlen >= sizeof num) {
				rc = lm_err(err, LM_EFAIL, "ssh -G: line %zu: a bad or second port", line);
				break;
			}
			memcpy(num, v, vlen);
			num[vlen] = '\0';
			n = strtol(num, &x, 10);
			if (*x != '\0' || n < 1 || n > 65535)
				rc = lm_err(err, LM_EFAIL, "ssh -G: line %zu: port %s is not 1-65535", line, num);
			c->port = (int)n;
		} else if (strcmp(key, "stricthostkeychecking") == 0) {
			c->accept_new = (vlen == 10 && strncmp(v, "accept-new", 10) == 0) ||
			    (vlen == 5 && strncmp(v, "false", 5) == 0) || (vlen == 2 && strncmp(v, "no", 2) == 0);
		} else if (strcmp(key, "identityfile") == 0) {
			if (nids == SSHCFG_IDS_MAX) {
				rc = lm_err(err, LM_EFAIL, "ssh -G: more than %d identity files", SSHCFG_IDS_MAX);
				break;
			}
			if (vlen == 0 || (ids[nids] = strndup(v, vlen)) == NULL) {
				rc = lm_err(err, LM_EFAIL, "ssh -G: line %zu: an empty identity file", line);
				break;
			}
			nids++;
		}
		if (slot != NULL) {
			if (*slot != NULL || vlen == 0) {
				rc = lm_err(err, LM_EFAIL, "ssh -G: line %zu: %s empty or given twice", line, key);
				break;
			}
			if ((*slot = strndup(v, vlen)) == NULL)
				rc = lm_err(err, LM_EFAIL, "out of memory");
		}
	}
	if (rc == LM_OK && (c->hostname == NULL || c->user == NULL || !have_port))
		rc = lm_err(err, LM_EFAIL, "ssh -G: no hostname, user or port in its answer");
	if (rc == LM_OK && strpbrk(c->hostname, " \t") != NULL)
		rc = lm_err(err, LM_EFAIL, "ssh -G: the hostname has blanks");
	if (rc != LM_OK)
		goto done;
	c->user_login = login != NULL && strcmp(c->user, login) == 0;
	if (c->proxyjump != NULL && strcmp(c->proxyjump, "none") == 0) {
		free(c->proxyjump);
		c->proxyjump = NULL;
	}
	if (c->known_hosts != NULL) {
		char *all = c->known_hosts;

		c->known_hosts = default_known(all) ? NULL : strndup(all, strcspn(all, " "));
		if (c->known_hosts == NULL && !default_known(all))
			rc = lm_err(err, LM_EFAIL, "out of memory");
		free(all);
	}
	for (size_t i = 0; rc == LM_OK && i < nids; i++)
		if ((c->ids[c->nids] = expand_id(ids[i], c, login ? login : "")) == NULL)
			rc = lm_err(err, LM_EFAIL, "ssh -G: identity file %.200s: an unknown %%-token", ids[i]);
		else
			c->nids++;
done:
	for (size_t i = 0; i < nids; i++)
		free(ids[i]);
	if (rc != LM_OK) {
		sshcfg_free(c);
		return rc;
	}
	*out = c;
	return LM_OK;
}

static sshcfg *
dup_cfg(const sshcfg *c)
{
	sshcfg *d = calloc(1, sizeof *d);
	int bad;

	if (d == NULL)
		return NULL;
	*d = (sshcfg){.port = c->port, .user_login = c->user_login, .accept_new = c->accept_new};
	d->hostname = strdup(c->hostname);
	d->user = strdup(c->user);
	d->known_hosts = c->known_hosts ? strdup(c->known_hosts) : NULL;
	d->proxyjump = c->proxyjump ? strdup(c->proxyjump) : NULL;
	bad = !d->hostname || !d->user || (c->known_hosts && !d->known_hosts) || (c->proxyjump && !d->proxyjump);
	for (; !bad && d->nids < c->nids; d->nids++)
		bad = (d->ids[d->nids] = strdup(c->ids[d->nids])) == NULL;
	if (bad) {
		sshcfg_free(d);
		return NULL;
	}
	return d;
}

/* What ssh -G said, per alias, for this process: its answer depends on the alias alone (no user
 * or port is passed), and a fleet names one address many times (one Mac, many ports). */
typedef struct cached {
	char *alias;
	sshcfg *cfg;
	struct cached *next;
} cached;
static cached *cache;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static sshcfg *
cache_get(const char *alias)
{
	sshcfg *c = NULL;

	pthread_mutex_lock(&cache_mu);
	for (const cached *e = cache; e != NULL; e = e->next)
		if (strcmp(e->alias, alias) == 0) {
			c = dup_cfg(e->cfg);
			break;
		}
	pthread_mutex_unlock(&cache_mu);
	return c;
}

static void
cache_put(const char *alias, const sshcfg *c)
{
	cached *e = calloc(1, sizeof *e);

	if (e == NULL || (e->alias = strdup(alias)) == NULL || (e->cfg = dup_cfg(c)) == NULL) {
		if (e != NULL)
			free(e->alias);
		free(e);
		return; /* not kept: asked again next time */
	}
	pthread_mutex_lock(&cache_mu);
	e->next = cache;
	cache = e;
	pthread_mutex_unlock(&cache_mu);
}

/* The alias on ssh's command line: an argument, never an option. */
static int
alias_ok(const char *a)
{
	if (*a == '\0' || *a == '-')
		return 0;
	for (; *a; a++)
		if ((unsigned char)*a <= 0x20 || *a == 0x7f)
			return 0;
	return 1;
}

int
sshcfg_resolve(sshcfg **out, const char *alias, int64_t deadline_ms, int *ssh_missing, char *err)
{
	const char *file = getenv("LUME_METAL_SSH_CONFIG");
	const char *argv[7];
	struct passwd *pw = getpwuid(getuid());
	lm_buf o = {0}, e = {0};
	char msg[LM_ERRLEN];
	size_t k = 0;
	int st = 0, rc;

	*out = NULL;
	if (ssh_missing)
		*ssh_missing = 0;
	if (!alias_ok(alias))
		return lm_err(err, LM_EINPUT, "%.200s: not a host name OpenSSH takes", alias);
	if ((*out = cache_get(alias)) != NULL)
		return LM_OK;
	argv[k++] = "ssh";
	argv[k++] = "-G";
	if (file != NULL && *file != '\0') {
		argv[k++] = "-F";
		argv[k++] = file;
	}
	argv[k++] = "--";
	argv[k++] = alias;
	argv[k] = NULL;
	errno = 0;
	rc = lm_run_deadline(&o, &e, &st, argv, deadline_ms, msg);
	if (rc == LM_EFAIL && (errno == EMFILE || errno == ENFILE)) {
		if (ssh_missing)
			*ssh_missing = 2;
		rc = lm_err(err, LM_EFAIL, "ssh -G: out of file descriptors (this process's limit; fewer at once "
		    "with --parallel, or raise ulimit -n): %s", msg);
	} else if (rc == LM_EINPUT) {
		if (ssh_missing)
			*ssh_missing = 1;
		rc = lm_err(err, LM_EFAIL, "%s", msg);
	} else if (rc != LM_OK)
		rc = lm_err(err, rc, "%s", msg);
	else if (st != 0) {
		size_t n = e.len < 200 ? e.len : 200;

		for (size_t i = 0; i < n; i++) /* shown to a terminal: no control characters */
			if ((unsigned char)e.data[i] < 0x20 || e.data[i] == 0x7f)
				e.data[i] = ' ';
		rc = lm_err(err, LM_EINPUT, "ssh -G %s (the OpenSSH configuration%s%s) exited %d: %.*s", alias,
		    file ? " " : "", file ? file : "", st, (int)n, e.data ? e.data : "");
	} else
		rc = sshcfg_parse(out, o.data ? o.data : "", o.len, pw ? pw->pw_name : NULL, err);
	if (rc == LM_OK)
		cache_put(alias, *out);
	lm_buf_free(&o);
	lm_buf_free(&e);
	return rc;
}

/* config: see config.h. */
#include "core/config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"

const char *const config_keys[] = {
	"user", "identity", "password-file", "known-hosts", "state", "parallel", "lume", "registry",
	"organization", "verdicts", "signing-key", "trusted-key", "confirm-timeout", "confirm-settle",
	"verdict-registries", "registry-auth", "ledger-keep", NULL,
};
#define NKEYS (sizeof config_keys / sizeof *config_keys - 1)

struct config {
	char *path;
	int exists;
	char *value[NKEYS];
	int line[NKEYS];
};

/* Whether key's value is a path, where "~/" is $HOME/ as a shell would make it on a flag: 1, or
 * 2 for trusted-key, a comma-separated list of them. By name: the key list may grow. */
static int
path_key(const char *key)
{
	static const char *const paths[] = {"identity", "password-file", "known-hosts", "state", "lume", "signing-key",
	    "registry-auth"};

	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
		if (strcmp(key, paths[i]) == 0)
			return 1;
	return strcmp(key, "trusted-key") == 0 ? 2 : 0;
}

static size_t
key_index(const char *key, size_t n)
{
	for (size_t k = 0; k < NKEYS; k++)
		if (strlen(config_keys[k]) == n && strncmp(config_keys[k], key, n) == 0)
			return k;
	return NKEYS;
}

int
config_default_path(char *out, size_t len)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

	if (xdg != NULL && xdg[0] == '/')
		return lm_fmt(out, len, "%s/lume-metal/config", xdg);
	if (home == NULL || *home == '\0')
		return -1;
	return lm_fmt(out, len, "%s/.config/lume-metal/config", home);
}

/* Why the bytes s[0..n) cannot be a value, or NULL. */
static const char *
bad_value(const char *s, size_t n)
{
	if (n == 0)
		return "an empty value";
	if (n > CONFIG_VALUE_MAX)
		return "a value longer than 4096 bytes";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "a control character in the value";
	return NULL;
}

/* Whether v[0..vn) is a whole number from lo to hi. */
static int
whole(const char *v, size_t vn, long lo, long hi)
{
	long p = 0;
	size_t i;

	for (i = 0; i < vn && v[i] >= '0' && v[i] <= '9' && p <= hi; i++)
		p = p * 10 + (v[i] - '0');
	return i == vn && p >= lo && p <= hi;
}

/* Parses one line (s, n bytes, no newline) numbered line into c. */
static int
parse_line(config *c, const char *s, size_t n, int line, char *err)
{
	const char *eq, *v, *why;
	size_t kn, vn, k;
	char *val;

	while (n > 0 && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	if (n == 0 || *s == '#')
		return LM_OK;
	if ((eq = memchr(s, '=', n)) == NULL)
		return lm_err(err, LM_EINPUT, "%s:%d: no '=': want KEY=VALUE", c->path, line);
	for (kn = (size_t)(eq - s); kn > 0 && (s[kn - 1] == ' ' || s[kn - 1] == '\t'); kn--)
		;
	for (v = eq + 1; v < s + n && (*v == ' ' || *v == '\t'); v++)
		;
	vn = (size_t)(s + n - v);
	if ((k = key_index(s, kn)) == NKEYS) {
		const char *best = NULL;
		size_t bestd = SIZE_MAX;

		for (size_t i = 0; i < NKEYS; i++) {
			size_t d = lm_edits(s, kn, config_keys[i]);

			if (d < bestd)
				bestd = d, best = config_keys[i];
		}
		if (kn == 0)
			return lm_err(err, LM_EINPUT, "%s:%d: no key before '=': want KEY=VALUE", c->path, line);
		if (bestd <= (kn / 3 > 1 ? kn / 3 : 1))
			return lm_err(err, LM_EINPUT, "%s:%d: unknown key '%.*s'; did you mean %s?", c->path, line,
			    (int)(kn > 64 ? 64 : kn), s, best);
		return lm_err(err, LM_EINPUT, "%s:%d: unknown key '%.*s' (keys: user, identity, password-file, "
		    "known-hosts, state, parallel, lume, registry, organization, verdicts, signing-key, trusted-key, "
		    "confirm-timeout, confirm-settle, verdict-registries, registry-auth, ledger-keep)", c->path, line,
		    (int)(kn > 64 ? 64 : kn), s);
	}
	if (c->value[k] != NULL)
		return lm_err(err, LM_EINPUT, "%s:%d: %s is set already, on line %d", c->path, line, config_keys[k],
		    c->line[k]);
	if ((why = bad_value(v, vn)) != NULL)
		return lm_err(err, LM_EINPUT, "%s:%d: %s: %s", c->path, line, config_keys[k], why);
	if (strcmp(config_keys[k], "parallel") == 0 && !whole(v, vn, 1, 1024))
		return lm_err(err, LM_EINPUT, "%s:%d: parallel: '%.*s' is not a whole number from 1 to 1024",
		    c->path, line, (int)(vn > 64 ? 64 : vn), v);
	if (strncmp(config_keys[k], "confirm-", 8) == 0) { /* deploy's --confirm-timeout 1..3600, --confirm-settle 0..600 */
		int wait = strcmp(config_keys[k], "confirm-timeout") == 0;

		if (!whole(v, vn, wait, wait ? 3600 : 600))
			return lm_err(err, LM_EINPUT, "%s:%d: %s: '%.*s' is not a whole number of seconds from %d to %d",
			    c->path, line, config_keys[k], (int)(vn > 64 ? 64 : vn), v, wait, wait ? 3600 : 600);
	}
	if (strcmp(config_keys[k], "ledger-keep") == 0 && !whole(v, vn, 1, 1000000))
		return lm_err(err, LM_EINPUT, "%s:%d: ledger-keep: '%.*s' is not a whole number from 1 to 1000000",
		    c->path, line, (int)(vn > 64 ? 64 : vn), v);
	if (strcmp(config_keys[k], "verdicts") == 0 && !(vn == 5 && memcmp(v, "local", 5) == 0) &&
	    !(vn == 8 && memcmp(v, "registry", 8) == 0))
		return lm_err(err, LM_EINPUT, "%s:%d: verdicts: '%.*s' is neither local nor registry", c->path, line,
		    (int)(vn > 64 ? 64 : vn), v);
	if (!path_key(config_keys[k]))
		val = strndup(v, vn);
	else if (lm_home_expand(&val, v, vn, path_key(config_keys[k]) == 2) == LM_EINPUT)
		return lm_err(err, LM_EINPUT, "%s:%d: %s: ~/ with no HOME set", c->path, line, config_keys[k]);
	if (val == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	c->value[k] = val;
	c->line[k] = line;
	return LM_OK;
}

int
config_load(config **out, const char *path, char *err)
{
	config *c = calloc(1, sizeof *c);
	struct stat st;
	char *text = NULL, *s, *nl;
	size_t len;
	int rc = LM_OK, line = 1;

	*out = NULL;
	if (c == NULL || (c->path = strdup(path)) == NULL) {
		free(c);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	/* stat first: a FIFO or a device is refused before open, which would wait on it. */
	if (stat(path, &st) != 0) {
		if (errno != ENOENT)
			rc = lm_err(err, LM_EINPUT, "%s: %s", path, strerror(errno));
		goto done;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = lm_err(err, LM_EINPUT, "%s: not a regular file", path);
		goto done;
	}
	if ((rc = lm_read_file(&text, &len, path, CONFIG_FILE_MAX, err)) != LM_OK) {
		rc = LM_EINPUT;
		goto done;
	}
	c->exists = 1;
	if (memchr(text, '\0', len) != NULL) {
		rc = lm_err(err, LM_EINPUT, "%s: holds a NUL byte: not a text file", path);
		goto done;
	}
	for (s = text; rc == LM_OK && s < text + len; s = nl + 1, line++) {
		if ((nl = memchr(s, '\n', (size_t)(text + len - s))) == NULL)
			nl = text + len;
		rc = parse_line(c, s, (size_t)(nl - s), line, err);
	}
done:
	free(text);
	if (rc != LM_OK) {
		config_free(c);
		return rc;
	}
	*out = c;
	return LM_OK;
}

const char *
config_get(const config *c, const char *key, int *line)
{
	size_t k = key_index(key, strlen(key));

	if (c == NULL || k == NKEYS || c->value[k] == NULL)
		return NULL;
	if (line != NULL)
		*line = c->line[k];
	return c->value[k];
}

const char *
config_path(const config *c)
{
	return c ? c->path : NULL;
}

int
config_exists(const config *c)
{
	return c ? c->exists : 0;
}

void
config_free(config *c)
{
	if (c == NULL)
		return;
	for (size_t k = 0; k < NKEYS; k++)
		free(c->value[k]);
	free(c->path);
	free(c);
}

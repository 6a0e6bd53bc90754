/* host: see host.h. */
#include "net/host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

static int
defaults(int *status, lm_buf *out, const char *verb, const char *a, const char *b, char *err)
{
	const char *argv[] = {"defaults", verb, HOST_DOMAIN, HOST_KEY, a, b, NULL};
	lm_buf e = {0};
	int rc = lm_run(out, &e, status, argv, err);

	/* A read that exits 1 saying "does not exist" is the unset default; any other failure is
	 * no answer, never taken for unset. */
	if (rc == LM_OK && *status != 0 && (strcmp(verb, "read") != 0 || *status != 1 || e.data == NULL ||
	    strstr(e.data, "does not exist") == NULL))
		rc = lm_err(err, LM_EFAIL, "defaults %s %s %s exited %d: %.200s", verb, HOST_DOMAIN, HOST_KEY, *status,
		    e.data ? e.data : "");
	lm_buf_free(&e);
	return rc;
}

/* What `defaults read` said: 1 or 0 when set, -1 when it does not exist. */
static int
read_value(int status, const lm_buf *out)
{
	return status != 0 ? -1 : out->data && strncmp(out->data, "1", 1) == 0 ? 1 : 0;
}

int
host_pref_read(int *value, char *err)
{
	lm_buf out = {0};
	int st, rc = defaults(&st, &out, "read", NULL, NULL, err);

	if (rc == LM_OK)
		*value = read_value(st, &out);
	lm_buf_free(&out);
	return rc;
}

static int
record_path(char *out, size_t len, const char *state)
{
	return lm_fmt(out, len, "%s/host-preference.json", state);
}

int
host_pref_enable(const char *state, int *before, char *err)
{
	char path[4096], text[128];
	lm_buf out = {0};
	int st, rc;

	if (record_path(path, sizeof path, state) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if ((rc = host_pref_read(before, err)) != LM_OK)
		return rc;
	if (access(path, F_OK) != 0) {
		snprintf(text, sizeof text, "{\"domain\":\"%s\",\"key\":\"%s\",\"previous\":%s}\n", HOST_DOMAIN, HOST_KEY,
		    *before < 0 ? "null" : *before ? "true" : "false");
		if ((rc = lm_mkdirs(state, err)) != LM_OK ||
		    (rc = lm_write_file_atomic(path, text, strlen(text), 0600, err)) != LM_OK)
			return rc;
	}
	rc = defaults(&st, &out, "write", "-bool", "true", err);
	lm_buf_free(&out);
	return rc;
}

int
host_pref_disable(const char *state, int *restored, char *err)
{
	char path[4096], *text = NULL;
	lm_buf out = {0};
	int st, rc, now;

	if (record_path(path, sizeof path, state) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	*restored = -1;
	if (access(path, F_OK) == 0) {
		if ((rc = lm_read_file(&text, NULL, path, 4096, err)) != LM_OK)
			return rc;
		*restored = strstr(text, "\"previous\":true") ? 1 : strstr(text, "\"previous\":false") ? 0 : -1;
		if (*restored == -1 && strstr(text, "\"previous\":null") == NULL) {
			free(text);
			return lm_err(err, LM_EFAIL, "%s: not a record this tool wrote; left as it is", path);
		}
		free(text);
	}
	if ((rc = host_pref_read(&now, err)) != LM_OK)
		return rc;
	if (*restored >= 0)
		rc = defaults(&st, &out, "write", "-bool", *restored ? "true" : "false", err);
	else if (now >= 0)
		rc = defaults(&st, &out, "delete", NULL, NULL, err);
	lm_buf_free(&out);
	if (rc == LM_OK && unlink(path) != 0 && errno != ENOENT)
		rc = lm_err(err, LM_EFAIL, "%s: %s", path, strerror(errno));
	return rc;
}

/* render: see render.h. The pieces every document shares. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/render.h"

void
render_put(lm_buf *doc)
{
	if (doc->data)
		fputs(doc->data, stdout);
	lm_buf_free(doc);
}

int
render_clean(lm_buf *out, const char *s, size_t max, int keep_nl)
{
	size_t n = s ? strlen(s) : 0, cut = n;

	if (n > max) {
		cut = max;
		while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
			cut--;
	}
	if (cli_escape_n(out, s ? s : "", cut, keep_nl) != 0)
		return -1;
	return cut < n ? lm_buf_add(out, "...", 3) : 0;
}

void
render_utc(char out[32], time_t t, int zone)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, zone ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%dT%H:%M:%S", &tm);
}

int
render_vms(lm_buf *out, int doc, const char *cmd, cJSON *const *res, size_t n, time_t started)
{
	return doc == RENDER_OPENMETRICS ? render_openmetrics_status(out, res, n)
	    : render_junit_vms(out, cmd, res, n, started);
}

int
render_textfile(const char *dir, cJSON *const *res, size_t n, char *err)
{
	lm_buf b = {0};
	char path[4096];
	int rc;

	if (lm_fmt(path, sizeof path, "%s/%s", dir, RENDER_TEXTFILE) != 0)
		return lm_err(err, LM_EINPUT, "--textfile %s: path too long", dir);
	if (render_openmetrics_status(&b, res, n) != 0 || b.data == NULL) {
		lm_buf_free(&b);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	rc = lm_write_file_atomic(path, b.data, b.len, 0644, err);
	lm_buf_free(&b);
	return rc;
}

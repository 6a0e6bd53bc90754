/* render_vms: see render.h. A VM command's results as the document --format or --textfile
 * asks for: the dispatch to render_junit and render_openmetrics (render.c holds the pieces
 * they share, so no document file calls back up into this one). */
#include <stdio.h>

#include "cmd/render.h"

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

/* render: see render.h. The pieces every document shares. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/render.h"
#include "core/ledger.h"

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

void
render_image_label(char *out, size_t len, const cJSON *res)
{
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(res, "key"), *in = res;
	char label[600];

	if (!cJSON_IsObject(key)) {
		in = cJSON_GetObjectItemCaseSensitive(res, "deploy");
		key = cJSON_GetObjectItemCaseSensitive(in, "key");
	}
	if (!cJSON_IsObject(key))
		snprintf(out, len, "unknown (not reached)");
	else
		snprintf(out, len, "%s (macOS %s %s)", ledger_key_label(label, sizeof label, key, lm_jstr_or(in, "image", NULL)),
		    lm_jstr_or(key, "guestOS", "?"), lm_jstr_or(key, "guestBuild", "?"));
}

/* rcmd: see rcmd.h. */
#include "net/rcmd.h"

#include <stdlib.h>
#include <string.h>

/* build/gen/net/rscripts.h, written by scripts/embed-scripts from guest-scripts/NAME.sh: one
 * static array per file, named rs_ and the file's name (rs_bench_hashes for bench-hashes.sh). */
#include "net/rscripts.h"

static const struct {
	const char *name, *text;
} scripts[RSCRIPT_N] = {
	[RSCRIPT_FACTS] = {"facts.sh", rs_facts},
	[RSCRIPT_DEPLOY] = {"deploy.sh", rs_deploy},
	[RSCRIPT_RECONCILE] = {"reconcile.sh", rs_reconcile},
	[RSCRIPT_SCRATCH] = {"scratch.sh", rs_scratch},
	[RSCRIPT_PROBE] = {"probe.sh", rs_probe},
	[RSCRIPT_STATUS] = {"status.sh", rs_status},
	[RSCRIPT_ROLLBACK] = {"rollback.sh", rs_rollback},
	[RSCRIPT_STAMP] = {"stamp.sh", rs_stamp},
	[RSCRIPT_BENCH_HASHES] = {"bench-hashes.sh", rs_bench_hashes},
	[RSCRIPT_VALIDATE_PREP] = {"validate-prep.sh", rs_validate_prep},
	[RSCRIPT_IN_DIR] = {"in-dir.sh", rs_in_dir},
	[RSCRIPT_VALIDATE_CLEAN] = {"validate-clean.sh", rs_validate_clean},
	[RSCRIPT_HOST_IDENTITY] = {"host-identity.sh", rs_host_identity},
};

struct remote_cmd {
	lm_buf text;
};

int
rcmd_quote(lm_buf *out, const char *s)
{
	int rc = lm_buf_add(out, "'", 1);

	for (const char *q; rc == 0 && (q = strchr(s, '\'')) != NULL; s = q + 1)
		rc |= lm_buf_add(out, s, (size_t)(q - s)) | lm_buf_addf(out, "'\\''");
	rc |= lm_buf_addf(out, "%s'", s);
	return rc ? -1 : 0;
}

/* One word of a command: a leading ~/ stays outside the quotes as "$HOME"/. */
static int
quote(lm_buf *out, const char *s)
{
	if (strncmp(s, "~/", 2) == 0)
		return lm_buf_addf(out, "\"$HOME\"/") | rcmd_quote(out, s + 2);
	return rcmd_quote(out, s);
}

static int
build(remote_cmd **out, const char *const *head, const char *const *args)
{
	const char *const *words[] = {head, args};
	remote_cmd *c;
	int rc = 0;
	size_t n = 0;

	*out = NULL;
	if ((c = calloc(1, sizeof *c)) == NULL)
		return LM_EFAIL;
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; words[k] && words[k][i] && rc == 0; i++, n++)
			rc |= (n ? lm_buf_add(&c->text, " ", 1) : 0) | quote(&c->text, words[k][i]);
	if (rc != 0 || n == 0) {
		rcmd_free(c);
		return LM_EFAIL;
	}
	*out = c;
	return LM_OK;
}

int
rcmd_argv(remote_cmd **out, const char *const *argv)
{
	return build(out, argv, NULL);
}

int
rcmd_scripts(remote_cmd **out, const rscript *parts, size_t n, const char *const *args)
{
	lm_buf text = {0};
	int rc = 0;

	*out = NULL;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = parts[i] < RSCRIPT_N ? lm_buf_addf(&text, "%s", scripts[parts[i]].text) : -1;
	if (rc == 0 && n > 0) {
		const char *head[] = {"sh", "-c", text.data, "sh", NULL};

		rc = build(out, head, args);
	} else
		rc = LM_EFAIL;
	lm_buf_free(&text);
	return rc;
}

int
rcmd_script(remote_cmd **out, rscript s, const char *const *args)
{
	return rcmd_scripts(out, &s, 1, args);
}

const char *
rcmd_text(const remote_cmd *c)
{
	return c->text.data;
}

void
rcmd_free(remote_cmd *c)
{
	if (c == NULL)
		return;
	lm_buf_free(&c->text);
	free(c);
}

const char *
rscript_text(rscript s)
{
	return s < RSCRIPT_N ? scripts[s].text : NULL;
}

const char *
rscript_name(rscript s)
{
	return s < RSCRIPT_N ? scripts[s].name : NULL;
}

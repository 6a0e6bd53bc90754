/* deploy_exec: see deploy_exec.h. */
#include "ops/deploy_exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define MARK "lume-metal:facts-end"     /* deploy.sh's first line */
#define SETTLING "lume-metal:settling" /* install.sh --mark-settle, after "lume-metal:settle N" */

/* The driver, guest-scripts/deploy.sh after facts.sh in one exec (deploy_exec.h): its marks. */
struct deploy_exec {
	ssh_chan *ch;
	char sha[65];
	char where[320];
	int wrc;              /* the upload's: LM_OK, or werr says why */
	char werr[LM_ERRLEN];
};

int
deploy_exec_open(deploy_exec **out, ssh_conn *c, const char *sha, int force, const char *confirm_timeout,
    const char *confirm_settle, guest_facts *f, char *err)
{
	static const rscript parts[] = {RSCRIPT_FACTS, RSCRIPT_DEPLOY};
	const char *text, *args[] = {sha, force ? "wait" : "", confirm_timeout ? confirm_timeout : "",
	    confirm_settle ? confirm_settle : "", NULL};
	deploy_exec *x;
	remote_cmd *cmd = NULL;
	int rc;

	*out = NULL;
	memset(f, 0, sizeof *f);
	if (!lm_is_sha256(sha))
		return lm_err(err, LM_EINPUT, "not a SHA-256: %.80s", sha);
	if ((x = calloc(1, sizeof *x)) == NULL || rcmd_scripts(&cmd, parts, 2, args) != LM_OK) {
		free(x);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	snprintf(x->sha, sizeof x->sha, "%s", sha);
	snprintf(x->where, sizeof x->where, "%s", ssh_where(c));
	rc = ssh_chan_open(&x->ch, c, cmd, err);
	rcmd_free(cmd);
	if (rc == LM_OK)
		rc = ssh_chan_read_until(x->ch, MARK, &text, err);
	if (rc == LM_OK) {
		size_t n = strlen(text), m = strlen(MARK "\n");

		if (n < m || strcmp(text + n - m, MARK "\n") != 0) {
			ssh_result res;

			/* The driver ended before its mark: its exit and stderr say why. */
			if (ssh_chan_finish(x->ch, &res, err) == LM_OK) {
				lm_err(err, LM_EFAIL, "reading the guest's facts exited %d: %.200s", res.exit_code,
				    res.err.data ? res.err.data : "");
				ssh_result_free(&res);
			}
			x->ch = NULL;
			rc = LM_EFAIL;
		} else
			rc = guest_facts_parse(f, text, err);
	}
	if (rc != LM_OK) {
		deploy_exec_skip(x);
		return rc;
	}
	*out = x;
	return LM_OK;
}

void
deploy_exec_skip(deploy_exec *x)
{
	ssh_result res;
	char err[LM_ERRLEN];

	if (x == NULL)
		return;
	/* EOF is the driver's "nothing to do": it exits 0 without another word. */
	if (x->ch != NULL && ssh_chan_finish(x->ch, &res, err) == LM_OK)
		ssh_result_free(&res);
	free(x);
}

void
deploy_exec_send(deploy_exec *x, const char *payload, const cJSON *stock, uint64_t *sent, int *settle)
{
	char *line = NULL, rerr[LM_ERRLEN];
	const char *text;
	int rc;

	*sent = 0;
	*settle = -1;
	if (stock != NULL && (line = cJSON_PrintUnformatted(stock)) == NULL) {
		x->wrc = lm_err(x->werr, LM_EFAIL, "out of memory");
		return;
	}
	/* cJSON escapes every control character in a string: the answer is one line. */
	rc = ssh_chan_write(x->ch, line ? "install-stock\n" : "install\n", line ? 14 : 8, x->werr);
	if (rc == LM_OK && line)
		rc = ssh_chan_write(x->ch, line, strlen(line), x->werr) == LM_OK ? ssh_chan_write(x->ch, "\n", 1, x->werr)
		    : LM_EFAIL;
	free(line);
	if (rc == LM_OK)
		rc = ssh_chan_write_file(x->ch, payload, sent, x->werr);
	x->wrc = rc;
	ssh_chan_send_eof(x->ch);
	/* Up to the settle's mark, or the end (then deploy_exec_result reads nothing more); a read
	 * that fails here fails there again, saying why. */
	if (rc == LM_OK && ssh_chan_read_until(x->ch, SETTLING, &text, rerr) == LM_OK) {
		size_t n = strlen(text), m = strlen(SETTLING "\n");
		const char *p;

		if (n > m && strcmp(text + n - m, SETTLING "\n") == 0) {
			/* the line before the mark: "lume-metal:settle N", N up to 600 */
			for (p = text + n - m - 1; p > text && p[-1] != '\n'; p--)
				;
			if (strncmp(p, "lume-metal:settle ", 18) == 0 && p[18] >= '0' && p[18] <= '9')
				*settle = (int)strtol(p + 18, NULL, 10);
			if (*settle > 600)
				*settle = 600;
			if (*settle < 0)
				*settle = 0;
		}
	}
}

int
deploy_exec_ready(deploy_exec *x, int *fd, int64_t *deadline)
{
	return ssh_chan_ready(x->ch, fd, deadline);
}

int
deploy_exec_result(deploy_exec *x, cJSON **out, int *code, char *err)
{
	ssh_result res;
	int rc = x->wrc;

	*out = NULL;
	/* Whatever happened, what the guest said is read: a driver that could not write the upload
	 * says why on stderr and ends. */
	if (ssh_chan_finish(x->ch, &res, err) != LM_OK) {
		if (rc != LM_OK)
			lm_err(err, LM_EFAIL, "%s: upload of %s.tar.gz failed: %s", x->where, x->sha, x->werr);
		free(x);
		return LM_EFAIL;
	}
	*code = res.exit_code;
	if ((*out = guest_json_result(res.out.data)) == NULL) {
		if (rc != LM_OK)
			lm_err(err, LM_EFAIL, "%s: upload of %s.tar.gz failed: %s%s%.300s", x->where, x->sha, x->werr,
			    res.err.data ? "; the guest said: " : "", res.err.data ? res.err.data : "");
		else
			lm_err(err, LM_EFAIL, "%s: the install printed no JSON result (exit %d): %.300s", x->where,
			    res.exit_code, res.err.data ? res.err.data : "");
		rc = LM_EFAIL;
	} else
		rc = LM_OK;
	ssh_result_free(&res);
	free(x);
	return rc;
}

/* deploy_exec: see deploy_exec.h. */
#include "ops/deploy_exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define MARK "lume-metal:facts-end"
#define SETTLING "lume-metal:settling" /* install.sh --mark-settle, after "lume-metal:settle N" */

/* After the facts: when the payload is current and the controller does not insist ($2 is not
 * "wait": --force), the driver ends at once, so an unchanged rerun costs no round trip more than
 * the facts. Else the controller's word, then the payload into staging/ under a name of this
 * driver's own, its gzip stream read whole by tar while common.sh and install.sh are taken out
 * of it (a cut-off upload ends here, before any of it runs), install.sh run from that copy with
 * --verified (it checks the SHA-256 first) and --mark-settle, and one find that removes this run's files and
 * uploads of runs that died (never a live one: those are not 10 minutes old). $1 is the
 * payload's SHA-256, $3 and $4 (when not empty) install.sh's --confirm-timeout and
 * --confirm-settle. */
static const char driver[] =
    "echo " MARK "\n"
    "[ \"$2\" = wait ] || ! cd -P \"$R/current\" 2>/dev/null || case $PWD in */releases/\"$1\") exit 0 ;; esac\n"
    "IFS= read -r go || exit 0\n"
    "case $go in install | install-stock) ;; *) exit 0 ;; esac\n"
    /* the facts left it in a release, which the install may prune */
    "cd \"$HOME\" || exit 1\n"
    "h=$1 S=\"$R/staging\" ct=$3 cs=$4\n"
    "[ -d \"$S\" ] || mkdir -p \"$S\" 2>/dev/null || { echo \"cannot create the directory $S\" >&2; exit 1; }\n"
    "p=\"$S/.$h.tar.gz.part.$$\"\n"
    "set -- --payload \"$p\" --sha256 \"$h\" --verified --mark-settle\n"
    "[ -z \"$ct\" ] || set -- \"$@\" --confirm-timeout \"$ct\"\n"
    "[ -z \"$cs\" ] || set -- \"$@\" --confirm-settle \"$cs\"\n"
    "if [ \"$go\" = install-stock ] && IFS= read -r k && printf '%s\\n' \"$k\" >\"$p.stock\"; then\n"
    "  set -- \"$@\" --stock-file \"$p.stock\"\n"
    "fi\n"
    "if ! cat >\"$p\"; then w=\"cannot write $p (full disk?)\"\n"
    "elif ! w=$(tar -xzOf \"$p\" bin/common.sh bin/install.sh 2>&1 >\"$p.sh\"); then w=\"it did not arrive whole: $w\"\n"
    "else w=''; fi\n"
    "if [ -n \"$w\" ]; then echo \"upload of $h.tar.gz failed: $w\" >&2; rc=1; else sh \"$p.sh\" \"$@\"; rc=$?; fi\n"
    "find \"$S\" -name '.*.part.*' \\( -name \"${p##*/}\" -o -name \"${p##*/}.*\" -o -mmin +10 \\) -delete 2>/dev/null\n"
    "exit $rc\n";

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
	lm_buf script = {0}, cmd = {0};
	deploy_exec *x;
	const char *text, *argv[] = {"sh", "-c", NULL, "sh", sha, force ? "wait" : "", confirm_timeout ? confirm_timeout : "",
	    confirm_settle ? confirm_settle : "", NULL};
	int rc;

	*out = NULL;
	memset(f, 0, sizeof *f);
	if (!lm_is_sha256(sha))
		return lm_err(err, LM_EINPUT, "not a SHA-256: %.80s", sha);
	if ((x = calloc(1, sizeof *x)) == NULL || lm_buf_addf(&script, "%s%s", guest_facts_script(), driver) != 0 ||
	    (argv[2] = script.data, ssh_quote_argv(&cmd, argv)) != LM_OK) {
		free(x);
		lm_buf_free(&script);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	snprintf(x->sha, sizeof x->sha, "%s", sha);
	snprintf(x->where, sizeof x->where, "%s", ssh_where(c));
	rc = ssh_chan_open(&x->ch, c, cmd.data, err);
	lm_buf_free(&script);
	lm_buf_free(&cmd);
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

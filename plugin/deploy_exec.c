/* deploy_exec: see deploy_exec.h. */
#include "deploy_exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MARK "lume-metal:facts-end"

/* After the facts: the controller's word, then the payload into staging/ under a name of this
 * driver's own, and install.sh run on it with --verified: the text of the payload's own
 * bin/common.sh and bin/install.sh as the controller verified them ($2), so nothing of the
 * upload runs before install.sh has checked its SHA-256 (a payload cut off on the way fails
 * there, before anything moves), and the payload is decompressed only by install.sh. Then one
 * find removes this run's files and uploads of runs that died (never a live one: those are not
 * 10 minutes old). $1 is the payload's SHA-256. */
static const char driver[] =
    "echo " MARK "\n"
    "IFS= read -r go || exit 0\n"
    "case $go in install | install-stock) ;; *) exit 0 ;; esac\n"
    /* the facts left it in a release, which the install may prune */
    "cd \"$HOME\" || exit 1\n"
    "h=$1 i=$2 S=\"$HOME/Library/Application Support/lume-metal/staging\"\n"
    "[ -d \"$S\" ] || mkdir -p \"$S\" 2>/dev/null || { echo \"cannot create the directory $S\" >&2; exit 1; }\n"
    "p=\"$S/.$h.tar.gz.part.$$\"\n"
    "set -- --payload \"$p\" --sha256 \"$h\" --verified\n"
    "if [ \"$go\" = install-stock ] && IFS= read -r k && printf '%s\\n' \"$k\" >\"$p.stock\"; then\n"
    "  set -- \"$@\" --stock-file \"$p.stock\"\n"
    "fi\n"
    "if cat >\"$p\"; then sh -c \"$i\" install.sh \"$@\"; rc=$?\n"
    "else echo \"upload of $h.tar.gz failed: cannot write $p (full disk?)\" >&2; rc=1; fi\n"
    "find \"$S\" -name '.*.part.*' \\( -name \"${p##*/}\" -o -name \"${p##*/}.*\" -o -mmin +10 \\) -delete 2>/dev/null\n"
    "exit $rc\n";

struct deploy_exec {
	ssh_chan *ch;
	char sha[65];
	char where[320];
};

int
deploy_exec_open(deploy_exec **out, ssh_conn *c, const char *sha, const char *installer, guest_facts *f,
    char *err)
{
	lm_buf script = {0}, cmd = {0};
	deploy_exec *x;
	const char *text, *argv[] = {"sh", "-c", NULL, "sh", sha, installer, NULL};
	int rc;

	*out = NULL;
	memset(f, 0, sizeof *f);
	if (!lm_is_sha256(sha) || installer == NULL)
		return lm_err(err, LM_EINPUT, "not a verified payload");
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

int
deploy_exec_install(deploy_exec *x, const char *payload, const cJSON *stock, uint64_t *sent, cJSON **out,
    int *code, char *err)
{
	char werr[LM_ERRLEN] = "", *line = NULL;
	ssh_chan *ch = x->ch;
	ssh_result res;
	int rc;

	*out = NULL;
	*sent = 0;
	x->ch = NULL;
	if (stock != NULL && (line = cJSON_PrintUnformatted(stock)) == NULL) {
		ssh_chan_free(ch);
		free(x);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	/* cJSON escapes every control character in a string: the answer is one line. */
	rc = ssh_chan_write(ch, line ? "install-stock\n" : "install\n", line ? 14 : 8, werr);
	if (rc == LM_OK && line)
		rc = ssh_chan_write(ch, line, strlen(line), werr) == LM_OK ? ssh_chan_write(ch, "\n", 1, werr) : LM_EFAIL;
	free(line);
	if (rc == LM_OK)
		rc = ssh_chan_write_file(ch, payload, sent, werr);
	/* Whatever happened, what the guest said is read: a driver that could not write the upload
	 * says why on stderr and ends. */
	if (ssh_chan_finish(ch, &res, err) != LM_OK) {
		if (rc != LM_OK)
			lm_err(err, LM_EFAIL, "%s: upload of %s.tar.gz failed: %s", x->where, x->sha, werr);
		free(x);
		return LM_EFAIL;
	}
	*code = res.exit_code;
	if ((*out = guest_json_result(res.out.data)) == NULL) {
		if (rc != LM_OK)
			lm_err(err, LM_EFAIL, "%s: upload of %s.tar.gz failed: %s%s%.300s", x->where, x->sha, werr,
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

/* bench_vm: `lume-metal bench` on one VM (see bench_vm.h): the guest's llama-bench and model
 * hashed, llama-bench run stock and through the installed release's run-with-shim (and on this
 * host with --host-baseline), the arms parsed and compared, the evidence and a ledger record
 * written. Everything the guest prints is parsed bounded and checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench.h"
#include "ops/bench_vm.h"
#include "ops/session.h"
#include "core/evidence.h"
#include "net/guest.h"
#include "core/util.h"

/* The longest llama-bench path taken from the guest. */
#define BENCH_PATH_MAX 4096

/* The line at at, before end: *n gets its length without the newline. LM_EINPUT when no
 * newline comes within max + 1 bytes (a line over max bytes, or the text ends first). */
static int
take_line(const char *at, size_t *n, const char *end, size_t max)
{
	size_t room = (size_t)(end - at);
	const char *nl = memchr(at, '\n', room < max + 1 ? room : max + 1);

	if (nl == NULL)
		return LM_EINPUT;
	*n = (size_t)(nl - at);
	return LM_OK;
}

/* out gets p[0..n) when it is 64 lowercase hex digits; true then. */
static int
hex64(char out[65], const char *p, size_t n)
{
	if (n != 64)
		return 0;
	memcpy(out, p, 64);
	out[64] = '\0';
	return lm_is_sha256(out);
}

int
bench_parse_hashes(char **lb, char lb_sha[65], char model_sha[65], const char *text, size_t len, char *err)
{
	const char *p = text ? text : "", *end = p + (text ? len : 0);
	size_t n;

	*lb = NULL;
	lb_sha[0] = model_sha[0] = '\0';
	if (take_line(p, &n, end, BENCH_PATH_MAX - 1) != LM_OK || n == 0)
		return lm_err(err, LM_EINPUT, "the guest's hash step printed no llama-bench path on its first line "
		    "(nothing, no newline, or over %d bytes)", BENCH_PATH_MAX - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return lm_err(err, LM_EINPUT, "the guest's hash step printed a llama-bench path with a control "
			    "character (byte %zu)", i + 1);
	if ((*lb = strndup(p, n)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	p += n + 1;
	if (take_line(p, &n, end, 64) != LM_OK || !hex64(lb_sha, p, n))
		goto bad;
	p += n + 1;
	if (take_line(p, &n, end, 64) != LM_OK || !hex64(model_sha, p, n))
		goto bad;
	p += n + 1;
	if (p != end)
		goto bad;
	return LM_OK;
bad:
	free(*lb);
	*lb = NULL;
	lb_sha[0] = model_sha[0] = '\0';
	return lm_err(err, LM_EINPUT, "shasum in the guest printed no SHA-256 (want the llama-bench path, then two "
	    "lines of 64 hex digits)");
}

/* One llama-bench arm's raw output. */
typedef struct {
	lm_buf out, err;
	char llama_bench_sha[65], model_sha[65];
} arm_run;

static void
arm_run_free(arm_run *a)
{
	lm_buf_free(&a->out);
	lm_buf_free(&a->err);
}

/* The llama-bench arguments after the binary, the same for every arm. */
static void
bench_args(const bench_vm_opts *b, const char *model, const char **argv, char num[4][16])
{
	size_t i = 0;

	snprintf(num[0], 16, "%d", b->p), snprintf(num[1], 16, "%d", b->n), snprintf(num[2], 16, "%d", b->r);
	argv[i++] = "-m", argv[i++] = model, argv[i++] = "-p", argv[i++] = num[0], argv[i++] = "-n";
	argv[i++] = num[1], argv[i++] = "-r", argv[i++] = num[2];
	if (b->threads > 0) {
		snprintf(num[3], 16, "%d", b->threads);
		argv[i++] = "-t", argv[i++] = num[3];
	}
	argv[i++] = "-o", argv[i++] = "json", argv[i] = NULL;
}

/* The last non-empty line of text (at most 200 bytes), for an error message. */
static const char *
last_line(char out[201], const char *text)
{
	const char *p = text ? text : "", *start = p, *end;

	for (const char *q = p; *q; q++)
		if (*q == '\n' && q[1] != '\0' && q[1] != '\n')
			start = q + 1;
	end = start + strcspn(start, "\n");
	snprintf(out, 201, "%.*s", (int)(end - start), start);
	return out;
}

/* Runs guest-scripts/bench-hashes.sh in the guest: *lb (caller frees) is llama-bench's path there, and a gets
 * the hashes of it and of the model. */
static int
guest_hashes(char **lb, arm_run *a, ssh_conn *c, const bench_vm_opts *b, char *err)
{
	const char *args[] = {b->llama_bench, b->model, NULL};
	remote_cmd *cmd;
	ssh_result res;
	int rc;

	*lb = NULL;
	if (rcmd_script(&cmd, RSCRIPT_BENCH_HASHES, args) != LM_OK)
		return lm_err(err, LM_EFAIL, "out of memory");
	rc = ssh_exec(c, cmd, NULL, 0, &res, err);
	rcmd_free(cmd);
	if (rc != LM_OK)
		return rc;
	if (res.exit_code != 0) {
		char last[201];

		rc = lm_err(err, res.exit_code == 3 || res.exit_code == 4 ? LM_EINPUT : LM_EFAIL, "%s",
		    res.err.data && *res.err.data ? last_line(last, res.err.data) :
		    "cannot hash llama-bench and the model in the guest");
	} else
		rc = bench_parse_hashes(lb, a->llama_bench_sha, a->model_sha, res.out.data, res.out.len, err);
	ssh_result_free(&res);
	return rc;
}

/* Runs one guest arm: prefix (NULL, or run-with-shim) then llama-bench and its arguments. */
static int
guest_arm(arm_run *a, ssh_conn *c, const char *prefix, const char *lb, const bench_vm_opts *b,
    const char *what, lm_buf *cmdline, char *err)
{
	const char *argv[24];
	char num[4][16], msg[LM_ERRLEN];
	remote_cmd *cmd;
	ssh_result r;
	size_t i = 0;
	int rc;

	if (prefix)
		argv[i++] = prefix;
	argv[i++] = lb;
	bench_args(b, b->model, argv + i, num);
	if (rcmd_argv(&cmd, argv) != LM_OK)
		return lm_err(err, LM_EFAIL, "out of memory");
	if (cmdline && cmdline->len == 0)
		lm_buf_addf(cmdline, "%s", rcmd_text(cmd));
	rc = ssh_exec(c, cmd, NULL, 0, &r, msg);
	rcmd_free(cmd);
	if (rc != LM_OK) {
		ssh_result_free(&r);
		return lm_err(err, LM_EFAIL, "llama-bench (%s arm): %s", what, msg);
	}
	if (r.exit_code != 0) {
		char last[201];

		rc = lm_err(err, LM_EINPUT, "llama-bench (%s arm) exited %d: %s", what, r.exit_code,
		    last_line(last, r.err.data));
		ssh_result_free(&r);
		return rc;
	}
	a->out = r.out;
	a->err = r.err;
	return LM_OK;
}

/* The bare-metal arm on this host, with the hashes of its binary and model. */
static int
host_arm(arm_run *a, const bench_vm_opts *b, char *err)
{
	const char *argv[24], *model = b->host_model ? b->host_model : b->model;
	char num[4][16], path[4096] = "";
	const char *lb = b->host_llama_bench ? b->host_llama_bench : "llama-bench";
	int st, rc;

	if (strchr(lb, '/') != NULL)
		snprintf(path, sizeof path, "%s", lb);
	else
		for (const char *p = getenv("PATH"); p && *p && !*path; p += strcspn(p, ":") + (p[strcspn(p, ":")] != 0)) {
			snprintf(path, sizeof path, "%.*s/%s", (int)strcspn(p, ":"), p, lb);
			if (access(path, X_OK) != 0)
				*path = '\0';
		}
	if (!*path || access(path, X_OK) != 0)
		return lm_err(err, LM_EINPUT, "--host-baseline: llama-bench not found on this host: %s", lb);
	if (access(model, R_OK) != 0)
		return lm_err(err, LM_EINPUT, "--host-baseline: model not found on this host: %s", model);
	if ((rc = lm_sha256_file(a->llama_bench_sha, path, err)) != LM_OK ||
	    (rc = lm_sha256_file(a->model_sha, model, err)) != LM_OK)
		return rc;
	argv[0] = path;
	bench_args(b, model, argv + 1, num);
	if ((rc = lm_run(&a->out, &a->err, &st, argv, err)) != LM_OK)
		return rc;
	if (st != 0)
		return lm_err(err, LM_EINPUT, "llama-bench (host arm) %s %d", st > 128 ? "was killed by signal" : "exited",
		    st > 128 ? st - 128 : st);
	return LM_OK;
}

static void
add_hashes(cJSON *o, const char *side, const char *lb, const arm_run *a)
{
	cJSON *h = cJSON_AddObjectToObject(o, side);

	cJSON_AddStringToObject(h, "llamaBench", lb);
	cJSON_AddStringToObject(h, "llamaBenchSha256", a->llama_bench_sha);
	cJSON_AddStringToObject(h, "modelSha256", a->model_sha);
}

/* metadata.md: what was run where, for a person reading the evidence. */
static void
metadata(lm_buf *m, const guest_target *t, const session_vm *s, const cJSON *table, const char *cmdline,
    const cJSON *hashes)
{
	char *tj = cJSON_Print(table), *hj = cJSON_Print(hashes);
	const identity_mac *mac = &s->mac;

	lm_buf_addf(m, "# lume-metal bench: %s\n\n", t->name);
	lm_buf_addf(m, "- guest: macOS %s (%s), %s, %s\n", s->f.os ? s->f.os : "?", s->f.build ? s->f.build : "?",
	    s->f.model ? s->f.model : "?", s->f.chip ? s->f.chip : "?");
	/* The Mac that runs the VM, as the session read it (the ledger key's host part), never
	 * the controller's own facts unless it is that Mac ("local"). */
	lm_buf_addf(m, "- host: %s, %s, macOS %s (%s) [%s%s%s]\n", *mac->chip ? mac->chip : "?", *mac->model ? mac->model : "?",
	    *mac->os ? mac->os : "?", *mac->build ? mac->build : "?", s->host_source,
	    strcmp(s->host_source, "guest") == 0 ? ": " : "", strcmp(s->host_source, "guest") == 0 ? s->host_note : "");
	lm_buf_addf(m, "- installed payload: %s\n", s->f.current ? s->f.current : "none");
	lm_buf_addf(m, "- command (stock arm; the shim arm prefixes run-with-shim): `%s`\n", cmdline);
	lm_buf_addf(m, "- figures: medians of samples_ts (tokens/s)\n\n## Hashes\n\n```json\n%s\n```\n\n", hj ? hj : "");
	lm_buf_addf(m, "## Table\n\n```json\n%s\n```\n", tj ? tj : "");
	free(tj);
	free(hj);
}

/* The --evidence folder: each arm's raw output, results.csv and metadata.md. */
static int
write_evidence(const bench_vm_opts *b, const arm_run *stock, const arm_run *shim, const arm_run *host,
    const lm_buf *csv, const lm_buf *md, char *msg)
{
	evidence_file files[9];
	size_t n = 0;

	files[n++] = (evidence_file){"stock.json", stock->out.data, stock->out.len};
	files[n++] = (evidence_file){"stock.stderr", stock->err.data ? stock->err.data : "", stock->err.len};
	files[n++] = (evidence_file){"shim.json", shim->out.data, shim->out.len};
	files[n++] = (evidence_file){"shim.stderr", shim->err.data ? shim->err.data : "", shim->err.len};
	if (b->host_baseline) {
		files[n++] = (evidence_file){"host.json", host->out.data, host->out.len};
		files[n++] = (evidence_file){"host.stderr", host->err.data ? host->err.data : "", host->err.len};
	}
	files[n++] = (evidence_file){"results.csv", csv->data, csv->len};
	files[n++] = (evidence_file){"metadata.md", md->data, md->len};
	return evidence_write(b->evidence, files, n, msg);
}

int
bench_vm_run(cJSON **out, guest_target *t, const session_opts *o, char *err)
{
	const bench_vm_opts *b = o->bench;
	cJSON *r = session_result_new(t, "failed"), *hashes = cJSON_CreateObject(), *table = NULL, *rec = NULL;
	arm_run stock = {0}, shim = {0}, host = {0};
	bench_arm as = {0}, ah = {0}, ahost = {0};
	lm_buf csv = {0}, md = {0}, cmdline = {0};
	char msg[LM_ERRLEN], *lb = NULL, rws[4200];
	session_vm s;

	(void)err;
	*out = r;
	if (session_open(&s, r, t, o) != LM_OK) {
		cJSON_Delete(hashes);
		return LM_OK;
	}
	if (s.f.current == NULL) {
		session_set_state(r, "failed", "no lume-metal release is current in the guest; deploy first (the shim arm "
		    "runs through its run-with-shim)");
		goto done;
	}
	if (guest_hashes(&lb, &stock, s.c, b, msg) != LM_OK) {
		session_set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		goto done;
	}
	shim = (arm_run){0};
	memcpy(shim.llama_bench_sha, stock.llama_bench_sha, 65);
	memcpy(shim.model_sha, stock.model_sha, 65);
	if (b->host_baseline) {
		if (host_arm(&host, b, msg) != LM_OK) {
			session_set_state(r, "failed", msg);
			goto done;
		}
		if (strcmp(host.model_sha, stock.model_sha) != 0 && !b->allow_different_model) {
			session_set_state(r, "failed", "the guest's model and this host's differ (SHA-256); --allow-different-model "
			    "compares them anyway");
			goto done;
		}
	}
	snprintf(rws, sizeof rws, "%s", GUEST_ROOT "/current/bin/run-with-shim");
	if (guest_arm(&stock, s.c, NULL, lb, b, "stock", &cmdline, msg) != LM_OK ||
	    guest_arm(&shim, s.c, rws, lb, b, "shim", NULL, msg) != LM_OK) {
		session_set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		goto done;
	}
	/* Parse every arm before anything is written. */
	if (bench_parse_json(&as, stock.out.data ? stock.out.data : "", stock.out.len, "stock.json", b->min_samples, msg) != LM_OK ||
	    bench_parse_json(&ah, shim.out.data ? shim.out.data : "", shim.out.len, "shim.json", b->min_samples, msg) != LM_OK ||
	    (b->host_baseline && bench_parse_json(&ahost, host.out.data ? host.out.data : "", host.out.len, "host.json",
		b->min_samples, msg) != LM_OK)) {
		session_set_state(r, "failed", msg);
		goto done;
	}
	bench_parse_stderr(&as.metal, stock.err.data ? stock.err.data : "");
	bench_parse_stderr(&ah.metal, shim.err.data ? shim.err.data : "");
	as.stderr_path = strdup("stock.stderr");
	ah.stderr_path = strdup("shim.stderr");
	if (b->host_baseline) {
		bench_parse_stderr(&ahost.metal, host.err.data ? host.err.data : "");
		ahost.stderr_path = strdup("host.stderr");
	}
	if (bench_table(&table, &as, &ah, b->host_baseline ? &ahost : NULL, b->workload, msg) != LM_OK) {
		session_set_state(r, "failed", msg);
		goto done;
	}
	add_hashes(hashes, "guest", lb, &stock);
	if (b->host_baseline)
		add_hashes(hashes, "host", b->host_llama_bench ? b->host_llama_bench : "llama-bench", &host);
	lm_buf_addf(&csv, "%s\n", BENCH_CSV_HEADER);
	if (bench_render(&csv, table, BENCH_CSV, NULL, msg) != LM_OK) {
		session_set_state(r, "failed", msg);
		goto done;
	}
	metadata(&md, t, &s, table, cmdline.data ? cmdline.data : "", hashes);
	if (b->evidence) {
		if (write_evidence(b, &stock, &shim, &host, &csv, &md, msg) != LM_OK) {
			session_set_state(r, "failed", msg);
			goto done;
		}
		cJSON_AddStringToObject(r, "evidence", b->evidence);
	}
	rec = bench_record(table, t->name);
	cJSON_AddItemToObject(rec, "hashes", cJSON_Duplicate(hashes, 1));
	cJSON_AddStringToObject(rec, "command", cmdline.data ? cmdline.data : "");
	if (s.f.current)
		cJSON_AddStringToObject(rec, "payloadSha256", s.f.current);
	if (b->evidence)
		cJSON_AddStringToObject(rec, "evidence", b->evidence);
	cJSON_AddItemToObject(r, "bench", cJSON_Duplicate(table, 1));
	cJSON_AddItemToObject(r, "hashes", cJSON_Duplicate(hashes, 1));
	session_set_state(r, cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(table, "shim_effective")) ? "shim-not-effective"
	    : "benchmarked", NULL);
	session_record(r, o, s.key, rec);
done:
	cJSON_Delete(rec);
	cJSON_Delete(table);
	cJSON_Delete(hashes);
	bench_arm_free(&as);
	bench_arm_free(&ah);
	bench_arm_free(&ahost);
	arm_run_free(&stock);
	arm_run_free(&shim);
	arm_run_free(&host);
	lm_buf_free(&csv);
	lm_buf_free(&md);
	lm_buf_free(&cmdline);
	free(lb);
	session_close(&s, r);
	return LM_OK;
}

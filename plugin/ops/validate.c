/* validate: see validate.h. */
#include "ops/validate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/bench.h"
#include "core/evidence.h"
#include "net/guest.h"
#include "core/ledger.h"
#include "core/util.h"


static cJSON *
metal_json(const bench_metal *m)
{
	cJSON *o;

	if (!m->seen)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "gpu_name", m->gpu_name);
	if (m->apple_family)
		cJSON_AddNumberToObject(o, "apple_family", m->apple_family);
	else
		cJSON_AddNullToObject(o, "apple_family");
	cJSON_AddItemToObject(o, "simdgroup_reduction", bench_tri_json(m->simdgroup_reduction));
	cJSON_AddItemToObject(o, "simdgroup_matrix_mul", bench_tri_json(m->simdgroup_mm));
	return o;
}

/* One arm's output. */
typedef struct {
	lm_buf out, err;
	int code;        /* exit status; -1 when it died of a signal or did not finish */
	char msg[LM_ERRLEN];
} arm;

static void
arm_free(arm *a)
{
	lm_buf_free(&a->out);
	lm_buf_free(&a->err);
}

/* Runs script (guest-scripts/) with args in the guest; a, its output and exit status. LM_OK when
 * it ran to an exit status. cmdline, when not NULL, gets the command in-dir.sh runs (args from
 * the second). */
static int
run(arm *a, ssh_conn *c, rscript script, const char *const *args, lm_buf *cmdline)
{
	remote_cmd *cmd = NULL, *shown = NULL;
	ssh_result res;
	int rc;

	a->code = -1;
	if (rcmd_script(&cmd, script, args) != LM_OK || (cmdline && (rcmd_argv(&shown, args + 1) != LM_OK ||
	    lm_buf_addf(cmdline, "%s", rcmd_text(shown)) != 0))) {
		rcmd_free(cmd);
		rcmd_free(shown);
		return lm_err(a->msg, LM_EFAIL, "out of memory");
	}
	rcmd_free(shown);
	rc = ssh_exec(c, cmd, NULL, 0, &res, a->msg);
	rcmd_free(cmd);
	a->out = res.out;
	a->err = res.err;
	if (rc == LM_OK)
		a->code = res.exit_code;
	return rc;
}

/* The last line of b that starts with prefix and has something after it: what follows the
 * prefix (*n bytes), or NULL when there is none. */
static const char *
last_line(const lm_buf *b, const char *prefix, size_t *n)
{
	const char *p = b->data ? b->data : "", *end = p + b->len, *best = NULL;
	size_t pl = strlen(prefix);

	*n = 0;
	while (p < end) {
		const char *line = p;
		size_t ln;

		p = validate_next_line(p, end, &ln);
		if (ln > pl && memcmp(line, prefix, pl) == 0)
			best = line + pl, *n = ln - pl;
	}
	return best;
}

/* The last non-empty line of b (at most 200 bytes), for a message. */
static const char *
last_words(char out[201], const lm_buf *b)
{
	size_t n;
	const char *line = last_line(b, "", &n);

	snprintf(out, 201, "%.*s", (int)(n > 200 ? 200 : n), line ? line : "");
	return out;
}

/* The last line of b the shim wrote ("[lume-metal] ..."), without that prefix, printable, at most
 * 200 bytes; 1 when there is one ("" and 0 otherwise). */
static int
shim_said(char out[201], const lm_buf *b)
{
	size_t n, k = 0;
	const char *line = last_line(b, "[lume-metal] ", &n);

	for (size_t i = 0; line && i < n && k < 200; i++)
		out[k++] = (unsigned char)line[i] >= 0x20 && (unsigned char)line[i] < 0x7f ? line[i] : '?';
	out[k] = '\0';
	return line != NULL;
}

/* The end of b, at most VALIDATE_EVIDENCE_MAX bytes, for the evidence. */
static evidence_file
tail_file(const char *name, const lm_buf *b)
{
	size_t n = b->len > VALIDATE_EVIDENCE_MAX ? VALIDATE_EVIDENCE_MAX : b->len;

	return (evidence_file){name, b->data ? b->data + b->len - n : "", n};
}

/* The three lines of the prep step: a path without control characters, two SHA-256s. */
static int
prep_parse(char **lp, char model_sha[65], char text_sha[65], const lm_buf *b)
{
	const char *p = b->data ? b->data : "", *end = p + b->len, *line[3];
	size_t n[3];

	for (int i = 0; i < 3; i++) {
		if (p >= end)
			return LM_EINPUT;
		line[i] = p;
		p = validate_next_line(p, end, &n[i]);
	}
	if (n[0] == 0 || n[0] > 4095 || n[1] != 64 || n[2] != 64)
		return LM_EINPUT;
	for (size_t i = 0; i < n[0]; i++)
		if ((unsigned char)line[0][i] < 0x20 || line[0][i] == 0x7f)
			return LM_EINPUT;
	snprintf(model_sha, 65, "%.64s", line[1]);
	snprintf(text_sha, 65, "%.64s", line[2]);
	if (!lm_is_sha256(model_sha) || !lm_is_sha256(text_sha))
		return LM_EINPUT;
	return (*lp = strndup(line[0], n[0])) ? LM_OK : LM_EFAIL;
}

static void
progress(const validate_opts *v, const guest_target *t, const char *armname, const char *phase, int64_t t0)
{
	if (v->progress)
		v->progress(v->progress_ctx, t->name, armname, phase, (double)(lm_now_ms() - t0) / 1000.0);
}

/* VM name's evidence directory under dir: the name with every byte but letters, digits, '.', '_'
 * and '-' as '_' ("mac-1/tahoe-a" is mac-1_tahoe-a). */
static int
evidence_dir(char *out, size_t len, const char *dir, const char *name)
{
	size_t n = strlen(dir);

	if (lm_fmt(out, len, "%s/%s", dir, name) < 0)
		return LM_EFAIL;
	for (char *p = out + n + 1; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("._-", *p)))
			*p = '_';
	return LM_OK;
}

static int
fail_state(cJSON *r, const char *msg)
{
	session_set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
	return LM_EFAIL;
}

/* One validation as it runs: what each step hands on. */
typedef struct {
	cJSON *r, *val, *reasons, *rec;  /* the result, its "validation", the reasons, the record (owned) */
	session_vm *s;
	guest_target *t;
	const session_opts *o;
	const validate_opts *v;
	arm mk, prep, stock, shim, clean;
	lm_buf cmdline;                  /* the stock arm's command */
	bench_metal ms, mh;              /* the stock arm's Metal device, the shim arm's */
	validate_stats st;
	char text_sha[65], model_sha[65], build[201], *dir, *lp;
	char ctx[16], chunks[16], text[4200], base[4200], rws[4200], evdir[4200];
	int pass, shim_err;
} vrun;

/* The text's SHA-256 on this host, to hold against the guest's. */
static int
step_text(vrun *w)
{
	char msg[LM_ERRLEN];

	if (lm_sha256_file(w->text_sha, w->v->text, msg) != LM_OK) {
		session_set_state(w->r, "failed", msg);
		return LM_EFAIL;
	}
	return LM_OK;
}

/* A scratch directory in the guest (w->dir) and the paths in it. */
static int
step_scratch(vrun *w)
{
	static const char *const a[] = {"validate", NULL};
	char *dir;

	if (run(&w->mk, w->s->c, RSCRIPT_SCRATCH, a, NULL) != LM_OK || w->mk.code != 0)
		return fail_state(w->r, w->mk.code > 0 ? "mktemp -d failed in the guest" : w->mk.msg);
	dir = strndup(w->mk.out.data ? w->mk.out.data : "", w->mk.out.data ? strcspn(w->mk.out.data, "\r\n") : 0);
	if (dir == NULL || dir[0] != '/' || strstr(dir, "/lume-metal-validate.") == NULL ||
	    lm_fmt(w->text, sizeof w->text, "%s/text.txt", dir) < 0 || lm_fmt(w->base, sizeof w->base, "%s/base.kld",
	    dir) < 0 || lm_fmt(w->rws, sizeof w->rws, "%s/bin/run-with-shim", dir) < 0) {
		session_set_state(w->r, "failed", "mktemp -d in the guest gave no usable directory");
		free(dir);
		return LM_EFAIL;
	}
	w->dir = dir;
	return LM_OK;
}

static int
step_upload(vrun *w)
{
	char msg[LM_ERRLEN];
	uint64_t sent;

	if (ssh_upload(w->s->c, w->o->payload, w->dir, "payload.tar.gz", &sent, msg) != LM_OK ||
	    ssh_upload(w->s->c, w->v->text, w->dir, "text.txt", &sent, msg) != LM_OK)
		return fail_state(w->r, msg);
	return LM_OK;
}

/* The payload unpacked; llama-perplexity found, the model's and the text's SHA-256 read. */
static int
step_prep(vrun *w)
{
	const char *a[] = {w->dir, w->v->llama_perplexity, w->v->model, NULL};
	char last[201], gtext_sha[65];

	if (run(&w->prep, w->s->c, RSCRIPT_VALIDATE_PREP, a, NULL) != LM_OK)
		return fail_state(w->r, w->prep.msg);
	if (w->prep.code != 0) {
		session_set_state(w->r, "failed", last_words(last, &w->prep.err));
		if (w->prep.code == 3 || w->prep.code == 4)
			cJSON_AddTrueToObject(w->r, "inputError");
		return LM_EFAIL;
	}
	if (prep_parse(&w->lp, w->model_sha, gtext_sha, &w->prep.out) != LM_OK) {
		session_set_state(w->r, "failed", "the guest's preparation printed no llama-perplexity path and SHA-256s");
		return LM_EFAIL;
	}
	if (strcmp(gtext_sha, w->text_sha) != 0) {
		session_set_state(w->r, "failed", "the text's SHA-256 in the guest differs from this host's");
		return LM_EFAIL;
	}
	return LM_OK;
}

/* Runs an arm (in-dir.sh: its directory, then the command) into a; a failure to run it (with only_timeout, a timeout
 * only) fails the validation, named by the arm. cmdline as run() takes it. */
static int
arm_exec(vrun *w, arm *a, const char *const *argv, lm_buf *cmdline, int only_timeout)
{
	char msg[LM_ERRLEN];

	if (run(a, w->s->c, RSCRIPT_IN_DIR, argv, cmdline) != LM_OK && (!only_timeout || strstr(a->msg, "timed out"))) {
		snprintf(msg, sizeof msg, "llama-perplexity (%s arm): %.400s", a == &w->stock ? "stock" : "shim", a->msg);
		return fail_state(w->r, msg);
	}
	return LM_OK;
}

/* 1. Stock: the perplexity, and the stock logits saved to the base file. */
static int
step_stock(vrun *w)
{
	const char *a[] = {w->dir, w->lp, "-m", w->v->model, "-f", w->text, "-c", w->ctx,
		"--chunks", w->chunks, "--kl-divergence-base", w->base, NULL};

	return arm_exec(w, &w->stock, a, &w->cmdline, 0);
}

/* The stock arm's exit, and its own errors: it exits 0 after them. */
static int
step_stock_check(vrun *w)
{
	char msg[LM_ERRLEN], last[201], perr[401];

	if (w->stock.code != 0) {
		snprintf(msg, sizeof msg, "llama-perplexity (stock arm) exited %d: %s", w->stock.code,
		    last_words(last, &w->stock.err));
		session_set_state(w->r, "failed", msg);
		return LM_EFAIL;
	}
	/* A text too short for 2 x context tokens is the input's. */
	if (validate_parse_errors(perr, w->stock.err.data, w->stock.err.len)) {
		snprintf(msg, sizeof msg, "llama-perplexity (stock arm) failed (it exits 0 after its own errors): %s", perr);
		session_set_state(w->r, "failed", msg);
		if (strstr(perr, ": you need at least "))
			cJSON_AddTrueToObject(w->r, "inputError");
		return LM_EFAIL;
	}
	return LM_OK;
}

/* 2. Through run-with-shim: its logits against the stock ones. Only a timeout stops here: the
 * shim breaking the workload is a verdict (step_compare). */
static int
step_shim(vrun *w)
{
	const char *a[] = {w->dir, w->rws, w->lp, "-m", w->v->model, "-c", w->ctx,
		"--kl-divergence-base", w->base, "--kl-divergence", NULL};

	return arm_exec(w, &w->shim, a, NULL, 1);
}

/* The arms' Metal devices and the shim arm's statistics against the thresholds: w->pass. */
static int
step_compare(vrun *w)
{
	char msg[LM_ERRLEN], last[201], perr[401];

	bench_parse_stderr(&w->ms, w->stock.err.data ? w->stock.err.data : "");
	bench_parse_stderr(&w->mh, w->shim.err.data ? w->shim.err.data : "");
	validate_parse_build(w->build, w->stock.err.data, w->stock.err.len);
	cJSON_AddItemToObject(w->val, "stockMetal", metal_json(&w->ms));
	cJSON_AddItemToObject(w->val, "shimMetal", metal_json(&w->mh));
	w->shim_err = w->shim.code == 0 ? validate_parse_errors(perr, w->shim.err.data, w->shim.err.len) : 0;
	if (w->shim_err == 1) {
		/* Its own error about its input (the base file, the context): nothing was compared. */
		snprintf(msg, sizeof msg, "llama-perplexity (shim arm) failed (it exits 0 after its own errors): %s", perr);
		session_set_state(w->r, "failed", msg);
		return LM_EFAIL;
	}
	if (w->shim.code != 0 || w->shim_err) {
		/* The shim broke the workload: a verdict on this image version. */
		if (w->shim_err)
			snprintf(msg, sizeof msg, "llama-perplexity (shim arm) could not evaluate the model: %s", perr);
		else if (w->shim.code > 0)
			snprintf(msg, sizeof msg, "llama-perplexity (shim arm) exited %d: %s", w->shim.code,
			    last_words(last, &w->shim.err));
		else
			snprintf(msg, sizeof msg, "llama-perplexity (shim arm): %.400s", w->shim.msg);
		cJSON_AddItemToArray(w->reasons, cJSON_CreateString(msg));
		w->st = (validate_stats){NAN, NAN, NAN, NAN, NAN, NAN, NAN};
		w->pass = 0;
		return LM_OK;
	}
	/* The statistics are LOG (stdout); a build that logs everything to stderr still reads. */
	if (validate_parse(&w->st, w->shim.out.data, w->shim.out.len, msg) != LM_OK &&
	    validate_parse(&w->st, w->shim.err.data, w->shim.err.len, msg) != LM_OK) {
		session_set_state(w->r, "failed", msg);
		return LM_EFAIL;
	}
	w->pass = validate_verdict(w->reasons, &w->st, &w->v->th);
	return LM_OK;
}

/* The comparison proves something only when the arms took different kernels. */
static int
step_kernels(vrun *w)
{
	char msg[LM_ERRLEN];

	if (w->shim.code != 0 || w->shim_err || (w->mh.simdgroup_mm == BENCH_YES && w->ms.simdgroup_mm == BENCH_NO))
		return LM_OK;
	if (w->mh.simdgroup_mm != BENCH_YES) {
		char said[201];
		int spoke = shim_said(said, &w->shim.err);

		/* why the shim arm stayed stock, in the shim's own words when it said any */
		snprintf(msg, sizeof msg, "the shim arm did not take the simdgroup paths (%s: simdgroup matrix mul. is "
		    "not true): nothing was compared; %s%s", w->mh.tag ? w->mh.tag : BENCH_METAL_TAG, spoke ?
		    "the shim said: " : "", spoke ? said : "the shim said nothing (it was not loaded into the process, or not "
		    "scoped to its name)");
		cJSON_AddItemToArray(w->reasons, cJSON_CreateString(msg));
	} else
		cJSON_AddItemToArray(w->reasons, cJSON_CreateString("the stock arm took the simdgroup paths too "
		    "(simdgroup matrix mul. is not false): the arms ran the same kernels"));
	w->pass = 0;
	return LM_OK;
}

/* The figures into "validation", and the ledger record (w->rec). */
static int
step_record(vrun *w)
{
	const validate_opts *v = w->v;
	const cJSON *e;
	cJSON *th, *h;

	lm_jadd_num(w->val, "pplRatio", w->st.ppl_ratio);
	lm_jadd_num(w->val, "meanKld", w->st.kld_mean);
	lm_jadd_num(w->val, "kld999", w->st.kld_999);
	lm_jadd_num(w->val, "maxKld", w->st.kld_max);
	lm_jadd_num(w->val, "sameTopPercent", w->st.same_top);
	lm_jadd_num(w->val, "pplQ", w->st.ppl_q);
	lm_jadd_num(w->val, "pplBase", w->st.ppl_base);
	th = cJSON_AddObjectToObject(w->val, "thresholds");
	cJSON_AddNumberToObject(th, "maxMeanKld", v->th.max_mean_kld);
	cJSON_AddNumberToObject(th, "minSameTopPercent", v->th.min_same_top);
	cJSON_AddNumberToObject(th, "maxPplRatioDeviation", v->th.max_ppl_dev);
	cJSON_AddNumberToObject(w->val, "context", v->th.context);
	cJSON_AddNumberToObject(w->val, "chunks", v->th.chunks);
	cJSON_AddStringToObject(w->val, "verdict", w->pass ? "pass" : "fail");

	w->rec = session_record_new("validate", w->t, w->o);
	cJSON_AddStringToObject(w->rec, "verdict", w->pass ? "pass" : "fail");
	cJSON_AddItemToObject(w->rec, "reasons", cJSON_CreateArray());
	cJSON_ArrayForEach(e, w->reasons)
		ledger_add_reason(w->rec, e->valuestring);
	cJSON_AddItemToObject(w->rec, "validation", cJSON_Duplicate(w->val, 1));
	h = cJSON_AddObjectToObject(w->rec, "hashes");
	cJSON_AddStringToObject(h, "modelSha256", w->model_sha);
	cJSON_AddStringToObject(h, "textSha256", w->text_sha);
	ledger_add_str(h, "llamaPerplexity", w->lp);
	ledger_add_str(w->rec, "model", v->model);
	ledger_add_str(w->rec, "text", v->text_label ? v->text_label : v->text);
	ledger_add_str(w->rec, "build", w->build);
	ledger_add_str(w->rec, "command", w->cmdline.data ? w->cmdline.data : "");
	return LM_OK;
}

/* With --evidence: each arm's output and the record, in the VM's own directory when per VM. */
static int
step_evidence(vrun *w)
{
	const validate_opts *v = w->v;
	const char *ev = v->evidence_per_vm ? w->evdir : v->evidence;
	char msg[LM_ERRLEN], *rj;
	int rc;

	if (v->evidence == NULL)
		return LM_OK;
	if (v->evidence_per_vm) {
		if (evidence_dir(w->evdir, sizeof w->evdir, v->evidence, w->t->name) != LM_OK)
			snprintf(msg, sizeof msg, "--evidence %.400s: path too long", v->evidence);
		else if (mkdir(v->evidence, 0755) != 0 && errno != EEXIST)
			snprintf(msg, sizeof msg, "--evidence %.400s: cannot make it: %s", v->evidence, strerror(errno));
		else
			msg[0] = '\0';
		if (msg[0]) {
			session_set_state(w->r, "failed", msg);
			return LM_EFAIL;
		}
	}
	rj = cJSON_Print(w->rec);
	{
		evidence_file files[5] = {tail_file("stock.stdout", &w->stock.out), tail_file("stock.stderr", &w->stock.err),
			tail_file("shim.stdout", &w->shim.out), tail_file("shim.stderr", &w->shim.err),
			{"record.json", rj ? rj : "", rj ? strlen(rj) : 0}};

		rc = evidence_write(ev, files, 5, msg);
	}
	free(rj);
	if (rc != LM_OK) {
		session_set_state(w->r, "failed", msg);
		return LM_EFAIL;
	}
	ledger_add_str(w->rec, "evidence", ev);
	cJSON_AddStringToObject(w->r, "evidence", ev);
	return LM_OK;
}

/* The result's state and the record filed (or, with defer_pass, a pass handed back in "record"):
 * LM_OK only when validated. */
static int
step_verdict(vrun *w)
{
	cJSON *r = w->r;

	cJSON_AddItemToObject(r, "reasons", cJSON_Duplicate(w->reasons, 1));
	cJSON_AddItemToObject(r, "hashes", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(w->rec, "hashes"), 1));
	cJSON_AddStringToObject(r, "build", w->build);
	if (w->pass)
		session_set_state(r, "validated", NULL);
	else {
		const cJSON *first = cJSON_GetArrayItem(w->reasons, 0);

		session_set_state(r, "validation-failed", cJSON_IsString(first) ? first->valuestring : "validation failed");
	}
	if (w->pass && w->v->defer_pass)
		cJSON_AddItemToObject(r, "record", session_record_full(r, w->rec));
	else
		session_record(r, w->o, w->s->key, w->rec);
	return w->pass && strcmp(cJSON_GetObjectItemCaseSensitive(r, "state")->valuestring, "validated") == 0 ? LM_OK
	    : LM_EFAIL;
}

/* The steps, in order. An arm's row reports its start and its end through validate_opts.progress
 * under its name (the arm's); the others are silent. A step that fails has set the result's
 * state and ends the validation. */
static const struct {
	const char *name;
	int arm;
	int (*run)(vrun *w);
} steps[] = {
	{"text", 0, step_text}, {"scratch", 0, step_scratch}, {"upload", 0, step_upload}, {"prep", 0, step_prep},
	{"stock", 1, step_stock}, {"stock-check", 0, step_stock_check}, {"shim", 1, step_shim},
	{"compare", 0, step_compare}, {"kernels", 0, step_kernels}, {"record", 0, step_record},
	{"evidence", 0, step_evidence}, {"verdict", 0, step_verdict},
};

const char *
validate_arm_name(int i)
{
	int k = 0;

	for (size_t j = 0; j < sizeof steps / sizeof steps[0]; j++)
		if (steps[j].arm && k++ == i)
			return steps[j].name;
	return NULL;
}

int
validate_session(cJSON *r, session_vm *s, guest_target *t, const session_opts *o)
{
	vrun w = {.r = r, .s = s, .t = t, .o = o, .v = o->validate};
	int64_t t0 = lm_now_ms();
	int rc = LM_EFAIL;

	w.val = cJSON_AddObjectToObject(r, "validation");
	w.reasons = cJSON_CreateArray();
	snprintf(w.ctx, sizeof w.ctx, "%d", w.v->th.context);
	snprintf(w.chunks, sizeof w.chunks, "%d", w.v->th.chunks);
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		if (steps[i].arm)
			progress(w.v, t, steps[i].name, "start", t0);
		if ((rc = steps[i].run(&w)) != LM_OK)
			break;
		if (steps[i].arm)
			progress(w.v, t, steps[i].name, "done", t0);
	}
	if (w.dir) {
		const char *a[] = {w.dir, NULL};

		run(&w.clean, s->c, RSCRIPT_VALIDATE_CLEAN, a, NULL);
	}
	cJSON_Delete(w.rec);
	cJSON_Delete(w.reasons);
	arm_free(&w.mk);
	arm_free(&w.prep);
	arm_free(&w.stock);
	arm_free(&w.shim);
	arm_free(&w.clean);
	lm_buf_free(&w.cmdline);
	free(w.dir);
	free(w.lp);
	return rc;
}

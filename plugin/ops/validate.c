/* validate: see validate.h. */
#include "ops/validate.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/bench.h"
#include "core/evidence.h"
#include "net/guest.h"
#include "core/ledger.h"
#include "core/util.h"

static void
add_num(cJSON *o, const char *k, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

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
	cJSON_AddItemToObject(o, "simdgroup_reduction", m->simdgroup_reduction == BENCH_UNKNOWN ? cJSON_CreateNull()
	    : cJSON_CreateBool(m->simdgroup_reduction == BENCH_YES));
	cJSON_AddItemToObject(o, "simdgroup_matrix_mul", m->simdgroup_mm == BENCH_UNKNOWN ? cJSON_CreateNull()
	    : cJSON_CreateBool(m->simdgroup_mm == BENCH_YES));
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

int
validate_session(cJSON *r, session_vm *s, guest_target *t, const session_opts *o)
{
	const validate_opts *v = o->validate;
	cJSON *val = cJSON_AddObjectToObject(r, "validation"), *reasons = cJSON_CreateArray(), *rec = NULL;
	arm mk = {0}, prep = {0}, stock = {0}, shim = {0}, clean = {0};
	lm_buf cmdline = {0};
	bench_metal ms = {0}, mh = {0};
	validate_stats st;
	char text_sha[65], gtext_sha[65], model_sha[65], msg[LM_ERRLEN], build[201], last[201], perr[401], *dir = NULL;
	char *lp = NULL;
	char ctx[16], chunks[16], text[4200], base[4200], rws[4200], evdir[4200];
	int64_t t0 = lm_now_ms();
	int rc = LM_EFAIL, pass, shim_ok, shim_err;
	uint64_t sent;

	snprintf(ctx, sizeof ctx, "%d", v->th.context);
	snprintf(chunks, sizeof chunks, "%d", v->th.chunks);
	if (lm_sha256_file(text_sha, v->text, msg) != LM_OK) {
		session_set_state(r, "failed", msg);
		goto done;
	}
	{
		static const char *const a[] = {"validate", NULL};

		if (run(&mk, s->c, RSCRIPT_SCRATCH, a, NULL) != LM_OK || mk.code != 0) {
			fail_state(r, mk.code > 0 ? "mktemp -d failed in the guest" : mk.msg);
			goto done;
		}
		dir = strndup(mk.out.data ? mk.out.data : "", mk.out.data ? strcspn(mk.out.data, "\r\n") : 0);
		if (dir == NULL || dir[0] != '/' || strstr(dir, "/lume-metal-validate.") == NULL ||
		    lm_fmt(text, sizeof text, "%s/text.txt", dir) < 0 || lm_fmt(base, sizeof base, "%s/base.kld", dir) < 0 ||
		    lm_fmt(rws, sizeof rws, "%s/bin/run-with-shim", dir) < 0) {
			session_set_state(r, "failed", "mktemp -d in the guest gave no usable directory");
			free(dir);
			dir = NULL;
			goto done;
		}
	}
	if (ssh_upload(s->c, o->payload, dir, "payload.tar.gz", &sent, msg) != LM_OK ||
	    ssh_upload(s->c, v->text, dir, "text.txt", &sent, msg) != LM_OK) {
		fail_state(r, msg);
		goto done;
	}
	{
		const char *a[] = {dir, v->llama_perplexity, v->model, NULL};

		if (run(&prep, s->c, RSCRIPT_VALIDATE_PREP, a, NULL) != LM_OK) {
			fail_state(r, prep.msg);
			goto done;
		}
		if (prep.code != 0) {
			session_set_state(r, "failed", last_words(last, &prep.err));
			if (prep.code == 3 || prep.code == 4)
				cJSON_AddTrueToObject(r, "inputError");
			goto done;
		}
		if (prep_parse(&lp, model_sha, gtext_sha, &prep.out) != LM_OK) {
			session_set_state(r, "failed", "the guest's preparation printed no llama-perplexity path and SHA-256s");
			goto done;
		}
		if (strcmp(gtext_sha, text_sha) != 0) {
			session_set_state(r, "failed", "the text's SHA-256 in the guest differs from this host's");
			goto done;
		}
	}
	/* 1. Stock: the perplexity, and the stock logits saved to the base file. */
	progress(v, t, "stock", "start", t0);
	{
		const char *a[] = {dir, lp, "-m", v->model, "-f", text, "-c", ctx, "--chunks", chunks, "--kl-divergence-base",
			base, NULL};

		if (run(&stock, s->c, RSCRIPT_IN_DIR, a, &cmdline) != LM_OK) {
			snprintf(msg, sizeof msg, "llama-perplexity (stock arm): %.400s", stock.msg);
			fail_state(r, msg);
			goto done;
		}
		progress(v, t, "stock", "done", t0);
		if (stock.code != 0) {
			snprintf(msg, sizeof msg, "llama-perplexity (stock arm) exited %d: %s", stock.code,
			    last_words(last, &stock.err));
			session_set_state(r, "failed", msg);
			goto done;
		}
		/* It exits 0 after its own errors: a text too short for 2 x context tokens is the input's. */
		if (validate_parse_errors(perr, stock.err.data, stock.err.len)) {
			snprintf(msg, sizeof msg, "llama-perplexity (stock arm) failed (it exits 0 after its own errors): %s",
			    perr);
			session_set_state(r, "failed", msg);
			if (strstr(perr, ": you need at least "))
				cJSON_AddTrueToObject(r, "inputError");
			goto done;
		}
	}
	/* 2. Through run-with-shim: its logits against the stock ones. */
	progress(v, t, "shim", "start", t0);
	{
		const char *a[] = {dir, rws, lp, "-m", v->model, "-c", ctx, "--kl-divergence-base", base, "--kl-divergence",
			NULL};

		if (run(&shim, s->c, RSCRIPT_IN_DIR, a, NULL) != LM_OK && strstr(shim.msg, "timed out")) {
			snprintf(msg, sizeof msg, "llama-perplexity (shim arm): %.400s", shim.msg);
			fail_state(r, msg);
			goto done;
		}
		progress(v, t, "shim", "done", t0);
	}
	bench_parse_stderr(&ms, stock.err.data ? stock.err.data : "");
	bench_parse_stderr(&mh, shim.err.data ? shim.err.data : "");
	validate_parse_build(build, stock.err.data, stock.err.len);
	cJSON_AddItemToObject(val, "stockMetal", metal_json(&ms));
	cJSON_AddItemToObject(val, "shimMetal", metal_json(&mh));
	shim_err = shim.code == 0 ? validate_parse_errors(perr, shim.err.data, shim.err.len) : 0;
	if (shim_err == 1) {
		/* Its own error about its input (the base file, the context): nothing was compared. */
		snprintf(msg, sizeof msg, "llama-perplexity (shim arm) failed (it exits 0 after its own errors): %s", perr);
		session_set_state(r, "failed", msg);
		goto done;
	}
	if (shim.code != 0 || shim_err) {
		/* The shim broke the workload: a verdict on this image version. */
		if (shim_err)
			snprintf(msg, sizeof msg, "llama-perplexity (shim arm) could not evaluate the model: %s", perr);
		else if (shim.code > 0)
			snprintf(msg, sizeof msg, "llama-perplexity (shim arm) exited %d: %s", shim.code,
			    last_words(last, &shim.err));
		else
			snprintf(msg, sizeof msg, "llama-perplexity (shim arm): %.400s", shim.msg);
		cJSON_AddItemToArray(reasons, cJSON_CreateString(msg));
		st = (validate_stats){NAN, NAN, NAN, NAN, NAN, NAN, NAN};
		pass = 0;
	} else {
		/* The statistics are LOG (stdout); a build that logs everything to stderr still reads. */
		if (validate_parse(&st, shim.out.data, shim.out.len, msg) != LM_OK &&
		    validate_parse(&st, shim.err.data, shim.err.len, msg) != LM_OK) {
			session_set_state(r, "failed", msg);
			goto done;
		}
		pass = validate_verdict(reasons, &st, &v->th);
	}
	/* The comparison proves something only when the arms took different kernels. */
	shim_ok = mh.simdgroup_mm == BENCH_YES && ms.simdgroup_mm == BENCH_NO;
	if (shim.code == 0 && !shim_err && !shim_ok) {
		if (mh.simdgroup_mm != BENCH_YES) {
			char said[201];
			int spoke = shim_said(said, &shim.err);

			/* why the shim arm stayed stock, in the shim's own words when it said any */
			snprintf(msg, sizeof msg, "the shim arm did not take the simdgroup paths (%s: simdgroup matrix mul. is "
			    "not true): nothing was compared; %s%s", mh.tag ? mh.tag : BENCH_METAL_TAG, spoke ? "the shim said: " : "",
			    spoke ? said : "the shim said nothing (it was not loaded into the process, or not scoped to its name)");
			cJSON_AddItemToArray(reasons, cJSON_CreateString(msg));
		} else
			cJSON_AddItemToArray(reasons, cJSON_CreateString("the stock arm took the simdgroup paths too "
			    "(simdgroup matrix mul. is not false): the arms ran the same kernels"));
		pass = 0;
	}
	add_num(val, "pplRatio", st.ppl_ratio);
	add_num(val, "meanKld", st.kld_mean);
	add_num(val, "kld999", st.kld_999);
	add_num(val, "maxKld", st.kld_max);
	add_num(val, "sameTopPercent", st.same_top);
	add_num(val, "pplQ", st.ppl_q);
	add_num(val, "pplBase", st.ppl_base);
	{
		cJSON *th = cJSON_AddObjectToObject(val, "thresholds");

		cJSON_AddNumberToObject(th, "maxMeanKld", v->th.max_mean_kld);
		cJSON_AddNumberToObject(th, "minSameTopPercent", v->th.min_same_top);
		cJSON_AddNumberToObject(th, "maxPplRatioDeviation", v->th.max_ppl_dev);
	}
	cJSON_AddNumberToObject(val, "context", v->th.context);
	cJSON_AddNumberToObject(val, "chunks", v->th.chunks);
	cJSON_AddStringToObject(val, "verdict", pass ? "pass" : "fail");

	rec = session_record_new("validate", t, o);
	cJSON_AddStringToObject(rec, "verdict", pass ? "pass" : "fail");
	cJSON_AddItemToObject(rec, "reasons", cJSON_CreateArray());
	{
		const cJSON *e;

		cJSON_ArrayForEach(e, reasons)
			ledger_add_reason(rec, e->valuestring);
	}
	cJSON_AddItemToObject(rec, "validation", cJSON_Duplicate(val, 1));
	{
		cJSON *h = cJSON_AddObjectToObject(rec, "hashes");

		cJSON_AddStringToObject(h, "modelSha256", model_sha);
		cJSON_AddStringToObject(h, "textSha256", text_sha);
		ledger_add_str(h, "llamaPerplexity", lp);
	}
	ledger_add_str(rec, "model", v->model);
	ledger_add_str(rec, "text", v->text_label ? v->text_label : v->text);
	ledger_add_str(rec, "build", build);
	ledger_add_str(rec, "command", cmdline.data ? cmdline.data : "");
	if (v->evidence && v->evidence_per_vm) {
		if (evidence_dir(evdir, sizeof evdir, v->evidence, t->name) != LM_OK)
			snprintf(msg, sizeof msg, "--evidence %.400s: path too long", v->evidence);
		else if (mkdir(v->evidence, 0755) != 0 && errno != EEXIST)
			snprintf(msg, sizeof msg, "--evidence %.400s: cannot make it: %s", v->evidence, strerror(errno));
		else
			msg[0] = '\0';
		if (msg[0]) {
			session_set_state(r, "failed", msg);
			goto done;
		}
	}
	if (v->evidence) {
		const char *ev = v->evidence_per_vm ? evdir : v->evidence;
		char *rj = cJSON_Print(rec);
		evidence_file files[5] = {tail_file("stock.stdout", &stock.out), tail_file("stock.stderr", &stock.err),
			tail_file("shim.stdout", &shim.out), tail_file("shim.stderr", &shim.err),
			{"record.json", rj ? rj : "", rj ? strlen(rj) : 0}};

		rc = evidence_write(ev, files, 5, msg);
		free(rj);
		if (rc != LM_OK) {
			session_set_state(r, "failed", msg);
			rc = LM_EFAIL;
			goto done;
		}
		ledger_add_str(rec, "evidence", ev);
		cJSON_AddStringToObject(r, "evidence", ev);
	}
	cJSON_AddItemToObject(r, "reasons", cJSON_Duplicate(reasons, 1));
	cJSON_AddItemToObject(r, "hashes", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec, "hashes"), 1));
	cJSON_AddStringToObject(r, "build", build);
	if (pass)
		session_set_state(r, "validated", NULL);
	else {
		const cJSON *first = cJSON_GetArrayItem(reasons, 0);

		session_set_state(r, "validation-failed", cJSON_IsString(first) ? first->valuestring : "validation failed");
	}
	if (pass && v->defer_pass)
		cJSON_AddItemToObject(r, "record", session_record_full(r, rec));
	else
		session_record(r, o, s->key, rec);
	rc = pass && strcmp(cJSON_GetObjectItemCaseSensitive(r, "state")->valuestring, "validated") == 0 ? LM_OK
	    : LM_EFAIL;
done:
	if (dir) {
		const char *a[] = {dir, NULL};

		run(&clean, s->c, RSCRIPT_VALIDATE_CLEAN, a, NULL);
	}
	cJSON_Delete(rec);
	cJSON_Delete(reasons);
	arm_free(&mk);
	arm_free(&prep);
	arm_free(&stock);
	arm_free(&shim);
	arm_free(&clean);
	lm_buf_free(&cmdline);
	free(dir);
	free(lp);
	return rc;
}

/* Connects to t and runs validate_session, or with once validate_version. */
static int
one(cJSON **out, guest_target *t, const session_opts *o, int once)
{
	cJSON *r = session_result_new(t, "failed");
	session_vm s;

	*out = r;
	if (o->info)
		cJSON_AddStringToObject(r, "sha256", o->info->sha256);
	if (session_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (once)
		validate_version(r, &s, t, o);
	else
		validate_session(r, &s, t, o);
	session_close(&s, r);
	return LM_OK;
}

int
validate_one(cJSON **out, guest_target *t, const session_opts *o, char *err)
{
	(void)err;
	return one(out, t, o, 0);
}

int
validate_once(cJSON **out, guest_target *t, const session_opts *o, char *err)
{
	(void)err;
	return one(out, t, o, 1);
}

/* Whether key has a validate record of some payload (to say why none counts for this one). */
static int
other_payload(const char *state, const cJSON *key)
{
	const ledger_want any = {"validate", NULL, NULL, NULL, 1};
	cJSON *last = NULL;
	char err[LM_ERRLEN];
	int found = ledger_load_verdict(&last, NULL, state, key, &any, err) == LM_OK && last != NULL;

	cJSON_Delete(last);
	return found;
}

ledger_want
validate_want(const payload_info *info)
{
	return (ledger_want){"validate", info ? info->sha256 : NULL, info ? info->profile : NULL,
		info ? info->workload : NULL, 0};
}

int
validate_check(const char *state, const cJSON *key, const payload_info *info, char *why)
{
	cJSON *last = NULL;
	const cJSON *v;
	const ledger_want w = validate_want(info);
	char who[400];
	int rc;

	if (ledger_load_verdict(&last, NULL, state, key, &w, why) != LM_OK)
		return LM_EFAIL;
	v = last ? cJSON_GetObjectItemCaseSensitive(last, "verdict") : NULL;
	if (cJSON_IsString(v) && strcmp(v->valuestring, "pass") == 0)
		rc = LM_OK;
	else if (last == NULL && info != NULL && other_payload(state, key))
		rc = lm_err(why, LM_EREFUSED, "this workload requires validation and this image version has validate "
		    "records, but none for this payload (%.12s...: a verdict covers one payload)", info->sha256);
	else if (last == NULL)
		rc = lm_err(why, LM_EREFUSED, "this workload requires validation and this image version has no validate "
		    "record");
	else
		rc = lm_err(why, LM_EREFUSED, "this workload requires validation and this image version's last validate "
		    "record failed: %s", ledger_record_who(who, sizeof who, last));
	cJSON_Delete(last);
	return rc;
}

/* The image versions this process's gates have met (their keys, printed): while one VM of a
 * version validates it (busy), the others of that version wait, then read its verdict instead of
 * each running llama-perplexity. vm is the VM that last claimed it; recorded, that a verdict of
 * this process is in the ledger. Entries are only added, and live for the process. */
typedef struct {
	char *key, *vm;
	int busy, recorded;
} gate_entry;

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static gate_entry *gates;
static size_t ngates;

/* What gate_enter found: this VM validates (GATE_MINE), another VM of this process recorded a
 * verdict for the version (GATE_RECORDED), or another one tried and recorded none (GATE_TRIED):
 * while this one waited, or with once at any time before. */
enum { GATE_MINE, GATE_RECORDED, GATE_TRIED };

/* Waits until no other VM validates k; then GATE_RECORDED or GATE_TRIED with by (len bytes)
 * naming that VM, or claims k for vm as entry *at (gate_leave releases it): GATE_MINE. -1 out of
 * memory. */
static int
gate_enter(size_t *at, const char *k, const char *vm, int once, char *by, size_t len)
{
	size_t i;
	int waited = 0, rc = GATE_MINE;
	char *name;

	pthread_mutex_lock(&gate_mu);
	for (i = 0; i < ngates && strcmp(gates[i].key, k) != 0; i++)
		;
	while (i < ngates && gates[i].busy) {
		waited = 1;
		pthread_cond_wait(&gate_cv, &gate_mu);
	}
	if (i < ngates && (gates[i].recorded || waited || once)) {
		snprintf(by, len, "%s", gates[i].vm ? gates[i].vm : "another VM");
		rc = gates[i].recorded ? GATE_RECORDED : GATE_TRIED;
	} else if ((name = strdup(vm)) == NULL)
		rc = -1;
	else {
		if (i == ngates) {
			gate_entry *v = realloc(gates, (ngates + 1) * sizeof *v);
			char *kc = strdup(k);

			if (v == NULL || kc == NULL) {
				if (v)
					gates = v;
				free(kc);
				free(name);
				pthread_mutex_unlock(&gate_mu);
				return -1;
			}
			gates = v;
			gates[ngates++] = (gate_entry){kc, NULL, 0, 0};
		}
		free(gates[i].vm);
		gates[i].vm = name;
		gates[i].busy = 1;
		*at = i;
	}
	pthread_mutex_unlock(&gate_mu);
	return rc;
}

/* Releases entry at, which recorded a verdict in the ledger when r ended validated or
 * validation-failed. */
static void
gate_leave(size_t at, const cJSON *r)
{
	const char *st = cJSON_GetObjectItemCaseSensitive(r, "state")->valuestring;

	pthread_mutex_lock(&gate_mu);
	gates[at].busy = 0;
	if (strcmp(st, "validated") == 0 || strcmp(st, "validation-failed") == 0)
		gates[at].recorded = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

/* gate_enter for s's key; on -1 r is "failed". */
static int
gate_key(size_t *at, cJSON *r, const session_vm *s, const guest_target *t, int once, char *by, size_t len)
{
	char *k = cJSON_PrintUnformatted(s->key);
	int g = k ? gate_enter(at, k, t->name, once, by, len) : -1;

	free(k);
	if (g < 0)
		session_set_state(r, "failed", "out of memory");
	return g;
}

int
validate_gate(cJSON *r, session_vm *s, guest_target *t, const session_opts *o)
{
	const char *vm = t->via && strrchr(t->name, '/') ? strrchr(t->name, '/') + 1 : t->name;
	char msg[LM_ERRLEN], why[LM_ERRLEN + 600], by[512];
	int rc = validate_check(o->state, s->key, o->info, msg), g;
	size_t at;

	if (rc == LM_OK)
		return LM_OK;
	if (rc == LM_EFAIL || o->validate == NULL || o->dry_run) {
		if (rc == LM_EFAIL)
			session_set_state(r, "failed", msg);
		else if (o->validate == NULL) {
			snprintf(why, sizeof why, "%s; validate it first: lume-metal validate %s%s%s --workload %s%s%s --model "
			    "PATH (or deploy with --validate-workload --model PATH)", msg, t->lume || t->via ? "" : "--host ", vm,
			    t->via ? " --hosts FILE" : "", o->info->workload, strcmp(o->info->target, "macos") ? " --target " : "",
			    strcmp(o->info->target, "macos") ? o->info->target : "");
			session_set_state(r, "refused", why);
		} else
			return LM_OK; /* a dry run: the plan goes on, validation would run first */
		return LM_EFAIL;
	}
	if ((g = gate_key(&at, r, s, t, 0, by, sizeof by)) < 0)
		return LM_EFAIL;
	if (g == GATE_MINE) {
		rc = validate_session(r, s, t, o);
		gate_leave(at, r);
	} else if ((rc = validate_check(o->state, s->key, o->info, msg)) != LM_OK) {
		/* Another VM of this version validated it, or tried, while this one waited: its verdict stands. */
		snprintf(why, sizeof why, "%s (in this run)", msg);
		session_set_state(r, rc == LM_EFAIL ? "failed" : "refused", why);
	}
	return rc;
}

int
validate_version(cJSON *r, session_vm *s, guest_target *t, const session_opts *o)
{
	char msg[LM_ERRLEN + 700], by[512];
	cJSON *last = NULL;
	const cJSON *v, *why;
	ledger_want want;
	size_t at;
	int g, rc;

	if ((g = gate_key(&at, r, s, t, 1, by, sizeof by)) < 0)
		return LM_EFAIL;
	if (g == GATE_MINE) {
		rc = validate_session(r, s, t, o);
		gate_leave(at, r);
		return rc;
	}
	if (g == GATE_TRIED) {
		snprintf(msg, sizeof msg, "not validated: %.400s, of the same image version, ran first in this run and "
		    "recorded no verdict; run validate again", by);
		session_set_state(r, "skipped", msg);
		return LM_EFAIL;
	}
	want = validate_want(o->info);
	if (ledger_load_verdict(&last, NULL, o->state, s->key, &want, msg) != LM_OK) {
		session_set_state(r, "failed", msg);
		return LM_EFAIL;
	}
	v = cJSON_GetObjectItemCaseSensitive(last, "verdict");
	why = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(last, "reasons"), 0);
	rc = cJSON_IsString(v) && strcmp(v->valuestring, "pass") == 0 ? LM_OK : LM_EFAIL;
	if (last == NULL)
		snprintf(msg, sizeof msg, "its image version has no validate record, though %.400s recorded one in this run",
		    by);
	else if (rc == LM_OK)
		snprintf(msg, sizeof msg, "its image version was validated on %.400s in this run", by);
	else
		snprintf(msg, sizeof msg, "its image version failed validation on %.400s in this run: %.200s", by,
		    cJSON_IsString(why) ? why->valuestring : "validation failed");
	session_set_state(r, rc == LM_OK ? "validated" : last ? "validation-failed" : "failed", msg);
	if (last)
		cJSON_AddStringToObject(r, "validatedBy", by);
	cJSON_Delete(last);
	return rc;
}

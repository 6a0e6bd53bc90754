/* deploy: see deploy.h. */
#include "deploy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "evidence.h"
#include "deploy_int.h"
#include "ledger.h"
#include "util.h"
#include "validate.h"

/* The guest-side steps, fixed scripts given their inputs as quoted arguments. */
static const char install_script[] =
    "tar -xzOf \"$1\" bin/common.sh bin/install.sh | sh -s -- --payload \"$1\" --sha256 \"$2\"; rc=$?; rm -f \"$1\"\n"
    /* uploads of earlier runs that died mid-transfer; a live one is never 10 minutes old */
    "find \"${1%/*}\" -name '.*.part.*' -mmin +10 -exec rm -f {} + 2>/dev/null; exit $rc";
static const char probe_script[] =
    "cd \"$1\" || exit 1\n"
    "trap 'rm -rf \"$1\"' EXIT\n"
    "tar -xzf payload.tar.gz bin/lume-metal-probe bin/run-with-shim lib profile.json shim.env || exit 1\n"
    "./bin/lume-metal-probe >stock.json || exit 1\n"
    "./bin/run-with-shim \"$1/bin/lume-metal-probe\" --expect profile.json --stock stock.json >shim.json; rc=$?\n"
    "printf '{\"stock\":%s,\"shimmed\":%s,\"pass\":%s}\\n' \"$(cat stock.json)\" \"$(cat shim.json)\" "
    "\"$([ $rc -eq 0 ] && echo true || echo false)\"\n";
static const char hashes_script[] =
    "lb=$(command -v -- \"$1\") || { echo \"llama-bench not found in the guest: $1\" >&2; exit 3; }\n"
    "[ -f \"$2\" ] && [ -r \"$2\" ] || { echo \"model not found in the guest: $2\" >&2; exit 4; }\n"
    "printf '%s\\n' \"$lb\"; shasum -a 256 \"$lb\" | cut -c1-64; shasum -a 256 \"$2\" | cut -c1-64";
static const char scratch_script[] = "mktemp -d \"${TMPDIR:-/tmp}/lume-metal-probe.XXXXXX\"";
static const char status_script[] =
    "for r in current previous; do f=\"$1/$r/bin/status.sh\"; [ -f \"$f\" ] && exec sh \"$f\"; done\n"
    "printf '{\"root\":null,\"current\":null,\"previous\":null,\"releases\":[],\"installed\":false}\\n'";
static const char rollback_script[] =
    "for r in current previous; do f=\"$1/$r/bin/rollback.sh\"; [ -f \"$f\" ] && exec sh \"$f\" \"$2\"; done\n"
    "printf '{\"result\":\"nothing-to-do\",\"to\":\"%s\",\"reason\":\"nothing is installed\"}\\n' \"$2\"";

const char *
deploy_why_state(int why)
{
	switch (why) {
	case SSH_TIMEOUT: return "timeout";
	case SSH_AUTH: return "auth-failed";
	case SSH_HOSTKEY_MISMATCH: return "hostkey-mismatch";
	case SSH_HOSTKEY_UNKNOWN: return "refused";
	default: return "unreachable";
	}
}

static cJSON *
result_new(const guest_target *t, const char *state)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, "vm", t->name);
	cJSON_AddStringToObject(r, "state", state);
	return r;
}

static void
set_state(cJSON *r, const char *state, const char *message)
{
	cJSON *s = cJSON_CreateString(state);

	if (!cJSON_ReplaceItemInObjectCaseSensitive(r, "state", s))
		cJSON_AddItemToObject(r, "state", s); /* r had none (a sub-result such as "probe") */
	if (message != NULL) {
		cJSON_DeleteItemFromObject(r, "message");
		cJSON_AddStringToObject(r, "message", message);
	}
}

/* Connects within the VM's own deadline; on failure r gets the named state. */
static ssh_conn *
connect_vm(cJSON *r, guest_target *t, const deploy_opts *o)
{
	ssh_opts so = o->ssh;
	ssh_conn *c = NULL;
	char err[LM_ERRLEN];
	int why = 0;

	so.deadline_ms = lm_now_ms() + (int64_t)o->timeout_s * 1000;
	if (guest_connect(&c, &why, t, &so, o->lume, o->wait_s, err) != LM_OK) {
		set_state(r, why ? deploy_why_state(why) : "unreachable", err);
		return NULL;
	}
	if (t->host)
		cJSON_AddStringToObject(r, "address", t->host);
	return c;
}

/* The ledger key for this guest, as the design names it. */
static cJSON *
key_for(const guest_facts *f, const deploy_opts *o)
{
	const cJSON *img = f->image ? cJSON_GetObjectItemCaseSensitive(f->image, "image") : NULL;
	const cJSON *dig = f->image ? cJSON_GetObjectItemCaseSensitive(f->image, "digest") : NULL;
	char chip[128], build[64];

	guest_host_facts(chip, build);
	return ledger_key(o->image ? o->image : cJSON_IsString(img) ? img->valuestring : "unknown",
	    cJSON_IsString(dig) ? dig->valuestring : NULL, f->os, f->build, f->model, chip, build);
}

static void add_facts(cJSON *r, const guest_facts *f, cJSON *key);

/* Connects and reads the guest's facts into s, and adds them and the key to r. On failure r
 * has the state and the reason, and s holds nothing. */
static int
vm_open(vm_session *s, cJSON *r, guest_target *t, const deploy_opts *o)
{
	char msg[LM_ERRLEN];

	memset(s, 0, sizeof *s);
	if ((s->c = connect_vm(r, t, o)) == NULL)
		return LM_EFAIL;
	if (guest_facts_read(&s->f, s->c, msg) != LM_OK) {
		set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		ssh_close(s->c);
		s->c = NULL;
		return LM_EFAIL;
	}
	s->key = key_for(&s->f, o);
	add_facts(r, &s->f, s->key);
	return LM_OK;
}

/* Ends the session; r gets "sshExecs", the channels the operation opened. */
static void
vm_close(vm_session *s, cJSON *r)
{
	if (s->c && r && !cJSON_HasObjectItem(r, "sshExecs"))
		cJSON_AddNumberToObject(r, "sshExecs", ssh_exec_count(s->c));
	cJSON_Delete(s->key);
	guest_facts_clear(&s->f);
	ssh_close(s->c);
	memset(s, 0, sizeof *s);
}

static void
add_facts(cJSON *r, const guest_facts *f, cJSON *key)
{
	cJSON *g = cJSON_AddObjectToObject(r, "guest");

	cJSON_AddStringToObject(g, "os", f->os ? f->os : "");
	cJSON_AddStringToObject(g, "build", f->build ? f->build : "");
	cJSON_AddStringToObject(g, "model", f->model ? f->model : "");
	cJSON_AddStringToObject(g, "chip", f->chip ? f->chip : "");
	if (f->current)
		cJSON_AddStringToObject(g, "current", f->current);
	if (f->previous)
		cJSON_AddStringToObject(g, "previous", f->previous);
	cJSON_AddItemToObject(r, "key", cJSON_Duplicate(key, 1));
}

/* Runs argv in the guest; *out gets the first line of its stdout (caller frees). */
static int
run_line(cJSON *r, ssh_conn *c, const char *const *argv, char **out)
{
	char err[LM_ERRLEN];
	lm_buf cmd = {0};
	ssh_result res;
	int rc;

	*out = NULL;
	rc = ssh_quote_argv(&cmd, argv) == LM_OK ? ssh_exec(c, cmd.data, NULL, 0, &res, err) : LM_EFAIL;
	lm_buf_free(&cmd);
	if (rc == LM_OK && res.exit_code != 0)
		rc = lm_err(err, LM_EFAIL, "%s %s failed: %.200s", argv[0], argv[1], res.err.data ? res.err.data : "");
	if (rc == LM_OK && (*out = strndup(res.out.data ? res.out.data : "", res.out.data ? strcspn(res.out.data, "\n")
	    : 0)) == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	ssh_result_free(&res);
	if (rc != LM_OK)
		set_state(r, strstr(err, "timed out") ? "timeout" : "failed", err);
	return rc;
}

/* Uploads the payload into dir as name; r gets bytesSent. */
static int
upload_to(cJSON *r, ssh_conn *c, const deploy_opts *o, const char *dir, const char *name)
{
	char err[LM_ERRLEN];
	uint64_t sent = 0;
	int rc = ssh_upload(c, o->payload, dir, name, &sent, err);

	cJSON_AddNumberToObject(r, "bytesSent", (double)sent);
	if (rc != LM_OK)
		set_state(r, strstr(err, "timed out") ? "timeout" : "failed", err);
	return rc;
}

/* Uploads the payload into the guest's staging directory (made when missing) as
 * <sha>.tar.gz; path gets it. */
static int
upload(cJSON *r, ssh_conn *c, const guest_facts *f, const deploy_opts *o, char *path, size_t plen)
{
	char dir[4096], name[80];

	snprintf(name, sizeof name, "%s.tar.gz", o->info->sha256);
	if (lm_fmt(dir, sizeof dir, "%s/Library/Application Support/lume-metal/staging", f->home) < 0 ||
	    lm_fmt(path, plen, "%s/%s", dir, name) < 0) {
		set_state(r, "failed", "the guest's HOME is too long");
		return LM_EFAIL;
	}
	return upload_to(r, c, o, dir, name);
}

static cJSON *
record_new(const char *kind, const guest_target *t, const deploy_opts *o)
{
	cJSON *rec = cJSON_CreateObject();
	char host[256] = "";

	gethostname(host, sizeof host - 1);
	cJSON_AddStringToObject(rec, "kind", kind);
	/* Which VM, reached how: a record that refuses others names the one that wrote it. */
	ledger_add_str(rec, "vm", t->name);
	ledger_add_str(rec, "address", t->host);
	ledger_add_str(rec, "host", t->via);
	ledger_add_str(rec, "controller", host);
	if (o->info) {
		cJSON_AddStringToObject(rec, "payloadSha256", o->info->sha256);
		cJSON_AddStringToObject(rec, "profile", o->info->profile);
		cJSON_AddStringToObject(rec, "workload", o->info->workload);
		cJSON_AddStringToObject(rec, "target", o->info->target);
	}
	return rec;
}

/* Writes rec under key; a ledger failure turns a good result into "failed". */
static void
record(cJSON *r, const deploy_opts *o, const cJSON *key, const cJSON *rec)
{
	char err[LM_ERRLEN];

	if (ledger_append(o->state, key, rec, err) != LM_OK) {
		cJSON_AddStringToObject(r, "ledgerError", err);
		set_state(r, "failed", err);
	}
}

int
deploy_one(cJSON **out, guest_target *t, const deploy_opts *o, char *err)
{
	cJSON *r = result_new(t, "failed"), *last = NULL, *res = NULL, *rec;
	vm_session s;
	const cJSON *v;
	char path[4096], msg[LM_ERRLEN];
	int code = 0, recorded = 0;

	(void)err;
	*out = r;
	cJSON_AddStringToObject(r, "sha256", o->info->sha256);
	if (vm_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (ledger_load_last(&last, &recorded, o->state, s.key, "deploy", msg) != LM_OK) {
		set_state(r, "failed", msg);
		goto done;
	}
	v = last ? cJSON_GetObjectItemCaseSensitive(last, "verdict") : NULL;
	if (cJSON_IsString(v) && strcmp(v->valuestring, "fail") == 0 && !o->force) {
		const char *vm = t->via && strrchr(t->name, '/') ? strrchr(t->name, '/') + 1 : t->name;
		char who[400], why[1024];

		/* One VM's failure refuses every VM of its image version: say whose, and how to clear it. */
		snprintf(why, sizeof why, "this image version is recorded as failing validation; --force validates it "
		    "again: lume-metal deploy %s%s%s --force; refused by the record of %s", t->lume || t->via ? "" : "--host ",
		    vm, t->via ? " --hosts FILE" : "", ledger_record_who(who, sizeof who, last));
		set_state(r, "refused", why);
		goto done;
	}
	if (s.f.current && strcmp(s.f.current, o->info->sha256) == 0 && !o->force) {
		set_state(r, "unchanged", "this payload is already current");
		cJSON_AddNumberToObject(r, "bytesSent", 0);
		goto done;
	}
	/* The workload's own numbers, once per image version (validate.h). */
	if (o->require_validation && validate_gate(r, &s, t, o) != LM_OK)
		goto done;
	if (o->dry_run) {
		cJSON *plan = cJSON_AddArrayToObject(r, "plan");

		cJSON_AddItemToArray(plan, cJSON_CreateString("upload the payload to staging/"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("verify every file, unpack into releases/<sha>/"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("probe stock and shimmed against the profile"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("on a pass: switch current, bootstrap the LaunchAgent"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("record the verdict in the ledger"));
		set_state(r, "skipped", recorded ? "dry run: nothing changed (image version recorded)"
		    : "dry run: nothing changed (image version not yet recorded: it would be validated in full)");
		goto done;
	}
	if (upload(r, s.c, &s.f, o, path, sizeof path) != LM_OK)
		goto done;
	{
		const char *a[] = {"sh", "-c", install_script, "sh", path, o->info->sha256, NULL};

		if (guest_run_json(&res, &code, s.c, a, NULL, msg) != LM_OK) {
			set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
			goto done;
		}
	}
	cJSON_AddItemToObject(r, "install", res);
	{
		const cJSON *result = cJSON_GetObjectItemCaseSensitive(res, "result");
		const cJSON *reason = cJSON_GetObjectItemCaseSensitive(res, "reason");
		const cJSON *stock = cJSON_GetObjectItemCaseSensitive(res, "stock");
		int installed = cJSON_IsString(result) && code == 0 &&
		    (strcmp(result->valuestring, "installed") == 0 || strcmp(result->valuestring, "unchanged") == 0);

		if (installed)
			set_state(r, strcmp(result->valuestring, "unchanged") == 0 ? "unchanged" : "deployed", NULL);
		else
			set_state(r, cJSON_IsObject(stock) ? "validation-failed" : "failed",
			    cJSON_IsString(reason) ? reason->valuestring : "install.sh failed");
		/* A verdict is recorded only when the probe ran: a full disk says nothing of the image. */
		if (cJSON_IsObject(stock)) {
			/* The guest's answers only as a bounded summary: a record stays a few KiB. */
			rec = record_new("deploy", t, o);
			cJSON_AddStringToObject(rec, "verdict", installed ? "pass" : "fail");
			cJSON_AddItemToObject(rec, "reasons", cJSON_CreateArray());
			if (!installed && cJSON_IsString(reason))
				ledger_add_reason(rec, reason->valuestring);
			cJSON_AddItemToObject(rec, "stock", ledger_probe_summary(stock));
			cJSON_AddItemToObject(rec, "shimmed", ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(res,
			    "shimmed")));
			if (o->force)
				cJSON_AddTrueToObject(rec, "forced");
			record(r, o, s.key, rec);
			cJSON_Delete(rec);
		}
	}
done:
	cJSON_Delete(last);
	vm_close(&s, r);
	return LM_OK;
}

/* Uploads the payload to a scratch directory (mktemp -d in the guest) and runs its probe
 * stock and shimmed there; r gets "stock", "shimmed" and "pass". Nothing is installed and the
 * scratch directory is removed. */
static int
probe_in_guest(cJSON *r, ssh_conn *c, const deploy_opts *o)
{
	static const char *const mk[] = {"sh", "-c", scratch_script, NULL};
	char msg[LM_ERRLEN], *dir = NULL;
	cJSON *res = NULL;
	int code = 0, rc = LM_EFAIL;

	if (run_line(r, c, mk, &dir) != LM_OK)
		return LM_EFAIL;
	if (dir[0] != '/') {
		set_state(r, "failed", "mktemp -d in the guest gave no directory");
		goto done;
	}
	if (upload_to(r, c, o, dir, "payload.tar.gz") != LM_OK)
		goto done;
	{
		const char *a[] = {"sh", "-c", probe_script, "sh", dir, NULL};

		if (guest_run_json(&res, &code, c, a, NULL, msg) != LM_OK) {
			set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
			goto done;
		}
	}
	cJSON_AddItemToObject(r, "stock", cJSON_DetachItemFromObject(res, "stock"));
	cJSON_AddItemToObject(r, "shimmed", cJSON_DetachItemFromObject(res, "shimmed"));
	cJSON_AddBoolToObject(r, "pass", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "pass")));
	cJSON_Delete(res);
	rc = LM_OK;
done:
	free(dir);
	return rc;
}

int
deploy_probe(cJSON **out, guest_target *t, const deploy_opts *o, char *err)
{
	cJSON *r = result_new(t, "failed");
	vm_session s;

	(void)err;
	*out = r;
	if (vm_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (probe_in_guest(r, s.c, o) == LM_OK)
		set_state(r, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "pass")) ? "probed" : "validation-failed", NULL);
	vm_close(&s, r);
	return LM_OK;
}

/* Runs one of the fixed root scripts; r gets its JSON under field. */
static int
run_root_script(cJSON *r, ssh_conn *c, const char *script, const char *arg, const char *field, int *code)
{
	const char *a[] = {"sh", "-c", script, "sh", GUEST_ROOT, arg, NULL};
	char msg[LM_ERRLEN];
	cJSON *res;

	if (guest_run_json(&res, code, c, a, NULL, msg) != LM_OK) {
		set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		return LM_EFAIL;
	}
	cJSON_AddItemToObject(r, field, res);
	return LM_OK;
}

int
deploy_status(cJSON **out, guest_target *t, const deploy_opts *o, char *err)
{
	cJSON *r = result_new(t, "failed"), *last = NULL;
	vm_session s;
	char msg[LM_ERRLEN];
	int code = 0;

	(void)err;
	*out = r;
	if (vm_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (run_root_script(r, s.c, status_script, NULL, "status", &code) != LM_OK)
		goto done;
	if (ledger_load_last(&last, NULL, o->state, s.key, "deploy", msg) != LM_OK)
		cJSON_AddStringToObject(r, "ledgerError", msg);
	else {
		const cJSON *v = last ? cJSON_GetObjectItemCaseSensitive(last, "verdict") : NULL;

		cJSON_AddStringToObject(r, "verdict", cJSON_IsString(v) ? v->valuestring : "unrecorded");
	}
	set_state(r, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "status"),
	    "driftDetected")) ? "drift" : "ok", NULL);
done:
	cJSON_Delete(last);
	vm_close(&s, r);
	return LM_OK;
}

int
deploy_rollback(cJSON **out, guest_target *t, const deploy_opts *o, char *err)
{
	cJSON *r = result_new(t, "failed"), *rec, *res;
	vm_session s;
	const cJSON *result;
	int code = 0;

	(void)err;
	*out = r;
	if (vm_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (run_root_script(r, s.c, rollback_script, o->to, "rollback", &code) != LM_OK)
		goto done;
	res = cJSON_GetObjectItemCaseSensitive(r, "rollback");
	result = cJSON_GetObjectItemCaseSensitive(res, "result");
	if (code == 0 && cJSON_IsString(result) && strcmp(result->valuestring, "rolled-back") == 0)
		set_state(r, "rolled-back", NULL);
	else if (code == 0 && cJSON_IsString(result) && strcmp(result->valuestring, "nothing-to-do") == 0)
		set_state(r, "unchanged", "nothing to roll back");
	else {
		const cJSON *reason = cJSON_GetObjectItemCaseSensitive(res, "reason");

		set_state(r, "failed", cJSON_IsString(reason) ? reason->valuestring : "rollback.sh failed");
	}
	/* Back to stock: show the stock answers (the probe, unshimmed, in a scratch directory). */
	if (strcmp(o->to, "none") == 0 && o->payload != NULL &&
	    strcmp(cJSON_GetObjectItemCaseSensitive(r, "state")->valuestring, "failed") != 0) {
		cJSON *p = cJSON_AddObjectToObject(r, "probe");

		if (probe_in_guest(p, s.c, o) != LM_OK)
			cJSON_AddStringToObject(r, "probeError", "the probe after rollback did not run");
	}
	rec = record_new("rollback", t, o);
	cJSON_AddStringToObject(rec, "to", o->to);
	if (cJSON_GetObjectItemCaseSensitive(r, "probe"))
		cJSON_AddItemToObject(rec, "stock", ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(r, "probe"), "stock")));
	cJSON_AddStringToObject(rec, "result", cJSON_GetObjectItemCaseSensitive(r, "state")->valuestring);
	ledger_add_str(rec, "from", s.f.current);
	record(r, o, s.key, rec);
	cJSON_Delete(rec);
done:
	vm_close(&s, r);
	return LM_OK;
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
bench_args(const deploy_bench_opts *b, const char *model, const char **argv, char num[4][16])
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

/* Runs one guest arm: prefix (NULL, or run-with-shim) then llama-bench and its arguments. */
static int
guest_arm(arm_run *a, ssh_conn *c, const char *prefix, const char *lb, const deploy_bench_opts *b,
    const char *what, lm_buf *cmdline, char *err)
{
	const char *argv[24];
	char num[4][16], msg[LM_ERRLEN];
	lm_buf cmd = {0};
	ssh_result r;
	size_t i = 0;
	int rc;

	if (prefix)
		argv[i++] = prefix;
	argv[i++] = lb;
	bench_args(b, b->model, argv + i, num);
	if (ssh_quote_argv(&cmd, argv) != LM_OK)
		return lm_err(err, LM_EFAIL, "out of memory");
	if (cmdline && cmdline->len == 0)
		lm_buf_add(cmdline, cmd.data, cmd.len);
	rc = ssh_exec(c, cmd.data, NULL, 0, &r, msg);
	lm_buf_free(&cmd);
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
host_arm(arm_run *a, const deploy_bench_opts *b, char *err)
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
metadata(lm_buf *m, const guest_target *t, const vm_session *s, const cJSON *table, const char *cmdline,
    const cJSON *hashes)
{
	char *tj = cJSON_Print(table), *hj = cJSON_Print(hashes), chip[128], build[64];

	guest_host_facts(chip, build);
	lm_buf_addf(m, "# lume-metal bench: %s\n\n", t->name);
	lm_buf_addf(m, "- guest: macOS %s (%s), %s, %s\n", s->f.os ? s->f.os : "?", s->f.build ? s->f.build : "?",
	    s->f.model ? s->f.model : "?", s->f.chip ? s->f.chip : "?");
	lm_buf_addf(m, "- host: %s (%s)\n", chip, build);
	lm_buf_addf(m, "- installed payload: %s\n", s->f.current ? s->f.current : "none");
	lm_buf_addf(m, "- command (stock arm; the shim arm prefixes run-with-shim): `%s`\n", cmdline);
	lm_buf_addf(m, "- figures: medians of samples_ts (tokens/s)\n\n## Hashes\n\n```json\n%s\n```\n\n", hj ? hj : "");
	lm_buf_addf(m, "## Table\n\n```json\n%s\n```\n", tj ? tj : "");
	free(tj);
	free(hj);
}

int
deploy_bench(cJSON **out, guest_target *t, const deploy_opts *o, char *err)
{
	const deploy_bench_opts *b = o->bench;
	cJSON *r = result_new(t, "failed"), *hashes = cJSON_CreateObject(), *table = NULL, *rec = NULL, *line = NULL;
	arm_run stock = {0}, shim = {0}, host = {0};
	bench_arm as = {0}, ah = {0}, ahost = {0};
	lm_buf csv = {0}, md = {0}, cmdline = {0};
	char msg[LM_ERRLEN], *lb = NULL, rws[4200];
	int code = 0;
	vm_session s;

	(void)err;
	*out = r;
	if (vm_open(&s, r, t, o) != LM_OK) {
		cJSON_Delete(hashes);
		return LM_OK;
	}
	if (s.f.current == NULL) {
		set_state(r, "failed", "no lume-metal release is current in the guest; deploy first (the shim arm "
		    "runs through its run-with-shim)");
		goto done;
	}
	{
		const char *a[] = {"sh", "-c", hashes_script, "sh", b->llama_bench, b->model, NULL};
		lm_buf c = {0};
		ssh_result res;

		if (ssh_quote_argv(&c, a) != LM_OK || ssh_exec(s.c, c.data, NULL, 0, &res, msg) != LM_OK) {
			lm_buf_free(&c);
			set_state(r, "failed", msg);
			goto done;
		}
		lm_buf_free(&c);
		code = res.exit_code;
		if (code != 0 || res.out.data == NULL || strlen(res.out.data) < 131) {
			const char *e = res.err.data ? res.err.data : "";

			set_state(r, "failed", *e ? e : "cannot hash llama-bench and the model in the guest");
			ssh_result_free(&res);
			goto done;
		}
		lb = strndup(res.out.data, strcspn(res.out.data, "\n"));
		line = cJSON_CreateString(res.out.data);
		snprintf(stock.llama_bench_sha, 65, "%.64s", strchr(res.out.data, '\n') + 1);
		snprintf(stock.model_sha, 65, "%.64s", strchr(res.out.data, '\n') + 66);
		ssh_result_free(&res);
		if (!lm_is_sha256(stock.llama_bench_sha) || !lm_is_sha256(stock.model_sha)) {
			set_state(r, "failed", "shasum in the guest printed no SHA-256");
			goto done;
		}
		shim = (arm_run){0};
		memcpy(shim.llama_bench_sha, stock.llama_bench_sha, 65);
		memcpy(shim.model_sha, stock.model_sha, 65);
	}
	if (b->host_baseline) {
		if (host_arm(&host, b, msg) != LM_OK) {
			set_state(r, "failed", msg);
			goto done;
		}
		if (strcmp(host.model_sha, stock.model_sha) != 0 && !b->allow_different_model) {
			set_state(r, "failed", "the guest's model and this host's differ (SHA-256); --allow-different-model "
			    "compares them anyway");
			goto done;
		}
	}
	snprintf(rws, sizeof rws, "%s", GUEST_ROOT "/current/bin/run-with-shim");
	if (guest_arm(&stock, s.c, NULL, lb, b, "stock", &cmdline, msg) != LM_OK ||
	    guest_arm(&shim, s.c, rws, lb, b, "shim", NULL, msg) != LM_OK) {
		set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		goto done;
	}
	/* Parse every arm before anything is written. */
	if (bench_parse_json(&as, stock.out.data ? stock.out.data : "", stock.out.len, "stock.json", b->min_samples, msg) != LM_OK ||
	    bench_parse_json(&ah, shim.out.data ? shim.out.data : "", shim.out.len, "shim.json", b->min_samples, msg) != LM_OK ||
	    (b->host_baseline && bench_parse_json(&ahost, host.out.data ? host.out.data : "", host.out.len, "host.json",
		b->min_samples, msg) != LM_OK)) {
		set_state(r, "failed", msg);
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
		set_state(r, "failed", msg);
		goto done;
	}
	add_hashes(hashes, "guest", lb, &stock);
	if (b->host_baseline)
		add_hashes(hashes, "host", b->host_llama_bench ? b->host_llama_bench : "llama-bench", &host);
	lm_buf_addf(&csv, "%s\n", BENCH_CSV_HEADER);
	if (bench_render(&csv, table, BENCH_CSV, NULL, msg) != LM_OK) {
		set_state(r, "failed", msg);
		goto done;
	}
	metadata(&md, t, &s, table, cmdline.data ? cmdline.data : "", hashes);
	if (b->evidence) {
		evidence_file files[9];
		size_t n = 0;

		files[n++] = (evidence_file){"stock.json", stock.out.data, stock.out.len};
		files[n++] = (evidence_file){"stock.stderr", stock.err.data ? stock.err.data : "", stock.err.len};
		files[n++] = (evidence_file){"shim.json", shim.out.data, shim.out.len};
		files[n++] = (evidence_file){"shim.stderr", shim.err.data ? shim.err.data : "", shim.err.len};
		if (b->host_baseline) {
			files[n++] = (evidence_file){"host.json", host.out.data, host.out.len};
			files[n++] = (evidence_file){"host.stderr", host.err.data ? host.err.data : "", host.err.len};
		}
		files[n++] = (evidence_file){"results.csv", csv.data, csv.len};
		files[n++] = (evidence_file){"metadata.md", md.data, md.len};
		if (evidence_write(b->evidence, files, n, msg) != LM_OK) {
			set_state(r, "failed", msg);
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
	set_state(r, cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(table, "shim_effective")) ? "shim-not-effective"
	    : "benchmarked", NULL);
	record(r, o, s.key, rec);
done:
	cJSON_Delete(line);
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
	vm_close(&s, r);
	return LM_OK;
}

int
deploy_exit_code(cJSON *const *results, size_t n)
{
	int refused = 0, failed = 0;

	for (size_t i = 0; i < n; i++) {
		const char *s = cJSON_GetObjectItemCaseSensitive(results[i], "state")->valuestring;

		if (strcmp(s, "refused") == 0)
			refused = 1;
		else if (strcmp(s, "unchanged") != 0 && strcmp(s, "deployed") != 0 && strcmp(s, "rolled-back") != 0 &&
		    strcmp(s, "skipped") != 0 && strcmp(s, "ok") != 0 && strcmp(s, "probed") != 0 &&
		    strcmp(s, "benchmarked") != 0)
			failed = 1;
	}
	return failed ? 1 : refused ? 3 : 0;
}

/* deploy_int.h: the helpers above, for validate.c (and, after the parsers branch, bench_vm.c). */
cJSON *
deploy_result_new(const guest_target *t, const char *state)
{
	return result_new(t, state);
}

void
deploy_set_state(cJSON *r, const char *state, const char *message)
{
	set_state(r, state, message);
}

int
deploy_vm_open(vm_session *s, cJSON *r, guest_target *t, const deploy_opts *o)
{
	return vm_open(s, r, t, o);
}

void
deploy_vm_close(vm_session *s, cJSON *r)
{
	vm_close(s, r);
}

void
deploy_record(cJSON *r, const deploy_opts *o, const cJSON *key, const cJSON *rec)
{
	record(r, o, key, rec);
}

cJSON *
deploy_record_new(const char *kind, const guest_target *t, const deploy_opts *o)
{
	return record_new(kind, t, o);
}

/* deploy: see deploy.h. */
#include "ops/deploy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ledger.h"
#include "core/util.h"
#include "ops/fleet.h"
#include "ops/validate.h"
#include "ops/verdicts.h"

/* Whether the ledger holds a deploy record of this VM with this payload: last (the key's last
 * deploy record) first, else the key's whole document. A ledger that cannot be read counts as
 * recorded (the deploy goes on as unchanged; status and ledger show name the problem). */
static int
recorded_for(const session_opts *o, const cJSON *key, const guest_target *t, const cJSON *last)
{
	char err[LM_ERRLEN];
	int found = 0;

	if (last && strcmp(lm_jstr_or(last, "vm", ""), t->name) == 0 && strcmp(lm_jstr_or(last, "payloadSha256", ""),
	    o->info->sha256) == 0)
		return 1;
	/* one parse of the document for all its VMs (ledger.h) */
	return ledger_deployed(&found, o->state, key, t->name, o->info->sha256, err) != LM_OK || found;
}

/* The workload's process as install.sh confirmed it after the bootstrap ("process" in its
 * JSON), kept in the record as two fields, never the guest's object: its pid and whether the
 * shim was active there. Nothing when the install did not get that far. */
static void
record_process(cJSON *rec, const cJSON *proc)
{
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(proc, "pid");
	const cJSON *act = cJSON_GetObjectItemCaseSensitive(proc, "shimActive");
	cJSON *p;

	if (!cJSON_IsNumber(pid) || pid->valuedouble < 1 || pid->valuedouble > 2147483647.0 ||
	    (p = cJSON_AddObjectToObject(rec, "process")) == NULL)
		return;
	cJSON_AddNumberToObject(p, "pid", (double)(long)pid->valuedouble);
	if (cJSON_IsBool(act))
		cJSON_AddBoolToObject(p, "shimActive", cJSON_IsTrue(act));
	else
		cJSON_AddNullToObject(p, "shimActive");
}

/* What a failed install was about (install.sh's "cause"): "image" or "workload", else NULL. */
static const char *
cause_of(const cJSON *res)
{
	const char *c = lm_jstr_or(res, "cause", "");

	return strcmp(c, "image") == 0 ? "image" : strcmp(c, "workload") == 0 ? "workload" : NULL;
}

/* The confirmation's wait and watch as install.sh used them ("confirm": {"timeout": N,
 * "settle": N}, whole seconds up to 3600), copied into o, and the time to ready it measured
 * ("readyMs": from the bootstrap to the workload's first 200, within that timeout); nothing of
 * what it did not send. */
static void
add_confirm(cJSON *o, const cJSON *res)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(res, "confirm");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "timeout"), *s = cJSON_GetObjectItemCaseSensitive(c, "settle");
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(res, "readyMs");
	cJSON *n;

	if (!cJSON_IsNumber(t) || !cJSON_IsNumber(s) || t->valuedouble < 0 || t->valuedouble > 3600 ||
	    s->valuedouble < 0 || s->valuedouble > 3600 || (n = cJSON_AddObjectToObject(o, "confirm")) == NULL)
		return;
	cJSON_AddNumberToObject(n, "timeout", (double)(int)t->valuedouble);
	cJSON_AddNumberToObject(n, "settle", (double)(int)s->valuedouble);
	if (cJSON_IsNumber(ms) && ms->valuedouble >= 0 && ms->valuedouble <= 3600000.0)
		cJSON_AddNumberToObject(o, "readyMs", (double)(long)ms->valuedouble);
}

/* The stock probe's answer last recorded for this image version (last: the key's last deploy or
 * golden record), when it passed with this very payload and profile and --force does not ask
 * for a full validation; else NULL. Borrowed from last. */
static const cJSON *
stock_recorded(const cJSON *last, const session_opts *o)
{
	const cJSON *stock = last ? cJSON_GetObjectItemCaseSensitive(last, "stock") : NULL;

	if (o->force || stock == NULL || strcmp(lm_jstr_or(last, "verdict", ""), "pass") != 0 ||
	    strcmp(lm_jstr_or(last, "payloadSha256", ""), o->info->sha256) != 0 ||
	    strcmp(lm_jstr_or(last, "profile", ""), o->info->profile) != 0 || !cJSON_IsObject(stock) ||
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(stock, "device")))
		return NULL;
	return stock;
}

/* The payload is current but the ledger has no record of it on this VM: a clone of an image
 * deployed elsewhere (each CI job's fresh clone of a golden image), or a run that was
 * interrupted or killed after the guest activated it. The guest's install.json says so
 * (install.sh's result, kept in the guest). When the image version's verdict for this payload
 * and profile is recorded already, with its probe answers (last), the VM gets an observation
 * (ledger.h, LEDGER_OBSERVE: a few hundred bytes, no verdict); else the deploy record is made
 * from install.json, marked "reconciled". r's message says which. */
static void
reconcile(cJSON *r, session_vm *s, const guest_target *t, const session_opts *o, const cJSON *last)
{
	cJSON *res = NULL, *rec;
	const cJSON *stock;
	char msg[LM_ERRLEN];
	int code = 0;

	if (guest_run_json(&res, &code, s->c, RSCRIPT_RECONCILE, NULL, NULL, msg) != LM_OK || code != 0 ||
	    strcmp(lm_jstr_or(res, "result", ""), "installed") != 0 || strcmp(lm_jstr_or(res, "sha256", ""), o->info->sha256) != 0 ||
	    !cJSON_IsObject(stock = cJSON_GetObjectItemCaseSensitive(res, "stock"))) {
		session_set_state(r, "unchanged", "this payload is already current, but the ledger has no record of its "
		    "install on this VM and the guest kept no result for it (install.json): --force validates and "
		    "records it");
		cJSON_Delete(res);
		return;
	}
	if (stock_recorded(last, o) != NULL) {
		/* The verdict and both probe answers are the image version's already: only who had it. */
		rec = session_record_new(LEDGER_OBSERVE, t, o);
		cJSON_AddStringToObject(rec, "result", "current");
		session_set_state(r, "unchanged", "this payload is already current; this VM had no record of it (a clone "
		    "of a deployed image, or a run interrupted after the guest activated it): recorded as an "
		    "observation, the image version's verdict being recorded already");
	} else {
		rec = session_record_new("deploy", t, o);
		cJSON_AddStringToObject(rec, "verdict", "pass");
		cJSON_AddItemToObject(rec, "reasons", cJSON_CreateArray());
		cJSON_AddItemToObject(rec, "stock", ledger_probe_summary(stock));
		cJSON_AddItemToObject(rec, "shimmed", ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(res, "shimmed")));
		session_set_state(r, "unchanged", "this payload is already current; its install was not in the ledger (a "
		    "run interrupted or killed after the guest activated it): recorded now from the guest's install.json");
	}
	record_process(rec, cJSON_GetObjectItemCaseSensitive(res, "process"));
	cJSON_AddTrueToObject(rec, "reconciled");
	cJSON_AddTrueToObject(r, "reconciled");
	session_record(r, o, s->key, rec);
	cJSON_Delete(rec);
	cJSON_Delete(res);
}

/* --dry-run's plan for one VM: the current release (or null), the new one, and what would
 * happen: "install", "unchanged" or "refused" (the state's message says why). */
static void
plan_data(cJSON *r, const session_vm *s, const session_opts *o, const char *action)
{
	if (s->f.current)
		cJSON_AddStringToObject(r, "current", s->f.current);
	else
		cJSON_AddNullToObject(r, "current");
	cJSON_AddStringToObject(r, "new", o->info->sha256);
	cJSON_AddStringToObject(r, "action", action);
}

/* A deploy past its upload, holding what finishing it needs: on the thread that started it, or
 * (deploy_exec_send said the guest is watching the workload's settle) on the fleet's watcher. */
typedef struct {
	fleet_later later; /* first: finish_later gets it back */
	deploy_exec *x;
	session_vm s;
	guest_target *t;
	const session_opts *o;
	cJSON *last;
} deploy_job;

/* Reads install.sh's answer into r, records it, ends the session; frees j. */
static void
deploy_finish(deploy_job *j, cJSON *r)
{
	const session_opts *o = j->o;
	const guest_target *t = j->t;
	const cJSON *last = j->last;
	cJSON *res = NULL, *rec;
	char msg[LM_ERRLEN];
	int code = 0;

	if (deploy_exec_result(j->x, &res, &code, msg) != LM_OK) {
		session_set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		goto done;
	}
	cJSON_AddItemToObject(r, "install", res);
	{
		const cJSON *result = cJSON_GetObjectItemCaseSensitive(res, "result");
		const cJSON *reason = cJSON_GetObjectItemCaseSensitive(res, "reason");
		const cJSON *stock = cJSON_GetObjectItemCaseSensitive(res, "stock");
		int installed = cJSON_IsString(result) && code == 0 &&
		    (strcmp(result->valuestring, "installed") == 0 || strcmp(result->valuestring, "unchanged") == 0);
		const char *cause = installed ? NULL : cause_of(res);

		add_confirm(r, res);
		if (cause)
			cJSON_AddStringToObject(r, "cause", cause);
		if (installed)
			session_set_state(r, strcmp(result->valuestring, "unchanged") == 0 ? "unchanged" : "deployed", NULL);
		else {
			char why[LM_ERRLEN + 128];

			/* Whether the other VMs of this image version are refused now, said. */
			snprintf(why, sizeof why, "%s%s", cJSON_IsString(reason) ? reason->valuestring : "install.sh failed",
			    !cJSON_IsObject(stock) ? "" : cause && strcmp(cause, "workload") == 0 ? " (a workload failure on "
			    "this VM: other VMs of this image version are not gated)" : cause ? " (an image failure: this "
			    "image version is now recorded as failing)" : " (this image version is now recorded as failing)");
			session_set_state(r, cJSON_IsObject(stock) ? "validation-failed" : "failed", why);
		}
		/* A verdict is recorded only when the probe ran: a full disk says nothing of the image. */
		if (cJSON_IsObject(stock)) {
			/* The guest's answers only as a bounded summary: a record stays a few KiB. */
			rec = session_record_new("deploy", t, o);
			cJSON_AddStringToObject(rec, "verdict", installed ? "pass" : "fail");
			cJSON_AddItemToObject(rec, "reasons", cJSON_CreateArray());
			if (!installed && cJSON_IsString(reason))
				ledger_add_reason(rec, reason->valuestring);
			/* "workload": this VM's failure; the gate and status skip it (ledger_verdict). */
			if (cause)
				cJSON_AddStringToObject(rec, "cause", cause);
			add_confirm(rec, res);
			cJSON_AddItemToObject(rec, "stock", ledger_probe_summary(stock));
			cJSON_AddItemToObject(rec, "shimmed", ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(res,
			    "shimmed")));
			record_process(rec, cJSON_GetObjectItemCaseSensitive(res, "process"));
			if (o->force)
				cJSON_AddTrueToObject(rec, "forced");
			if (stock_recorded(last, o) != NULL)
				cJSON_AddTrueToObject(rec, "stockRecorded");
			session_record(r, o, j->s.key, rec);
			cJSON_Delete(rec);
		}
	}
done:
	cJSON_Delete(j->last);
	session_close(&j->s, r);
	free(j);
}

static void
finish_later(fleet_later *l, cJSON *r)
{
	deploy_finish((deploy_job *)l, r);
}

static int
ready_later(fleet_later *l, int *fd, int64_t *deadline)
{
	return deploy_exec_ready(((deploy_job *)l)->x, fd, deadline);
}

int
deploy_one(cJSON **out, guest_target *t, const session_opts *o, char *err)
{
	cJSON *r = session_result_new(t, "failed"), *last = NULL;
	deploy_exec *x = NULL;
	deploy_job *j;
	session_vm s;
	const cJSON *v, *known;
	char msg[LM_ERRLEN];
	int recorded = 0, settle = -1;
	uint64_t sent = 0;
	/* A verdict covers one payload: only this one's records gate it. */
	const ledger_want want = {"deploy|golden", o->info->sha256, o->info->profile, o->info->workload, 0};

	(void)err;
	*out = r;
	cJSON_AddStringToObject(r, "sha256", o->info->sha256);
	if (session_open_exec(&s, r, t, o, &x) != LM_OK)
		return LM_OK;
	/* The registry's verdicts first, when asked for (verdicts.h): the newest decides. */
	verdicts_consult(r, &s, o);
	if (ledger_load_verdict(&last, &recorded, o->state, s.key, &want, msg) != LM_OK) {
		session_set_state(r, "failed", msg);
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
		session_set_state(r, "refused", why);
		if (o->dry_run)
			plan_data(r, &s, o, "refused");
		goto done;
	}
	if (s.f.current && strcmp(s.f.current, o->info->sha256) == 0 && !o->force) {
		session_set_state(r, "unchanged", "this payload is already current");
		cJSON_AddNumberToObject(r, "bytesSent", 0);
		deploy_exec_skip(x);
		x = NULL;
		if (o->dry_run)
			plan_data(r, &s, o, "unchanged");
		else if (!recorded_for(o, s.key, t, last))
			reconcile(r, &s, t, o, last);
		goto done;
	}
	/* The workload's own numbers, once per image version (validate.h). */
	if (o->require_validation && validate_gate(r, &s, t, o) != LM_OK) {
		verdicts_annotate(r);
		goto done;
	}
	if (o->dry_run) {
		cJSON *plan = cJSON_AddArrayToObject(r, "plan");

		cJSON_AddItemToArray(plan, cJSON_CreateString("upload the payload to staging/"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("verify every file, unpack into releases/<sha>/"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("probe stock and shimmed against the profile"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("on a pass: switch current, bootstrap the LaunchAgent"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("record the verdict in the ledger"));
		plan_data(r, &s, o, "install");
		session_set_state(r, "skipped", recorded ? "dry run: nothing changed (image version recorded)"
		    : "dry run: nothing changed (image version not yet recorded: it would be validated in full)");
		goto done;
	}
	/* This image version's stock answer is recorded with this payload and profile: the guest
	 * runs only the shimmed probe, against it. */
	if ((known = stock_recorded(last, o)) != NULL)
		cJSON_AddStringToObject(r, "stockProbe", "recorded");
	if ((j = calloc(1, sizeof *j)) == NULL) {
		session_set_state(r, "failed", "out of memory");
		goto done;
	}
	deploy_exec_send(x, o->payload, known, &sent, &settle);
	cJSON_AddNumberToObject(r, "bytesSent", (double)sent);
	*j = (deploy_job){.later = {.at = lm_now_ms() + (int64_t)settle * 1000, .finish = finish_later,
		.ready = ready_later}, .x = x, .s = s,
		.t = t, .o = o, .last = last};
	/* The guest watches the workload's settle: a fleet goes on with its next VM meanwhile. */
	if (settle <= 0 || !fleet_defer(&j->later))
		deploy_finish(j, r);
	return LM_OK;
done:
	deploy_exec_skip(x);
	cJSON_Delete(last);
	session_close(&s, r);
	return LM_OK;
}

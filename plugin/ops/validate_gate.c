/* validate_gate: the validate gate of deploys and the one validation per image version of a
 * run (validate.h): validate_check, validate_gate, validate_version, the process's table of
 * the versions being validated, and the entry points that connect and run a validation
 * (validate_one, validate_once; validate.c holds the validation itself, validate_session). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ledger.h"
#include "core/util.h"
#include "ops/validate.h"

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

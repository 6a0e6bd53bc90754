/* rollback: see rollback.h. */
#include "ops/rollback.h"

#include <stdio.h>
#include <string.h>

#include "core/ledger.h"
#include "ops/probe.h"

int
rollback_one(cJSON **out, guest_target *t, const session_opts *o, char *err)
{
	cJSON *r = session_result_new(t, "failed"), *rec, *res;
	session_vm s;
	const cJSON *result;
	int code = 0;

	(void)err;
	*out = r;
	if (session_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (session_run_script(r, s.c, RSCRIPT_ROLLBACK, o->to, "rollback", &code) != LM_OK)
		goto done;
	res = cJSON_GetObjectItemCaseSensitive(r, "rollback");
	result = cJSON_GetObjectItemCaseSensitive(res, "result");
	if (code == 0 && cJSON_IsString(result) && strcmp(result->valuestring, "rolled-back") == 0)
		session_set_state(r, "rolled-back", NULL);
	else if (code == 0 && cJSON_IsString(result) && strcmp(result->valuestring, "nothing-to-do") == 0)
		session_set_state(r, "unchanged", "nothing to roll back");
	else {
		const cJSON *reason = cJSON_GetObjectItemCaseSensitive(res, "reason");

		session_set_state(r, "failed", cJSON_IsString(reason) ? reason->valuestring : "rollback.sh failed");
	}
	/* Back to stock: show the stock answers (the probe, unshimmed, in a scratch directory). */
	if (strcmp(o->to, "none") == 0 && o->payload != NULL &&
	    strcmp(cJSON_GetObjectItemCaseSensitive(r, "state")->valuestring, "failed") != 0) {
		cJSON *p = cJSON_AddObjectToObject(r, "probe");

		if (probe_scratch(p, s.c, o) != LM_OK) {
			/* The rollback happened; the stock probe after it did not: the VM fails, saying both. */
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(p, "message");
			char why[LM_ERRLEN + 100];

			snprintf(why, sizeof why, "rolled back to none, but the stock probe after it failed: %s",
			    cJSON_IsString(m) ? m->valuestring : "it did not run");
			cJSON_AddStringToObject(r, "probeError", cJSON_IsString(m) ? m->valuestring : "it did not run");
			session_set_state(r, "failed", why);
		}
	}
	rec = session_record_new("rollback", t, o);
	/* The release this rollback left, not the probe payload's SHA-256 (that is probePayloadSha256). */
	if (o->info) {
		cJSON_AddStringToObject(rec, "probePayloadSha256", o->info->sha256);
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "payloadSha256");
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "profile");
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "workload");
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "target");
	}
	if (s.f.current)
		cJSON_AddStringToObject(rec, "payloadSha256", s.f.current);
	cJSON_AddStringToObject(rec, "to", o->to);
	if (cJSON_GetObjectItemCaseSensitive(r, "probe"))
		cJSON_AddItemToObject(rec, "stock", ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(r, "probe"), "stock")));
	cJSON_AddStringToObject(rec, "result", cJSON_GetObjectItemCaseSensitive(r, "state")->valuestring);
	ledger_add_str(rec, "from", s.f.current);
	session_record(r, o, s.key, rec);
	cJSON_Delete(rec);
done:
	session_close(&s, r);
	return LM_OK;
}

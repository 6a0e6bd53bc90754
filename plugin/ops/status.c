/* status: see status.h. */
#include "ops/status.h"

#include "core/ledger.h"
#include "ops/verdicts.h"

/* The image version's newest verdict of any payload, as "latestVerdict" and "latestPayload": a VM
 * on another release than a passing one is a release behind. Nothing when none can be read. */
static void
latest(cJSON *r, const session_vm *s, const session_opts *o)
{
	const ledger_want any = {"deploy|golden", NULL, NULL, NULL, 0};
	cJSON *last = NULL;
	const cJSON *v, *p;
	char msg[LM_ERRLEN];

	if (ledger_load_verdict(&last, NULL, o->state, s->key, &any, msg) == LM_OK && last != NULL &&
	    cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(last, "verdict")) &&
	    cJSON_IsString(p = cJSON_GetObjectItemCaseSensitive(last, "payloadSha256"))) {
		cJSON_AddStringToObject(r, "latestVerdict", v->valuestring);
		cJSON_AddStringToObject(r, "latestPayload", p->valuestring);
	}
	cJSON_Delete(last);
}

int
status_one(cJSON **out, guest_target *t, const session_opts *o, char *err)
{
	cJSON *r = session_result_new(t, "failed"), *last = NULL;
	const cJSON *v;
	session_vm s;
	char msg[LM_ERRLEN];
	int code = 0, rc;
	ledger_want want = {"deploy|golden", NULL, NULL, NULL, 0};

	(void)err;
	*out = r;
	if (session_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (session_run_script(r, s.c, RSCRIPT_STATUS, NULL, "status", &code) != LM_OK)
		goto done;
	verdicts_consult(r, &s, o); /* the registry's verdicts, when asked for */
	/* The verdict on the payload installed; when it has none (or none is installed), the
	 * newest of any payload's, so a version recorded as failing shows as such. */
	want.payload = s.f.current;
	rc = ledger_load_verdict(&last, NULL, o->state, s.key, &want, msg);
	if (rc == LM_OK && last == NULL && want.payload != NULL) {
		want.payload = NULL;
		rc = ledger_load_verdict(&last, NULL, o->state, s.key, &want, msg);
	}
	if (rc != LM_OK) {
		/* A verdict that cannot be read is no "ok": failed, saying which document. */
		cJSON_AddStringToObject(r, "ledgerError", msg);
		session_set_state(r, "failed", msg);
		goto done;
	}
	v = last ? cJSON_GetObjectItemCaseSensitive(last, "verdict") : NULL;
	cJSON_AddStringToObject(r, "verdict", cJSON_IsString(v) ? v->valuestring : "unrecorded");
	/* the payload that verdict was for */
	if (cJSON_IsString(v = last ? cJSON_GetObjectItemCaseSensitive(last, "payloadSha256") : NULL))
		cJSON_AddStringToObject(r, "verdictPayload", v->valuestring);
	latest(r, &s, o);
	session_set_state(r, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "status"),
	    "driftDetected")) ? "drift" : "ok", NULL);
done:
	cJSON_Delete(last);
	session_close(&s, r);
	return LM_OK;
}

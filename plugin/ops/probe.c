/* probe: see probe.h. */
#include "ops/probe.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* Runs script with args in the guest; *out gets the first line of its stdout (caller frees). */
static int
run_line(cJSON *r, ssh_conn *c, rscript script, const char *const *args, char **out)
{
	char err[LM_ERRLEN];
	remote_cmd *cmd;
	ssh_result res;
	int rc;

	*out = NULL;
	if ((rc = rcmd_script(&cmd, script, args)) != LM_OK)
		lm_err(err, LM_EFAIL, "out of memory");
	else
		rc = ssh_exec(c, cmd, NULL, 0, &res, err);
	rcmd_free(cmd);
	if (rc == LM_OK && res.exit_code != 0)
		rc = lm_err(err, LM_EFAIL, "%s failed: %.200s", rscript_name(script), res.err.data ? res.err.data : "");
	if (rc == LM_OK && (*out = strndup(res.out.data ? res.out.data : "", res.out.data ? strcspn(res.out.data, "\n")
	    : 0)) == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	ssh_result_free(&res);
	if (rc != LM_OK)
		session_set_state(r, strstr(err, "timed out") ? "timeout" : "failed", err);
	return rc;
}

/* Uploads the payload into dir as name; r gets bytesSent. */
static int
upload_to(cJSON *r, ssh_conn *c, const session_opts *o, const char *dir, const char *name)
{
	char err[LM_ERRLEN];
	uint64_t sent = 0;
	int rc = ssh_upload(c, o->payload, dir, name, &sent, err);

	cJSON_AddNumberToObject(r, "bytesSent", (double)sent);
	if (rc != LM_OK)
		session_set_state(r, strstr(err, "timed out") ? "timeout" : "failed", err);
	return rc;
}

/* probe.h */
int
probe_scratch(cJSON *r, ssh_conn *c, const session_opts *o)
{
	static const char *const mk[] = {"probe", NULL};
	char msg[LM_ERRLEN], *dir = NULL;
	cJSON *res = NULL;
	int code = 0, rc = LM_EFAIL;

	if (run_line(r, c, RSCRIPT_SCRATCH, mk, &dir) != LM_OK)
		return LM_EFAIL;
	if (dir[0] != '/') {
		session_set_state(r, "failed", "mktemp -d in the guest gave no directory");
		goto done;
	}
	if (upload_to(r, c, o, dir, "payload.tar.gz") != LM_OK)
		goto done;
	{
		const char *a[] = {dir, o->info->target, NULL};

		if (guest_run_json(&res, &code, c, RSCRIPT_PROBE, a, NULL, msg) != LM_OK) {
			session_set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
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
probe_one(cJSON **out, guest_target *t, const session_opts *o, char *err)
{
	cJSON *r = session_result_new(t, "failed");
	session_vm s;

	(void)err;
	*out = r;
	if (session_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (probe_scratch(r, s.c, o) == LM_OK)
		session_set_state(r, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "pass")) ? "probed" : "validation-failed", NULL);
	session_close(&s, r);
	return LM_OK;
}

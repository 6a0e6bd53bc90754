/* agent: see agent.h. */
#include "core/agent.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define HOME_TOKEN "__LUME_METAL_HOME__"
#define RELEASE_TOKEN "__LUME_METAL_RELEASE__"

static int
add_xml(lm_buf *b, const char *s)
{
	int rc = 0;

	for (; *s && rc == 0; s++) {
		switch (*s) {
		case '&': rc = lm_buf_addf(b, "&amp;"); break;
		case '<': rc = lm_buf_addf(b, "&lt;"); break;
		case '>': rc = lm_buf_addf(b, "&gt;"); break;
		case '"': rc = lm_buf_addf(b, "&quot;"); break;
		default: rc = lm_buf_add(b, s, 1);
		}
	}
	return rc;
}

/* A <string> element; a leading "~/" becomes the guest HOME token. */
static int
add_string(lm_buf *b, const char *indent, const char *s)
{
	int rc = lm_buf_addf(b, "%s<string>", indent);

	if (rc == 0 && strncmp(s, "~/", 2) == 0) {
		rc = lm_buf_addf(b, HOME_TOKEN "/");
		s += 2;
	}
	if (rc == 0)
		rc = add_xml(b, s);
	return rc == 0 ? lm_buf_addf(b, "</string>\n") : rc;
}

static int
add_key(lm_buf *b, const char *indent, const char *k)
{
	int rc = lm_buf_addf(b, "%s<key>", indent);

	if (rc == 0)
		rc = add_xml(b, k);
	return rc == 0 ? lm_buf_addf(b, "</key>\n") : rc;
}

/* The shim's variables for a profile, in a fixed order; calls fn for each. */
typedef int (*var_fn)(lm_buf *, const char *key, const char *value);

static int
each_shim_var(lm_buf *b, const manifest_profile *p, var_fn fn)
{
	char v[32];
	int rc;

	snprintf(v, sizeof v, "%d", p->apple_family_max);
	if ((rc = fn(b, "LUME_METAL_APPLE_FAMILY_MAX", v)) != 0)
		return rc;
	snprintf(v, sizeof v, "%ld", p->max_threadgroup_memory);
	if ((rc = fn(b, "LUME_METAL_MAX_THREADGROUP_MEMORY", v)) != 0)
		return rc;
	if (p->working_set != 0) {
		snprintf(v, sizeof v, "%" PRIu64, p->working_set);
		rc = fn(b, "LUME_METAL_RECOMMENDED_WORKING_SET_SIZE", v);
	}
	return rc;
}

static int
plist_var(lm_buf *b, const char *k, const char *v)
{
	int rc = add_key(b, "\t\t", k);

	return rc == 0 ? add_string(b, "\t\t", v) : rc;
}

static int
env_var(lm_buf *b, const char *k, const char *v)
{
	return lm_buf_addf(b, "%s=%s\n", k, v);
}

static int
add_bool(lm_buf *b, const manifest_workload *w, const char *field, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(w->json, field);

	if (v == NULL)
		return 0;
	return add_key(b, "\t", key) || lm_buf_addf(b, "\t<%s/>\n", cJSON_IsTrue(v) ? "true" : "false");
}

/* A workload string field, or dflt when it is absent, as a <string>. */
static int
add_str(lm_buf *b, const manifest_workload *w, const char *field, const char *key, const char *dflt)
{
	return add_key(b, "\t", key) || add_string(b, "\t", lm_jstr_or(w->json, field, dflt));
}

/* A workload integer field, or dflt when it is absent, as an <integer>. */
static int
add_int(lm_buf *b, const manifest_workload *w, const char *field, const char *key, int dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(w->json, field);

	return add_key(b, "\t", key) ||
	    lm_buf_addf(b, "\t<integer>%d</integer>\n", cJSON_IsNumber(v) ? v->valueint : dflt);
}

int
agent_render_plist(lm_buf *b, const manifest_workload *w, const manifest_profile *p,
    const agent_target *t, char *err)
{
	const cJSON *it, *j = w->json, *wd;
	lm_buf procs = {0};
	int rc = 0;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "processes"))
		rc |= lm_buf_addf(&procs, "%s%s", procs.len ? "," : "", it->valuestring);
	rc |= lm_buf_addf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" "
	    "\"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
	    "<!-- lume-metal: workload %s, profile %s -->\n"
	    "<plist version=\"1.0\">\n<dict>\n", w->id, p->id);
	rc |= add_key(b, "\t", "Label") || add_string(b, "\t", w->label);
	rc |= add_key(b, "\t", "ProgramArguments") || lm_buf_addf(b, "\t<array>\n");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "programArguments"))
		rc |= add_string(b, "\t\t", it->valuestring);
	rc |= lm_buf_addf(b, "\t</array>\n");
	rc |= add_key(b, "\t", "EnvironmentVariables") || lm_buf_addf(b, "\t<dict>\n");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "environment"))
		rc |= plist_var(b, it->string, it->valuestring);
	rc |= add_key(b, "\t\t", t->preload_var) ||
	    lm_buf_addf(b, "\t\t<string>" RELEASE_TOKEN "/%s</string>\n", t->shim_lib);
	rc |= each_shim_var(b, p, plist_var);
	rc |= plist_var(b, "LUME_METAL_PROCESSES", procs.data ? procs.data : "");
	rc |= add_key(b, "\t\t", "LUME_METAL_STATE_DIR") ||
	    lm_buf_addf(b, "\t\t<string>" HOME_TOKEN "/" AGENT_STATE_DIR) || add_xml(b, w->label) ||
	    lm_buf_addf(b, AGENT_STATE_SUFFIX "</string>\n");
	rc |= lm_buf_addf(b, "\t</dict>\n");
	rc |= add_key(b, "\t", "StandardOutPath") ||
	    add_string(b, "\t", cJSON_GetObjectItemCaseSensitive(j, "stdoutPath")->valuestring);
	rc |= add_key(b, "\t", "StandardErrorPath") ||
	    add_string(b, "\t", cJSON_GetObjectItemCaseSensitive(j, "stderrPath")->valuestring);
	if ((wd = cJSON_GetObjectItemCaseSensitive(j, "workingDirectory")) != NULL)
		rc |= add_key(b, "\t", "WorkingDirectory") || add_string(b, "\t", wd->valuestring);
	rc |= add_bool(b, w, "runAtLoad", "RunAtLoad");
	rc |= add_bool(b, w, "keepAlive", "KeepAlive");
	rc |= add_str(b, w, "processType", "ProcessType", AGENT_PROCESS_TYPE);
	rc |= add_int(b, w, "throttleInterval", "ThrottleInterval", AGENT_THROTTLE_INTERVAL);
	rc |= add_int(b, w, "exitTimeOut", "ExitTimeOut", AGENT_EXIT_TIMEOUT);
	rc |= lm_buf_addf(b, "</dict>\n</plist>\n");
	lm_buf_free(&procs);
	return rc ? lm_err(err, LM_EFAIL, "%s: out of memory rendering the LaunchAgent", w->path) : LM_OK;
}

int
agent_render_shim_env(lm_buf *b, const manifest_profile *p, const agent_target *t, char *err)
{
	int rc = lm_buf_addf(b, "LUME_METAL_PRELOAD_VAR=%s\nLUME_METAL_PRELOAD_LIB=%s\n",
	    t->preload_var, t->shim_lib);

	rc |= each_shim_var(b, p, env_var);
	return rc ? lm_err(err, LM_EFAIL, "out of memory rendering shim.env") : LM_OK;
}

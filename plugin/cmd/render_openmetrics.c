/* render_openmetrics: status's results as metrics (render.h). The Prometheus text format
 * (version 0.0.4, what node_exporter's textfile collector and `promtool check metrics` read)
 * written so that it is OpenMetrics 1.0 text too: every family a gauge with HELP and TYPE, its
 * samples together, no timestamps (the textfile collector refuses them), "# EOF" last (a comment
 * to the Prometheus parser). One series per VM and family; a family that says nothing of a VM
 * (one status could not read) has no sample for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cli.h"
#include "cmd/render.h"

/* Label escaping, the one place: s made clean (render_clean, newlines kept), at most
 * RENDER_LABEL_MAX bytes (a longer value keeps its first bytes, then "..." and 12 hex digits of
 * the SHA-256 of the whole value, so two long names stay two series), then backslash, double
 * quote and newline as \\, \" and \n, as both formats' rules have it. */
static void
label_value(lm_buf *out, const char *s)
{
	lm_buf c = {0};
	size_t keep = RENDER_LABEL_MAX - 15;

	if (render_clean(&c, s ? s : "", 4096, 1) != 0 || c.data == NULL) {
		lm_buf_free(&c);
		return;
	}
	if (c.len > RENDER_LABEL_MAX) {
		char hex[65];

		lm_sha256_hex(hex, s, strlen(s));
		while (keep > 0 && ((unsigned char)c.data[keep] & 0xc0) == 0x80)
			keep--;
		c.len = keep;
		c.data[keep] = '\0';
		lm_buf_addf(&c, "...%.12s", hex);
	}
	for (const char *p = c.data; *p; p++) {
		const char *e = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;

		lm_buf_add(out, e ? e : p, e ? 2 : 1);
	}
	lm_buf_free(&c);
}

/* One sample: NAME{vm="...",k="v",...} VALUE; kv holds more label names and values, NULL-ended. */
static void
sample(lm_buf *out, const char *name, const char *vm, const char *const *kv, double value)
{
	int first = 1;

	lm_buf_addf(out, "%s{", name);
	if (vm) {
		RENDER_LIT(out, "vm=\"");
		label_value(out, vm);
		RENDER_LIT(out, "\"");
		first = 0;
	}
	for (; kv && kv[0]; kv += 2, first = 0) {
		lm_buf_addf(out, "%s%s=\"", first ? "" : ",", kv[0]);
		label_value(out, kv[1]);
		RENDER_LIT(out, "\"");
	}
	lm_buf_addf(out, "} %.15g\n", value);
}

/* The families, in order: name and HELP (fixed text: no backslash, no newline). */
enum { F_STATE, F_UP, F_SHIM, F_RUNNING, F_DRIFT, F_DRIFT_FILES, F_RELEASE, F_BEHIND, F_VERDICT, F_CHECKED,
	F_DURATION, F_N };
static const char *const family[F_N][2] = {
	{"lume_metal_vm_state", "The state lume-metal status ended in for the VM (1, its state in the label)."},
	{"lume_metal_vm_up", "Whether status read the VM's guest: 1 read (ok or drift), 0 not (unreachable, "
	    "auth-failed, hostkey-mismatch, timeout, failed)."},
	{"lume_metal_shim_active", "Whether the shim is active in the process launchd runs for the workload: 1 "
	    "yes, 0 no (it stays stock, no shim state, or the service is not loaded)."},
	{"lume_metal_service_running", "Whether the workload's LaunchAgent is loaded and its process running."},
	{"lume_metal_drift", "Whether installed files or the LaunchAgent no longer match their checksums."},
	{"lume_metal_drift_files", "How many installed files (and the LaunchAgent) no longer match."},
	{"lume_metal_release", "The VM's current and previous release: the payload SHA-256, or none (always 1)."},
	{"lume_metal_release_behind", "Whether the VM's current release is not the payload of its image "
	    "version's newest verdict, a pass (1), or is (0); absent when that verdict is not a pass."},
	{"lume_metal_image_verdict", "The ledger's verdict for the VM's image version: pass, fail or unrecorded "
	    "(1, the verdict in the label)."},
	{"lume_metal_last_check_timestamp_seconds", "When status last finished with the VM (Unix time)."},
	{"lume_metal_check_duration_seconds", "How long status took for the VM."},
};

/* Seconds since the epoch of "2026-01-31T23:59:59Z" (a result's "time"), or -1. */
static double
epoch(const char *t)
{
	struct tm tm = {0};
	char z = 0;

	if (t == NULL || sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
	    &tm.tm_min, &tm.tm_sec, &z) != 7 || z != 'Z')
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm);
}

/* Family f's sample for result r (vm its name), when it has one. */
static void
vm_sample(lm_buf *out, int f, const cJSON *r, const char *vm)
{
	const cJSON *st = lm_jobj(r, "status"), *svc = lm_jobj(st, "service"), *n;
	const char *cur = lm_jstr(st, "current"), *prev = lm_jstr(st, "previous");
	const char *vp = lm_jstr(r, "latestPayload"), *verdict = lm_jstr(r, "verdict");
	char img[600];

	if (f == F_STATE) {
		const char *kv[] = {"state", lm_jstr(r, "state") ? lm_jstr(r, "state") : "failed", NULL};

		sample(out, family[f][0], vm, kv, 1);
	} else if (f == F_UP)
		sample(out, family[f][0], vm, NULL, st != NULL);
	else if (st == NULL && f <= F_BEHIND)
		return; /* nothing read: nothing to say */
	else if (f == F_SHIM)
		sample(out, family[f][0], vm, NULL, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(svc, "shimActive")));
	else if (f == F_RUNNING)
		sample(out, family[f][0], vm, NULL, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(svc, "loaded")) &&
		    lm_jstr(svc, "state") && strcmp(lm_jstr(svc, "state"), "running") == 0);
	else if (f == F_DRIFT)
		sample(out, family[f][0], vm, NULL, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "driftDetected")));
	else if (f == F_DRIFT_FILES)
		sample(out, family[f][0], vm, NULL, cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(st, "drift")));
	else if (f == F_RELEASE) {
		const char *kv[] = {"current", cur ? cur : "none", "previous", prev ? prev : "none", NULL};

		sample(out, family[f][0], vm, kv, 1);
	} else if (f == F_BEHIND) {
		if (lm_jstr(r, "latestVerdict") && strcmp(lm_jstr(r, "latestVerdict"), "pass") == 0 && vp)
			sample(out, family[f][0], vm, NULL, cur == NULL || strcmp(cur, vp) != 0);
	} else if (f == F_VERDICT && verdict) {
		const char *kv[] = {"image", img, "verdict", verdict, NULL};

		render_image_label(img, sizeof img, r);
		sample(out, family[f][0], vm, kv, 1);
	} else if (f == F_CHECKED && epoch(lm_jstr(r, "time")) >= 0)
		sample(out, family[f][0], vm, NULL, epoch(lm_jstr(r, "time")));
	else if (f == F_DURATION && cJSON_IsNumber(n = cJSON_GetObjectItemCaseSensitive(r, "seconds")))
		sample(out, family[f][0], vm, NULL, n->valuedouble);
}

int
render_openmetrics_status(lm_buf *out, cJSON *const *res, size_t n)
{
	lm_name_at *v = calloc(n ? n : 1, sizeof *v);
	unsigned char *dup = calloc(n ? n : 1, 1);
	cJSON *states = cJSON_CreateObject();
	lm_buf *names = calloc(n ? n : 1, sizeof *names);
	const cJSON *it;

	if (v == NULL || dup == NULL || states == NULL || names == NULL) {
		free(v), free(dup), free(names), cJSON_Delete(states);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		label_value(&names[i], lm_jstr(res[i], "vm") ? lm_jstr(res[i], "vm") : "?");
		v[i] = (lm_name_at){names[i].data ? names[i].data : "", i};
	}
	/* A series is its labels: a VM named twice (or two names alike once bounded) would be two
	 * samples of one series, which both readers refuse; the first is kept. */
	lm_name_sort(v, n);
	for (size_t i = 1; i < n; i++)
		if (strcmp(v[i].name, v[i - 1].name) == 0)
			dup[v[i].pos] = 1;
	for (int f = 0; f < F_N; f++) {
		lm_buf_addf(out, "# HELP %s %s\n# TYPE %s gauge\n", family[f][0], family[f][1], family[f][0]);
		for (size_t i = 0; i < n; i++)
			if (!dup[i])
				vm_sample(out, f, res[i], lm_jstr(res[i], "vm") ? lm_jstr(res[i], "vm") : "?");
	}
	for (size_t i = 0; i < n; i++) {
		const char *s = lm_jstr(res[i], "state") ? lm_jstr(res[i], "state") : "failed";
		cJSON *c = cJSON_GetObjectItemCaseSensitive(states, s);

		if (dup[i])
			continue;
		if (c)
			cJSON_SetNumberValue(c, c->valuedouble + 1);
		else
			cJSON_AddNumberToObject(states, s, 1);
	}
	lm_buf_addf(out, "# HELP %s VMs by the state status ended in.\n# TYPE %s gauge\n", "lume_metal_vms", "lume_metal_vms");
	cJSON_ArrayForEach(it, states) {
		const char *kv[] = {"state", it->string, NULL};

		sample(out, "lume_metal_vms", NULL, kv, it->valuedouble);
	}
	for (size_t i = 0; i < n; i++)
		lm_buf_free(&names[i]);
	free(names);
	free(v);
	free(dup);
	cJSON_Delete(states);
	return RENDER_LIT(out, "# EOF\n");
}

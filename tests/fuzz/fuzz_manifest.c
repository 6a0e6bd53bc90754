/* A capability profile or a workload (a --profile or --workload path): the input written to
 * ID.json, ID being the document's own "id" when it is a plain name (else "fuzz"), then
 * manifest_profile_load and manifest_workload_load, which check it against manifests/schema/,
 * and what a payload renders from a good one (agent.h) with the shipped workload or profile. */
#include <ctype.h>

#include "core/agent.h"
#include "fuzz.h"
#include "core/manifest.h"

static const char *
file_for(const uint8_t *data, size_t size)
{
	char *text = fuzz_str(data, size), name[80] = "fuzz";
	cJSON *doc = cJSON_Parse(text);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "id");
	size_t n = cJSON_IsString(id) ? strlen(id->valuestring) : 0;
	int plain = n > 0 && n < 64 && id->valuestring[0] != '.';

	for (size_t i = 0; plain && i < n; i++)
		plain = isalnum((unsigned char)id->valuestring[i]) || strchr("._-", id->valuestring[i]) != NULL;
	if (plain)
		snprintf(name, sizeof name, "%s.json", id->valuestring);
	else
		snprintf(name, sizeof name, "fuzz.json");
	cJSON_Delete(doc);
	free(text);
	return fuzz_path(name);
}

FUZZ_TARGET(manifest)
{
	static const agent_target mac = {"DYLD_INSERT_LIBRARIES", "lib/liblumemetal.dylib"};
	static manifest_profile *shipped_p;
	static manifest_workload *shipped_w;
	char err[LM_ERRLEN], path[4200];
	manifest_profile *p = NULL;
	manifest_workload *w = NULL;
	lm_buf out = {0};

	if (shipped_p == NULL && (manifest_profile_load(&shipped_p, LM_DATADIR, "m1-ultra-tahoe-26.5", err) != LM_OK ||
	    manifest_workload_load(&shipped_w, LM_DATADIR, "llama-server", err) != LM_OK)) {
		fprintf(stderr, "fuzz_manifest: the shipped manifests do not load: %s\n", err);
		abort();
	}
	snprintf(path, sizeof path, "%s", file_for(data, size));
	fuzz_write(path, data, size);
	if (fuzz_note("manifest_profile_load", manifest_profile_load(&p, LM_DATADIR, path, err), err) == LM_OK) {
		agent_render_shim_env(&out, p, &mac, err);
		agent_render_plist(&out, shipped_w, p, &mac, err);
	}
	if (fuzz_note("manifest_workload_load", manifest_workload_load(&w, LM_DATADIR, path, err), err) == LM_OK)
		agent_render_plist(&out, w, shipped_p, &mac, err);
	manifest_profile_free(p);
	manifest_workload_free(w);
	lm_buf_free(&out);
	unlink(path);
	return 0;
}

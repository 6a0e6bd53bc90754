/* manifest: see manifest.h. */
#include "core/manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/schema.h"
#include "core/util.h"

#define MANIFEST_MAX (1 << 20)

const char *
manifest_family_kind(long f)
{
	if (f >= 1001 && f <= 1999)
		return "Apple";
	if (f >= 2001 && f <= 2999)
		return "Mac";
	if (f >= 3001 && f <= 3999)
		return "Common";
	if (f >= 4001 && f <= 4999)
		return "MacCatalyst";
	if (f >= 5001 && f <= 5999)
		return "Metal";
	return NULL;
}

static cJSON *
parse_file(const char *path, char *err, int *rc)
{
	char *text;
	cJSON *doc;

	if ((*rc = lm_read_file(&text, NULL, path, MANIFEST_MAX, err)) != LM_OK)
		return NULL;
	if ((doc = cJSON_Parse(text)) == NULL) {
		const char *at = cJSON_GetErrorPtr();
		long line = 1;

		for (const char *p = text; at != NULL && p < at; p++)
			line += *p == '\n';
		*rc = lm_err(err, LM_EINPUT, "%s: not valid JSON (near line %ld)", path, line);
	}
	free(text);
	return doc;
}

/* Reads one manifest and its schema, and checks the document's id against its file name. */
static cJSON *
load(const char *datadir, const char *kind, const char *id, char **path_out, char *err, int *rc)
{
	char path[4096], spath[4096], msg[LM_ERRLEN];
	const char *base, *dot;
	cJSON *doc = NULL, *schema = NULL;
	const cJSON *jid;

	*path_out = NULL;
	if (strchr(id, '/') != NULL) {
		if (lm_fmt(path, sizeof path, "%s", id) < 0)
			goto toolong;
	} else if (lm_fmt(path, sizeof path, "%s/manifests/%ss/%s.json", datadir, kind, id) < 0)
		goto toolong;
	if (lm_fmt(spath, sizeof spath, "%s/manifests/schema/%s.schema.json", datadir, kind) < 0)
		goto toolong;
	if ((schema = parse_file(spath, err, rc)) == NULL)
		return NULL;
	if (strchr(id, '/') == NULL && access(path, F_OK) != 0) {
		*rc = lm_err(err, LM_EINPUT, "%s: no %s named \"%s\" (looked for %s)", id, kind, id, path);
		goto fail;
	}
	if ((doc = parse_file(path, err, rc)) == NULL)
		goto fail;
	/* The family gate comes first so that 2001/3001/5001 get the contract's reason. */
	if (strcmp(kind, "profile") == 0) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, "appleFamilyMax");
		/* Only a number in long's range is cast (a larger double is undefined behaviour: found by
		 * make fuzz); one outside it is left to the schema's bounds. */
		const char *k = cJSON_IsNumber(f) && f->valuedouble > -1e15 && f->valuedouble < 1e15 ?
		    manifest_family_kind((long)f->valuedouble) : NULL;

		if (k != NULL && strcmp(k, "Apple") != 0) {
			*rc = lm_err(err, LM_EINPUT, "%s: appleFamilyMax: %ld is a %s family; the shim only "
			    "raises Apple families (1001..1999) and never changes %s families", path,
			    (long)f->valuedouble, k, k);
			goto fail;
		}
	}
	if ((*rc = schema_check(schema, doc, msg)) != LM_OK) {
		lm_err(err, *rc, "%s: %s", path, msg);
		goto fail;
	}
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	dot = strrchr(base, '.');
	jid = cJSON_GetObjectItemCaseSensitive(doc, "id");
	if (dot == NULL || strcmp(dot, ".json") != 0 || strlen(jid->valuestring) != (size_t)(dot - base) ||
	    strncmp(jid->valuestring, base, (size_t)(dot - base)) != 0) {
		*rc = lm_err(err, LM_EINPUT, "%s: id: \"%s\" does not match the file name", path, jid->valuestring);
		goto fail;
	}
	cJSON_Delete(schema);
	if ((*path_out = strdup(path)) == NULL) {
		cJSON_Delete(doc);
		*rc = lm_err(err, LM_EFAIL, "out of memory");
		return NULL;
	}
	*rc = LM_OK;
	return doc;
toolong:
	*rc = lm_err(err, LM_EINPUT, "%s: path too long", id);
	return NULL;
fail:
	cJSON_Delete(schema);
	cJSON_Delete(doc);
	return NULL;
}

int
manifest_profile_load(manifest_profile **out, const char *datadir, const char *id, char *err)
{
	manifest_profile *p;
	const cJSON *ws;
	int rc;

	*out = NULL;
	if ((p = calloc(1, sizeof *p)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if ((p->json = load(datadir, "profile", id, &p->path, err, &rc)) == NULL) {
		free(p);
		return rc;
	}
	p->id = lm_jstr(p->json, "id");
	p->apple_family_max = (int)cJSON_GetObjectItemCaseSensitive(p->json, "appleFamilyMax")->valuedouble;
	p->max_threadgroup_memory =
	    (long)cJSON_GetObjectItemCaseSensitive(p->json, "maxThreadgroupMemory")->valuedouble;
	ws = cJSON_GetObjectItemCaseSensitive(p->json, "recommendedWorkingSetSize");
	p->working_set = ws ? (uint64_t)ws->valuedouble : 0;
	*out = p;
	return LM_OK;
}

void
manifest_profile_free(manifest_profile *p)
{
	if (p == NULL)
		return;
	cJSON_Delete(p->json);
	free(p->path);
	free(p);
}

int
manifest_workload_load(manifest_workload **out, const char *datadir, const char *id, char *err)
{
	manifest_workload *w;
	const cJSON *env, *it;
	int rc;

	*out = NULL;
	if ((w = calloc(1, sizeof *w)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if ((w->json = load(datadir, "workload", id, &w->path, err, &rc)) == NULL) {
		free(w);
		return rc;
	}
	env = cJSON_GetObjectItemCaseSensitive(w->json, "environment");
	cJSON_ArrayForEach(it, env) {
		/* The shim's own variables come from the profile alone. */
		if (strncmp(it->string, "LUME_METAL_", 11) == 0 || strncmp(it->string, "DYLD_", 5) == 0 ||
		    strcmp(it->string, "LD_PRELOAD") == 0) {
			rc = lm_err(err, LM_EINPUT, "%s: environment.%s: reserved for the shim; set it in "
			    "the profile", w->path, it->string);
			manifest_workload_free(w);
			return rc;
		}
	}
	w->id = lm_jstr(w->json, "id");
	w->label = lm_jstr(w->json, "label");
	w->profile = lm_jstr(w->json, "profile");
	*out = w;
	return LM_OK;
}

void
manifest_workload_free(manifest_workload *w)
{
	if (w == NULL)
		return;
	cJSON_Delete(w->json);
	free(w->path);
	free(w);
}

/* manifest: capability profiles and workload definitions from manifests/, checked against
 * manifests/schema/ and the shim contract before anything uses them. */
#ifndef LM_MANIFEST_H
#define LM_MANIFEST_H

#include <stdint.h>
#include <cjson/cJSON.h>

typedef struct {
	char *path;                 /* the file it came from */
	const char *id;             /* in json */
	int apple_family_max;       /* 1001..1999 */
	long max_threadgroup_memory;
	uint64_t working_set;       /* 0 when not set */
	cJSON *json;                /* the whole document */
} manifest_profile;

typedef struct {
	char *path;
	const char *id, *label, *profile; /* in json */
	cJSON *json;                /* programArguments, processes, paths etc. live here */
} manifest_workload;

/* Loads manifests/profiles/<id>.json (or a path, when id contains '/') under datadir.
 * On success *out belongs to the caller (manifest_profile_free). Errors name the file, the
 * field and the reason, and return LM_EINPUT. */
int manifest_profile_load(manifest_profile **out, const char *datadir, const char *id, char *err);
void manifest_profile_free(manifest_profile *p);

/* The same for manifests/workloads/<id>.json. */
int manifest_workload_load(manifest_workload **out, const char *datadir, const char *id, char *err);
void manifest_workload_free(manifest_workload *w);

/* Names the MTLGPUFamily range a value falls in ("Apple", "Mac", "Common", "MacCatalyst",
 * "Metal") or NULL. */
const char *manifest_family_kind(long family);

#endif

/* referrers: see referrers.h. */
#include "net/referrers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/verdict.h"

#define OCI_INDEX "application/vnd.oci.image.index.v1+json"

/* text (len bytes) parsed as an image index: an object whose "manifests" is an array and whose
 * "mediaType" is the index type (with strict; else when it has one: the API's answer is one by its
 * Content-Type). NULL otherwise (nested too deep included). */
static cJSON *
index_of(const char *text, size_t len, int strict)
{
	cJSON *idx = NULL;
	const cJSON *mt;

	if (text == NULL || verdict_too_deep(text, len, VERDICT_DEPTH_MAX) || (idx = cJSON_ParseWithLength(text, len)) ==
	    NULL)
		return NULL;
	mt = cJSON_GetObjectItemCaseSensitive(idx, "mediaType");
	if (((mt != NULL || strict) && (!cJSON_IsString(mt) || strcmp(mt->valuestring, OCI_INDEX) != 0)) ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(idx, "manifests"))) {
		cJSON_Delete(idx);
		return NULL;
	}
	return idx;
}

/* Moves the descriptors of page's "manifests" to the end of all's, at most REFERRERS_LISTED_MAX
 * in all; 1 when some did not fit. */
static int
append(cJSON *all, cJSON *page)
{
	cJSON *to = cJSON_GetObjectItemCaseSensitive(all, "manifests"), *from = cJSON_GetObjectItemCaseSensitive(page,
	    "manifests"), *d;

	while ((d = cJSON_DetachItemFromArray(from, 0)) != NULL) {
		if (cJSON_GetArraySize(to) >= REFERRERS_LISTED_MAX) {
			cJSON_Delete(d);
			return 1;
		}
		cJSON_AddItemToArray(to, d);
	}
	return 0;
}

/* The fallback tag's index (tag schema), into *out; NULL when the tag does not exist. */
static int
fallback(registry_client *c, const char *digest, cJSON **out, int *truncated, char *err)
{
	char tag[80], d[REGISTRY_DIGEST_LEN + 1], *text = NULL;
	size_t len = 0;
	int rc;

	snprintf(tag, sizeof tag, "sha256-%s", digest + 7);
	if ((rc = registry_manifest_get(c, tag, REGISTRY_MANIFEST_MAX, &text, &len, d, err)) != LM_OK || text == NULL)
		return rc;
	/* The referrers tag schema: the tag holds an image index, or it is not the referrers list. */
	if ((*out = index_of(text, len, 1)) == NULL)
		rc = lm_err(err, LM_EFAIL, "registry %s: the fallback tag %s is not an image index (mediaType %s and "
		    "\"manifests\"): refused", registry_client_name(c), tag, OCI_INDEX);
	else if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(*out, "manifests")) > REFERRERS_LISTED_MAX) {
		cJSON *m = cJSON_GetObjectItemCaseSensitive(*out, "manifests");

		while (cJSON_GetArraySize(m) > REFERRERS_LISTED_MAX)
			cJSON_DeleteItemFromArray(m, REFERRERS_LISTED_MAX);
		*truncated = 1;
	}
	free(text);
	return rc;
}

int
referrers_list(registry_client *c, const char *digest, cJSON **out, int *api, int *truncated, char *err)
{
	char path[1024], next[1024], ctype[128], seen[REFERRERS_PAGES_MAX][1024], *text = NULL;
	size_t len = 0;
	long status = 0;
	cJSON *page;
	int rc, pages = 0;

	*out = NULL;
	*api = *truncated = 0;
	if (!lm_is_digest(digest))
		return lm_err(err, LM_EINPUT, "registry %s: not a digest: %.80s", registry_client_name(c), digest ? digest : "");
	snprintf(path, sizeof path, "/v2/%s/referrers/%s", registry_client_repo(c), digest);
	for (;;) {
		free(text);
		text = NULL;
		if ((rc = registry_get(c, path, REGISTRY_MANIFEST_MAX, &status, &text, &len, ctype, next, err)) != LM_OK)
			goto done;
		/* The API answers an image index; anything else (404, or a registry's HTML) means it has none. */
		if (pages == 0 && !(status == 200 && strncmp(ctype, OCI_INDEX, strlen(OCI_INDEX)) == 0)) {
			free(text);
			text = NULL;
			if (status != 404 && status != 200 && status != 400 && status != 405 && status != 406)
				return lm_err(err, LM_EFAIL, "registry %s answered HTTP %ld for %s", registry_client_name(c), status,
				    path);
			return fallback(c, digest, out, truncated, err);
		}
		if (status != 200 || strncmp(ctype, OCI_INDEX, strlen(OCI_INDEX)) != 0 || (page = index_of(text, len, 0)) == NULL) {
			rc = lm_err(err, LM_EFAIL, "registry %s: the referrers of %s are not an image index%s: refused",
			    registry_client_name(c), digest, pages ? " (a later page)" : "");
			goto done;
		}
		*api = 1;
		memcpy(seen[pages++], path, sizeof path);
		if (*out == NULL)
			*out = page;
		else {
			*truncated |= append(*out, page);
			cJSON_Delete(page);
		}
		if (next[0] == '\0' || *truncated)
			break;
		if (pages == REFERRERS_PAGES_MAX) {
			*truncated = 1;
			break;
		}
		/* each page once: a registry whose Link names a page it served is not followed round */
		for (int i = 0; i < pages; i++)
			if (strcmp(seen[i], next) == 0) {
				rc = lm_err(err, LM_EFAIL, "registry %s: the referrers' next page is one it answered already (%.200s): "
				    "refused", registry_client_name(c), next);
				goto done;
			}
		memcpy(path, next, sizeof path);
	}
	rc = LM_OK;
done:
	free(text);
	if (rc != LM_OK) {
		cJSON_Delete(*out);
		*out = NULL;
	}
	return rc;
}

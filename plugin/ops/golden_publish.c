/* golden_publish: see golden_publish.h. */
#include "ops/golden_publish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/random.h>

#include <cjson/cJSON.h>

int
golden_nonce_tag(golden_pushed *p, char *err)
{
	unsigned char r[16];

	memset(p, 0, sizeof *p);
	if (getentropy(r, sizeof r) != 0)
		return lm_err(err, LM_EFAIL, "no random bytes for the push's own tag");
	memcpy(p->tag, "golden-", 7);
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(p->tag + 7 + 2 * i, 3, "%02x", r[i]);
	return LM_OK;
}

/* The manifest's "mediaType", when it is a plain media type; else the OCI image manifest's. */
static void
media_type_of(char out[128], const char *manifest, size_t len)
{
	cJSON *m = cJSON_ParseWithLength(manifest, len);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "mediaType");

	if (cJSON_IsString(t) && strlen(t->valuestring) < 128 && t->valuestring[0] != '\0' &&
	    strspn(t->valuestring, "abcdefghijklmnopqrstuvwxyz0123456789./+-") == strlen(t->valuestring))
		snprintf(out, 128, "%s", t->valuestring);
	else
		snprintf(out, 128, "application/vnd.oci.image.manifest.v1+json");
	cJSON_Delete(m);
}

int
golden_publish_resolve(golden_pushed *p, const char *registry, const char *repo, char *err)
{
	int rc;

	if (registry_creds_from_env(&p->creds) < 0)
		return lm_err(err, LM_EFAIL, "out of memory");
	if ((rc = registry_client_new(&p->client, registry, repo, &p->creds, 1, GOLDEN_REGISTRY_MS, err)) != LM_OK)
		return rc;
	if ((rc = registry_manifest_get(p->client, p->tag, GOLDEN_MANIFEST_MAX, &p->manifest, &p->len, p->digest, err)) !=
	    LM_OK)
		return rc;
	if (p->manifest == NULL)
		return lm_err(err, LM_EFAIL, "registry %s: no such tag %s:%s, which lume push was to write", registry, repo,
		    p->tag);
	media_type_of(p->media_type, p->manifest, p->len);
	return LM_OK;
}

int
golden_publish_point(golden_pushed *p, const char *tag, const char *const *tags, size_t ntags, char *err)
{
	char d[REGISTRY_DIGEST_LEN + 1];
	int rc;

	for (size_t i = 0; i <= ntags; i++) {
		const char *t = i == 0 ? tag : tags[i - 1];

		if ((rc = registry_manifest_put(p->client, t, p->media_type, p->manifest, p->len, d, NULL, err)) != LM_OK)
			return rc;
	}
	/* Before the reading back: a registry that took the tag's deletion for its manifest's is caught. */
	p->removed = registry_tag_delete(p->client, p->tag, p->kept) == LM_OK;
	for (size_t i = 0; i <= ntags; i++) {
		const char *t = i == 0 ? tag : tags[i - 1];
		char *m = NULL;
		size_t len;

		if ((rc = registry_manifest_get(p->client, t, GOLDEN_MANIFEST_MAX, &m, &len, d, err)) != LM_OK)
			return rc;
		free(m);
		if (m == NULL)
			return lm_err(err, LM_EFAIL, "tag %s is gone right after it was pointed at the pushed %s", t, p->digest);
		if (strcmp(d, p->digest) != 0)
			return lm_err(err, LM_EFAIL, "tag %s names %s, not the pushed %s: another push re-tagged it in between",
			    t, d, p->digest);
	}
	return LM_OK;
}

void
golden_pushed_free(golden_pushed *p)
{
	if (p == NULL)
		return;
	registry_client_free(p->client);
	registry_creds_clear(&p->creds);
	free(p->manifest);
	p->client = NULL;
	p->manifest = NULL;
}

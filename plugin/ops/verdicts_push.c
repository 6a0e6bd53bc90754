/* verdicts_push: the attach side of verdicts.h: the ledger's records of an image version,
 * signed, as Sigstore bundles attached to the image (see verdicts.h). */
#include "ops/verdicts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ledger.h"
#include "core/util.h"
#include "net/registry.h"

#define OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_EMPTY "application/vnd.oci.empty.v1+json"

/* What verdicts_push gathers from the ledger: per document of the digest, its key and records. */
typedef struct {
	const char *digest;
	cJSON *docs; /* [{"key", "records"}] */
} gather;

static int
gather_doc(const cJSON *doc, const char *path, void *arg)
{
	gather *g = arg;
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(doc, "key"), *r;
	const cJSON *last_dg = NULL, *last_v = NULL;
	cJSON *e, *recs;

	(void)path;
	if (lm_jstr(key, "imageDigest") == NULL || strcmp(lm_jstr(key, "imageDigest"), g->digest) != 0)
		return 0;
	/* The newest (by time) of each, made here: an imported record is its signer's, not ours to sign. */
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const char *k = lm_jstr(r, "kind");
		const cJSON **slot;

		if (k == NULL || ledger_is_imported(r) || (strcmp(k, "deploy") != 0 && strcmp(k, "golden") != 0 &&
		    strcmp(k, "validate") != 0))
			continue;
		slot = strcmp(k, "validate") == 0 ? &last_v : &last_dg;
		if (*slot == NULL || ledger_time_cmp(lm_jstr(r, "time"), lm_jstr(*slot, "time")) >= 0)
			*slot = r;
	}
	if (last_dg == NULL && last_v == NULL)
		return 0;
	e = cJSON_CreateObject();
	cJSON_AddItemToObject(e, "key", cJSON_Duplicate(key, 1));
	recs = cJSON_AddArrayToObject(e, "records");
	if (last_v)
		cJSON_AddItemToArray(recs, cJSON_Duplicate(last_v, 1));
	if (last_dg)
		cJSON_AddItemToArray(recs, cJSON_Duplicate(last_dg, 1));
	cJSON_AddItemToArray(g->docs, e);
	return 0;
}

/* A descriptor {"mediaType", "digest", "size"} (and artifactType when given). */
static cJSON *
descriptor(const char *mt, const char *digest, long long size, const char *artifact_type)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "mediaType", mt);
	cJSON_AddStringToObject(d, "digest", digest);
	cJSON_AddNumberToObject(d, "size", (double)size);
	if (artifact_type)
		cJSON_AddStringToObject(d, "artifactType", artifact_type);
	return d;
}

/* Adds the artifact's descriptor to the fallback tag's index (made when there is none). */
static int
fallback_add(registry_client *c, const char *image_digest, cJSON *desc, char *err)
{
	char tag[80], d[REGISTRY_DIGEST_LEN + 1], *body = NULL, *text = NULL;
	size_t len = 0;
	cJSON *idx = NULL, *list, *e;
	const char *ad = lm_jstr(desc, "digest");
	int rc, i = 0;

	snprintf(tag, sizeof tag, "sha256-%s", image_digest + 7);
	if ((rc = registry_manifest_get(c, tag, REGISTRY_MANIFEST_MAX, &body, &len, d, err)) != LM_OK)
		goto done;
	if (body != NULL && (verdict_too_deep(body, len, VERDICT_DEPTH_MAX) ||
	    (idx = cJSON_ParseWithLength(body, len)) == NULL || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(idx,
	    "manifests")) || lm_jstr(idx, "mediaType") == NULL || strcmp(lm_jstr(idx, "mediaType"), OCI_INDEX) != 0)) {
		rc = lm_err(err, LM_EFAIL, "the fallback tag %s is not an image index (mediaType " OCI_INDEX "): not changed",
		    tag);
		goto done;
	}
	if (idx == NULL) {
		idx = cJSON_CreateObject();
		cJSON_AddNumberToObject(idx, "schemaVersion", 2);
		cJSON_AddStringToObject(idx, "mediaType", OCI_INDEX);
		cJSON_AddArrayToObject(idx, "manifests");
	}
	list = cJSON_GetObjectItemCaseSensitive(idx, "manifests");
	cJSON_ArrayForEach(e, list) {
		if (lm_jstr(e, "digest") && strcmp(lm_jstr(e, "digest"), ad) == 0)
			break;
		i++;
	}
	if (e != NULL)
		cJSON_DeleteItemFromArray(list, i); /* the same artifact again: moved to the end */
	cJSON_AddItemToArray(list, cJSON_Duplicate(desc, 1));
	if ((text = cJSON_PrintUnformatted(idx)) == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	else
		rc = registry_manifest_put(c, tag, OCI_INDEX, text, strlen(text), d, NULL, err);
done:
	free(body);
	free(text);
	cJSON_Delete(idx);
	return rc;
}

/* What one artifact is pushed from: the image, the empty config, and one document's records. */
typedef struct {
	registry_client *c;
	const verdict_key *k;
	const char *name, *reference, *digest, *mtype; /* REGISTRY/REPO, the reference, the image's digest and type */
	long long size;                                 /* ... and its manifest's size */
	const char *empty;                              /* the empty config's digest */
} pushing;

/* Signs the records of doc ({"key", "records"}) as a Sigstore bundle and pushes it as an artifact
 * (artifactType and layer VERDICT_BUNDLE_TYPE, the annotations cosign's bundle spec names and
 * lume-metal's own), listed in the fallback tag's index unless the registry indexes it itself.
 * md gets its manifest's digest, *subject whether the registry answered OCI-Subject. */
static int
push_one(const pushing *p, const cJSON *doc, char md[REGISTRY_DIGEST_LEN + 1], int *subject, char *err)
{
	const cJSON *recs = cJSON_GetObjectItemCaseSensitive(doc, "records"), *r;
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(doc, "key");
	cJSON *st = verdict_statement(p->name, p->digest, p->reference, key, recs), *m = NULL, *layer, *ann;
	char bd[REGISTRY_DIGEST_LEN + 1], label[LEDGER_STR_MAX + 64], title[96], *bundle = NULL, *mtext = NULL;
	const char *created = "1970-01-01T00:00:00Z";
	size_t blen = 0;
	int rc;

	/* Deterministic: the same records make the same artifact (with Ed25519, which signs
	 * deterministically), its creation time the newest record's. */
	cJSON_ArrayForEach(r, recs)
		if (lm_jstr(r, "time") && strcmp(lm_jstr(r, "time"), created) > 0)
			created = lm_jstr(r, "time");
	if (st == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	else if ((rc = verdict_sign_bundle(&bundle, &blen, st, p->k, err)) == LM_OK)
		rc = registry_blob_put(p->c, bundle, blen, bd, err);
	cJSON_Delete(st);
	free(bundle);
	if (rc != LM_OK)
		return rc;
	m = cJSON_CreateObject();
	cJSON_AddNumberToObject(m, "schemaVersion", 2);
	cJSON_AddStringToObject(m, "mediaType", OCI_MANIFEST);
	cJSON_AddStringToObject(m, "artifactType", VERDICT_BUNDLE_TYPE);
	cJSON_AddItemToObject(m, "config", descriptor(OCI_EMPTY, p->empty, 2, NULL));
	cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "layers"), layer = descriptor(VERDICT_BUNDLE_TYPE, bd,
	    (long long)blen, NULL));
	snprintf(title, sizeof title, "sha256-%s.sigstore.json", p->digest + 7);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(layer, "annotations"), "org.opencontainers.image.title", title);
	cJSON_AddItemToObject(m, "subject", descriptor(p->mtype, p->digest, p->size, NULL));
	ann = cJSON_AddObjectToObject(m, "annotations");
	cJSON_AddStringToObject(ann, "dev.sigstore.bundle.content", "dsse-envelope");
	cJSON_AddStringToObject(ann, "dev.sigstore.bundle.predicateType", VERDICT_PREDICATE_TYPE);
	cJSON_AddStringToObject(ann, "org.opencontainers.image.created", created);
	cJSON_AddStringToObject(ann, "dev.lume-metal.signer", verdict_key_id(p->k));
	ledger_key_label(label, sizeof label, key, p->reference);
	cJSON_AddStringToObject(ann, "dev.lume-metal.key", label);
	if ((mtext = cJSON_PrintUnformatted(m)) == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	else { /* under its own digest: an artifact has no tag */
		lm_digest(md, mtext, strlen(mtext));
		rc = registry_manifest_put(p->c, md, OCI_MANIFEST, mtext, strlen(mtext), md, subject, err);
	}
	if (rc == LM_OK && !*subject) {
		cJSON *desc = descriptor(OCI_MANIFEST, md, (long long)strlen(mtext), VERDICT_BUNDLE_TYPE);

		cJSON_AddItemToObject(desc, "annotations", cJSON_Duplicate(ann, 1));
		rc = fallback_add(p->c, p->digest, desc, err);
		cJSON_Delete(desc);
	}
	cJSON_Delete(m);
	free(mtext);
	return rc;
}

int
verdicts_push(cJSON **out, const char *state, const char *reference, const char *digest, const verdicts_cfg *cfg,
    char *err)
{
	verdicts_ref vr;
	verdict_key *k = NULL;
	registry_creds creds = {0};
	char d[REGISTRY_DIGEST_LEN + 1], mt[128], name[600], ed[REGISTRY_DIGEST_LEN + 1], gerr[LM_ERRLEN];
	pushing p = {NULL, NULL, name, reference, d, mt, 0, ed};
	gather g = {NULL, NULL};
	cJSON *arts, *e;
	int rc, subject = 0, api = 0;

	*out = NULL;
	if ((rc = verdicts_ref_parse(&vr, reference, cfg, err)) != LM_OK)
		return rc;
	if (cfg == NULL || cfg->signing_key == NULL)
		return lm_err(err, LM_EINPUT, "no signing key: `lume-metal key generate`, then signing-key=PATH in the config "
		    "file");
	if ((rc = verdict_key_load(&k, cfg->signing_key, 1, err)) != LM_OK)
		return rc;
	p.k = k;
	if ((rc = verdicts_client(&p.c, &creds, &vr, 1, cfg, err)) != LM_OK)
		goto done;
	if ((rc = verdicts_image(p.c, &vr, digest, d, mt, &p.size, err)) != LM_OK)
		goto done;
	snprintf(name, sizeof name, "%s/%s", vr.registry, vr.repo);
	*out = cJSON_CreateObject();
	cJSON_AddStringToObject(*out, "image", reference);
	cJSON_AddStringToObject(*out, "repository", name);
	cJSON_AddStringToObject(*out, "digest", d);
	cJSON_AddStringToObject(*out, "signer", verdict_key_id(k));
	cJSON_AddStringToObject(*out, "keyid", verdict_key_fingerprint(k));
	arts = cJSON_AddArrayToObject(*out, "artifacts");
	g.digest = d;
	g.docs = cJSON_CreateArray();
	if ((rc = ledger_each(state, gather_doc, &g, gerr)) != LM_OK && cJSON_GetArraySize(g.docs) == 0) {
		rc = lm_err(err, rc, "%s", gerr);
		goto done;
	}
	if (cJSON_GetArraySize(g.docs) == 0) {
		rc = lm_err(err, LM_EINPUT, "no ledger records of %s@%s under %s/ledger: nothing to push (golden or validate "
		    "records it first)", name, d, state);
		goto done;
	}
	if ((rc = registry_blob_put(p.c, "{}", 2, ed, err)) != LM_OK)
		goto done;
	cJSON_ArrayForEach(e, g.docs) {
		char md[REGISTRY_DIGEST_LEN + 1], label[LEDGER_STR_MAX + 64];
		cJSON *a;

		if ((rc = push_one(&p, e, md, &subject, err)) != LM_OK)
			goto done;
		api |= subject;
		cJSON_AddItemToArray(arts, a = cJSON_CreateObject());
		cJSON_AddStringToObject(a, "digest", md);
		cJSON_AddStringToObject(a, "key", ledger_key_label(label, sizeof label, cJSON_GetObjectItemCaseSensitive(e,
		    "key"), reference));
		cJSON_AddNumberToObject(a, "records", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "records")));
	}
	rc = LM_OK;
done:
	if (*out != NULL) {
		cJSON_AddBoolToObject(*out, "referrersApi", api);
		cJSON_AddNumberToObject(*out, "requests", registry_client_requests(p.c));
	}
	cJSON_Delete(g.docs);
	registry_client_free(p.c);
	registry_creds_clear(&creds);
	verdict_key_free(k);
	return rc;
}

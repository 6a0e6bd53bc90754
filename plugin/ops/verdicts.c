/* verdicts: see verdicts.h. */
#include "ops/verdicts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/ledger.h"
#include "core/util.h"
#include "net/registry.h"

#define OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_EMPTY "application/vnd.oci.empty.v1+json"
/* The empty config ("{}") every artifact shares. */
#define EMPTY_DIGEST "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

static const char *
gstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static long
timeout_of(const verdicts_cfg *cfg)
{
	return cfg && cfg->timeout_ms > 0 ? cfg->timeout_ms : VERDICTS_TIMEOUT_MS;
}

int
verdicts_ref_parse(verdicts_ref *out, const char *ref, const verdicts_cfg *cfg, char *err)
{
	const char *slash, *name, *at, *colon, *first_end;
	char first[256];
	size_t fl;

	memset(out, 0, sizeof *out);
	if (ref == NULL || *ref == '\0' || strlen(ref) > 600)
		return lm_err(err, LM_EINPUT, "no image reference (REGISTRY/REPO:TAG)");
	/* The first component is a registry when it has a '.' or a ':', or is localhost (as docker says). */
	slash = strchr(ref, '/');
	first_end = slash ? slash : ref + strlen(ref);
	fl = (size_t)(first_end - ref);
	snprintf(first, sizeof first, "%.*s", (int)(fl < sizeof first ? fl : sizeof first - 1), ref);
	if (slash != NULL && (strpbrk(first, ".:[") != NULL || strcmp(first, "localhost") == 0)) {
		snprintf(out->registry, sizeof out->registry, "%s", first);
		name = slash + 1;
		snprintf(out->repo, sizeof out->repo, "%s", name);
	} else {
		const char *org = cfg && cfg->organization ? cfg->organization : "trycua";

		snprintf(out->registry, sizeof out->registry, "%s", cfg && cfg->registry_default ? cfg->registry_default :
		    "ghcr.io");
		if (slash == NULL)
			snprintf(out->repo, sizeof out->repo, "%s/%s", org, ref);
		else
			snprintf(out->repo, sizeof out->repo, "%s", ref);
	}
	if ((at = strchr(out->repo, '@')) != NULL) {
		snprintf(out->digest, sizeof out->digest, "%s", at + 1);
		out->repo[at - out->repo] = '\0';
		if (strncmp(out->digest, "sha256:", 7) != 0 || !lm_is_sha256(out->digest + 7))
			return lm_err(err, LM_EINPUT, "%s: the digest after @ is not sha256: and 64 lowercase hex", ref);
	} else if ((colon = strrchr(out->repo, ':')) != NULL) {
		snprintf(out->tag, sizeof out->tag, "%s", colon + 1);
		out->repo[colon - out->repo] = '\0';
	} else
		snprintf(out->tag, sizeof out->tag, "latest");
	if (out->repo[0] == '\0')
		return lm_err(err, LM_EINPUT, "%s: no repository", ref);
	return LM_OK;
}

/* The client for ref's repository, with that registry's own credentials and no other's
 * (registry_creds_for; *creds, cleared by the caller). */
static int
client_for(registry_client **c, registry_creds *creds, const verdicts_ref *vr, int push, const verdicts_cfg *cfg,
    char *err)
{
	int rc = registry_creds_for(creds, vr->registry, cfg ? cfg->registry_default : NULL, cfg ? cfg->auth_file : NULL,
	    err);

	if (rc < 0)
		return rc;
	return registry_client_new(c, vr->registry, vr->repo, creds, push, timeout_of(cfg), err);
}

int
verdicts_allowed(const verdicts_cfg *cfg, const char *registry)
{
	const char *def = cfg && cfg->registry_default ? cfg->registry_default : "ghcr.io";
	const char *p = cfg ? cfg->registries : NULL;
	size_t n = strlen(registry);

	if (strcasecmp(def, registry) == 0)
		return 1;
	while (p != NULL && *p) {
		size_t l;

		p += strspn(p, " \t,");
		l = strcspn(p, ",");
		while (l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t'))
			l--;
		if (l == n && l > 0 && strncasecmp(p, registry, n) == 0)
			return 1;
		p += strcspn(p, ",");
	}
	return 0;
}

/* The image manifest of vr (by digest when given, else its tag): *digest, its media type and size. */
static int
image_manifest(registry_client *c, const verdicts_ref *vr, const char *digest, char d[REGISTRY_DIGEST_LEN + 1],
    char mt[128], long long *size, char *err)
{
	char *body = NULL;
	size_t len = 0;
	cJSON *m;
	const char *ref = digest ? digest : vr->digest[0] ? vr->digest : vr->tag;
	int rc;

	if ((rc = registry_manifest_get(c, ref, REGISTRY_MANIFEST_MAX, &body, &len, d, err)) != LM_OK)
		return rc;
	if (body == NULL)
		return lm_err(err, LM_EFAIL, "registry %s: no such image %s%s%s", vr->registry, vr->repo,
		    strncmp(ref, "sha256:", 7) == 0 ? "@" : ":", ref);
	m = cJSON_ParseWithLength(body, len);
	snprintf(mt, 128, "%s", gstr(m, "mediaType") ? gstr(m, "mediaType") : OCI_MANIFEST);
	*size = (long long)len;
	cJSON_Delete(m);
	free(body);
	return LM_OK;
}

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
	if (gstr(key, "imageDigest") == NULL || strcmp(gstr(key, "imageDigest"), g->digest) != 0)
		return 0;
	/* The newest (by time) of each, made here: an imported record is its signer's, not ours to sign. */
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const char *k = gstr(r, "kind");
		const cJSON **slot;

		if (k == NULL || ledger_is_imported(r) || (strcmp(k, "deploy") != 0 && strcmp(k, "golden") != 0 &&
		    strcmp(k, "validate") != 0))
			continue;
		slot = strcmp(k, "validate") == 0 ? &last_v : &last_dg;
		if (*slot == NULL || ledger_time_cmp(gstr(r, "time"), gstr(*slot, "time")) >= 0)
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
	const char *ad = gstr(desc, "digest");
	int rc, i = 0;

	snprintf(tag, sizeof tag, "sha256-%s", image_digest + 7);
	if ((rc = registry_manifest_get(c, tag, REGISTRY_MANIFEST_MAX, &body, &len, d, err)) != LM_OK)
		goto done;
	if (body != NULL && (verdict_too_deep(body, len, VERDICT_DEPTH_MAX) ||
	    (idx = cJSON_ParseWithLength(body, len)) == NULL || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(idx,
	    "manifests")))) {
		rc = lm_err(err, LM_EFAIL, "the fallback tag %s is not an image index: not changed", tag);
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
		if (gstr(e, "digest") && strcmp(gstr(e, "digest"), ad) == 0)
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

int
verdicts_push(cJSON **out, const char *state, const char *reference, const char *digest, const verdicts_cfg *cfg,
    char *err)
{
	verdicts_ref vr;
	verdict_key *k = NULL;
	registry_client *c = NULL;
	registry_creds creds = {0};
	char d[REGISTRY_DIGEST_LEN + 1], mt[128], name[600], ed[REGISTRY_DIGEST_LEN + 1];
	char gerr[LM_ERRLEN], *env = NULL, *mtext = NULL;
	long long size = 0;
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
	if ((rc = client_for(&c, &creds, &vr, 1, cfg, err)) != LM_OK)
		goto done;
	if ((rc = image_manifest(c, &vr, digest, d, mt, &size, err)) != LM_OK)
		goto done;
	snprintf(name, sizeof name, "%s/%s", vr.registry, vr.repo);
	*out = cJSON_CreateObject();
	cJSON_AddStringToObject(*out, "image", reference);
	cJSON_AddStringToObject(*out, "repository", name);
	cJSON_AddStringToObject(*out, "digest", d);
	cJSON_AddStringToObject(*out, "signer", verdict_key_id(k));
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
	if ((rc = registry_blob_put(c, "{}", 2, ed, err)) != LM_OK)
		goto done;
	cJSON_ArrayForEach(e, g.docs) {
		const cJSON *recs = cJSON_GetObjectItemCaseSensitive(e, "records"), *r, *key = cJSON_GetObjectItemCaseSensitive(e, "key");
		cJSON *st = verdict_statement(name, d, reference, key, recs), *m, *layers, *layer, *ann, *a;
		char bd[REGISTRY_DIGEST_LEN + 1], md[REGISTRY_DIGEST_LEN + 1], label[LEDGER_STR_MAX + 64];
		const char *created = "1970-01-01T00:00:00Z";
		size_t elen = 0;

		/* Deterministic: the same records make the same artifact (Ed25519 signs deterministically). */
		cJSON_ArrayForEach(r, recs)
			if (gstr(r, "time") && strcmp(gstr(r, "time"), created) > 0)
				created = gstr(r, "time");
		free(env);
		env = NULL;
		if (st == NULL || (rc = verdict_sign(&env, &elen, st, k, err)) != LM_OK) {
			if (st == NULL)
				rc = lm_err(err, LM_EFAIL, "out of memory");
			cJSON_Delete(st);
			goto done;
		}
		cJSON_Delete(st);
		if ((rc = registry_blob_put(c, env, elen, bd, err)) != LM_OK)
			goto done;
		m = cJSON_CreateObject();
		cJSON_AddNumberToObject(m, "schemaVersion", 2);
		cJSON_AddStringToObject(m, "mediaType", OCI_MANIFEST);
		cJSON_AddStringToObject(m, "artifactType", VERDICT_ARTIFACT_TYPE);
		cJSON_AddItemToObject(m, "config", descriptor(OCI_EMPTY, ed, 2, NULL));
		layers = cJSON_AddArrayToObject(m, "layers");
		cJSON_AddItemToArray(layers, layer = descriptor(VERDICT_ENVELOPE_TYPE, bd, (long long)elen, NULL));
		cJSON_AddStringToObject(cJSON_AddObjectToObject(layer, "annotations"), "org.opencontainers.image.title",
		    "verdict.dsse.json");
		cJSON_AddItemToObject(m, "subject", descriptor(mt, d, size, NULL));
		ann = cJSON_AddObjectToObject(m, "annotations");
		cJSON_AddStringToObject(ann, "org.opencontainers.image.created", created);
		cJSON_AddStringToObject(ann, "dev.lume-metal.signer", verdict_key_id(k));
		ledger_key_label(label, sizeof label, key, reference);
		cJSON_AddStringToObject(ann, "dev.lume-metal.key", label);
		free(mtext);
		mtext = cJSON_PrintUnformatted(m);
		if (mtext == NULL)
			rc = lm_err(err, LM_EFAIL, "out of memory");
		else { /* under its own digest: an artifact has no tag */
			char hex[65];

			lm_sha256_hex(hex, mtext, strlen(mtext));
			snprintf(md, sizeof md, "sha256:%s", hex);
			rc = registry_manifest_put(c, md, OCI_MANIFEST, mtext, strlen(mtext), md, &subject, err);
		}
		if (rc == LM_OK && !subject) {
			cJSON *desc = descriptor(OCI_MANIFEST, md, (long long)strlen(mtext), VERDICT_ARTIFACT_TYPE);

			cJSON_AddItemToObject(desc, "annotations", cJSON_Duplicate(ann, 1));
			rc = fallback_add(c, d, desc, err);
			cJSON_Delete(desc);
		}
		api |= subject;
		cJSON_Delete(m);
		if (rc != LM_OK)
			goto done;
		cJSON_AddItemToArray(arts, a = cJSON_CreateObject());
		cJSON_AddStringToObject(a, "digest", md);
		cJSON_AddStringToObject(a, "key", label);
		cJSON_AddNumberToObject(a, "records", cJSON_GetArraySize(recs));
	}
	rc = LM_OK;
done:
	if (*out != NULL) {
		cJSON_AddBoolToObject(*out, "referrersApi", api);
		cJSON_AddNumberToObject(*out, "requests", registry_client_requests(c));
	}
	cJSON_Delete(g.docs);
	free(env);
	free(mtext);
	registry_client_free(c);
	registry_creds_clear(&creds);
	verdict_key_free(k);
	return rc;
}

/* One artifact of the index: read, checked, opened; its entry in arts. */
static void
fetch_one(registry_client *c, const char *artifact, const char *image_digest, const verdicts_cfg *cfg, cJSON *arts)
{
	cJSON *a = cJSON_CreateObject(), *m = NULL;
	char *body = NULL, *env = NULL, d[REGISTRY_DIGEST_LEN + 1], err[LM_ERRLEN];
	size_t len = 0, elen = 0;
	const cJSON *layer, *sz;
	const char *why = NULL;
	verdict_opened vo;

	memset(&vo, 0, sizeof vo);
	cJSON_AddItemToArray(arts, a);
	cJSON_AddStringToObject(a, "artifact", artifact);
	if (registry_manifest_get(c, artifact, REGISTRY_MANIFEST_MAX, &body, &len, d, err) != LM_OK)
		why = err;
	else if (body == NULL)
		why = "listed, but the registry has no such manifest";
	else if (verdict_too_deep(body, len, VERDICT_DEPTH_MAX) || (m = cJSON_ParseWithLength(body, len)) == NULL)
		why = "its manifest is not JSON, or nests too deep";
	else if (gstr(m, "artifactType") == NULL || strcmp(gstr(m, "artifactType"), VERDICT_ARTIFACT_TYPE) != 0)
		why = "its manifest's artifactType is not " VERDICT_ARTIFACT_TYPE;
	else if (gstr(cJSON_GetObjectItemCaseSensitive(m, "subject"), "digest") == NULL ||
	    strcmp(gstr(cJSON_GetObjectItemCaseSensitive(m, "subject"), "digest"), image_digest) != 0)
		why = "its subject is another image: refused";
	else if (!cJSON_IsObject(layer = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "layers"), 0)) ||
	    gstr(layer, "mediaType") == NULL || strcmp(gstr(layer, "mediaType"), VERDICT_ENVELOPE_TYPE) != 0 ||
	    gstr(layer, "digest") == NULL)
		why = "its first layer is not a DSSE envelope";
	else if (!cJSON_IsNumber(sz = cJSON_GetObjectItemCaseSensitive(layer, "size")) || sz->valuedouble < 0 ||
	    sz->valuedouble > VERDICT_ENVELOPE_MAX)
		why = "its envelope is larger than the bound: refused";
	else if (registry_blob_get(c, gstr(layer, "digest"), VERDICT_ENVELOPE_MAX, &env, &elen, err) != LM_OK)
		why = err;
	if (why != NULL) {
		cJSON_AddStringToObject(a, "status", "refused");
		ledger_add_str(a, "reason", why);
		goto done;
	}
	verdict_open(&vo, env, elen, image_digest, cfg ? cfg->trust : NULL);
	cJSON_AddStringToObject(a, "status", verdict_status_name(vo.status));
	if (vo.signer[0])
		cJSON_AddStringToObject(a, "signer", vo.signer);
	else
		cJSON_AddNullToObject(a, "signer");
	if (vo.status == VERDICT_TRUSTED) {
		cJSON_AddStringToObject(a, "statement", vo.statement);
		cJSON_AddStringToObject(a, "time", vo.time);
		cJSON_AddItemToObject(a, "key", vo.key);
		cJSON_AddItemToObject(a, "records", vo.records);
		vo.key = vo.records = NULL;
	} else
		ledger_add_str(a, "reason", vo.why);
done:
	verdict_opened_clear(&vo);
	cJSON_Delete(m);
	free(body);
	free(env);
}

/* An artifact the index lists, with the time its annotation claims (a hint to read the newest
 * first: nothing signs it). */
typedef struct {
	const char *digest, *created;
	int at;
} listed;

static int
cmp_listed(const void *a, const void *b)
{
	const listed *x = a, *y = b;
	int c = ledger_time_cmp(y->created, x->created); /* the newest first */

	return c ? c : y->at - x->at; /* then the later listed */
}

/* Trusted artifacts' entries of arts, the newest signed time first. */
static int
cmp_signed(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

	return ledger_time_cmp(gstr(y, "time"), gstr(x, "time"));
}

/* An entry {"artifact", "status", "reason"} of arts for an artifact not read. */
static void
not_read(cJSON *arts, const char *artifact, const char *status, const char *reason)
{
	cJSON *a = cJSON_CreateObject();

	cJSON_AddItemToArray(arts, a);
	if (artifact)
		cJSON_AddStringToObject(a, "artifact", artifact);
	else
		cJSON_AddNullToObject(a, "artifact");
	cJSON_AddStringToObject(a, "status", status);
	cJSON_AddStringToObject(a, "reason", reason);
}

/* Whether known (an array of strings) holds digest. */
static int
is_known(const cJSON *known, const char *digest)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, known)
		if (cJSON_IsString(e) && strcmp(e->valuestring, digest) == 0)
			return 1;
	return 0;
}

/* Reads the artifacts of list (an index's manifests) of the verdict type into arts: at most
 * VERDICTS_EXAMINE_MAX read, the newest by annotation first; untrusted ones count for nothing,
 * and of the trusted ones the newest VERDICTS_ARTIFACTS_MAX by signed time are kept ("older"
 * the rest, their records dropped). */
static void
read_listed(registry_client *c, const cJSON *list, const char *image_digest, const verdicts_cfg *cfg,
    const cJSON *known, cJSON *arts)
{
	listed *v = NULL;
	const cJSON *e;
	cJSON *a, **trusted = NULL;
	size_t n = 0, nt = 0, cap = (size_t)cJSON_GetArraySize(list) + 1;
	int at = 0;

	if ((v = calloc(cap, sizeof *v)) == NULL || (trusted = calloc(cap, sizeof *trusted)) == NULL)
		goto done;
	cJSON_ArrayForEach(e, list) {
		const char *ad = gstr(e, "digest"), *t = gstr(e, "artifactType");

		at++;
		if (t == NULL || strcmp(t, VERDICT_ARTIFACT_TYPE) != 0)
			continue;
		if (ad == NULL || strncmp(ad, "sha256:", 7) != 0 || !lm_is_sha256(ad + 7)) {
			not_read(arts, NULL, "refused", "the index lists a digest that is not sha256: and 64 hex");
			continue;
		}
		v[n++] = (listed){ad, gstr(cJSON_GetObjectItemCaseSensitive(e, "annotations"), "org.opencontainers.image.created"),
			at};
	}
	qsort(v, n, sizeof *v, cmp_listed);
	for (size_t i = 0; i < n; i++) {
		if (is_known(known, v[i].digest))
			not_read(arts, v[i].digest, "known", "recorded here already");
		else if (i >= VERDICTS_EXAMINE_MAX)
			not_read(arts, v[i].digest, "unread", "past the " LM_STR(VERDICTS_EXAMINE_MAX) " artifacts one lookup "
			    "reads (the newest by their annotation first)");
		else {
			fetch_one(c, v[i].digest, image_digest, cfg, arts);
			a = cJSON_GetArrayItem(arts, cJSON_GetArraySize(arts) - 1);
			if (strcmp(gstr(a, "status"), "trusted") == 0)
				trusted[nt++] = a;
		}
	}
	/* By signed time, never by list order: the newest trusted ones are kept. */
	qsort(trusted, nt, sizeof *trusted, cmp_signed);
	for (size_t i = VERDICTS_ARTIFACTS_MAX; i < nt; i++) {
		cJSON_ReplaceItemInObjectCaseSensitive(trusted[i], "status", cJSON_CreateString("older"));
		cJSON_DeleteItemFromObjectCaseSensitive(trusted[i], "records");
		cJSON_AddStringToObject(trusted[i], "reason", "trusted, but older than the newest "
		    LM_STR(VERDICTS_ARTIFACTS_MAX) " trusted ones by signed time");
	}
done:
	free(v);
	free(trusted);
}

int
verdicts_fetch(cJSON **out, const char *reference, const char *digest, const verdicts_cfg *cfg, const cJSON *known,
    char *err)
{
	verdicts_ref vr;
	registry_client *c = NULL;
	registry_creds creds = {0};
	char d[REGISTRY_DIGEST_LEN + 1], mt[128], name[600], *idx_text = NULL;
	size_t ilen = 0;
	long long size;
	cJSON *idx = NULL;
	const cJSON *list;
	int rc, api = 0;

	*out = NULL;
	if ((rc = verdicts_ref_parse(&vr, reference, cfg, err)) != LM_OK)
		return rc;
	if ((rc = client_for(&c, &creds, &vr, 0, cfg, err)) != LM_OK)
		goto done;
	if (digest != NULL || vr.digest[0])
		snprintf(d, sizeof d, "%s", digest ? digest : vr.digest);
	else if ((rc = image_manifest(c, &vr, NULL, d, mt, &size, err)) != LM_OK)
		goto done;
	if ((rc = registry_referrers(c, d, VERDICT_ARTIFACT_TYPE, &idx_text, &ilen, &api, err)) != LM_OK)
		goto done;
	snprintf(name, sizeof name, "%s/%s", vr.registry, vr.repo);
	*out = cJSON_CreateObject();
	cJSON_AddStringToObject(*out, "image", reference);
	cJSON_AddStringToObject(*out, "repository", name);
	cJSON_AddStringToObject(*out, "digest", d);
	cJSON_AddBoolToObject(*out, "referrersApi", api);
	if (idx_text != NULL && (verdict_too_deep(idx_text, ilen, VERDICT_DEPTH_MAX) ||
	    (idx = cJSON_ParseWithLength(idx_text, ilen)) == NULL ||
	    !cJSON_IsArray(list = cJSON_GetObjectItemCaseSensitive(idx, "manifests")))) {
		rc = lm_err(err, LM_EFAIL, "registry %s: the referrers of %s are not an image index: refused", vr.registry, d);
		goto done;
	}
	list = idx ? cJSON_GetObjectItemCaseSensitive(idx, "manifests") : NULL;
	read_listed(c, list, d, cfg, known, cJSON_AddArrayToObject(*out, "artifacts"));
	rc = LM_OK;
done:
	if (*out != NULL)
		cJSON_AddNumberToObject(*out, "requests", registry_client_requests(c));
	cJSON_Delete(idx);
	free(idx_text);
	registry_client_free(c);
	registry_creds_clear(&creds);
	return rc;
}

/* Whether doc holds rec of statement already (the same statement, kind and time: however it
 * was wrapped), or, in a ledger an older version wrote, of artifact. */
static int
holds(const cJSON *doc, const cJSON *rec, const char *statement, const char *artifact)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const char *st = ledger_import_field(r, "statement"), *art = ledger_import_field(r, "artifact");

		if (!(st ? strcmp(st, statement) == 0 : art != NULL && strcmp(art, artifact) == 0))
			continue;
		if (gstr(r, "kind") && strcmp(gstr(r, "kind"), gstr(rec, "kind")) == 0 && gstr(r, "time") &&
		    strcmp(gstr(r, "time"), gstr(rec, "time")) == 0)
			return 1;
	}
	return 0;
}

int
verdicts_import(int *added, const char *state, const cJSON *fetched, char *err)
{
	const cJSON *a, *r;
	int rc = LM_OK;

	*added = 0;
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(fetched, "artifacts")) {
		const cJSON *key = cJSON_GetObjectItemCaseSensitive(a, "key");
		const char *art = gstr(a, "artifact"), *st = gstr(a, "status"), *stmt = gstr(a, "statement");
		cJSON *doc = NULL;

		if (st == NULL || strcmp(st, "trusted") != 0 || !cJSON_IsObject(key) || art == NULL || stmt == NULL)
			continue;
		if ((rc = ledger_load(&doc, state, key, err)) != LM_OK)
			return rc;
		cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(a, "records")) {
			cJSON *rec, *imp;

			if (doc != NULL && holds(doc, r, stmt, art))
				continue;
			if ((rec = cJSON_Duplicate(r, 1)) == NULL) {
				cJSON_Delete(doc);
				return lm_err(err, LM_EFAIL, "out of memory");
			}
			/* Where it came from is the importer's to say (ledger.h), in a field no signer can supply;
			 * what an older signer put at the top level says nothing of that. */
			cJSON_DeleteItemFromObjectCaseSensitive(rec, "signer");
			cJSON_DeleteItemFromObjectCaseSensitive(rec, "artifact");
			if (gstr(rec, "source") && strcmp(gstr(rec, "source"), "registry") == 0)
				cJSON_DeleteItemFromObjectCaseSensitive(rec, "source");
			imp = cJSON_AddObjectToObject(rec, LEDGER_IMPORTED);
			cJSON_AddStringToObject(imp, "from", "registry");
			ledger_add_str(imp, "repository", gstr(fetched, "repository"));
			cJSON_AddStringToObject(imp, "signer", gstr(a, "signer"));
			cJSON_AddStringToObject(imp, "artifact", art);
			cJSON_AddStringToObject(imp, "statement", stmt);
			rc = ledger_append(state, key, rec, err);
			cJSON_Delete(rec);
			if (rc != LM_OK) {
				cJSON_Delete(doc);
				return rc;
			}
			++*added;
		}
		cJSON_Delete(doc);
	}
	return LM_OK;
}

/* The lookups of this process, one per image version (REGISTRY/REPO@DIGEST): the VMs of a
 * version wait for the first one's. Kept for the process's life (a run's few versions). */
typedef struct lookup {
	char *id;
	int done, imported;
	cJSON *summary; /* the "verdicts" object every VM of the version gets */
	struct lookup *next;
} lookup;

static pthread_mutex_t look_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t look_cv = PTHREAD_COND_INITIALIZER;
static lookup *lookups;

/* The artifacts whose records key's document holds already (imported before): not read again. */
static cJSON *
known_of(const session_opts *o, const cJSON *key)
{
	cJSON *doc = NULL, *known = cJSON_CreateArray();
	const cJSON *r;
	char err[LM_ERRLEN];

	if (known == NULL || ledger_load(&doc, o->state, key, err) != LM_OK)
		return known; /* a ledger that cannot be read: everything is read, and the gate says so */
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const char *art = ledger_import_field(r, "artifact");

		if (art != NULL && !is_known(known, art))
			cJSON_AddItemToArray(known, cJSON_CreateString(art));
	}
	cJSON_Delete(doc);
	return known;
}

/* The lookup itself: fetch, import, and the summary for its VMs. */
static cJSON *
look_up(int *imported, const session_vm *s, const session_opts *o, const char *name)
{
	cJSON *sum = cJSON_CreateObject(), *f = NULL, *known;
	const cJSON *a;
	char err[LM_ERRLEN], msg[LM_ERRLEN + 300];
	const char *signer = NULL, *artifact = NULL, *untrusted = NULL, *why = NULL;
	int added = 0, trusted = 0, n = 0, current = 0, rc;
	int64_t t0 = lm_now_ms();

	*imported = 0;
	cJSON_AddStringToObject(sum, "source", "registry");
	cJSON_AddStringToObject(sum, "repository", name);
	known = known_of(o, s->key);
	rc = verdicts_fetch(&f, s->image, s->digest, o->verdicts, known, err);
	cJSON_Delete(known);
	if (f != NULL)
		cJSON_AddNumberToObject(sum, "requests", cJSON_GetObjectItemCaseSensitive(f, "requests")->valuedouble);
	cJSON_AddNumberToObject(sum, "ms", (double)(lm_now_ms() - t0));
	if (rc != LM_OK) {
		cJSON_AddStringToObject(sum, "state", "unreachable");
		snprintf(msg, sizeof msg, "registry verdicts not read (%s); the gate used the local ledger only", err);
		ledger_add_str(sum, "message", msg);
		cJSON_Delete(f);
		return sum;
	}
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(f, "artifacts")) {
		n++;
		if (strcmp(gstr(a, "status"), "trusted") == 0) {
			trusted++;
			if (signer == NULL) /* the newest by signed time comes first */
				signer = gstr(a, "signer"), artifact = gstr(a, "artifact");
		} else if (strcmp(gstr(a, "status"), "known") == 0 || strcmp(gstr(a, "status"), "older") == 0)
			current++;
		else if (untrusted == NULL) {
			untrusted = gstr(a, "signer");
			why = gstr(a, "reason");
		}
	}
	if (trusted > 0 && (rc = verdicts_import(&added, o->state, f, err)) != LM_OK) {
		cJSON_AddStringToObject(sum, "state", "unreachable");
		snprintf(msg, sizeof msg, "registry verdicts read but not recorded (%s); the gate used the local ledger only",
		    err);
		ledger_add_str(sum, "message", msg);
	} else if (trusted > 0) {
		*imported = 1;
		cJSON_AddStringToObject(sum, "state", "imported");
		cJSON_AddStringToObject(sum, "signer", signer);
		cJSON_AddStringToObject(sum, "artifact", artifact);
		cJSON_AddNumberToObject(sum, "recordsAdded", added);
		snprintf(msg, sizeof msg, "the registry's verdict for this image version, signed by trusted key %s (artifact "
		    "%.19s...)", signer, artifact);
		ledger_add_str(sum, "message", msg);
	} else if (current > 0) {
		cJSON_AddStringToObject(sum, "state", "current");
		snprintf(msg, sizeof msg, "the registry holds no verdict for this image version that this ledger does not "
		    "have (%d recorded here already)", current);
		ledger_add_str(sum, "message", msg);
	} else if (n > 0) {
		cJSON_AddStringToObject(sum, "state", "untrusted");
		if (untrusted)
			cJSON_AddStringToObject(sum, "signer", untrusted);
		snprintf(msg, sizeof msg, "the registry holds %d verdict(s) for this image version, none usable: %s", n,
		    why ? why : "refused");
		ledger_add_str(sum, "message", msg);
	} else {
		cJSON_AddStringToObject(sum, "state", "none");
		ledger_add_str(sum, "message", "the registry holds no verdict for this image version");
	}
	cJSON_Delete(f);
	return sum;
}

int
verdicts_consult(cJSON *r, const session_vm *s, const session_opts *o)
{
	verdicts_ref vr;
	char err[LM_ERRLEN], id[1200], name[600];
	lookup *l;
	int imported;

	if (o->verdicts == NULL || !o->verdicts->registry || s->key == NULL)
		return 0;
	if (s->digest[0] == '\0' || s->image == NULL || verdicts_ref_parse(&vr, s->image, o->verdicts, err) != LM_OK ||
	    (o->image == NULL && !verdicts_allowed(o->verdicts, vr.registry))) {
		cJSON *v = cJSON_AddObjectToObject(r, "verdicts");
		char why[LM_ERRLEN];

		cJSON_AddStringToObject(v, "source", "registry");
		cJSON_AddStringToObject(v, "state", "skipped");
		if (s->digest[0] == '\0' || s->image == NULL || verdicts_ref_parse(&vr, s->image, o->verdicts, err) != LM_OK)
			cJSON_AddStringToObject(v, "message", s->digest[0] == '\0' ? "the registry was not asked: this VM has no "
			    "image digest (.manifest-digest)" : "the registry was not asked: no image reference (--image "
			    "REGISTRY/REPO:TAG, or a golden image's image.json)");
		else { /* the guest's label names a registry the operator did not: nothing goes there */
			char reg[80];

			snprintf(why, sizeof why, "the registry was not asked: the guest's image.json names registry %s, which is "
			    "neither registry= nor in verdict-registries= (the operator names where verdicts come from; "
			    "--image REF names one for this run)", lm_printable(reg, sizeof reg, vr.registry));
			cJSON_AddStringToObject(v, "message", why);
		}
		return 0;
	}
	snprintf(name, sizeof name, "%s/%s", vr.registry, vr.repo);
	snprintf(id, sizeof id, "%s@%s", name, s->digest);
	pthread_mutex_lock(&look_mu);
	for (l = lookups; l != NULL && strcmp(l->id, id) != 0; l = l->next)
		;
	if (l == NULL) { /* this VM looks it up; the others of its version wait for it */
		if ((l = calloc(1, sizeof *l)) == NULL || (l->id = strdup(id)) == NULL) {
			free(l);
			pthread_mutex_unlock(&look_mu);
			return 0;
		}
		l->next = lookups;
		lookups = l;
		pthread_mutex_unlock(&look_mu);
		l->summary = look_up(&imported, s, o, name);
		pthread_mutex_lock(&look_mu);
		l->imported = imported;
		l->done = 1;
		pthread_cond_broadcast(&look_cv);
		cJSON_AddItemToObject(r, "verdicts", cJSON_Duplicate(l->summary, 1));
	} else {
		while (!l->done)
			pthread_cond_wait(&look_cv, &look_mu);
		cJSON_AddItemToObject(r, "verdicts", cJSON_Duplicate(l->summary, 1));
		cJSON_AddTrueToObject(cJSON_GetObjectItemCaseSensitive(r, "verdicts"), "shared");
	}
	imported = l->imported;
	pthread_mutex_unlock(&look_mu);
	return imported;
}

void
verdicts_annotate(cJSON *r)
{
	const char *st = gstr(r, "state"), *m = gstr(r, "message");
	const char *vm = gstr(cJSON_GetObjectItemCaseSensitive(r, "verdicts"), "message");
	char buf[LM_ERRLEN * 3];

	if (st == NULL || strcmp(st, "refused") != 0 || vm == NULL)
		return;
	snprintf(buf, sizeof buf, "%s; registry: %s", m ? m : "refused", vm);
	session_set_state(r, "refused", buf);
}

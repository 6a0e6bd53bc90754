/* verdicts: see verdicts.h. */
#include "ops/verdicts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/ledger.h"
#include "core/util.h"
#include "net/referrers.h"
#include "net/registry.h"

#define OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"

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
		if (!lm_is_digest(out->digest))
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

int
verdicts_client(registry_client **c, registry_creds *creds, const verdicts_ref *vr, int push, const verdicts_cfg *cfg,
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

int
verdicts_image(registry_client *c, const verdicts_ref *vr, const char *digest, char d[REGISTRY_DIGEST_LEN + 1],
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
	snprintf(mt, 128, "%s", lm_jstr(m, "mediaType") ? lm_jstr(m, "mediaType") : OCI_MANIFEST);
	*size = (long long)len;
	cJSON_Delete(m);
	free(body);
	return LM_OK;
}

/* The form of an artifact by its artifactType (a manifest's, or an index's descriptor's with its
 * annotations): 1 a Sigstore bundle whose predicate type is a verdict's, 2 a plain DSSE envelope
 * (what lume-metal pushed before bundles), 0 neither (another tool's bundle, or anything else). */
static int
form_of(const cJSON *o)
{
	const char *t = lm_jstr(o, "artifactType");
	const char *pt = lm_jstr(cJSON_GetObjectItemCaseSensitive(o, "annotations"), "dev.sigstore.bundle.predicateType");

	if (t != NULL && strcmp(t, VERDICT_BUNDLE_TYPE) == 0)
		return pt != NULL && strcmp(pt, VERDICT_PREDICATE_TYPE) == 0;
	return t != NULL && strcmp(t, VERDICT_ARTIFACT_TYPE) == 0 ? 2 : 0;
}

/* One artifact of the index: read, checked, opened (as a bundle or a plain envelope, by its
 * manifest's artifactType); its entry in arts. */
static void
fetch_one(registry_client *c, const char *artifact, const char *image_digest, const verdicts_cfg *cfg, cJSON *arts)
{
	cJSON *a = cJSON_CreateObject(), *m = NULL;
	char *body = NULL, *blob = NULL, d[REGISTRY_DIGEST_LEN + 1], err[LM_ERRLEN];
	size_t len = 0, blen = 0;
	const cJSON *layer, *sz;
	const char *why = NULL, *t;
	int bundle = 0;
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
	else if ((t = lm_jstr(m, "artifactType")) == NULL || ((bundle = strcmp(t, VERDICT_BUNDLE_TYPE) == 0) == 0 &&
	    strcmp(t, VERDICT_ARTIFACT_TYPE) != 0))
		why = "its manifest's artifactType is neither " VERDICT_BUNDLE_TYPE " nor " VERDICT_ARTIFACT_TYPE;
	else if (lm_jstr(cJSON_GetObjectItemCaseSensitive(m, "subject"), "digest") == NULL ||
	    strcmp(lm_jstr(cJSON_GetObjectItemCaseSensitive(m, "subject"), "digest"), image_digest) != 0)
		why = "its subject is another image: refused";
	else if (!cJSON_IsObject(layer = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "layers"), 0)) ||
	    lm_jstr(layer, "mediaType") == NULL || lm_jstr(layer, "digest") == NULL ||
	    strcmp(lm_jstr(layer, "mediaType"), bundle ? VERDICT_BUNDLE_TYPE : VERDICT_ENVELOPE_TYPE) != 0)
		why = bundle ? "its first layer is not a Sigstore bundle v0.3" : "its first layer is not a DSSE envelope";
	else if (!cJSON_IsNumber(sz = cJSON_GetObjectItemCaseSensitive(layer, "size")) || sz->valuedouble < 0 ||
	    sz->valuedouble > VERDICT_ENVELOPE_MAX)
		why = "its envelope is larger than the bound: refused";
	else if (registry_blob_get(c, lm_jstr(layer, "digest"), VERDICT_ENVELOPE_MAX, &blob, &blen, err) != LM_OK)
		why = err;
	if (why != NULL) {
		cJSON_AddStringToObject(a, "status", "refused");
		ledger_add_str(a, "reason", why);
		goto done;
	}
	if (bundle)
		verdict_open_bundle(&vo, blob, blen, image_digest, cfg ? cfg->trust : NULL);
	else
		verdict_open(&vo, blob, blen, image_digest, cfg ? cfg->trust : NULL);
	cJSON_AddStringToObject(a, "form", bundle ? "bundle" : "envelope");
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
	free(blob);
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

	return ledger_time_cmp(lm_jstr(y, "time"), lm_jstr(x, "time"));
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
		const char *ad = lm_jstr(e, "digest");

		at++;
		if (form_of(e) == 0)
			continue;
		if (!lm_is_digest(ad)) {
			not_read(arts, NULL, "refused", "the index lists a digest that is not sha256: and 64 hex");
			continue;
		}
		v[n++] = (listed){ad, lm_jstr(cJSON_GetObjectItemCaseSensitive(e, "annotations"), "org.opencontainers.image.created"),
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
			if (strcmp(lm_jstr(a, "status"), "trusted") == 0)
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
	char d[REGISTRY_DIGEST_LEN + 1], mt[128], name[600];
	long long size;
	cJSON *idx = NULL;
	const cJSON *list;
	int rc, api = 0, truncated = 0;

	*out = NULL;
	if ((rc = verdicts_ref_parse(&vr, reference, cfg, err)) != LM_OK)
		return rc;
	if ((rc = verdicts_client(&c, &creds, &vr, 0, cfg, err)) != LM_OK)
		goto done;
	if (digest != NULL || vr.digest[0])
		snprintf(d, sizeof d, "%s", digest ? digest : vr.digest);
	else if ((rc = verdicts_image(c, &vr, NULL, d, mt, &size, err)) != LM_OK)
		goto done;
	/* Every referrer, unfiltered: verdicts come in two artifact types (bundles, and the plain
	 * envelopes of older versions), and the API's filter takes one. */
	if ((rc = referrers_list(c, d, &idx, &api, &truncated, err)) != LM_OK)
		goto done;
	snprintf(name, sizeof name, "%s/%s", vr.registry, vr.repo);
	*out = cJSON_CreateObject();
	cJSON_AddStringToObject(*out, "image", reference);
	cJSON_AddStringToObject(*out, "repository", name);
	cJSON_AddStringToObject(*out, "digest", d);
	cJSON_AddBoolToObject(*out, "referrersApi", api);
	list = idx ? cJSON_GetObjectItemCaseSensitive(idx, "manifests") : NULL;
	cJSON_AddNumberToObject(*out, "listed", cJSON_GetArraySize(list));
	cJSON_AddBoolToObject(*out, "truncated", truncated);
	read_listed(c, list, d, cfg, known, cJSON_AddArrayToObject(*out, "artifacts"));
	rc = LM_OK;
done:
	if (*out != NULL)
		cJSON_AddNumberToObject(*out, "requests", registry_client_requests(c));
	cJSON_Delete(idx);
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
		if (lm_jstr(r, "kind") && strcmp(lm_jstr(r, "kind"), lm_jstr(rec, "kind")) == 0 && lm_jstr(r, "time") &&
		    strcmp(lm_jstr(r, "time"), lm_jstr(rec, "time")) == 0)
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
		const char *art = lm_jstr(a, "artifact"), *st = lm_jstr(a, "status"), *stmt = lm_jstr(a, "statement");
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
			if (lm_jstr(rec, "source") && strcmp(lm_jstr(rec, "source"), "registry") == 0)
				cJSON_DeleteItemFromObjectCaseSensitive(rec, "source");
			imp = cJSON_AddObjectToObject(rec, LEDGER_IMPORTED);
			cJSON_AddStringToObject(imp, "from", "registry");
			ledger_add_str(imp, "repository", lm_jstr(fetched, "repository"));
			cJSON_AddStringToObject(imp, "signer", lm_jstr(a, "signer"));
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
		if (strcmp(lm_jstr(a, "status"), "trusted") == 0) {
			trusted++;
			if (signer == NULL) /* the newest by signed time comes first */
				signer = lm_jstr(a, "signer"), artifact = lm_jstr(a, "artifact");
		} else if (strcmp(lm_jstr(a, "status"), "known") == 0 || strcmp(lm_jstr(a, "status"), "older") == 0)
			current++;
		else if (untrusted == NULL) {
			untrusted = lm_jstr(a, "signer");
			why = lm_jstr(a, "reason");
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
	const char *st = lm_jstr(r, "state"), *m = lm_jstr(r, "message");
	const char *vm = lm_jstr(cJSON_GetObjectItemCaseSensitive(r, "verdicts"), "message");
	char buf[LM_ERRLEN * 3];

	if (st == NULL || strcmp(st, "refused") != 0 || vm == NULL)
		return;
	snprintf(buf, sizeof buf, "%s; registry: %s", m ? m : "refused", vm);
	session_set_state(r, "refused", buf);
}

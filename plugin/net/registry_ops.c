/* registry_ops: the calls of a registry client (registry.h): manifests, tags, blobs and plain
 * GETs, each one registry_call. */
#include "net/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "net/registry_int.h"

static int
http_err(registry_client *c, long status, const char *what, char *err)
{
	return lm_err(err, LM_EFAIL, "registry %s answered HTTP %ld for %s", c->registry, status, what);
}

/* Hands bd's bytes to the caller: *out NUL-terminated (caller frees), *len without the NUL. */
static int
take_body(body *bd, char **out, size_t *len, char *err)
{
	size_t n = bd->b.len;

	if (lm_buf_add(&bd->b, "", 1) != 0)
		return lm_err(err, LM_EFAIL, "out of memory");
	*out = bd->b.data;
	*len = n;
	bd->b.data = NULL;
	bd->b.len = 0;
	return LM_OK;
}

int
registry_manifest_get(registry_client *c, const char *ref, size_t max, char **out, size_t *len,
    char digest[REGISTRY_DIGEST_LEN + 1], char *err)
{
	char path[600];
	body bd = {{0}, 0, max};
	heads h;
	long status;
	int rc;

	*out = NULL;
	*len = 0;
	digest[0] = '\0';
	if (!lm_is_digest(ref) && !registry_tag_ok(ref))
		return lm_err(err, LM_EINPUT, "registry %s: not a tag or a digest: %.80s", c->registry, ref);
	snprintf(path, sizeof path, "/v2/%s/manifests/%s", c->repo, ref);
	if ((rc = registry_call(c, path, &bd, &h, &status, NULL, err)) != LM_OK)
		goto done;
	if (status == 404)
		goto done;
	if (status != 200) {
		rc = http_err(c, status, path, err);
		goto done;
	}
	lm_digest(digest, bd.b.data ? bd.b.data : "", bd.b.len);
	if (lm_is_digest(ref) && strcmp(ref, digest) != 0) {
		rc = lm_err(err, LM_EFAIL, "registry %s answered a manifest whose digest is not %s: refused", c->registry, ref);
		goto done;
	}
	rc = take_body(&bd, out, len, err);
done:
	lm_buf_free(&bd.b);
	return rc;
}

int
registry_get(registry_client *c, const char *path, size_t max, long *status, char **out, size_t *len, char ctype[128],
    char next[1024], char *err)
{
	body bd = {{0}, 0, max};
	heads h;
	const char *n;
	int rc;

	*out = NULL;
	*len = 0;
	ctype[0] = next[0] = '\0';
	if (strncmp(path, "/v2/", 4) != 0 || strpbrk(path, " \r\n#") != NULL)
		return lm_err(err, LM_EINPUT, "registry %s: not a /v2/ path: %.80s", c->registry, path);
	if ((rc = registry_call(c, path, &bd, &h, status, NULL, err)) != LM_OK)
		goto done;
	snprintf(ctype, 128, "%s", h.ctype);
	/* The next page, on this registry only: a path, or an absolute URL of its own scheme and host. */
	n = h.next;
	if (strncmp(n, c->base, strlen(c->base)) == 0 && n[strlen(c->base)] == '/')
		n += strlen(c->base);
	if (*n != '\0' && (strncmp(n, "/v2/", 4) != 0 || strpbrk(n, " \r\n#") != NULL || lm_fmt(next, 1024, "%s", n) != 0)) {
		rc = lm_err(err, LM_EFAIL, "registry %s answered a Link to the next page elsewhere (%.200s): not followed",
		    c->registry, h.next);
		goto done;
	}
	if (*status == 200)
		rc = take_body(&bd, out, len, err);
done:
	lm_buf_free(&bd.b);
	return rc;
}

int
registry_manifest_put(registry_client *c, const char *ref, const char *media_type, const void *data, size_t len,
    char digest[REGISTRY_DIGEST_LEN + 1], int *subject, char *err)
{
	char path[600];
	sendspec sp = {"PUT", media_type, data, len, 0};
	body bd = {{0}, 0, 4096};
	heads h;
	long status;
	int rc;

	lm_digest(digest, data, len);
	if (subject)
		*subject = 0;
	if (!lm_is_digest(ref) && !registry_tag_ok(ref))
		return lm_err(err, LM_EINPUT, "registry %s: not a tag or a digest: %.80s", c->registry, ref);
	snprintf(path, sizeof path, "/v2/%s/manifests/%s", c->repo, ref);
	rc = registry_call(c, path, &bd, &h, &status, &sp, err);
	lm_buf_free(&bd.b);
	if (rc != LM_OK)
		return rc;
	if (status != 201 && status != 200)
		return lm_err(err, LM_EFAIL, "registry %s refused the manifest %s:%s (HTTP %ld)", c->registry, c->repo, ref,
		    status);
	if (h.digest_seen && !h.digest_bad && strcmp(h.digest, digest) != 0)
		return lm_err(err, LM_EFAIL, "registry %s stored the manifest under another digest: refused", c->registry);
	if (subject)
		*subject = h.oci_subject;
	return LM_OK;
}

int
registry_tag_delete(registry_client *c, const char *tag, char *err)
{
	char path[600];
	sendspec sp = {"DELETE", NULL, "", 0, 0};
	body bd = {{0}, 0, 4096};
	heads h;
	long status;
	int rc;

	if (!registry_tag_ok(tag))
		return lm_err(err, LM_EINPUT, "registry %s: not a tag: %.80s", c->registry, tag);
	snprintf(path, sizeof path, "/v2/%s/manifests/%s", c->repo, tag);
	rc = registry_call(c, path, &bd, &h, &status, &sp, err);
	lm_buf_free(&bd.b);
	if (rc == LM_OK && status != 202)
		rc = lm_err(err, LM_EFAIL, "registry %s answered HTTP %ld to DELETE %s: it does not delete tags", c->registry,
		    status, path);
	return rc;
}

int
registry_blob_put(registry_client *c, const void *data, size_t len, char digest[REGISTRY_DIGEST_LEN + 1], char *err)
{
	char path[4096], *loc;
	sendspec post = {"POST", NULL, "", 0, 0}, put = {"PUT", "application/octet-stream", data, len, 0};
	body bd = {{0}, 0, 4096};
	heads h;
	long status;
	int rc;

	lm_digest(digest, data, len);
	snprintf(path, sizeof path, "/v2/%s/blobs/%s", c->repo, digest);
	if ((rc = registry_call(c, path, NULL, &h, &status, NULL, err)) != LM_OK)
		return rc;
	if (status == 200)
		return LM_OK;
	snprintf(path, sizeof path, "/v2/%s/blobs/uploads/", c->repo);
	rc = registry_call(c, path, &bd, &h, &status, &post, err);
	lm_buf_free(&bd.b);
	if (rc != LM_OK)
		return rc;
	if (status != 202 || h.location[0] == '\0')
		return lm_err(err, LM_EFAIL, "registry %s did not start the upload (HTTP %ld)", c->registry, status);
	/* The upload goes only to this registry: a Location elsewhere is refused. */
	loc = h.location;
	if (strncmp(loc, c->base, strlen(c->base)) == 0)
		loc += strlen(c->base);
	if (strncmp(loc, "/v2/", 4) != 0 || strpbrk(loc, " \r\n#") != NULL)
		return lm_err(err, LM_EFAIL, "registry %s sent the upload to another place: refused", c->registry);
	if (lm_fmt(path, sizeof path, "%s%cdigest=sha256%%3A%s", loc, strchr(loc, '?') ? '&' : '?', digest + 7) != 0)
		return lm_err(err, LM_EFAIL, "registry %s: upload URL too long", c->registry);
	rc = registry_call(c, path, &bd, &h, &status, &put, err);
	lm_buf_free(&bd.b);
	if (rc != LM_OK)
		return rc;
	if (status != 201)
		return lm_err(err, LM_EFAIL, "registry %s refused the blob %s (HTTP %ld)", c->registry, digest, status);
	return LM_OK;
}

int
registry_blob_get(registry_client *c, const char *digest, size_t max, char **out, size_t *len, char *err)
{
	char path[600], hex[65];
	sendspec sp = {"GET", NULL, NULL, 0, 1};
	body bd = {{0}, 0, max};
	heads h;
	long status;
	int rc;

	*out = NULL;
	*len = 0;
	if (!lm_is_digest(digest))
		return lm_err(err, LM_EFAIL, "registry %s: a blob digest that is not sha256: and 64 hex: refused", c->registry);
	snprintf(path, sizeof path, "/v2/%s/blobs/%s", c->repo, digest);
	if ((rc = registry_call(c, path, &bd, &h, &status, &sp, err)) != LM_OK)
		goto done;
	if (status != 200) {
		rc = status == 404 ? lm_err(err, LM_EFAIL, "registry %s: no such blob %s", c->registry, digest)
		                   : http_err(c, status, path, err);
		goto done;
	}
	lm_sha256_hex(hex, bd.b.data ? bd.b.data : "", bd.b.len);
	if (strcmp(hex, digest + 7) != 0) {
		char w[600];

		rc = lm_err(err, LM_EFAIL, "%s answered a blob whose SHA-256 is not %s: refused", registry_who(w, &c->c, h.host), digest);
		goto done;
	}
	rc = take_body(&bd, out, len, err);
done:
	lm_buf_free(&bd.b);
	return rc;
}

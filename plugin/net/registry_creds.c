/* registry_creds: the credentials of registry.h, per registry host, as Docker keeps them. */
#include "net/registry.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "core/util.h"

static void
wipe_free(char *s)
{
	if (s != NULL) {
		lm_wipe(s, strlen(s));
		free(s);
	}
}

int
registry_creds_from_env(registry_creds *out)
{
	const char *u = getenv("GITHUB_USERNAME"), *s = getenv("GITHUB_TOKEN");

	out->user = out->secret = NULL;
	if (u == NULL)
		u = getenv("GHCR_USERNAME");
	if (s == NULL)
		s = getenv("GHCR_TOKEN");
	if (u == NULL || s == NULL || *u == '\0' || *s == '\0')
		return 0;
	if ((out->user = strdup(u)) == NULL || (out->secret = strdup(s)) == NULL) {
		registry_creds_clear(out);
		return LM_EFAIL;
	}
	return 1;
}

/* A Docker config's auths key as a registry: "https://HOST[:PORT]/v1/" and "HOST[:PORT]" alike,
 * as `docker login` writes both; into out (lower case), or "" when it is neither. */
static void
auths_host(char *out, size_t len, const char *k)
{
	size_t n;

	if (strncmp(k, "https://", 8) == 0)
		k += 8;
	else if (strncmp(k, "http://", 7) == 0)
		k += 7;
	n = strcspn(k, "/");
	if (n == 0 || n >= len) {
		out[0] = '\0';
		return;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)k[i]);
	out[n] = '\0';
}

/* Fills out from one auths entry: "auth" (base64 of USER:SECRET) or "username" and "password". */
static int
auths_entry(registry_creds *out, const cJSON *e)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "auth");
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(e, "username");
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "password");
	unsigned char *dec = NULL;
	char *colon;
	size_t n;
	int len;

	if (cJSON_IsString(u) && cJSON_IsString(p) && *u->valuestring && *p->valuestring) {
		if ((out->user = strdup(u->valuestring)) == NULL || (out->secret = strdup(p->valuestring)) == NULL)
			return LM_EFAIL;
		return 1;
	}
	if (!cJSON_IsString(a) || (n = strlen(a->valuestring)) == 0 || n > 16384 || (dec = malloc(n)) == NULL)
		return 0;
	len = EVP_DecodeBlock(dec, (const unsigned char *)a->valuestring, (int)n);
	while (len > 0 && n > 0 && a->valuestring[n - 1] == '=') /* DecodeBlock counts the padding */
		n--, len--;
	if (len <= 0 || memchr(dec, '\0', (size_t)len) != NULL ||
	    (colon = memchr(dec, ':', (size_t)len)) == NULL || colon == (char *)dec || colon == (char *)dec + len - 1) {
		lm_wipe(dec, n);
		free(dec);
		return 0;
	}
	*colon = '\0';
	out->user = strdup((char *)dec);
	out->secret = strndup(colon + 1, (size_t)len - (size_t)(colon + 1 - (char *)dec));
	lm_wipe(dec, n);
	free(dec);
	return out->user && out->secret ? 1 : LM_EFAIL;
}

int
registry_creds_for(registry_creds *out, const char *registry, const char *env_registry, const char *auth_file,
    char *err)
{
	char host[300], k[300], *text = NULL;
	cJSON *doc = NULL;
	const cJSON *e;
	struct stat st;
	int fd, rc = 0;

	out->user = out->secret = NULL;
	auths_host(host, sizeof host, registry ? registry : "");
	if (host[0] == '\0')
		return 0;
	if (auth_file != NULL && *auth_file != '\0') {
		if ((fd = open(auth_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) < 0)
			return lm_err(err, LM_EINPUT, "registry-auth %s: %s", auth_file, strerror(errno));
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) != 0 ||
		    (st.st_uid != getuid() && st.st_uid != 0)) {
			close(fd);
			return lm_err(err, LM_EINPUT, "registry-auth %s: not a regular file of yours that only you can read "
			    "(chmod 600 %s): not used", auth_file, auth_file);
		}
		close(fd);
		if ((rc = lm_read_file(&text, NULL, auth_file, 1u << 20, err)) != LM_OK)
			return lm_err(err, LM_EINPUT, "registry-auth %s: cannot be read", auth_file);
		doc = cJSON_Parse(text);
		lm_wipe(text, strlen(text));
		free(text);
		if (!cJSON_IsObject(doc) || (cJSON_HasObjectItem(doc, "auths") &&
		    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "auths")))) {
			cJSON_Delete(doc);
			return lm_err(err, LM_EINPUT, "registry-auth %s: not a Docker config ({\"auths\": {HOST: {\"auth\": "
			    "...}}})", auth_file);
		}
		rc = 0;
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "auths")) {
			auths_host(k, sizeof k, e->string ? e->string : "");
			if (strcmp(k, host) == 0 && (rc = auths_entry(out, e)) != 0)
				break;
		}
		/* the parsed secrets are wiped with the document's strings */
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "auths")) {
			const cJSON *f;

			cJSON_ArrayForEach(f, e)
				if (cJSON_IsString(f))
					lm_wipe(f->valuestring, strlen(f->valuestring));
		}
		cJSON_Delete(doc);
		if (rc < 0) {
			registry_creds_clear(out);
			return lm_err(err, LM_EFAIL, "out of memory");
		}
		if (rc == 1)
			return 1;
	}
	auths_host(k, sizeof k, env_registry ? env_registry : "ghcr.io");
	if (strcmp(k, host) != 0)
		return 0; /* the environment's credentials are for env_registry only */
	if ((rc = registry_creds_from_env(out)) < 0)
		return lm_err(err, LM_EFAIL, "out of memory");
	return rc;
}

void
registry_creds_clear(registry_creds *c)
{
	if (c == NULL)
		return;
	wipe_free(c->user);
	wipe_free(c->secret);
	c->user = c->secret = NULL;
}


/* ledger: see ledger.h. */
#include "ledger.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define LEDGER_MAX (64u << 20)

static void
add_str(cJSON *o, const char *k, const char *v)
{
	if (v != NULL)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

cJSON *
ledger_key(const char *image, const char *digest, const char *guest_os, const char *guest_build,
    const char *guest_model, const char *host_chip, const char *host_build)
{
	cJSON *k = cJSON_CreateObject();

	if (k == NULL)
		return NULL;
	add_str(k, "image", image);
	add_str(k, "imageDigest", digest);
	add_str(k, "guestOS", guest_os);
	add_str(k, "guestBuild", guest_build);
	add_str(k, "guestModel", guest_model);
	add_str(k, "hostChip", host_chip);
	add_str(k, "hostBuild", host_build);
	return k;
}

int
ledger_path(char *out, size_t len, const char *state, const cJSON *key)
{
	char *text = cJSON_PrintUnformatted(key), sha[65];

	if (text == NULL)
		return -1;
	lm_sha256_hex(sha, text, strlen(text));
	free(text);
	return lm_fmt(out, len, "%s/ledger/%.16s.json", state, sha);
}

/* Reads a document; *out = NULL when the file does not exist. */
static int
read_doc(cJSON **out, const char *path, char *err)
{
	char *text;
	int rc;

	*out = NULL;
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return LM_OK;
	if ((rc = lm_read_file(&text, NULL, path, LEDGER_MAX, err)) != LM_OK)
		return rc;
	*out = cJSON_Parse(text);
	free(text);
	if (*out == NULL || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(*out, "records")) ||
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(*out, "key"))) {
		cJSON_Delete(*out);
		*out = NULL;
		return lm_err(err, LM_EFAIL, "%s: corrupt ledger file; it is left as it is and this image "
		    "version is not written until it is fixed or moved aside", path);
	}
	return LM_OK;
}

int
ledger_load(cJSON **out, const char *state, const cJSON *key, char *err)
{
	char path[4096];

	*out = NULL;
	if (ledger_path(path, sizeof path, state, key) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	return read_doc(out, path, err);
}

static void
now_iso(char out[32])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int
ledger_append(const char *state, const cJSON *key, const cJSON *record, char *err)
{
	char path[4096], lock[4200], dir[4200], when[32];
	cJSON *doc = NULL, *rec = NULL;
	char *text = NULL;
	int fd = -1, rc;

	if (ledger_path(path, sizeof path, state, key) < 0 || lm_fmt(dir, sizeof dir, "%s/ledger", state) < 0 ||
	    lm_fmt(lock, sizeof lock, "%s.lock", path) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if ((rc = lm_mkdirs(dir, err)) != LM_OK)
		return rc;
	if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
		return lm_err(err, LM_EFAIL, "%s: %s", lock, strerror(errno));
	while (flock(fd, LOCK_EX) != 0)
		if (errno != EINTR) {
			rc = lm_err(err, LM_EFAIL, "%s: flock: %s", lock, strerror(errno));
			goto done;
		}
	if ((rc = read_doc(&doc, path, err)) != LM_OK)
		goto done;
	if (doc == NULL) {
		doc = cJSON_CreateObject();
		cJSON_AddNumberToObject(doc, "format", 1);
		cJSON_AddItemToObject(doc, "key", cJSON_Duplicate(key, 1));
		cJSON_AddItemToObject(doc, "records", cJSON_CreateArray());
	}
	if ((rec = cJSON_Duplicate(record, 1)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	if (cJSON_GetObjectItemCaseSensitive(rec, "time") == NULL) {
		now_iso(when);
		cJSON_AddStringToObject(rec, "time", when);
	}
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(doc, "records"), rec);
	if ((text = cJSON_Print(doc)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	rc = lm_write_file_atomic(path, text, strlen(text), 0600, err);
done:
	free(text);
	cJSON_Delete(doc);
	close(fd); /* releases the lock */
	return rc;
}

const cJSON *
ledger_last(const cJSON *doc, const char *kind)
{
	const cJSON *r, *last = NULL;

	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "kind");

		if (cJSON_IsString(k) && strcmp(k->valuestring, kind) == 0)
			last = r;
	}
	return last;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
ledger_each(const char *state, int (*fn)(const cJSON *doc, const char *path, void *ctx), void *ctx, char *err)
{
	char dir[4200], path[4400];
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *d;
	int rc = LM_OK;

	if (lm_fmt(dir, sizeof dir, "%s/ledger", state) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? LM_OK : lm_err(err, LM_EFAIL, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);

		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = reallocarray(names, cap = cap ? cap * 2 : 32, sizeof *nn);

			if (nn == NULL) {
				rc = lm_err(err, LM_EFAIL, "out of memory");
				goto done;
			}
			names = nn;
		}
		if ((names[n] = strdup(de->d_name)) == NULL) {
			rc = lm_err(err, LM_EFAIL, "out of memory");
			goto done;
		}
		n++;
	}
	qsort(names, n, sizeof *names, cmp_str);
	for (size_t i = 0; i < n && rc == LM_OK; i++) {
		cJSON *doc;

		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if ((rc = read_doc(&doc, path, err)) == LM_OK && doc != NULL) {
			rc = fn(doc, path, ctx);
			cJSON_Delete(doc);
		}
	}
done:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

/* ledger: see ledger.h. */
#include "ledger.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

/* ledger_load_last's cache: the last record of one kind of one document, as it was when the
 * document had this inode, size and mtime (every write renames a new, longer file into place).
 * Under last_mu, which also keeps parses to one at a time: 256 workers parsing one document of
 * 256 records at once held 40 MB. A few entries, reused in turn; they live until exit. */
typedef struct {
	char *path, *kind;
	dev_t dev;
	ino_t ino;
	off_t size;
	time_t mtime;
	cJSON *last; /* or NULL: the document has no such record */
} last_entry;

static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;
static last_entry last_cache[8];
static size_t last_next;

static int
same_file(const last_entry *e, const struct stat *st)
{
	return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size && e->mtime == st->st_mtime;
}

/* Under last_mu: the entry for path and kind, or NULL. */
static last_entry *
last_find(const char *path, const char *kind)
{
	for (size_t i = 0; i < sizeof last_cache / sizeof last_cache[0]; i++)
		if (last_cache[i].path && strcmp(last_cache[i].path, path) == 0 &&
		    strcmp(last_cache[i].kind, kind) == 0)
			return &last_cache[i];
	return NULL;
}

/* Under last_mu. Remembers last for path and kind as of st (the stat taken before the read, so
 * the record is never older than the identity it is kept under). */
static void
last_remember(const char *path, const char *kind, const struct stat *st, const cJSON *last)
{
	last_entry *e = last_find(path, kind);

	if (e == NULL) {
		e = &last_cache[last_next++ % (sizeof last_cache / sizeof last_cache[0])];
		free(e->path);
		free(e->kind);
		e->path = strdup(path);
		e->kind = strdup(kind);
	}
	cJSON_Delete(e->last);
	e->last = last ? cJSON_Duplicate(last, 1) : NULL;
	if (e->path == NULL || e->kind == NULL || (last && e->last == NULL)) {
		free(e->path);
		free(e->kind);
		cJSON_Delete(e->last);
		memset(e, 0, sizeof *e);
		return;
	}
	e->dev = st->st_dev, e->ino = st->st_ino, e->size = st->st_size, e->mtime = st->st_mtime;
}

int
ledger_load_last(cJSON **out, int *recorded, const char *state, const cJSON *key, const char *kind, char *err)
{
	char path[4096];
	struct stat st;
	cJSON *doc = NULL;
	const last_entry *e;
	int rc = LM_OK, dummy;

	*out = NULL;
	recorded = recorded ? recorded : &dummy;
	*recorded = 0;
	if (ledger_path(path, sizeof path, state, key) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if (stat(path, &st) != 0)
		return errno == ENOENT ? LM_OK : lm_err(err, LM_EFAIL, "%s: %s", path, strerror(errno));
	pthread_mutex_lock(&last_mu);
	if ((e = last_find(path, kind)) != NULL && same_file(e, &st)) {
		*recorded = 1;
		if (e->last && (*out = cJSON_Duplicate(e->last, 1)) == NULL)
			rc = lm_err(err, LM_EFAIL, "out of memory");
	} else if ((rc = read_doc(&doc, path, err)) == LM_OK && doc != NULL) {
		const cJSON *last = ledger_last(doc, kind);

		*recorded = 1;
		if (last && (*out = cJSON_Duplicate(last, 1)) == NULL)
			rc = lm_err(err, LM_EFAIL, "out of memory");
		else
			last_remember(path, kind, &st, last);
		cJSON_Delete(doc);
	}
	pthread_mutex_unlock(&last_mu);
	return rc;
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

/* One read-modify-write of key's document under its lock: fn changes doc (created empty
 * when absent) and returns 1 to have it written, 0 to leave it, or an error code. */
static int
locked_update(const char *state, const cJSON *key, int (*fn)(cJSON *doc, void *ctx, char *err), void *ctx,
    char *err)
{
	char path[4096], lock[4200], dir[4200];
	cJSON *doc = NULL;
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
	if ((rc = fn(doc, ctx, err)) <= 0)
		goto done;
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

static int
append_one(cJSON *doc, void *ctx, char *err)
{
	cJSON *rec = cJSON_Duplicate(ctx, 1);
	char when[32];

	if (rec == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if (cJSON_GetObjectItemCaseSensitive(rec, "time") == NULL) {
		now_iso(when);
		cJSON_AddStringToObject(rec, "time", when);
	}
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(doc, "records"), rec);
	return 1;
}

int
ledger_append(const char *state, const cJSON *key, const cJSON *record, char *err)
{
	return locked_update(state, key, append_one, (void *)record, err);
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

/* The document names (*.json, not hidden) in dir, sorted; none when dir does not exist.
 * *names (n of them) belong to the caller: free_names. */
static int
list_docs(char ***names, size_t *n, const char *dir, char *err)
{
	struct dirent *de;
	size_t cap = 0;
	DIR *d;
	int rc = LM_OK;

	*names = NULL;
	*n = 0;
	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? LM_OK : lm_err(err, LM_EFAIL, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);

		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		if (*n == cap) {
			char **nn = reallocarray(*names, cap = cap ? cap * 2 : 32, sizeof *nn);

			if (nn == NULL) {
				rc = lm_err(err, LM_EFAIL, "out of memory");
				break;
			}
			*names = nn;
		}
		if (((*names)[*n] = strdup(de->d_name)) == NULL) {
			rc = lm_err(err, LM_EFAIL, "out of memory");
			break;
		}
		(*n)++;
	}
	closedir(d);
	if (*n > 0)
		qsort(*names, *n, sizeof **names, cmp_str);
	return rc;
}

static void
free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int
ledger_each(const char *state, int (*fn)(const cJSON *doc, const char *path, void *ctx), void *ctx, char *err)
{
	char dir[4200], path[4400];
	char **names;
	size_t n;
	int rc;

	if (lm_fmt(dir, sizeof dir, "%s/ledger", state) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if ((rc = list_docs(&names, &n, dir, err)) != LM_OK)
		goto done;
	for (size_t i = 0; i < n && rc == LM_OK; i++) {
		cJSON *doc;

		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if ((rc = read_doc(&doc, path, err)) == LM_OK && doc != NULL) {
			rc = fn(doc, path, ctx);
			cJSON_Delete(doc);
		}
	}
done:
	free_names(names, n);
	return rc;
}

/* ledger_merge: every source document read and checked first, then one locked
 * read-modify-write per document of state. */
typedef struct {
	char *path;          /* the source document */
	cJSON *doc;
	char target[4096];   /* state's document for its key */
	int done;            /* merged already (with an earlier one for the same target) */
} merge_src;

typedef struct {
	merge_src *v;
	size_t n;
} merge_set;

static void
merge_set_free(merge_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].path);
		cJSON_Delete(s->v[i].doc);
	}
	free(s->v);
}

/* Why doc is not a ledger document as ledger.c writes one, or NULL when it is. */
static const char *
doc_problem(const cJSON *doc, char why[128])
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, "format"), *r;
	int i = 0;

	if (!cJSON_IsObject(doc))
		return "not a JSON object";
	if (f != NULL && (!cJSON_IsNumber(f) || f->valuedouble != 1))
		return "unknown \"format\" (want 1)";
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "key")))
		return "no \"key\" object";
	if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "records")))
		return "no \"records\" array";
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		if (!cJSON_IsObject(r) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r, "time"))) {
			snprintf(why, 128, "records[%d]: not an object with a \"time\" string", i);
			return why;
		}
		i++;
	}
	return NULL;
}

static int
add_source(merge_set *s, const char *state, const char *path, char *err)
{
	char *text = NULL, why[128];
	const char *bad;
	merge_src *nv, *m;
	int rc;

	if ((rc = lm_read_file(&text, NULL, path, LEDGER_MAX, err)) != LM_OK)
		return rc;
	if ((nv = reallocarray(s->v, s->n + 1, sizeof *nv)) == NULL) {
		free(text);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	s->v = nv;
	m = memset(&s->v[s->n++], 0, sizeof *m);
	m->doc = cJSON_Parse(text);
	free(text);
	if ((m->path = strdup(path)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if ((bad = m->doc ? doc_problem(m->doc, why) : "not JSON") != NULL)
		return lm_err(err, LM_EINPUT, "%s: not a ledger document: %s; nothing was merged", path, bad);
	if (ledger_path(m->target, sizeof m->target, state, cJSON_GetObjectItemCaseSensitive(m->doc, "key")) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	return LM_OK;
}

/* A document file, a ledger directory, or a state directory holding ledger/. */
static int
add_arg(merge_set *s, const char *state, const char *arg, char *err)
{
	char dir[4200], path[4400];
	struct stat st;
	char **names;
	size_t n;
	int rc;

	if (stat(arg, &st) != 0)
		return lm_err(err, LM_EINPUT, "%s: %s", arg, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return add_source(s, state, arg, err);
	if (lm_fmt(dir, sizeof dir, "%s/ledger", arg) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", arg);
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		snprintf(dir, sizeof dir, "%s", arg);
	if ((rc = list_docs(&names, &n, dir, err)) == LM_OK)
		for (size_t i = 0; i < n && rc == LM_OK; i++)
			rc = lm_fmt(path, sizeof path, "%s/%s", dir, names[i]) < 0 ?
			    lm_err(err, LM_EINPUT, "%s: path too long", dir) : add_source(s, state, path, err);
	free_names(names, n);
	return rc;
}

static const char *
rec_time(const cJSON *r)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "time");

	return cJSON_IsString(t) ? t->valuestring : "";
}

/* Inserts item into array at index at (at the end when at is past it). Not
 * cJSON_InsertItemInArray: cJSON 1.7.15's refuses any index but 0 and the end. */
static void
insert_at(cJSON *array, int at, cJSON *item)
{
	cJSON *next = array->child;

	for (int i = 0; next != NULL && i < at; i++)
		next = next->next;
	if (next == NULL) {
		cJSON_AddItemToArray(array, item);
		return;
	}
	item->next = next;
	item->prev = next->prev; /* the child's prev is the last item */
	if (next == array->child)
		array->child = item;
	else
		next->prev->next = item;
	next->prev = item;
}

/* 1 (err set) when doc, m's target, has another key than m: two keys whose file names collide. */
static int
key_clash(const cJSON *doc, const merge_src *m, char *err)
{
	if (cJSON_Compare(cJSON_GetObjectItemCaseSensitive(doc, "key"), cJSON_GetObjectItemCaseSensitive(m->doc, "key"), 1))
		return 0;
	lm_err(err, LM_EFAIL, "%s: its key differs from that of %s, which has the same name", m->path, m->target);
	return 1;
}

typedef struct {
	merge_set *set;
	size_t first;        /* the first source for this target */
	ledger_merge_counts *out;
} merge_run;

/* Adds to doc the records of every source for the same target not already in it, each after
 * the last record whose time is not later than its own. */
static int
merge_into(cJSON *doc, void *ctx, char *err)
{
	merge_run *r = ctx;
	cJSON *records = cJSON_GetObjectItemCaseSensitive(doc, "records");
	const char *target = r->set->v[r->first].target;
	int changed = 0;

	for (size_t i = r->first; i < r->set->n; i++) {
		merge_src *m = &r->set->v[i];
		const cJSON *rec;

		if (m->done || strcmp(m->target, target) != 0)
			continue;
		m->done = 1;
		if (key_clash(doc, m, err))
			return LM_EFAIL;
		cJSON_ArrayForEach(rec, cJSON_GetObjectItemCaseSensitive(m->doc, "records")) {
			const char *t = rec_time(rec);
			const cJSON *e;
			cJSON *copy;
			int at = 0, k = 0, seen = 0;

			cJSON_ArrayForEach(e, records) {
				k++;
				if (cJSON_Compare(e, rec, 1)) {
					seen = 1;
					break;
				}
				if (strcmp(rec_time(e), t) <= 0)
					at = k;
			}
			if (seen) {
				r->out->present++;
				continue;
			}
			if ((copy = cJSON_Duplicate(rec, 1)) == NULL)
				return lm_err(err, LM_EFAIL, "out of memory");
			insert_at(records, at, copy);
			r->out->merged++;
			changed = 1;
		}
	}
	return changed;
}

int
ledger_merge(ledger_merge_counts *out, const char *state, const char *const *srcs, size_t nsrcs, char *err)
{
	merge_set set = {0};
	int rc = LM_OK;

	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < nsrcs && rc == LM_OK; i++)
		rc = add_arg(&set, state, srcs[i], err);
	/* A document of state that does not parse stops the merge before anything is written. */
	for (size_t i = 0; i < set.n && rc == LM_OK; i++) {
		cJSON *doc;

		if ((rc = read_doc(&doc, set.v[i].target, err)) == LM_OK && doc != NULL && key_clash(doc, &set.v[i], err))
			rc = LM_EFAIL;
		cJSON_Delete(doc);
	}
	out->sources = (int)set.n;
	for (size_t i = 0; i < set.n && rc == LM_OK; i++) {
		merge_run r = {.set = &set, .first = i, .out = out};
		int before = out->merged;

		if (set.v[i].done)
			continue;
		rc = locked_update(state, cJSON_GetObjectItemCaseSensitive(set.v[i].doc, "key"), merge_into, &r, err);
		if (rc == LM_OK && out->merged > before)
			out->documents++;
	}
	merge_set_free(&set);
	return rc;
}

/* ledger_merge: the records of ledgers fetched from other machines (ledger.h): every source
 * read and checked first, then one transaction into this ledger's database. */
#include "core/ledger.h"
#include "core/ledger_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

/* A source document: where it came from (for messages) and the document. */
typedef struct {
	char *path;
	cJSON *doc;
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

/* Adds doc (taken) from path to s, checked: a document that is not a ledger's is an input
 * error naming path and what is wrong. */
static int
add_doc(merge_set *s, const char *path, cJSON *doc, char *err)
{
	merge_src *nv;
	char why[256];
	const char *bad = doc ? ledger_doc_problem(doc, why) : "not JSON (or nested too deep)";

	if (bad != NULL) {
		cJSON_Delete(doc);
		return lm_err(err, LM_EINPUT, "%s: not a ledger document: %s; nothing was merged", path, bad);
	}
	if ((nv = reallocarray(s->v, s->n + 1, sizeof *nv)) == NULL) {
		cJSON_Delete(doc);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	s->v = nv;
	nv[s->n].doc = doc;
	if ((nv[s->n++].path = strdup(path)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	return LM_OK;
}

/* A JSON file: one document, or an array of them (`ledger show --json`, "path" members and all). */
static int
add_json(merge_set *s, const char *path, char *err)
{
	char *text = NULL, where[4400];
	cJSON *all, *e;
	int rc, i = 0;

	if ((rc = legacy_read(&text, path, err)) != LM_OK)
		return rc == LM_EFAIL ? LM_EINPUT : rc;
	if (text == NULL)
		return lm_err(err, LM_EINPUT, "%s: %s", path, strerror(ENOENT));
	all = cJSON_Parse(text);
	free(text);
	if (!cJSON_IsArray(all))
		return add_doc(s, path, all, err);
	rc = LM_OK;
	while (rc == LM_OK && (e = cJSON_DetachItemFromArray(all, 0)) != NULL) {
		snprintf(where, sizeof where, "%s[%d]", path, i++);
		rc = add_doc(s, where, e, err);
	}
	cJSON_Delete(all);
	return rc;
}

/* Every document of db (a ledger's database at path, read through SQLite) into s. */
static int
add_db_docs(merge_set *s, sqlite3 *db, const char *path, char *err)
{
	char what[200], where[4400];
	sqlite3_stmt *k = NULL, *r = NULL;
	int rc = LM_OK, step;

	if (store_identity(db, what) != LM_OK)
		return lm_err(err, LM_EINPUT, "%s: not a ledger database (%s); nothing was merged", path, what);
	if (sqlite3_prepare_v2(db, "SELECT id, name, key FROM keys ORDER BY name, id", -1, &k, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT record FROM records WHERE key_id = ? ORDER BY sorttime, id", -1, &r, NULL) !=
	    SQLITE_OK) {
		rc = lm_err(err, LM_EINPUT, "%s: %s; nothing was merged", path, sqlite3_errmsg(db));
		goto done;
	}
	while (rc == LM_OK && (step = sqlite3_step(k)) == SQLITE_ROW) {
		cJSON *doc = cJSON_CreateObject(), *recs = cJSON_AddArrayToObject(doc, "records");

		snprintf(where, sizeof where, "%s#%s", path, (const char *)sqlite3_column_text(k, 1));
		cJSON_AddItemToObject(doc, "key", cJSON_Parse((const char *)sqlite3_column_text(k, 2)));
		sqlite3_reset(r);
		sqlite3_bind_int64(r, 1, sqlite3_column_int64(k, 0));
		while ((step = sqlite3_step(r)) == SQLITE_ROW) {
			cJSON *rec = cJSON_Parse((const char *)sqlite3_column_text(r, 0));

			cJSON_AddItemToArray(recs, rec ? rec : cJSON_CreateNull()); /* a null: refused as no record */
		}
		rc = step != SQLITE_DONE ? lm_err(err, LM_EINPUT, "%s: %s; nothing was merged", where, sqlite3_errmsg(db)) :
		    add_doc(s, where, doc, err);
	}
	if (rc == LM_OK && step != SQLITE_DONE)
		rc = lm_err(err, LM_EINPUT, "%s: %s; nothing was merged", path, sqlite3_errmsg(db));
done:
	sqlite3_finalize(k);
	sqlite3_finalize(r);
	return rc;
}

/* A database file at path (st): through this process's connection when it has one open (the
 * target itself, or another state it used), else a read-only one of its own. */
static int
add_db(merge_set *s, const char *path, const struct stat *st, char *err)
{
	ledger_db *open = store_open_as(st->st_dev, st->st_ino);
	sqlite3 *db = NULL;
	int rc;

	if (open != NULL)
		return add_db_docs(s, open->db, path, err);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = lm_err(err, LM_EINPUT, "%s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close_v2(db);
		return rc;
	}
	sqlite3_busy_timeout(db, 60000);
	rc = add_db_docs(s, db, path, err);
	sqlite3_close_v2(db);
	return rc;
}

/* Whether the regular file at path begins as an SQLite database does. Read only when this
 * process has no connection to it (add_db uses that one). */
static int
is_db(const char *path, const struct stat *st)
{
	char head[16] = "";
	int fd;

	if (store_open_as(st->st_dev, st->st_ino) != NULL)
		return 1;
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) < 0)
		return 0;
	if (read(fd, head, sizeof head) != (ssize_t)sizeof head)
		head[0] = '\0';
	close(fd);
	return memcmp(head, "SQLite format 3", 16) == 0;
}

/* The JSON documents of directory dir (the marker skipped). */
static int
add_dir(merge_set *s, const char *dir, char *err)
{
	char path[4400], **names;
	size_t n;
	int rc;

	if ((rc = legacy_list(&names, &n, dir, err)) != LM_OK)
		return rc == LM_EFAIL ? LM_EINPUT : rc;
	for (size_t i = 0; i < n && rc == LM_OK; i++)
		rc = lm_fmt(path, sizeof path, "%s/%s", dir, names[i]) < 0 ? lm_err(err, LM_EINPUT, "%s: path too long",
		    dir) : add_json(s, path, err);
	legacy_free(names, n);
	return rc;
}

/* A file (JSON or a database), a state directory, or a directory of JSON documents. */
static int
add_arg(merge_set *s, const char *arg, char *err)
{
	char db[4200], dir[4200];
	struct stat st;
	int rc;

	if (stat(arg, &st) != 0)
		return lm_err(err, LM_EINPUT, "%s: %s", arg, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return S_ISREG(st.st_mode) && is_db(arg, &st) ? add_db(s, arg, &st, err) : add_json(s, arg, err);
	if (lm_fmt(db, sizeof db, "%s/ledger.db", arg) < 0 || lm_fmt(dir, sizeof dir, "%s/ledger", arg) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", arg);
	if (stat(db, &st) == 0 && (rc = add_db(s, db, &st, err)) != LM_OK)
		return rc;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		snprintf(dir, sizeof dir, "%s", arg);
	return add_dir(s, dir, err);
}

/* Merges s's documents into d (one transaction; blocked image versions skipped, counted in
 * *bad with the first one's message in first). */
static int
merge_all(ledger_db *d, merge_set *s, ledger_merge_counts *out, int *bad, char *first, char *err)
{
	sqlite3_int64 *touched = calloc(s->n + 1, sizeof *touched);
	size_t nt = 0;
	int rc;

	if (touched == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if ((rc = store_exec(d, "BEGIN IMMEDIATE", err)) != LM_OK) {
		free(touched);
		return rc;
	}
	for (size_t i = 0; i < s->n && rc == LM_OK; i++) {
		const cJSON *key = lj_get(s->v[i].doc, "key"), *r;
		const ledger_bad *b = store_bad(d, key);
		sqlite3_int64 id;
		int present, added = 0;

		/* An image version of this ledger that does not read costs only itself. */
		if (b != NULL) {
			if ((*bad)++ == 0)
				snprintf(first, LM_ERRLEN, "%s", b->msg);
			continue;
		}
		if ((id = store_key_id(d, key, 1, err)) < 0) {
			rc = LM_EFAIL;
			break;
		}
		cJSON_ArrayForEach(r, lj_get(s->v[i].doc, "records")) {
			if ((rc = store_has(d, id, r, 0, &present, err)) != LM_OK ||
			    (!present && (rc = store_insert(d, id, r, err)) != LM_OK))
				break;
			present ? out->present++ : (out->merged++, added++);
		}
		if (added) {
			size_t j;

			for (j = 0; j < nt && touched[j] != id; j++)
				;
			if (j == nt)
				touched[nt++] = id, out->documents++;
		}
	}
	free(touched);
	if (rc == LM_OK)
		rc = store_exec(d, "COMMIT", err);
	if (rc != LM_OK) {
		sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
		out->merged = out->documents = out->present = 0;
	}
	return rc;
}

int
ledger_merge(ledger_merge_counts *out, const char *state, const char *const *srcs, size_t nsrcs, char *err)
{
	char first[LM_ERRLEN] = "";
	merge_set set = {0};
	ledger_db *d = NULL;
	int rc = LM_OK, bad = 0, records = 0;

	memset(out, 0, sizeof *out);
	/* Read under the ledger's lock: no connection of this process opens meanwhile, so a source
	 * read as a file is none of them (is_db). */
	store_lock();
	for (size_t i = 0; i < nsrcs && rc == LM_OK; i++)
		rc = add_arg(&set, srcs[i], err);
	store_unlock();
	out->sources = (int)set.n;
	for (size_t i = 0; i < set.n; i++)
		records += cJSON_GetArraySize(lj_get(set.v[i].doc, "records"));
	/* Nothing to merge writes nothing, not even an empty database. */
	if (rc == LM_OK && (rc = legacy_store_get(&d, state, records > 0, err)) == LM_OK && d != NULL)
		rc = merge_all(d, &set, out, &bad, first, err);
	store_put(d);
	if (rc == LM_OK && bad > 0)
		rc = lm_err(err, LM_EFAIL, "%s; %s not merged into it, every other document was", first,
		    bad > 1 ? "these and more sources were" : "its sources were");
	merge_set_free(&set);
	return rc;
}

/* ledger_query: the ledger's reads and its append (ledger.h) over the database of
 * ledger_store.c: each one indexed query, or one INSERT in one transaction. */
#include "core/ledger.h"
#include "core/ledger_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* The error for key's image version when a JSON document of it did not read, or LM_OK. */
static int
blocked(const ledger_db *d, const cJSON *key, char *err)
{
	const ledger_bad *b = store_bad(d, key);

	return b ? lm_err(err, LM_EFAIL, "%s", b->msg) : LM_OK;
}

int
ledger_append(const char *state, const cJSON *key, const cJSON *record, char *err)
{
	cJSON *rec = cJSON_Duplicate(record, 1);
	char when[32], why[160];
	const char *bad;
	ledger_db *d = NULL;
	sqlite3_int64 id;
	int rc;

	if (rec == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if (cJSON_GetObjectItemCaseSensitive(rec, "time") == NULL) {
		ledger_now(when);
		cJSON_AddStringToObject(rec, "time", when);
	}
	if ((bad = ledger_record_problem(rec, why)) != NULL) {
		cJSON_Delete(rec);
		return lm_err(err, LM_EINPUT, "ledger: record not written: %s", bad);
	}
	if ((rc = legacy_store_get(&d, state, 1, err)) != LM_OK || (rc = blocked(d, key, err)) != LM_OK)
		goto done;
	/* IMMEDIATE: the write lock first (waiting on another writer), so it never fails half-way. */
	if ((rc = store_exec(d, "BEGIN IMMEDIATE", err)) != LM_OK)
		goto done;
	if ((id = store_key_id(d, key, 1, err)) < 0)
		rc = LM_EFAIL;
	else if ((rc = store_insert(d, id, rec, err)) == LM_OK && store_keep() > 0)
		rc = prune_after_append(d, id, rec, store_keep(), err);
	if (rc == LM_OK)
		rc = store_exec(d, "COMMIT", err);
	if (rc != LM_OK)
		sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
done:
	store_put(d);
	cJSON_Delete(rec);
	return rc;
}

/* Key key_id's document in *out ({"format", "key", "records"}, in time order; caller frees);
 * name (ledger_doc_name) for the error of a record that is not JSON. */
static int
build_doc(cJSON **out, ledger_db *d, sqlite3_int64 key_id, const cJSON *key, const char *name, char *err)
{
	sqlite3_stmt *s = store_prep(d, "SELECT id, record FROM records WHERE key_id = ? ORDER BY sorttime, id", err);
	cJSON *doc = cJSON_CreateObject(), *recs = NULL, *r;
	int rc = LM_EFAIL, step;

	*out = NULL;
	if (s == NULL || doc == NULL || !cJSON_AddNumberToObject(doc, "format", 1) ||
	    !cJSON_AddItemToObject(doc, "key", cJSON_Duplicate(key, 1)) || (recs = cJSON_AddArrayToObject(doc, "records")) == NULL) {
		if (s != NULL)
			lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	sqlite3_bind_int64(s, 1, key_id);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		if ((r = cJSON_Parse((const char *)sqlite3_column_text(s, 1))) == NULL) {
			lm_err(err, LM_EFAIL, "%s: record %lld is not JSON: a corrupt ledger database; it is left as it is and this "
			    "image version is not read until the record is fixed or removed", name,
			    (long long)sqlite3_column_int64(s, 0));
			goto done;
		}
		cJSON_AddItemToArray(recs, r);
	}
	if (step != SQLITE_DONE) {
		store_fail(d, "reading", err);
		goto done;
	}
	*out = doc, doc = NULL;
	rc = LM_OK;
done:
	sqlite3_finalize(s);
	cJSON_Delete(doc);
	return rc;
}

int
ledger_load(cJSON **out, const char *state, const cJSON *key, char *err)
{
	char name[4300];
	ledger_db *d = NULL;
	sqlite3_int64 id;
	int rc;

	*out = NULL;
	if (ledger_doc_name(name, sizeof name, state, key) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if ((rc = legacy_store_get(&d, state, 0, err)) != LM_OK || d == NULL || (rc = blocked(d, key, err)) != LM_OK)
		goto done;
	if ((id = store_key_id(d, key, 0, err)) < 0)
		rc = LM_EFAIL;
	else if (id > 0)
		rc = build_doc(out, d, id, key, name, err);
done:
	store_put(d);
	return rc;
}

/* One kind's verdict (ledger_verdict): the newest record by sorttime, a fail first at the same
 * time, then the later written; *best replaced when this one is newer by that order. */
static int
verdict_of_kind(ledger_db *d, sqlite3_int64 key_id, const char *kind, size_t klen, const ledger_want *w,
    char **best, char best_time[40], int *best_fail, sqlite3_int64 *best_id, char *err)
{
	char sql[600];
	sqlite3_stmt *s;
	int rc = LM_OK, step;

	/* The filters as SQL, so the index (key_id, kind, payload, sorttime) answers it. */
	snprintf(sql, sizeof sql, "SELECT id, sorttime, verdict IS 'fail', record FROM records WHERE key_id = ?1 AND "
	    "kind = ?2%s%s%s AND (cause IS NULL OR cause <> 'workload') ORDER BY sorttime DESC, verdict IS 'fail' DESC, "
	    "id DESC LIMIT 1", w->any_payload ? "" : w->payload ? " AND payload = ?3" : " AND payload IS NOT NULL",
	    !w->any_payload && w->profile ? " AND profile = ?4" : "", !w->any_payload && w->workload ? " AND workload = ?5" : "");
	if ((s = store_prep(d, sql, err)) == NULL)
		return LM_EFAIL;
	sqlite3_bind_int64(s, 1, key_id);
	sqlite3_bind_text(s, 2, kind, (int)klen, SQLITE_TRANSIENT);
	store_bind_text(s, 3, w->payload);
	store_bind_text(s, 4, w->profile);
	store_bind_text(s, 5, w->workload);
	if ((step = sqlite3_step(s)) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(s, 1);
		int fail = sqlite3_column_int(s, 2), c = *best ? strcmp(t, best_time) : 1;
		sqlite3_int64 id = sqlite3_column_int64(s, 0);

		if (c > 0 || (c == 0 && (fail > *best_fail || (fail == *best_fail && id > *best_id)))) {
			free(*best);
			if ((*best = strdup((const char *)sqlite3_column_text(s, 3))) == NULL)
				rc = lm_err(err, LM_EFAIL, "out of memory");
			snprintf(best_time, 40, "%s", t);
			*best_fail = fail, *best_id = id;
		}
	} else if (step != SQLITE_DONE)
		rc = store_fail(d, "reading", err);
	sqlite3_finalize(s);
	return rc;
}

int
ledger_load_verdict(cJSON **out, int *recorded, const char *state, const cJSON *key, const ledger_want *w,
    char *err)
{
	char *best = NULL, best_time[40] = "", name[4300];
	ledger_db *d = NULL;
	sqlite3_int64 id, best_id = 0;
	int rc, dummy, best_fail = 0;

	*out = NULL;
	recorded = recorded ? recorded : &dummy;
	*recorded = 0;
	if ((rc = legacy_store_get(&d, state, 0, err)) != LM_OK || d == NULL || (rc = blocked(d, key, err)) != LM_OK)
		goto done;
	if ((id = store_key_id(d, key, 0, err)) < 0) {
		rc = LM_EFAIL;
		goto done;
	}
	*recorded = id > 0;
	for (const char *k = w->kinds; id > 0 && rc == LM_OK && *k; k += strcspn(k, "|"), k += *k == '|')
		if (strcspn(k, "|") > 0)
			rc = verdict_of_kind(d, id, k, strcspn(k, "|"), w, &best, best_time, &best_fail, &best_id, err);
	if (rc == LM_OK && best != NULL && (*out = cJSON_Parse(best)) == NULL) {
		ledger_doc_name(name, sizeof name, state, key);
		rc = lm_err(err, LM_EFAIL, "%s: record %lld is not JSON: a corrupt ledger database; it is left as it is",
		    name, (long long)best_id);
	}
done:
	store_put(d);
	free(best);
	return rc;
}

int
ledger_deployed(int *found, const char *state, const cJSON *key, const char *vm, const char *sha, char *err)
{
	ledger_db *d = NULL;
	sqlite3_stmt *s = NULL;
	sqlite3_int64 id;
	int rc, step;

	*found = 0;
	if ((rc = legacy_store_get(&d, state, 0, err)) != LM_OK || d == NULL || (rc = blocked(d, key, err)) != LM_OK)
		goto done;
	if ((id = store_key_id(d, key, 0, err)) <= 0) {
		rc = id < 0 ? LM_EFAIL : LM_OK;
		goto done;
	}
	if ((s = store_prep(d, "SELECT 1 FROM records WHERE key_id = ? AND vm = ? AND payload = ? AND ((kind = 'deploy' "
	    "AND verdict = 'pass') OR kind = '" LEDGER_OBSERVE "') LIMIT 1", err)) == NULL) {
		rc = LM_EFAIL;
		goto done;
	}
	sqlite3_bind_int64(s, 1, id);
	store_bind_text(s, 2, vm);
	store_bind_text(s, 3, sha);
	if ((step = sqlite3_step(s)) == SQLITE_ROW)
		*found = 1;
	else if (step != SQLITE_DONE)
		rc = store_fail(d, "reading", err);
done:
	sqlite3_finalize(s);
	store_put(d);
	return rc;
}

/* ledger_each's list: every image version's name, id and key (the key's JSON), and every JSON
 * document left unread, by name. */
typedef struct {
	char name[64];
	sqlite3_int64 id; /* 0: a bad document */
	char *key, *msg;
} each_item;

static int
cmp_item(const void *a, const void *b)
{
	return strcmp(((const each_item *)a)->name, ((const each_item *)b)->name);
}

static void
items_free(each_item *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].key), free(v[i].msg);
	free(v);
}

static int
bad_named(const ledger_db *d, const char *name)
{
	for (size_t i = 0; i < d->nbad; i++)
		if (strcmp(d->bad[i].name, name) == 0)
			return 1;
	return 0;
}

/* The list, read under the lock: *v (n of them, sorted) belongs to the caller (items_free). */
static int
each_list(each_item **v, size_t *n, ledger_db *d, char *err)
{
	sqlite3_stmt *s = store_prep(d, "SELECT name, id, key FROM keys ORDER BY name, id", err);
	size_t cap = 16 + d->nbad;
	int step;

	*n = 0;
	if (s == NULL || (*v = calloc(cap, sizeof **v)) == NULL) {
		sqlite3_finalize(s);
		return s ? lm_err(err, LM_EFAIL, "out of memory") : LM_EFAIL;
	}
	for (size_t i = 0; i < d->nbad; i++) {
		snprintf((*v)[*n].name, sizeof (*v)[*n].name, "%s", d->bad[i].name);
		if (((*v)[(*n)++].msg = strdup(d->bad[i].msg)) == NULL)
			goto oom;
	}
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		each_item *e;

		if (*n == cap) {
			each_item *nv = reallocarray(*v, cap *= 2, sizeof *nv);

			if (nv == NULL)
				goto oom;
			*v = nv;
		}
		e = memset(&(*v)[*n], 0, sizeof *e);
		snprintf(e->name, sizeof e->name, "%s", (const char *)sqlite3_column_text(s, 0));
		if (bad_named(d, e->name))
			continue; /* named once, as the document that did not read */
		(*n)++;
		e->id = sqlite3_column_int64(s, 1);
		if ((e->key = strdup((const char *)sqlite3_column_text(s, 2))) == NULL)
			goto oom;
	}
	sqlite3_finalize(s);
	if (step != SQLITE_DONE)
		return store_fail(d, "reading", err);
	qsort(*v, *n, sizeof **v, cmp_item);
	return LM_OK;
oom:
	sqlite3_finalize(s);
	return lm_err(err, LM_EFAIL, "out of memory");
}

/* Item e's document (*doc NULL and LM_EFAIL, err set, when it does not read). */
static int
each_doc(cJSON **doc, const char *state, const each_item *e, const char *name, char *err)
{
	cJSON *key = NULL;
	ledger_db *d = NULL;
	int rc;

	*doc = NULL;
	if (e->id == 0)
		return lm_err(err, LM_EFAIL, "%s", e->msg);
	if ((key = cJSON_Parse(e->key)) == NULL)
		return lm_err(err, LM_EFAIL, "%s: its key is not JSON: a corrupt ledger database; it is left as it is", name);
	if ((rc = legacy_store_get(&d, state, 0, err)) == LM_OK && d != NULL && (rc = blocked(d, key, err)) == LM_OK)
		rc = build_doc(doc, d, e->id, key, name, err);
	store_put(d);
	cJSON_Delete(key);
	return rc;
}

int
ledger_each(const char *state, int (*fn)(const cJSON *doc, const char *path, void *ctx), void *ctx, char *err)
{
	char name[4300], first[LM_ERRLEN] = "";
	each_item *v = NULL;
	ledger_db *d = NULL;
	size_t n = 0;
	int rc, bad = 0;

	if ((rc = legacy_store_get(&d, state, 0, err)) != LM_OK || d == NULL)
		return rc;
	rc = each_list(&v, &n, d, err);
	store_put(d);
	/* fn runs without the lock: it may use the ledger itself. */
	for (size_t i = 0; i < n && rc == LM_OK; i++) {
		cJSON *doc;

		snprintf(name, sizeof name, "%s/ledger.db#%s", state, v[i].name);
		/* One document that does not read costs only its own image version. */
		if (each_doc(&doc, state, &v[i], name, bad ? NULL : first) != LM_OK) {
			bad++;
			continue;
		}
		if (doc != NULL)
			rc = fn(doc, name, ctx);
		cJSON_Delete(doc);
	}
	if (rc == LM_OK && bad > 0)
		rc = bad > 1 ? lm_err(err, LM_EFAIL, "%s (%d unreadable documents in all); every other document was "
		    "read", first, bad) : lm_err(err, LM_EFAIL, "%s; every other document was read", first);
	items_free(v, n);
	return rc;
}

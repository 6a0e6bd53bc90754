/* ledger_prune: bounded history (ledger.h): what ledger_prune removes, and the same rule for
 * one VM after an append when a retention is set. */
#include "core/ledger.h"
#include "core/ledger_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* Never removed: what gates (ledger.h). SQL over a row of records. */
#define GATES "(kind IN ('validate', 'golden') OR (kind = 'deploy' AND verdict IS 'fail' AND cause IS NOT 'workload'))"

/* The ids ledger_prune removes, into temp.prune: beyond each VM's newest ?1 (what clones leave,
 * observations and reconciled records: beyond the image version's newest ?1), not gating, and
 * not the newest by place of their kind, payload, profile and workload (cause "workload" last:
 * never a verdict). The newest by place is also the verdict but where a fail wins a tie, and a
 * fail that is not the workload's gates: kept. */
static const char prune_sql[] =
    "INSERT INTO temp.prune SELECT id FROM (SELECT id, kind, verdict, cause, "
    " row_number() OVER (PARTITION BY key_id, reconciled, CASE WHEN reconciled = 1 THEN NULL ELSE vm END "
    "  ORDER BY sorttime DESC, id DESC) AS hist, "
    " row_number() OVER (PARTITION BY key_id, kind, payload, profile, workload ORDER BY cause IS 'workload', "
    "  sorttime DESC, id DESC) AS place "
    " FROM records) WHERE hist > ?1 AND place > 1 AND NOT " GATES;

/* Per image version and kind, what temp.prune holds, and what the version keeps. */
static const char report_sql[] =
    "SELECT k.id, k.name, k.key, r.kind, count(*), (SELECT count(*) FROM records x WHERE x.key_id = k.id AND "
    " x.id NOT IN temp.prune) FROM temp.prune p JOIN records r ON r.id = p.id JOIN keys k ON k.id = r.key_id "
    "GROUP BY k.id, r.kind ORDER BY k.name, k.id, r.kind";

/* The report of temp.prune into out's "versions", "removed" and "kept" (of those versions). */
static int
prune_report(ledger_db *d, cJSON *out, char *err)
{
	sqlite3_stmt *s = store_prep(d, report_sql, err);
	cJSON *versions = cJSON_AddArrayToObject(out, "versions"), *v = NULL;
	sqlite3_int64 last = 0;
	double removed = 0, kept = 0;
	int step;

	if (s == NULL)
		return LM_EFAIL;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(s, 3);
		double n = (double)sqlite3_column_int64(s, 4);
		char doc[4400];

		if (v == NULL || sqlite3_column_int64(s, 0) != last) {
			last = sqlite3_column_int64(s, 0);
			v = cJSON_CreateObject();
			cJSON_AddItemToObject(v, "key", cJSON_Parse((const char *)sqlite3_column_text(s, 2)));
			snprintf(doc, sizeof doc, "%s/ledger.db#%s", d->state, (const char *)sqlite3_column_text(s, 1));
			cJSON_AddStringToObject(v, "document", doc);
			cJSON_AddNumberToObject(v, "removed", 0);
			cJSON_AddNumberToObject(v, "kept", (double)sqlite3_column_int64(s, 5));
			cJSON_AddObjectToObject(v, "kinds");
			cJSON_AddItemToArray(versions, v);
			kept += (double)sqlite3_column_int64(s, 5);
		}
		cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "removed"),
		    cJSON_GetObjectItemCaseSensitive(v, "removed")->valuedouble + n);
		cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(v, "kinds"), kind ? kind : "(none)", n);
		removed += n;
	}
	sqlite3_finalize(s);
	if (step != SQLITE_DONE)
		return store_fail(d, "reading", err);
	cJSON_AddNumberToObject(out, "removed", removed);
	cJSON_AddNumberToObject(out, "kept", kept);
	return LM_OK;
}

int
ledger_prune(cJSON **out, const char *state, int keep, int dry_run, char *err)
{
	ledger_db *d = NULL;
	sqlite3_stmt *s = NULL;
	int rc;

	if ((*out = cJSON_CreateObject()) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	cJSON_AddNumberToObject(*out, "keep", keep);
	cJSON_AddBoolToObject(*out, "dryRun", dry_run);
	if (keep < 1)
		return lm_err(err, LM_EINPUT, "ledger prune: keep must be at least 1, not %d", keep);
	if ((rc = legacy_store_get(&d, state, 0, err)) != LM_OK)
		return rc;
	if (d == NULL) {
		cJSON_AddArrayToObject(*out, "versions");
		cJSON_AddNumberToObject(*out, "removed", 0);
		cJSON_AddNumberToObject(*out, "kept", 0);
		return LM_OK;
	}
	if ((rc = store_exec(d, "BEGIN IMMEDIATE", err)) != LM_OK)
		goto done;
	if ((rc = store_exec(d, "CREATE TEMP TABLE IF NOT EXISTS prune (id INTEGER PRIMARY KEY); DELETE FROM temp.prune",
	    err)) != LM_OK || (s = store_prep(d, prune_sql, err)) == NULL) {
		rc = LM_EFAIL;
		goto end;
	}
	sqlite3_bind_int(s, 1, keep);
	if (sqlite3_step(s) != SQLITE_DONE)
		rc = store_fail(d, "reading", err);
	if (rc == LM_OK)
		rc = prune_report(d, *out, err);
	if (rc == LM_OK && !dry_run)
		rc = store_exec(d, "DELETE FROM records WHERE id IN temp.prune", err);
end:
	sqlite3_finalize(s);
	if (rc == LM_OK)
		rc = store_exec(d, "COMMIT", err);
	if (rc != LM_OK)
		sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
	/* The pages it freed back to the file system (auto_vacuum = INCREMENTAL). */
	if (rc == LM_OK && !dry_run)
		sqlite3_exec(d->db, "DELETE FROM temp.prune; PRAGMA incremental_vacuum", NULL, NULL, NULL);
done:
	store_put(d);
	return rc;
}

/* At most this many records go per append: a retention set on a large ledger catches up over
 * the next appends instead of making one of them slow. */
#define TRIM_MAX 256

/* Whether record id (its columns in c, from column 1: kind, payload, profile, workload,
 * sorttime, cause) is the newest by place of its kind, payload, profile and workload. */
static int
newest_of_group(ledger_db *d, sqlite3_stmt *c, sqlite3_int64 id, int *newest, char *err)
{
	sqlite3_stmt *s = store_prep(d, "SELECT 1 FROM records WHERE key_id = ?1 AND kind IS ?2 AND payload IS ?3 AND "
	    "profile IS ?4 AND workload IS ?5 AND cause IS NOT 'workload' AND (sorttime > ?6 OR (sorttime = ?6 AND "
	    "id > ?7)) LIMIT 1", err);
	int step;

	*newest = 0;
	if (s == NULL)
		return LM_EFAIL;
	sqlite3_bind_value(s, 1, sqlite3_column_value(c, 7));
	for (int i = 1; i <= 5; i++)
		sqlite3_bind_value(s, i + 1, sqlite3_column_value(c, i));
	sqlite3_bind_int64(s, 7, id);
	if ((step = sqlite3_step(s)) == SQLITE_DONE)
		*newest = 1;
	sqlite3_finalize(s);
	return step == SQLITE_DONE || step == SQLITE_ROW ? LM_OK : store_fail(d, "reading", err);
}

int
prune_after_append(ledger_db *d, sqlite3_int64 key_id, const cJSON *rec, int keep, char *err)
{
	const char *kind = lm_jstr(rec, "kind");
	int clone = cJSON_IsTrue(lj_get(rec, "reconciled")) || (kind != NULL && strcmp(kind, LEDGER_OBSERVE) == 0);
	int rc = LM_OK, step = SQLITE_DONE, newest;
	sqlite3_int64 gone[TRIM_MAX];
	size_t n = 0;
	sqlite3_stmt *c, *del;
	char sql[600];

	/* This VM's records past its newest keep, or the image version's clones' past theirs. */
	snprintf(sql, sizeof sql, "SELECT id, kind, payload, profile, workload, sorttime, cause, key_id, %s AS gates "
	    "FROM records WHERE key_id = ?1 AND %s ORDER BY sorttime DESC, id DESC LIMIT %d OFFSET ?3", GATES,
	    clone ? "reconciled = 1" : "vm IS ?2 AND reconciled = 0", TRIM_MAX);
	if ((c = store_prep(d, sql, err)) == NULL)
		return LM_EFAIL;
	sqlite3_bind_int64(c, 1, key_id);
	if (!clone)
		sqlite3_bind_text(c, 2, lm_jstr(rec, "vm"), -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(c, 3, keep);
	while (rc == LM_OK && n < TRIM_MAX && (step = sqlite3_step(c)) == SQLITE_ROW) {
		sqlite3_int64 id = sqlite3_column_int64(c, 0);
		const char *cause = (const char *)sqlite3_column_text(c, 6);

		newest = 0;
		if (!sqlite3_column_int(c, 8) && (cause == NULL || strcmp(cause, "workload") != 0))
			rc = newest_of_group(d, c, id, &newest, err);
		if (rc == LM_OK && !sqlite3_column_int(c, 8) && !newest)
			gone[n++] = id;
	}
	if (rc == LM_OK && step != SQLITE_DONE && step != SQLITE_ROW)
		rc = store_fail(d, "reading", err);
	sqlite3_finalize(c);
	/* Removed once the walk is over: never under a pending SELECT of the same table. */
	if (rc != LM_OK || n == 0 || (del = store_prep(d, "DELETE FROM records WHERE id = ?", err)) == NULL)
		return rc != LM_OK || n == 0 ? rc : LM_EFAIL;
	for (size_t i = 0; i < n && rc == LM_OK; i++) {
		sqlite3_reset(del);
		sqlite3_bind_int64(del, 1, gone[i]);
		if (sqlite3_step(del) != SQLITE_DONE)
			rc = store_fail(d, "writing", err);
	}
	sqlite3_finalize(del);
	return rc;
}

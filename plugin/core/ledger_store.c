/* ledger_store: the ledger's database, <state>/ledger.db (ledger.h, ledger_int.h). One
 * connection per database per process, every use under one lock (SQLite's own locks, with a
 * busy timeout, between processes). */
#include "core/ledger.h"
#include "core/ledger_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

#define BUSY_MS 60000 /* how long a writer waits for another before it fails */
#define OPEN_MAX 8     /* databases kept open by one process */

/* Made in a temporary file, then linked into place: <state>/ledger.db is never a database
 * without this schema. The record's JSON is the record; the other columns are what lookups
 * need, taken from it (NULL where it has no such string): sorttime is its "time" as
 * ledger_sort_time makes it; reconciled is 1 for what a clone leaves, an observation or a
 * record with "reconciled": true (ledger_prune bounds them per image version, not per VM).
 * auto_vacuum: ledger_prune gives freed pages back. */
static const char schema[] =
    "PRAGMA auto_vacuum = INCREMENTAL;"
    "PRAGMA journal_mode = WAL;"
    "PRAGMA application_id = " LM_STR(LEDGER_APP_ID) ";"
    "PRAGMA user_version = " LM_STR(LEDGER_SCHEMA) ";"
    "BEGIN;"
    "CREATE TABLE keys (id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE, name TEXT NOT NULL, key TEXT NOT NULL);"
    "CREATE TABLE records (id INTEGER PRIMARY KEY, key_id INTEGER NOT NULL REFERENCES keys (id), kind TEXT,"
    " vm TEXT, verdict TEXT, sorttime TEXT NOT NULL, payload TEXT, profile TEXT, workload TEXT, cause TEXT,"
    " reconciled INTEGER NOT NULL DEFAULT 0, record TEXT NOT NULL);"
    "CREATE INDEX records_gate ON records (key_id, kind, payload, sorttime);"
    "CREATE INDEX records_kind ON records (key_id, kind, sorttime);"
    "CREATE INDEX records_vm ON records (key_id, vm, sorttime);"
    "CREATE INDEX records_reconciled ON records (key_id, sorttime) WHERE reconciled = 1;"
    "COMMIT;";

static pthread_mutex_t store_mu = PTHREAD_MUTEX_INITIALIZER;
static ledger_db open_dbs[OPEN_MAX];
static size_t open_next;
static int keep_n;

void
ledger_retention(int keep)
{
	keep_n = keep > 0 ? keep : 0;
}

int
store_keep(void)
{
	return keep_n;
}

/* Forgets d; closes its connection when this process opened it (a forked child only drops it:
 * SQLite's connections do not cross a fork). */
static void
db_forget(ledger_db *d)
{
	if (d->db != NULL && d->pid == getpid()) {
		for (size_t i = 0; i < sizeof d->cached / sizeof *d->cached; i++)
			sqlite3_finalize(d->cached[i]);
		sqlite3_close_v2(d->db);
	}
	for (size_t i = 0; i < d->nbad; i++)
		free(d->bad[i].msg);
	free(d->bad);
	free(d->state);
	free(d->path);
	memset(d, 0, sizeof *d);
}

int
store_fail(ledger_db *d, const char *what, char *err)
{
	int c = sqlite3_errcode(d->db);

	return lm_err(err, LM_EFAIL, "%s: %s: %s%s", d->path, what, sqlite3_errmsg(d->db),
	    c == SQLITE_CORRUPT || c == SQLITE_NOTADB ? " (a corrupt ledger database: it is left as it is)" :
	    c == SQLITE_BUSY ? " (another lume-metal held the ledger for " LM_STR(BUSY_MS) " ms)" : "");
}

int
store_exec(ledger_db *d, const char *sql, char *err)
{
	return sqlite3_exec(d->db, sql, NULL, NULL, NULL) == SQLITE_OK ? LM_OK : store_fail(d, "writing", err);
}

sqlite3_stmt *
store_prep(ledger_db *d, const char *sql, char *err)
{
	sqlite3_stmt *s = NULL;

	if (sqlite3_prepare_v2(d->db, sql, -1, &s, NULL) != SQLITE_OK) {
		store_fail(d, "reading", err);
		sqlite3_finalize(s);
		return NULL;
	}
	return s;
}

sqlite3_stmt *
store_cached(ledger_db *d, int slot, const char *sql, char *err)
{
	sqlite3_stmt **s = &d->cached[slot];

	if (*s == NULL && sqlite3_prepare_v3(d->db, sql, -1, SQLITE_PREPARE_PERSISTENT, s, NULL) != SQLITE_OK) {
		store_fail(d, "reading", err);
		sqlite3_finalize(*s);
		*s = NULL;
		return NULL;
	}
	sqlite3_reset(*s);
	sqlite3_clear_bindings(*s);
	return *s;
}

/* The database made at a temporary path of state, linked to path unless one is there already
 * (another process made it first: that one is used). */
static int
db_create(const char *state, const char *path, char *err)
{
	char tmp[4300];
	sqlite3 *db = NULL;
	int rc;

	if ((rc = lm_mkdirs(state, err)) != LM_OK)
		return rc;
	if (lm_fmt(tmp, sizeof tmp, "%s/.ledger.db.new-%ld", state, (long)getpid()) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	unlink(tmp); /* left by a process of this pid that was killed */
	if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK) {
		rc = lm_err(err, LM_EFAIL, "%s: creating the ledger's database: %s", tmp, db ? sqlite3_errmsg(db) :
		    "out of memory");
		sqlite3_close_v2(db);
		unlink(tmp);
		return rc;
	}
	if (sqlite3_close(db) != SQLITE_OK) {
		unlink(tmp);
		return lm_err(err, LM_EFAIL, "%s: creating the ledger's database: it did not close", tmp);
	}
	/* link, not rename: two processes making it at once must not replace the other's. A file
	 * system without hard links gets a rename (only a first use racing another can lose). */
	if (link(tmp, path) != 0 && errno != EEXIST && rename(tmp, path) != 0) {
		rc = lm_err(err, LM_EFAIL, "%s: %s", path, strerror(errno));
		unlink(tmp);
		return rc;
	}
	unlink(tmp);
	return LM_OK;
}

/* Why st, the file at d->path, is not this ledger's database: a refusal naming it. */
static int
refuse(const ledger_db *d, const char *what, char *err)
{
	return lm_err(err, LM_EFAIL, "%s: not this ledger's database (%s); it is left as it is, and the ledger is "
	    "neither read nor written until it is moved aside", d->path, what);
}

int
store_identity(sqlite3 *db, char what[200])
{
	sqlite3_stmt *s = NULL;
	int app = -1, ver = -1;

	if (sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		app = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (app == -1) {
		snprintf(what, 200, "%s", sqlite3_errmsg(db));
		return LM_EFAIL;
	}
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		ver = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (app != LEDGER_APP_ID)
		snprintf(what, 200, "an SQLite database of another application: application_id %d", app);
	else if (ver > LEDGER_SCHEMA)
		snprintf(what, 200, "written by a newer lume-metal: schema %d, this one knows %d", ver, LEDGER_SCHEMA);
	else if (ver < 1)
		snprintf(what, 200, "schema %d", ver);
	else
		return LM_OK;
	return LM_EFAIL;
}

ledger_db *
store_open_as(dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < OPEN_MAX; i++)
		if (open_dbs[i].path != NULL && open_dbs[i].pid == getpid() && open_dbs[i].dev == dev && open_dbs[i].ino == ino)
			return &open_dbs[i];
	return NULL;
}

/* Opens d->path (st) and checks that it is this ledger's database. */
static int
db_open(ledger_db *d, const struct stat *st, char *err)
{
	char what[200];

	/* A FIFO would hold the open; a directory or a device is no database either. */
	if (!S_ISREG(st->st_mode))
		return refuse(d, S_ISDIR(st->st_mode) ? "a directory" : S_ISFIFO(st->st_mode) ? "a FIFO" :
		    "not a regular file", err);
	if (st->st_size == 0)
		return refuse(d, "an empty file", err);
	if (sqlite3_open_v2(d->path, &d->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return store_fail(d, "opening", err);
	sqlite3_busy_timeout(d->db, BUSY_MS);
	if (store_identity(d->db, what) != LM_OK)
		return strstr(what, "newer") ? lm_err(err, LM_EFAIL, "%s: %s; it is left as it is: use that lume-metal",
		    d->path, what) : refuse(d, what, err);
	/* Every commit on disk before it returns, as the JSON store's fsync was. */
	return store_exec(d, "PRAGMA synchronous = FULL", err);
}

/* At exit: every database this process opened closed, so the last one out checkpoints its
 * WAL into ledger.db and removes it (a copy of ledger.db alone then holds every record). */
static void
close_all(void)
{
	pthread_mutex_lock(&store_mu);
	for (size_t i = 0; i < OPEN_MAX; i++)
		if (open_dbs[i].path != NULL)
			db_forget(&open_dbs[i]);
	pthread_mutex_unlock(&store_mu);
}

static void
at_exit_once(void)
{
	atexit(close_all);
}

/* Whether d's file was removed or renamed since it was opened. */
static int
moved(ledger_db *d)
{
	int m = 0;

	return sqlite3_file_control(d->db, "main", SQLITE_FCNTL_HAS_MOVED, &m) == SQLITE_OK && m;
}

int
store_open(ledger_db **out, const char *state, int create, int *made, int *fresh, char *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	char path[4200];
	struct stat st;
	ledger_db *d = NULL;
	int rc;

	*out = NULL;
	*made = *fresh = 0;
	if (lm_fmt(path, sizeof path, "%s/ledger.db", state) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	pthread_once(&once, at_exit_once);
	pthread_mutex_lock(&store_mu);
	for (size_t i = 0; i < OPEN_MAX; i++)
		if (open_dbs[i].path != NULL && open_dbs[i].pid != getpid())
			db_forget(&open_dbs[i]);
		else if (open_dbs[i].path != NULL && strcmp(open_dbs[i].state, state) == 0)
			d = &open_dbs[i];
	if (stat(path, &st) != 0) {
		if (errno != ENOENT) {
			rc = lm_err(err, LM_EFAIL, "%s: %s", path, strerror(errno));
			goto fail;
		}
		if (d != NULL) /* removed since: this process's connection is to a file no one else sees */
			db_forget(d), d = NULL;
		if (!create) {
			pthread_mutex_unlock(&store_mu);
			return LM_OK;
		}
		if ((rc = db_create(state, path, err)) != LM_OK)
			goto fail;
		*made = 1;
		if (stat(path, &st) != 0) {
			rc = lm_err(err, LM_EFAIL, "%s: %s", path, strerror(errno));
			goto fail;
		}
	} else if (d != NULL && (d->dev != st.st_dev || d->ino != st.st_ino || moved(d)))
		db_forget(d), d = NULL; /* replaced since (a new file may reuse the inode: SQLite says) */
	if (d == NULL) {
		d = &open_dbs[open_next++ % OPEN_MAX];
		db_forget(d);
		d->pid = getpid(), d->dev = st.st_dev, d->ino = st.st_ino;
		if ((d->state = strdup(state)) == NULL || (d->path = strdup(path)) == NULL) {
			db_forget(d);
			rc = lm_err(err, LM_EFAIL, "out of memory");
			goto fail;
		}
		if ((rc = db_open(d, &st, err)) != LM_OK) {
			db_forget(d);
			goto fail;
		}
		*fresh = 1;
	}
	*out = d;
	return LM_OK;
fail:
	pthread_mutex_unlock(&store_mu);
	return rc;
}

void
store_lock(void)
{
	pthread_mutex_lock(&store_mu);
}

void
store_unlock(void)
{
	pthread_mutex_unlock(&store_mu);
}

void
store_put(ledger_db *d)
{
	if (d != NULL)
		pthread_mutex_unlock(&store_mu);
}

void
store_drop(ledger_db *d)
{
	if (d != NULL) {
		db_forget(d);
		pthread_mutex_unlock(&store_mu);
	}
}

const ledger_bad *
store_bad(const ledger_db *d, const cJSON *key)
{
	char name[17];

	if (d->nbad == 0 || ledger_key_name(name, key) < 0)
		return NULL;
	for (size_t i = 0; i < d->nbad; i++)
		if (strcmp(d->bad[i].name, name) == 0)
			return &d->bad[i];
	return NULL;
}

void
store_bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v != NULL)
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

sqlite3_int64
store_key_id(ledger_db *d, const cJSON *key, int add, char *err)
{
	char hash[65], *text = cJSON_PrintUnformatted(key);
	sqlite3_stmt *q, *ins = NULL;
	sqlite3_int64 id = -1;
	int step;

	if (text == NULL) {
		lm_err(err, LM_EFAIL, "out of memory");
		return -1;
	}
	lm_sha256_hex(hash, text, strlen(text));
	if ((q = store_cached(d, 0, "SELECT id FROM keys WHERE hash = ?", err)) == NULL)
		goto done;
	store_bind_text(q, 1, hash);
	if ((step = sqlite3_step(q)) == SQLITE_ROW)
		id = sqlite3_column_int64(q, 0);
	else if (step != SQLITE_DONE)
		store_fail(d, "reading", err);
	else if (!add)
		id = 0;
	else if ((ins = store_prep(d, "INSERT INTO keys (hash, name, key) VALUES (?1, substr(?1, 1, 16), ?2)", err)) != NULL) {
		store_bind_text(ins, 1, hash);
		store_bind_text(ins, 2, text);
		if (sqlite3_step(ins) == SQLITE_DONE)
			id = sqlite3_last_insert_rowid(d->db);
		else
			store_fail(d, "writing", err);
	}
	sqlite3_reset(q);
done:
	sqlite3_finalize(ins);
	free(text);
	return id;
}

int
store_insert(ledger_db *d, sqlite3_int64 key_id, const cJSON *rec, char *err)
{
	static const char *const cols[] = {"kind", "vm", "verdict", NULL, "payloadSha256", "profile", "workload", "cause"};
	char when[40], *text = cJSON_PrintUnformatted(rec);
	sqlite3_stmt *s;
	int rc;

	if (text == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if ((s = store_cached(d, 1, "INSERT INTO records (key_id, kind, vm, verdict, sorttime, payload, profile, workload, "
	    "cause, reconciled, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", err)) == NULL) {
		free(text);
		return LM_EFAIL;
	}
	sqlite3_bind_int64(s, 1, key_id);
	ledger_sort_time(when, lm_jstr(rec, "time"));
	for (int i = 0; i < 8; i++)
		store_bind_text(s, i + 2, cols[i] ? lm_jstr(rec, cols[i]) : when);
	sqlite3_bind_int(s, 10, cJSON_IsTrue(lj_get(rec, "reconciled")) ||
	    (lm_jstr(rec, "kind") && strcmp(lm_jstr(rec, "kind"), LEDGER_OBSERVE) == 0));
	sqlite3_bind_text(s, 11, text, -1, free);
	rc = sqlite3_step(s) == SQLITE_DONE ? LM_OK : store_fail(d, "writing", err);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc;
}

int
store_has(ledger_db *d, sqlite3_int64 key_id, const cJSON *rec, sqlite3_int64 max_id, int *present, char *err)
{
	char when[40];
	sqlite3_stmt *s;
	int rc = SQLITE_DONE;

	*present = 0;
	if ((s = store_cached(d, 2, "SELECT record FROM records WHERE key_id = ? AND vm IS ? AND sorttime = ? AND id <= ?",
	    err)) == NULL)
		return LM_EFAIL;
	ledger_sort_time(when, lm_jstr(rec, "time"));
	sqlite3_bind_int64(s, 1, key_id);
	store_bind_text(s, 2, lm_jstr(rec, "vm"));
	store_bind_text(s, 3, when);
	sqlite3_bind_int64(s, 4, max_id > 0 ? max_id : INT64_MAX);
	while (!*present && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		cJSON *r = cJSON_Parse((const char *)sqlite3_column_text(s, 0));

		*present = r != NULL && cJSON_Compare(r, rec, 1);
		cJSON_Delete(r);
	}
	rc = *present || rc == SQLITE_DONE ? LM_OK : store_fail(d, "reading", err);
	sqlite3_reset(s);
	return rc;
}

sqlite3_int64
store_max_id(ledger_db *d)
{
	sqlite3_stmt *s = store_prep(d, "SELECT coalesce(max(id), 0) FROM records", NULL);
	sqlite3_int64 id = 0;

	if (s != NULL && sqlite3_step(s) == SQLITE_ROW)
		id = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return id;
}

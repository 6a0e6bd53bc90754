/* ledger_int: what the ledger's files share (ledger.c: records and keys; ledger_store.c: the
 * SQLite database; ledger_query.c: appends and lookups; ledger_legacy.c: the JSON documents it
 * replaced, migrated; ledger_merge.c; ledger_prune.c). Not for other modules: they use ledger.h. */
#ifndef LM_LEDGER_INT_H
#define LM_LEDGER_INT_H

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <sys/types.h>

/* The database's identity: PRAGMA application_id ("LMLG") and user_version (its schema). */
#define LEDGER_APP_ID 0x4c4d4c47
#define LEDGER_SCHEMA 1

/* A document of the JSON store, and what a merge reads from a file: at most this many bytes
 * (the JSON store refused past 64 MiB; a migration reads the few that grew past it). */
#define LEDGER_DOC_MAX (256u << 20)

/* A JSON document of <state>/ledger/ that did not read (as the JSON store said: "corrupt
 * ledger file"): left where it is, and its image version (name: its file name without .json,
 * the key's 16 hex) is neither read nor written while it is there. */
typedef struct {
	char name[64];
	char *msg; /* the error, naming its path */
} ledger_bad;

/* One open database of a state folder, kept for the process (one connection per database;
 * every use under one lock). */
typedef struct {
	sqlite3 *db;
	char *state, *path;  /* the state folder, <state>/ledger.db */
	dev_t dev;
	ino_t ino;
	pid_t pid;           /* the process that opened it: a forked child opens its own */
	ledger_bad *bad;
	size_t nbad;
	sqlite3_stmt *cached[4]; /* store_cached's */
} ledger_db;

/* The database of state, locked for the caller until store_put; *out = NULL (LM_OK) when the
 * state has no ledger and create is 0. Opening it the first time in a process migrates the
 * JSON documents of <state>/ledger/ (made with the database, the marker an older lume-metal
 * refuses). A file at <state>/ledger.db that is not this ledger's database is refused (LM_EFAIL
 * naming it) and never written. (ledger_legacy.c: over store_open, which knows no documents.) */
int legacy_store_get(ledger_db **out, const char *state, int create, char *err);
/* store_open: legacy_store_get without the documents; *made when it made the file, *fresh when
 * this process's connection to it is new. store_drop: forgets d's connection and unlocks. */
int store_open(ledger_db **out, const char *state, int create, int *made, int *fresh, char *err);
void store_put(ledger_db *d);
void store_drop(ledger_db *d);
/* The same lock, without a database (ledger_merge reads its sources under it). */
void store_lock(void);
void store_unlock(void);

/* err from d's last SQLite error: "<path>: <what>: <sqlite's message>"; returns LM_EFAIL. */
int store_fail(ledger_db *d, const char *what, char *err);
/* sql run on d (no rows); LM_OK or store_fail. */
int store_exec(ledger_db *d, const char *sql, char *err);
/* A prepared statement; NULL after store_fail. */
sqlite3_stmt *store_prep(ledger_db *d, const char *sql, char *err);
/* The statement of sql kept in d's slot for the connection's life (the appends' and the
 * migration's few, prepared once), reset and unbound; the caller resets it, never finalizes it. */
sqlite3_stmt *store_cached(ledger_db *d, int slot, const char *sql, char *err);

/* Binds v (NULL: null) to s's parameter i. */
void store_bind_text(sqlite3_stmt *s, int i, const char *v);
/* The id of key in d (added when absent and add is set; else 0 when absent), or -1 (err set). */
sqlite3_int64 store_key_id(ledger_db *d, const cJSON *key, int add, char *err);
/* Inserts rec (checked or not: a migration keeps what the JSON store held) under key_id. */
int store_insert(ledger_db *d, sqlite3_int64 key_id, const cJSON *rec, char *err);
/* *present: a record equal to rec (cJSON_Compare) is under key_id among ids up to max_id
 * (0: any). */
int store_has(ledger_db *d, sqlite3_int64 key_id, const cJSON *rec, sqlite3_int64 max_id, int *present, char *err);
/* The largest record id of d (0 when none). */
sqlite3_int64 store_max_id(ledger_db *d);

/* The bad document of d for key's name, or NULL. */
const ledger_bad *store_bad(const ledger_db *d, const cJSON *key);

/* Whether this process has the database of inode (dev, ino) open: then it is read only
 * through SQLite (a close(2) of another descriptor of it would drop SQLite's locks). Under the
 * lock legacy_store_get takes. NULL, or the open database. */
ledger_db *store_open_as(dev_t dev, ino_t ino);
/* Checks that db (a connection) is a ledger's database: LM_OK, or LM_EFAIL with what it is in
 * what (200 bytes). */
int store_identity(sqlite3 *db, char what[200]);

/* The JSON documents of dir (*.json, not hidden, not the marker), sorted: *names (n of them)
 * belong to the caller (legacy_free). None when dir does not exist. */
int legacy_list(char ***names, size_t *n, const char *dir, char *err);
void legacy_free(char **names, size_t n);
/* All of path (a regular file, opened without waiting on a FIFO, at most LEDGER_DOC_MAX
 * bytes) into *text (caller frees); *text NULL when it does not exist. */
int legacy_read(char **text, const char *path, char *err);

/* Migrates the JSON documents of d's <state>/ledger/ into d, in one transaction, and renames
 * each to *.json.migrated; the ones that do not read go to d->bad. Writes the marker. */
int legacy_migrate(ledger_db *d, char *err);
/* Whether <state>/ledger/ holds a JSON document to migrate (a *.json that is not the marker). */
int legacy_pending(const char *state);
/* Makes <state>/ledger/LEDGER_MARKER (with a README); LM_OK or LM_EFAIL. */
int legacy_marker(const char *state, char *err);

/* ledger_retention's N (0: none), and the trim an append runs with it (ledger_prune.c). */
int store_keep(void);
int prune_after_append(ledger_db *d, sqlite3_int64 key_id, const cJSON *rec, int keep, char *err);

/* Shared by the files. */
const cJSON *lj_get(const cJSON *o, const char *k);
/* The record's time as a sortable string (2026-01-31T23:59:59.000000000Z: nine digits of
 * fraction), or "" when it is no such time (it then sorts first, as ledger_time_cmp has it). */
void ledger_sort_time(char out[40], const char *t);
/* Why doc is not a ledger document as the JSON store wrote one (format 1, a key, records each
 * as ledger_record_problem has them), or NULL (why: 256 bytes). */
const char *ledger_doc_problem(const cJSON *doc, char why[256]);
/* The document's name of key: the first 16 hex of its SHA-256 (what the JSON store named its
 * file); 0, or -1 out of memory. */
int ledger_key_name(char out[17], const cJSON *key);
/* The full SHA-256 hex of key's compact JSON; 0, or -1. */
int ledger_key_hash(char out[65], const cJSON *key);
/* The current time as 2026-01-31T23:59:59Z. */
void ledger_now(char out[32]);

#endif

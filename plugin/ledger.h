/* ledger: one JSON document per image version under <state>/ledger/, holding an append-only
 * list of records. Every write is read-modify-write under flock(2) on a lock file beside it,
 * through a temporary file, fsync and rename, so concurrent writers lose nothing and a
 * reader never sees a torn file. A document that does not parse is never overwritten. */
#ifndef LM_LEDGER_H
#define LM_LEDGER_H

#include <cjson/cJSON.h>

/* The image-version key, fields in a fixed order; NULL fields are stored as null.
 * Returns a new object the caller owns (cJSON_Delete), or NULL when out of memory. */
cJSON *ledger_key(const char *image, const char *digest, const char *guest_os, const char *guest_build,
    const char *guest_model, const char *host_chip, const char *host_build);

/* The document's path for key: <state>/ledger/<16 hex of the key's SHA-256>.json. */
int ledger_path(char *out, size_t len, const char *state, const cJSON *key);

/* Appends a copy of record (adding "time" when absent) to key's document, creating it and
 * <state>/ledger/ as needed. A corrupt document is reported with its path (LM_EFAIL). */
int ledger_append(const char *state, const cJSON *key, const cJSON *record, char *err);

/* Loads key's document into *out (caller frees), or *out = NULL when there is none. */
int ledger_load(cJSON **out, const char *state, const cJSON *key, char *err);

/* A copy of the last record of kind in key's document (caller frees), or *out = NULL when
 * there is none; *recorded, when not NULL, says whether the document exists. For the fleet's
 * workers, whose VMs share a few documents that grow by a record per deploy: one document is
 * parsed at a time, and one unchanged since (same inode, size and mtime) is not parsed again
 * but answered from a small cache. */
int ledger_load_last(cJSON **out, int *recorded, const char *state, const cJSON *key, const char *kind,
    char *err);

/* The last record of doc whose "kind" is kind, or NULL. Borrowed from doc. */
const cJSON *ledger_last(const cJSON *doc, const char *kind);

/* Calls fn for every document, sorted by path; stops at the first non-zero return and
 * returns it. A corrupt document is an error naming its path. */
int ledger_each(const char *state, int (*fn)(const cJSON *doc, const char *path, void *ctx), void *ctx,
    char *err);

/* What ledger_merge did: records added, documents of state written, records that were
 * there already, and source documents read. */
typedef struct {
	int merged, documents, present, sources;
} ledger_merge_counts;

/* Merges ledger documents fetched from other machines into state's ledger. Each of
 * srcs[0..nsrcs) is a document file, a ledger directory or a state directory holding ledger/
 * (a directory without documents adds none). Every source document is read and checked
 * first: one that is not a ledger document (object, "key" object, "records" array of objects
 * with a "time" string) is an error naming its path (LM_EINPUT), and so is a document of
 * state that does not parse (LM_EFAIL); either way nothing is written. Then each document of
 * state is updated once, under its lock as ledger_append does: a record equal to one there
 * (the whole record) counts as present, any other is inserted after the last record whose
 * "time" is not later than its own, so a sorted document stays sorted and merging the same
 * source again adds nothing. *out gets the counts, also after a failure. */
int ledger_merge(ledger_merge_counts *out, const char *state, const char *const *srcs, size_t nsrcs, char *err);

#endif

/* ledger: the records per image version, in one SQLite database per state folder,
 * <state>/ledger.db (WAL mode; writers wait on each other through SQLite's busy timeout, never
 * lose a record, and a SIGKILL at any point leaves it consistent). A record keeps its JSON
 * shape (one row each, with indexed columns for what the gate looks up: its image version's
 * key, kind, VM, verdict, time as a sortable string, payload); each image version's key is a
 * row of its own. An append is one INSERT in one transaction, and the gate's verdict one
 * indexed query: their cost does not grow with the ledger. A file at that path that is not
 * this ledger's database (another SQLite database, a text file, a directory, a FIFO) is
 * refused, naming it, and never written.
 *
 * The JSON documents an older lume-metal kept under <state>/ledger/ (one per image version,
 * <16 hex of the key's SHA-256>.json) are migrated on first use: imported in one transaction,
 * each then renamed *.json.migrated (nothing is lost; importing one again adds nothing), and
 * a directory named LEDGER_MARKER left there so that an older lume-metal refuses the state
 * instead of reading an empty ledger. A document that does not read is left where
 * it is and its image version is neither read nor written until it is fixed or moved aside,
 * as before. Throughout this header, "the document" of a key is its records in that database,
 * in time order (the same time: the order they were written). */
#ifndef LM_LEDGER_H
#define LM_LEDGER_H

#include <cjson/cJSON.h>

/* What a guest sends back is stored bounded, whatever it sent: a string of a record at most
 * LEDGER_STR_MAX bytes (a longer one is cut, ending in "..."), at most LEDGER_REASONS reasons,
 * and the probe's answers only as ledger_probe_summary keeps them. ledger_append and
 * ledger_merge refuse a record that is not of the shape ledger_record_problem checks, or is
 * larger than LEDGER_RECORD_MAX bytes printed or deeper than LEDGER_RECORD_DEPTH levels, so
 * every document parses again (cJSON stops at 1000 levels) and stays small. */
#define LEDGER_STR_MAX 512
#define LEDGER_REASONS 4
#define LEDGER_RECORD_MAX (64u << 10)
#define LEDGER_RECORD_DEPTH 8

/* In <state>/ledger/ once the ledger is its database: a directory whose name ends in .json, so
 * a lume-metal from before refuses the state loudly (its ledger_readable: "not a regular
 * file", naming it, before any VM is reached) instead of reading an empty ledger. It holds a
 * README saying so. Never a document. */
#define LEDGER_MARKER "MOVED-TO-ledger.db-this-lume-metal-is-too-old.json"

/* The image-version key as written before host identity (kept to read and test old ledgers),
 * fields in a fixed order; NULL fields are stored as null, a string
 * longer than LEDGER_STR_MAX is cut. Returns a new object the caller owns (cJSON_Delete), or
 * NULL when out of memory. */
cJSON *ledger_key(const char *image, const char *digest, const char *guest_os, const char *guest_build,
    const char *guest_model, const char *host_chip, const char *host_build);

/* Who a record is about. The image digest and the host part come from the Mac that runs the
 * VM (read there: locally, or through its --hosts session); what the guest says about itself
 * is a claim. Strings are borrowed; NULL when unknown. */
typedef struct {
	const char *image;       /* the reference, a label: --image, else the guest's image.json */
	const char *digest;      /* "sha256:<64 hex>" from <location>/<vm>/.manifest-digest */
	const char *guest_os, *guest_build, *guest_model; /* the guest's own answers */
	const char *host_chip, *host_model, *host_os, *host_build; /* the Mac's */
} ledger_identity;

/* The image-version key of id: "imageDigest", then "image" (null when the digest is known:
 * the digest alone names the version, the reference is a label kept in the records; "unknown"
 * when neither is known), the guest's OS, build and model, the host's chip, model, OS and
 * build. Keys made by ledger_key (before host identity: the image label, the controller's chip
 * and build) have no "hostModel"; their documents still read, and no key of this kind ever
 * equals one of them. Caller owns the result (cJSON_Delete); NULL when out of memory. */
cJSON *ledger_key_of(const ledger_identity *id);

/* How a key's image version is shown: "REF@sha256:1a2b3c4d…" with a digest ("unknown@..."
 * without a reference; ref, when not NULL, is the label a record carries), "REF (no digest)"
 * without one, "REF (old key)" for a key of ledger_key. Returns out. */
char *ledger_key_label(char *out, size_t len, const cJSON *key, const char *ref);

/* Where the JSON store kept key's document, <state>/ledger/<16 hex of the key's SHA-256>.json:
 * what a migration reads, and where a document that did not read stays. */
int ledger_path(char *out, size_t len, const char *state, const cJSON *key);

/* The name the database's document of key goes by in messages and `ledger show`:
 * <state>/ledger.db#<the same 16 hex>. */
int ledger_doc_name(char *out, size_t len, const char *state, const cJSON *key);

/* A new object (caller frees) holding only the probe answer's fields that docs/interfaces.md
 * documents ("probe", "version", "os", "device", "families", the three limits,
 * "hasUnifiedMemory", "shim", "expect"), each only with its documented type, strings cut to
 * 200 bytes, at most 32 families, 8 shim processes and 8 expect differences (the rest counted
 * in "processesDropped" and "differencesDropped"): a few KiB at most, whatever the guest sent.
 * NULL when probe is not an object, or out of memory. */
cJSON *ledger_probe_summary(const cJSON *probe);

/* Adds v (NULL: nothing) to o under k, cut to LEDGER_STR_MAX bytes at a UTF-8 boundary with
 * "..." at the end. Returns 0, or -1 out of memory. */
int ledger_add_str(cJSON *o, const char *k, const char *v);

/* Adds reason to rec's "reasons" array (made when absent), cut as ledger_add_str does; past
 * LEDGER_REASONS reasons it only counts it in "reasonsDropped". Returns 0, or -1. */
int ledger_add_reason(cJSON *rec, const char *reason);

/* Why rec is not a ledger record, or NULL when it is one. A record is an object with "kind"
 * "deploy", "validate" or "golden" (with "verdict" "pass" or "fail"), "rollback" (with "result", a string), "bench"
 * (with "verdict" "effective", "not-effective" or "unknown", and "bench" an object) or
 * "observe" (with "result" a string and "payloadSha256": a VM seen with that payload current,
 * no verdict; see LEDGER_OBSERVE); a
 * non-empty "vm" string; "time" as 2026-01-31T23:59:59Z (a fraction of a second allowed);
 * when present, "address", "host", "controller", "payloadSha256", "profile", "workload",
 * "target", "to", "from", "command" and "evidence" strings (or null), "reasons" an array of at most
 * LEDGER_REASONS strings, "forced" a boolean, "stock" and "shimmed" objects or null, "hashes"
 * an object, "cause" "image" (or "workload" in a deploy record whose verdict is "fail"),
 * "imported" an object of strings; no string longer than 4 KiB, no array of more than 256 items, and the bounds
 * above. why (160 bytes) may receive the text returned. */
const char *ledger_record_problem(const cJSON *rec, char why[160]);

/* What only an import writes into a record: "imported": {"from": "registry", "repository",
 * "signer" (the trusted key that verified it), "artifact" (the artifact's manifest digest),
 * "statement" (the digest of the signed statement, which names it however it is wrapped)}. A
 * signed record carrying it is refused (verdict.h), so no signer says where its record came
 * from, and nothing else in a record means that. */
#define LEDGER_IMPORTED "imported"

/* Field k of rec's "imported" ("from", "repository", "signer", "artifact", "statement"), or,
 * in a ledger an older version wrote, its top-level "signer" and "artifact" beside
 * "source":"registry" ("from" is then "registry"); NULL for a record made here. Borrowed. */
const char *ledger_import_field(const cJSON *rec, const char *k);
/* Whether rec was imported (ledger_import_field(rec, "from") is set). */
int ledger_is_imported(const cJSON *rec);

/* "VM <vm> (host <host>, address <address>) at <time>: <first reason>" for rec, each field
 * present bounded and with any byte outside printable ASCII shown as '?': who wrote rec, to
 * name it in a message. Returns out. */
char *ledger_record_who(char *out, size_t len, const cJSON *rec);

/* A record of kind "observe": an unchanged VM this controller has no record of (a clone of a
 * deployed image, an install whose run was killed) when the image version's verdict for the
 * payload is recorded already. It says only that the VM had the payload current: no probe
 * answers, no verdict, a few hundred bytes; ledger_deployed counts it, ledger_verdict never
 * returns it, `ledger push` does not sign it. */
#define LEDGER_OBSERVE "observe"

/* Appends a copy of record (adding "time" when absent) to key's document, creating the
 * database as needed: one INSERT in one transaction. A record that ledger_record_problem
 * refuses is an input error naming why (LM_EINPUT) and is not written. With a retention set
 * (ledger_retention), the same transaction removes what ledger_prune would of the record's VM
 * (or, for a clone's record, of the image version's clones' records). A database or document that
 * does not read is reported with its path (LM_EFAIL). */
int ledger_append(const char *state, const cJSON *key, const cJSON *record, char *err);

/* Loads key's document into *out (caller frees: {"format": 1, "key", "records"}), or *out =
 * NULL when there is none. */
int ledger_load(cJSON **out, const char *state, const cJSON *key, char *err);

/* Which record decides a gate: the kinds ("deploy|golden", "validate", or one kind), and the
 * payload being deployed. A record counts only when it carries a "payloadSha256" and, when
 * payload is given, it is that one; when profile or workload is given, the record's must be
 * equal too. A verdict covers one payload: a record without one gates nothing. With
 * any_payload set (reports: `ledger show`, bench, `report`), the payload is not looked at. */
typedef struct {
	const char *kinds;
	const char *payload, *profile, *workload; /* NULL: any */
	int any_payload;
} ledger_want;

/* A copy of the verdict w asks for in key's document (ledger_verdict; caller frees), or *out =
 * NULL when there is none; *recorded, when not NULL, says whether the document exists. One
 * indexed query per kind of w: its cost does not grow with the document. */
int ledger_load_verdict(cJSON **out, int *recorded, const char *state, const cJSON *key, const ledger_want *w,
    char *err);
/* *found: whether key's document holds a passing deploy record, or an observation, of vm with
 * payload sha (none: 0). One indexed query. */
int ledger_deployed(int *found, const char *state, const cJSON *key, const char *vm, const char *sha, char *err);

/* The record of doc that w asks for, or NULL; borrowed from doc. The newest by its "time" (a
 * record's own time: for one imported from a registry, the time its signer signed), never by
 * its place in the document, so an import's order or a registry's list order decides nothing;
 * at the same time a "fail" wins over a "pass", then the later one. A record whose "cause" is
 * "workload" (a deploy that failed on one VM for its workload's own reasons, the shim active
 * there) is never chosen: it is no verdict on the image version. */
const cJSON *ledger_verdict(const cJSON *doc, const ledger_want *w);

/* The last record of doc of kind (one, or several separated by '|'), by place, whatever its
 * payload (bench's figures, reports); a "cause":"workload" record is skipped as above. */
const cJSON *ledger_last(const cJSON *doc, const char *kind);

/* The image reference a ledger document carries: its last record's "image" string (keys
 * with a digest hold none), else its key's "image"; NULL when neither. Borrowed from doc. */
const char *ledger_doc_ref(const cJSON *doc);

/* Whether ref names doc's image version: its key's "image" or any of its records' "image". */
int ledger_doc_is(const cJSON *doc, const char *ref);

/* <0, 0 or >0 as time a is before, the same as, or after time b (as ledger_record_problem
 * checks them: 2026-01-31T23:59:59Z, a fraction of a second allowed); a malformed one sorts
 * first. */
int ledger_time_cmp(const char *a, const char *b);

/* Whether everything under state that the ledger reads can be read, before anything runs: state
 * itself (when it exists), <state>/ledger (when it exists, a directory that can be listed), and
 * each JSON document there (a regular file that opens and reads; a FIFO or a directory in its
 * place is refused without waiting on it; the marker is no document), then the database,
 * opened as every use opens it (a file that is not a regular file or not this ledger's
 * database is refused; JSON documents are migrated). LM_OK, or LM_EINPUT with err naming the
 * path and why. */
int ledger_readable(const char *state, char *err);

/* Calls fn for every document (path: its ledger_doc_name), sorted by it; stops at the first
 * non-zero return and returns it. A document that cannot be read or parsed (a JSON document
 * left unmigrated, a record of the database that is not JSON) costs only itself: fn is called
 * for every other one, and then the return is LM_EFAIL, err naming the first such path and how
 * many there were. Each document is built whole in memory (`ledger show`, `export`, `push`,
 * `report --ledger`): about five times its records' JSON; ledger_prune bounds it. */
int ledger_each(const char *state, int (*fn)(const cJSON *doc, const char *path, void *ctx), void *ctx,
    char *err);

/* What ledger_merge did: records added, documents of state written, records that were
 * there already, and source documents read. */
typedef struct {
	int merged, documents, present, sources;
} ledger_merge_counts;

/* Merges ledger documents fetched from other machines into state's ledger. Each of
 * srcs[0..nsrcs) is a JSON file holding a document or an array of them (what `ledger show
 * --json` prints), a database file (ledger.db), a state directory (its ledger.db, and the JSON
 * documents of its ledger/ not migrated yet) or a directory of JSON documents (a directory
 * without documents adds none; the marker is skipped). Every source document is read and
 * checked first: one that is not a ledger document (an object, "format" 1 when present, a
 * "key" object whose seven fields are strings or null, a "records" array of records as
 * ledger_record_problem has them) is an input error naming its path and the record's index
 * and what is wrong (LM_EINPUT), and nothing is written. An image version of state that does
 * not read costs only itself: the sources for it are not merged, every other one is, and the
 * return is LM_EFAIL naming it. The rest is one transaction: a record equal to one there (the
 * whole record, as cJSON_Compare says, also to one added by this merge) counts as present, any
 * other is added, so merging the same source again adds nothing; documents are in time order
 * anyway. Each record costs one indexed lookup. *out gets the counts, also after a failure. */
int ledger_merge(ledger_merge_counts *out, const char *state, const char *const *srcs, size_t nsrcs, char *err);

/* ledger_prune's N when neither --keep nor the config file's ledger-keep says. */
#define LEDGER_KEEP_DEFAULT 20

/* Removes what the gate and the reports no longer need, and returns what it removed in *out
 * (caller frees): {"keep": N, "dryRun": bool, "removed": n, "kept": n, "versions": [{"key",
 * "document" (ledger_doc_name), "removed", "kept", "kinds": {KIND: n removed}}]}, one entry per
 * image version that had something removed. Kept, whatever N: every record that gates
 * (validate and golden records, and deploy records whose verdict is "fail" unless their cause
 * is "workload"); the newest record of each kind, payload, profile and workload, the one
 * ledger_verdict and ledger_last would return; each VM's newest N records; and each image
 * version's newest N records of clones, observations and records with "reconciled": true (the
 * deploy records a clone left before observations): ephemeral clones leave one each, so they are
 * bounded per image version, not per VM. dry_run: nothing is removed, *out says what would be. One
 * transaction; the file's freed pages are given back (incremental vacuum). */
int ledger_prune(cJSON **out, const char *state, int keep, int dry_run, char *err);

/* Sets the retention every later ledger_append of this process applies to what it touches (the
 * config file's ledger-keep): 0 (the default) keeps everything. */
void ledger_retention(int keep);

#endif

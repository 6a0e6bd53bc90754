/* ledger: see ledger.h. */
#include "core/ledger.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

#define LEDGER_MAX (64u << 20)

#define PROBE_STR 200   /* bytes of a string of a probe summary */
#define PROBE_LIST 8     /* shim processes, expect differences */
#define PROBE_FAMILIES 32
#define FIELD_MAX 4096   /* bytes of any string of a record */
#define ITEMS_MAX 256    /* items of any array or object of a record */

static const cJSON *
get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = get(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A string item holding v, cut to max bytes at a UTF-8 boundary with "..." at the end when
 * longer; NULL out of memory. */
static cJSON *
cut_string(const char *v, size_t max)
{
	size_t n = strnlen(v, max + 1);
	cJSON *item;
	char *c;

	if (n <= max)
		return cJSON_CreateString(v);
	for (n = max - 3; n > 0 && ((unsigned char)v[n] & 0xc0) == 0x80; n--)
		;
	if ((c = malloc(n + 4)) == NULL)
		return NULL;
	memcpy(c, v, n);
	memcpy(c + n, "...", 4);
	item = cJSON_CreateString(c);
	free(c);
	return item;
}

/* Adds v, cut to max bytes, to o under k. Returns 0, or -1 out of memory. */
static int
add_cut(cJSON *o, const char *k, const char *v, size_t max)
{
	cJSON *item = cut_string(v, max);

	if (item == NULL || !cJSON_AddItemToObject(o, k, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

static void
add_str(cJSON *o, const char *k, const char *v)
{
	if (v != NULL)
		add_cut(o, k, v, LEDGER_STR_MAX);
	else
		cJSON_AddNullToObject(o, k);
}

int
ledger_add_str(cJSON *o, const char *k, const char *v)
{
	return v ? add_cut(o, k, v, LEDGER_STR_MAX) : 0;
}

int
ledger_add_reason(cJSON *rec, const char *reason)
{
	cJSON *a = cJSON_GetObjectItemCaseSensitive(rec, "reasons"), *n, *item;

	if (a == NULL && (a = cJSON_AddArrayToObject(rec, "reasons")) == NULL)
		return -1;
	if (cJSON_GetArraySize(a) < LEDGER_REASONS) {
		if ((item = cut_string(reason, LEDGER_STR_MAX)) == NULL || !cJSON_AddItemToArray(a, item)) {
			cJSON_Delete(item);
			return -1;
		}
		return 0;
	}
	if ((n = cJSON_GetObjectItemCaseSensitive(rec, "reasonsDropped")) != NULL && cJSON_IsNumber(n)) {
		cJSON_SetNumberValue(n, n->valuedouble + 1);
		return 0;
	}
	return cJSON_AddNumberToObject(rec, "reasonsDropped", 1) ? 0 : -1;
}

/* The probe summary's pieces: each copies from's field k into to when it has the type, and
 * returns 0, or -1 out of memory. */
static int
keep_str(cJSON *to, const cJSON *from, const char *k)
{
	const char *v = str(from, k);

	return v ? add_cut(to, k, v, PROBE_STR) : 0;
}

static int
keep_num(cJSON *to, const cJSON *from, const char *k, int nullable)
{
	const cJSON *v = get(from, k);

	if (cJSON_IsNumber(v))
		return cJSON_AddNumberToObject(to, k, v->valuedouble) ? 0 : -1;
	if (nullable && cJSON_IsNull(v))
		return cJSON_AddNullToObject(to, k) ? 0 : -1;
	return 0;
}

static int
keep_bool(cJSON *to, const cJSON *from, const char *k)
{
	const cJSON *v = get(from, k);

	return !cJSON_IsBool(v) || cJSON_AddBoolToObject(to, k, cJSON_IsTrue(v)) ? 0 : -1;
}

/* An array of strings, the first PROBE_LIST kept (cut) and the rest counted in dropped. */
static int
keep_strs(cJSON *to, const cJSON *from, const char *k, int nullable, const char *dropped)
{
	const cJSON *v = get(from, k), *e;
	cJSON *a, *item;
	int n = 0;

	if (nullable && cJSON_IsNull(v))
		return cJSON_AddNullToObject(to, k) ? 0 : -1;
	if (!cJSON_IsArray(v))
		return 0;
	if ((a = cJSON_AddArrayToObject(to, k)) == NULL)
		return -1;
	cJSON_ArrayForEach(e, v) {
		if (!cJSON_IsString(e) || n++ >= PROBE_LIST)
			continue;
		if ((item = cut_string(e->valuestring, PROBE_STR)) == NULL || !cJSON_AddItemToArray(a, item)) {
			cJSON_Delete(item);
			return -1;
		}
	}
	return n > PROBE_LIST && cJSON_AddNumberToObject(to, dropped, n - PROBE_LIST) == NULL ? -1 : 0;
}

/* A family name as the probe prints them: Apple7, Mac2, Common3, Metal4. */
static int
family_name(const char *s)
{
	size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789");

	return n > 0 && n <= 16 && s[n] == '\0';
}

cJSON *
ledger_probe_summary(const cJSON *p)
{
	const cJSON *v, *f;
	cJSON *s, *o;
	int rc = 0, n = 0;

	if (!cJSON_IsObject(p) || (s = cJSON_CreateObject()) == NULL)
		return NULL;
	rc |= keep_str(s, p, "probe") | keep_str(s, p, "version");
	if (cJSON_IsObject(v = get(p, "os")))
		rc |= (o = cJSON_AddObjectToObject(s, "os")) ? keep_str(o, v, "productVersion") | keep_str(o, v, "build") : -1;
	if (cJSON_IsNull(v = get(p, "device")))
		rc |= cJSON_AddNullToObject(s, "device") ? 0 : -1;
	else if (cJSON_IsObject(v))
		rc |= (o = cJSON_AddObjectToObject(s, "device")) ? keep_str(o, v, "name") | keep_str(o, v, "class") : -1;
	if (cJSON_IsObject(v = get(p, "families")) && (o = cJSON_AddObjectToObject(s, "families")) != NULL) {
		cJSON_ArrayForEach(f, v)
			if (cJSON_IsBool(f) && family_name(f->string) && n++ < PROBE_FAMILIES)
				rc |= cJSON_AddBoolToObject(o, f->string, cJSON_IsTrue(f)) ? 0 : -1;
	} else if (cJSON_IsObject(v))
		rc = -1;
	rc |= keep_num(s, p, "maxThreadgroupMemoryLength", 0) | keep_num(s, p, "maxBufferLength", 0);
	rc |= keep_num(s, p, "recommendedMaxWorkingSetSize", 0) | keep_bool(s, p, "hasUnifiedMemory");
	/* Whether the shim's assumptions hold on this release: its four hook points, known names only. */
	if (cJSON_IsObject(v = get(p, "hookPoints")) && (o = cJSON_AddObjectToObject(s, "hookPoints")) != NULL) {
		static const char *const hooks[] = {"_MTLDevice", "initGPUFamilySupport", "supportsFamily:",
		    "maxThreadgroupMemoryLength"};

		for (size_t i = 0; i < sizeof hooks / sizeof *hooks; i++) {
			const cJSON *h = get(v, hooks[i]);
			cJSON *ho;

			if (!cJSON_IsObject(h))
				continue;
			if ((ho = cJSON_AddObjectToObject(o, hooks[i])) == NULL)
				rc = -1;
			else
				rc |= keep_bool(ho, h, "present") | keep_str(ho, h, "types");
		}
	} else if (cJSON_IsObject(v))
		rc = -1;
	if (cJSON_IsObject(v = get(p, "shim"))) {
		if ((o = cJSON_AddObjectToObject(s, "shim")) == NULL)
			rc = -1;
		else {
			rc |= keep_bool(o, v, "active") | keep_str(o, v, "reason") | keep_num(o, v, "appleFamilyMax", 0);
			rc |= keep_num(o, v, "maxThreadgroupMemory", 0) | keep_num(o, v, "recommendedWorkingSetSize", 1);
			rc |= keep_strs(o, v, "processes", 1, "processesDropped");
		}
	}
	if (cJSON_IsObject(v = get(p, "expect"))) {
		if ((o = cJSON_AddObjectToObject(s, "expect")) == NULL)
			rc = -1;
		else
			rc |= keep_str(o, v, "profile") | keep_bool(o, v, "pass") |
			    keep_strs(o, v, "differences", 0, "differencesDropped");
	}
	if (rc != 0) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

char *
ledger_record_who(char *out, size_t len, const cJSON *rec)
{
	char vm[96], host[96], addr[96], t[40], why[160], where[220] = "";
	const char *h = str(rec, "host"), *a = str(rec, "address"), *r = NULL;
	const cJSON *reasons = get(rec, "reasons");

	if (cJSON_IsArray(reasons) && cJSON_IsString(cJSON_GetArrayItem(reasons, 0)))
		r = cJSON_GetArrayItem(reasons, 0)->valuestring;
	if (h || a)
		snprintf(where, sizeof where, " (%s%s%s%s%s)", h ? "host " : "", h ? lm_printable(host, sizeof host, h) : "",
		    h && a ? ", " : "", a ? "address " : "", a ? lm_printable(addr, sizeof addr, a) : "");
	snprintf(out, len, "VM %s%s at %s%s%s", lm_printable(vm, sizeof vm, str(rec, "vm")), where,
	    lm_printable(t, sizeof t, str(rec, "time")), r ? ": " : "", r ? lm_printable(why, sizeof why, r) : "");
	return out;
}

/* 1 when t is a time as now_iso writes it (2026-01-31T23:59:59Z), with or without a
 * fraction of a second: what merge sorts on, as text. */
static int
time_ok(const char *t)
{
	static const char pat[] = "dddd-dd-ddTdd:dd:dd";
	size_t i, d = 0;

	for (i = 0; pat[i]; i++)
		if (pat[i] == 'd' ? !isdigit((unsigned char)t[i]) : t[i] != pat[i])
			return 0;
	if (t[i] == '.')
		for (i++; isdigit((unsigned char)t[i]) && d < 9; i++, d++)
			;
	return t[i] == 'Z' && t[i + 1] == '\0' && (t[i - 1] != '.');
}

/* Walks v, at depth (the record is 1) under the record's field top, adding its names and
 * values to *size; why gets the first bound v breaks. */
static const char *
bounds(const cJSON *v, int depth, const char *top, size_t *size, char why[160])
{
	const cJSON *c;
	char name[48];
	int n = 0;

	*size += 8 + (v->string ? strlen(v->string) : 0);
	if (depth == 2)
		top = lm_printable(name, sizeof name, v->string);
	if (depth > LEDGER_RECORD_DEPTH) {
		snprintf(why, 160, "\"%s\": deeper than %d levels", top, LEDGER_RECORD_DEPTH);
		return why;
	}
	if (cJSON_IsString(v) && (*size += strlen(v->valuestring)) > 0 && strlen(v->valuestring) > FIELD_MAX) {
		snprintf(why, 160, "\"%s\": a string of more than %d bytes", top, FIELD_MAX);
		return why;
	}
	if (cJSON_IsNumber(v))
		*size += 24;
	if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
		return NULL;
	cJSON_ArrayForEach(c, v) {
		const char *bad;

		if (++n > ITEMS_MAX) {
			snprintf(why, 160, "\"%s\": more than %d items", top, ITEMS_MAX);
			return why;
		}
		if ((bad = bounds(c, depth + 1, top, size, why)) != NULL)
			return bad;
		if (*size > LEDGER_RECORD_MAX) {
			snprintf(why, 160, "larger than %u bytes", LEDGER_RECORD_MAX);
			return why;
		}
	}
	return NULL;
}

const char *
ledger_record_problem(const cJSON *rec, char why[160])
{
	static const char *const strs[] = {"address", "host", "controller", "payloadSha256", "profile", "workload",
	    "target", "to", "from", "command", "evidence"};
	const char *kind = str(rec, "kind"), *verdict = str(rec, "verdict"), *vm = str(rec, "vm"), *t = str(rec, "time");
	const cJSON *v, *e;
	char name[48];
	size_t size = 0;

	if (!cJSON_IsObject(rec))
		return "not an object";
	if (kind == NULL)
		return "no \"kind\" string";
	if (strcmp(kind, "deploy") == 0 || strcmp(kind, "golden") == 0) {
		if (verdict == NULL || (strcmp(verdict, "pass") != 0 && strcmp(verdict, "fail") != 0))
			return *kind == 'd' ? "a deploy record's \"verdict\" is not \"pass\" or \"fail\""
			                    : "a golden record's \"verdict\" is not \"pass\" or \"fail\"";
	} else if (strcmp(kind, "rollback") == 0) {
		if (str(rec, "result") == NULL)
			return "a rollback record has no \"result\" string";
	} else if (strcmp(kind, "validate") == 0) {
		if (verdict == NULL || (strcmp(verdict, "pass") != 0 && strcmp(verdict, "fail") != 0))
			return "a validate record's \"verdict\" is not \"pass\" or \"fail\"";
	} else if (strcmp(kind, "bench") == 0) {
		if (verdict == NULL || (strcmp(verdict, "effective") != 0 && strcmp(verdict, "not-effective") != 0 &&
		    strcmp(verdict, "unknown") != 0))
			return "a bench record's \"verdict\" is not \"effective\", \"not-effective\" or \"unknown\"";
		if (!cJSON_IsObject(get(rec, "bench")))
			return "a bench record has no \"bench\" object";
	} else {
		snprintf(why, 160, "unknown \"kind\" \"%s\" (deploy, golden, rollback, bench or validate)", lm_printable(name, sizeof name, kind));
		return why;
	}
	if (vm == NULL || *vm == '\0')
		return "no \"vm\" naming the VM";
	if (t == NULL || !time_ok(t))
		return "no \"time\" as 2026-01-31T23:59:59Z";
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		if ((v = get(rec, strs[i])) != NULL && !cJSON_IsString(v) && !cJSON_IsNull(v)) {
			snprintf(why, 160, "\"%s\" is neither a string nor null", strs[i]);
			return why;
		}
	if ((v = get(rec, "reasons")) != NULL) {
		if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > LEDGER_REASONS) {
			snprintf(why, 160, "\"reasons\" is not an array of at most %d strings", LEDGER_REASONS);
			return why;
		}
		cJSON_ArrayForEach(e, v)
			if (!cJSON_IsString(e))
				return "\"reasons\" holds something other than a string";
	}
	if ((v = get(rec, "forced")) != NULL && !cJSON_IsBool(v))
		return "\"forced\" is not a boolean";
	if (((v = get(rec, "stock")) != NULL && !cJSON_IsObject(v) && !cJSON_IsNull(v)) ||
	    ((v = get(rec, "shimmed")) != NULL && !cJSON_IsObject(v) && !cJSON_IsNull(v)))
		return "\"stock\" or \"shimmed\" is neither an object nor null";
	if ((v = get(rec, "hashes")) != NULL && !cJSON_IsObject(v))
		return "\"hashes\" is not an object";
	if ((v = get(rec, "readyMs")) != NULL && (!cJSON_IsNumber(v) || v->valuedouble < 0))
		return "\"readyMs\" is not a number of milliseconds";
	if ((v = get(rec, "cause")) != NULL && (!cJSON_IsString(v) || (strcmp(v->valuestring, "image") != 0 &&
	    (strcmp(v->valuestring, "workload") != 0 || strcmp(kind, "deploy") != 0 || strcmp(verdict, "fail") != 0))))
		return "\"cause\" is not \"image\", or \"workload\" in a failing deploy record";
	if ((v = get(rec, LEDGER_IMPORTED)) != NULL) {
		if (!cJSON_IsObject(v))
			return "\"" LEDGER_IMPORTED "\" is not an object";
		cJSON_ArrayForEach(e, v)
			if (!cJSON_IsString(e))
				return "\"" LEDGER_IMPORTED "\" holds something other than a string";
	}
	return bounds(rec, 1, "", &size, why);
}

const char *
ledger_import_field(const cJSON *rec, const char *k)
{
	const cJSON *imp = get(rec, LEDGER_IMPORTED);
	const char *src = str(rec, "source");

	if (cJSON_IsObject(imp))
		return str(imp, k);
	/* an older ledger: its importer set these at the top level, beside "source":"registry" */
	if (src != NULL && strcmp(src, "registry") == 0 && (strcmp(k, "signer") == 0 || strcmp(k, "artifact") == 0))
		return str(rec, k);
	if (src != NULL && strcmp(src, "registry") == 0 && strcmp(k, "from") == 0)
		return src;
	return NULL;
}

int
ledger_is_imported(const cJSON *rec)
{
	return ledger_import_field(rec, "from") != NULL;
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

cJSON *
ledger_key_of(const ledger_identity *id)
{
	cJSON *k = cJSON_CreateObject();

	if (k == NULL)
		return NULL;
	add_str(k, "imageDigest", id->digest);
	add_str(k, "image", id->digest ? NULL : id->image ? id->image : "unknown");
	add_str(k, "guestOS", id->guest_os);
	add_str(k, "guestBuild", id->guest_build);
	add_str(k, "guestModel", id->guest_model);
	add_str(k, "hostChip", id->host_chip);
	add_str(k, "hostModel", id->host_model);
	add_str(k, "hostOS", id->host_os);
	add_str(k, "hostBuild", id->host_build);
	return k;
}

char *
ledger_key_label(char *out, size_t len, const cJSON *key, const char *ref)
{
	const char *d = str(key, "imageDigest"), *img = str(key, "image");

	if (ref == NULL)
		ref = img ? img : "unknown";
	if (d && strncmp(d, "sha256:", 7) == 0)
		snprintf(out, len, "%s@sha256:%.8s\u2026", ref, d + 7);
	else
		snprintf(out, len, "%s (%s)", ref, get(key, "hostModel") ? "no digest" : "old key");
	return out;
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

/* A document as it was: every write renames a new file into place, so these change. */
typedef struct {
	dev_t dev;
	ino_t ino;
	off_t size;
	time_t mtime;
} file_id;

static file_id
file_id_of(const struct stat *st)
{
	return (file_id){.dev = st->st_dev, .ino = st->st_ino, .size = st->st_size, .mtime = st->st_mtime};
}

static int
same_file(const file_id *id, const struct stat *st)
{
	return id->dev == st->st_dev && id->ino == st->st_ino && id->size == st->st_size && id->mtime == st->st_mtime;
}

/* ledger_load_verdict's cache: the verdict one want (its text, want_text) asks of one document,
 * as it was when the document had this inode, size and mtime (every write renames a new,
 * longer file into place).
 * Under last_mu, which also keeps parses to one at a time: 256 workers parsing one document of
 * 256 records at once held 40 MB. A few entries, reused in turn; they live until exit. */
typedef struct {
	char *path, *kind;
	file_id id;
	cJSON *last; /* or NULL: the document has no such record */
} last_entry;

static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;
static last_entry last_cache[8];
static size_t last_next;

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
	e->id = file_id_of(st);
}

/* w as one string, the cache's key for it: kinds, payload, profile, workload, any. */
static int
want_text(char *out, size_t len, const ledger_want *w)
{
	return lm_fmt(out, len, "%s\n%s\n%s\n%s\n%d", w->kinds, w->payload ? w->payload : "", w->profile ? w->profile :
	    "", w->workload ? w->workload : "", w->any_payload);
}

int
ledger_load_verdict(cJSON **out, int *recorded, const char *state, const cJSON *key, const ledger_want *w,
    char *err)
{
	char path[4096], kind[1200];
	struct stat st;
	cJSON *doc = NULL;
	const last_entry *e;
	int rc = LM_OK, dummy;

	*out = NULL;
	recorded = recorded ? recorded : &dummy;
	*recorded = 0;
	if (ledger_path(path, sizeof path, state, key) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if (want_text(kind, sizeof kind, w) < 0)
		return lm_err(err, LM_EINPUT, "ledger: a payload, profile or workload too long to look up");
	if (stat(path, &st) != 0)
		return errno == ENOENT ? LM_OK : lm_err(err, LM_EFAIL, "%s: %s", path, strerror(errno));
	pthread_mutex_lock(&last_mu);
	if ((e = last_find(path, kind)) != NULL && same_file(&e->id, &st)) {
		*recorded = 1;
		if (e->last && (*out = cJSON_Duplicate(e->last, 1)) == NULL)
			rc = lm_err(err, LM_EFAIL, "out of memory");
	} else if ((rc = read_doc(&doc, path, err)) == LM_OK && doc != NULL) {
		const cJSON *last = ledger_verdict(doc, w);

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

/* ledger_deployed's cache: per document, as of its inode, size and mtime, "VM\nSHA" of every
 * passing deploy record, sorted. Filled under last_mu (one parse at a time); a few entries. */
typedef struct {
	char *path;
	file_id id;
	char **pairs;
	size_t n;
} deployed_entry;

static deployed_entry deployed_cache[4];
static size_t deployed_next;

static int
cmp_pair(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
deployed_clear(deployed_entry *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->pairs[i]);
	free(e->pairs);
	free(e->path);
	memset(e, 0, sizeof *e);
}

/* Under last_mu: fills e for path from doc (NULL: no document) as of st; 0, or -1 out of memory. */
static int
deployed_fill(deployed_entry *e, const char *path, const struct stat *st, const cJSON *doc)
{
	const cJSON *rec, *recs = doc ? cJSON_GetObjectItemCaseSensitive(doc, "records") : NULL;
	size_t cap = (size_t)cJSON_GetArraySize(recs);

	deployed_clear(e);
	if ((e->path = strdup(path)) == NULL || (cap > 0 && (e->pairs = calloc(cap, sizeof *e->pairs)) == NULL))
		goto oom;
	cJSON_ArrayForEach(rec, recs) {
		const char *k = str(rec, "kind"), *vm = str(rec, "vm"), *sha = str(rec, "payloadSha256"), *v = str(rec, "verdict");

		if (k && vm && sha && v && strcmp(k, "deploy") == 0 && strcmp(v, "pass") == 0) {
			size_t len = strlen(vm) + strlen(sha) + 2;

			if ((e->pairs[e->n] = malloc(len)) == NULL)
				goto oom;
			snprintf(e->pairs[e->n++], len, "%s\n%s", vm, sha);
		}
	}
	if (e->n > 1)
		qsort(e->pairs, e->n, sizeof *e->pairs, cmp_pair);
	e->id = file_id_of(st);
	return 0;
oom:
	deployed_clear(e);
	return -1;
}

int
ledger_deployed(int *found, const char *state, const cJSON *key, const char *vm, const char *sha, char *err)
{
	char path[4096], *want = NULL;
	struct stat st;
	deployed_entry *e = NULL;
	cJSON *doc = NULL;
	size_t len;
	int rc = LM_OK;

	*found = 0;
	if (ledger_path(path, sizeof path, state, key) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if (stat(path, &st) != 0)
		return errno == ENOENT ? LM_OK : lm_err(err, LM_EFAIL, "%s: %s", path, strerror(errno));
	len = strlen(vm) + strlen(sha) + 2;
	if ((want = malloc(len)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	snprintf(want, len, "%s\n%s", vm, sha);
	pthread_mutex_lock(&last_mu);
	for (size_t i = 0; i < sizeof deployed_cache / sizeof deployed_cache[0]; i++)
		if (deployed_cache[i].path && strcmp(deployed_cache[i].path, path) == 0)
			e = &deployed_cache[i];
	if (e == NULL || !same_file(&e->id, &st)) {
		if (e == NULL)
			e = &deployed_cache[deployed_next++ % (sizeof deployed_cache / sizeof deployed_cache[0])];
		if ((rc = read_doc(&doc, path, err)) == LM_OK && deployed_fill(e, path, &st, doc) != 0)
			rc = lm_err(err, LM_EFAIL, "out of memory");
		cJSON_Delete(doc);
	}
	if (rc == LM_OK && e->path != NULL)
		*found = bsearch(&want, e->pairs, e->n, sizeof *e->pairs, cmp_pair) != NULL;
	pthread_mutex_unlock(&last_mu);
	free(want);
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
	/* What is renamed into place must read back: never a document that no longer parses. */
	cJSON_Delete(doc);
	if ((doc = cJSON_Parse(text)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "%s: the new document would not parse again (nested too deep?); "
		    "it is not written", path);
		goto done;
	}
	rc = lm_write_file_atomic(path, text, strlen(text), 0600, err);
done:
	free(text);
	cJSON_Delete(doc);
	close(fd); /* releases the lock */
	return rc;
}

/* ctx: the checked record; doc gets a copy. */
static int
append_one(cJSON *doc, void *ctx, char *err)
{
	cJSON *rec = cJSON_Duplicate(ctx, 1);

	if (rec == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(doc, "records"), rec);
	return 1;
}

int
ledger_append(const char *state, const cJSON *key, const cJSON *record, char *err)
{
	cJSON *rec = cJSON_Duplicate(record, 1);
	char when[32], why[160];
	const char *bad;
	int rc;

	if (rec == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if (cJSON_GetObjectItemCaseSensitive(rec, "time") == NULL) {
		now_iso(when);
		cJSON_AddStringToObject(rec, "time", when);
	}
	if ((bad = ledger_record_problem(rec, why)) != NULL) {
		cJSON_Delete(rec);
		return lm_err(err, LM_EINPUT, "ledger: record not written: %s", bad);
	}
	rc = locked_update(state, key, append_one, rec, err);
	cJSON_Delete(rec);
	return rc;
}

/* True when k is one of the '|'-separated kinds. */
static int
kind_in(const char *k, const char *kinds)
{
	size_t n = strlen(k);

	for (const char *p = kinds; *p; p += strcspn(p, "|"), p += *p == '|')
		if (strncmp(p, k, n) == 0 && (p[n] == '|' || p[n] == '\0'))
			return 1;
	return 0;
}

/* A deploy that failed for its workload's own reasons on one VM: no verdict on the version. */
static int
workload_failure(const cJSON *rec)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(rec, "cause");

	return cJSON_IsString(c) && strcmp(c->valuestring, "workload") == 0;
}

const cJSON *
ledger_last(const cJSON *doc, const char *kind)
{
	const cJSON *r, *last = NULL;

	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "kind");

		if (cJSON_IsString(k) && kind_in(k->valuestring, kind) && !workload_failure(r))
			last = r;
	}
	return last;
}

int
ledger_time_cmp(const char *a, const char *b)
{
	int ta = a && time_ok(a), tb = b && time_ok(b), c;
	const char *fa, *fb;

	if (!ta || !tb)
		return ta - tb;
	if ((c = strncmp(a, b, 19)) != 0)
		return c;
	fa = a[19] == '.' ? a + 20 : "Z", fb = b[19] == '.' ? b + 20 : "Z";
	for (; *fa != 'Z' || *fb != 'Z'; fa += *fa != 'Z', fb += *fb != 'Z') {
		int da = *fa == 'Z' ? 0 : *fa - '0', db = *fb == 'Z' ? 0 : *fb - '0';

		if (da != db)
			return da - db;
	}
	return 0;
}

/* Whether rec is about the payload w names (ledger_want). */
static int
payload_matches(const cJSON *rec, const ledger_want *w)
{
	const char *sha = str(rec, "payloadSha256"), *prof = str(rec, "profile"), *wl = str(rec, "workload");

	if (w->any_payload)
		return 1;
	return sha != NULL && (w->payload == NULL || strcmp(sha, w->payload) == 0) &&
	    (w->profile == NULL || (prof && strcmp(prof, w->profile) == 0)) &&
	    (w->workload == NULL || (wl && strcmp(wl, w->workload) == 0));
}

const cJSON *
ledger_verdict(const cJSON *doc, const ledger_want *w)
{
	const cJSON *r, *best = NULL;

	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const char *k = str(r, "kind");
		int c;

		if (k == NULL || !kind_in(k, w->kinds) || workload_failure(r) || !payload_matches(r, w))
			continue;
		c = best ? ledger_time_cmp(str(r, "time"), str(best, "time")) : 1;
		/* the same time: a fail wins, else the later in the document */
		if (c > 0 || (c == 0 && (str(best, "verdict") == NULL || strcmp(str(best, "verdict"), "fail") != 0 ||
		    (str(r, "verdict") && strcmp(str(r, "verdict"), "fail") == 0))))
			best = r;
	}
	return best;
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
ledger_readable(const char *state, char *err)
{
	char dir[4200], path[4400], msg[LM_ERRLEN], c;
	char **names = NULL;
	size_t n = 0;
	struct stat st;
	DIR *d;
	int rc = LM_OK;

	if (lm_fmt(dir, sizeof dir, "%s/ledger", state) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if (stat(state, &st) != 0)
		return errno == ENOENT ? LM_OK : lm_err(err, LM_EINPUT, "cannot be read: %s: %s", state, strerror(errno));
	if ((d = opendir(state)) == NULL)
		return lm_err(err, LM_EINPUT, "cannot be read: %s: %s", state, strerror(errno));
	closedir(d);
	if (list_docs(&names, &n, dir, msg) != LM_OK)
		return lm_err(err, LM_EINPUT, "cannot be read: %s", msg);
	for (size_t i = 0; i < n && rc == LM_OK; i++) {
		int fd;

		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		/* O_NONBLOCK: a FIFO in the ledger's place answers here instead of holding the open. */
		if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) < 0)
			rc = lm_err(err, LM_EINPUT, "cannot be read: %s: %s", path, strerror(errno));
		else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
			rc = lm_err(err, LM_EINPUT, "cannot be read: %s: not a regular file", path);
		else if (read(fd, &c, 1) < 0)
			rc = lm_err(err, LM_EINPUT, "cannot be read: %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	free_names(names, n);
	return rc;
}

int
ledger_each(const char *state, int (*fn)(const cJSON *doc, const char *path, void *ctx), void *ctx, char *err)
{
	char dir[4200], path[4400], first[LM_ERRLEN] = "";
	char **names;
	size_t n;
	int rc, bad = 0;

	if (lm_fmt(dir, sizeof dir, "%s/ledger", state) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if ((rc = list_docs(&names, &n, dir, err)) != LM_OK)
		goto done;
	for (size_t i = 0; i < n && rc == LM_OK; i++) {
		cJSON *doc;

		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		/* One document that does not read costs only its own image version. */
		if (read_doc(&doc, path, bad ? NULL : first) != LM_OK) {
			bad++;
			continue;
		}
		if (doc != NULL) {
			rc = fn(doc, path, ctx);
			cJSON_Delete(doc);
		}
	}
	if (rc == LM_OK && bad > 0)
		rc = bad > 1 ? lm_err(err, LM_EFAIL, "%s (%d unreadable documents in all); every other document was "
		    "read", first, bad) : lm_err(err, LM_EFAIL, "%s; every other document was read", first);
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
	int done;            /* merged already (with an earlier one for the same target), or skipped */
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

/* Why key is not a key as ledger_key makes one, or NULL. */
static const char *
key_problem(const cJSON *key, char why[160])
{
	static const char *const fields[] = {"image", "imageDigest", "guestOS", "guestBuild", "guestModel", "hostChip",
	    "hostModel", "hostOS", "hostBuild"};
	const cJSON *f;
	char name[48];
	size_t i;

	if (!cJSON_IsObject(key))
		return "no \"key\" object";
	cJSON_ArrayForEach(f, key) {
		for (i = 0; i < sizeof fields / sizeof fields[0] && strcmp(f->string, fields[i]) != 0; i++)
			;
		if (i == sizeof fields / sizeof fields[0]) {
			snprintf(why, 160, "key: unknown field \"%s\"", lm_printable(name, sizeof name, f->string));
			return why;
		}
		if (!(cJSON_IsString(f) && strlen(f->valuestring) <= LEDGER_STR_MAX) && !cJSON_IsNull(f)) {
			snprintf(why, 160, "key: \"%s\" is neither a string of at most %d bytes nor null", fields[i],
			    LEDGER_STR_MAX);
			return why;
		}
	}
	for (i = 0; i < sizeof fields / sizeof fields[0]; i++)
		/* hostModel and hostOS came with host identity: a key of ledger_key has neither. */
		if (get(key, fields[i]) == NULL && strcmp(fields[i], "hostModel") != 0 && strcmp(fields[i], "hostOS") != 0) {
			snprintf(why, 160, "key: no \"%s\"", fields[i]);
			return why;
		}
	return NULL;
}

/* Why doc is not a ledger document as ledger.c writes one, or NULL when it is. */
static const char *
doc_problem(const cJSON *doc, char why[256])
{
	const cJSON *f = get(doc, "format"), *r;
	const char *bad;
	char w[160];
	int i = 0;

	if (!cJSON_IsObject(doc))
		return "not a JSON object";
	if (f != NULL && (!cJSON_IsNumber(f) || f->valuedouble != 1))
		return "unknown \"format\" (want 1)";
	if ((bad = key_problem(get(doc, "key"), w)) != NULL) {
		snprintf(why, 256, "%s", bad);
		return why;
	}
	if (!cJSON_IsArray(get(doc, "records")))
		return "no \"records\" array";
	cJSON_ArrayForEach(r, get(doc, "records")) {
		if ((bad = ledger_record_problem(r, w)) != NULL) {
			snprintf(why, 256, "records[%d]: %s", i, bad);
			return why;
		}
		i++;
	}
	return NULL;
}

static int
add_source(merge_set *s, const char *state, const char *path, char *err)
{
	char *text = NULL, why[256];
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
	if ((bad = m->doc ? doc_problem(m->doc, why) : "not JSON (or nested too deep)") != NULL)
		return lm_err(err, LM_EINPUT, "%s: not a ledger document: %s; nothing was merged", path, bad);
	if (ledger_path(m->target, sizeof m->target, state, get(m->doc, "key")) < 0)
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
	const char *t = str(r, "time");

	return t ? t : "";
}

/* 1 (err set) when doc, m's target, has another key than m: two keys whose file names collide. */
static int
key_clash(const cJSON *doc, const merge_src *m, char *err)
{
	if (cJSON_Compare(get(doc, "key"), get(m->doc, "key"), 1))
		return 0;
	lm_err(err, LM_EFAIL, "%s: its key differs from that of %s, which has the same name", m->path, m->target);
	return 1;
}

/* A hash of v that cJSON_Compare(a, b, 1) equality keeps: members of an object in any order,
 * and numbers not hashed (cJSON_Compare takes two within a rounding error as equal). */
static uint64_t
hash_json(const cJSON *v)
{
	uint64_t h = 1469598103934665603u ^ (uint64_t)(v->type & 0xff);
	const cJSON *c;

	if (cJSON_IsString(v))
		for (const unsigned char *p = (const unsigned char *)v->valuestring; *p; p++)
			h = (h ^ *p) * 1099511628211u;
	else if (cJSON_IsArray(v))
		cJSON_ArrayForEach(c, v)
			h = (h ^ hash_json(c)) * 1099511628211u;
	else if (cJSON_IsObject(v)) {
		uint64_t sum = 0;

		cJSON_ArrayForEach(c, v) {
			uint64_t k = 1469598103934665603u;

			for (const unsigned char *p = (const unsigned char *)c->string; p && *p; p++)
				k = (k ^ *p) * 1099511628211u;
			k ^= hash_json(c) + 0x9e3779b97f4a7c15u + (k << 6) + (k >> 2);
			sum += k * 0xff51afd7ed558ccdu; /* a sum: member order does not count */
		}
		h ^= sum;
	}
	h ^= h >> 33;
	return h * 0xc4ceb9fe1a85ec53u;
}

/* An open-addressing set of records, by hash_json, equal as cJSON_Compare says. */
typedef struct {
	struct {
		uint64_t h;
		const cJSON *r;
	} *v;
	size_t cap; /* a power of two, at least twice the records it may hold */
} rec_set;

static int
rec_set_init(rec_set *s, size_t n)
{
	for (s->cap = 64; s->cap < 2 * n; s->cap *= 2)
		;
	return (s->v = calloc(s->cap, sizeof *s->v)) ? 0 : -1;
}

/* 1 when an equal record is in s; else adds r (borrowed) and returns 0. */
static int
rec_set_add(rec_set *s, const cJSON *r)
{
	uint64_t h = hash_json(r);
	size_t i = (size_t)h & (s->cap - 1);

	for (; s->v[i].r != NULL; i = (i + 1) & (s->cap - 1))
		if (s->v[i].h == h && cJSON_Compare(s->v[i].r, r, 1))
			return 1;
	s->v[i].h = h, s->v[i].r = r;
	return 0;
}

/* A record merge adds: where it goes (after gap existing records), and its order of arrival. */
typedef struct {
	cJSON *rec;
	const char *time;
	size_t gap, seq;
} merge_new;

static int
cmp_new(const void *a, const void *b)
{
	const merge_new *x = a, *y = b;
	int c;

	if (x->gap != y->gap)
		return x->gap < y->gap ? -1 : 1;
	if ((c = strcmp(x->time, y->time)) != 0)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Puts item after prev (NULL: first) in array, as its last item so far; returns item. */
static cJSON *
link_after(cJSON *array, cJSON *prev, cJSON *item)
{
	item->prev = prev, item->next = NULL;
	if (prev)
		prev->next = item;
	else
		array->child = item;
	return item;
}

typedef struct {
	merge_set *set;
	size_t first;        /* the first source for this target */
	ledger_merge_counts *out;
} merge_run;

/* Adds to doc the records of every source for the same target not already in it, each after
 * the last record whose time is not later than its own, as inserting them one by one in
 * order would: a record's place among the existing ones is after the last one not later
 * (a binary search on the minimum time of each suffix), and the records that land between
 * the same two existing ones are in time order, in order of arrival for equal times. */
static int
merge_into(cJSON *doc, void *ctx, char *err)
{
	merge_run *r = ctx;
	cJSON *records = (cJSON *)get(doc, "records"), *c, **ex = NULL, *prev = NULL;
	const char *target = r->set->v[r->first].target, **sufmin = NULL;
	size_t n = 0, total = 0, nn = 0, k = 0;
	merge_new *add = NULL;
	rec_set set = {0};
	int rc = LM_EFAIL;

	cJSON_ArrayForEach(c, records)
		n++;
	total = n;
	for (size_t i = r->first; i < r->set->n; i++)
		if (!r->set->v[i].done && strcmp(r->set->v[i].target, target) == 0)
			total += (size_t)cJSON_GetArraySize(get(r->set->v[i].doc, "records"));
	if ((ex = calloc(n + 1, sizeof *ex)) == NULL || (sufmin = calloc(n + 1, sizeof *sufmin)) == NULL ||
	    (add = calloc(total - n + 1, sizeof *add)) == NULL || rec_set_init(&set, total) != 0) {
		lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	cJSON_ArrayForEach(c, records) {
		ex[k++] = c;
		rec_set_add(&set, c);
	}
	for (size_t i = n; i-- > 0;)
		sufmin[i] = i + 1 < n && strcmp(sufmin[i + 1], rec_time(ex[i])) < 0 ? sufmin[i + 1] : rec_time(ex[i]);
	for (size_t i = r->first; i < r->set->n; i++) {
		merge_src *m = &r->set->v[i];
		const cJSON *rec;

		if (m->done || strcmp(m->target, target) != 0)
			continue;
		m->done = 1;
		if (key_clash(doc, m, err))
			goto done;
		cJSON_ArrayForEach(rec, get(m->doc, "records")) {
			const char *t = rec_time(rec);
			size_t lo = 0, hi = n;

			if (rec_set_add(&set, rec)) {
				r->out->present++;
				continue;
			}
			/* gap: one past the last existing record not later than t, i.e. the first i with
			 * every record from i on later than t (sufmin[i] > t). */
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (strcmp(sufmin[mid], t) <= 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			if ((add[nn].rec = cJSON_Duplicate(rec, 1)) == NULL) {
				lm_err(err, LM_EFAIL, "out of memory");
				goto done;
			}
			add[nn].time = rec_time(add[nn].rec);
			add[nn].gap = lo;
			add[nn].seq = nn;
			nn++;
		}
	}
	if (nn == 0) {
		rc = 0;
		goto done;
	}
	qsort(add, nn, sizeof *add, cmp_new);
	/* Relink: for each gap its new records, then the existing record that closes it. */
	records->child = NULL;
	k = 0;
	for (size_t g = 0; g <= n; g++) {
		for (; k < nn && add[k].gap == g; k++) {
			prev = link_after(records, prev, add[k].rec);
			add[k].rec = NULL;
			r->out->merged++;
		}
		if (g < n)
			prev = link_after(records, prev, ex[g]);
	}
	records->child->prev = prev; /* cJSON keeps the last item in the first one's prev */
	rc = 1;
done:
	for (size_t i = 0; add && i < nn; i++)
		cJSON_Delete(add[i].rec);
	free(set.v);
	free(add);
	free(sufmin);
	free(ex);
	return rc;
}

int
ledger_merge(ledger_merge_counts *out, const char *state, const char *const *srcs, size_t nsrcs, char *err)
{
	char first[LM_ERRLEN] = "";
	merge_set set = {0};
	int rc = LM_OK, bad = 0;

	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < nsrcs && rc == LM_OK; i++)
		rc = add_arg(&set, state, srcs[i], err);
	/* A document of state that does not parse costs only its image version: its sources are
	 * skipped. Another key under the same file name stops the merge before anything is written. */
	for (size_t i = 0; i < set.n && rc == LM_OK; i++) {
		cJSON *doc;

		if (set.v[i].done)
			continue;
		if (read_doc(&doc, set.v[i].target, bad ? NULL : first) != LM_OK) {
			bad++;
			for (size_t j = i; j < set.n; j++)
				if (strcmp(set.v[j].target, set.v[i].target) == 0)
					set.v[j].done = 1;
			continue;
		}
		if (doc != NULL && key_clash(doc, &set.v[i], err))
			rc = LM_EFAIL;
		cJSON_Delete(doc);
	}
	out->sources = (int)set.n;
	for (size_t i = 0; i < set.n && rc == LM_OK; i++) {
		merge_run r = {.set = &set, .first = i, .out = out};
		int before = out->merged;

		if (set.v[i].done)
			continue;
		rc = locked_update(state, get(set.v[i].doc, "key"), merge_into, &r, err);
		if (rc == LM_OK && out->merged > before)
			out->documents++;
	}
	if (rc == LM_OK && bad > 0)
		rc = lm_err(err, LM_EFAIL, "%s; %s not merged into it, every other document was", first,
		    bad > 1 ? "these and more sources were" : "its sources were");
	merge_set_free(&set);
	return rc;
}

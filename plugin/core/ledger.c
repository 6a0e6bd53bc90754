/* ledger: records and keys, their checks and the verdict of a document in memory; see
 * ledger.h. The database is ledger_store.c's. */
#include "core/ledger.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/ledger_int.h"
#include "core/util.h"

#define PROBE_STR 200   /* bytes of a string of a probe summary */
#define PROBE_LIST 8     /* shim processes, expect differences */
#define PROBE_FAMILIES 32
#define FIELD_MAX 4096   /* bytes of any string of a record */
#define ITEMS_MAX 256    /* items of any array or object of a record */

const cJSON *
lj_get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

#define get lj_get

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
	const char *v = lm_jstr(from, k);

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
	const char *h = lm_jstr(rec, "host"), *a = lm_jstr(rec, "address"), *r = NULL;
	const cJSON *reasons = get(rec, "reasons");

	if (cJSON_IsArray(reasons) && cJSON_IsString(cJSON_GetArrayItem(reasons, 0)))
		r = cJSON_GetArrayItem(reasons, 0)->valuestring;
	if (h || a)
		snprintf(where, sizeof where, " (%s%s%s%s%s)", h ? "host " : "", h ? lm_printable(host, sizeof host, h) : "",
		    h && a ? ", " : "", a ? "address " : "", a ? lm_printable(addr, sizeof addr, a) : "");
	snprintf(out, len, "VM %s%s at %s%s%s", lm_printable(vm, sizeof vm, lm_jstr(rec, "vm")), where,
	    lm_printable(t, sizeof t, lm_jstr(rec, "time")), r ? ": " : "", r ? lm_printable(why, sizeof why, r) : "");
	return out;
}

/* 1 when t is a time as ledger_now writes it (2026-01-31T23:59:59Z), with or without a
 * fraction of a second (at most nine digits). */
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

void
ledger_sort_time(char out[40], const char *t)
{
	size_t d = 0;

	*out = '\0';
	if (t == NULL || !time_ok(t))
		return;
	memcpy(out, t, 19);
	out[19] = '.';
	if (t[19] == '.')
		for (; isdigit((unsigned char)t[20 + d]); d++)
			out[20 + d] = t[20 + d];
	for (; d < 9; d++)
		out[20 + d] = '0';
	memcpy(out + 29, "Z", 2);
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
	const char *kind = lm_jstr(rec, "kind"), *verdict = lm_jstr(rec, "verdict"), *vm = lm_jstr(rec, "vm"), *t = lm_jstr(rec, "time");
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
		if (lm_jstr(rec, "result") == NULL)
			return "a rollback record has no \"result\" string";
	} else if (strcmp(kind, "validate") == 0) {
		if (verdict == NULL || (strcmp(verdict, "pass") != 0 && strcmp(verdict, "fail") != 0))
			return "a validate record's \"verdict\" is not \"pass\" or \"fail\"";
	} else if (strcmp(kind, LEDGER_OBSERVE) == 0) {
		if (lm_jstr(rec, "result") == NULL || lm_jstr(rec, "payloadSha256") == NULL)
			return "an observe record has no \"result\" or no \"payloadSha256\" string";
	} else if (strcmp(kind, "bench") == 0) {
		if (verdict == NULL || (strcmp(verdict, "effective") != 0 && strcmp(verdict, "not-effective") != 0 &&
		    strcmp(verdict, "unknown") != 0))
			return "a bench record's \"verdict\" is not \"effective\", \"not-effective\" or \"unknown\"";
		if (!cJSON_IsObject(get(rec, "bench")))
			return "a bench record has no \"bench\" object";
	} else {
		snprintf(why, 160, "unknown \"kind\" \"%s\" (deploy, golden, rollback, bench, validate or observe)",
		    lm_printable(name, sizeof name, kind));
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
	const char *src = lm_jstr(rec, "source");

	if (cJSON_IsObject(imp))
		return lm_jstr(imp, k);
	/* an older ledger: its importer set these at the top level, beside "source":"registry" */
	if (src != NULL && strcmp(src, "registry") == 0 && (strcmp(k, "signer") == 0 || strcmp(k, "artifact") == 0))
		return lm_jstr(rec, k);
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
	const char *d = lm_jstr(key, "imageDigest"), *img = lm_jstr(key, "image");

	if (ref == NULL)
		ref = img ? img : "unknown";
	if (d && strncmp(d, "sha256:", 7) == 0)
		snprintf(out, len, "%s@sha256:%.8s\u2026", ref, d + 7);
	else
		snprintf(out, len, "%s (%s)", ref, get(key, "hostModel") ? "no digest" : "old key");
	return out;
}

int
ledger_key_hash(char out[65], const cJSON *key)
{
	char *text = cJSON_PrintUnformatted(key);

	if (text == NULL)
		return -1;
	lm_sha256_hex(out, text, strlen(text));
	free(text);
	return 0;
}

int
ledger_key_name(char out[17], const cJSON *key)
{
	char sha[65];

	if (ledger_key_hash(sha, key) < 0)
		return -1;
	memcpy(out, sha, 16);
	out[16] = '\0';
	return 0;
}

int
ledger_path(char *out, size_t len, const char *state, const cJSON *key)
{
	char name[17];

	return ledger_key_name(name, key) < 0 ? -1 : lm_fmt(out, len, "%s/ledger/%s.json", state, name);
}

int
ledger_doc_name(char *out, size_t len, const char *state, const cJSON *key)
{
	char name[17];

	return ledger_key_name(name, key) < 0 ? -1 : lm_fmt(out, len, "%s/ledger.db#%s", state, name);
}

void
ledger_now(char out[32])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
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
	const char *sha = lm_jstr(rec, "payloadSha256"), *prof = lm_jstr(rec, "profile"), *wl = lm_jstr(rec, "workload");

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
		const char *k = lm_jstr(r, "kind");
		int c;

		if (k == NULL || !kind_in(k, w->kinds) || workload_failure(r) || !payload_matches(r, w))
			continue;
		c = best ? ledger_time_cmp(lm_jstr(r, "time"), lm_jstr(best, "time")) : 1;
		/* the same time: a fail wins, else the later in the document */
		if (c > 0 || (c == 0 && (lm_jstr(best, "verdict") == NULL || strcmp(lm_jstr(best, "verdict"), "fail") != 0 ||
		    (lm_jstr(r, "verdict") && strcmp(lm_jstr(r, "verdict"), "fail") == 0))))
			best = r;
	}
	return best;
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

const char *
ledger_doc_problem(const cJSON *doc, char why[256])
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

const char *
ledger_doc_ref(const cJSON *doc)
{
	const cJSON *recs = cJSON_GetObjectItemCaseSensitive(doc, "records");

	for (const cJSON *r = cJSON_IsArray(recs) ? cJSON_GetArrayItem(recs, cJSON_GetArraySize(recs) - 1) : NULL; r;
	    r = r->prev != NULL && r->prev->next != NULL ? r->prev : NULL)
		if (lm_jstr(r, "image") != NULL)
			return lm_jstr(r, "image");
	return lm_jstr(cJSON_GetObjectItemCaseSensitive(doc, "key"), "image");
}

int
ledger_doc_is(const cJSON *doc, const char *ref)
{
	const cJSON *r, *key = cJSON_GetObjectItemCaseSensitive(doc, "key");

	if (lm_jstr(key, "image") != NULL && strcmp(lm_jstr(key, "image"), ref) == 0)
		return 1;
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records"))
		if (lm_jstr(r, "image") != NULL && strcmp(lm_jstr(r, "image"), ref) == 0)
			return 1;
	return 0;
}

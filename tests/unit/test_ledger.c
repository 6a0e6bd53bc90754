/* The ledger: records per image version, 32 concurrent writers, corrupt files left alone,
 * ledgers of other machines merged in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ledger.h"
#include "unit.h"
#include "util.h"

static char dir[] = "/tmp/lm-unit-ledger.XXXXXX";

static int
count(const cJSON *doc, const char *path, void *ctx)
{
	(void)path;
	*(int *)ctx += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "records"));
	return 0;
}

/* Appends a record of kind deploy for vm at time t. */
static int
put(const char *state, const cJSON *key, const char *vm, const char *t, char *err)
{
	cJSON *r = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(r, "kind", "deploy");
	cJSON_AddStringToObject(r, "verdict", "pass");
	cJSON_AddStringToObject(r, "vm", vm);
	cJSON_AddStringToObject(r, "time", t);
	rc = ledger_append(state, key, r, err);
	cJSON_Delete(r);
	return rc;
}

/* The "vm" fields of key's records in order, joined by spaces, into out. */
static void
vms(char *out, size_t len, const char *state, const cJSON *key)
{
	cJSON *doc = NULL;
	const cJSON *r;
	char err[LM_ERRLEN];

	*out = '\0';
	if (ledger_load(&doc, state, key, err) != LM_OK || doc == NULL)
		return;
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		size_t l = strlen(out);

		snprintf(out + l, len - l, "%s%s", l ? " " : "", cJSON_GetObjectItemCaseSensitive(r, "vm")->valuestring);
	}
	cJSON_Delete(doc);
}

/* Every file under dir with its contents, as one string (caller frees). */
static char *
snapshot(const char *d)
{
	char cmd[4200], *out = NULL;
	size_t len = 0;
	FILE *f, *m = open_memstream(&out, &len);

	snprintf(cmd, sizeof cmd, "cd '%s' && find . -type f | LC_ALL=C sort | xargs cat", d);
	if ((f = popen(cmd, "r")) != NULL) {
		int c;

		while ((c = fgetc(f)) != EOF)
			fputc(c, m);
		pclose(f);
	}
	fclose(m);
	return out;
}

/* Writes text to path: a damaged or foreign document. */
static void
write_text(const char *path, const char *text)
{
	char err[LM_ERRLEN];

	if (lm_write_file_atomic(path, text, strlen(text), 0600, err) != LM_OK)
		fprintf(stderr, "# %s\n", err);
}

/* ledger_merge of src[0..nsrc) into state; *same: state's files are as they were before. */
static int
merge_same(ledger_merge_counts *n, int *same, const char *state, const char **src, size_t nsrc, char *err)
{
	char *before = snapshot(state), *after;
	int rc = ledger_merge(n, state, src, nsrc, err);

	after = snapshot(state);
	*same = before && after && strcmp(before, after) == 0;
	free(before), free(after);
	return rc;
}

static void
test_merge(const cJSON *k, const cJSON *k2)
{
	char err[LM_ERRLEN] = "", a[4200], b[4200], c[4200], got[512], path[4400];
	ledger_merge_counts n;
	const char *src[2];
	int rc, same;

	snprintf(a, sizeof a, "%s/a", dir), snprintf(b, sizeof b, "%s/b", dir), snprintf(c, sizeof c, "%s/c", dir);
	/* a: vm1 at 01, vm3 at 03 for k. b: vm4 at 04, vm1 at 01 (the same record), vm2 at 02 and
	 * vm0 at 00 for k; vm9 for k2, which a has not. */
	rc = put(a, k, "vm1", "2026-01-01T00:00:01Z", err) | put(a, k, "vm3", "2026-01-01T00:00:03Z", err);
	rc |= put(b, k, "vm4", "2026-01-01T00:00:04Z", err) | put(b, k, "vm1", "2026-01-01T00:00:01Z", err);
	rc |= put(b, k, "vm2", "2026-01-01T00:00:02Z", err) | put(b, k2, "vm9", "2026-01-01T00:00:09Z", err);
	rc |= put(b, k, "vm0", "2026-01-01T00:00:00Z", err);
	UNIT_OK(rc == LM_OK, "two states with overlapping records %s", err);

	src[0] = b;
	rc = ledger_merge(&n, a, src, 1, err);
	UNIT_OK(rc == LM_OK && n.merged == 4 && n.present == 1 && n.documents == 2 && n.sources == 2,
	    "merging a state adds the 4 new records to 2 documents, 1 already present (%d %d %d %d) %s",
	    n.merged, n.present, n.documents, n.sources, rc ? err : "");
	vms(got, sizeof got, a, k);
	UNIT_OK(strcmp(got, "vm0 vm1 vm2 vm3 vm4") == 0, "... in time order (%s)", got);
	vms(got, sizeof got, a, k2);
	UNIT_OK(strcmp(got, "vm9") == 0, "... and a document a had not is created (%s)", got);
	ledger_path(path, sizeof path, a, k2);
	UNIT_OK(access(path, F_OK) == 0, "... under the same file name as on b");

	snprintf(path, sizeof path, "%s/ledger", b);
	src[0] = path;
	rc = merge_same(&n, &same, a, src, 1, err);
	UNIT_OK(rc == LM_OK && n.merged == 0 && n.present == 5 && n.documents == 0,
	    "merging again (its ledger directory) adds nothing: %d present", n.present);
	UNIT_OK(same, "... and writes nothing");

	/* A corrupt source, read after a good one, stops the whole merge before a byte is written. */
	put(c, k, "vm5", "2026-01-01T00:00:05Z", err);
	snprintf(path, sizeof path, "%s/ledger/ffffffffffffffff.json", c);
	write_text(path, "{\"key\": {}, \"records\": [\"not a record\"]}");
	src[0] = c;
	rc = merge_same(&n, &same, a, src, 1, err);
	UNIT_OK(rc == LM_EINPUT, "a source with a bad record is refused");
	UNIT_HAS(err, path, "... naming its path");
	UNIT_HAS(err, "records[0]", "... and the record");
	UNIT_OK(same, "... and nothing from the good document is written");

	src[0] = b, src[1] = "/nonexistent/ledger";
	rc = ledger_merge(&n, a, src, 2, err);
	UNIT_OK(rc == LM_EINPUT, "a missing source is an input error");
	UNIT_HAS(err, "/nonexistent/ledger", "... naming it");

	/* A document of the target that does not parse is reported and left alone. */
	ledger_path(path, sizeof path, a, k2);
	write_text(path, "{\"key\": ");
	src[0] = b;
	rc = merge_same(&n, &same, a, src, 1, err);
	UNIT_OK(rc == LM_EFAIL, "a corrupt document of the target stops the merge");
	UNIT_HAS(err, path, "... naming it");
	UNIT_OK(same, "... before anything is written");
}

/* ledger_load_last: the last record of a kind, fresh after every append (its cache must not
 * serve a stale copy, even for appends within one second), and an error for a corrupt document. */
static void
test_load_last(const char *state, const cJSON *k)
{
	char err[LM_ERRLEN] = "", path[4096];
	cJSON *rec = cJSON_CreateObject(), *last = NULL;
	const cJSON *v;
	int recorded = -1, stale = 0;

	UNIT_OK(ledger_load_last(&last, &recorded, state, k, "deploy", err) == LM_OK && last == NULL && recorded == 0,
	    "load_last: no document, no record");
	cJSON_AddStringToObject(rec, "kind", "deploy");
	cJSON_AddStringToObject(rec, "vm", "");
	for (int i = 0; i < 40; i++) {
		char vm[16];

		snprintf(vm, sizeof vm, "vm%d", i);
		cJSON_ReplaceItemInObject(rec, "kind", cJSON_CreateString(i == 39 ? "bench" : "deploy"));
		cJSON_ReplaceItemInObject(rec, "vm", cJSON_CreateString(vm));
		ledger_append(state, k, rec, err);
		for (int twice = 0; twice < 2; twice++) {
			ledger_load_last(&last, &recorded, state, k, "deploy", err);
			v = last ? cJSON_GetObjectItemCaseSensitive(last, "vm") : NULL;
			snprintf(vm, sizeof vm, "vm%d", i == 39 ? 38 : i);
			stale += !cJSON_IsString(v) || strcmp(v->valuestring, vm) != 0 || !recorded;
			cJSON_Delete(last);
		}
	}
	UNIT_OK(stale == 0, "load_last: each of 40 appends seen at once, twice, a later bench record skipped (%d stale)", stale);
	UNIT_OK(ledger_load_last(&last, &recorded, state, k, "rollback", err) == LM_OK && last == NULL && recorded == 1,
	    "load_last: no record of that kind in an existing document");
	ledger_path(path, sizeof path, state, k);
	write_text(path, "{not json");
	UNIT_OK(ledger_load_last(&last, &recorded, state, k, "deploy", err) == LM_EFAIL && last == NULL,
	    "load_last: a corrupt document is an error (%s)", err);
	cJSON_Delete(rec);
}

int
main(void)
{
	char err[LM_ERRLEN] = "", path[4096], *before = NULL, *after = NULL;
	cJSON *k = ledger_key("ghcr.io/trycua/macos-tahoe-cua:latest", NULL, "26.5.2", "25F84", "VirtualMac2,1",
	    "Apple M1 Ultra", "25G76");
	cJSON *k2 = ledger_key("ghcr.io/trycua/macos-tahoe-cua:latest", NULL, "26.6", "25G5", "VirtualMac2,1",
	    "Apple M1 Ultra", "25G76");
	cJSON *rec = cJSON_CreateObject(), *doc = NULL;
	const cJSON *last;
	int rc, n = 0, ok = 1;

	if (mkdtemp(dir) == NULL)
		return 2;
	rc = ledger_load(&doc, dir, k, err);
	UNIT_OK(rc == LM_OK && doc == NULL, "an unrecorded image version has no document");

	cJSON_AddStringToObject(rec, "kind", "deploy");
	cJSON_AddStringToObject(rec, "verdict", "fail");
	rc = ledger_append(dir, k, rec, err);
	cJSON_ReplaceItemInObject(rec, "verdict", cJSON_CreateString("pass"));
	rc |= ledger_append(dir, k, rec, err);
	cJSON_ReplaceItemInObject(rec, "kind", cJSON_CreateString("rollback"));
	rc |= ledger_append(dir, k, rec, err);
	UNIT_OK(rc == LM_OK, "three records are appended %s", rc ? err : "");
	rc = ledger_load(&doc, dir, k, err);
	last = doc ? ledger_last(doc, "deploy") : NULL;
	UNIT_OK(rc == LM_OK && doc && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "records")) == 3,
	    "they are all in one document for the key");
	UNIT_OK(last && strcmp(cJSON_GetObjectItemCaseSensitive(last, "verdict")->valuestring, "pass") == 0 &&
	    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(last, "time")), "the last deploy record is the pass, timed");
	UNIT_OK(doc && cJSON_Compare(cJSON_GetObjectItemCaseSensitive(doc, "key"), k, 1), "the document holds its key");
	cJSON_Delete(doc);
	rc = ledger_load(&doc, dir, k2, err);
	UNIT_OK(rc == LM_OK && doc == NULL, "another guest build is another image version");

	/* 32 processes append to one key at once. */
	cJSON_ReplaceItemInObject(rec, "kind", cJSON_CreateString("deploy"));
	for (int i = 0; i < 32; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			cJSON_AddNumberToObject(rec, "writer", i);
			_exit(ledger_append(dir, k2, rec, err) == LM_OK ? 0 : 1);
		}
	}
	for (int i = 0; i < 32; i++) {
		int st;

		wait(&st);
		ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	rc = ledger_load(&doc, dir, k2, err);
	UNIT_OK(ok && rc == LM_OK && doc && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "records")) == 32,
	    "32 concurrent writers lose no record and leave valid JSON");
	if (doc) {
		int seen[32] = {0}, all = 1;
		const cJSON *r;

		cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records"))
			seen[(int)cJSON_GetObjectItemCaseSensitive(r, "writer")->valuedouble & 31]++;
		for (int i = 0; i < 32; i++)
			all &= seen[i] == 1;
		UNIT_OK(all, "... each writer's record exactly once");
	}
	cJSON_Delete(doc);
	UNIT_OK(ledger_each(dir, count, &n, err) == LM_OK && n == 35, "ledger_each walks every document (35 records)");

	/* A corrupt document is reported and never overwritten. */
	ledger_path(path, sizeof path, dir, k);
	write_text(path, "{\"key\": {}, \"records\": [");
	lm_read_file(&before, NULL, path, 1 << 20, NULL);
	rc = ledger_append(dir, k, rec, err);
	UNIT_OK(rc == LM_EFAIL, "appending to a corrupt document is refused");
	UNIT_HAS(err, path, "... naming its path");
	lm_read_file(&after, NULL, path, 1 << 20, NULL);
	UNIT_OK(before && after && strcmp(before, after) == 0, "... and the file is left as it was");
	UNIT_OK(ledger_each(dir, count, &n, err) == LM_EFAIL, "walking the ledger reports it too");
	free(before), free(after);

	test_merge(k, k2);
	snprintf(path, sizeof path, "%s/last", dir);
	if (mkdir(path, 0700) == 0)
		test_load_last(path, k);

	cJSON_Delete(k), cJSON_Delete(k2), cJSON_Delete(rec);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	if (system(path) != 0)
		return 2;
	UNIT_DONE();
}

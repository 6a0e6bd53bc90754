/* The ledger: records per image version, 32 concurrent writers, corrupt files left alone,
 * ledgers of other machines merged in. The database itself (foreign files, SIGKILLed writers,
 * the migration, prune) is test_ledger_store's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/ledger.h"
#include "unit.h"
#include "core/util.h"

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

static void test_merge_shapes(const char *a, const char *c, const char *path);

static void
test_merge(const cJSON *k, const cJSON *k2)
{
	char err[LM_ERRLEN] = "", a[4200], b[4200], c[4200], got[512], path[4400], *text = NULL;
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

	snprintf(path, sizeof path, "%s/ledger.db", b);
	src[0] = path;
	rc = merge_same(&n, &same, a, src, 1, err);
	UNIT_OK(rc == LM_OK && n.merged == 0 && n.present == 5 && n.documents == 0,
	    "merging again (its database file) adds nothing: %d present", n.present);
	UNIT_OK(same, "... and writes nothing");
	snprintf(path, sizeof path, "%s/ledger", b);
	src[0] = path;
	rc = ledger_merge(&n, a, src, 1, err);
	UNIT_OK(rc == LM_OK && n.sources == 0, "its migrated ledger/ holds no document to merge (the marker is none)");

	/* A corrupt source, read after a good one, stops the whole merge before a byte is written. */
	put(c, k, "vm5", "2026-01-01T00:00:05Z", err);
	snprintf(path, sizeof path, "%s/ledger/ffffffffffffffff.json", c);
	write_text(path, "{\"key\": {}, \"records\": [\"not a record\"]}");
	src[0] = c;
	rc = merge_same(&n, &same, a, src, 1, err);
	UNIT_OK(rc == LM_EINPUT, "a source with a bad key is refused");
	UNIT_HAS(err, path, "... naming its path");
	UNIT_HAS(err, "key: no \"image\"", "... and what is wrong");
	UNIT_OK(same, "... and nothing from the good document is written");
	test_merge_shapes(a, c, path);

	src[0] = b, src[1] = "/nonexistent/ledger";
	rc = ledger_merge(&n, a, src, 2, err);
	UNIT_OK(rc == LM_EINPUT, "a missing source is an input error");
	UNIT_HAS(err, "/nonexistent/ledger", "... naming it");

	/* A document of the target that does not read (a JSON document an older lume-metal left
	 * there, not migrated) costs only its image version. */
	put(b, k, "vm6", "2026-01-01T00:00:06Z", err);
	snprintf(a, sizeof a, "%s/a2", dir);
	snprintf(path, sizeof path, "%s/ledger", a);
	mkdir(a, 0700), mkdir(path, 0700);
	ledger_path(path, sizeof path, a, k2);
	write_text(path, "{\"key\": ");
	src[0] = b;
	rc = ledger_merge(&n, a, src, 1, err);
	UNIT_OK(rc == LM_EFAIL, "a corrupt document of the target fails the merge");
	UNIT_HAS(err, path, "... naming it");
	vms(got, sizeof got, a, k);
	UNIT_OK(strcmp(got, "vm0 vm1 vm2 vm4 vm6") == 0 && n.merged == 5 && n.documents == 1,
	    "... after merging every other image version (%s; %d merged)", got, n.merged);
	lm_read_file(&text, NULL, path, 1 << 20, NULL);
	UNIT_OK(text && strcmp(text, "{\"key\": ") == 0, "... and leaves the corrupt one as it was");
	free(text);
}

/* A document for key k holding records (a JSON array's text), written at path. */
static void
write_doc(const char *path, const char *records)
{
	char text[8192];

	snprintf(text, sizeof text, "{\"format\":1,\"key\":{\"image\":\"i\",\"imageDigest\":null,\"guestOS\":\"26.5.2\","
	    "\"guestBuild\":\"25F84\",\"guestModel\":\"m\",\"hostChip\":\"c\",\"hostBuild\":\"b\"},\"records\":%s}", records);
	write_text(path, text);
}

/* ledger merge checks each record's shape: every bad one is refused naming the file, the
 * record's index and what is wrong, and nothing is written. */
static void
test_merge_shapes(const char *a, const char *c, const char *path)
{
#define GOOD "{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"pass\",\"time\":\"2026-01-01T00:00:00Z\"}"
	static const struct {
		const char *rec, *why;
	} bad[] = {
		{"{\"vm\":\"v\",\"verdict\":\"fail\",\"time\":\"2026-01-01T00:00:00Z\"}", "no \"kind\""},
		{"{\"kind\":\"status\",\"vm\":\"v\",\"time\":\"2026-01-01T00:00:00Z\"}", "unknown \"kind\" \"status\""},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":true,\"time\":\"2026-01-01T00:00:00Z\"}", "\"verdict\""},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"maybe\",\"time\":\"2026-01-01T00:00:00Z\"}", "\"verdict\""},
		{"{\"kind\":\"deploy\",\"verdict\":\"fail\",\"time\":\"2026-01-01T00:00:00Z\"}", "no \"vm\""},
		{"{\"kind\":\"deploy\",\"vm\":7,\"verdict\":\"fail\",\"time\":\"2026-01-01T00:00:00Z\"}", "no \"vm\""},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"fail\"}", "no \"time\""},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"fail\",\"time\":\"yesterday\"}", "no \"time\""},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"fail\",\"time\":\"2026-01-01T00:00:00Z\",\"host\":1}",
		    "\"host\" is neither a string nor null"},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"fail\",\"time\":\"2026-01-01T00:00:00Z\",\"reasons\":\"x\"}",
		    "\"reasons\""},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"fail\",\"time\":\"2026-01-01T00:00:00Z\",\"stock\":[]}",
		    "\"stock\""},
		{"{\"kind\":\"rollback\",\"vm\":\"v\",\"time\":\"2026-01-01T00:00:00Z\"}", "no \"result\""},
		{"{\"kind\":\"bench\",\"vm\":\"v\",\"verdict\":\"effective\",\"time\":\"2026-01-01T00:00:00Z\"}",
		    "no \"bench\""},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"fail\",\"time\":\"2026-01-01T00:00:00Z\","
		    "\"stock\":{\"a\":[[[[[[[[1]]]]]]]]}}", "deeper than"},
		{"\"not a record\"", "not an object"},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"fail\",\"time\":\"2026-01-01T00:00:00Z\",\"cause\":\"vm\"}",
		    "\"cause\""},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"pass\",\"time\":\"2026-01-01T00:00:00Z\",\"cause\":\"workload\"}",
		    "\"cause\""},
		{"{\"kind\":\"golden\",\"vm\":\"v\",\"verdict\":\"fail\",\"time\":\"2026-01-01T00:00:00Z\",\"cause\":\"workload\"}",
		    "\"cause\""},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"pass\",\"time\":\"2026-01-01T00:00:00Z\",\"readyMs\":\"soon\"}",
		    "\"readyMs\""},
		{"{\"kind\":\"deploy\",\"vm\":\"v\",\"verdict\":\"pass\",\"time\":\"2026-01-01T00:00:00Z\",\"readyMs\":-1}",
		    "\"readyMs\""},
	};
	char err[LM_ERRLEN], recs[4096];
	ledger_merge_counts n;
	const char *src[1] = {c};
	int refused = 0, named = 0, same = 1, s1;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(recs, sizeof recs, "[" GOOD ",%s]", bad[i].rec);
		write_doc(path, recs);
		if (merge_same(&n, &s1, a, src, 1, err) == LM_EINPUT)
			refused++;
		else
			printf("# not refused: %s\n", bad[i].rec);
		same &= s1;
		if (strstr(err, path) && strstr(err, "records[1]: ") && strstr(err, bad[i].why))
			named++;
		else
			printf("# %s\n#   wanted records[1] and %s\n", err, bad[i].why);
	}
	UNIT_OK(refused == (int)(sizeof bad / sizeof bad[0]), "merge refuses each of %zu badly shaped records (%d)",
	    sizeof bad / sizeof bad[0], refused);
	UNIT_OK(named == refused, "... naming the file, the record's index and what is wrong");
	UNIT_OK(same, "... and writes nothing");
	write_doc(path, "[" GOOD "]");
	UNIT_OK(ledger_merge(&n, a, src, 1, err) == LM_OK, "a well-shaped record of the same file merges (%s)", err);
	write_text(path, "{\"format\":1,\"key\":{\"image\":1},\"records\":[]}");
	UNIT_OK(merge_same(&n, &s1, a, src, 1, err) == LM_EINPUT && strstr(err, "\"image\"") && s1,
	    "a key field of the wrong type is refused, nothing written (%s)", err);
	unlink(path);
#undef GOOD
}

/* Merge against one-by-one insertion as ledger.h says it: state's records appended out of time
 * order, sources repeating records of it and of each other; a document is in time order, the
 * same time in the order written. */
static void
test_merge_order(const cJSON *k)
{
	char err[LM_ERRLEN] = "", s[4200], t[4200], got[8192], want[8192] = "", vm[32], when[32];
	static char times[200][32], names[200][32];
	ledger_merge_counts n;
	const char *src[1] = {t};
	int rc = LM_OK, nex = 0, order[400], nord = 0;

	snprintf(s, sizeof s, "%s/order-s", dir), snprintf(t, sizeof t, "%s/order-t", dir);
	srand(7);
	for (int i = 0; i < 200; i++) {
		snprintf(when, sizeof when, "2026-01-01T00:00:%02dZ", rand() % 30);
		snprintf(vm, sizeof vm, "x%d", i);
		memcpy(times[i], when, sizeof when), memcpy(names[i], vm, sizeof vm);
	}
	/* state: 60 records in arrival order (times unsorted); the source: 140, some of them the
	 * state's own records again and some twice. */
	for (int i = 0; i < 60; i++) {
		rc |= put(s, k, names[i], times[i], err);
		order[nord++] = i, nex++;
	}
	for (int j = 0; j < 140; j++) {
		int i = j % 7 == 0 ? rand() % 60 : j % 11 == 0 && j > 60 ? 60 + rand() % (j - 60) : 60 + j % 140;

		rc |= put(t, k, names[i], times[i], err);
		/* one by one: present when equal to one there, else written after every other */
		{
			int seen = 0;

			for (int x = 0; x < nord; x++)
				seen |= order[x] == i;
			if (!seen)
				order[nord++] = i;
		}
	}
	/* the document: by time, the same time in the order written (a stable sort) */
	for (int x = 1; x < nord; x++)
		for (int y = x; y > 0 && strcmp(times[order[y - 1]], times[order[y]]) > 0; y--) {
			int t0 = order[y];

			order[y] = order[y - 1], order[y - 1] = t0;
		}
	for (int x = 0; x < nord; x++) {
		size_t l = strlen(want);

		snprintf(want + l, sizeof want - l, "%s%s", x ? " " : "", names[order[x]]);
	}
	rc |= ledger_merge(&n, s, src, 1, err);
	vms(got, sizeof got, s, k);
	UNIT_OK(rc == LM_OK && strcmp(got, want) == 0 && n.merged == nord - nex,
	    "merge adds %d records, each once, in time order among records appended unsorted (%d present)",
	    nord - nex, n.present);
	if (strcmp(got, want) != 0)
		printf("#   got  %s\n#   want %s\n", got, want);
}

/* A guest's answers as a hostile guest sends them: 998 levels deep (cJSON parses 1000), or
 * megabytes long. */
static void
test_hostile(const cJSON *k)
{
	char err[LM_ERRLEN] = "", state[4200], path[4400];
	lm_buf text = {0};
	cJSON *probe, *rec, *sum, *doc = NULL;
	char *big = malloc(4 << 20), *printed;
	size_t size;
	int rc;

	snprintf(state, sizeof state, "%s/hostile", dir);
	/* {"probe":..,"stock":{"x":[[[...1...]]]}}: the guest's answer, at depth 998 */
	lm_buf_addf(&text, "{\"result\":\"failed\",\"stock\":{\"probe\":\"lume-metal-probe\",\"x\":");
	for (int i = 0; i < 998; i++)
		lm_buf_add(&text, "[", 1);
	lm_buf_add(&text, "1", 1);
	for (int i = 0; i < 998; i++)
		lm_buf_add(&text, "]", 1);
	lm_buf_addf(&text, "}}");
	probe = cJSON_Parse(text.data);
	UNIT_OK(probe != NULL, "a 998-deep guest answer parses (cJSON's limit is 1000)");
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "kind", "deploy");
	cJSON_AddStringToObject(rec, "vm", "hostile");
	cJSON_AddStringToObject(rec, "verdict", "fail");
	cJSON_AddItemToObject(rec, "stock", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(probe, "stock"), 1));
	rc = ledger_append(state, k, rec, err);
	UNIT_OK(rc == LM_EINPUT, "a record holding it as sent is refused");
	UNIT_HAS(err, "\"stock\": deeper than", "... saying why");
	rc = ledger_load(&doc, state, k, err);
	UNIT_OK(rc == LM_OK, "... and the image version's document still reads");
	cJSON_Delete(doc);
	sum = ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(probe, "stock"));
	cJSON_ReplaceItemInObject(rec, "stock", sum);
	rc = ledger_append(state, k, rec, err);
	rc |= ledger_load(&doc, state, k, err);
	UNIT_OK(rc == LM_OK && doc != NULL, "its summary is recorded, and the document reads again %s", err);
	UNIT_OK(sum && cJSON_GetObjectItemCaseSensitive(sum, "x") == NULL &&
	    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(sum, "probe")), "... the summary kept \"probe\", not \"x\"");
	cJSON_Delete(doc);
	cJSON_Delete(probe);
	lm_buf_free(&text);

	/* Megabytes: a 4 MiB device name, 10000 families, 10000 differences of 1 KiB, 20 reasons of
	 * 4 MiB. */
	memset(big, 'A', (4 << 20) - 1);
	big[(4 << 20) - 1] = '\0';
	probe = cJSON_CreateObject();
	cJSON_AddStringToObject(cJSON_AddObjectToObject(probe, "device"), "name", big);
	{
		cJSON *fam = cJSON_AddObjectToObject(probe, "families"), *ex = cJSON_AddObjectToObject(probe, "expect");
		cJSON *d = cJSON_AddArrayToObject(ex, "differences"), *sh = cJSON_AddObjectToObject(probe, "shim");
		cJSON *pr = cJSON_AddArrayToObject(sh, "processes");

		for (int i = 0; i < 10000; i++) {
			char f[24];

			snprintf(f, sizeof f, "Apple%d", i);
			cJSON_AddTrueToObject(fam, f);
			big[1024] = '\0';
			cJSON_AddItemToArray(d, cJSON_CreateString(big));
			cJSON_AddItemToArray(pr, cJSON_CreateString(big));
			big[1024] = 'A';
		}
		cJSON_AddStringToObject(sh, "reason", big);
	}
	cJSON_AddStringToObject(probe, "version", big);
	sum = ledger_probe_summary(probe);
	printed = sum ? cJSON_PrintUnformatted(sum) : NULL;
	size = printed ? strlen(printed) : 0;
	UNIT_OK(printed && size < 6 * 1024, "a ~40 MB probe answer is summarized in %zu bytes", size);
	UNIT_OK(sum && cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sum, "expect"), "differencesDropped") &&
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sum, "shim"), "processesDropped"),
	    "... counting what it dropped");
	free(printed);
	cJSON_DeleteItemFromObject(rec, "stock");
	cJSON_AddItemToObject(rec, "stock", sum);
	cJSON_AddItemToObject(rec, "shimmed", ledger_probe_summary(probe));
	for (int i = 0; i < 20; i++)
		ledger_add_reason(rec, big);
	cJSON_AddStringToObject(rec, "time", "2026-01-01T00:00:00Z");
	printed = cJSON_PrintUnformatted(rec);
	size = printed ? strlen(printed) : 0;
	UNIT_OK(size < 16 * 1024 && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rec, "reasons")) == LEDGER_REASONS,
	    "a deploy record of it with 20 reasons of 4 MiB is %zu bytes, %d reasons kept", size, LEDGER_REASONS);
	free(printed);
	rc = ledger_append(state, k, rec, err);
	{
		cJSON *d = NULL;
		char *t = NULL;

		(void)path;
		if (rc == LM_OK && ledger_load(&d, state, k, err) == LM_OK && d != NULL)
			t = cJSON_PrintUnformatted(d);
		UNIT_OK(rc == LM_OK && t && strlen(t) < 32 * 1024, "... and is recorded: the document is %zu bytes %s",
		    t ? strlen(t) : 0, err);
		free(t);
		cJSON_Delete(d);
	}
	cJSON_AddStringToObject(rec, "command", big);
	UNIT_OK(ledger_append(state, k, rec, err) == LM_EINPUT, "a record with a 4 MiB field is refused (%s)", err);
	cJSON_Delete(rec);
	cJSON_Delete(probe);
	free(big);
}

/* ledger_record_who names the VM, host, address, time and reason, printable. */
/* The probe's hook points are kept, for the known four only, so the ledger says per macOS
 * release whether the shim's assumptions hold there. */
static void
test_hook_points(void)
{
	cJSON *p = cJSON_Parse("{\"probe\":\"lume-metal-probe\",\"hookPoints\":{"
	    "\"_MTLDevice\":{\"present\":true},"
	    "\"initGPUFamilySupport\":{\"present\":false,\"types\":null},"
	    "\"supportsFamily:\":{\"present\":true,\"types\":\"B24@0:8q16\",\"x\":[1]},"
	    "\"maxThreadgroupMemoryLength\":{\"present\":true,\"types\":\"Q16@0:8\"},"
	    "\"evil\":{\"present\":true}}}");
	cJSON *s = ledger_probe_summary(p), *h = s ? cJSON_GetObjectItemCaseSensitive(s, "hookPoints") : NULL;
	char *t = h ? cJSON_PrintUnformatted(h) : NULL;

	UNIT_OK(t && strcmp(t, "{\"_MTLDevice\":{\"present\":true},\"initGPUFamilySupport\":{\"present\":false},"
	    "\"supportsFamily:\":{\"present\":true,\"types\":\"B24@0:8q16\"},"
	    "\"maxThreadgroupMemoryLength\":{\"present\":true,\"types\":\"Q16@0:8\"}}") == 0,
	    "the summary keeps the four hook points, present and types only: %s", t ? t : "(none)");
	free(t);
	cJSON_Delete(s);
	cJSON_Delete(p);
}

/* The key of host identity: the digest names the version, the reference is only a label. */
static void
test_identity_key(void)
{
	static const char d[] = "sha256:1a2b3c4d5e6f00112233445566778899aabbccddeeff00112233445566778899";
	ledger_identity id = {.image = "ghcr.io/trycua/macos-tahoe-cua:latest", .digest = d, .guest_os = "26.5.2",
	    .guest_build = "25F84", .guest_model = "VirtualMac2,1", .host_chip = "Apple M1 Ultra",
	    .host_model = "Mac13,2", .host_os = "26.6.1", .host_build = "25G76"};
	cJSON *a = ledger_key_of(&id), *b, *old;
	char pa[600], pb[600], label[200], why[160];
	char *t = cJSON_PrintUnformatted(a);

	UNIT_OK(t && strcmp(t, "{\"imageDigest\":\"sha256:1a2b3c4d5e6f00112233445566778899aabbccddeeff00112233445566778899\","
	    "\"image\":null,\"guestOS\":\"26.5.2\",\"guestBuild\":\"25F84\",\"guestModel\":\"VirtualMac2,1\","
	    "\"hostChip\":\"Apple M1 Ultra\",\"hostModel\":\"Mac13,2\",\"hostOS\":\"26.6.1\",\"hostBuild\":\"25G76\"}") == 0,
	    "a key with a digest holds no reference: %s", t ? t : "");
	free(t);
	id.image = "another/label:tag";
	b = ledger_key_of(&id);
	ledger_path(pa, sizeof pa, "/s", a), ledger_path(pb, sizeof pb, "/s", b);
	UNIT_OK(strcmp(pa, pb) == 0, "... so two references of one digest share a document");
	UNIT_OK(strcmp(ledger_key_label(label, sizeof label, a, NULL), "unknown@sha256:1a2b3c4d\u2026") == 0,
	    "shown without a reference: %s", label);
	UNIT_OK(strcmp(ledger_key_label(label, sizeof label, a, "r:1"), "r:1@sha256:1a2b3c4d\u2026") == 0,
	    "... and with one: %s", label);
	{
		char sa[] = "/tmp/lm-idk.XXXXXX", sb[] = "/tmp/lm-idk.XXXXXX", rm[100];
		const char *src[1] = {sa};
		ledger_merge_counts n;
		cJSON *rec = cJSON_Parse("{\"kind\":\"deploy\",\"vm\":\"a\",\"verdict\":\"pass\"}");
		int rc = mkdtemp(sa) && mkdtemp(sb) ? ledger_append(sa, a, rec, why) : LM_EFAIL;

		rc = rc ? rc : ledger_merge(&n, sb, src, 1, why);
		UNIT_OK(rc == LM_OK && n.merged == 1, "a document of such a key is merged %s", rc ? why : "");
		snprintf(rm, sizeof rm, "rm -rf '%s' '%s'", sa, sb);
		if (system(rm) != 0)
			UNIT_OK(0, "cleaning up");
		cJSON_Delete(rec);
	}
	cJSON_Delete(b);
	id.digest = NULL;
	b = ledger_key_of(&id);
	UNIT_OK(strcmp(ledger_key_label(label, sizeof label, b, NULL), "another/label:tag (no digest)") == 0,
	    "without a digest the reference keys it, said so: %s", label);
	cJSON_Delete(b);
	id.image = NULL;
	b = ledger_key_of(&id);
	UNIT_OK(strcmp(ledger_key_label(label, sizeof label, b, NULL), "unknown (no digest)") == 0,
	    "... and with neither: %s", label);
	old = ledger_key("ghcr.io/trycua/macos-tahoe-cua:latest", NULL, "26.5.2", "25F84", "VirtualMac2,1",
	    "AMD EPYC", "Linux 6.1");
	ledger_path(pa, sizeof pa, "/s", old), ledger_path(pb, sizeof pb, "/s", b);
	UNIT_OK(strcmp(ledger_key_label(label, sizeof label, old, NULL), "ghcr.io/trycua/macos-tahoe-cua:latest (old key)") == 0 &&
	    strcmp(pa, pb) != 0, "an old key is shown as one, in a document of its own: %s", label);
	cJSON_Delete(old), cJSON_Delete(b), cJSON_Delete(a);
}

/* ledger_last takes one kind or several separated by '|': deploy's gate reads "deploy|golden". */
static void
test_last_kinds(void)
{
	cJSON *doc = cJSON_Parse("{\"records\":[{\"kind\":\"deploy\",\"n\":1},{\"kind\":\"golden\",\"n\":2},"
	    "{\"kind\":\"bench\",\"n\":3},{\"kind\":\"deployx\",\"n\":4},{\"kind\":\"gold\",\"n\":5}]}");
	const cJSON *a = ledger_last(doc, "deploy|golden"), *b = ledger_last(doc, "deploy"), *c = ledger_last(doc, "golden|x");

	UNIT_OK(a && cJSON_GetObjectItem(a, "n")->valueint == 2, "deploy|golden: the later of the two kinds");
	UNIT_OK(b && cJSON_GetObjectItem(b, "n")->valueint == 1, "deploy alone: not deployx");
	UNIT_OK(c && cJSON_GetObjectItem(c, "n")->valueint == 2 && ledger_last(doc, "dep|old") == NULL,
	    "whole kinds only: not gold, not a prefix");
	cJSON_Delete(doc);
	/* A deploy that failed for its workload on one VM is no verdict on the image version. */
	doc = cJSON_Parse("{\"records\":[{\"kind\":\"deploy\",\"verdict\":\"pass\",\"n\":1},{\"kind\":\"deploy\","
	    "\"verdict\":\"fail\",\"cause\":\"workload\",\"n\":2},{\"kind\":\"validate\",\"n\":3}]}");
	a = ledger_last(doc, "deploy|golden");
	UNIT_OK(a && cJSON_GetObjectItem(a, "n")->valueint == 1, "a workload failure is skipped: the pass before it");
	cJSON_AddItemToArray(cJSON_GetObjectItem(doc, "records"), cJSON_Parse("{\"kind\":\"deploy\",\"verdict\":"
	    "\"fail\",\"cause\":\"image\",\"n\":4}"));
	a = ledger_last(doc, "deploy");
	UNIT_OK(a && cJSON_GetObjectItem(a, "n")->valueint == 4, "an image failure is the last");
	cJSON_Delete(doc);
}

static void
test_who(void)
{
	cJSON *rec = cJSON_Parse("{\"vm\":\"mac1/tahoe-b\",\"host\":\"mac1\",\"address\":\"192.168.64.5\","
	    "\"time\":\"2026-01-01T00:00:00Z\",\"reasons\":[\"validation failed\\u001b[2J\"]}");
	char out[512];

	ledger_record_who(out, sizeof out, rec);
	UNIT_OK(strcmp(out, "VM mac1/tahoe-b (host mac1, address 192.168.64.5) at 2026-01-01T00:00:00Z: "
	    "validation failed?[2J") == 0, "record_who: %s", out);
	cJSON_Delete(rec);
}

/* sql run on state's database by a connection of its own (what a damaged disk, or a hand, does
 * to it); 0 when it ran. */
static int
db_exec(const char *state, const char *sql)
{
	char path[4200];
	sqlite3 *db = NULL;
	int rc;

	snprintf(path, sizeof path, "%s/ledger.db", state);
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
	    sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	sqlite3_close(db);
	return rc;
}

/* ledger_load_verdict: the newest record of a kind, fresh after every append (even for appends
 * within one second), and an error for a record of the database that is not JSON. */
static void
test_load_last(const char *state, const cJSON *k)
{
	char err[LM_ERRLEN] = "", path[4096];
	cJSON *rec = cJSON_CreateObject(), *last = NULL;
	const cJSON *v;
	int recorded = -1, stale = 0;
	const ledger_want dep = {"deploy", NULL, NULL, NULL, 1}, rb = {"rollback", NULL, NULL, NULL, 1};

	UNIT_OK(ledger_load_verdict(&last, &recorded, state, k, &dep, err) == LM_OK && last == NULL && recorded == 0,
	    "load_last: no document, no record");
	cJSON_AddStringToObject(rec, "kind", "deploy");
	cJSON_AddStringToObject(rec, "vm", "");
	cJSON_AddStringToObject(rec, "verdict", "pass");
	cJSON_AddObjectToObject(rec, "bench");
	for (int i = 0; i < 40; i++) {
		char vm[16];

		snprintf(vm, sizeof vm, "vm%d", i);
		cJSON_ReplaceItemInObject(rec, "kind", cJSON_CreateString(i == 39 ? "bench" : "deploy"));
		cJSON_ReplaceItemInObject(rec, "verdict", cJSON_CreateString(i == 39 ? "effective" : "pass"));
		cJSON_ReplaceItemInObject(rec, "vm", cJSON_CreateString(vm));
		ledger_append(state, k, rec, err);
		for (int twice = 0; twice < 2; twice++) {
			ledger_load_verdict(&last, &recorded, state, k, &dep, err);
			v = last ? cJSON_GetObjectItemCaseSensitive(last, "vm") : NULL;
			snprintf(vm, sizeof vm, "vm%d", i == 39 ? 38 : i);
			stale += !cJSON_IsString(v) || strcmp(v->valuestring, vm) != 0 || !recorded;
			cJSON_Delete(last);
		}
	}
	UNIT_OK(stale == 0, "load_last: each of 40 appends seen at once, twice, a later bench record skipped (%d stale)", stale);
	UNIT_OK(ledger_load_verdict(&last, &recorded, state, k, &rb, err) == LM_OK && last == NULL && recorded == 1,
	    "load_last: no record of that kind in an existing document");
	(void)path;
	UNIT_OK(db_exec(state, "UPDATE records SET record = '{not json' WHERE vm = 'vm38'") == 0,
	    "load_last: a record of the database damaged");
	UNIT_OK(ledger_load_verdict(&last, &recorded, state, k, &dep, err) == LM_EFAIL && last == NULL,
	    "load_last: a corrupt record is an error (%s)", err);
	UNIT_HAS(err, "not JSON", "... saying so");
	cJSON_Delete(rec);
}

/* ledger_verdict: the newest by signed time, never by place (an import appended last, or a
 * registry's list order, decides nothing); a fail wins a tie; only the payload being deployed
 * (and its profile and workload) counts, and a record without a payload counts for nothing. */
static void
test_verdict_order(void)
{
	cJSON *doc = cJSON_Parse("{\"records\":["
	    "{\"kind\":\"validate\",\"verdict\":\"fail\",\"vm\":\"a\",\"time\":\"2026-03-01T00:00:00Z\",\"payloadSha256\":\"P1\","
	    "\"profile\":\"m1\",\"workload\":\"llama-server\"},"
	    "{\"kind\":\"validate\",\"verdict\":\"pass\",\"vm\":\"b\",\"time\":\"2026-02-01T00:00:00Z\",\"payloadSha256\":\"P1\","
	    "\"profile\":\"m1\",\"workload\":\"llama-server\",\"imported\":{\"from\":\"registry\"}},"
	    "{\"kind\":\"deploy\",\"verdict\":\"pass\",\"vm\":\"c\",\"time\":\"2026-04-01T00:00:00.5Z\",\"payloadSha256\":\"P1\"},"
	    "{\"kind\":\"deploy\",\"verdict\":\"fail\",\"vm\":\"d\",\"time\":\"2026-04-01T00:00:00.50Z\",\"payloadSha256\":\"P1\"},"
	    "{\"kind\":\"deploy\",\"verdict\":\"pass\",\"vm\":\"e\",\"time\":\"2026-04-01T00:00:00Z\",\"payloadSha256\":\"P1\"},"
	    "{\"kind\":\"deploy\",\"verdict\":\"fail\",\"vm\":\"f\",\"time\":\"2026-05-01T00:00:00Z\",\"payloadSha256\":\"P1\","
	    "\"cause\":\"workload\"},"
	    "{\"kind\":\"golden\",\"verdict\":\"pass\",\"vm\":\"g\",\"time\":\"2026-06-01T00:00:00Z\"},"
	    "{\"kind\":\"deploy\",\"verdict\":\"pass\",\"vm\":\"h\",\"time\":\"2026-07-01T00:00:00Z\",\"payloadSha256\":\"P2\"}]}");
	const ledger_want v1 = {"validate", "P1", "m1", "llama-server", 0}, v1p = {"validate", "P1", "m2", NULL, 0};
	const ledger_want d1 = {"deploy|golden", "P1", NULL, NULL, 0}, d3 = {"deploy|golden", "P3", NULL, NULL, 0};
	const ledger_want any = {"deploy|golden", NULL, NULL, NULL, 0}, all = {"deploy|golden", NULL, NULL, NULL, 1};
	const cJSON *r;

	r = ledger_verdict(doc, &v1);
	UNIT_OK(r && strcmp(cJSON_GetObjectItem(r, "vm")->valuestring, "a") == 0,
	    "verdict: a newer local fail beats an older imported pass listed after it");
	UNIT_OK(ledger_verdict(doc, &v1p) == NULL, "verdict: another profile's record does not count");
	r = ledger_verdict(doc, &d1);
	UNIT_OK(r && strcmp(cJSON_GetObjectItem(r, "vm")->valuestring, "d") == 0,
	    "verdict: .5 and .50 are the same time, the fail wins it; a workload failure and no-payload golden skipped");
	UNIT_OK(ledger_verdict(doc, &d3) == NULL, "verdict: no record for this payload: none");
	r = ledger_verdict(doc, &any);
	UNIT_OK(r && strcmp(cJSON_GetObjectItem(r, "vm")->valuestring, "h") == 0,
	    "verdict: any payload, the newest that has one (not the golden record without one)");
	r = ledger_verdict(doc, &all);
	UNIT_OK(r && strcmp(cJSON_GetObjectItem(r, "vm")->valuestring, "h") == 0, "verdict: any_payload takes the newest");
	UNIT_OK(ledger_time_cmp("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000Z") == 0 &&
	    ledger_time_cmp("2026-01-01T00:00:00.1Z", "2026-01-01T00:00:00Z") > 0 &&
	    ledger_time_cmp("2026-01-01T00:00:00.09Z", "2026-01-01T00:00:00.1Z") < 0 &&
	    ledger_time_cmp("garbage", "2026-01-01T00:00:00Z") < 0, "time_cmp: fractions compared as numbers");
	cJSON_Delete(doc);
}

/* A JSON document that does not read, left by an older lume-metal beside the database: its
 * image version is neither read nor written, the others are, and it stays as it was. */
static void
test_corrupt(const cJSON *k, const cJSON *k2, const cJSON *rec)
{
	char err[LM_ERRLEN] = "", path[4096], *before = NULL, *after = NULL;
	int n = 0;

	snprintf(path, sizeof path, "%s/corrupt/ledger", dir);
	lm_mkdirs(path, err);
	snprintf(path, sizeof path, "%s/corrupt", dir);
	put(path, k2, "other", "2026-01-01T00:00:00Z", err); /* the database exists first: the document comes after */
	{
		char c[4200];
		pid_t pid;
		int st = 0;

		snprintf(c, sizeof c, "%s/corrupt", dir);
		ledger_path(path, sizeof path, c, k);
		write_text(path, "{\"key\": {}, \"records\": [");
		lm_read_file(&before, NULL, path, 1 << 20, NULL);
		/* a new process: this one opened the database before the document was there */
		if ((pid = fork()) == 0)
			_exit(ledger_append(c, k, rec, err) == LM_EFAIL && strstr(err, path) ? 0 : 1);
		waitpid(pid, &st, 0);
		UNIT_OK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "appending to an image version whose document is corrupt is refused, "
		    "naming it");
		if ((pid = fork()) == 0)
			_exit(put(c, k2, "other2", "2026-01-01T00:00:01Z", err) == LM_OK ? 0 : 1);
		waitpid(pid, &st, 0);
		UNIT_OK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "... while another image version is written");
		lm_read_file(&after, NULL, path, 1 << 20, NULL);
		UNIT_OK(before && after && strcmp(before, after) == 0, "... and the file is left as it was");
		if ((pid = fork()) == 0) {
			n = 0;
			_exit(ledger_each(c, count, &n, err) == LM_EFAIL && n == 2 && strstr(err, path) ? 0 : 1);
		}
		waitpid(pid, &st, 0);
		UNIT_OK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "walking the ledger reports it too, after the other's 2 records");
	}
	free(before), free(after);
}

int
main(void)
{
	char err[LM_ERRLEN] = "", path[4096];
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
	cJSON_AddStringToObject(rec, "vm", "tahoe-1");
	cJSON_AddStringToObject(rec, "verdict", "fail");
	cJSON_AddStringToObject(rec, "result", "rolled-back");
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

	test_corrupt(k, k2, rec);

	test_merge(k, k2);
	test_merge_order(k);
	test_hostile(k);
	test_who();
	test_hook_points();
	test_identity_key();
	test_last_kinds();
	snprintf(path, sizeof path, "%s/last", dir);
	if (mkdir(path, 0700) == 0)
		test_load_last(path, k);
	test_verdict_order();

	cJSON_Delete(k), cJSON_Delete(k2), cJSON_Delete(rec);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	if (system(path) != 0)
		return 2;
	UNIT_DONE();
}

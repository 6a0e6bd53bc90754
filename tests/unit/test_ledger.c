/* The ledger: records per image version, 32 concurrent writers, corrupt files left alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	{
		FILE *f = fopen(path, "w");

		fputs("{\"key\": {}, \"records\": [", f);
		fclose(f);
	}
	lm_read_file(&before, NULL, path, 1 << 20, NULL);
	rc = ledger_append(dir, k, rec, err);
	UNIT_OK(rc == LM_EFAIL, "appending to a corrupt document is refused");
	UNIT_HAS(err, path, "... naming its path");
	lm_read_file(&after, NULL, path, 1 << 20, NULL);
	UNIT_OK(before && after && strcmp(before, after) == 0, "... and the file is left as it was");
	UNIT_OK(ledger_each(dir, count, &n, err) == LM_EFAIL, "walking the ledger reports it too");
	free(before), free(after);

	cJSON_Delete(k), cJSON_Delete(k2), cJSON_Delete(rec);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	if (system(path) != 0)
		return 2;
	UNIT_DONE();
}

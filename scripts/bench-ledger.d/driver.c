/* The ledger's part of a deploy and of a status, for scripts/bench-ledger: compiled against this
 * tree's ledger (the SQLite database) and, with -DLEDGER_JSON_STORE, against the JSON store's
 * ledger.c of the commit before it (the same public calls). One operation per process, as a
 * controller's run makes them; prints "WALL_MS CPU_MS RSS_KIB": the operation's wall time and
 * CPU time (user and system), and the process's peak RSS.
 *
 *   driver fill STATE KEY RECORD N     N copies of RECORD (a deploy record) under KEY, VMs
 *                                      clone-1..N, one second apart
 *   driver deploy STATE KEY RECORD VM  what deploy_one asks of the ledger for an unchanged clone
 *                                      VM: the gate's verdict, whether VM is recorded, and the
 *                                      record it appends (an observation here, the whole deploy
 *                                      record in the JSON store)
 *   driver status STATE KEY RECORD     what status asks: the verdict for the payload installed
 *   driver readable STATE KEY RECORD   what deploy and status check before any VM (ledger_readable)
 *   driver show STATE KEY RECORD       what ledger show reads (ledger_each): prints the records
 *
 * tests/cli/t-ledger-migrate.sh runs the JSON store's build of it on a migrated state, as the
 * lume-metal before the database would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/ledger.h"
#include "core/util.h"

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* This process's CPU time so far, ms. */
static double
cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static cJSON *
load(const char *path)
{
	char *text = NULL, err[LM_ERRLEN];
	cJSON *j;

	if (lm_read_file(&text, NULL, path, 1 << 20, err) != LM_OK || (j = cJSON_Parse(text)) == NULL) {
		fprintf(stderr, "driver: %s: not JSON (%s)\n", path, err);
		exit(2);
	}
	free(text);
	return j;
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* RECORD as clone i's: its VM and a time i seconds after 2026-01-01. */
static void
as_clone(cJSON *rec, long i)
{
	char vm[32], t[40];
	time_t s = 1767225600 + i;
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(vm, sizeof vm, "clone-%ld", i);
	cJSON_ReplaceItemInObject(rec, "vm", cJSON_CreateString(vm));
	cJSON_DeleteItemFromObject(rec, "time");
	cJSON_AddStringToObject(rec, "time", t);
}

#ifdef LEDGER_JSON_STORE
/* The JSON store's document, written as its locked_update writes it (cJSON_Print), straight to
 * its file: what N appends would have left, had each not read and rewritten it whole. */
static int
fill(const char *state, const cJSON *key, cJSON *rec, long n, char *err)
{
	char path[4200], dir[4200], *text;
	FILE *f;

	snprintf(dir, sizeof dir, "%s/ledger", state);
	if (lm_mkdirs(dir, err) != LM_OK || ledger_path(path, sizeof path, state, key) < 0 || (f = fopen(path, "w")) == NULL)
		return LM_EFAIL;
	text = cJSON_Print(key);
	fprintf(f, "{\n\t\"format\":\t1,\n\t\"key\":\t%s,\n\t\"records\":\t[", text);
	free(text);
	for (long i = 1; i <= n; i++) {
		as_clone(rec, i);
		text = cJSON_Print(rec);
		fprintf(f, "%s%s", i > 1 ? ", " : "", text);
		free(text);
	}
	fprintf(f, "]\n}");
	return fclose(f) == 0 ? LM_OK : LM_EFAIL;
}
#else
/* Through ledger_merge, 20000 records a source document at a time. */
static int
fill(const char *state, const cJSON *key, cJSON *rec, long n, char *err)
{
	char src[4200];
	const char *srcs[1] = {src};
	ledger_merge_counts c;
	int rc = LM_OK;

	snprintf(src, sizeof src, "%s.fill.json", state);
	for (long i = 1; i <= n && rc == LM_OK;) {
		FILE *f = fopen(src, "w");
		char *text = cJSON_PrintUnformatted(key);

		if (f == NULL)
			return LM_EFAIL;
		fprintf(f, "{\"format\":1,\"key\":%s,\"records\":[", text);
		free(text);
		for (long k = 0; k < 20000 && i <= n; k++, i++) {
			as_clone(rec, i);
			text = cJSON_PrintUnformatted(rec);
			fprintf(f, "%s%s", k ? "," : "", text);
			free(text);
		}
		fprintf(f, "]}");
		fclose(f);
		rc = ledger_merge(&c, state, srcs, 1, err);
	}
	remove(src);
	return rc;
}
#endif

/* What deploy_one and reconcile() ask of the ledger for an unchanged VM it has no record of. */
static int
deploy(const char *state, const cJSON *key, const cJSON *tmpl, const char *vm, char *err)
{
	const ledger_want want = {"deploy|golden", str(tmpl, "payloadSha256"), str(tmpl, "profile"), str(tmpl, "workload"), 0};
	cJSON *last = NULL, *rec;
	int recorded = 0, found = 0, rc;

	if ((rc = ledger_load_verdict(&last, &recorded, state, key, &want, err)) != LM_OK ||
	    (rc = ledger_deployed(&found, state, key, vm, want.payload, err)) != LM_OK)
		goto done;
	if (found) {
		rc = lm_err(err, LM_EFAIL, "%s is recorded already", vm);
		goto done;
	}
#ifdef LEDGER_JSON_STORE
	rec = cJSON_Duplicate(tmpl, 1);
	cJSON_ReplaceItemInObject(rec, "vm", cJSON_CreateString(vm));
	cJSON_DeleteItemFromObject(rec, "time");
#else
	/* the record reconcile() makes when the verdict is recorded: an observation */
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "kind", LEDGER_OBSERVE);
	cJSON_AddStringToObject(rec, "vm", vm);
	for (const char *const *k = (const char *const[]){"address", "host", "controller", "payloadSha256", "profile",
	    "workload", "target", "image", "hostSource", "noDigest", NULL}; *k; k++)
		if (str(tmpl, *k))
			cJSON_AddStringToObject(rec, *k, str(tmpl, *k));
	cJSON_AddStringToObject(rec, "result", "current");
#endif
	cJSON_AddTrueToObject(rec, "reconciled");
	rc = ledger_append(state, key, rec, err);
	cJSON_Delete(rec);
done:
	cJSON_Delete(last);
	return rc;
}

static int
count(const cJSON *doc, const char *path, void *ctx)
{
	(void)path;
	*(int *)ctx += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "records"));
	return 0;
}

int
main(int argc, char **argv)
{
	char err[LM_ERRLEN] = "";
	cJSON *key, *rec, *last = NULL;
	struct rusage ru;
	double t0, c0;
	int rc;

	if (argc < 5) {
		fprintf(stderr, "usage: driver fill|deploy|status STATE KEY RECORD [N|VM]\n");
		return 2;
	}
	key = load(argv[3]);
	rec = load(argv[4]);
	{
		char sha[65];

		lm_sha256_hex(sha, "", 0); /* libcrypto's first use loads its provider: a controller has */
	}
	t0 = now_ms(), c0 = cpu_ms();
	if (strcmp(argv[1], "fill") == 0 && argc == 6)
		rc = fill(argv[2], key, rec, atol(argv[5]), err);
	else if (strcmp(argv[1], "deploy") == 0 && argc == 6)
		rc = deploy(argv[2], key, rec, argv[5], err);
	else if (strcmp(argv[1], "status") == 0) {
		const ledger_want want = {"deploy|golden", str(rec, "payloadSha256"), NULL, NULL, 0};

		rc = ledger_load_verdict(&last, NULL, argv[2], key, &want, err);
		if (rc == LM_OK && last == NULL)
			rc = lm_err(err, LM_EFAIL, "no verdict");
	} else if (strcmp(argv[1], "readable") == 0)
		rc = ledger_readable(argv[2], err);
	else if (strcmp(argv[1], "show") == 0) {
		int n = 0;

		rc = ledger_each(argv[2], count, &n, err);
		printf("%d records\n", n);
	} else
		return 2;
	getrusage(RUSAGE_SELF, &ru);
	if (rc != LM_OK) {
		fprintf(stderr, "driver %s: %s\n", argv[1], err);
		return 1;
	}
	printf("%.2f %.2f %ld\n", now_ms() - t0, cpu_ms() - c0, ru.ru_maxrss);
	cJSON_Delete(last), cJSON_Delete(key), cJSON_Delete(rec);
	return 0;
}

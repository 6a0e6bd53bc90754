/* The ledger's database (core/ledger.h): a foreign or damaged file at its path refused and left
 * alone; writers SIGKILLed at any point of an append or of a migration leave it whole; the JSON
 * documents of an older lume-metal migrated once, kept, and the ones that do not read still
 * gating; prune and the retention keeping every verdict the gate reads; observations; threads. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/ledger.h"
#include "unit.h"
#include "core/util.h"

static char dir[] = "/tmp/lm-unit-store.XXXXXX";
static cJSON *key;

/* A fresh state folder NAME under dir, into out. */
static void
state_dir(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
	mkdir(out, 0700);
}

/* A record of kind with verdict (or result for rollback and observe) for vm at time t (NULL: now). */
static cJSON *
record(const char *kind, const char *verdict, const char *vm, const char *t, const char *payload)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, "kind", kind);
	cJSON_AddStringToObject(r, strcmp(kind, "rollback") == 0 || strcmp(kind, "observe") == 0 ? "result" : "verdict",
	    verdict);
	cJSON_AddStringToObject(r, "vm", vm);
	if (t)
		cJSON_AddStringToObject(r, "time", t);
	if (payload)
		cJSON_AddStringToObject(r, "payloadSha256", payload);
	if (strcmp(kind, "bench") == 0)
		cJSON_AddObjectToObject(r, "bench");
	return r;
}

static int
put(const char *state, const char *kind, const char *verdict, const char *vm, const char *t, const char *payload)
{
	cJSON *r = record(kind, verdict, vm, t, payload);
	char err[LM_ERRLEN];
	int rc = ledger_append(state, key, r, err);

	if (rc != LM_OK)
		printf("# append: %s\n", err);
	cJSON_Delete(r);
	return rc;
}

/* The records of key in state (0 when none or unreadable). */
static int
nrecords(const char *state)
{
	char err[LM_ERRLEN];
	cJSON *doc = NULL;
	int n;

	if (ledger_load(&doc, state, key, err) != LM_OK)
		return -1;
	n = doc ? cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "records")) : 0;
	cJSON_Delete(doc);
	return n;
}

/* What path is: its type and, for a file, its contents (caller frees). */
static char *
what_is(const char *path)
{
	struct stat st;
	char *text = NULL, *out;

	if (lstat(path, &st) != 0)
		return strdup("absent");
	if (S_ISREG(st.st_mode))
		lm_read_file(&text, NULL, path, 1 << 20, NULL);
	if ((out = malloc((text ? strlen(text) : 0) + 32)) != NULL)
		sprintf(out, "%o:%s", (unsigned)(st.st_mode & S_IFMT), text ? text : "");
	free(text);
	return out;
}

/* sql on a new SQLite database at path; 0 when it ran. */
static int
sqlite_make(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open(path, &db) == SQLITE_OK && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;

	sqlite3_close(db);
	return rc;
}

/* A file that is not this ledger's database at <state>/ledger.db: every use refused, naming it,
 * and the file left as it was. */
static void
test_foreign(void)
{
	static const char *const kinds[] = {"a text file", "a JSON document", "another application's SQLite database",
	    "an SQLite database without a schema", "a ledger of a newer lume-metal", "an empty file", "a directory", "a FIFO"};
	const ledger_want w = {"deploy|golden", NULL, NULL, NULL, 1};
	char state[4200], path[4300], err[LM_ERRLEN], name[32];
	int refused = 0, named = 0, same = 0, gated = 0, readable = 0;

	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
		cJSON *last = NULL;
		char *before, *after;
		int rc;

		snprintf(name, sizeof name, "foreign%zu", i);
		state_dir(state, sizeof state, name);
		snprintf(path, sizeof path, "%s/ledger.db", state);
		switch (i) {
		case 0: lm_write_file_atomic(path, "hello\n", 6, 0600, err); break;
		case 1: lm_write_file_atomic(path, "{\"format\":1,\"key\":{},\"records\":[]}", 35, 0600, err); break;
		case 2: sqlite_make(path, "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)"); break;
		case 3: sqlite_make(path, "PRAGMA user_version = 0; CREATE TABLE t (x); DROP TABLE t"); break;
		case 4: sqlite_make(path, "PRAGMA application_id = 1280134215; PRAGMA user_version = 2; CREATE TABLE keys (x)"); break;
		case 5: lm_write_file_atomic(path, "", 0, 0600, err); break;
		case 6: mkdir(path, 0700); break;
		default: mkfifo(path, 0600); break;
		}
		before = what_is(path);
		rc = put(state, "deploy", "pass", "v", NULL, "P");
		refused += rc == LM_EFAIL;
		{
			cJSON *r = record("deploy", "pass", "v", NULL, "P");

			if (ledger_append(state, key, r, err) == LM_EFAIL && strstr(err, path) &&
			    (strstr(err, "not this ledger's database") || strstr(err, "newer lume-metal")))
				named++;
			else
				printf("# %s: %s\n", kinds[i], err);
			cJSON_Delete(r);
		}
		gated += ledger_load_verdict(&last, NULL, state, key, &w, err) == LM_EFAIL;
		cJSON_Delete(last);
		readable += ledger_readable(state, err) == LM_EINPUT;
		after = what_is(path);
		if (before && after && strcmp(before, after) == 0)
			same++;
		else
			printf("# %s changed\n", kinds[i]);
		free(before), free(after);
	}
	UNIT_OK(refused == 8, "a record is refused over each of: a text file, a JSON document, another application's SQLite "
	    "database, one without a schema, a newer ledger, an empty file, a directory, a FIFO (%d of 8)", refused);
	UNIT_OK(named == 8, "... naming the file and what it is not (%d of 8)", named);
	UNIT_OK(gated == 8, "... the gate's lookup fails rather than finding no verdict (%d of 8)", gated);
	UNIT_OK(readable == 8, "... a run stops before it starts (ledger_readable: %d of 8)", readable);
	UNIT_OK(same == 8, "... and each is left as it was (%d of 8)", same);
}

/* Appends records of writer w (seq 0, 1, ...) to state, writing each seq to fd once committed. */
static void
writer(const char *state, int w, int fd)
{
	char pad[2048], err[LM_ERRLEN];

	memset(pad, 'x', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	for (int seq = 0;; seq++) {
		cJSON *r = record("deploy", "pass", "killed", NULL, "P");

		cJSON_AddNumberToObject(r, "writer", w);
		cJSON_AddNumberToObject(r, "seq", seq);
		cJSON_AddStringToObject(r, "evidence", pad);
		if (ledger_append(state, key, r, err) != LM_OK)
			_exit(3);
		cJSON_Delete(r);
		if (write(fd, &seq, sizeof seq) != (ssize_t)sizeof seq)
			_exit(4);
	}
}

/* Each writer's records: committed ones whole, in order, none twice, at most one past what it
 * said it committed. */
static int
check_writers(const char *state, const int *said, int nw, char *why, size_t len)
{
	char err[LM_ERRLEN];
	cJSON *doc = NULL;
	const cJSON *r;
	int *next = calloc((size_t)nw, sizeof *next), bad = 0;

	if (next == NULL || ledger_load(&doc, state, key, err) != LM_OK || doc == NULL) {
		snprintf(why, len, "the ledger does not load: %.300s", err);
		free(next);
		return -1;
	}
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(r, "writer"), *q = cJSON_GetObjectItemCaseSensitive(r, "seq");
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "evidence");

		if (!cJSON_IsNumber(w) || !cJSON_IsNumber(q) || w->valueint < 0 || w->valueint >= nw ||
		    !cJSON_IsString(e) || strlen(e->valuestring) != 2047 || q->valueint != next[w->valueint]) {
			if (!bad++)
				snprintf(why, len, "a record torn or out of place: %s", cJSON_PrintUnformatted(r));
			continue;
		}
		next[w->valueint]++;
	}
	for (int i = 0; i < nw; i++)
		if (next[i] < said[i] + 1 || next[i] > said[i] + 2) {
			if (!bad++)
				snprintf(why, len, "writer %d said %d committed, %d there", i, said[i] + 1, next[i]);
		}
	cJSON_Delete(doc);
	free(next);
	return bad;
}

/* "ok" from PRAGMA integrity_check of state's database, by a connection of its own. */
static int
integrity_ok(const char *state)
{
	char path[4300];
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int ok;

	snprintf(path, sizeof path, "%s/ledger.db", state);
	ok = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW &&
	    strcmp((const char *)sqlite3_column_text(s, 0), "ok") == 0;
	sqlite3_finalize(s);
	sqlite3_close(db);
	return ok;
}

/* 40 writers, each SIGKILLed after its first few commits at a point of an append that a random
 * spin picks (the first while the database is being made). */
static void
test_kill(void)
{
	enum { ROUNDS = 40 };
	char state[4200], why[512] = "";
	int said[ROUNDS], bad, killed = 0;

	state_dir(state, sizeof state, "kill");
	srand(11);
	for (int w = 0; w < ROUNDS; w++) {
		int fd[2], seq = -1, want = rand() % 4, got = 0, st;
		volatile unsigned spin = 0;
		pid_t pid;

		said[w] = -1;
		if (pipe(fd) != 0)
			break;
		if ((pid = fork()) == 0) {
			close(fd[0]);
			writer(state, w, fd[1]);
		}
		close(fd[1]);
		/* its commits as it says them, then a kill somewhere in the next one */
		while (got < want && read(fd[0], &seq, sizeof seq) == (ssize_t)sizeof seq)
			got++, said[w] = seq;
		for (unsigned i = 0, n = (unsigned)rand() % 400000; i < n; i++)
			spin += i;
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		killed += WIFSIGNALED(st);
		/* what it said before dying counts too */
		while (read(fd[0], &seq, sizeof seq) == (ssize_t)sizeof seq)
			said[w] = seq;
		close(fd[0]);
	}
	UNIT_OK(killed == ROUNDS, "%d writers SIGKILLed in the middle of their appends", killed);
	UNIT_OK(integrity_ok(state), "PRAGMA integrity_check: ok");
	bad = check_writers(state, said, ROUNDS, why, sizeof why);
	UNIT_OK(bad == 0, "every committed record is there and whole, none twice, none torn (%s)", bad ? why : "");
	UNIT_OK(put(state, "deploy", "pass", "after", NULL, "P") == LM_OK, "... and the ledger takes the next one");
}

/* A JSON document of the store before (format 1, key, records) with n records of vm at path,
 * each with an "evidence" of pad bytes when pad is not 0. */
static void
legacy_doc(const char *path, const cJSON *k, int n, const char *vm, size_t pad)
{
	char *p = malloc(pad + 1), *text = cJSON_PrintUnformatted(k), t[40];
	FILE *f = fopen(path, "w");

	if (f == NULL || p == NULL || text == NULL) {
		printf("# %s: cannot write\n", path);
		goto done;
	}
	memset(p, 'e', pad);
	p[pad] = '\0';
	fprintf(f, "{\n\"format\": 1,\n\"key\": %s,\n\"records\": [", text);
	for (int i = 0; i < n; i++) {
		/* out of time order, as imports appended them */
		cJSON *r;

		snprintf(t, sizeof t, "2026-02-01T00:%02d:%02dZ", (i * 7) % 60, i % 60);
		r = record(i % 10 == 9 ? "validate" : "deploy", i % 13 == 0 ? "fail" : "pass", vm, t, "P");
		cJSON_AddNumberToObject(r, "i", i);
		free(text);
		text = cJSON_PrintUnformatted(r);
		text[strlen(text) - 1] = '\0';
		fprintf(f, "%s\n%s%s%s%s}", i ? "," : "", text, pad ? ",\"evidence\":\"" : "", p, pad ? "\"" : "");
		cJSON_Delete(r);
	}
	fprintf(f, "]\n}\n");
done:
	if (f != NULL)
		fclose(f);
	free(text), free(p);
}

/* Runs fn(state) in a new process (one that has not opened state's database: what a later run
 * sees); its exit code. */
static int
in_child(int (*fn)(const char *), const char *state)
{
	pid_t pid = fork();
	int st = 0;

	if (pid == 0)
		_exit(fn(state));
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static cJSON *key2;

/* In a child: key2's document has the 3 records of the old document and the one added. */
static int
child_sees_update(const char *state)
{
	char err[LM_ERRLEN];
	cJSON *doc = NULL;
	int n = ledger_load(&doc, state, key2, err) == LM_OK && doc ?
	    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "records")) : -1;

	cJSON_Delete(doc);
	return n == 4 ? 0 : 1;
}

/* The JSON documents of an older lume-metal: imported once, in time order, kept renamed; the
 * marker left; one that does not read still gates its image version; one an older lume-metal
 * writes later imported too, adding only what is new; one past the JSON store's 64 MiB read. */
static void
test_migrate(void)
{
	char state[4200], a[4400], b[4400], c[4400], m[4500], err[LM_ERRLEN], *text = NULL;
	const ledger_want dep = {"deploy|golden", "P", NULL, NULL, 0};
	cJSON *last = NULL, *doc = NULL;
	struct stat st;
	int recorded = 0;

	state_dir(state, sizeof state, "migrate");
	snprintf(a, sizeof a, "%s/ledger", state);
	mkdir(a, 0700);
	ledger_path(a, sizeof a, state, key);
	ledger_path(b, sizeof b, state, key2);
	snprintf(c, sizeof c, "%s/ledger/00000000000000ff.json", state);
	legacy_doc(a, key, 300, "old", 0);
	legacy_doc(b, key2, 3, "old2", 0);
	lm_write_file_atomic(c, "{\"key\": ", 8, 0600, err);
	UNIT_OK(ledger_load_verdict(&last, &recorded, state, key, &dep, err) == LM_OK && last && recorded,
	    "the first lookup migrates: the verdict of a JSON document is read %s", err);
	cJSON_Delete(last);
	UNIT_OK(nrecords(state) == 300, "... all of its 300 records (%d)", nrecords(state));
	if (ledger_load(&doc, state, key, err) == LM_OK && doc) {
		const cJSON *r, *prev = NULL;
		int sorted = 1;

		cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
			sorted &= !prev || ledger_time_cmp(cJSON_GetObjectItemCaseSensitive(prev, "time")->valuestring,
			    cJSON_GetObjectItemCaseSensitive(r, "time")->valuestring) <= 0;
			prev = r;
		}
		UNIT_OK(sorted, "... in time order");
	}
	cJSON_Delete(doc);
	snprintf(m, sizeof m, "%s.migrated", a);
	UNIT_OK(access(a, F_OK) != 0 && access(m, F_OK) == 0, "... the document kept, renamed *.json.migrated");
	snprintf(m, sizeof m, "%s/ledger/%s/README", state, LEDGER_MARKER);
	UNIT_OK(stat(m, &st) == 0 && S_ISREG(st.st_mode), "... the marker for an older lume-metal left, with its README");
	UNIT_OK(access(c, F_OK) == 0 && lm_read_file(&text, NULL, c, 100, err) == LM_OK && strcmp(text, "{\"key\": ") == 0,
	    "a document that does not read is left where it was, as it was");
	free(text);
	/* An older lume-metal writes key2's document again, its 3 records and one more. */
	legacy_doc(b, key2, 4, "old2", 0);
	UNIT_OK(in_child(child_sees_update, state) == 0, "a document an older lume-metal wrote since is imported: only its "
	    "new record is added (4)");
	snprintf(m, sizeof m, "%s.migrated-2", b);
	UNIT_OK(access(m, F_OK) == 0, "... kept beside the first one, as %s", strrchr(m, '/') + 1);

	/* Past the JSON store's 64 MiB: 1100 records of 61 KiB. */
	state_dir(state, sizeof state, "migrate-big");
	snprintf(a, sizeof a, "%s/ledger", state);
	mkdir(a, 0700);
	ledger_path(a, sizeof a, state, key);
	legacy_doc(a, key, 1100, "big", 61 << 10);
	UNIT_OK(stat(a, &st) == 0 && st.st_size > (64 << 20), "a JSON document of %lld MB, past the 64 MiB the JSON store "
	    "read", (long long)st.st_size >> 20);
	UNIT_OK(ledger_load_verdict(&last, NULL, state, key, &dep, err) == LM_OK && last != NULL,
	    "... its verdict is read once migrated %s", err);
	cJSON_Delete(last);
	UNIT_OK(put(state, "deploy", "pass", "next", NULL, "P") == LM_OK && nrecords(state) == 1101,
	    "... and the next record appended (%d)", nrecords(state));
}

/* In a child: the migration of state, to be killed. */
static int
child_migrate(const char *state)
{
	char err[LM_ERRLEN];

	return ledger_readable(state, err) == LM_OK ? 0 : 1;
}

/* Two JSON documents (300 and 100 records) under a new state NAME. */
static void
two_docs(char *state, size_t len, const char *name)
{
	char path[4400];

	state_dir(state, len, name);
	snprintf(path, sizeof path, "%s/ledger", state);
	mkdir(path, 0700);
	ledger_path(path, sizeof path, state, key);
	legacy_doc(path, key, 300, "k", 0);
	ledger_path(path, sizeof path, state, key2);
	legacy_doc(path, key2, 100, "k2", 0);
}

/* Migrations SIGKILLed at random points, each then run again to its end: every record once, the
 * database whole. A point is drawn from the first three quarters of a migration timed just
 * before it (on a machine whose load changes, a time taken once went stale: 0 of 10 kills landed
 * once), and the tries go on until 10 kills have landed before the end, 40 at most. */
static void
test_migrate_kill(void)
{
	char state[4200], path[4400], name[32], err[LM_ERRLEN] = "";
	int killed = 0, whole = 0, once = 0, tries = 0;
	int64_t t0, took = 0;

	srand(5);
	while (killed < 10 && tries < 40) {
		cJSON *doc = NULL;
		struct timespec ts;
		pid_t pid;
		int64_t at;
		int st, n2 = -1;

		snprintf(name, sizeof name, "migrate-time%d", tries);
		two_docs(state, sizeof state, name);
		t0 = lm_now_ms();
		in_child(child_migrate, state);
		took = lm_now_ms() - t0 + 1;
		at = rand() % (took * 3 / 4 + 1);
		ts.tv_sec = (time_t)(at / 1000);
		ts.tv_nsec = (long)(at % 1000) * 1000000;
		snprintf(name, sizeof name, "migrate-kill%d", tries++);
		two_docs(state, sizeof state, name);
		if ((pid = fork()) == 0)
			_exit(child_migrate(state));
		nanosleep(&ts, NULL); /* the point of the kill, not a wait for anything */
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		killed += WIFSIGNALED(st);
		whole += in_child(child_migrate, state) == 0 && integrity_ok(state);
		if (ledger_load(&doc, state, key2, err) == LM_OK && doc)
			n2 = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "records"));
		cJSON_Delete(doc);
		ledger_path(path, sizeof path, state, key);
		once += nrecords(state) == 300 && n2 == 100 && access(path, F_OK) != 0;
	}
	printf("# a migration took %lld ms here last: %d of %d tries killed before their end\n", (long long)took, killed,
	    tries);
	UNIT_OK(killed == 10, "10 migrations SIGKILLed at random points (%d in %d tries)", killed, tries);
	UNIT_OK(whole == tries, "... each run again to its end, the database whole (%d of %d)", whole, tries);
	UNIT_OK(once == tries, "... every record there once, the documents renamed (%d of %d)", once, tries);
}

/* The verdicts the gate and the reports read of state, as one string. */
static char *
verdicts(const char *state)
{
	static const ledger_want w[] = {{"deploy|golden", "P1", NULL, NULL, 0}, {"deploy|golden", "P2", NULL, NULL, 0},
	    {"deploy|golden", NULL, NULL, NULL, 0}, {"deploy|golden", NULL, NULL, NULL, 1}, {"validate", "P1", NULL, NULL, 0},
	    {"bench", NULL, NULL, NULL, 1}, {"rollback", NULL, NULL, NULL, 1}, {"golden", NULL, NULL, NULL, 1}};
	lm_buf out = {0};
	char err[LM_ERRLEN];

	for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
		cJSON *last = NULL;
		char *t;

		ledger_load_verdict(&last, NULL, state, key, &w[i], err);
		t = last ? cJSON_PrintUnformatted(last) : NULL;
		lm_buf_addf(&out, "%s\n", t ? t : "none");
		free(t);
		cJSON_Delete(last);
	}
	return out.data;
}

/* o's number k, or -1 when it has none. */
static double
num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* How many records of state are of kind k (and vm, when not NULL). */
static int
count_of(const char *state, const char *k, const char *vm)
{
	char err[LM_ERRLEN];
	cJSON *doc = NULL;
	const cJSON *r;
	int n = 0;

	ledger_load(&doc, state, key, err);
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records"))
		n += cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r, "kind")) &&
		    strcmp(cJSON_GetObjectItemCaseSensitive(r, "kind")->valuestring, k) == 0 &&
		    (!vm || strcmp(cJSON_GetObjectItemCaseSensitive(r, "vm")->valuestring, vm) == 0);
	cJSON_Delete(doc);
	return n;
}

/* A ledger as CI leaves it: 40 clones observed, 3 older clones' deploy records reconciled from
 * their install.json (what clones left before observations), one VM deployed 30 times over two
 * payloads, validate, golden and bench records, failures of the image and of a workload. */
static void
fill_history(const char *state)
{
	char t[40], vm[32];

	put(state, "golden", "pass", "build", "2026-03-01T00:00:00Z", "P1");
	put(state, "validate", "fail", "v1", "2026-03-01T00:00:01Z", "P1");
	put(state, "validate", "pass", "v1", "2026-03-01T00:00:02Z", "P1");
	put(state, "deploy", "fail", "persist", "2026-03-01T00:00:03Z", "P1"); /* no cause: an image failure */
	for (int i = 0; i < 3; i++) {
		cJSON *r;
		char err[LM_ERRLEN];

		snprintf(t, sizeof t, "2026-03-01T12:00:%02dZ", i);
		snprintf(vm, sizeof vm, "oldclone-%d", i);
		r = record("deploy", "pass", vm, t, "P1");
		cJSON_AddTrueToObject(r, "reconciled");
		ledger_append(state, key, r, err);
		cJSON_Delete(r);
	}
	for (int i = 0; i < 30; i++) {
		snprintf(t, sizeof t, "2026-03-02T00:00:%02dZ", i);
		put(state, "deploy", "pass", "persist", t, i < 20 ? "P1" : "P2");
	}
	{
		cJSON *r = record("deploy", "fail", "persist", "2026-03-02T00:00:10.5Z", "P1");
		char err[LM_ERRLEN];

		cJSON_AddStringToObject(r, "cause", "workload");
		ledger_append(state, key, r, err);
		cJSON_Delete(r);
	}
	for (int i = 0; i < 40; i++) {
		snprintf(t, sizeof t, "2026-03-03T00:00:%02dZ", i);
		snprintf(vm, sizeof vm, "clone-%d", i);
		put(state, "observe", "current", vm, t, "P1");
	}
	put(state, "bench", "effective", "persist", "2026-03-04T00:00:00Z", NULL);
	put(state, "rollback", "previous", "persist", "2026-03-04T00:00:01Z", NULL);
}

static void
test_prune(void)
{
	char state[4200], err[LM_ERRLEN], *before, *after;
	cJSON *out = NULL;
	int total, rc;

	state_dir(state, sizeof state, "prune");
	fill_history(state);
	total = nrecords(state);
	before = verdicts(state);
	rc = ledger_prune(&out, state, 5, 1, err);
	UNIT_OK(rc == LM_OK && nrecords(state) == total, "prune --dry-run removes nothing (%d records) %s", total, rc ? err : "");
	UNIT_OK(num(out, "removed") == 65 &&
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "dryRun")), "... and says what would go: %g",
	    num(out, "removed"));
	cJSON_Delete(out);
	rc = ledger_prune(&out, state, 5, 0, err);
	UNIT_OK(rc == LM_OK && nrecords(state) == total - 65, "prune --keep 5 removes 65 of %d records (%d left)", total,
	    nrecords(state));
	{
		const cJSON *v = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(out, "versions"), 0);
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(v, "kinds");

		UNIT_OK(num(k, "observe") == 35 && num(k, "deploy") == 30 && num(v, "kept") == total - 65,
		    "... saying so per kind: 35 observations, 30 deploy records (3 of clones), %d kept", total - 65);
	}
	cJSON_Delete(out);
	after = verdicts(state);
	UNIT_OK(before && after && strcmp(before, after) == 0, "every verdict the gate and the reports read is the same");
	if (before && after && strcmp(before, after) != 0)
		printf("# before:\n%s# after:\n%s", before, after);
	UNIT_OK(count_of(state, "validate", NULL) == 2 && count_of(state, "golden", NULL) == 1,
	    "... every validate and golden record kept");
	UNIT_OK(count_of(state, "observe", NULL) == 5 && count_of(state, "deploy", "oldclone-0") +
	    count_of(state, "deploy", "oldclone-2") == 0, "... the image version's newest 5 of its clones' records: 5 observations "
	    "(%d), none of the older clones' reconciled deploy records (%d)", count_of(state, "observe", NULL),
	    count_of(state, "deploy", "oldclone-0") + count_of(state, "deploy", "oldclone-2"));
	UNIT_OK(count_of(state, "deploy", "persist") == 5 && count_of(state, "bench", NULL) == 1,
	    "... of the VM, its newest 5 (a rollback, a bench, 3 deploys), its image failure and the newest of P1 (%d "
	    "deploys), not its workload failure", count_of(state, "deploy", "persist"));
	rc = ledger_prune(&out, state, 5, 0, err);
	UNIT_OK(rc == LM_OK && num(out, "removed") == 0,
	    "pruning again removes nothing");
	cJSON_Delete(out);
	free(before), free(after);

	/* The retention: each append keeps the same. */
	state_dir(state, sizeof state, "retention");
	ledger_retention(5);
	fill_history(state);
	ledger_retention(0);
	after = verdicts(state);
	before = NULL;
	state_dir(state, sizeof state, "prune");
	before = verdicts(state);
	state_dir(state, sizeof state, "retention");
	UNIT_OK(before && after && strcmp(before, after) == 0 && count_of(state, "observe", NULL) == 5 &&
	    count_of(state, "validate", NULL) == 2, "with ledger-keep=5 each append keeps what prune keeps: the same verdicts, "
	    "5 observations (%d), %d records", count_of(state, "observe", NULL), nrecords(state));
	free(before), free(after);
	UNIT_OK(ledger_prune(&out, state, 0, 0, err) == LM_EINPUT, "--keep 0 is refused");
	cJSON_Delete(out);
}

/* An observation: a record of its own shape, counted as deployed, never a verdict. */
static void
test_observe(void)
{
	char state[4200], err[LM_ERRLEN], why[160];
	const ledger_want dep = {"deploy|golden", "P", NULL, NULL, 0};
	cJSON *r = record("observe", "current", "clone-1", "2026-03-03T00:00:00Z", "P"), *last = NULL;
	int found = 0;

	UNIT_OK(ledger_record_problem(r, why) == NULL, "an observation is a record");
	cJSON_DeleteItemFromObject(r, "payloadSha256");
	UNIT_OK(ledger_record_problem(r, why) != NULL, "... not without the payload it saw");
	cJSON_Delete(r);
	state_dir(state, sizeof state, "observe");
	put(state, "deploy", "pass", "build", "2026-03-01T00:00:00Z", "P");
	put(state, "observe", "current", "clone-1", "2026-03-03T00:00:00Z", "P");
	UNIT_OK(ledger_deployed(&found, state, key, "clone-1", "P", err) == LM_OK && found, "ledger_deployed counts it");
	UNIT_OK(ledger_deployed(&found, state, key, "clone-1", "Q", err) == LM_OK && !found, "... for its payload only");
	UNIT_OK(ledger_load_verdict(&last, NULL, state, key, &dep, err) == LM_OK && last &&
	    strcmp(cJSON_GetObjectItemCaseSensitive(last, "vm")->valuestring, "build") == 0,
	    "... and the gate's verdict is still the deploy record before it");
	cJSON_Delete(last);
}

typedef struct {
	const char *state;
	int id, failed;
} thread_arg;

static void *
thread_put(void *p)
{
	thread_arg *a = p;
	char vm[32];

	for (int i = 0; i < 40; i++) {
		snprintf(vm, sizeof vm, "t%d-%d", a->id, i);
		a->failed += put(a->state, "deploy", "pass", vm, NULL, "P") != LM_OK;
	}
	return NULL;
}

/* 16 threads of one process (a fleet's workers) append at once. */
static void
test_threads(void)
{
	char state[4200];
	pthread_t t[16];
	thread_arg a[16];
	int failed = 0;

	state_dir(state, sizeof state, "threads");
	for (int i = 0; i < 16; i++) {
		a[i] = (thread_arg){state, i, 0};
		pthread_create(&t[i], NULL, thread_put, &a[i]);
	}
	for (int i = 0; i < 16; i++) {
		pthread_join(t[i], NULL);
		failed += a[i].failed;
	}
	UNIT_OK(failed == 0 && nrecords(state) == 640, "16 threads append 640 records, none lost (%d)", nrecords(state));
}

int
main(void)
{
	char cmd[200];

	if (mkdtemp(dir) == NULL)
		return 2;
	key = ledger_key("ghcr.io/x/img:1", NULL, "26.5.2", "25F84", "VirtualMac2,1", "Apple M1 Ultra", "25G76");
	key2 = ledger_key("ghcr.io/x/img:1", NULL, "26.6", "25G5", "VirtualMac2,1", "Apple M1 Ultra", "25G76");
	test_foreign();
	test_kill();
	test_migrate();
	test_migrate_kill();
	test_prune();
	test_observe();
	test_threads();
	cJSON_Delete(key);
	cJSON_Delete(key2);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 2;
	UNIT_DONE();
}

/* ledger_legacy: the JSON documents under <state>/ledger/ that were the ledger before its
 * database (ledger.h): checked before a run (ledger_readable), migrated, and the marker that
 * makes an older lume-metal refuse the state. */
#include "core/ledger.h"
#include "core/ledger_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

static const char marker_readme[] =
    "This folder held lume-metal's ledger as JSON documents, one per image version. The ledger is\n"
    "now the SQLite database ../ledger.db: its records were imported from these documents, which\n"
    "were kept, renamed *.json.migrated. The folder " LEDGER_MARKER " is here so that\n"
    "an older lume-metal, which reads only *.json documents, refuses this state instead of finding\n"
    "no records; use a lume-metal that reads ledger.db (`lume-metal ledger show`, `ledger export`).\n";

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void
legacy_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int
legacy_list(char ***names, size_t *n, const char *dir, char *err)
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

		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || de->d_name[0] == '.' ||
		    strcmp(de->d_name, LEDGER_MARKER) == 0)
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
		qsort(*names, *n, sizeof **names, cmp_name);
	return rc;
}

int
legacy_pending(const char *state)
{
	char dir[4200], **names = NULL;
	size_t n = 0;

	if (lm_fmt(dir, sizeof dir, "%s/ledger", state) < 0 || legacy_list(&names, &n, dir, NULL) != LM_OK)
		return 0;
	legacy_free(names, n);
	return n > 0;
}

int
legacy_marker(const char *state, char *err)
{
	char dir[4200], m[4400], readme[4500];
	int rc;

	if (lm_fmt(dir, sizeof dir, "%s/ledger", state) < 0 || lm_fmt(m, sizeof m, "%s/%s", dir, LEDGER_MARKER) < 0 ||
	    lm_fmt(readme, sizeof readme, "%s/README", m) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if ((rc = lm_mkdirs(dir, err)) != LM_OK)
		return rc;
	if (mkdir(m, 0700) != 0)
		return errno == EEXIST ? LM_OK : lm_err(err, LM_EFAIL, "%s: %s", m, strerror(errno));
	return lm_write_file_atomic(readme, marker_readme, sizeof marker_readme - 1, 0600, err);
}

int
legacy_store_get(ledger_db **out, const char *state, int create, char *err)
{
	int made, fresh, rc;

	/* No database yet: documents to migrate make one (listed only then, not on every open). */
	if ((rc = store_open(out, state, create, &made, &fresh, err)) == LM_OK && *out == NULL && legacy_pending(state))
		rc = store_open(out, state, 1, &made, &fresh, err);
	if (rc != LM_OK || *out == NULL)
		return rc;
	if ((made && (rc = legacy_marker(state, err)) != LM_OK) || (fresh && (rc = legacy_migrate(*out, err)) != LM_OK)) {
		store_drop(*out);
		*out = NULL;
		return rc;
	}
	return LM_OK;
}

int
legacy_read(char **text, const char *path, char *err)
{
	struct stat st;
	size_t got = 0;
	ssize_t r = 1;
	int fd;

	*text = NULL;
	/* O_NONBLOCK: a FIFO in a document's place answers here instead of holding the open. */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) < 0)
		return errno == ENOENT ? LM_OK : lm_err(err, LM_EFAIL, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return lm_err(err, LM_EFAIL, "%s: not a regular file", path);
	}
	if ((size_t)st.st_size > LEDGER_DOC_MAX) {
		close(fd);
		return lm_err(err, LM_EFAIL, "%s: larger than %u bytes", path, LEDGER_DOC_MAX);
	}
	if ((*text = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	while (got < (size_t)st.st_size && (r = read(fd, *text + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)r;
	close(fd);
	if (r < 0) {
		free(*text);
		*text = NULL;
		return lm_err(err, LM_EFAIL, "%s: %s", path, strerror(errno));
	}
	(*text)[got] = '\0';
	return LM_OK;
}

/* Adds path (name, a document that did not read: msg) to d->bad. */
static int
add_bad(ledger_db *d, const char *name, const char *msg)
{
	ledger_bad *nb = reallocarray(d->bad, d->nbad + 1, sizeof *nb);

	if (nb == NULL)
		return -1;
	d->bad = nb;
	snprintf(nb[d->nbad].name, sizeof nb[d->nbad].name, "%.*s", (int)(strlen(name) - 5), name);
	if ((nb[d->nbad].msg = strdup(msg)) == NULL)
		return -1;
	d->nbad++;
	return 0;
}

/* Imports the document at path into d (in the caller's transaction): *done 1 when it did, 0
 * when it is gone (another process migrated it) or did not read (*msg then says why). Records
 * are kept as the JSON store held them; one equal to a record that was there before this
 * document counts as there (a migration run again, or a document an older lume-metal wrote
 * after one, adds only what is new). */
static int
import_doc(ledger_db *d, const char *path, int *done, char msg[LM_ERRLEN], char *err)
{
	char *text = NULL;
	cJSON *doc = NULL;
	const cJSON *r;
	sqlite3_int64 key_id, before;
	int rc, present;

	*done = 0, *msg = '\0';
	if (legacy_read(&text, path, msg) != LM_OK || text == NULL)
		return LM_OK;
	doc = cJSON_Parse(text);
	free(text);
	if (doc == NULL || !cJSON_IsArray(lj_get(doc, "records")) || !cJSON_IsObject(lj_get(doc, "key"))) {
		cJSON_Delete(doc);
		lm_err(msg, LM_EFAIL, "%s: corrupt ledger file; it is left as it is and this image version is not read or "
		    "written until it is fixed or moved aside", path);
		return LM_OK;
	}
	before = store_max_id(d);
	if ((key_id = store_key_id(d, lj_get(doc, "key"), 1, err)) < 0) {
		cJSON_Delete(doc);
		return LM_EFAIL;
	}
	rc = LM_OK;
	cJSON_ArrayForEach(r, lj_get(doc, "records")) {
		if ((rc = store_has(d, key_id, r, before, &present, err)) != LM_OK)
			break;
		if (!present && (rc = store_insert(d, key_id, r, err)) != LM_OK)
			break;
	}
	cJSON_Delete(doc);
	*done = rc == LM_OK;
	return rc;
}

/* Renames the imported path to path.migrated (or .migrated-2, -3...: one kept from before). */
static void
keep_migrated(const char *path)
{
	char to[4500];
	struct stat st;

	snprintf(to, sizeof to, "%s.migrated", path);
	for (int i = 2; lstat(to, &st) == 0 && i < 1000; i++)
		snprintf(to, sizeof to, "%s.migrated-%d", path, i);
	rename(path, to);
}

int
legacy_migrate(ledger_db *d, char *err)
{
	char dir[4200], path[4400], msg[LM_ERRLEN], **names = NULL;
	int *done = NULL, rc;
	size_t n = 0;
	struct stat st;

	if (lm_fmt(dir, sizeof dir, "%s/ledger", d->state) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", d->state);
	if (stat(dir, &st) != 0) {
		if (errno != ENOENT)
			return lm_err(err, LM_EFAIL, "%s: %s", dir, strerror(errno));
		legacy_marker(d->state, NULL); /* nothing to migrate: a state that cannot be written still reads */
		return LM_OK;
	}
	if (!S_ISDIR(st.st_mode))
		return lm_err(err, LM_EFAIL, "%s: not a directory (where the JSON ledger was, and the marker for older "
		    "lume-metal goes): move it aside", dir);
	if ((rc = legacy_list(&names, &n, dir, err)) != LM_OK || n == 0)
		goto done;
	if ((done = calloc(n, sizeof *done)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	/* One transaction: the whole migration, or (killed, or failing) none of it. */
	if ((rc = store_exec(d, "BEGIN IMMEDIATE", err)) != LM_OK)
		goto done;
	for (size_t i = 0; i < n && rc == LM_OK; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if ((rc = import_doc(d, path, &done[i], msg, err)) == LM_OK && *msg && add_bad(d, names[i], msg) != 0)
			rc = lm_err(err, LM_EFAIL, "out of memory");
	}
	if (rc == LM_OK)
		rc = store_exec(d, "COMMIT", err);
	if (rc != LM_OK) {
		sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		if (done[i]) {
			snprintf(path, sizeof path, "%s/%s", dir, names[i]);
			keep_migrated(path);
		}
done:
	free(done);
	legacy_free(names, n);
	if (rc != LM_OK)
		return rc;
	/* Once documents were migrated, the marker must be there: an older lume-metal would read none. */
	return n > 0 ? legacy_marker(d->state, err) : (legacy_marker(d->state, NULL), LM_OK);
}

int
ledger_readable(const char *state, char *err)
{
	char dir[4200], path[4400], msg[LM_ERRLEN], c;
	char **names = NULL;
	size_t n = 0;
	struct stat st;
	ledger_db *db = NULL;
	DIR *d;
	int rc = LM_OK;

	if (lm_fmt(dir, sizeof dir, "%s/ledger", state) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", state);
	if (stat(state, &st) != 0)
		return errno == ENOENT ? LM_OK : lm_err(err, LM_EINPUT, "cannot be read: %s: %s", state, strerror(errno));
	if ((d = opendir(state)) == NULL)
		return lm_err(err, LM_EINPUT, "cannot be read: %s: %s", state, strerror(errno));
	closedir(d);
	if (legacy_list(&names, &n, dir, msg) != LM_OK)
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
	legacy_free(names, n);
	/* The database, opened as a run opens it: a foreign file there stops the run before it starts. */
	if (rc == LM_OK && legacy_store_get(&db, state, 0, msg) != LM_OK)
		rc = lm_err(err, LM_EINPUT, "%s", msg);
	store_put(db);
	return rc;
}

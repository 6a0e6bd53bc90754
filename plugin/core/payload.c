/* payload: see payload.h. */
#include "core/payload.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/agent.h"
#include "core/archive_lazy.h"
#include "core/manifest.h"
#include "core/util.h"

typedef struct {
	char *path;           /* inside the archive */
	unsigned mode;
	unsigned char *data;
	size_t len;
	char sha[65];
} pfile;

typedef struct {
	pfile *v;
	size_t n, cap;
} pfiles;

typedef struct {
	const char *name, *bindir;
	agent_target agent;
	const char *bins[3][2]; /* {file in bindir, path in payload} */
} target;

static const target targets[] = {
	{"macos", "build/macos", {"DYLD_INSERT_LIBRARIES", "lib/liblumemetal.dylib"},
	    {{"lume-metal-probe", "bin/lume-metal-probe"}, {"liblumemetal.dylib", "lib/liblumemetal.dylib"}}},
	{"linux-sim", "build/linux", {"LD_PRELOAD", "lib/liblumemetal.so"},
	    {{"lume-metal-probe", "bin/lume-metal-probe"}, {"liblumemetal.so", "lib/liblumemetal.so"},
		{"libMetal.so", "lib/libMetal.so"}}},
};

static const struct {
	const char *src, *dst;
	unsigned mode;
} scripts[] = {
	{"common.sh", "bin/common.sh", 0644}, /* sourced by the others, never run */
	{"install.sh", "bin/install.sh", 0755}, {"rollback.sh", "bin/rollback.sh", 0755},
	{"status.sh", "bin/status.sh", 0755}, {"run-with-shim", "bin/run-with-shim", 0755},
};

static void
pfiles_free(pfiles *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		free(fs->v[i].path);
		free(fs->v[i].data);
	}
	free(fs->v);
}

/* Takes ownership of data. */
static int
pfiles_add(pfiles *fs, const char *path, unsigned mode, void *data, size_t len, char *err)
{
	pfile *f;

	if (fs->n == fs->cap) {
		size_t cap = fs->cap ? fs->cap * 2 : 16;
		pfile *v = reallocarray(fs->v, cap, sizeof *v);

		if (v == NULL) {
			free(data);
			return lm_err(err, LM_EFAIL, "out of memory");
		}
		fs->v = v;
		fs->cap = cap;
	}
	f = &fs->v[fs->n];
	if ((f->path = strdup(path)) == NULL) {
		free(data);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	f->mode = mode;
	f->data = data;
	f->len = len;
	lm_sha256_hex(f->sha, data, len);
	fs->n++;
	return LM_OK;
}

static int
add_disk(pfiles *fs, const char *datadir, const char *dir, const char *name, const char *path,
    unsigned mode, const char *hint, char *err)
{
	char src[4096];
	char *data;
	size_t len;
	int rc;

	if (lm_fmt(src, sizeof src, "%s/%s/%s", datadir, dir, name) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", datadir);
	if (access(src, F_OK) != 0)
		return lm_err(err, LM_EINPUT, "%s: missing (%s)", src, hint);
	if ((rc = lm_read_file(&data, &len, src, PAYLOAD_ENTRY_MAX, err)) != LM_OK)
		return rc;
	return pfiles_add(fs, path, mode, data, len, err);
}

static int
add_buf(pfiles *fs, const char *path, lm_buf *b, char *err)
{
	size_t len = b->len;
	char *data = b->data;

	b->data = NULL;
	b->len = b->cap = 0;
	if (data == NULL && (data = strdup("")) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	return pfiles_add(fs, path, 0644, data, len, err);
}

/* Values in the .env files must be readable by `IFS='=' read -r` without quoting. */
static int
env_safe(const char *v)
{
	return strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.,:/+@-") == strlen(v);
}

static int
cmp_pfile(const void *a, const void *b)
{
	return strcmp(((const pfile *)a)->path, ((const pfile *)b)->path);
}

static cJSON *
manifest_json(const pfiles *fs, const target *t, const manifest_profile *p, const manifest_workload *w)
{
	cJSON *m = cJSON_CreateObject(), *files = cJSON_CreateArray();
	char mode[8];

	cJSON_AddNumberToObject(m, "format", 1);
	cJSON_AddStringToObject(m, "name", "lume-metal");
	cJSON_AddStringToObject(m, "version", LM_VERSION);
	cJSON_AddStringToObject(m, "target", t->name);
	cJSON_AddStringToObject(m, "profile", p->id);
	cJSON_AddStringToObject(m, "workload", w->id);
	cJSON_AddStringToObject(m, "label", w->label);
	for (size_t i = 0; i < fs->n; i++) {
		cJSON *f = cJSON_CreateObject();

		snprintf(mode, sizeof mode, "%04o", fs->v[i].mode);
		cJSON_AddStringToObject(f, "path", fs->v[i].path);
		cJSON_AddStringToObject(f, "mode", mode);
		cJSON_AddNumberToObject(f, "size", (double)fs->v[i].len);
		cJSON_AddStringToObject(f, "sha256", fs->v[i].sha);
		cJSON_AddItemToArray(files, f);
	}
	cJSON_AddItemToObject(m, "files", files);
	return m;
}

/* SHA256SUMS as shasum -a 256 prints it, for MANIFEST.json and every listed file, sorted. */
static int
sums_text(lm_buf *b, const char *manifest_sha, const cJSON *files)
{
	const cJSON *f;
	int rc = lm_buf_addf(b, "%s  MANIFEST.json\n", manifest_sha);

	cJSON_ArrayForEach(f, files)
		rc |= lm_buf_addf(b, "%s  %s\n",
		    cJSON_GetObjectItemCaseSensitive(f, "sha256")->valuestring,
		    cJSON_GetObjectItemCaseSensitive(f, "path")->valuestring);
	return rc;
}

static int
write_entry(struct archive *a, const char *path, unsigned mode, int dir, const void *data, size_t len)
{
	struct archive_entry *e = archive_entry_new();
	int rc;

	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, dir ? AE_IFDIR : AE_IFREG);
	archive_entry_set_perm(e, mode);
	archive_entry_set_size(e, dir ? 0 : (la_int64_t)len);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_mtime(e, PAYLOAD_MTIME, 0);
	rc = archive_write_header(a, e);
	if (rc == ARCHIVE_OK && !dir && len > 0 && archive_write_data(a, data, len) != (la_ssize_t)len)
		rc = ARCHIVE_FATAL;
	archive_entry_free(e);
	return rc;
}

/* Writes the sorted files (and their directories) as a deterministic tar.gz to fd. */
static int
write_archive(int fd, const pfiles *fs, const char *out, char *err)
{
	struct archive *a;
	char lastdir[256] = "";
	int rc = ARCHIVE_OK;

	if (archive_lazy_load(err) != LM_OK)
		return LM_EFAIL;
	a = archive_write_new();
	if (archive_write_set_format_ustar(a) != ARCHIVE_OK || archive_write_add_filter_gzip(a) != ARCHIVE_OK ||
	    archive_write_set_filter_option(a, "gzip", "timestamp", NULL) != ARCHIVE_OK ||
	    archive_write_open_fd(a, fd) != ARCHIVE_OK) {
		rc = lm_err(err, LM_EFAIL, "%s: %s", out, archive_error_string(a));
		archive_write_free(a);
		return rc;
	}
	for (size_t i = 0; i < fs->n && rc == ARCHIVE_OK; i++) {
		const char *slash = strrchr(fs->v[i].path, '/');
		char dir[256];

		/* Files are sorted, so each directory's files are contiguous and follow it. */
		if (slash != NULL) {
			snprintf(dir, sizeof dir, "%.*s/", (int)(slash - fs->v[i].path), fs->v[i].path);
			if (strcmp(dir, lastdir) != 0) {
				rc = write_entry(a, dir, 0755, 1, NULL, 0);
				snprintf(lastdir, sizeof lastdir, "%s", dir);
			}
		}
		if (rc == ARCHIVE_OK)
			rc = write_entry(a, fs->v[i].path, fs->v[i].mode, 0, fs->v[i].data, fs->v[i].len);
	}
	if (rc == ARCHIVE_OK)
		rc = archive_write_close(a);
	if (rc != ARCHIVE_OK)
		rc = lm_err(err, LM_EFAIL, "%s: %s", out, archive_error_string(a));
	archive_write_free(a);
	return rc;
}

static const target *
find_target(const char *name)
{
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
		if (strcmp(targets[i].name, name) == 0)
			return &targets[i];
	return NULL;
}

/* Collects every file of the payload except MANIFEST.json and SHA256SUMS. */
static int
collect(pfiles *fs, const payload_build_opts *o, const target *t, const manifest_profile *p,
    const manifest_workload *w, char *err)
{
	lm_buf b = {0};
	const cJSON *ready;
	char *data;
	size_t len;
	int rc;

	for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++)
		if ((rc = add_disk(fs, o->datadir, "guest-payload", scripts[i].src, scripts[i].dst, scripts[i].mode,
		    "the guest scripts", err)) != LM_OK)
			return rc;
	for (size_t i = 0; i < 3 && t->bins[i][0] != NULL; i++)
		if ((rc = add_disk(fs, o->datadir, t->bindir, t->bins[i][0], t->bins[i][1], 0755,
		    "run `make shim` first", err)) != LM_OK)
			return rc;
	if ((rc = lm_read_file(&data, &len, p->path, 1 << 20, err)) != LM_OK ||
	    (rc = pfiles_add(fs, "profile.json", 0644, data, len, err)) != LM_OK)
		return rc;
	if ((rc = lm_read_file(&data, &len, w->path, 1 << 20, err)) != LM_OK ||
	    (rc = pfiles_add(fs, "workload.json", 0644, data, len, err)) != LM_OK)
		return rc;
	ready = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w->json, "readiness"), "url");
	if (!env_safe(w->label) || !env_safe(p->id) || !env_safe(w->id) || (ready && !env_safe(ready->valuestring)))
		return lm_err(err, LM_EINPUT, "%s: label, id or readiness.url has a character payload.env cannot hold", w->path);
	/* install.sh waits for the readiness URL to answer 200 (LUME_METAL_READY_URL). */
	if (lm_buf_addf(&b, "LUME_METAL_LABEL=%s\nLUME_METAL_TARGET=%s\nLUME_METAL_PROFILE=%s\n"
	    "LUME_METAL_WORKLOAD=%s\nLUME_METAL_PAYLOAD_VERSION=%s\n", w->label, t->name, p->id, w->id,
	    LM_VERSION) != 0 || (ready && lm_buf_addf(&b, "LUME_METAL_READY_URL=%s\n", ready->valuestring) != 0) ||
	    (rc = add_buf(fs, "payload.env", &b, err)) != LM_OK)
		goto done;
	if ((rc = agent_render_shim_env(&b, p, &t->agent, err)) != LM_OK ||
	    (rc = add_buf(fs, "shim.env", &b, err)) != LM_OK)
		goto done;
	if ((rc = agent_render_plist(&b, w, p, &t->agent, err)) != LM_OK)
		goto done;
	rc = add_buf(fs, "LaunchAgent.plist", &b, err);
done:
	lm_buf_free(&b);
	return rc;
}

int
payload_build(payload_info **out, const payload_build_opts *o, char *err)
{
	manifest_workload *w = NULL;
	manifest_profile *p = NULL;
	pfiles fs = {0};
	cJSON *m = NULL;
	lm_buf sums = {0}, shaline = {0};
	char *mtext = NULL, *tmp = NULL, *base, msha[65], shapath[4096];
	const target *t = find_target(o->target);
	int fd, rc;

	*out = NULL;
	if (t == NULL)
		return lm_err(err, LM_EINPUT, "--target %s: unknown target (macos or linux-sim)", o->target);
	if (lm_fmt(shapath, sizeof shapath, "%s.sha256", o->out) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", o->out);
	if ((rc = manifest_workload_load(&w, o->datadir, o->workload, err)) != LM_OK ||
	    (rc = manifest_profile_load(&p, o->datadir, o->profile ? o->profile : w->profile, err)) != LM_OK ||
	    (rc = collect(&fs, o, t, p, w, err)) != LM_OK)
		goto done;
	qsort(fs.v, fs.n, sizeof *fs.v, cmp_pfile);
	m = manifest_json(&fs, t, p, w);
	if ((mtext = cJSON_Print(m)) == NULL || lm_buf_add(&sums, mtext, strlen(mtext)) != 0 ||
	    lm_buf_add(&sums, "\n", 1) != 0) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	lm_sha256_hex(msha, sums.data, sums.len);
	if ((rc = pfiles_add(&fs, "MANIFEST.json", 0644, sums.data, sums.len, err)) != LM_OK)
		goto done;
	sums = (lm_buf){0};
	if (sums_text(&sums, msha, cJSON_GetObjectItemCaseSensitive(m, "files")) != 0 ||
	    (rc = add_buf(&fs, "SHA256SUMS", &sums, err)) != LM_OK)
		goto done;
	qsort(fs.v, fs.n, sizeof *fs.v, cmp_pfile);

	if ((fd = lm_tmp_beside(&tmp, o->out, err)) < 0) {
		rc = fd;
		goto done;
	}
	if ((rc = write_archive(fd, &fs, o->out, err)) != LM_OK) {
		close(fd);
		unlink(tmp);
		goto done;
	}
	if ((rc = lm_commit_tmp(fd, tmp, o->out, err)) != LM_OK)
		goto done;
	/* The identity: what shasum -a 256 -c checks, named relative to the .sha256 file. */
	{
		char sha[65];

		if ((rc = lm_sha256_file(sha, o->out, err)) != LM_OK)
			goto unlink_out;
		base = strrchr(o->out, '/') ? strrchr(o->out, '/') + 1 : (char *)o->out;
		if (lm_buf_addf(&shaline, "%s  %s\n", sha, base) != 0) {
			rc = lm_err(err, LM_EFAIL, "out of memory");
			goto unlink_out;
		}
		if ((rc = lm_write_file_atomic(shapath, shaline.data, shaline.len, 0644, err)) != LM_OK)
			goto unlink_out;
	}
	rc = payload_verify(out, o->out, shapath, err);
	goto done;
unlink_out:
	unlink(o->out);
done:
	free(tmp);
	free(mtext);
	cJSON_Delete(m);
	lm_buf_free(&sums);
	lm_buf_free(&shaline);
	pfiles_free(&fs);
	manifest_profile_free(p);
	manifest_workload_free(w);
	return rc;
}

void
payload_info_free(payload_info *p)
{
	if (p == NULL)
		return;
	cJSON_Delete(p->manifest);
	free(p);
}

/* ---- verify ---- */

typedef struct {
	char *path;           /* as in the archive ("bin/" for a directory) */
	size_t klen;          /* its length without a directory's trailing "/": the key compared */
	unsigned mode;
	int dir, seen, holds; /* holds: a directory with a file below it */
	uint64_t size;
	char sha[65];
} ventry;

typedef struct {
	ventry *v;
	size_t n, cap;
	lm_buf manifest, sums;
} ventries;

static void
ventries_free(ventries *es)
{
	for (size_t i = 0; i < es->n; i++)
		free(es->v[i].path);
	free(es->v);
	lm_buf_free(&es->manifest);
	lm_buf_free(&es->sums);
}

/* Entries by key: bytewise, then a shorter key first. */
static int
key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

static int
cmp_ventry(const void *a, const void *b)
{
	const ventry *x = a, *y = b;

	return key_cmp(x->path, x->klen, y->path, y->klen);
}

/* The entry whose key is key[0..len), by binary search once the entries are sorted. */
static ventry *
ventries_find_key(ventries *es, const char *key, size_t len)
{
	size_t lo = 0, hi = es->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(es->v[mid].path, es->v[mid].klen, key, len);

		if (c == 0)
			return &es->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static ventry *
ventries_find(ventries *es, const char *path)
{
	return ventries_find_key(es, path, strlen(path));
}

/* Sorts the entries (n log n), refuses a name given twice (a directory "bin/" and a file "bin"
 * too), and marks each directory that holds a file: the directories of every file's path,
 * cut at its slashes, so "bi" never passes for the "bin" of "bin/install.sh". */
static int
ventries_index(ventries *es, const char *file, char *err)
{
	if (es->n > 1)
		qsort(es->v, es->n, sizeof *es->v, cmp_ventry);
	for (size_t i = 1; i < es->n; i++)
		if (cmp_ventry(&es->v[i - 1], &es->v[i]) == 0)
			return lm_err(err, LM_EINPUT, "%s: entry \"%s\" appears twice", file, es->v[i].path);
	for (size_t i = 0; i < es->n; i++) {
		const ventry *f = &es->v[i];

		for (size_t k = 0; !f->dir && k < f->klen; k++) {
			ventry *d;

			if (f->path[k] == '/' && (d = ventries_find_key(es, f->path, k)) != NULL && d->dir)
				d->holds = 1;
		}
	}
	return LM_OK;
}

/* A payload path is relative, canonical, and stays in the tree. */
static const char *
path_problem(const char *p, int dir)
{
	size_t n = strlen(p);
	const char *c;

	if (n == 0)
		return "has an empty name";
	if (p[0] == '/')
		return "is an absolute path";
	if (n > 200)
		return "has a name longer than 200 characters";
	for (c = p; *c; ) {
		size_t len = strcspn(c, "/");

		if (len == 2 && c[0] == '.' && c[1] == '.')
			return "climbs out of the tree with ..";
		if ((len == 1 && c[0] == '.') || (len == 0 && !(dir && c[0] == '\0')))
			return "is not a canonical path";
		c += len;
		if (*c == '/')
			c++;
		if (*c == '\0' && c[-1] == '/' && !dir)
			return "is not a canonical path";
	}
	return NULL;
}

/* True when link target t, seen from entry path p, resolves inside the tree. */
static int
link_stays_inside(const char *p, const char *t)
{
	int depth = 0;

	if (t[0] == '/')
		return 0;
	for (const char *c = p; *c; c++)
		depth += *c == '/';
	for (const char *c = t; *c; ) {
		size_t len = strcspn(c, "/");

		if (len == 2 && c[0] == '.' && c[1] == '.')
			depth--;
		else if (len > 0 && !(len == 1 && c[0] == '.'))
			depth++;
		if (depth < 0)
			return 0;
		c += len;
		if (*c == '/')
			c++;
	}
	return 1;
}

static int
read_entry(struct archive *a, struct archive_entry *e, ventries *es, const char *file, char *err)
{
	const char *path = archive_entry_pathname(e), *why, *hl = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);
	unsigned mode = (unsigned)archive_entry_mode(e) & 07777;
	char buf[65536];
	lm_buf *keep = NULL;
	lm_sha256 *c;
	ventry *v;
	la_ssize_t n;

	if (path == NULL)
		return lm_err(err, LM_EINPUT, "%s: an entry has no name", file);
	if ((why = path_problem(path, type == AE_IFDIR)) != NULL)
		return lm_err(err, LM_EINPUT, "%s: entry \"%s\" %s", file, path, why);
	if (hl != NULL)
		return lm_err(err, LM_EINPUT, "%s: entry \"%s\" is a hardlink to \"%s\"%s", file, path, hl,
		    link_stays_inside("", hl) && path_problem(hl, 0) == NULL ? ", and a payload holds no links"
		    : " outside the tree");
	if (type == AE_IFLNK) {
		const char *t = archive_entry_symlink(e);

		return lm_err(err, LM_EINPUT, "%s: entry \"%s\" is a symlink to \"%s\"%s", file, path, t ? t : "",
		    t && link_stays_inside(path, t) ? ", and a payload holds no links" : ", which leaves the tree");
	}
	if (type != AE_IFREG && type != AE_IFDIR)
		return lm_err(err, LM_EINPUT, "%s: entry \"%s\" is a %s, not a file", file, path,
		    type == AE_IFCHR || type == AE_IFBLK ? "device file" : "special file");
	if (archive_entry_size(e) < 0 || (uint64_t)archive_entry_size(e) > PAYLOAD_ENTRY_MAX)
		return lm_err(err, LM_EINPUT, "%s: entry \"%s\" is over 64 MiB (%jd bytes)", file, path,
		    (intmax_t)archive_entry_size(e));
	if ((mode & 07002) != 0)
		return lm_err(err, LM_EINPUT, "%s: entry \"%s\" has mode %04o (%s): a payload holds no setuid, setgid, "
		    "sticky or world-writable entry", file, path, mode, mode & 04000 ? "setuid" : mode & 02000 ? "setgid"
		    : mode & 01000 ? "sticky" : "world-writable");
	if (es->n == es->cap) {
		size_t cap = es->cap ? es->cap * 2 : 16;
		ventry *nv = reallocarray(es->v, cap, sizeof *nv);

		if (nv == NULL)
			return lm_err(err, LM_EFAIL, "out of memory");
		es->v = nv;
		es->cap = cap;
	}
	v = &es->v[es->n];
	memset(v, 0, sizeof *v);
	if ((v->path = strdup(path)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	es->n++;
	v->mode = mode;
	v->dir = type == AE_IFDIR;
	v->klen = strlen(path);
	if (v->dir && v->klen > 1 && path[v->klen - 1] == '/')
		v->klen--;
	if (strcmp(path, "MANIFEST.json") == 0)
		keep = &es->manifest;
	else if (strcmp(path, "SHA256SUMS") == 0)
		keep = &es->sums;
	if (keep != NULL && keep->len > 0) /* other names twice are refused once all are read */
		return lm_err(err, LM_EINPUT, "%s: entry \"%s\" appears twice", file, path);
	if ((c = lm_sha256_new()) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	while ((n = archive_read_data(a, buf, sizeof buf)) > 0) {
		lm_sha256_update(c, buf, (size_t)n);
		v->size += (uint64_t)n;
		if (keep != NULL && (v->size > (1u << 20) || lm_buf_add(keep, buf, (size_t)n) != 0)) {
			lm_sha256_free(c);
			return lm_err(err, LM_EINPUT, "%s: entry \"%s\" is too large", file, path);
		}
	}
	if (n < 0) {
		lm_sha256_free(c);
		return lm_err(err, LM_EINPUT, "%s: entry \"%s\" is truncated or corrupt: %s", file, path,
		    archive_error_string(a));
	}
	lm_sha256_final(c, v->sha);
	return LM_OK;
}

static int
read_archive(ventries *es, const char *file, char *err)
{
	struct archive *a;
	struct archive_entry *e;
	int r, rc = LM_OK;

	if (archive_lazy_load(err) != LM_OK)
		return LM_EFAIL;
	a = archive_read_new();
	archive_read_support_filter_gzip(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, file, 65536) != ARCHIVE_OK) {
		rc = lm_err(err, LM_EINPUT, "%s: %s", file, archive_error_string(a));
		goto done;
	}
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN)
		if ((rc = read_entry(a, e, es, file, err)) != LM_OK)
			goto done;
	if (r != ARCHIVE_EOF)
		rc = lm_err(err, LM_EINPUT, "%s: truncated or corrupt archive after %zu entries: %s", file,
		    es->n, archive_error_string(a));
	else if (archive_filter_code(a, 0) != ARCHIVE_FILTER_GZIP)
		rc = lm_err(err, LM_EINPUT, "%s: not a gzip-compressed tar archive", file);
	else
		rc = ventries_index(es, file, err);
done:
	archive_read_free(a);
	return rc;
}

/* Compares the entries with MANIFEST.json and SHA256SUMS; fills info. */
static int
check_manifest(payload_info *info, ventries *es, const char *file, char *err)
{
	const cJSON *files, *f;
	lm_buf want = {0};
	ventry *me = ventries_find(es, "MANIFEST.json");
	int rc = LM_OK;

	if (me == NULL || ventries_find(es, "SHA256SUMS") == NULL)
		return lm_err(err, LM_EINPUT, "%s: entry \"%s\" is missing", file,
		    me == NULL ? "MANIFEST.json" : "SHA256SUMS");
	if ((info->manifest = cJSON_Parse(es->manifest.data)) == NULL ||
	    !cJSON_IsArray(files = cJSON_GetObjectItemCaseSensitive(info->manifest, "files")) ||
	    (info->target = (char *)lm_jstr(info->manifest, "target")) == NULL ||
	    (info->profile = (char *)lm_jstr(info->manifest, "profile")) == NULL ||
	    (info->workload = (char *)lm_jstr(info->manifest, "workload")) == NULL ||
	    (info->label = (char *)lm_jstr(info->manifest, "label")) == NULL ||
	    (info->version = (char *)lm_jstr(info->manifest, "version")) == NULL)
		return lm_err(err, LM_EINPUT, "%s: entry \"MANIFEST.json\" is not a lume-metal manifest", file);
	me->seen = ventries_find(es, "SHA256SUMS")->seen = 1;
	cJSON_ArrayForEach(f, files) {
		const char *p = lm_jstr(f, "path"), *sha = lm_jstr(f, "sha256"), *mode = lm_jstr(f, "mode");
		const cJSON *size = cJSON_GetObjectItemCaseSensitive(f, "size");
		ventry *v;

		if (p == NULL || sha == NULL || mode == NULL || !cJSON_IsNumber(size))
			return lm_err(err, LM_EINPUT, "%s: MANIFEST.json: file %d lacks path, mode, size or sha256",
			    file, info->nfiles);
		if ((v = ventries_find(es, p)) == NULL || v->dir)
			return lm_err(err, LM_EINPUT, "%s: entry \"%s\" is listed in the manifest but missing", file, p);
		if (v->seen)
			return lm_err(err, LM_EINPUT, "%s: entry \"%s\" is listed twice in the manifest", file, p);
		v->seen = 1;
		if (strcmp(v->sha, sha) != 0)
			return lm_err(err, LM_EINPUT, "%s: entry \"%s\" has SHA-256 %s, the manifest says %s", file,
			    p, v->sha, sha);
		if ((double)v->size != size->valuedouble)
			return lm_err(err, LM_EINPUT, "%s: entry \"%s\" has %ju bytes, the manifest says %.0f", file,
			    p, (uintmax_t)v->size, size->valuedouble);
		if (strtoul(mode, NULL, 8) != v->mode)
			return lm_err(err, LM_EINPUT, "%s: entry \"%s\" has mode %04o, the manifest says %s", file,
			    p, v->mode, mode);
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "placeholder")))
			info->placeholders++;
		info->nfiles++;
	}
	for (size_t i = 0; i < es->n; i++)
		if (!es->v[i].seen && !es->v[i].holds)
			return lm_err(err, LM_EINPUT, "%s: entry \"%s\" is not in the manifest", file, es->v[i].path);
	if (sums_text(&want, me->sha, files) != 0)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	else if (want.len != es->sums.len || memcmp(want.data, es->sums.data, want.len) != 0)
		rc = lm_err(err, LM_EINPUT, "%s: entry \"SHA256SUMS\" does not match the manifest", file);
	lm_buf_free(&want);
	return rc;
}

static int
check_sha_file(payload_info *info, const char *file, const char *sha_path, char *err)
{
	char *text = NULL, want[65], why[LM_ERRLEN];
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	size_t len, blen = strlen(base);
	int rc;

	if ((rc = lm_read_file(&text, &len, sha_path, 4096, why)) != LM_OK)
		return lm_err(err, LM_EINPUT, "%s: cannot read its checksum file: %s", file, why);
	if (len < 67 || (memcpy(want, text, 64), want[64] = '\0', !lm_is_sha256(want)) ||
	    strncmp(text + 64, "  ", 2) != 0 || len != 66 + blen + 1 || strncmp(text + 66, base, blen) != 0 ||
	    text[len - 1] != '\n')
		rc = lm_err(err, LM_EINPUT, "%s: not a `shasum -a 256` line for %s", sha_path, base);
	else if ((rc = lm_sha256_file(info->sha256, file, err)) == LM_OK && strcmp(info->sha256, want) != 0)
		rc = lm_err(err, LM_EINPUT, "%s: SHA-256 is %s, %s says %s", file, info->sha256, sha_path, want);
	free(text);
	return rc;
}

int
payload_verify(payload_info **out, const char *path, const char *sha_path, char *err)
{
	payload_info *info = calloc(1, sizeof *info);
	ventries es = {0};
	char shabuf[4096];
	struct stat st;
	int rc;

	*out = NULL;
	if (info == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if (sha_path == NULL) {
		if (lm_fmt(shabuf, sizeof shabuf, "%s.sha256", path) < 0) {
			rc = lm_err(err, LM_EINPUT, "%s: path too long", path);
			goto done;
		}
		sha_path = shabuf;
	}
	errno = 0;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = lm_err(err, LM_EINPUT, "%s: %s", path, errno ? strerror(errno) : "not a regular file");
		goto done;
	}
	info->size = (uint64_t)st.st_size;
	/* Entries first, so a changed byte is reported with the entry that holds it. */
	if ((rc = read_archive(&es, path, err)) != LM_OK || (rc = check_manifest(info, &es, path, err)) != LM_OK ||
	    (rc = check_sha_file(info, path, sha_path, err)) != LM_OK)
		goto done;
	*out = info;
	info = NULL;
done:
	ventries_free(&es);
	payload_info_free(info);
	return rc;
}

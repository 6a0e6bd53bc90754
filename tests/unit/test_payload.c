/* The payload: deterministic bytes, and verify's answer to every kind of bad archive.
 * Each bad archive is written here with libarchive from a good one, and gets a matching
 * .sha256, so that the entry check (not the checksum file) must catch it. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/payload.h"
#include "unit.h"
#include "core/util.h"

static char dir[] = "/tmp/lm-unit-payload.XXXXXX";
static char good[4096];

static void
sh(const char *fmt, const char *arg)
{
	char cmd[8192];

	snprintf(cmd, sizeof cmd, fmt, arg, arg, arg, arg);
	if (system(cmd) != 0) {
		printf("not ok - setup: %s\n", cmd);
		exit(1);
	}
}

/* A mutation of the good archive: called per entry; may change it, drop it (return 0), or
 * append entries after the last one (when e is NULL). */
typedef int (*mutate_fn)(struct archive *w, struct archive_entry *e, char **data, size_t *len);

static void
add_entry(struct archive *w, const char *path, mode_t type, const char *link, const char *data,
    size_t len, int64_t size)
{
	struct archive_entry *e = archive_entry_new();

	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, size);
	if (type == AE_IFLNK)
		archive_entry_set_symlink(e, link);
	else if (link != NULL)
		archive_entry_set_hardlink(e, link);
	if (type == AE_IFCHR)
		archive_entry_set_rdev(e, 0x0103);
	archive_write_header(w, e);
	if (len)
		archive_write_data(w, data, len);
	archive_entry_free(e);
}

/* Rewrites the good payload through fn into dir/NAME, with a matching NAME.sha256. */
static const char *
rewrite(const char *name, mutate_fn fn)
{
	static char out[4096];
	char shaline[256], sha[65];
	struct archive *r = archive_read_new(), *w = archive_write_new();
	struct archive_entry *e;

	snprintf(out, sizeof out, "%s/%s", dir, name);
	archive_read_support_filter_gzip(r);
	archive_read_support_format_tar(r);
	archive_read_open_filename(r, good, 65536);
	archive_write_set_format_ustar(w);
	archive_write_add_filter_gzip(w);
	archive_write_open_filename(w, out);
	while (archive_read_next_header(r, &e) == ARCHIVE_OK) {
		size_t len = (size_t)archive_entry_size(e);
		char *data = malloc(len + 1);

		archive_read_data(r, data, len);
		if (fn(w, e, &data, &len)) {
			archive_entry_set_size(e, (la_int64_t)len);
			archive_write_header(w, e);
			if (len)
				archive_write_data(w, data, len);
		}
		free(data);
	}
	fn(w, NULL, NULL, NULL);
	archive_write_free(w);
	archive_read_free(r);
	lm_sha256_file(sha, out, NULL);
	snprintf(shaline, sizeof shaline, "%s  %s\n", sha, name);
	snprintf(out + strlen(out), sizeof out - strlen(out), ".sha256");
	lm_write_file_atomic(out, shaline, strlen(shaline), 0644, NULL);
	out[strlen(out) - 7] = '\0';
	return out;
}

static int
m_byte(struct archive *w, struct archive_entry *e, char **d, size_t *len)
{
	(void)w;
	if (e && strcmp(archive_entry_pathname(e), "bin/install.sh") == 0 && *len > 3)
		(*d)[3] ^= 1;
	return 1;
}

static int
m_drop(struct archive *w, struct archive_entry *e, char **d, size_t *len)
{
	(void)w, (void)d, (void)len;
	return e && strcmp(archive_entry_pathname(e), "lib/libMetal.so") != 0;
}

static int
m_extra(struct archive *w, struct archive_entry *e, char **d, size_t *len)
{
	(void)d, (void)len;
	if (!e)
		add_entry(w, "bin/extra", AE_IFREG, NULL, "x\n", 2, 2);
	return 1;
}

static int m_kind;

static int
m_append(struct archive *w, struct archive_entry *e, char **d, size_t *len)
{
	(void)d, (void)len;
	if (e)
		return 1;
	switch (m_kind) {
	case 0: add_entry(w, "/etc/evil", AE_IFREG, NULL, "x", 1, 1); break;
	case 1: add_entry(w, "bin/../../evil", AE_IFREG, NULL, "x", 1, 1); break;
	case 2: add_entry(w, "bin/evil", AE_IFLNK, "../../etc/passwd", NULL, 0, 0); break;
	case 3: add_entry(w, "bin/evil", AE_IFREG, "/etc/passwd", NULL, 0, 0); break;
	case 4: add_entry(w, "bin/tty", AE_IFCHR, NULL, NULL, 0, 0); break;
	case 5: {
		size_t n = PAYLOAD_ENTRY_MAX + 1;
		char *z = calloc(1, n);

		add_entry(w, "lib/huge", AE_IFREG, NULL, z, n, (int64_t)n);
		free(z);
		break;
	}
	case 6: add_entry(w, "bin/in-tree", AE_IFLNK, "install.sh", NULL, 0, 0); break;
	}
	return 1;
}

static int
m_none(struct archive *w, struct archive_entry *e, char **d, size_t *len)
{
	(void)w, (void)e, (void)d, (void)len;
	return 1;
}

static int
verify(const char *path, char *err)
{
	payload_info *info = NULL;
	int rc = payload_verify(&info, path, NULL, err);

	payload_info_free(info);
	return rc;
}

int
main(void)
{
	payload_build_opts o = {.target = "linux-sim", .workload = "llama-server"};
	payload_info *a = NULL, *b = NULL;
	char err[LM_ERRLEN] = "", tree[4096], second[4096], *x, *y;
	size_t xl, yl;
	unsigned char hdr[10];
	FILE *f;
	int rc;

	if (mkdtemp(dir) == NULL)
		return 2;
	sh("mkdir -p %s/tree/guest-payload %s/tree/build/linux && cp -r " LM_DATADIR "/manifests %s/tree/", dir);
	sh("cd %s/tree && for f in common.sh install.sh rollback.sh status.sh run-with-shim; do printf '#!/bin/sh\\necho %%s\\n' $f "
	    "> guest-payload/$f; done && for f in liblumemetal.so libMetal.so lume-metal-probe; do "
	    "head -c 3000 /dev/urandom > build/linux/$f; done", dir);
	snprintf(tree, sizeof tree, "%s/tree", dir);
	o.datadir = tree;

	snprintf(good, sizeof good, "%s/good.tar.gz", dir);
	o.out = good;
	rc = payload_build(&a, &o, err);
	UNIT_OK(rc == LM_OK && a->nfiles == 13 && a->placeholders == 0, "build writes a 13-file payload %s", rc ? err : "");
	snprintf(second, sizeof second, "%s/again.tar.gz", dir);
	o.out = second;
	rc = payload_build(&b, &o, err);
	UNIT_OK(rc == LM_OK && a && b && strcmp(a->sha256, b->sha256) == 0, "a second build has the same SHA-256");
	lm_read_file(&x, &xl, good, 1 << 24, NULL);
	lm_read_file(&y, &yl, second, 1 << 24, NULL);
	UNIT_OK(x && y && xl == yl && memcmp(x, y, xl) == 0, "... and the same bytes");
	free(x), free(y);
	f = fopen(good, "rb");
	UNIT_OK(f && fread(hdr, 1, 10, f) == 10 && hdr[0] == 0x1f && hdr[1] == 0x8b && !hdr[4] && !hdr[5] &&
	    !hdr[6] && !hdr[7] && !(hdr[3] & 0x08), "the gzip header has no timestamp and no file name");
	if (f)
		fclose(f);
	{
		struct archive *r = archive_read_new();
		struct archive_entry *e;
		char prev[256] = "";
		int sorted = 1, owned = 1, timed = 1, n = 0;

		archive_read_support_filter_gzip(r);
		archive_read_support_format_tar(r);
		archive_read_open_filename(r, good, 65536);
		while (archive_read_next_header(r, &e) == ARCHIVE_OK) {
			sorted &= strcmp(prev, archive_entry_pathname(e)) < 0;
			snprintf(prev, sizeof prev, "%s", archive_entry_pathname(e));
			owned &= archive_entry_uid(e) == 0 && archive_entry_gid(e) == 0;
			timed &= archive_entry_mtime(e) == PAYLOAD_MTIME && !archive_entry_atime_is_set(e) &&
			    !archive_entry_ctime_is_set(e);
			n++;
		}
		UNIT_OK(archive_format(r) == ARCHIVE_FORMAT_TAR_USTAR, "entries are plain ustar (no pax extras)");
		archive_read_free(r);
		UNIT_OK(n == 17 && sorted, "17 entries (13 files, MANIFEST.json, SHA256SUMS, 2 dirs), sorted");
		UNIT_OK(owned && timed, "uid/gid 0, fixed mtime, no atime or ctime");
	}
	payload_info_free(a);
	payload_info_free(b);

	UNIT_OK(verify(good, err) == LM_OK, "verify accepts the good payload");
	UNIT_OK(verify(rewrite("same.tar.gz", m_none), err) == LM_OK, "verify accepts a faithful rewrite");

	UNIT_OK(verify(rewrite("byte.tar.gz", m_byte), err) == LM_EINPUT, "a changed byte is refused");
	UNIT_HAS(err, "entry \"bin/install.sh\" has SHA-256", "... naming the entry");
	UNIT_OK(verify(rewrite("drop.tar.gz", m_drop), err) == LM_EINPUT, "a missing entry is refused");
	UNIT_HAS(err, "entry \"lib/libMetal.so\" is listed in the manifest but missing", "... naming it");
	UNIT_OK(verify(rewrite("extra.tar.gz", m_extra), err) == LM_EINPUT, "an extra entry is refused");
	UNIT_HAS(err, "entry \"bin/extra\" is not in the manifest", "... naming it");
	{
		static const char *const want[] = {
			"entry \"/etc/evil\" is an absolute path",
			"entry \"bin/../../evil\" climbs out of the tree with ..",
			"entry \"bin/evil\" is a symlink to \"../../etc/passwd\", which leaves the tree",
			"entry \"bin/evil\" is a hardlink to \"/etc/passwd\" outside the tree",
			"entry \"bin/tty\" is a device file",
			"entry \"lib/huge\" is over 64 MiB",
			"entry \"bin/in-tree\" is a symlink to \"install.sh\", and a payload holds no links",
		};
		static const char *const what[] = {"an absolute path", "a .. entry", "a symlink out of the tree",
			"a hardlink out of the tree", "a device file", "an entry over 64 MiB", "a symlink inside"};

		for (m_kind = 0; m_kind < 7; m_kind++) {
			char name[32];

			snprintf(name, sizeof name, "bad%d.tar.gz", m_kind);
			UNIT_OK(verify(rewrite(name, m_append), err) == LM_EINPUT, "%s is refused", what[m_kind]);
			UNIT_HAS(err, want[m_kind], "... naming the entry and the reason");
		}
	}
	/* A truncated archive with a checksum file that matches the truncated bytes. */
	{
		char cut[4096], cmd[16384];

		snprintf(cut, sizeof cut, "%s/cut.tar.gz", dir);
		snprintf(cmd, sizeof cmd, "head -c 1500 '%s' > '%s' && cd '%s' && sha256sum cut.tar.gz > cut.tar.gz.sha256",
		    good, cut, dir);
		UNIT_OK(system(cmd) == 0 && verify(cut, err) == LM_EINPUT, "a truncated payload is refused");
		UNIT_HAS(err, "truncated", "... as truncated");
		snprintf(cmd, sizeof cmd, "cp '%s' '%s/tamper.tar.gz' && sed s/good.tar.gz/tamper.tar.gz/ '%s.sha256' > '%s/tamper.tar.gz.sha256' && "
		    "printf x >> '%s/tamper.tar.gz'", good, dir, good, dir, dir);
		snprintf(cut, sizeof cut, "%s/tamper.tar.gz", dir);
		rc = system(cmd) == 0 ? verify(cut, err) : -99;
		UNIT_OK(rc == LM_EINPUT, "a byte appended after the archive is refused by its .sha256");
		UNIT_HAS(err, "tamper.tar.gz.sha256 says", "... naming the checksum file");
		snprintf(cmd, sizeof cmd, "cp '%s' '%s/lonely.tar.gz'", good, dir);
		snprintf(cut, sizeof cut, "%s/lonely.tar.gz", dir);
		UNIT_OK(system(cmd) == 0 && verify(cut, err) == LM_EINPUT, "a payload without .sha256 is refused");
		UNIT_HAS(err, "cannot read its checksum file", "... saying why");
	}
	/* Output paths that cannot be written leave nothing behind. */
	{
		char out[4096], cmd[16384];

		snprintf(out, sizeof out, "%s/no-such-dir/p.tar.gz", dir);
		o.out = out;
		UNIT_OK(payload_build(&a, &o, err) == LM_EINPUT, "an unwritable output path is an input error");
		UNIT_HAS(err, "no-such-dir/p.tar.gz: cannot create a file there", "... naming the path");
		snprintf(out, sizeof out, "%s/out/p.tar.gz", dir);
		snprintf(cmd, sizeof cmd, "mkdir '%s/out' && rm '%s/tree/build/linux/libMetal.so'", dir, dir);
		UNIT_OK(system(cmd) == 0 && payload_build(&a, &o, err) == LM_EINPUT, "a missing binary is an input error");
		UNIT_HAS(err, "build/linux/libMetal.so: missing (run `make shim` first)", "... naming the file");
		snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s/out')\"", dir);
		UNIT_OK(system(cmd) == 0, "... and leaves no partial file");
		o.target = "windows";
		UNIT_OK(payload_build(&a, &o, err) == LM_EINPUT, "an unknown target is an input error");
		UNIT_HAS(err, "--target windows: unknown target", "... naming it");
	}

	snprintf(second, sizeof second, "rm -rf '%s'", dir);
	if (system(second) != 0)
		return 2;
	UNIT_DONE();
}

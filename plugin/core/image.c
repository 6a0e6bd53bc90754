/* image: see image.h. */
#include "core/image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

static const char header[] = "VM Storage Locations:";
static const char none[] = "No VM storage locations configured";
static const char dflt[] = " (default)";

static int
is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	    c == '-';
}

/* A location path as Lume prints it: absolute or "~"/"~/...", printable, no ".." component. */
static int
path_ok(const char *p, size_t len)
{
	if (len == 0 || len > IMAGE_PATH_MAX)
		return 0;
	if (p[0] != '/' && !(p[0] == '~' && (len == 1 || p[1] == '/')))
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c < 0x20 || c == 0x7f)
			return 0;
		if (c == '.' && i + 1 < len && p[i + 1] == '.' && (i == 0 || p[i - 1] == '/') &&
		    (i + 2 == len || p[i + 2] == '/'))
			return 0;
	}
	return 1;
}

/* One "  - NAME: PATH[ (default)]" line (without its newline) into *loc. */
static int
parse_entry(image_location *loc, const char *s, size_t len)
{
	size_t i = 0, nl;

	if (len < 4 || memcmp(s, "  - ", 4) != 0)
		return -1;
	s += 4;
	len -= 4;
	while (i < len && is_name_char(s[i]))
		i++;
	if (i == 0 || i > IMAGE_NAME_MAX || i + 2 > len || s[i] != ':' || s[i + 1] != ' ')
		return -1;
	nl = i;
	memcpy(loc->name, s, nl);
	loc->name[nl] = '\0';
	s += nl + 2;
	len -= nl + 2;
	loc->is_default = 0;
	if (len >= sizeof dflt - 1 && memcmp(s + len - (sizeof dflt - 1), dflt, sizeof dflt - 1) == 0) {
		loc->is_default = 1;
		len -= sizeof dflt - 1;
	}
	if (!path_ok(s, len))
		return -1;
	memcpy(loc->path, s, len);
	loc->path[len] = '\0';
	return 0;
}

int
image_storage_parse(image_location *out, size_t max, size_t *n, const char *text, size_t len, char *err)
{
	int seen_header = 0, defaults = 0, line_no = 0;
	const char *p = text, *end = text + len;

	*n = 0;
	if (max > IMAGE_LOCATIONS_MAX)
		max = IMAGE_LOCATIONS_MAX;
	if (len > IMAGE_STORAGE_MAX)
		return lm_err(err, LM_EINPUT, "lume config storage list: output longer than %d bytes", IMAGE_STORAGE_MAX);
	if (memchr(text, '\0', len) != NULL)
		return lm_err(err, LM_EINPUT, "lume config storage list: output holds a NUL byte");
	while (p < end) {
		const char *nlp = memchr(p, '\n', (size_t)(end - p));
		size_t ll = (size_t)((nlp ? nlp : end) - p);
		const char *line = p;

		p = nlp ? nlp + 1 : end;
		line_no++;
		if (ll > 0 && line[ll - 1] == '\r')
			ll--;
		if (ll == 0 || line[0] == '[') /* blank, or one of Lume's log lines */
			continue;
		if (!seen_header) {
			if (ll == sizeof none - 1 && memcmp(line, none, ll) == 0)
				return lm_err(err, LM_EFAIL, "lume config storage list: no VM storage locations configured");
			if (ll != sizeof header - 1 || memcmp(line, header, ll) != 0)
				return lm_err(err, LM_EINPUT, "lume config storage list: line %d is not \"%s\"", line_no, header);
			seen_header = 1;
			continue;
		}
		if (*n == max)
			return lm_err(err, LM_EINPUT, "lume config storage list: more than %zu locations", max);
		if (parse_entry(&out[*n], line, ll) != 0)
			return lm_err(err, LM_EINPUT, "lume config storage list: line %d is not \"  - NAME: PATH\" "
			    "with a location name and an absolute or ~/ path", line_no);
		for (size_t k = 0; k < *n; k++)
			if (strcmp(out[k].name, out[*n].name) == 0)
				return lm_err(err, LM_EINPUT, "lume config storage list: location %s is listed twice", out[k].name);
		if (out[*n].is_default && ++defaults > 1)
			return lm_err(err, LM_EINPUT, "lume config storage list: more than one default location");
		(*n)++;
	}
	if (!seen_header)
		return lm_err(err, LM_EINPUT, "lume config storage list: no \"%s\" line", header);
	return LM_OK;
}

const image_location *
image_storage_find(const image_location *locs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (name != NULL ? strcmp(locs[i].name, name) == 0 : locs[i].is_default)
			return &locs[i];
	return NULL;
}

int
image_vm_name_ok(const char *vm)
{
	size_t i;

	if (vm == NULL || !(is_name_char(vm[0]) && vm[0] != '-'))
		return 0;
	for (i = 0; vm[i] != '\0'; i++)
		if (i >= IMAGE_NAME_MAX || !(is_name_char(vm[i]) || vm[i] == '.'))
			return 0;
	return 1;
}

int
image_digest_path(char *out, size_t outlen, const char *location_path, const char *home, const char *vm,
    char *err)
{
	const char *rest = location_path;
	size_t bl = 0, rl;

	if (!image_vm_name_ok(vm))
		return lm_err(err, LM_EINPUT, "not a VM name this tool accepts (letters, digits, . _ -, at most %d)",
		    IMAGE_NAME_MAX);
	if (location_path == NULL || !path_ok(location_path, strlen(location_path)))
		return lm_err(err, LM_EINPUT, "VM %s: the location path is not absolute or ~/, or holds ..", vm);
	if (location_path[0] == '~') {
		if (home == NULL || home[0] != '/' || !path_ok(home, strlen(home)))
			return lm_err(err, LM_EINPUT, "VM %s: no absolute HOME to expand ~ in the location path", vm);
		bl = strlen(home);
		while (bl > 0 && home[bl - 1] == '/')
			bl--;
		rest = location_path + 1;
	}
	rl = strlen(rest);
	while (rl > 0 && rest[rl - 1] == '/')
		rl--;
	if (lm_fmt(out, outlen, "%.*s%.*s/%s/.manifest-digest", (int)bl, home ? home : "", (int)rl, rest, vm) != 0)
		return lm_err(err, LM_EINPUT, "VM %s: the digest path is too long", vm);
	return LM_OK;
}

int
image_digest_parse(char out[IMAGE_DIGEST_LEN + 1], const char *text, size_t len, char *err)
{
	char hex[65];

	out[0] = '\0';
	if (len == IMAGE_DIGEST_LEN + 1 && text[IMAGE_DIGEST_LEN] == '\n')
		len--;
	if (len != IMAGE_DIGEST_LEN || memcmp(text, "sha256:", 7) != 0)
		return lm_err(err, LM_EINPUT, "not a manifest digest (sha256: and 64 lowercase hex digits)");
	memcpy(hex, text + 7, 64);
	hex[64] = '\0';
	if (!lm_is_sha256(hex))
		return lm_err(err, LM_EINPUT, "not a manifest digest (sha256: and 64 lowercase hex digits)");
	memcpy(out, text, IMAGE_DIGEST_LEN);
	out[IMAGE_DIGEST_LEN] = '\0';
	return LM_OK;
}

/* Reads at most cap bytes of a regular file, not following a final symlink and never blocking
 * on a FIFO. Returns the byte count, -1 with errno set, or -2 when it is no regular file. */
static ssize_t
read_small(const char *path, char *buf, size_t cap)
{
	struct stat st;
	size_t got = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -2;
	}
	while (got < cap && (r = read(fd, buf + got, cap - got)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			close(fd);
			errno = e;
			return -1;
		}
		got += (size_t)r;
	}
	close(fd);
	return (ssize_t)got;
}

int
image_storage_local(image_location *out, size_t max, size_t *n, const char *lume, char *err)
{
	const char *argv[] = {lume, "config", "storage", "list", NULL};
	lm_buf o = {0}, e = {0};
	char msg[LM_ERRLEN];
	int st_code = 0, rc;

	*n = 0;
	if ((rc = lm_run(&o, &e, &st_code, argv, msg)) != LM_OK)
		rc = lm_err(err, rc, "%s (install Lume, or pass --lume PATH)", msg);
	else if (st_code != 0)
		rc = lm_err(err, LM_EFAIL, "lume config storage list failed (exit %d)", st_code);
	else
		rc = image_storage_parse(out, max, n, o.data ? o.data : "", o.len, err);
	lm_buf_free(&o);
	lm_buf_free(&e);
	return rc;
}

int
image_digest_read(char out[IMAGE_DIGEST_LEN + 1], const image_location *locs, size_t n, const char *vm,
    const char *location, char *err)
{
	const image_location *loc;
	char path[IMAGE_PATH_MAX + 2 * IMAGE_NAME_MAX + 64], dir[sizeof path], buf[128], msg[LM_ERRLEN];
	ssize_t got;
	struct stat st;
	int rc;

	out[0] = '\0';
	if (!image_vm_name_ok(vm))
		return lm_err(err, LM_EINPUT, "not a VM name this tool accepts (letters, digits, . _ -, at most %d)",
		    IMAGE_NAME_MAX);
	if ((loc = image_storage_find(locs, n, location)) == NULL)
		return location ? lm_err(err, LM_EINPUT, "VM %s: Lume has no storage location %s", vm, location)
		                : lm_err(err, LM_EFAIL, "VM %s: Lume names no default storage location", vm);
	if ((rc = image_digest_path(path, sizeof path, loc->path, getenv("HOME"), vm, err)) != LM_OK)
		return rc;
	memcpy(dir, path, sizeof dir);
	*strrchr(dir, '/') = '\0';
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return lm_err(err, LM_EFAIL, "VM %s is not in Lume's storage location %s (%s)", vm, loc->name, loc->path);
	if ((got = read_small(path, buf, sizeof buf)) < 0) {
		if (got == -1 && errno == ENOENT)
			return lm_err(err, LM_EFAIL, "VM %s has no .manifest-digest: it was not pulled from a registry "
			    "(a VM made by lume create)", vm);
		return lm_err(err, LM_EFAIL, "VM %s: %s: %s", vm, path, got == -2 ? "not a regular file" : strerror(errno));
	}
	if (image_digest_parse(out, buf, (size_t)got, msg) != LM_OK)
		return lm_err(err, LM_EFAIL, "VM %s: .manifest-digest is %s", vm, msg);
	return LM_OK;
}

int
image_digest_local(char out[IMAGE_DIGEST_LEN + 1], const char *lume, const char *vm, const char *location,
    char *err)
{
	image_location locs[IMAGE_LOCATIONS_MAX];
	size_t n = 0;
	int rc;

	out[0] = '\0';
	if (!image_vm_name_ok(vm))
		return lm_err(err, LM_EINPUT, "not a VM name this tool accepts (letters, digits, . _ -, at most %d)",
		    IMAGE_NAME_MAX);
	if ((rc = image_storage_local(locs, IMAGE_LOCATIONS_MAX, &n, lume, err)) != LM_OK)
		return rc;
	return image_digest_read(out, locs, n, vm, location, err);
}

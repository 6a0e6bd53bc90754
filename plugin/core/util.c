/* util: see util.h. */
/* memset_s (C11 Annex K) is declared only when asked for, before the first header. */
#define __STDC_WANT_LIB_EXT1__ 1
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

int
lm_err(char *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL) {
		va_start(ap, fmt);
		vsnprintf(err, LM_ERRLEN, fmt, ap);
		va_end(ap);
	}
	return code;
}

int
lm_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

int
lm_read_file(char **out, size_t *len, const char *path, size_t max, char *err)
{
	struct stat st;
	char *data = NULL;
	size_t got = 0;
	ssize_t n;
	int fd, rc = LM_OK;

	*out = NULL;
	/* O_NONBLOCK: a FIFO where a file is expected is refused below instead of holding the open. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return lm_err(err, LM_EINPUT, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = lm_err(err, LM_EINPUT, "%s: not a regular file", path);
		goto done;
	}
	if ((uintmax_t)st.st_size > max) {
		rc = lm_err(err, LM_EINPUT, "%s: larger than %zu bytes", path, max);
		goto done;
	}
	if ((data = malloc((size_t)st.st_size + 1)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "%s: out of memory", path);
		goto done;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, data + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = lm_err(err, LM_EFAIL, "%s: read: %s", path, n < 0 ? strerror(errno) : "short read");
			goto done;
		}
		got += (size_t)n;
	}
	data[got] = '\0';
	*out = data;
	data = NULL;
	if (len != NULL)
		*len = got;
done:
	free(data);
	close(fd);
	return rc;
}

static int
fsync_dir_of(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, rc;

	if (slash == NULL)
		strcpy(dir, ".");
	else if (slash == path)
		strcpy(dir, "/");
	else if (lm_fmt(dir, sizeof dir, "%.*s", (int)(slash - path), path) < 0)
		return -1;
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

int
lm_tmp_beside(char **tmp, const char *path, char *err)
{
	size_t n = strlen(path) + 16;
	char *t;
	int fd;

	*tmp = NULL;
	if ((t = malloc(n)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	snprintf(t, n, "%s.tmp.XXXXXX", path);
	if ((fd = mkstemp(t)) < 0) {
		int e = errno;
		free(t);
		return lm_err(err, e == ENOSPC || e == EIO ? LM_EFAIL : LM_EINPUT,
		    "%s: cannot create a file there: %s", path, strerror(e));
	}
	*tmp = t;
	return fd;
}

int
lm_commit_tmp(int fd, const char *tmp, const char *path, char *err)
{
	if (fsync(fd) < 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return lm_err(err, LM_EFAIL, "%s: fsync: %s", path, strerror(e));
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return lm_err(err, LM_EFAIL, "%s: %s", path, strerror(e));
	}
	if (fsync_dir_of(path) < 0)
		return lm_err(err, LM_EFAIL, "%s: fsync of its directory: %s", path, strerror(errno));
	return LM_OK;
}

int
lm_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode, char *err)
{
	const char *p = data;
	char *tmp = NULL;
	int fd, rc;

	if ((fd = lm_tmp_beside(&tmp, path, err)) < 0)
		return fd;
	if (fchmod(fd, (mode_t)mode) < 0)
		goto fail;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		p += n;
		len -= (size_t)n;
	}
	rc = lm_commit_tmp(fd, tmp, path, err);
	free(tmp);
	return rc;
fail:
	rc = lm_err(err, LM_EFAIL, "%s: write: %s", path, strerror(errno));
	close(fd);
	unlink(tmp);
	free(tmp);
	return rc;
}

struct lm_sha256 {
	EVP_MD_CTX *md;
};

lm_sha256 *
lm_sha256_new(void)
{
	lm_sha256 *c = calloc(1, sizeof *c);

	if (c == NULL || (c->md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
		lm_sha256_free(c);
		return NULL;
	}
	return c;
}

void
lm_sha256_update(lm_sha256 *c, const void *data, size_t len)
{
	EVP_DigestUpdate(c->md, data, len);
}

void
lm_sha256_final(lm_sha256 *c, char out[65])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned n = 0;

	EVP_DigestFinal_ex(c->md, d, &n);
	for (unsigned i = 0; i < n && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	out[64] = '\0';
	lm_sha256_free(c);
}

void
lm_sha256_free(lm_sha256 *c)
{
	if (c == NULL)
		return;
	EVP_MD_CTX_free(c->md);
	free(c);
}

void
lm_sha256_hex(char out[65], const void *data, size_t len)
{
	lm_sha256 *c = lm_sha256_new();

	if (c == NULL)
		abort();
	lm_sha256_update(c, data, len);
	lm_sha256_final(c, out);
}

int
lm_sha256_file(char out[65], const char *path, char *err)
{
	char buf[65536];
	lm_sha256 *c;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return lm_err(err, LM_EINPUT, "%s: %s", path, strerror(errno));
	if ((c = lm_sha256_new()) == NULL) {
		close(fd);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	while ((n = read(fd, buf, sizeof buf)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			lm_sha256_free(c);
			close(fd);
			return lm_err(err, LM_EFAIL, "%s: read: %s", path, strerror(e));
		}
		lm_sha256_update(c, buf, (size_t)n);
	}
	close(fd);
	lm_sha256_final(c, out);
	return LM_OK;
}

int64_t
lm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
cmp_name_at(const void *a, const void *b)
{
	const lm_name_at *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(((const lm_name_at *)a)->name, ((const lm_name_at *)b)->name);
}

void
lm_name_sort(lm_name_at *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_name_at);
}

const lm_name_at *
lm_name_find(const lm_name_at *v, size_t n, const char *name)
{
	lm_name_at key = {name, 0};

	return v && n ? bsearch(&key, v, n, sizeof *v, cmp_name) : NULL;
}

size_t
lm_first_repeat(const char *const *names, size_t n)
{
	lm_name_at *s;
	size_t first = n;

	if (n < 2)
		return n;
	if ((s = calloc(n, sizeof *s)) == NULL)
		return (size_t)-1;
	for (size_t i = 0; i < n; i++)
		s[i] = (lm_name_at){names[i], i};
	lm_name_sort(s, n);
	for (size_t i = 1; i < n; i++)
		if (strcmp(s[i - 1].name, s[i].name) == 0 && s[i].pos < first)
			first = s[i].pos;
	free(s);
	return first;
}

int
lm_is_sha256(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[64] == '\0';
}

void
lm_digest(char out[72], const void *data, size_t len)
{
	memcpy(out, "sha256:", 7);
	lm_sha256_hex(out + 7, data, len);
}

int
lm_is_digest(const char *s)
{
	return s != NULL && strncmp(s, "sha256:", 7) == 0 && lm_is_sha256(s + 7);
}

char *
lm_base64(const void *data, size_t len, int pad)
{
	char *out = len <= (size_t)INT_MAX / 2 ? malloc(4 * ((len + 2) / 3) + 1) : NULL;
	int n;

	if (out == NULL)
		return NULL;
	n = EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	while (!pad && n > 0 && out[n - 1] == '=')
		out[--n] = '\0';
	return out;
}

int
lm_unbase64(unsigned char **out, size_t *len, const char *s)
{
	size_t n = strlen(s), o = 0;
	unsigned acc = 0;
	int bits = 0;
	unsigned char *d;

	while (n > 0 && s[n - 1] == '=')
		n--;
	if (strlen(s) - n > 2 || n % 4 == 1 || (d = malloc(n * 3 / 4 + 1)) == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i], v;

		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '+' || c == '-')
			v = 62;
		else if (c == '/' || c == '_')
			v = 63;
		else {
			free(d);
			return -1;
		}
		acc = (acc << 6) | (unsigned)v;
		if ((bits += 6) >= 8) {
			bits -= 8;
			d[o++] = (unsigned char)(acc >> bits);
		}
	}
	*out = d;
	*len = o;
	return 0;
}

int
lm_buf_add(lm_buf *b, const void *data, size_t len)
{
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + len + 1)
			cap *= 2;
		if ((p = realloc(b->data, cap)) == NULL)
			return -1;
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int
lm_buf_addf(lm_buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[512], *big;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n < sizeof small)
		return lm_buf_add(b, small, (size_t)n);
	if ((big = malloc((size_t)n + 1)) == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	n = lm_buf_add(b, big, (size_t)n);
	free(big);
	return n;
}

void
lm_buf_free(lm_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int
lm_home_expand(char **out, const char *v, size_t n, int list)
{
	const char *home = getenv("HOME");
	lm_buf b = {0};
	size_t i = 0;
	int rc = lm_buf_add(&b, "", 0) == 0 ? LM_OK : LM_EFAIL;

	*out = NULL;
	while (rc == LM_OK) {
		const char *comma = list ? memchr(v + i, ',', n - i) : NULL;
		size_t e = comma ? (size_t)(comma - v) : n, a = i;

		while (list && a < e && (v[a] == ' ' || v[a] == '\t'))
			a++;
		if (e - a >= 2 && v[a] == '~' && v[a + 1] == '/') {
			if (home == NULL || *home == '\0')
				rc = LM_EINPUT;
			else if (lm_buf_add(&b, v + i, a - i) != 0 || lm_buf_add(&b, home, strlen(home)) != 0 ||
			    lm_buf_add(&b, v + a + 1, e - a - 1) != 0)
				rc = LM_EFAIL;
		} else if (lm_buf_add(&b, v + i, e - i) != 0)
			rc = LM_EFAIL;
		if (rc != LM_OK || comma == NULL)
			break;
		if (lm_buf_add(&b, ",", 1) != 0)
			rc = LM_EFAIL;
		i = e + 1;
	}
	if (rc != LM_OK)
		lm_buf_free(&b);
	else
		*out = b.data;
	return rc;
}

int
lm_mkdirs(const char *path, char *err)
{
	char p[4096];

	if (lm_fmt(p, sizeof p, "%s", path) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", path);
	for (char *s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;

			*s = '\0';
			if (mkdir(p, 0700) != 0 && errno != EEXIST)
				return lm_err(err, LM_EFAIL, "%s: %s", p, strerror(errno));
			*s = c;
			if (c == '\0')
				break;
		}
	}
	return LM_OK;
}


extern char **environ;

#define LM_RUN_CAP (4u << 20) /* bytes kept of each stream */

int
lm_run(lm_buf *out, lm_buf *errout, int *status, const char *const *argv, char *err)
{
	return lm_run_deadline(out, errout, status, argv, 0, err);
}

/* Reads what fd has into b (up to LM_RUN_CAP); returns 0 at its end (or past the cap: the
 * child gets EPIPE or SIGPIPE on its next write), 1 while it stays open, -1 on an error. */
static int
drain(int fd, lm_buf *b)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof buf);

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -1;
	if (n == 0)
		return 0;
	if (b->len + (size_t)n > LM_RUN_CAP) {
		if (b->len < LM_RUN_CAP)
			lm_buf_add(b, buf, LM_RUN_CAP - b->len);
		return 0;
	}
	return lm_buf_add(b, buf, (size_t)n) == 0 ? 1 : -1;
}

int
lm_run_deadline(lm_buf *out, lm_buf *errout, int *status, const char *const *argv, int64_t deadline_ms,
    char *err)
{
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, st, rc = LM_OK, timed_out = 0;
	int64_t start = lm_now_ms();
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct pollfd pfd[2];
	pid_t pid;

	if (pipe(po) != 0 || pipe(pe) != 0) {
		rc = lm_err(err, LM_EFAIL, "pipe: %s", strerror(errno));
		for (int i = 0; i < 2; i++)
			if (po[i] >= 0)
				close(po[i]);
		return rc;
	}
	/* Not inherited by what other threads spawn meanwhile (the child's own 1 and 2 are dup2'd
	 * copies, which do not keep the flag). */
	for (int i = 0; i < 2; i++) {
		fcntl(po[i], F_SETFD, FD_CLOEXEC);
		fcntl(pe[i], F_SETFD, FD_CLOEXEC);
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	posix_spawn_file_actions_addclose(&fa, po[0]);
	posix_spawn_file_actions_addclose(&fa, pe[0]);
	posix_spawnattr_init(&attr);
	/* With a deadline the child leads its own process group, so that expiry can kill it and
	 * whatever it started. */
	if (deadline_ms > 0) {
		posix_spawnattr_setpgroup(&attr, 0);
		posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
	}
	rc = posix_spawnp(&pid, argv[0], &fa, &attr, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(po[1]);
	close(pe[1]);
	if (rc != 0) {
		close(po[0]);
		close(pe[0]);
		return lm_err(err, LM_EINPUT, "cannot run %s: %s", argv[0], strerror(rc));
	}
	/* Both streams at once: a child blocked writing one while we wait on the other never ends. */
	pfd[0] = (struct pollfd){.fd = po[0], .events = POLLIN};
	pfd[1] = (struct pollfd){.fd = pe[0], .events = POLLIN};
	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		int wait = -1, n;

		if (deadline_ms > 0) {
			int64_t left = deadline_ms - lm_now_ms();

			if (left <= 0) {
				timed_out = 1;
				break;
			}
			wait = left > INT_MAX ? INT_MAX : (int)left;
		}
		if ((n = poll(pfd, 2, wait)) < 0 && errno != EINTR)
			break;
		for (int i = 0; n > 0 && i < 2; i++)
			if (pfd[i].fd >= 0 && pfd[i].revents != 0 && drain(pfd[i].fd, i == 0 ? out : errout) <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
	}
	for (int i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	/* A child may close both streams and go on: with a deadline, it is waited for until then. */
	while (deadline_ms > 0 && !timed_out) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			goto reaped;
		if (w < 0 && errno != EINTR)
			return lm_err(err, LM_EFAIL, "waitpid: %s", strerror(errno));
		if (lm_now_ms() >= deadline_ms)
			timed_out = 1;
		else
			nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
	}
	if (timed_out)
		kill(-pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return lm_err(err, LM_EFAIL, "waitpid: %s", strerror(errno));
reaped:
	if (timed_out)
		return lm_err(err, LM_EFAIL, "%s timed out after %lld s", argv[0],
		    (long long)((deadline_ms - start + 999) / 1000));
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return LM_OK;
}

void
lm_wipe(void *p, size_t n)
{
	if (p == NULL || n == 0)
		return;
#if defined(__APPLE__)
	memset_s(p, n, 0, n);
#elif (defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))) || \
    defined(__OpenBSD__) || defined(__FreeBSD__) || defined(__NetBSD__)
	explicit_bzero(p, n);
#else
	/* memset through a volatile pointer: the compiler cannot prove it is memset, so it cannot
	 * drop the call as a store to memory never read again. */
	static void *(*const volatile wipe_memset)(void *, int, size_t) = memset;

	wipe_memset(p, 0, n);
#endif
}

size_t
lm_edits(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b), d[64][64];

	if (la >= 64 || lb >= 64)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

char *
lm_printable(char *out, size_t len, const char *s)
{
	size_t i = 0;

	if (s == NULL)
		s = "?";
	for (; s[i] && i + 1 < len; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = '\0';
	if (s[i] && len > 4)
		memcpy(out + len - 4, "...", 4);
	return out;
}

const char *
lm_jstr(const cJSON *o, const char *k)
{
	return lm_jstr_or(o, k, NULL);
}

const char *
lm_jstr_or(const cJSON *o, const char *k, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

double
lm_jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

const cJSON *
lm_jobj(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsObject(v) ? v : NULL;
}

void
lm_jadd_str(cJSON *o, const char *k, const char *v)
{
	cJSON_AddItemToObject(o, k, v ? cJSON_CreateString(v) : cJSON_CreateNull());
}

void
lm_jadd_num(cJSON *o, const char *k, double v)
{
	cJSON_AddItemToObject(o, k, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

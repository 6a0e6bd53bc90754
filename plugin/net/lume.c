/* lume: see lume.h. */
#include "net/lume.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"
#include "net/rcmd.h"

/* Where a line holding the JSON array could start: its first non-blank is "[" and the next
 * non-blank after that, on this line or a later one, is "{" or "]" ("[", "[]", "[{..."). A log
 * line "[2026-08-09T12:00:00Z] INFO: ..." has a digit there. */
static int
array_start(const char *p, const char *end)
{
	if (p == end || *p != '[')
		return 0;
	for (p++; p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'); p++)
		;
	return p < end && (*p == '{' || *p == ']');
}

static cJSON *
parse_n(const char *text, size_t len)
{
	const char *end = text + len, *p = text;

	/* One pass: a candidate that does not parse resumes the scan at the line where its parse
	 * stopped, so no byte is parsed twice however the output is crafted. */
	while (p < end) {
		const char *q = p, *stop = NULL, *nl;
		cJSON *doc;

		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (array_start(q, end)) {
			if ((doc = cJSON_ParseWithLengthOpts(q, (size_t)(end - q), &stop, 0)) != NULL && cJSON_IsArray(doc))
				return doc;
			cJSON_Delete(doc);
			if (stop != NULL && stop > q && stop < end) {
				while (stop > q && stop[-1] != '\n')
					stop--;
				if (stop > q) { /* a later line */
					p = stop;
					continue;
				}
			}
		}
		if ((nl = memchr(q, '\n', (size_t)(end - q))) == NULL)
			break;
		p = nl + 1;
	}
	return NULL;
}

cJSON *
lume_parse_output(const char *text)
{
	return text ? parse_n(text, strlen(text)) : NULL;
}

/* lm_run_deadline for `lume VERB ...`, with a hint when lume itself cannot be run. */
static int
run_lume(lm_buf *o, lm_buf *e, int *st, const char *const *argv, int64_t deadline_ms, char *err)
{
	char msg[LM_ERRLEN];
	int rc = lm_run_deadline(o, e, st, argv, deadline_ms, msg);

	if (rc == LM_EINPUT)
		return lm_err(err, rc, "%s (install Lume, or pass --lume PATH or --host)", msg);
	if (rc != LM_OK)
		return lm_err(err, rc, "lume %s: %s", argv[1], msg);
	return LM_OK;
}

static char *
dup_str(const cJSON *o, const char *k)
{
	const char *v = lm_jstr(o, k);

	return v ? strdup(v) : NULL;
}

static lume_vm *
vm_from_json(const cJSON *o)
{
	lume_vm *vm = calloc(1, sizeof *vm);
	const cJSON *ssh = cJSON_GetObjectItemCaseSensitive(o, "sshAvailable");

	if (vm == NULL)
		return NULL;
	vm->name = dup_str(o, "name");
	vm->status = dup_str(o, "status");
	vm->ip = dup_str(o, "ipAddress");
	vm->os = dup_str(o, "os");
	vm->location = dup_str(o, "locationName");
	vm->ssh_available = cJSON_IsBool(ssh) ? cJSON_IsTrue(ssh) : -1;
	if (vm->name == NULL || vm->status == NULL) {
		lume_vm_free(vm);
		return NULL;
	}
	return vm;
}

void
lume_vm_free(lume_vm *vm)
{
	if (vm == NULL)
		return;
	free(vm->name);
	free(vm->status);
	free(vm->ip);
	free(vm->os);
	free(vm->location);
	free(vm);
}

/* One `lume get`: LM_OK with *out, or an error naming the VM. ready is set when the VM can
 * take SSH now. */
static int
get_once(lume_vm **out, int *ready, const char *lume, const char *name, int64_t deadline_ms, char *err)
{
	const char *argv[] = {lume, "get", name, "--format", "json", NULL};
	lm_buf o = {0}, e = {0};
	cJSON *doc = NULL;
	int st = 0, rc;

	*out = NULL;
	*ready = 0;
	if ((rc = run_lume(&o, &e, &st, argv, deadline_ms, err)) != LM_OK) {
		char msg[LM_ERRLEN];

		snprintf(msg, sizeof msg, "%s", err ? err : "");
		rc = lm_err(err, rc, "VM %s: %s", name, msg);
		goto done;
	}
	if (st != 0) {
		const char *msg = e.data && *e.data ? e.data : o.data ? o.data : "";

		rc = lm_err(err, LM_EINPUT, "VM %s: not found by lume (lume get exited %d: %.*s)", name, st,
		    (int)strcspn(msg, "\n"), msg);
		goto done;
	}
	if ((doc = o.data ? lume_parse_output(o.data) : NULL) == NULL || cJSON_GetArraySize(doc) != 1 ||
	    (*out = vm_from_json(cJSON_GetArrayItem(doc, 0))) == NULL) {
		rc = lm_err(err, LM_EFAIL, "VM %s: lume get printed no VM object this tool understands", name);
		goto done;
	}
	if (strcmp((*out)->status, "running") != 0)
		rc = lm_err(err, LM_EFAIL, "VM %s is %s; start it with `lume run %s --no-display`", name,
		    (*out)->status, name);
	else if ((*out)->ip == NULL || *(*out)->ip == '\0')
		rc = lm_err(err, LM_EFAIL, "VM %s is running but has no IP address yet (try --wait SECONDS)", name);
	else if ((*out)->ssh_available == 0)
		rc = lm_err(err, LM_EFAIL, "VM %s (%s): SSH is not available; enable Remote Login in the guest "
		    "or try --wait SECONDS", name, (*out)->ip);
	else
		*ready = 1;
done:
	cJSON_Delete(doc);
	lm_buf_free(&o);
	lm_buf_free(&e);
	return rc;
}

int
lume_resolve(lume_vm **out, const char *lume, const char *name, int wait_s, int64_t deadline_ms, char *err)
{
	int64_t until = lm_now_ms() + (int64_t)wait_s * 1000;
	int ready, rc;

	for (;;) {
		rc = get_once(out, &ready, lume, name, deadline_ms > 0 && deadline_ms < until ? until : deadline_ms, err);
		if (ready || rc == LM_EINPUT || lm_now_ms() >= until || (err && strstr(err, "timed out")))
			break;
		lume_vm_free(*out);
		*out = NULL;
		nanosleep(&(struct timespec){.tv_nsec = 500000000}, NULL);
	}
	if (!ready) {
		lume_vm_free(*out);
		*out = NULL;
	}
	return rc;
}

int
lume_list_parse(lume_vm ***out, size_t *n, const char *text, int st, const char *where, char *err)
{
	cJSON *doc = NULL;
	const cJSON *it;

	*out = NULL;
	*n = 0;
	if (st != 0 || (doc = text ? lume_parse_output(text) : NULL) == NULL)
		return lm_err(err, LM_EFAIL, "%slume ls exited %d without a VM list", where, st);
	if ((*out = calloc((size_t)cJSON_GetArraySize(doc) + 1, sizeof **out)) == NULL) {
		cJSON_Delete(doc);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	cJSON_ArrayForEach(it, doc)
		if (((*out)[*n] = vm_from_json(it)) != NULL)
			(*n)++;
	cJSON_Delete(doc);
	return LM_OK;
}

int
lume_list(lume_vm ***out, size_t *n, const char *lume, char *err)
{
	const char *argv[] = {lume, "ls", "--format", "json", NULL};
	lm_buf o = {0}, e = {0};
	int st = 0, rc;

	*out = NULL;
	*n = 0;
	if ((rc = run_lume(&o, &e, &st, argv, lm_now_ms() + LUME_LS_TIMEOUT_S * 1000, err)) == LM_OK)
		rc = lume_list_parse(out, n, o.data, st, "", err);
	lm_buf_free(&o);
	lm_buf_free(&e);
	return rc;
}

/* The line a failed lume run is named by: the first "Error: ..." line of stderr, then of
 * stdout, else the last non-empty line of stderr, then of stdout; cut to LUME_ERR_LINE. */
static void
error_line(char *out, size_t len, const lm_buf *e, const lm_buf *o)
{
	const lm_buf *bufs[] = {e, o};
	const char *best = NULL;
	size_t blen = 0;

	for (int pass = 0; pass < 2 && best == NULL; pass++)
		for (size_t i = 0; i < 2 && best == NULL; i++) {
			const char *p = bufs[i]->data, *end = p ? p + bufs[i]->len : NULL;

			while (p && p < end) {
				const char *nl = memchr(p, '\n', (size_t)(end - p)), *q = nl ? nl : end;
				size_t n = (size_t)(q - p);

				while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' '))
					n--;
				if (pass == 0 && n >= 7 && strncmp(p, "Error: ", 7) == 0) {
					best = p, blen = n;
					break;
				}
				if (pass == 1 && n > 0)
					best = p, blen = n;
				p = nl ? nl + 1 : end;
			}
		}
	if (best == NULL)
		snprintf(out, len, "(no output)");
	else
		snprintf(out, len, "%.*s%s", (int)(blen > LUME_ERR_LINE ? LUME_ERR_LINE : blen), best,
		    blen > LUME_ERR_LINE ? "..." : "");
}

/* Runs argv (a lume verb) to its end; a non-zero exit is an error naming the verb and Lume's
 * line. Lume saying a VM or image is not found is LM_EINPUT. */
static int
run_verb(const char *const *argv, int64_t deadline_ms, char *err)
{
	lm_buf o = {0}, e = {0};
	char line[LUME_ERR_LINE + 8];
	int st = 0, rc;

	if ((rc = run_lume(&o, &e, &st, argv, deadline_ms, err)) == LM_OK && st != 0) {
		error_line(line, sizeof line, &e, &o);
		rc = lm_err(err, strstr(line, "not found") ? LM_EINPUT : LM_EFAIL, "lume %s exited %d: %s", argv[1], st,
		    line);
	}
	lm_buf_free(&o);
	lm_buf_free(&e);
	return rc;
}

int
lume_clone(const char *lume, const char *src, const char *dst, int64_t deadline_ms, char *err)
{
	const char *argv[] = {lume, "clone", src, dst, NULL};

	return run_verb(argv, deadline_ms, err);
}

int
lume_stop(const char *lume, const char *vm, int64_t deadline_ms, char *err)
{
	const char *argv[] = {lume, "stop", vm, NULL};

	return run_verb(argv, deadline_ms, err);
}

int
lume_delete(const char *lume, const char *vm, int64_t deadline_ms, char *err)
{
	const char *argv[] = {lume, "delete", vm, "--force", NULL};

	return run_verb(argv, deadline_ms, err);
}

/* Appends the options every registry verb takes. */
static size_t
registry_args(const char **argv, size_t n, const char *registry, const char *organization)
{
	if (registry) {
		argv[n++] = "--registry";
		argv[n++] = registry;
	}
	if (organization) {
		argv[n++] = "--organization";
		argv[n++] = organization;
	}
	return n;
}

int
lume_push(const char *lume, const char *vm, const char *image_tag, const char *registry,
    const char *organization, const char *const *tags, size_t ntags, int64_t deadline_ms, char *err)
{
	const char **argv;
	size_t n = 0;
	int rc;

	if (ntags > 64)
		return lm_err(err, LM_EINPUT, "lume push: at most 64 additional tags");
	if ((argv = calloc(ntags + 12, sizeof *argv)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	argv[n++] = lume, argv[n++] = "push", argv[n++] = vm, argv[n++] = image_tag;
	n = registry_args(argv, n, registry, organization);
	if (ntags) {
		argv[n++] = "--additional-tags";
		for (size_t i = 0; i < ntags; i++)
			argv[n++] = tags[i];
	}
	argv[n] = NULL;
	rc = run_verb(argv, deadline_ms, err);
	free(argv);
	return rc;
}

int
lume_pull(const char *lume, const char *image_tag, const char *name, const char *registry,
    const char *organization, int64_t deadline_ms, char *err)
{
	const char *argv[10] = {lume, "pull", image_tag, name};

	registry_args(argv, 4, registry, organization);
	return run_verb(argv, deadline_ms, err);
}

int
lume_run_detached(const char *lume, const char *vm, const char *log, int *pid, char *err)
{
	const char *argv[] = {lume, "run", vm, "--no-display", NULL};
	int fd, null, st = 0;
	int64_t until;
	pid_t p;

	if (pid)
		*pid = 0;
	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		return lm_err(err, LM_EFAIL, "/dev/null: %s", strerror(errno));
	fd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600) : null;
	if (fd < 0) {
		int e = errno;

		close(null);
		return lm_err(err, LM_EFAIL, "lume run %s: its log %s: %s", vm, log, strerror(e));
	}
	if ((p = fork()) < 0) {
		int e = errno;

		if (fd != null)
			close(fd);
		close(null);
		return lm_err(err, LM_EFAIL, "lume run %s: fork: %s", vm, strerror(e));
	}
	if (p == 0) {
		/* The VM outlives this tool: its own session, no terminal, no signals of ours. */
		setsid();
		signal(SIGPIPE, SIG_DFL);
		if (dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "Error: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (fd != null)
		close(fd);
	close(null);
	for (until = lm_now_ms() + LUME_RUN_SETTLE_MS; lm_now_ms() < until;) {
		pid_t w = waitpid(p, &st, WNOHANG);

		if (w == p) {
			int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			char *text = NULL, line[LUME_ERR_LINE + 8] = "(no output)";
			size_t len = 0;

			if (code == 0)
				return LM_OK;
			if (log && lm_read_file(&text, &len, log, 1u << 20, NULL) == LM_OK) {
				lm_buf b = {.data = text, .len = len}, none = {0};

				error_line(line, sizeof line, &b, &none);
			}
			free(text);
			if (code == 127)
				return lm_err(err, LM_EINPUT, "lume run %s: %s (install Lume, or pass --lume PATH)", vm, line);
			return lm_err(err, strstr(line, "not found") ? LM_EINPUT : LM_EFAIL, "lume run exited %d: %s", code,
			    line);
		}
		if (w < 0 && errno != EINTR)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 25000000}, NULL);
	}
	if (pid)
		*pid = (int)p;
	return LM_OK;
}

int
lume_argv_text(lm_buf *out, const char *const *argv)
{
	for (size_t i = 0; argv[i]; i++) {
		const char *a = argv[i];
		int plain = *a != '\0' && a[strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		    "_./:@%+=,-")] == '\0';

		if (i && lm_buf_add(out, " ", 1) < 0)
			return -1;
		if (plain) {
			if (lm_buf_add(out, a, strlen(a)) < 0)
				return -1;
			continue;
		}
		if (rcmd_quote(out, a) < 0)
			return -1;
	}
	return 0;
}

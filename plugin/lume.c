/* lume: see lume.h. */
#include "lume.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

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
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
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

/* Where Lume's installer and Homebrew put it; a non-interactive ssh session has a short PATH. */
static const char remote_ls[] =
    "PATH=\"$HOME/.local/bin:/opt/homebrew/bin:/usr/local/bin:$PATH\"; export PATH\n"
    "command -v lume >/dev/null 2>&1 || { echo 'lume is not installed on this host (not on PATH, "
    "~/.local/bin, /opt/homebrew/bin or /usr/local/bin)' >&2; exit 127; }\n"
    "exec lume ls --format json";

int
lume_list_remote(lume_vm ***out, size_t *n, ssh_conn *c, char *err)
{
	const char *argv[] = {"sh", "-c", remote_ls, NULL};
	lm_buf cmd = {0};
	ssh_result r;
	char where[320];
	int rc;

	*out = NULL;
	*n = 0;
	snprintf(where, sizeof where, "%s: ", ssh_where(c));
	if (ssh_quote_argv(&cmd, argv) != LM_OK) {
		lm_buf_free(&cmd);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	if ((rc = ssh_exec(c, cmd.data, NULL, 0, &r, err)) == LM_OK) {
		if (r.exit_code == 127)
			rc = lm_err(err, LM_EFAIL, "%s%.*s", where, (int)strcspn(r.err.data ? r.err.data : "", "\n"),
			    r.err.data ? r.err.data : "");
		else
			rc = lume_list_parse(out, n, r.out.data, r.exit_code, where, err);
		ssh_result_free(&r);
	}
	lm_buf_free(&cmd);
	return rc;
}

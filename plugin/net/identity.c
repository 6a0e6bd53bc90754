/* identity: see identity.h. */
#include "net/identity.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/host.h"

static int
printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return 0;
	return 1;
}

int
identity_sysctl_parse(identity_mac *m, const char *text, size_t len, char *err)
{
	static const char *const names[] = {"machdep.cpu.brand_string", "hw.model", "kern.osproductversion",
	    "kern.osversion"};
	char *fields[] = {m->chip, m->model, m->os, m->build};
	const char *p = text, *end = text + len;

	for (size_t i = 0; i < 4; i++) {
		const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
		size_t n = (size_t)((nl ? nl : end) - p);

		if (p >= end || n == 0 || n > IDENTITY_STR || !printable(p, n)) {
			for (size_t k = 0; k < 4; k++)
				fields[k][0] = '\0';
			return lm_err(err, LM_EINPUT, "sysctl -n %s: %s", names[i], p >= end || n == 0 ? "no answer" :
			    n > IDENTITY_STR ? "answer too long" : "answer holds a byte outside printable ASCII");
		}
		memcpy(fields[i], p, n);
		fields[i][n] = '\0';
		p = nl ? nl + 1 : end;
	}
	return LM_OK;
}

static pthread_mutex_t local_mu = PTHREAD_MUTEX_INITIALIZER;
static int local_done, local_rc;
static identity_mac local_mac;
static char local_err[LM_ERRLEN];

int
identity_mac_local(identity_mac *m, char *err)
{
	pthread_mutex_lock(&local_mu);
	if (!local_done) {
		static const char *const argv[] = {"sysctl", "-n", "machdep.cpu.brand_string", "hw.model",
		    "kern.osproductversion", "kern.osversion", NULL};
		lm_buf o = {0}, e = {0};
		char msg[LM_ERRLEN];
		int st = 0, pref;

		local_rc = lm_run(&o, &e, &st, argv, msg);
		if (local_rc != LM_OK)
			local_rc = lm_err(local_err, LM_EFAIL, "this machine: %s", msg);
		else if (st != 0)
			local_rc = lm_err(local_err, LM_EFAIL, "this machine: sysctl -n exited %d: %.*s", st,
			    (int)strcspn(e.data ? e.data : "", "\n"), e.data ? e.data : "");
		else if ((local_rc = identity_sysctl_parse(&local_mac, o.data ? o.data : "", o.len, msg)) != LM_OK)
			local_rc = lm_err(local_err, LM_EFAIL, "this machine: %s", msg);
		local_mac.pref = host_pref_read(&pref, msg) == LM_OK ? pref : -2;
		lm_buf_free(&o);
		lm_buf_free(&e);
		local_done = 1;
	}
	*m = local_mac;
	if (local_rc != LM_OK)
		lm_err(err, local_rc, "%s", local_err);
	pthread_mutex_unlock(&local_mu);
	return local_rc;
}

static pthread_mutex_t storage_mu = PTHREAD_MUTEX_INITIALIZER;
static int storage_done, storage_rc;
static image_location storage_locs[IMAGE_LOCATIONS_MAX];
static size_t storage_n;
static char storage_err[LM_ERRLEN];

int
identity_digest_local(char out[IMAGE_DIGEST_LEN + 1], const char *lume, const char *vm, const char *location,
    char *err)
{
	int rc;

	out[0] = '\0';
	pthread_mutex_lock(&storage_mu);
	if (!storage_done) {
		storage_rc = image_storage_local(storage_locs, IMAGE_LOCATIONS_MAX, &storage_n, lume, storage_err);
		storage_done = 1;
	}
	pthread_mutex_unlock(&storage_mu);
	if (storage_rc != LM_OK)
		return lm_err(err, storage_rc, "%s", storage_err);
	rc = image_digest_read(out, storage_locs, storage_n, vm, location, err);
	return rc;
}

/* The text after the line "@name" up to the next marker line (or the end); NULL when the
 * marker is not there. */
static const char *
section(const char *text, size_t len, const char *name, size_t *n)
{
	size_t k = strlen(name);
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;

		if ((size_t)(next - p) == k + 2 && p[0] == '@' && memcmp(p + 1, name, k) == 0 && nl) {
			const char *q = next;

			while (q < end && *q != '@') {
				const char *qn = memchr(q, '\n', (size_t)(end - q));

				q = qn ? qn + 1 : end;
			}
			*n = (size_t)(q - next);
			return next;
		}
		p = next;
	}
	return NULL;
}

static int
name_ok(const char *s, size_t n)
{
	if (n == 0 || n > IMAGE_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

/* "LOC VM VALUE" lines for the locations of locs; the rest is skipped. */
static int
parse_folders(identity_host *h, const image_location *locs, size_t nlocs, const char *p, size_t len)
{
	const char *end = p + len;

	if ((h->folders = calloc(IDENTITY_DIGESTS_MAX, sizeof *h->folders)) == NULL)
		return -1;
	while (p < end && h->nfolders < IDENTITY_DIGESTS_MAX) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
		const char *s1 = memchr(p, ' ', (size_t)(le - p)), *s2 = s1 ? memchr(s1 + 1, ' ', (size_t)(le - s1 - 1)) : NULL;
		identity_folder *f = &h->folders[h->nfolders];
		char msg[LM_ERRLEN];

		if (s1 && s2 && name_ok(p, (size_t)(s1 - p)) && s2 - s1 - 1 <= IMAGE_NAME_MAX) {
			memcpy(f->location, p, (size_t)(s1 - p));
			f->location[s1 - p] = '\0';
			memcpy(f->vm, s1 + 1, (size_t)(s2 - s1 - 1));
			f->vm[s2 - s1 - 1] = '\0';
			s2++;
			if (image_vm_name_ok(f->vm) && image_storage_find(locs, nlocs, f->location) != NULL) {
				if (le - s2 == 1 && (*s2 == '-' || *s2 == '!'))
					f->state = *s2;
				else
					f->state = image_digest_parse(f->digest, s2, (size_t)(le - s2), msg) == LM_OK ? 'd' : 'x';
				h->nfolders++;
			}
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/* Why the Mac host's preference was not read, from its @pref section (s, sl bytes): defaults
 * failed ("error N" and its last line: printable ASCII kept, at most 200 bytes), or an answer
 * that is none of 1, 0, unset. */
static void
pref_error(char why[LM_ERRLEN], const char *s, size_t sl, const char *where)
{
	const char *nl = memchr(s, '\n', sl);
	char line[201];
	size_t k = 0;

	if (sl > 6 && memcmp(s, "error ", 6) == 0 && nl != NULL) {
		for (const char *p = nl + 1; p < s + sl && *p != '\n' && k < sizeof line - 1; p++)
			line[k++] = (unsigned char)*p >= 0x20 && (unsigned char)*p <= 0x7e ? *p : '?';
		line[k] = '\0';
		lm_err(why, LM_EFAIL, "%sdefaults read %s %s failed (exit %.*s): %s", where, HOST_DOMAIN, HOST_KEY,
		    (int)strspn(s + 6, "0123456789") > 3 ? 3 : (int)strspn(s + 6, "0123456789"), s + 6, line);
	} else
		lm_err(why, LM_EFAIL, "%sdefaults read %s %s gave no value it knows", where, HOST_DOMAIN, HOST_KEY);
}

int
identity_host_parse(identity_host *h, lume_vm ***vms, size_t *n, const char *out, size_t len, int st,
    const char *where, char *err)
{
	const char *s;
	size_t sl;
	char msg[LM_ERRLEN];

	memset(h, 0, sizeof *h);
	h->mac.pref = -2;
	*vms = NULL;
	*n = 0;
	if (out == NULL)
		out = "";
	if ((s = section(out, len, "sysctl", &sl)) == NULL)
		lm_err(h->mac_why, LM_EFAIL, "%sno sysctl answer", where);
	else if (identity_sysctl_parse(&h->mac, s, sl, msg) != LM_OK)
		lm_err(h->mac_why, LM_EFAIL, "%s%s", where, msg);
	else
		h->mac_ok = 1;
	if ((s = section(out, len, "pref", &sl)) == NULL)
		lm_err(h->pref_why, LM_EFAIL, "%sno defaults read answer", where);
	else if ((h->mac.pref = sl >= 2 && s[0] == '1' && s[1] == '\n' ? 1 : sl >= 2 && s[0] == '0' && s[1] == '\n' ? 0 :
	    sl >= 6 && memcmp(s, "unset\n", 6) == 0 ? -1 : -2) == -2)
		pref_error(h->pref_why, s, sl, where);
	if ((s = section(out, len, "storage", &sl)) == NULL)
		lm_err(h->storage_why, LM_EFAIL, "%sno lume config storage list answer", where);
	else {
		image_location *locs = calloc(IMAGE_LOCATIONS_MAX, sizeof *locs);
		const image_location *d;
		size_t nl = 0;
		const char *ds;
		size_t dl = 0;

		if (locs == NULL)
			return lm_err(err, LM_EFAIL, "out of memory");
		if (image_storage_parse(locs, IMAGE_LOCATIONS_MAX, &nl, s, sl, msg) != LM_OK)
			lm_err(h->storage_why, LM_EFAIL, "%s%s", where, msg);
		else {
			h->storage_ok = 1;
			if ((d = image_storage_find(locs, nl, NULL)) != NULL)
				snprintf(h->default_location, sizeof h->default_location, "%s", d->name);
			if ((ds = section(out, len, "digests", &dl)) != NULL && parse_folders(h, locs, nl, ds, dl) != 0) {
				free(locs);
				return lm_err(err, LM_EFAIL, "out of memory");
			}
		}
		free(locs);
	}
	if (st == 127)
		return lm_err(err, LM_EFAIL, "%slume is not installed on this host (not on PATH, ~/.local/bin, "
		    "/opt/homebrew/bin or /usr/local/bin)", where);
	s = section(out, len, "ls", &sl);
	return lume_list_parse(vms, n, s ? s : NULL, st, where, err);
}

int
identity_host_read(identity_host *h, lume_vm ***vms, size_t *n, ssh_conn *c, char *err)
{
	remote_cmd *cmd;
	ssh_result r;
	char where[320];
	int rc;

	memset(h, 0, sizeof *h);
	*vms = NULL;
	*n = 0;
	snprintf(where, sizeof where, "%s: ", ssh_where(c));
	if (rcmd_script(&cmd, RSCRIPT_HOST_IDENTITY, NULL) != LM_OK)
		return lm_err(err, LM_EFAIL, "out of memory");
	if ((rc = ssh_exec(c, cmd, NULL, 0, &r, err)) == LM_OK) {
		rc = identity_host_parse(h, vms, n, r.out.data, r.out.len, r.exit_code, where, err);
		ssh_result_free(&r);
	}
	rcmd_free(cmd);
	return rc;
}

void
identity_host_clear(identity_host *h)
{
	free(h->folders);
	memset(h, 0, sizeof *h);
}

int
identity_host_digest(char out[IMAGE_DIGEST_LEN + 1], const identity_host *h, const char *vm, const char *location,
    char *why, size_t len)
{
	const char *loc = location ? location : h->default_location;

	out[0] = '\0';
	if (!h->storage_ok) {
		snprintf(why, len, "no digest: the host's storage locations were not read (%s)", h->storage_why);
		return LM_EFAIL;
	}
	for (size_t i = 0; i < h->nfolders; i++) {
		const identity_folder *f = &h->folders[i];

		if (strcmp(f->location, loc) != 0 || strcmp(f->vm, vm) != 0)
			continue;
		switch (f->state) {
		case 'd':
			memcpy(out, f->digest, IMAGE_DIGEST_LEN + 1);
			return LM_OK;
		case '-':
			snprintf(why, len, "no digest: VM %s has no .manifest-digest (not pulled from a registry: a VM made "
			    "by lume create)", vm);
			return LM_EFAIL;
		case '!':
			snprintf(why, len, "no digest: VM %s's .manifest-digest is a link or no regular file (refused)", vm);
			return LM_EFAIL;
		default:
			snprintf(why, len, "no digest: VM %s's .manifest-digest is not a manifest digest (refused)", vm);
			return LM_EFAIL;
		}
	}
	snprintf(why, len, "no digest: VM %s has no folder in the host's storage location %s", vm,
	    *loc ? loc : "(no default)");
	return LM_EFAIL;
}

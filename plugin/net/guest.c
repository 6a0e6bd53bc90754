/* guest: see guest.h. */
#include "net/guest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/lume.h"
#include "core/util.h"

static int
target_new(guest_target **out, const char *name, char *err)
{
	if ((*out = calloc(1, sizeof **out)) == NULL || ((*out)->name = strdup(name)) == NULL) {
		free(*out);
		*out = NULL;
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	return LM_OK;
}

int
guest_target_host(guest_target **out, const char *spec, const char *default_user, char *err)
{
	const char *at = strchr(spec, '@'), *h = at ? at + 1 : spec, *colon;
	guest_target *t;
	char *end;
	int rc;

	if ((rc = target_new(&t, spec, err)) != LM_OK)
		return rc;
	t->want_cfg = 1;
	t->user_given = at != NULL || default_user != NULL;
	t->user = at ? strndup(spec, (size_t)(at - spec)) : strdup(default_user ? default_user : GUEST_DEFAULT_USER);
	t->port = 22;
	if (*h == '[') {
		const char *close = strchr(h, ']');

		if (close == NULL)
			goto bad;
		t->host = strndup(h + 1, (size_t)(close - h - 1));
		colon = close[1] == ':' ? close + 1 : NULL;
		if (close[1] != '\0' && colon == NULL)
			goto bad;
	} else {
		colon = strchr(h, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL; /* a bare IPv6 address */
		t->host = colon ? strndup(h, (size_t)(colon - h)) : strdup(h);
	}
	if (colon) {
		long p = strtol(colon + 1, &end, 10);

		if (*end != '\0' || p < 1 || p > 65535)
			goto bad;
		t->port = (int)p;
		t->port_given = 1;
	}
	if (t->user == NULL || t->host == NULL || *t->user == '\0' || *t->host == '\0')
		goto bad;
	*out = t;
	return LM_OK;
bad:
	guest_target_free(t);
	*out = NULL;
	return lm_err(err, LM_EINPUT, "--host %s: not user@address[:port]", spec);
}

int
guest_target_lume(guest_target **out, const char *vm, const char *user, char *err)
{
	int rc = target_new(out, vm, err);

	if (rc != LM_OK)
		return rc;
	(*out)->lume = strdup(vm);
	(*out)->user = strdup(user ? user : GUEST_DEFAULT_USER);
	(*out)->port = 22;
	if ((*out)->lume == NULL || (*out)->user == NULL) {
		guest_target_free(*out);
		*out = NULL;
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	return LM_OK;
}

void
guest_target_free(guest_target *t)
{
	if (t == NULL)
		return;
	free(t->name);
	free(t->lume);
	free(t->user);
	free(t->host);
	free(t->via);
	free(t->location);
	free(t->mac);
	free(t->mac_why);
	free(t->digest);
	free(t->no_digest);
	sshcfg_free(t->cfg);
	relay_free(t->jump_relay); /* before the jump host, whose strings its session uses */
	guest_target_free(t->jump_host);
	free(t->jump);
	free(t);
}

/* Connects to t's ProxyJump host (resolved through the configuration, with base's credentials
 * but not -u, which names the target's user, as OpenSSH's -l does) and hands its session to a
 * relay of t's own. */
static int
jump_open(guest_target *t, const ssh_opts *base, int *why, char *err)
{
	ssh_opts o = *base;
	ssh_conn *c;
	char msg[LM_ERRLEN];
	int rc;

	guest_target_free(t->jump_host); /* from an earlier attempt that failed */
	t->jump_host = NULL;
	if ((rc = guest_target_host(&t->jump_host, t->jump, NULL, msg)) != LM_OK ||
	    (rc = guest_target_resolve(t->jump_host, base->deadline_ms, msg)) != LM_OK)
		return lm_err(err, rc, "host %s: ProxyJump %s: %s", t->name, t->jump, msg);
	if (t->jump_host->jump != NULL)
		return lm_err(err, LM_EREFUSED, "host %s: ProxyJump %s has a ProxyJump of its own: more than one hop is "
		    "not supported yet: use --hosts", t->name, t->jump);
	guest_target_opts(&o, t->jump_host);
	o.host = t->jump_host->host;
	o.port = t->jump_host->port;
	o.user = t->jump_host->user;
	o.host_key_alias = NULL;
	if ((rc = ssh_connect(&c, why, &o, msg)) != LM_OK)
		return lm_err(err, rc, "host %s: ProxyJump %s: %s", t->name, t->jump, msg);
	if ((rc = relay_new(&t->jump_relay, msg)) != LM_OK || (rc = relay_add(t->jump_relay, c, &t->jump_idx, msg)) != LM_OK) {
		ssh_close(c); /* not the relay's: relay_add failed or never ran */
		relay_free(t->jump_relay);
		t->jump_relay = NULL;
		return lm_err(err, rc, "host %s: ProxyJump %s: %s", t->name, t->jump, msg);
	}
	return LM_OK;
}

int
guest_resolve_why(int rc, int64_t deadline_ms)
{
	return rc == LM_EREFUSED ? SSH_HOSTKEY_UNKNOWN : ssh_nofds_take() ? SSH_NOFDS :
	    lm_now_ms() >= deadline_ms ? SSH_TIMEOUT : SSH_UNREACHABLE;
}

int
guest_target_resolve(guest_target *t, int64_t deadline_ms, char *err)
{
	sshcfg *c;
	char *host, *user = NULL, msg[LM_ERRLEN];
	int rc, missing;

	if (!t->want_cfg)
		return LM_OK;
	if ((rc = sshcfg_resolve(&c, t->host, deadline_ms, &missing, msg)) != LM_OK) {
		if (missing == 2)
			ssh_nofds_note(); /* the controller's descriptors: failed, not unreachable */
		t->want_cfg = missing != 1; /* no ssh here: the spec is the address, as before */
		return missing == 1 ? LM_OK : lm_err(err, rc, "host %s: %s", t->name, msg);
	}
	if (c->proxyjump != NULL && strchr(c->proxyjump, ',') != NULL) {
		rc = lm_err(err, LM_EREFUSED, "host %s: a ProxyJump of more than one hop is not supported yet: use "
		    "--hosts (the OpenSSH configuration says ProxyJump %.200s)", t->name, c->proxyjump);
		sshcfg_free(c);
		return rc;
	}
	if (c->proxyjump != NULL && (t->jump = strdup(c->proxyjump + (strncmp(c->proxyjump, "ssh://", 6) ? 0 : 6))) == NULL) {
		sshcfg_free(c);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	/* ssh -G prints the login name when no User is set: for a real alias (its HostName is
	 * another name) that is what `ssh ALIAS` would use, so it is taken; for a plain address
	 * lume-metal's default stays. */
	if (!t->user_given && (!c->user_login || strcasecmp(c->hostname, t->host) != 0))
		user = c->user;
	if ((host = strdup(c->hostname)) == NULL || (user != NULL && (user = strdup(user)) == NULL)) {
		free(host);
		sshcfg_free(c);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	free(t->host);
	t->host = host;
	if (user != NULL) {
		free(t->user);
		t->user = user;
	}
	if (!t->port_given)
		t->port = c->port;
	t->cfg = c;
	t->want_cfg = 0;
	return LM_OK;
}

/* $HOME/.ssh/known_hosts, OpenSSH's default, made once for every thread. */
static char known_default[4096];
static pthread_once_t known_once = PTHREAD_ONCE_INIT;

static void
known_init(void)
{
	const char *home = getenv("HOME");

	snprintf(known_default, sizeof known_default, "%s/.ssh/known_hosts", home ? home : ".");
}

void
guest_target_opts(ssh_opts *o, const guest_target *t)
{
	if (o->known_hosts == NULL) { /* no --known-hosts, nor known-hosts in the config file */
		pthread_once(&known_once, known_init);
		o->known_hosts = t->cfg != NULL && t->cfg->known_hosts != NULL ? t->cfg->known_hosts : known_default;
	}
	if (t->cfg == NULL)
		return;
	if (o->identity == NULL && t->cfg->nids > 0)
		o->identities = (const char *const *)t->cfg->ids;
	if (t->cfg->accept_new)
		o->accept_new = 1;
}

int
guest_connect(ssh_conn **out, int *why, guest_target *t, const ssh_opts *base, const char *lume, int wait_s,
    char *err)
{
	ssh_opts o = *base;

	*out = NULL;
	*why = 0;
	if (t->lume != NULL && t->host == NULL) {
		lume_vm *vm;
		int rc = lume_resolve(&vm, lume, t->lume, wait_s, base->deadline_ms, err);

		if (rc != LM_OK)
			return rc;
		t->host = strdup(vm->ip);
		if (t->location == NULL && vm->location != NULL)
			t->location = strdup(vm->location); /* where its .manifest-digest is */
		lume_vm_free(vm);
		if (t->host == NULL)
			return lm_err(err, LM_EFAIL, "out of memory");
	}
	if (t->want_cfg) {
		int rc = guest_target_resolve(t, base->deadline_ms, err);

		if (rc != LM_OK) {
			if ((*why = guest_resolve_why(rc, base->deadline_ms)) == SSH_NOFDS)
				ssh_nofds_note(); /* still set for the fleet, which counts such a VM apart */
			return rc;
		}
	}
	guest_target_opts(&o, t);
	o.host = t->host;
	o.port = t->port;
	o.user = t->user;
	if (t->jump != NULL && t->relay == NULL) {
		int fd, rc;

		if (t->jump_relay == NULL && (rc = jump_open(t, base, why, err)) != LM_OK) {
			if (rc == LM_EREFUSED)
				*why = SSH_HOSTKEY_UNKNOWN; /* refused */
			return rc;
		}
		rc = relay_open(t->jump_relay, t->jump_idx, t->host, t->port, o.deadline_ms, &fd, why, err);
		return rc != LM_OK ? rc : ssh_connect_fd(out, why, &o, fd, err);
	}
	if (t->relay != NULL) {
		int fd, rc;

		o.host_key_alias = t->name; /* NAT addresses repeat from one Mac host to the next */
		rc = relay_open(t->relay, t->relay_host, t->host, t->port, o.deadline_ms, &fd, why, err);

		return rc != LM_OK ? rc : ssh_connect_fd(out, why, &o, fd, err);
	}
	return ssh_connect(out, why, &o, err);
}

/* The rest of the first line of text that starts with key ("home=", "BuildVersion:"), after
 * any blanks; NULL when there is none or it is empty. */
static char *
take(const char *text, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, key, k) == 0) {
			const char *v = p + k + strspn(p + k, " \t");
			size_t n = strcspn(v, "\n");

			return n ? strndup(v, n) : NULL;
		}
	return NULL;
}

/* ".../releases/<sha>" (what `pwd -P` said) to "<sha>", or NULL. */
static char *
release_sha(char *path)
{
	char *s = path ? strrchr(path, '/') : NULL, *out = NULL;

	if (s && s - path >= 9 && strncmp(s - 9, "/releases", 9) == 0 && lm_is_sha256(s + 1))
		out = strdup(s + 1);
	free(path);
	return out;
}

int
guest_facts_parse(guest_facts *f, const char *text, char *err)
{
	char *img;

	memset(f, 0, sizeof *f);
	f->home = take(text, "home=");
	f->os = take(text, "kern.osproductversion:");
	f->build = take(text, "kern.osversion:");
	f->model = take(text, "hw.model:");
	f->chip = take(text, "machdep.cpu.brand_string:");
	f->current = release_sha(take(text, "current="));
	f->previous = release_sha(take(text, "previous="));
	if ((img = take(text, "image=")) != NULL) {
		f->image = cJSON_Parse(img);
		free(img);
	}
	if (f->home == NULL || f->home[0] != '/' || f->os == NULL) {
		guest_facts_clear(f);
		return lm_err(err, LM_EFAIL, "the guest did not say its HOME and macOS version (is it macOS?)");
	}
	return LM_OK;
}

int
guest_facts_read(guest_facts *f, ssh_conn *c, char *err)
{
	/* guest-scripts/facts.sh on stdin: the command line is the same on every guest */
	static const char *const argv[] = {"sh", "-s", NULL};
	const char *script = rscript_text(RSCRIPT_FACTS);
	ssh_result r;
	remote_cmd *cmd;
	int rc;

	memset(f, 0, sizeof *f);
	if (rcmd_argv(&cmd, argv) != LM_OK)
		return lm_err(err, LM_EFAIL, "out of memory");
	rc = ssh_exec(c, cmd, script, strlen(script), &r, err);
	rcmd_free(cmd);
	if (rc == LM_OK && r.exit_code != 0)
		rc = lm_err(err, LM_EFAIL, "reading the guest's facts exited %d: %.200s", r.exit_code,
		    r.err.data ? r.err.data : "");
	if (rc == LM_OK)
		rc = guest_facts_parse(f, r.out.data ? r.out.data : "", err);
	ssh_result_free(&r);
	return rc;
}

void
guest_facts_clear(guest_facts *f)
{
	free(f->home);
	free(f->os);
	free(f->build);
	free(f->model);
	free(f->chip);
	free(f->current);
	free(f->previous);
	cJSON_Delete(f->image);
	memset(f, 0, sizeof *f);
}

cJSON *
guest_json_result(const char *text)
{
	const char *last = NULL;
	cJSON *j;

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (*p == '{')
			last = p;
	if (last == NULL || (j = cJSON_ParseWithOpts(last, NULL, 0)) == NULL)
		return NULL;
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

int
guest_run_json(cJSON **out, int *code, ssh_conn *c, rscript script, const char *const *args, const char *in,
    char *err)
{
	ssh_result r;
	remote_cmd *cmd;
	int rc;

	*out = NULL;
	if (rcmd_script(&cmd, script, args) != LM_OK)
		return lm_err(err, LM_EFAIL, "out of memory");
	rc = ssh_exec(c, cmd, in, in ? strlen(in) : 0, &r, err);
	rcmd_free(cmd);
	if (rc != LM_OK)
		goto done;
	*code = r.exit_code;
	if ((*out = guest_json_result(r.out.data)) == NULL)
		rc = lm_err(err, LM_EFAIL, "%s printed no JSON result (exit %d): %.300s", rscript_name(script),
		    r.exit_code, r.err.data ? r.err.data : "");
done:
	ssh_result_free(&r);
	return rc;
}

/* request: the setup every operation shares, from a command's request (request.h). */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <libssh2.h>

#include "core/ledger.h"
#include "ops/request.h"

int
ops_process_init(int *too_long)
{
	*too_long = ssh_take_env_password() < 0;
	fleet_fd_limit();
	return libssh2_init(0) != 0 ? LM_EFAIL : LM_OK;
}

void
ops_request_init(ops_request *r)
{
	static char state[4096];
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	memset(r, 0, sizeof *r);
	if (xdg && *xdg)
		snprintf(state, sizeof state, "%s/lume-metal", xdg);
	else
		snprintf(state, sizeof state, "%s/.local/state/lume-metal", home ? home : ".");
	r->state = state;
	r->lume = "lume";
	/* user and known_hosts stay NULL until a flag or the config file gives them: the OpenSSH
	 * configuration, then GUEST_DEFAULT_USER and ~/.ssh/known_hosts, apply after (guest.c). */
	r->ssh.env_password = 1;
	r->timeout_s = 120;
	r->fleet.parallel = 32;
	r->fleet.max_fail = r->fleet.max_fail_pct = -1;
	r->port = 22;
	r->target = "macos";
	r->workload = "llama-server";
}

/* The given bit of a config key, 0 for a key the file does not have. */
static unsigned
key_bit(const char *key)
{
	for (unsigned k = 0; config_keys[k]; k++)
		if (strcmp(config_keys[k], key) == 0)
			return 1u << k;
	return 0;
}

void
ops_request_give(ops_request *r, const char *key)
{
	r->given |= key_bit(key);
}

int
ops_request_given(const ops_request *r, const char *key)
{
	return (r->given & key_bit(key)) != 0;
}

const char *
ops_request_setting(const ops_request *r, const char *key)
{
	if (ops_request_given(r, key))
		return NULL;
	return config_get(r->cfg, key, NULL);
}

int
ops_request_ready(ops_request *r, char *err)
{
	static config *loaded; /* read once for the process; reachable till exit */
	char path[4096];
	const char *v;
	struct stat st;

	if (loaded == NULL && config_default_path(path, sizeof path) == 0 && config_load(&loaded, path, err) != LM_OK)
		return LM_EINPUT;
	r->cfg = loaded;
	if ((v = ops_request_setting(r, "user")) != NULL)
		r->ssh.user = v;
	if ((v = ops_request_setting(r, "identity")) != NULL)
		r->ssh.identity = v;
	if ((v = ops_request_setting(r, "password-file")) != NULL)
		r->ssh.password_file = v;
	if ((v = ops_request_setting(r, "known-hosts")) != NULL)
		r->ssh.known_hosts = v;
	if ((v = ops_request_setting(r, "state")) != NULL)
		r->state = v;
	if ((v = ops_request_setting(r, "lume")) != NULL)
		r->lume = v;
	if ((v = ops_request_setting(r, "parallel")) != NULL)
		r->fleet.parallel = atoi(v); /* config_load checked it: 1..1024 */
	/* Every append of this run keeps what ledger prune would (core/ledger.h). */
	if ((v = ops_request_setting(r, "ledger-keep")) != NULL)
		ledger_retention(atoi(v)); /* config_load checked it: 1..1000000 */
	/* --state that exists and is not a directory (or lies under a file). */
	if (stat(r->state, &st) == 0 ? !S_ISDIR(st.st_mode) : errno == ENOTDIR)
		return lm_err(err, LM_EINPUT, "--state %s: not a directory", r->state);
	return LM_OK;
}

int
ops_request_readable(ops_request *r, char *err)
{
	char why[LM_ERRLEN];
	int rc;

	if ((rc = ops_request_ready(r, err)) != LM_OK)
		return rc;
	/* The ledger the gates and status read: readable before any VM is reached. */
	if (ledger_readable(r->state, why) != LM_OK)
		return lm_err(err, LM_EINPUT, "--state %s: %s", r->state, why);
	return LM_OK;
}

int
ops_host_check(const char *spec, char *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	guest_target *t;
	struct stat st;
	int rc;

	if (stat(spec, &st) != 0 || !S_ISREG(st.st_mode))
		return LM_OK;
	if (strchr(spec, '/') != NULL || guest_target_host(&t, spec, "lume", err) != LM_OK)
		return lm_err(err, LM_EINPUT, "--host %s: that is a file, not user@addr[:port]; did you mean "
		    "--hosts %s?", spec, spec);
	rc = getaddrinfo(t->host, NULL, &hints, &ai);
	guest_target_free(t);
	if (ai != NULL)
		freeaddrinfo(ai);
	if (rc != 0)
		return lm_err(err, LM_EINPUT, "--host %s: no host has that name, but a file does; did you mean "
		    "--hosts %s?", spec, spec);
	return LM_OK;
}

void
ops_session_opts(const ops_request *r, session_opts *o)
{
	o->state = r->state;
	o->lume = r->lume;
	o->ssh = r->ssh;
	o->timeout_s = r->timeout_s;
	o->wait_s = r->wait_s;
}

int
ops_one_vm(guest_target **out, const ops_request *r, const char *vm, session_opts *o, int long_timeout_s,
    char *err)
{
	int rc = r->nhosts ? guest_target_host(out, r->hosts[0], r->ssh.user, err)
	    : guest_target_lume(out, vm, r->ssh.user, err);

	if (rc != LM_OK)
		return rc;
	if (!r->nhosts)
		(*out)->port = r->port;
	ops_session_opts(r, o);
	if (!r->timeout_given)
		o->timeout_s = long_timeout_s;
	return LM_OK;
}

int
ops_verdicts_setup(verdicts_cfg *cfg, verdict_trust *trust, const ops_request *r, const char *mode, char *err)
{
	char why[LM_ERRLEN];

	memset(cfg, 0, sizeof *cfg);
	memset(trust, 0, sizeof *trust);
	if (mode == NULL)
		mode = ops_request_setting(r, "verdicts");
	cfg->registry = mode != NULL && strcmp(mode, "registry") == 0;
	cfg->signing_key = ops_request_setting(r, "signing-key");
	cfg->registry_default = ops_request_setting(r, "registry");
	cfg->organization = ops_request_setting(r, "organization");
	cfg->registries = ops_request_setting(r, "verdict-registries");
	cfg->auth_file = ops_request_setting(r, "registry-auth");
	if (verdict_trust_load(trust, ops_request_setting(r, "trusted-key"), why) != LM_OK)
		return lm_err(err, LM_EINPUT, "trusted-key: %s", why);
	cfg->trust = trust;
	return LM_OK;
}

void
ops_verdicts_clear(verdict_trust *trust)
{
	verdict_trust_clear(trust);
}

void
ops_request_free(ops_request *r)
{
	free(r->hosts);
	r->hosts = NULL;
	payload_info_free(r->info);
	r->info = NULL;
	free(r->payload);
	r->payload = NULL;
}

void
ops_one_vm_free(guest_target *t)
{
	guest_target_free(t);
}

const char *
ops_user(const ops_request *r)
{
	return r->ssh.user ? r->ssh.user : GUEST_DEFAULT_USER;
}

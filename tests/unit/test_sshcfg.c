/* sshcfg: ssh -G's answer parsed strictly, a real `ssh -G` on a configuration file
 * ($LUME_METAL_SSH_CONFIG), and guest_target_resolve: the configuration fills in what the
 * spec and -u leave open, and the flags win. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/guest.h"
#include "net/sshcfg.h"
#include "unit.h"
#include "core/util.h"

static const char good[] =
    "host tahoe\nuser admin\nhostname 10.0.0.5\nport 2222\nstricthostkeychecking accept-new\n"
    "identityfile ~/.ssh/id_tahoe\nidentityfile /k/%h-%r-%p-%%\n"
    "userknownhostsfile /x/kh /x/kh2\nsendenv\nproxyjump none\n";

static int
parse(sshcfg **c, const char *text, char *err)
{
	return sshcfg_parse(c, text, strlen(text), "root", err);
}

static void
test_parse(void)
{
	char err[LM_ERRLEN] = "", big[SSHCFG_OUT_MAX + 64];
	sshcfg *c;

	setenv("HOME", "/home/me", 1);
	UNIT_OK(parse(&c, good, err) == LM_OK, "ssh -G output parses (%s)", err);
	if (c != NULL) {
		UNIT_OK(strcmp(c->hostname, "10.0.0.5") == 0 && strcmp(c->user, "admin") == 0 && !c->user_login &&
		    c->port == 2222, "hostname, user, port");
		UNIT_OK(c->nids == 2 && strcmp(c->ids[0], "/home/me/.ssh/id_tahoe") == 0 &&
		    strcmp(c->ids[1], "/k/10.0.0.5-admin-2222-%") == 0 && c->ids[2] == NULL,
		    "identity files: ~/ from $HOME and OpenSSH's %%-tokens expanded (%s)", c->nids ? c->ids[0] : "");
		UNIT_OK(c->known_hosts && strcmp(c->known_hosts, "/x/kh") == 0, "the first UserKnownHostsFile");
		UNIT_OK(c->accept_new && c->proxyjump == NULL, "accept-new; ProxyJump none is none");
		sshcfg_free(c);
	}
	UNIT_OK(parse(&c, "user root\nhostname h\nport 22\nuserknownhostsfile /root/.ssh/known_hosts "
	    "/root/.ssh/known_hosts2\nstricthostkeychecking ask\nproxyjump a@b\n", err) == LM_OK,
	    "defaults parse (%s)", err);
	if (c != NULL) {
		UNIT_OK(c->user_login && c->known_hosts == NULL && !c->accept_new, "the login name and OpenSSH's "
		    "default known_hosts are marked as defaults");
		UNIT_OK(c->proxyjump && strcmp(c->proxyjump, "a@b") == 0, "ProxyJump kept");
		sshcfg_free(c);
	}
	UNIT_OK(parse(&c, "user a\nhostname h\nhostname i\nport 22\n", err) == LM_EFAIL && c == NULL,
	    "a hostname twice is refused");
	UNIT_HAS(err, "given twice", "... said so");
	UNIT_OK(parse(&c, "user a\nhostname h\nport 99999\n", err) == LM_EFAIL, "a port out of range is refused");
	UNIT_OK(parse(&c, "user a\nhostname h\nport 22x\n", err) == LM_EFAIL, "a port with junk is refused");
	UNIT_OK(parse(&c, "user a\nhostname h\x1b[2J\nport 22\n", err) == LM_EFAIL, "a control character is refused");
	UNIT_OK(parse(&c, "user a\nhostname h x\nport 22\n", err) == LM_EFAIL, "a hostname with a blank is refused");
	UNIT_OK(parse(&c, "user a\nport 22\n", err) == LM_EFAIL, "no hostname is refused");
	UNIT_HAS(err, "no hostname", "... said so");
	UNIT_OK(parse(&c, "user a\nhostname h\nport 22\nidentityfile /k/%Z\n", err) == LM_EFAIL,
	    "an unknown %%-token in an identity file is refused");
	UNIT_OK(sshcfg_parse(&c, "user a\0hostname h\nport 22\n", 24, "root", err) == LM_EFAIL, "a NUL is refused");
	memset(big, 'x', sizeof big);
	memcpy(big, "user a\nhostname h\nport 22\nz ", 28);
	big[sizeof big - 1] = '\0';
	UNIT_OK(parse(&c, big, err) == LM_EFAIL, "an answer over %u bytes is refused", SSHCFG_OUT_MAX);
	for (int i = 0; i <= SSHCFG_IDS_MAX; i++)
		snprintf(big + (i ? strlen(big) : 0), 64, "%sidentityfile /k%d\n", i ? "" : "user a\nhostname h\nport 1\n", i);
	UNIT_OK(parse(&c, big, err) == LM_EFAIL, "more than %d identity files are refused", SSHCFG_IDS_MAX);
}

static void
test_resolve(const char *dir)
{
	char cfg[4200], err[LM_ERRLEN] = "";
	const char *path = getenv("PATH");
	char *oldpath = path ? strdup(path) : NULL;
	int64_t dl = lm_now_ms() + 10000;
	guest_target *t;
	sshcfg *c;
	int missing = 0;
	FILE *f;

	snprintf(cfg, sizeof cfg, "%s/config", dir);
	if ((f = fopen(cfg, "w")) == NULL)
		return;
	fprintf(f, "Host mac-01\n  HostName 10.1.2.3\n  User admin\n  Port 2200\n  IdentityFile %s/key\n"
	    "  UserKnownHostsFile %s/kh\nHost jump\n  ProxyJump x@y\nHost jump2\n  ProxyJump x@y,z@w\n"
	    "Host plain-*\n  Port 2201\n", dir, dir);
	fclose(f);
	setenv("LUME_METAL_SSH_CONFIG", cfg, 1);

	UNIT_OK(sshcfg_resolve(&c, "mac-01", dl, &missing, err) == LM_OK, "ssh -G -F FILE mac-01 (%s)", err);
	if (c != NULL) {
		UNIT_OK(strcmp(c->hostname, "10.1.2.3") == 0 && strcmp(c->user, "admin") == 0 && c->port == 2200 &&
		    c->nids == 1 && strstr(c->ids[0], "/key") && c->known_hosts && strstr(c->known_hosts, "/kh"),
		    "HostName, User, Port, IdentityFile, UserKnownHostsFile as OpenSSH resolves them");
		sshcfg_free(c);
	}
	UNIT_OK(sshcfg_resolve(&c, "-oProxyCommand=x", dl, NULL, err) == LM_EINPUT && c == NULL,
	    "an alias that would be an option is refused");
	UNIT_OK(sshcfg_resolve(&c, "a b", dl, NULL, err) == LM_EINPUT, "an alias with a blank is refused");

	UNIT_OK(guest_target_host(&t, "mac-01", NULL, err) == LM_OK && guest_target_resolve(t, dl, err) == LM_OK,
	    "--host mac-01 resolves (%s)", err);
	if (t != NULL) {
		ssh_opts o = {.known_hosts = "/elsewhere/kh"};

		UNIT_OK(strcmp(t->host, "10.1.2.3") == 0 && strcmp(t->user, "admin") == 0 && t->port == 2200,
		    "host, user and port from the configuration");
		guest_target_opts(&o, t);
		UNIT_OK(o.identities && strstr(o.identities[0], "/key") && strcmp(o.known_hosts, "/elsewhere/kh") == 0,
		    "its IdentityFile is tried; --known-hosts given wins");
		o = (ssh_opts){.identity = "/flag/key"};
		guest_target_opts(&o, t);
		UNIT_OK(o.identities == NULL, "-i wins over IdentityFile");
		UNIT_OK(o.known_hosts && strstr(o.known_hosts, "/kh") && strcmp(o.known_hosts, t->cfg->known_hosts) == 0,
		    "no --known-hosts (NULL): UserKnownHostsFile");
		guest_target_free(t);
	}
	UNIT_OK(guest_target_host(&t, "mac-01", "lume", err) == LM_OK && guest_target_resolve(t, dl, err) == LM_OK &&
	    strcmp(t->user, "lume") == 0, "an explicit -u lume wins over User: given, though it is the default's name");
	guest_target_free(t);
	UNIT_OK(guest_target_lume(&t, "vm1", NULL, err) == LM_OK && strcmp(t->user, GUEST_DEFAULT_USER) == 0,
	    "a Lume VM with no -u: the default user");
	if (t != NULL) {
		ssh_opts o = {0};
		char want[4200];

		snprintf(want, sizeof want, "%s/.ssh/known_hosts", getenv("HOME") ? getenv("HOME") : ".");
		guest_target_opts(&o, t);
		UNIT_OK(o.known_hosts && strcmp(o.known_hosts, want) == 0, "... and no --known-hosts: ~/.ssh/known_hosts");
	}
	guest_target_free(t);
	UNIT_OK(guest_target_host(&t, "bob@mac-01:2022", "carol", err) == LM_OK && guest_target_resolve(t, dl, err) == LM_OK &&
	    strcmp(t->host, "10.1.2.3") == 0 && strcmp(t->user, "bob") == 0 && t->port == 2022,
	    "an explicit user@ and :port win");
	guest_target_free(t);
	UNIT_OK(guest_target_host(&t, "mac-01", "carol", err) == LM_OK && guest_target_resolve(t, dl, err) == LM_OK &&
	    strcmp(t->user, "carol") == 0, "-u wins over User");
	guest_target_free(t);
	UNIT_OK(guest_target_host(&t, "plain-7", NULL, err) == LM_OK && guest_target_resolve(t, dl, err) == LM_OK &&
	    strcmp(t->host, "plain-7") == 0 && strcmp(t->user, "lume") == 0 && t->port == 2201,
	    "a host that resolves to itself keeps lume-metal's default user, and takes the Port");
	guest_target_free(t);
	UNIT_OK(guest_target_host(&t, "jump", "lume", err) == LM_OK && guest_target_resolve(t, dl, err) == LM_OK &&
	    t->jump && strcmp(t->jump, "x@y") == 0, "a ProxyJump of one hop is kept for guest_connect");
	guest_target_free(t);
	UNIT_OK(guest_target_host(&t, "jump2", "lume", err) == LM_OK && guest_target_resolve(t, dl, err) == LM_EREFUSED,
	    "a ProxyJump of two hops is refused");
	UNIT_HAS(err, "more than one hop is not supported yet: use --hosts", "... said so");
	guest_target_free(t);

	setenv("PATH", "/nonexistent", 1);
	UNIT_OK(sshcfg_resolve(&c, "mac-01", dl, &missing, err) == LM_OK && c && strcmp(c->hostname, "10.1.2.3") == 0,
	    "an alias resolved before is answered from memory (no ssh -G run)");
	sshcfg_free(c);
	UNIT_OK(sshcfg_resolve(&c, "mac-02", dl, &missing, err) == LM_EFAIL && missing == 1, "no ssh: said so");
	UNIT_OK(guest_target_host(&t, "lume@10.9.9.9:2", "lume", err) == LM_OK && guest_target_resolve(t, dl, err) == LM_OK &&
	    strcmp(t->host, "10.9.9.9") == 0 && t->port == 2, "no ssh: the spec is the address");
	guest_target_free(t);
	if (oldpath) {
		setenv("PATH", oldpath, 1);
		free(oldpath);
	}
	unsetenv("LUME_METAL_SSH_CONFIG");
}

int
main(void)
{
	char dir[] = "/tmp/lm-unit-sshcfg.XXXXXX", cmd[256];

	test_parse();
	if (mkdtemp(dir) != NULL) {
		test_resolve(dir);
		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			UNIT_OK(0, "cleanup");
	}
	UNIT_DONE();
}

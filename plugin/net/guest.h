/* guest: one VM as lume-metal sees it: how to reach it, what it is, and running the guest
 * scripts there (guest-scripts/, as net/rcmd.h commands). */
#ifndef LM_GUEST_H
#define LM_GUEST_H

#include <cjson/cJSON.h>

#include "net/identity.h"
#include "net/relay.h"
#include "net/ssh.h"
#include "net/sshcfg.h"

#define GUEST_ROOT "~/Library/Application Support/lume-metal"

/* How to reach one VM. Strings are owned by the target (guest_target_free). */
typedef struct guest_target {
	char *name;   /* the VM's name as given: a Lume name, or user@addr[:port] */
	char *lume;   /* Lume VM name, or NULL for --host */
	char *user, *host;
	int port;
	char *via;          /* the Mac host's label when reached through it (--hosts), or NULL */
	relay *relay;       /* not owned: the relay that reaches it, with its host's index */
	size_t relay_host;
	/* Who it is, as its Mac host said (--hosts; NULL otherwise, or when not read): */
	char *location;     /* its Lume storage location ("locationName"), or NULL: the default */
	identity_mac *mac;  /* the Mac host's facts, or NULL (mac_why says why, with --hosts) */
	char *mac_why;
	char *digest;       /* its image digest read on the Mac host, or NULL (no_digest says why) */
	char *no_digest;
	/* The OpenSSH configuration (guest_target_host, a --hosts host): host is an alias that
	 * guest_target_resolve turns into what `ssh -G` says, once. */
	int want_cfg, user_given, port_given;
	sshcfg *cfg;        /* owned: what ssh -G said, once resolved (NULL without ssh) */
	/* Its ProxyJump of one hop, and once connected, the jump host and the relay through it
	 * (owned; freed with the target, so every connection to it must be closed first). */
	char *jump;
	struct guest_target *jump_host;
	relay *jump_relay;
	size_t jump_idx;
} guest_target;

/* The user when neither "user@", -u nor the OpenSSH configuration names one. */
#define GUEST_DEFAULT_USER "lume"

/* Parses "user@addr[:port]" or "[v6]:port". The user is "user@", else default_user (-u, or
 * user= of the config file), else the OpenSSH configuration's User, else GUEST_DEFAULT_USER;
 * default_user NULL means none was given (an explicit "lume" is given, and beats User). addr
 * may be a Host alias of the OpenSSH configuration: guest_connect resolves it
 * (guest_target_resolve). */
int guest_target_host(guest_target **out, const char *spec, const char *default_user, char *err);
/* Resolves t's host through the OpenSSH configuration (sshcfg_resolve) by deadline_ms, once,
 * when t->want_cfg: the host becomes its HostName; the port its Port and the user its User
 * unless the spec or -u gave them. Without ssh on PATH, t stays as given. A ProxyJump of one
 * hop ([user@]host[:port], itself resolved through the configuration) is kept in t->jump:
 * guest_connect reaches t through a direct-tcpip channel of that host's session (relay.h),
 * checking t's host key under its HostName and port, as OpenSSH does. More hops are refused
 * (LM_EREFUSED). */
int guest_target_resolve(guest_target *t, int64_t deadline_ms, char *err);
/* What guest_target_resolve's failure rc by deadline_ms means (ssh.h's SSH_*): refused
 * (SSH_HOSTKEY_UNKNOWN), this controller out of descriptors (SSH_NOFDS: ssh_nofds_take), `ssh -G`
 * still running at the deadline, as on a loaded controller (SSH_TIMEOUT), else SSH_UNREACHABLE. */
int guest_resolve_why(int rc, int64_t deadline_ms);
/* What t's configuration adds to o, where the flags gave nothing: its IdentityFiles (tried
 * after the agent when there is no -i), its UserKnownHostsFile (when o->known_hosts is NULL:
 * neither --known-hosts nor the config file named one), StrictHostKeyChecking accept-new. A
 * known_hosts still NULL becomes $HOME/.ssh/known_hosts. o then points into t (or into a static
 * of this module). Every connect goes through this first. */
void guest_target_opts(ssh_opts *o, const guest_target *t);
/* A Lume VM name; its address comes from lume_resolve in guest_connect. user NULL:
 * GUEST_DEFAULT_USER. */
int guest_target_lume(guest_target **out, const char *vm, const char *user, char *err);
void guest_target_free(guest_target *t);

/* What the guest says about itself. Strings owned (guest_facts_clear). */
typedef struct {
	char *home, *os, *build, *model, *chip;
	char *current, *previous; /* payload SHA-256s, or NULL */
	cJSON *image;             /* image.json stamped by a golden-image build, or NULL */
} guest_facts;

/* Resolves t (through lume when it is a Lume name, with wait_s) and connects with base's
 * credentials and deadline, through t->relay when set. *why gets an SSH_* reason on failure (0 for lume errors). */
int guest_connect(ssh_conn **out, int *why, guest_target *t, const ssh_opts *base, const char *lume,
    int wait_s, char *err);

/* Runs guest-scripts/facts.sh (RSCRIPT_FACTS), which deploy's one exec runs too, and parses
 * what it prints (guest_facts_parse): on LM_OK f holds the facts (guest_facts_clear), on failure
 * nothing. */
int guest_facts_read(guest_facts *f, ssh_conn *c, char *err);
int guest_facts_parse(guest_facts *f, const char *text, char *err);
void guest_facts_clear(guest_facts *f);

/* The JSON object on the last line of text (a guest script's stdout; NULL: none) that starts
 * with '{', or NULL when there is none or it is not an object. Caller frees. */
cJSON *guest_json_result(const char *text);
/* Runs script with args (NULL-terminated, may be NULL) in the guest, feeding it in (may be
 * NULL). On LM_OK *out (caller frees) is the JSON object on the last non-empty line of stdout,
 * whatever the exit code, which goes to *code. */
int guest_run_json(cJSON **out, int *code, ssh_conn *c, rscript script, const char *const *args, const char *in,
    char *err);

#endif

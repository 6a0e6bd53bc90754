/* hosts: the Mac hosts of a fleet, read from a --hosts FILE. Two forms:
 *   text: one "user@host[:port]" per line; blank lines and "#" comments are skipped;
 *   JSON: {"hosts": [{"address": "mac-01.lan", "user": "admin", "port": 22, "name": "mac-01"}]}
 *         ("user", "port" and "name" optional; see manifests/hosts.example.json).
 * Each host is a guest_target (its "lume" field NULL) whose name is the host's label: "name"
 * when given, else the address. */
#ifndef LM_HOSTS_H
#define LM_HOSTS_H

#include <stddef.h>

#include "net/guest.h"
#include "net/identity.h"
#include "net/lume.h"

/* Loads path into *out (n entries; caller frees with hosts_free). Errors name the file and
 * line or entry (LM_EINPUT); an empty file or a label given twice is an error too.
 * default_user is the user of hosts that name none (-u), or NULL when none was given: each
 * host's OpenSSH User then applies, else GUEST_DEFAULT_USER. */
int hosts_load(guest_target ***out, size_t *n, const char *path, const char *default_user, char *err);
void hosts_free(guest_target **v, size_t n);

/* One Mac host after hosts_connect: its session and its VMs, or why it could not be had. */
typedef struct {
	ssh_conn *c;     /* owned, or NULL on failure */
	int why;         /* SSH_* reason on failure, 0 when lume failed */
	char err[LM_ERRLEN];
	lume_vm **vms;   /* owned: `lume ls` there */
	size_t nvms;
	identity_host id; /* owned: its chip, model, OS, build and VM digests, read in the same exec */
} hosts_conn;

/* Connects to hosts[0..n) `parallel` at a time (the fleet pool), each within timeout_s, with
 * base's credentials and known hosts (the user and port are each host's), each address first
 * resolved through the OpenSSH configuration (guest_target_resolve: an explicit user, "user"
 * or "port" wins; a ProxyJump is refused), and lists its VMs
 * and reads its identity in one exec (identity_host_read).
 * out[i] (n of them) gets host i; clear each with hosts_conn_clear. */
void hosts_connect(hosts_conn *out, guest_target **hosts, size_t n, const ssh_opts *base, int timeout_s,
    int parallel);
void hosts_conn_clear(hosts_conn *h);

#endif

/* identity: who a ledger record is about, read on the Mac that runs the VM. The image digest
 * (<location>/<vm>/.manifest-digest, image.h) and the host part (chip, model, macOS version and
 * build, the paravirtual-graphics preference) come from that Mac: this machine when it is the
 * Mac (a VM named by its Lume name), or the Mac host's session with --hosts, where one exec
 * gives the host's facts, its storage locations, its VMs' digests and `lume ls`. With --host
 * and no Mac to ask, the chip is the guest's and the build unknown, said so. Everything a Mac
 * sends back is untrusted: bounded and checked here; no path it names is opened here. */
#ifndef LM_IDENTITY_H
#define LM_IDENTITY_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/image.h"
#include "net/lume.h"
#include "net/ssh.h"
#include "core/util.h"

#define IDENTITY_STR 128 /* a fact of the Mac, without the NUL; a longer one is refused */
#define IDENTITY_DIGESTS_MAX 256 /* VM folders one Mac host's answer may name */

/* The Mac's facts. Each string "" when unknown. */
typedef struct {
	char chip[IDENTITY_STR + 1], model[IDENTITY_STR + 1], os[IDENTITY_STR + 1], build[IDENTITY_STR + 1];
	int pref; /* the paravirtual-graphics preference: 1, 0, -1 not set, -2 not read */
} identity_mac;

/* Parses `sysctl -n machdep.cpu.brand_string hw.model kern.osproductversion kern.osversion`
 * (four lines, in that order) into m (pref untouched). A missing line, an empty or longer
 * than IDENTITY_STR one, or a byte outside printable ASCII is refused (LM_EINPUT). */
int identity_sysctl_parse(identity_mac *m, const char *text, size_t len, char *err);

/* This machine as the Mac: `sysctl -n KEYS` as found on PATH (on a Mac /usr/sbin/sysctl) and
 * host_pref_read, read once per process (later calls, from any thread, get the same answer). */
int identity_mac_local(identity_mac *m, char *err);

/* A VM's digest on this machine as image_digest_local reads it, with `lume config storage
 * list` run once per process (the first call's lume; its answer, or its error, is kept). */
int identity_digest_local(char out[IMAGE_DIGEST_LEN + 1], const char *lume, const char *vm, const char *location,
    char *err);

/* One VM folder a Mac host's answer named: its location, its name, its digest or why none. */
typedef struct {
	char location[IMAGE_NAME_MAX + 1], vm[IMAGE_NAME_MAX + 1];
	char digest[IMAGE_DIGEST_LEN + 1]; /* "" when none */
	char state;                        /* 'd' digest, '-' no file, '!' not a regular file, 'x' malformed */
} identity_folder;

/* What one exec on a Mac host told (identity_host_read). */
typedef struct {
	identity_mac mac;
	int mac_ok;                 /* mac holds the host's sysctl answers */
	char mac_why[LM_ERRLEN];    /* else why not */
	char pref_why[LM_ERRLEN];   /* why mac.pref is -2 (defaults failed there), else "" */
	int storage_ok;             /* its `lume config storage list` parsed */
	char storage_why[LM_ERRLEN];
	char default_location[IMAGE_NAME_MAX + 1]; /* "" when the listing names none */
	identity_folder *folders;   /* owned (identity_host_clear) */
	size_t nfolders;
} identity_host;

/* Runs the Mac host's one exec over c (lume looked up on PATH, ~/.local/bin and Homebrew's
 * directories) and fills h and
 * *vms / *n (`lume ls` there; caller frees each with lume_vm_free and the array). An error
 * (LM_EFAIL, naming the host) only when there is no VM list; the host's facts or digests that
 * cannot be had are said in h. */
int identity_host_read(identity_host *h, lume_vm ***vms, size_t *n, ssh_conn *c, char *err);

/* The same from the exec's output (out, len, its exit code st), for tests and fuzzing. */
int identity_host_parse(identity_host *h, lume_vm ***vms, size_t *n, const char *out, size_t len, int st,
    const char *where, char *err);

void identity_host_clear(identity_host *h);

/* The digest of VM vm in location (NULL: the default one) on host h, into out (LM_OK), or
 * LM_EFAIL with why (len bytes) saying why there is none: no storage listing, no folder, no
 * .manifest-digest (lume create), or a file refused. */
int identity_host_digest(char out[IMAGE_DIGEST_LEN + 1], const identity_host *h, const char *vm,
    const char *location, char *why, size_t len);


#endif

/* hosts: the Mac hosts of a fleet, read from a --hosts FILE. Two forms:
 *   text: one "user@host[:port]" per line; blank lines and "#" comments are skipped;
 *   JSON: {"hosts": [{"address": "mac-01.lan", "user": "admin", "port": 22, "name": "mac-01"}]}
 *         ("user", "port" and "name" optional; see manifests/hosts.example.json).
 * Each host is a guest_target (its "lume" field NULL) whose name is the host's label: "name"
 * when given, else the address. */
#ifndef LM_HOSTS_H
#define LM_HOSTS_H

#include <stddef.h>

#include "guest.h"

/* Loads path into *out (n entries; caller frees with hosts_free). Errors name the file and
 * line or entry (LM_EINPUT); an empty file or a label given twice is an error too. */
int hosts_load(guest_target ***out, size_t *n, const char *path, const char *default_user, char *err);
void hosts_free(guest_target **v, size_t n);

#endif

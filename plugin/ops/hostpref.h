/* hostpref: this Mac's paravirtual-graphics preference (net/host.h: HOST_DOMAIN HOST_KEY), which
 * the shim's published evidence ran with set, and the running Lume VMs that keep the device they
 * started with. Never prints. */
#ifndef LM_HOSTPREF_H
#define LM_HOSTPREF_H

#include <cjson/cJSON.h>

#include "net/host.h"

/* The preference: *v 1 true, 0 false, -1 not set. */
int ops_hostpref_read(int *v, char *err);
/* Sets it (enable) or puts back what enable found (disable), recorded under state; *before is
 * what it was. */
int ops_hostpref_set(const char *state, int enable, int *before, char *err);
/* Adds to out the running VMs of `lume ls` ("restartNeeded"), or why lume could not be asked
 * ("lumeError"). */
void ops_hostpref_running(const char *lume, cJSON *out);

#endif

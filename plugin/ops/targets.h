/* targets: the VMs a request names, in input order: Lume names (each looked up with lume),
 * --host values, every VM of `lume ls` (--all), or every VM of the --hosts FILE hosts (those
 * named, when VMs are named), reached through each host's one session on a relay. What cannot be
 * started (a host that could not be reached, a stopped VM on a host, a name a host lists that
 * this tool refuses, a named VM no host lists) is a result already ("vm", "host", "state",
 * "message"). Never prints. */
#ifndef LM_TARGETS_H
#define LM_TARGETS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "net/relay.h"
#include "ops/request.h"

/* The VMs to run, in order, and results for what could not be started; each one's input
 * position (--order input) in tpos and xpos, counted by npos. All owned (ops_targets_free). */
typedef struct {
	guest_target **targets;
	size_t n, *tpos;
	cJSON **extra;
	size_t nextra, *xpos, npos;
	relay *relay;
} ops_targets;

/* Fills *p (zeroed by the caller) from r and the names vms. LM_EINPUT when lume is needed (VMs
 * by name or --all) and cannot be run, or --host is bad; LM_EFAIL and the like when --hosts FILE
 * or `lume ls` cannot be read. err says why; *p holds what was resolved (ops_targets_free). */
int ops_targets_resolve(ops_targets *p, const ops_request *r, int nvms, char **vms, char *err);
void ops_targets_free(ops_targets *p);

#endif

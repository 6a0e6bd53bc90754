/* probe: the payload's probe run stock and shimmed in a scratch folder of the guest, nothing
 * installed (`lume-metal probe`, and rollback --to none's stock answers). Never prints. */
#ifndef LM_PROBE_H
#define LM_PROBE_H

#include <cjson/cJSON.h>

#include "ops/session.h"

/* Uploads o->payload to a scratch directory (mktemp -d in the guest) and runs its probe stock
 * and shimmed there; r gets "stock", "shimmed" and "pass". Nothing is installed and the scratch
 * directory is removed. On failure r has the state and the reason (LM_EFAIL). */
int probe_scratch(cJSON *r, ssh_conn *c, const session_opts *o);

/* probe on one VM: state "probed" or "validation-failed". LM_OK with *out (caller frees) as
 * deploy_one's. */
int probe_one(cJSON **out, guest_target *t, const session_opts *o, char *err);

#endif

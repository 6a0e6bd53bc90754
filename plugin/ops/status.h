/* status: what the guest's status.sh says of its releases and service, beside the ledger's
 * verdict for its image version (`lume-metal status`). Never prints. */
#ifndef LM_STATUS_H
#define LM_STATUS_H

#include <cjson/cJSON.h>

#include "ops/session.h"

/* status on one VM: state "ok" or "drift", "status" the guest's JSON, "verdict" the ledger's
 * ("unrecorded" when none) and "verdictPayload" the payload SHA-256 that verdict's record names
 * (when it names one). LM_OK with *out (caller frees) as deploy_one's. */
int status_one(cJSON **out, guest_target *t, const session_opts *o, char *err);

#endif

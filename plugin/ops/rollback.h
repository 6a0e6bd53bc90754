/* rollback: the guest's rollback.sh to o->to ("previous" or "none"), recorded (kind
 * "rollback"); with --to none and a payload, the stock probe after it. Never prints. */
#ifndef LM_ROLLBACK_H
#define LM_ROLLBACK_H

#include <cjson/cJSON.h>

#include "ops/session.h"

/* rollback on one VM: state "rolled-back", "unchanged" (nothing to roll back) or why not.
 * LM_OK with *out (caller frees) as deploy_one's. */
int rollback_one(cJSON **out, guest_target *t, const session_opts *o, char *err);

#endif

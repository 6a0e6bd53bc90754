/* deploy: `lume-metal deploy` on one VM, on its one exec (deploy_exec.h): the ledger's verdict
 * for the image version, the validation gate (validate.h), then the payload installed, probed
 * and activated by the guest's install.sh, and its verdict recorded. Never prints. */
#ifndef LM_DEPLOY_H
#define LM_DEPLOY_H

#include <cjson/cJSON.h>

#include "ops/session.h"

/* Deploys o->payload (o->info) to t. Returns LM_OK with *out (caller frees) holding at least
 * "vm" and "state" (unchanged, deployed, or why not), also when the VM failed; err is set only
 * for failures outside any VM (out of memory). */
int deploy_one(cJSON **out, guest_target *t, const session_opts *o, char *err);

#endif

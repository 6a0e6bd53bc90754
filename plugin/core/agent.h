/* agent: renders what activates the shim for one workload: the LaunchAgent plist and the
 * shim.env that run-with-shim reads. Both leave the guest paths as the tokens
 * __LUME_METAL_HOME__ and __LUME_METAL_RELEASE__, which install.sh replaces. */
#ifndef LM_AGENT_H
#define LM_AGENT_H

#include "core/manifest.h"
#include "core/util.h"

/* How a target loads the shim: the preload variable and the library path in a release. */
typedef struct {
	const char *preload_var; /* DYLD_INSERT_LIBRARIES or LD_PRELOAD */
	const char *shim_lib;    /* e.g. lib/liblumemetal.dylib */
} agent_target;

/* What the plist sets when the workload does not (manifests/schema/workload.schema.json):
 * ProcessType Interactive, since a job without one gets launchd's light resource limits (CPU
 * and I/O throttled) and every workload here is a GPU inference server; ThrottleInterval and
 * ExitTimeOut at launchd's own defaults, written out so the guest scripts can read the bound of
 * an asynchronous boot-out from the plist. */
#define AGENT_PROCESS_TYPE "Interactive"
#define AGENT_THROTTLE_INTERVAL 10
#define AGENT_EXIT_TIMEOUT 20

/* Where the shim in the job's process leaves its state (LUME_METAL_STATE_DIR, one file per pid),
 * under the guest's HOME: "Library/Logs/lume-metal/<label>.shim". install.sh and status.sh read
 * it there (guest-payload/common.sh, shim_dir). */
#define AGENT_STATE_DIR "Library/Logs/lume-metal/"
#define AGENT_STATE_SUFFIX ".shim"

/* Appends the plist to out; its EnvironmentVariables hold the workload's own, the preload
 * variable, the profile's LUME_METAL_* values, LUME_METAL_PROCESSES and LUME_METAL_STATE_DIR.
 * Returns LM_OK or LM_EINPUT naming the workload field. */
int agent_render_plist(lm_buf *out, const manifest_workload *w, const manifest_profile *p,
    const agent_target *t, char *err);

/* Appends shim.env (KEY=VALUE lines) to out. */
int agent_render_shim_env(lm_buf *out, const manifest_profile *p, const agent_target *t, char *err);

#endif

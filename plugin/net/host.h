/* host: the Mac host's paravirtual-graphics preference that the shim's evidence used,
 *   defaults com.apple.gpusw.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel,
 * read, set and restored with defaults(1). The value before the first `enable` is kept in
 * <state>/host-preference.json so that `disable` restores it exactly. */
#ifndef LM_HOST_H
#define LM_HOST_H

#define HOST_DOMAIN "com.apple.gpusw.ParavirtualizedGraphics"
#define HOST_KEY "ForceUnrestrictedDeviceFeatureLevel"


/* A Mac runs at most this many macOS VMs at once (Apple's licence and the framework). */
#define HOST_VM_SLOTS 2

/* *value: 1 or 0 when set, -1 when the default does not exist; a defaults that fails otherwise
 * is an error (LM_EFAIL), never "not set". A Mac host's is read in its identity exec
 * (identity.h: identity_host's mac.pref and pref_why). */
int host_pref_read(int *value, char *err);

/* Records the current value (unless a record exists) and sets the preference to true. */
int host_pref_enable(const char *state, int *before, char *err);

/* Restores the recorded value (deleting the default when there was none) and removes the
 * record; *restored gets what it was set back to (-1: deleted). Without a record it deletes
 * the default, which is macOS's stock state. */
int host_pref_disable(const char *state, int *restored, char *err);

#endif

/* keys: the Ed25519 key pair that signs the verdicts pushed to a registry (core/verdict.h), and
 * where it goes by default: beside the config file that names it,
 * $XDG_CONFIG_HOME/lume-metal/verdict-key. Never prints. */
#ifndef LM_KEYS_H
#define LM_KEYS_H

#include <stddef.h>

#include "core/verdict.h"

/* The default path into path (len bytes), its folder made. LM_EINPUT "no HOME to put the key
 * under; give PATH" or "path too long; give PATH"; LM_EFAIL when the folder cannot be made. */
int ops_key_default_path(char *path, size_t len, char *err);
/* Writes the pair to path (private, mode 0600) and path.pub; its key id and fingerprint. */
int ops_key_generate(char id[VERDICT_KEYID_LEN + 1], char fpr[VERDICT_FPR_LEN + 1], const char *path, char *err);

#endif

/* config: the user's defaults file, $XDG_CONFIG_HOME/lume-metal/config (else
 * ~/.config/lume-metal/config). One KEY=VALUE a line; blanks around KEY and VALUE are dropped;
 * empty lines and lines whose first non-blank is '#' are skipped. The keys are config_keys;
 * a value that begins with "~/" in a path key (identity, password-file, known-hosts, state, lume,
 * signing-key; each of trusted-key's comma-separated files) has it replaced by $HOME/. What the file says applies where no flag said it (the CLI's part);
 * the OpenSSH configuration and the built-in defaults come after it. Never prints. */
#ifndef LM_CONFIG_H
#define LM_CONFIG_H

#include <stddef.h>

#define CONFIG_FILE_MAX (64u << 10)
#define CONFIG_VALUE_MAX 4096

/* The keys a file may set, in the order `lume-metal config` shows them; NULL-terminated. */
extern const char *const config_keys[];

typedef struct config config;

/* The file's path into out (len bytes): $XDG_CONFIG_HOME/lume-metal/config when
 * XDG_CONFIG_HOME is set and absolute (as the XDG spec says), else $HOME/.config/lume-metal/config.
 * 0, or -1 when it does not fit or there is no HOME. */
int config_default_path(char *out, size_t len);

/* Reads path into *out (caller frees with config_free). A file that does not exist is an empty
 * configuration (LM_OK); anything else that cannot be read is LM_EINPUT ("PATH: ..."), as is a
 * bad line, named "PATH:LINE: " and what is wrong: no '=' ("want KEY=VALUE"), an unknown key
 * (with "did you mean K?" for the nearest key within a third of its length in edits), a key
 * given twice, an empty value, a control character, a value over CONFIG_VALUE_MAX bytes, a
 * parallel that is no whole number from 1 to 1024, a verdicts that is not local or registry, a
 * confirm-timeout (1..3600) or confirm-settle (0..600) that is no whole number of seconds in
 * range, or a ledger-keep that is no whole number from 1 to 1000000. On failure *out is NULL. */
int config_load(config **out, const char *path, char *err);

/* The value of key, or NULL when the file does not set it (c may be NULL); *line (when not
 * NULL) gets its line number. Owned by c. */
const char *config_get(const config *c, const char *key, int *line);

/* The path c was read from, and whether the file existed. Owned by c. */
const char *config_path(const config *c);
int config_exists(const config *c);

void config_free(config *c);

#endif

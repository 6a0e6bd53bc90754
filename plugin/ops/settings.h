/* settings: each setting in force and where it came from (lume-metal config): a flag, the config
 * file (config:FILE:LINE), the OpenSSH configuration (ssh-config, with --host ALIAS, resolved as
 * ssh -G does), or the built-in default. Never prints. */
#ifndef LM_SETTINGS_H
#define LM_SETTINGS_H

#include "ops/request.h"

typedef struct {
	const char *key, *value; /* value NULL: none (shown as "-", null in JSON) */
	char source[4200];
} ops_setting;

/* The settings, in the order shown; the values point into the request, the config file or
 * this struct, which must not move while they are used. */
typedef struct {
	ops_setting v[20];
	int n;
	const char *file;       /* the config file's path, or NULL: no HOME */
	int file_exists;
	const char *host_spec;  /* the one --host, or NULL */
	guest_target *host;     /* what the OpenSSH configuration says of it (owned), or NULL */
	char *user0, known[4096], ids[4096], parallel[16];
} ops_settings;

/* Fills *s from r (after ops_request_ready) and config's --registry and --organization (NULL:
 * not given). An error (the --host that cannot be resolved) is returned with err;
 * ops_settings_free in every case. */
int ops_settings_read(ops_settings *s, const ops_request *r, const char *registry, const char *organization,
    char *err);
void ops_settings_free(ops_settings *s);

#endif

/* cli_verdicts: the settings of verdicts in registries (ops/verdicts.h), from --verdicts and the
 * config file's verdicts, signing-key, trusted-key, registry, organization, verdict-registries and
 * registry-auth. */
#include <string.h>

#include "cmd/cli.h"

int
cli_verdicts_setup(verdicts_cfg *cfg, verdict_trust *trust, const cli_conn *c, const char *flag, const char *cmd)
{
	const char *mode = flag ? flag : cli_conn_setting(c, "verdicts");
	char err[LM_ERRLEN];

	memset(cfg, 0, sizeof *cfg);
	memset(trust, 0, sizeof *trust);
	if (flag != NULL && strcmp(flag, "local") != 0 && strcmp(flag, "registry") != 0)
		return cli_error(EXIT_USAGE, "%s: --verdicts takes local or registry, not '%s'", cmd, flag);
	cfg->registry = mode != NULL && strcmp(mode, "registry") == 0;
	cfg->signing_key = cli_conn_setting(c, "signing-key");
	cfg->registry_default = cli_conn_setting(c, "registry");
	cfg->organization = cli_conn_setting(c, "organization");
	cfg->registries = cli_conn_setting(c, "verdict-registries");
	cfg->auth_file = cli_conn_setting(c, "registry-auth");
	if (verdict_trust_load(trust, cli_conn_setting(c, "trusted-key"), err) != LM_OK)
		return cli_error(EXIT_USAGE, "%s: trusted-key: %s", cmd, err);
	cfg->trust = trust;
	return EXIT_OK;
}

/* cli_verdicts: --verdicts checked, then the settings of verdicts in registries from it and the
 * config file (ops_verdicts_setup). */
#include <string.h>

#include "cmd/cli.h"

int
cli_verdicts_setup(verdicts_cfg *cfg, verdict_trust *trust, const cli_conn *c, const char *flag, const char *cmd)
{
	char err[LM_ERRLEN];

	if (flag != NULL && strcmp(flag, "local") != 0 && strcmp(flag, "registry") != 0) {
		memset(trust, 0, sizeof *trust);
		return cli_error(EXIT_USAGE, "%s: --verdicts takes local or registry, not '%s'", cmd, flag);
	}
	if (ops_verdicts_setup(cfg, trust, &c->r, flag, err) != LM_OK)
		return cli_error(EXIT_USAGE, "%s: %s", cmd, err);
	return EXIT_OK;
}

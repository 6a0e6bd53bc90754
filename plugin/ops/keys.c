/* keys: the verdict signing key pair (keys.h). */
#include <string.h>

#include "core/config.h"
#include "ops/keys.h"

int
ops_key_default_path(char *path, size_t len, char *err)
{
	char dir[4096], *slash;
	int rc;

	if (config_default_path(dir, sizeof dir) != 0 || (slash = strrchr(dir, '/')) == NULL)
		return lm_err(err, LM_EINPUT, "no HOME to put the key under; give PATH");
	*slash = '\0';
	if ((rc = lm_mkdirs(dir, err)) != LM_OK)
		return LM_EFAIL;
	if (lm_fmt(path, len, "%s/verdict-key", dir) != 0)
		return lm_err(err, LM_EINPUT, "path too long; give PATH");
	return LM_OK;
}

int
ops_key_generate(char id[VERDICT_KEYID_LEN + 1], char fpr[VERDICT_FPR_LEN + 1], const char *path, char *err)
{
	return verdict_key_generate(id, fpr, path, err);
}

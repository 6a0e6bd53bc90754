/* datadir: see datadir.h. */
#include "core/datadir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

/* Both compiled in from the Makefile: PKGDATADIR, and the source tree (CURDIR). */
#ifndef LM_PKGDATADIR
#define LM_PKGDATADIR "/usr/local/share/lume-metal"
#endif
#ifndef LM_DATADIR
#define LM_DATADIR "."
#endif

const char *const datadir_required[] = {
	"guest-payload/common.sh", "guest-payload/install.sh", "guest-payload/rollback.sh",
	"guest-payload/status.sh", "guest-payload/run-with-shim",
	"manifests/schema/profile.schema.json", "manifests/schema/workload.schema.json", NULL,
};

/* The first required file dir lacks, or NULL. */
static const char *
lacks(const char *dir)
{
	char p[4096];

	for (size_t i = 0; datadir_required[i] != NULL; i++)
		if (lm_fmt(p, sizeof p, "%s/%s", dir, datadir_required[i]) < 0 || access(p, R_OK) != 0)
			return datadir_required[i];
	return NULL;
}

size_t
datadir_candidates(datadir_candidate c[3])
{
	const char *env = getenv("LUME_METAL_DATADIR");
	size_t n = 0;

	if (env != NULL && *env != '\0')
		c[n++] = (datadir_candidate){env, "$LUME_METAL_DATADIR", NULL};
	c[n++] = (datadir_candidate){LM_PKGDATADIR, "installed", NULL};
	c[n++] = (datadir_candidate){LM_DATADIR, "source tree", NULL};
	for (size_t i = 0; i < n; i++)
		c[i].lacks = lacks(c[i].path);
	return n;
}

const char *
datadir_path(char *note)
{
	datadir_candidate c[3];
	size_t n = datadir_candidates(c), pick = n, len = 0;
	int env = n == 3;

	for (size_t i = 0; i < n && pick == n; i++)
		if (c[i].lacks == NULL || (i == 0 && env))
			pick = i;
	if (pick == n)
		pick = env ? 1 : 0; /* none holds the data: the installed folder */
	note[0] = '\0';
	if (c[pick].lacks == NULL)
		return c[pick].path;
	/* Cut at LM_ERRLEN; the folders come first, so the message stays readable. */
	len = (size_t)snprintf(note, LM_ERRLEN, "data folder %s (%s) lacks %s; looked in", c[pick].path,
	    c[pick].origin, c[pick].lacks);
	for (size_t i = 0; i < n && len < LM_ERRLEN; i++)
		len += (size_t)snprintf(note + len, LM_ERRLEN - len, "%s %s (%s%s%s)", i ? "," : "", c[i].path,
		    c[i].origin, c[i].lacks ? ": lacks " : "", c[i].lacks ? c[i].lacks : "");
	if (len < LM_ERRLEN)
		snprintf(note + len, LM_ERRLEN - len, "; set LUME_METAL_DATADIR or reinstall");
	return c[pick].path;
}

int
datadir_sha256(char out[65], char *path, size_t pathlen, const char *dir, const char *rel, char *err)
{
	if (lm_fmt(path, pathlen, "%s/%s", dir, rel) < 0)
		return lm_err(err, LM_EINPUT, "%s: path too long", dir);
	if (access(path, F_OK) != 0)
		return lm_err(err, LM_EINPUT, "%s: missing", path);
	return lm_sha256_file(out, path, err) == LM_OK ? LM_OK : LM_EINPUT;
}

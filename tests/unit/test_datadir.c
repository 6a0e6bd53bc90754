/* datadir: the search order, what a folder lacks, the note naming every folder looked in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/datadir.h"
#include "unit.h"
#include "core/util.h"

static char dir[] = "/tmp/lm-unit-datadir.XXXXXX";

static void
put(const char *rel, const char *text)
{
	char p[4096], cmd[8192], err[LM_ERRLEN];

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", p);
	if (system(cmd) != 0 || lm_write_file_atomic(p, text, strlen(text), 0644, err) != LM_OK)
		printf("# cannot write %s\n", p);
}

int
main(void)
{
	datadir_candidate c[3];
	char note[LM_ERRLEN], err[LM_ERRLEN], sha[65], path[4096], cmd[4200], *big;
	const char *d;
	size_t n;

	if (mkdtemp(dir) == NULL)
		return 2;
	setenv("LUME_METAL_DATADIR", dir, 1);
	n = datadir_candidates(c);
	UNIT_OK(n == 3 && strcmp(c[0].path, dir) == 0 && strcmp(c[0].origin, "$LUME_METAL_DATADIR") == 0,
	    "LUME_METAL_DATADIR is the first candidate");
	UNIT_OK(strcmp(c[1].origin, "installed") == 0 && strcmp(c[1].path, LM_PKGDATADIR) == 0,
	    "then the installed folder");
	UNIT_OK(strcmp(c[2].origin, "source tree") == 0 && strcmp(c[2].path, LM_DATADIR) == 0 && c[2].lacks == NULL,
	    "then the source tree, which holds the data");
	UNIT_OK(c[0].lacks != NULL && strcmp(c[0].lacks, "guest-payload/common.sh") == 0, "an empty folder lacks the first file");
	d = datadir_path(note);
	UNIT_OK(strcmp(d, dir) == 0, "LUME_METAL_DATADIR is used even when it lacks the data");
	UNIT_HAS(note, "lacks guest-payload/common.sh; looked in", "... the note says what it lacks");
	UNIT_HAS(note, LM_DATADIR " (source tree)", "... and names the source tree");

	for (size_t i = 0; datadir_required[i] != NULL; i++)
		put(datadir_required[i], "x\n");
	d = datadir_path(note);
	UNIT_OK(strcmp(d, dir) == 0 && note[0] == '\0', "a complete folder: no note");
	snprintf(path, sizeof path, "%s/manifests/schema/workload.schema.json", dir);
	unlink(path);
	datadir_candidates(c);
	UNIT_OK(c[0].lacks != NULL && strcmp(c[0].lacks, "manifests/schema/workload.schema.json") == 0,
	    "a folder missing one schema lacks it");

	unsetenv("LUME_METAL_DATADIR");
	n = datadir_candidates(c);
	UNIT_OK(n == 2 && strcmp(c[0].origin, "installed") == 0, "unset: the installed folder comes first");
	d = datadir_path(note);
	UNIT_OK(strcmp(d, c[0].lacks == NULL ? LM_PKGDATADIR : LM_DATADIR) == 0 && note[0] == '\0',
	    "... and the first that holds the data is used");
	setenv("LUME_METAL_DATADIR", "", 1);
	UNIT_OK(datadir_candidates(c) == 2, "an empty LUME_METAL_DATADIR counts as unset");

	/* A path too long for any buffer: it lacks everything, and the note is cut, not overrun. */
	big = malloc(6000);
	memset(big, 'a', 5999);
	big[0] = '/';
	big[5999] = '\0';
	setenv("LUME_METAL_DATADIR", big, 1);
	d = datadir_path(note);
	UNIT_OK(d == getenv("LUME_METAL_DATADIR") && strlen(note) < LM_ERRLEN && strncmp(note, "data folder /aaa", 16) == 0,
	    "a 6000-byte LUME_METAL_DATADIR: used, its note cut at %d bytes", LM_ERRLEN);
	free(big);

	put("build/macos/liblumemetal.dylib", "abc");
	UNIT_OK(datadir_sha256(sha, path, sizeof path, dir, "build/macos/liblumemetal.dylib", err) == LM_OK &&
	    strcmp(sha, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
	    "datadir_sha256 of a file");
	UNIT_OK(datadir_sha256(sha, path, sizeof path, dir, "build/macos/lume-metal-probe", err) == LM_EINPUT,
	    "a missing file is LM_EINPUT");
	UNIT_HAS(err, "/build/macos/lume-metal-probe: missing", "... naming it");
	UNIT_OK(strstr(path, dir) == path, "... and path names where it looked");

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 2;
	UNIT_DONE();
}

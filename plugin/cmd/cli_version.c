/* cli_version: `lume-metal --version`: the version, the commit it was built from, the data
 * folder it would use and the SHA-256 of the shim and probe a macos payload would carry. */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "ops/payloads.h"

#ifndef LM_COMMIT
#define LM_COMMIT "unknown"
#endif

int
cli_version(void)
{
	static const char *const deployed[][2] = {
		{"shim", "build/macos/liblumemetal.dylib"}, {"probe", "build/macos/lume-metal-probe"},
	};
	datadir_candidate c[3];
	char note[LM_ERRLEN], err[LM_ERRLEN], sha[65], path[4096];
	const char *dir = ops_datadir(note);
	size_t n = ops_datadir_candidates(c);

	printf("lume-metal %s\ncommit: %s\n", LM_VERSION, LM_COMMIT);
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].path, dir) == 0) {
			printf("data: %s (%s)\n", dir, c[i].origin);
			break;
		}
	for (size_t i = 0; i < sizeof deployed / sizeof deployed[0]; i++) {
		if (ops_datadir_sha256(sha, path, sizeof path, dir, deployed[i][1], err) == LM_OK)
			printf("%s: sha256 %s %s\n", deployed[i][0], sha, path);
		else
			printf("%s: missing %s\n", deployed[i][0], path);
	}
	printf("data folders, in search order:");
	for (size_t i = 0; i < n; i++)
		printf("%s %s (%s%s%s)", i ? ";" : "", c[i].path, c[i].origin, c[i].lacks ? ": lacks " : "",
		    c[i].lacks ? c[i].lacks : "");
	printf("\n");
	if (*note)
		fprintf(stderr, "lume-metal: %s\n", note);
	return EXIT_OK;
}

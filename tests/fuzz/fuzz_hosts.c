/* A --hosts FILE, text or JSON: hosts_load on the input written to a file. */
#include "fuzz.h"
#include "ops/hosts.h"

FUZZ_TARGET(hosts)
{
	const char *path = fuzz_path("hosts");
	guest_target **v = NULL;
	char err[LM_ERRLEN];
	size_t n = 0;

	fuzz_write(path, data, size);
	if (fuzz_note("hosts_load", hosts_load(&v, &n, path, "admin", err), err) == LM_OK)
		hosts_free(v, n);
	return 0;
}

/* What a Mac host answers to its one exec (guest-scripts/host-identity.sh): the "@sysctl", "@pref",
 * "@storage", "@digests" and "@ls" sections, whatever they hold. identity_host_parse, then
 * identity_host_digest for every VM it listed, in its own location and the default one. */
#include "fuzz.h"
#include "net/identity.h"

FUZZ_TARGET(identity)
{
	char *text = fuzz_str(data, size), err[LM_ERRLEN], why[LM_ERRLEN], d[IMAGE_DIGEST_LEN + 1];
	identity_host h;
	lume_vm **v = NULL;
	size_t n = 0;

	if (fuzz_note("identity_host_parse", identity_host_parse(&h, &v, &n, text, size, 0, "mac: ", err), err) == LM_OK)
		for (size_t i = 0; i < n; i++) {
			identity_host_digest(d, &h, v[i]->name, v[i]->location, why, sizeof why);
			identity_host_digest(d, &h, v[i]->name, NULL, why, sizeof why);
			lume_vm_free(v[i]);
		}
	free(v);
	identity_host_clear(&h);
	free(text);
	return 0;
}

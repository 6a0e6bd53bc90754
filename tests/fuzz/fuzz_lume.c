/* Lume's `ls`/`get --format json` output, log lines and all: lume_parse_output, and
 * lume_list_parse, which turns a `lume ls` answer (local, or the part of a Mac host's one exec
 * after its marker) into VMs. */
#include "fuzz.h"
#include "net/lume.h"

FUZZ_TARGET(lume)
{
	char *text = fuzz_str(data, size), err[LM_ERRLEN];
	cJSON *doc = lume_parse_output(text);
	lume_vm **vms = NULL;
	size_t n = 0;

	fuzz_note("lume_parse_output", doc ? 0 : -1, "no array");
	cJSON_Delete(doc);
	if (fuzz_note("lume_list_parse", lume_list_parse(&vms, &n, text, 0, "mac-01.lan: ", err), err) == LM_OK) {
		for (size_t i = 0; i < n; i++)
			lume_vm_free(vms[i]);
		free(vms);
	}
	free(text);
	return 0;
}

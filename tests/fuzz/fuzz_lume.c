/* Lume's `ls`/`get --format json` output, log lines and all: lume_parse_output, and the VM list
 * a Mac host's `lume ls` gives over SSH (lume_list_remote, the input its stdout, exit 0). */
#include "fuzz.h"
#include "lume.h"
#include "stub_ssh.h"

FUZZ_TARGET(lume)
{
	char *text = fuzz_str(data, size), err[LM_ERRLEN];
	cJSON *doc = lume_parse_output(text);
	ssh_opts o = {.host = "mac-01.lan", .user = "admin"};
	ssh_conn *c = NULL;
	lume_vm **vms = NULL;
	size_t n = 0;
	uint8_t *answer = malloc(size + 1);

	fuzz_note("lume_parse_output", doc ? 0 : -1, "no array");
	cJSON_Delete(doc);
	if (answer == NULL)
		abort();
	answer[0] = '0';
	if (size)
		memcpy(answer + 1, data, size);
	stub_ssh_feed(answer, size + 1);
	if (ssh_connect(&c, NULL, &o, err) == LM_OK &&
	    fuzz_note("lume_list_remote", lume_list_remote(&vms, &n, c, err), err) == LM_OK) {
		for (size_t i = 0; i < n; i++)
			lume_vm_free(vms[i]);
		free(vms);
	}
	ssh_close(c);
	stub_ssh_feed(NULL, 0);
	free(answer);
	free(text);
	return 0;
}

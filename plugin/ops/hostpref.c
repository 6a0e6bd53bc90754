/* hostpref: this Mac's paravirtual-graphics preference (hostpref.h). */
#include <stdlib.h>
#include <string.h>

#include "net/lume.h"
#include "ops/hostpref.h"

int
ops_hostpref_read(int *v, char *err)
{
	return host_pref_read(v, err);
}

int
ops_hostpref_set(const char *state, int enable, int *before, char *err)
{
	return enable ? host_pref_enable(state, before, err) : host_pref_disable(state, before, err);
}

/* Running VMs keep the graphics device they started with. */
void
ops_hostpref_running(const char *lume, cJSON *out)
{
	char err[LM_ERRLEN];
	lume_vm **all;
	size_t n;

	if (lume_list(&all, &n, lume, err) != LM_OK) {
		cJSON_AddStringToObject(out, "lumeError", err);
		return;
	}
	cJSON *arr = cJSON_AddArrayToObject(out, "restartNeeded");
	for (size_t i = 0; i < n; i++) {
		if (strcmp(all[i]->status, "running") == 0)
			cJSON_AddItemToArray(arr, cJSON_CreateString(all[i]->name));
		lume_vm_free(all[i]);
	}
	free(all);
}

/* lume-metal key: the Ed25519 key pair that signs the verdicts pushed to a registry. */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "ops/keys.h"

int
cmd_key(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
	char err[LM_ERRLEN], path[4096], id[VERDICT_KEYID_LEN + 1], fpr[VERDICT_FPR_LEN + 1];
	int c, json = 0, rc;

	while ((c = cli_getopt(argc, argv, "key", "", opts)) != -1) {
		if (c != 'j')
			return EXIT_USAGE;
		json = 1;
	}
	if (argc - optind < 1 || strcmp(argv[optind], "generate") != 0 || argc - optind > 2)
		return cli_error(EXIT_USAGE, "key: takes generate [PATH]; see 'lume-metal help key'");
	if (argc - optind == 2) {
		if (lm_fmt(path, sizeof path, "%s", argv[optind + 1]) != 0 || path[0] == '\0')
			return cli_error(EXIT_USAGE, "key generate: PATH is empty or too long");
	} else if ((rc = ops_key_default_path(path, sizeof path, err)) != LM_OK)
		/* Beside the config file that names it: $XDG_CONFIG_HOME/lume-metal/verdict-key. */
		return rc == LM_EINPUT ? cli_error(EXIT_USAGE, "key generate: %s", err) : cli_fail(rc, err);
	if ((rc = ops_key_generate(id, fpr, path, err)) != LM_OK)
		return cli_fail(rc, err);
	if (json) {
		cJSON *o = cJSON_CreateObject();
		char pub[4200];

		snprintf(pub, sizeof pub, "%s.pub", path);
		cJSON_AddStringToObject(o, "private", path);
		cJSON_AddStringToObject(o, "public", pub);
		cJSON_AddStringToObject(o, "keyid", id);
		cJSON_AddStringToObject(o, "fingerprint", fpr);
		cli_print_json(o);
		cJSON_Delete(o);
	} else
		cli_printf("wrote %s (private, mode 0600) and %s.pub (public)\nkey id %s\nfingerprint %s\n"
		    "sign with it: signing-key=%s in the config file; trust it on every controller: trusted-key=%s.pub\n",
		    path, path, id, fpr, path, path);
	return EXIT_OK;
}

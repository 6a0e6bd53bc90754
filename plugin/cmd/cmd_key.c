/* lume-metal key: the Ed25519 key pair that signs the verdicts pushed to a registry. */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "ops/keys.h"

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {{"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};

static int
cmd_key(int argc, char **argv)
{
	char err[LM_ERRLEN], path[4096], id[VERDICT_KEYID_LEN + 1], fpr[VERDICT_FPR_LEN + 1];
	int c, json = 0, rc;

	while ((c = cli_getopt(argc, argv, "key", "", options)) != -1) {
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

const cli_command cli_cmd_key = {
	.name = "key", .fn = cmd_key, .options = options,
	.summary = "make the Ed25519 key pair that signs verdicts",
	.usage =
	    "key generate [PATH] [--json]\n\n"
	    "Writes a new Ed25519 key pair for signing the verdicts `golden` and `ledger push` attach to\n"
	    "an image in its registry: PATH, the private key (PEM PKCS#8, mode 0600), and PATH.pub, the\n"
	    "public key (PEM SubjectPublicKeyInfo); `openssl pkey` reads both. Neither file may exist: a\n"
	    "key is never overwritten, and a symlink in its place is refused. Default PATH:\n"
	    "$XDG_CONFIG_HOME/lume-metal/verdict-key (~/.config/lume-metal/verdict-key). Prints the key's\n"
	    "id (sha256: and the SHA-256 of the raw public key), the id every verdict names its signer by,\n"
	    "and its fingerprint (SHA256:..., as ssh-keygen -l prints it: its signatures' keyid). An ECDSA\n"
	    "P-256 key (a PKCS#8 file of openssl genpkey; a cosign.pub to trust) is used as it is.\n"
	    "Name the private key as signing-key= in the config file of the controller that signs (a CI\n"
	    "runner), and the public one as trusted-key= on every controller that deploys on its verdicts\n"
	    "(docs/verdicts.md).\n\n"
	    "  --json   one object: {\"private\", \"public\", \"keyid\", \"fingerprint\"}\n",
	.examples = "  lume-metal key generate\n"
	    "  lume-metal key generate ~/ci/verdict-key --json\n",
};

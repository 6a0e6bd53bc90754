/* lume-metal ledger: the results per image version, shown, exported, merged from other machines,
 * pushed, pulled or pruned. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cli.h"
#include "core/ledger.h"
#include "ops/verdicts.h"

typedef struct {
	const char *image; /* --image filter, or NULL */
	int mode;          /* 's' show, 'j' json, 'c' csv */
	int docs;
	cJSON *all;        /* --json: every document */
} walk;

/* The VM a golden record was built from: its "sourceVm", or in a ledger written before that
 * field, its "source" unless that is "registry" (where an imported record says where it came
 * from). "" for other records. */
static const char *
source_vm(const cJSON *r)
{
	if (strcmp(lm_jstr_or(r, "kind", ""), "golden") != 0)
		return "";
	if (*lm_jstr_or(r, "sourceVm", "") || strcmp(lm_jstr_or(r, "source", ""), "registry") == 0)
		return lm_jstr_or(r, "sourceVm", "");
	return lm_jstr_or(r, "source", "");
}

/* A CSV field, escaped as cli_printf escapes it (so it holds no newline), and quoted when it
 * holds a comma or a quote. */
static void
csv(const char *v, int last)
{
	lm_buf e = {0};

	if (cli_escape(&e, v) == 0 && e.data != NULL && strpbrk(e.data, ",\"") != NULL) {
		putchar('"');
		for (const char *p = e.data; *p; p++) {
			if (*p == '"')
				putchar('"');
			putchar(*p);
		}
		putchar('"');
	} else if (e.data != NULL)
		fputs(e.data, stdout);
	putchar(last ? '\n' : ',');
	lm_buf_free(&e);
}

static int
each(const cJSON *doc, const char *path, void *ctx)
{
	walk *w = ctx;
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(doc, "key"), *r;
	const char *ref = ledger_doc_ref(doc);
	char label[LEDGER_STR_MAX + 64];

	if (w->image && !ledger_doc_is(doc, w->image))
		return 0;
	w->docs++;
	if (w->mode == 'j') {
		cJSON *d = cJSON_Duplicate(doc, 1);

		cJSON_AddStringToObject(d, "path", path);
		cJSON_AddItemToArray(w->all, d);
		return 0;
	}
	if (w->mode == 's')
		cli_printf("%s  guest %s (%s) %s  host %s %s (%s)\n  %s\n", ledger_key_label(label, sizeof label, key, ref),
		    lm_jstr_or(key, "guestOS", ""), lm_jstr_or(key, "guestBuild", ""), lm_jstr_or(key, "guestModel", ""), lm_jstr_or(key, "hostChip", ""), lm_jstr_or(key, "hostModel", ""),
		    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(key, "hostBuild")) ? lm_jstr_or(key, "hostBuild", "") : "build unknown",
		    path);
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const char *verdict = *lm_jstr_or(r, "verdict", "") ? lm_jstr_or(r, "verdict", "") : lm_jstr_or(r, "result", "");

		const char *signer = ledger_import_field(r, "signer");

		/* One VM's workload failed, not the image version (ledger_verdict skips it): said. */
		if (strcmp(lm_jstr_or(r, "cause", ""), "workload") == 0)
			verdict = "fail:workload";

		if (w->mode == 's') {
			cli_printf("    %s  %-8s %-12s %-24s %.12s %s%s%s%s%.23s%s\n", lm_jstr_or(r, "time", ""), lm_jstr_or(r, "kind", ""), verdict,
			    lm_jstr_or(r, "vm", ""), lm_jstr_or(r, "payloadSha256", ""), lm_jstr_or(r, "profile", ""), *source_vm(r) ? "  built from " : "", source_vm(r),
			    signer ? "  from the registry, signer " : "", signer ? signer : "", signer ? "..." : "");
			continue;
		}
		csv(ref ? ref : "", 0), csv(lm_jstr_or(key, "imageDigest", ""), 0), csv(lm_jstr_or(key, "guestOS", ""), 0);
		csv(lm_jstr_or(key, "guestBuild", ""), 0), csv(lm_jstr_or(key, "guestModel", ""), 0), csv(lm_jstr_or(key, "hostChip", ""), 0);
		csv(lm_jstr_or(key, "hostBuild", ""), 0), csv(lm_jstr_or(r, "time", ""), 0), csv(lm_jstr_or(r, "kind", ""), 0), csv(lm_jstr_or(r, "vm", ""), 0);
		csv(verdict, 0), csv(lm_jstr_or(r, "payloadSha256", ""), 0), csv(lm_jstr_or(r, "profile", ""), 0);
		/* The evidence columns; deploy and rollback records leave them empty (bench fills them). */
		csv(lm_jstr_or(r, "workload", ""), 0);
		for (int i = 0; i < 6; i++)
			csv("", i == 5);
	}
	return 0;
}

/* Whether directory dir holds a ledger: a ledger.db, or a JSON document (*.json, but the
 * marker of a migrated one) in it or its ledger/. */
static int
holds_documents(const char *dir)
{
	char sub[4096];
	const char *where[] = {dir, sub};
	struct stat st;

	snprintf(sub, sizeof sub, "%s/ledger.db", dir);
	if (stat(sub, &st) == 0)
		return 1;
	snprintf(sub, sizeof sub, "%s/ledger", dir);
	for (size_t k = 0; k < 2; k++) {
		DIR *d = opendir(where[k]);
		struct dirent *e;
		int found = 0;

		if (d == NULL)
			continue;
		while (!found && (e = readdir(d)) != NULL) {
			size_t len = strlen(e->d_name);

			found = e->d_name[0] != '.' && len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 &&
			    strcmp(e->d_name, LEDGER_MARKER) != 0;
		}
		closedir(d);
		if (found)
			return 1;
	}
	return 0;
}

/* ledger merge SRC...: records fetched from other machines into this ledger. */
static int
merge(const cli_conn *conn, int mode, const char *image, int nsrcs, char **srcs)
{
	ledger_merge_counts n;
	char err[LM_ERRLEN];
	int rc;

	if (nsrcs == 0)
		return cli_error(EXIT_USAGE, "ledger merge: takes one or more SRC (a ledger document, a ledger "
		    "directory or a state directory); see 'lume-metal help ledger'");
	if (mode == 'c' || image != NULL)
		return cli_error(EXIT_USAGE, "ledger merge: takes neither --csv nor --image");
	for (int i = 0; i < nsrcs; i++) { /* a folder of nothing is a wrong path, not a merge of nothing */
		struct stat st;

		if (stat(srcs[i], &st) == 0 && S_ISDIR(st.st_mode) && !holds_documents(srcs[i]))
			return cli_error(EXIT_USAGE, "ledger merge: %s holds no ledger (ledger.db, *.json, or ledger/*.json); "
			    "nothing was merged", srcs[i]);
	}
	if ((rc = ledger_merge(&n, conn->r.state, (const char *const *)srcs, (size_t)nsrcs, err)) != LM_OK)
		return cli_fail(rc, err);
	if (mode == 'j') {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "merged", n.merged);
		cJSON_AddNumberToObject(o, "documents", n.documents);
		cJSON_AddNumberToObject(o, "present", n.present);
		cJSON_AddNumberToObject(o, "sources", n.sources);
		cli_print_json(o);
		cJSON_Delete(o);
	} else
		printf("merged %d record(s) into %d document(s); %d already present\n", n.merged, n.documents,
		    n.present);
	return EXIT_OK;
}

/* ledger push IMAGE: this ledger's records of the image version, signed, attached in its registry. */
static int
push(const cli_conn *conn, int mode, int nargs, char **args)
{
	verdicts_cfg vc;
	verdict_trust trust = {0};
	char err[LM_ERRLEN];
	cJSON *out = NULL;
	const cJSON *a;
	int rc;

	if (nargs != 1 || mode == 'c')
		return cli_error(EXIT_USAGE, "ledger push: takes one IMAGE (REGISTRY/REPO:TAG or @sha256:...) and no --csv");
	if ((rc = cli_verdicts_setup(&vc, &trust, conn, NULL, "ledger push")) != EXIT_OK)
		return rc;
	rc = verdicts_push(&out, conn->r.state, args[0], NULL, &vc, err);
	ops_verdicts_clear(&trust);
	if (rc != LM_OK) {
		cJSON_Delete(out);
		return cli_fail(rc, err);
	}
	if (mode == 'j')
		cli_print_json(out);
	else {
		cli_printf("pushed %d verdict artifact(s) for %s@%s, signed by %s (%s)\n",
		    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(out, "artifacts")), lm_jstr_or(out, "repository", ""),
		    lm_jstr_or(out, "digest", ""), lm_jstr_or(out, "signer", ""), cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "referrersApi"))
		    ? "the registry's referrers API" : "fallback tag sha256-<digest>");
		cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(out, "artifacts"))
			cli_printf("  %s  %s  (%d records)\n", lm_jstr_or(a, "digest", ""), lm_jstr_or(a, "key", ""),
			    (int)cJSON_GetObjectItemCaseSensitive(a, "records")->valuedouble);
	}
	cJSON_Delete(out);
	return EXIT_OK;
}

/* ledger pull IMAGE: the verdicts attached to the image version, shown, the trusted ones recorded. */
static int
pull(const cli_conn *conn, int mode, int nargs, char **args)
{
	verdicts_cfg vc;
	verdict_trust trust = {0};
	char err[LM_ERRLEN];
	cJSON *out = NULL;
	const cJSON *a, *r;
	int rc, added = 0, trusted = 0, n = 0;

	if (nargs != 1 || mode == 'c')
		return cli_error(EXIT_USAGE, "ledger pull: takes one IMAGE (REGISTRY/REPO:TAG or @sha256:...) and no --csv");
	if ((rc = cli_verdicts_setup(&vc, &trust, conn, NULL, "ledger pull")) != EXIT_OK)
		return rc;
	if ((rc = verdicts_fetch(&out, args[0], NULL, &vc, NULL, err)) == LM_OK)
		rc = verdicts_import(&added, conn->r.state, out, err);
	ops_verdicts_clear(&trust);
	if (rc != LM_OK) {
		cJSON_Delete(out);
		return cli_fail(rc, err);
	}
	cJSON_AddNumberToObject(out, "imported", added);
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(out, "artifacts")) {
		n++;
		trusted += strcmp(lm_jstr_or(a, "status", ""), "trusted") == 0;
	}
	if (mode == 'j')
		cli_print_json(out);
	else {
		cli_printf("%s@%s: %d verdict artifact(s) (%s)\n", lm_jstr_or(out, "repository", ""), lm_jstr_or(out, "digest", ""), n,
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "referrersApi")) ? "referrers API" : "fallback tag");
		cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(out, "artifacts")) {
			cli_printf("  %.19s...  %-9s %s%s\n", lm_jstr_or(a, "artifact", ""), lm_jstr_or(a, "status", ""),
			    *lm_jstr_or(a, "signer", "") ? "signer " : "", lm_jstr_or(a, "signer", ""));
			if (*lm_jstr_or(a, "reason", ""))
				cli_printf("      %s\n", lm_jstr_or(a, "reason", ""));
			cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(a, "records"))
				cli_printf("      %s  %-8s %-6s %-20s %.12s\n", lm_jstr_or(r, "time", ""), lm_jstr_or(r, "kind", ""), lm_jstr_or(r, "verdict", ""), lm_jstr_or(r, "vm", ""),
				    lm_jstr_or(r, "payloadSha256", ""));
		}
		cli_printf("recorded %d record(s) from trusted verdicts in %s/ledger.db%s\n", added, conn->r.state,
		    n > trusted ? "; the others are never used by the gate" : "");
	}
	cJSON_Delete(out);
	if (n == 0)
		return cli_error(EXIT_SOMEFAIL, "ledger pull: no verdict is attached to %s", args[0]);
	return trusted > 0 ? EXIT_OK : EXIT_REFUSED;
}

/* ledger prune: what the gate and the reports no longer need removed (core/ledger.h), said. */
static int
prune(const cli_conn *conn, int mode, const char *keep_flag, int dry_run, int nargs)
{
	const char *keep_text = keep_flag ? keep_flag : cli_conn_setting(conn, "ledger-keep");
	char err[LM_ERRLEN], label[LEDGER_STR_MAX + 64], *end = NULL;
	long keep = keep_text ? strtol(keep_text, &end, 10) : LEDGER_KEEP_DEFAULT;
	cJSON *out = NULL;
	const cJSON *v, *k;
	int rc;

	if (nargs != 0 || mode == 'c')
		return cli_error(EXIT_USAGE, "ledger prune: takes no arguments and no --csv; see 'lume-metal help ledger'");
	if (keep_text && (end == keep_text || *end != '\0' || keep < 1 || keep > 1000000))
		return cli_error(EXIT_USAGE, "ledger prune: --keep %s: not a whole number from 1 to 1000000", keep_text);
	if ((rc = ledger_prune(&out, conn->r.state, (int)keep, dry_run, err)) != LM_OK) {
		cJSON_Delete(out);
		return cli_fail(rc, err);
	}
	if (mode == 'j')
		cli_print_json(out);
	else {
		double removed = cJSON_GetObjectItemCaseSensitive(out, "removed")->valuedouble;

		cli_printf("%s %.0f record(s) of %d image version(s)%s (kept: every record that gates, the newest of each "
		    "kind and payload, each VM's newest %ld, each image version's newest %ld records of clones)\n",
		    dry_run ? "would remove" : "removed", removed, cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(out,
		    "versions")), dry_run ? ", nothing removed (--dry-run)" : "", keep, keep);
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(out, "versions")) {
			lm_buf kinds = {0};

			cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(v, "kinds"))
				lm_buf_addf(&kinds, "%s%s %.0f", kinds.data ? ", " : "", k->string, k->valuedouble);
			cli_printf("  %s  %s %.0f (%s), %.0f left  %s\n", ledger_key_label(label, sizeof label,
			    cJSON_GetObjectItemCaseSensitive(v, "key"), NULL), dry_run ? "would remove" : "removed",
			    cJSON_GetObjectItemCaseSensitive(v, "removed")->valuedouble, kinds.data ? kinds.data : "",
			    cJSON_GetObjectItemCaseSensitive(v, "kept")->valuedouble, lm_jstr_or(v, "document", ""));
			lm_buf_free(&kinds);
		}
	}
	cJSON_Delete(out);
	return EXIT_OK;
}

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	{"state", required_argument, NULL, 's'}, {"image", required_argument, NULL, 'm'},
	{"json", no_argument, NULL, 'j'}, {"csv", no_argument, NULL, 'c'}, {"keep", required_argument, NULL, 'k'},
	{"dry-run", no_argument, NULL, 'n'}, {NULL, 0, NULL, 0},
};

static int
cmd_ledger(int argc, char **argv)
{
	const char *keep = NULL;
	int dry_run = 0;
	walk w = {.mode = 's'};
	const char *verb = "show";
	char err[LM_ERRLEN];
	cli_conn conn;
	int c, rc;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "ledger", "", options)) != -1) {
		switch (c) {
		case 's': cli_conn_flag(&conn, CLI_OPT_STATE, optarg, "ledger"); break;
		case 'm': w.image = optarg; break;
		case 'j': w.mode = 'j'; break;
		case 'c': w.mode = 'c'; break;
		case 'k': keep = optarg; break;
		case 'n': dry_run = 1; break;
		default: return EXIT_USAGE;
		}
	}
	if ((rc = cli_conn_ready(&conn, "ledger")) != EXIT_OK)
		return rc;
	if (argc - optind >= 1 && strcmp(argv[optind], "prune") == 0)
		return w.image ? cli_error(EXIT_USAGE, "ledger prune: takes no --image (it prunes every image version)") :
		    prune(&conn, w.mode, keep, dry_run, argc - optind - 1);
	if (keep || dry_run)
		return cli_error(EXIT_USAGE, "ledger: --keep and --dry-run are prune's; see 'lume-metal help ledger'");
	if (argc - optind >= 1 && strcmp(argv[optind], "merge") == 0)
		return merge(&conn, w.mode, w.image, argc - optind - 1, argv + optind + 1);
	if (argc - optind >= 1 && strcmp(argv[optind], "push") == 0)
		return w.image ? cli_error(EXIT_USAGE, "ledger push: takes IMAGE, not --image") :
		    push(&conn, w.mode, argc - optind - 1, argv + optind + 1);
	if (argc - optind >= 1 && strcmp(argv[optind], "pull") == 0)
		return w.image ? cli_error(EXIT_USAGE, "ledger pull: takes IMAGE, not --image") :
		    pull(&conn, w.mode, argc - optind - 1, argv + optind + 1);
	if (argc - optind > 1 || (argc - optind == 1 && strcmp(verb = argv[optind], "show") != 0 &&
	    strcmp(verb, "export") != 0))
		return cli_error(EXIT_USAGE, "ledger: takes show, export, merge, push, pull or prune; see 'lume-metal help ledger'");
	if (strcmp(verb, "export") == 0 && w.mode == 's')
		w.mode = 'c';
	if (w.mode == 'c')
		printf("image,image_digest,guest_os,guest_build,guest_model,host_chip,host_build,time,kind,vm,verdict,"
		    "payload_sha256,profile,workload,metric,unit,host_baremetal,stock_guest,safe_shim_guest,guest_ratio,"
		    "shim_to_host_percent\n");
	w.all = cJSON_CreateArray();
	/* A document that does not read costs only itself: the others are shown, then it is named. */
	rc = ledger_each(conn.r.state, each, &w, err);
	if (w.mode == 'j')
		cli_print_json(w.all);
	else if (rc == LM_OK && w.mode == 's' && w.docs == 0)
		cli_printf("no ledger records%s%s in %s/ledger.db\n", w.image ? " for " : "", w.image ? w.image : "",
		    conn.r.state);
	cJSON_Delete(w.all);
	return rc == LM_OK ? EXIT_OK : cli_fail(rc, err);
}

const cli_command cli_cmd_ledger = {
	.name = "ledger", .fn = cmd_ledger, .options = options,
	.summary = "show, export, merge, push, pull or prune the results per image version",
	.usage =
	    "ledger [show|export] [--image REF] [--json|--csv] [--state DIR]\n"
	    "       ledger merge [--state DIR] [--json] SRC...\n"
	    "       ledger push|pull [--state DIR] [--json] IMAGE\n"
	    "       ledger prune [--keep N] [--dry-run] [--state DIR] [--json]\n\n"
	    "The ledger is the SQLite database STATE/ledger.db; the JSON documents an older lume-metal kept\n"
	    "in STATE/ledger/ are imported on first use and kept there, renamed *.json.migrated.\n\n"
	    "show (default) prints every image version's records; export prints CSV with the evidence\n"
	    "results.csv columns plus the key fields. --json prints every document.\n\n"
	    "merge adds the records of ledgers fetched from other machines (SRC: a file of `ledger show\n"
	    "--json` or one document, a ledger.db, a state directory, or a directory of documents) to\n"
	    "this one: each record not already there goes to its image version, so merging twice adds\n"
	    "nothing. Every SRC is checked first; one that is not a ledger document is exit 2, naming it,\n"
	    "and nothing is written. Prints the records merged, the documents written and the records\n"
	    "already present (--json: {\"merged\", \"documents\", \"present\", \"sources\"}).\n\n"
	    "prune removes what neither the gate nor a report needs, and says what per image version and\n"
	    "kind (--json: {\"keep\", \"dryRun\", \"removed\", \"kept\", \"versions\"}). It keeps every record\n"
	    "that gates (validate, golden, a failing deploy whose cause is not the workload), the newest\n"
	    "record of each kind and payload, each VM's newest N records and each image version's newest\n"
	    "N records of clones (observations, and deploy records reconciled from a clone's install.json).\n"
	    "  --keep N          N (1..1000000; default: ledger-keep of the config file, else 20)\n"
	    "  --dry-run         remove nothing: say what would go\n\n"
	    "push signs this ledger's records of the image version IMAGE names (REGISTRY/REPO:TAG or\n"
	    "REGISTRY/REPO@sha256:HEX) with signing-key= of the config file and attaches them in its\n"
	    "registry as a Sigstore bundle (artifactType application/vnd.dev.sigstore.bundle.v0.3+json,\n"
	    "a DSSE envelope over an in-toto Statement, as cosign verify-attestation finds them) whose\n"
	    "subject is the image manifest; golden does it after a passing build. pull reads the verdicts\n"
	    "attached to IMAGE (bundles, and the plain envelopes of earlier versions), shows each as\n"
	    "trusted, untrusted (naming its signer), unsigned or refused (why), and records the trusted\n"
	    "ones here, marked \"imported\"; only those are ever used by a gate.\n"
	    "Exit 0 with a trusted verdict, 3 with none trusted, 1 with none attached (docs/verdicts.md).\n",
	.examples = "  lume-metal ledger show --image ghcr.io/trycua/macos-tahoe:26.5\n"
	    "  lume-metal ledger export > results.csv\n"
	    "  lume-metal ledger pull ghcr.io/my-org/macos-tahoe-shim:26.5\n"
	    "  lume-metal ledger merge fetched/mac-1 fetched/mac-2\n"
	    "  lume-metal ledger prune --keep 50 --dry-run\n",
};

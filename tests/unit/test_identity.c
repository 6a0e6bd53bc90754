/* Unit tests for identity: a Mac's sysctl answers, one Mac host's exec output (facts, storage
 * listing, digests, lume ls), hostile answers of each part, and a ledger document's label. */
#include "core/ledger.h"
#include "net/identity.h"
#include "unit.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

static const char ls_json[] =
    "[2026-08-09T12:00:00Z] INFO: Cleaned up stale session file\n"
    "[\n  {\"name\" : \"tahoe-a\", \"status\" : \"running\", \"ipAddress\" : \"192.168.64.2\", \"locationName\" : \"home\"},\n"
    "  {\"name\" : \"tahoe-b\", \"status\" : \"running\", \"ipAddress\" : \"192.168.64.3\", \"locationName\" : \"fast\"}\n]\n";

static void
free_vms(lume_vm **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		lume_vm_free(v[i]);
	free(v);
}

/* Parses "@sysctl\n" sysctl "@pref\n" pref "@storage\n" storage "@digests\n" digests "@ls\n" ls. */
static int
parse(identity_host *h, lume_vm ***v, size_t *n, const char *sysctl, const char *storage, const char *digests,
    char *err)
{
	char buf[8192];
	int len = snprintf(buf, sizeof buf, "@sysctl\n%s@pref\n1\n@storage\n%s@digests\n%s@ls\n%s", sysctl, storage,
	    digests, ls_json);

	return identity_host_parse(h, v, n, buf, (size_t)len, 0, "mac1: ", err);
}

int
main(void)
{
	identity_mac m;
	identity_host h;
	lume_vm **v;
	size_t n;
	char err[LM_ERRLEN], d[IMAGE_DIGEST_LEN + 1], why[LM_ERRLEN];
	static const char good_sysctl[] = "Apple M1 Ultra\nMac13,2\n26.6\n25G11\n";
	static const char storage[] = "VM Storage Locations:\n  - home: ~/.lume (default)\n  - fast: /Volumes/ssd/lume\n";

	UNIT_OK(identity_sysctl_parse(&m, good_sysctl, strlen(good_sysctl), err) == LM_OK &&
	    strcmp(m.chip, "Apple M1 Ultra") == 0 && strcmp(m.model, "Mac13,2") == 0 && strcmp(m.os, "26.6") == 0 &&
	    strcmp(m.build, "25G11") == 0, "sysctl -n: chip, model, OS and build in order");
	UNIT_OK(identity_sysctl_parse(&m, "Apple M1\nMac13,2\n26.6\n", 21, err) != LM_OK && m.chip[0] == '\0',
	    "a missing build is refused, and nothing kept");
	UNIT_HAS(err, "kern.osversion: no answer", "... naming the key");
	UNIT_OK(identity_sysctl_parse(&m, "Apple\033[2J\nM\n1\n2\n", 16, err) != LM_OK, "an escape sequence is refused");
	{
		char longer[400];

		memset(longer, 'A', 300);
		memcpy(longer + 300, "\nM\n1\n2\n", 8);
		UNIT_OK(identity_sysctl_parse(&m, longer, strlen(longer), err) != LM_OK, "a chip of 300 bytes is refused");
		UNIT_HAS(err, "too long", "... saying so");
	}

	UNIT_OK(parse(&h, &v, &n, good_sysctl, storage, "home tahoe-a " D1 "\nfast tahoe-b -\nhome old !\n", err) == LM_OK &&
	    n == 2, "one exec: the VMs of lume ls");
	UNIT_OK(n == 2 && v[0]->location && strcmp(v[0]->location, "home") == 0 && strcmp(v[1]->location, "fast") == 0,
	    "... each with its locationName");
	UNIT_OK(h.mac_ok && strcmp(h.mac.chip, "Apple M1 Ultra") == 0 && h.mac.pref == 1, "... the Mac's facts");
	UNIT_OK(identity_host_digest(d, &h, "tahoe-a", "home", why, sizeof why) == LM_OK && strcmp(d, D1) == 0,
	    "... tahoe-a's digest in home");
	UNIT_OK(identity_host_digest(d, &h, "tahoe-a", NULL, why, sizeof why) == LM_OK, "... found in the default location");
	UNIT_OK(identity_host_digest(d, &h, "tahoe-b", "fast", why, sizeof why) != LM_OK && d[0] == '\0',
	    "... tahoe-b has none");
	UNIT_HAS(why, "lume create", "... said: made by lume create");
	UNIT_OK(identity_host_digest(d, &h, "old", "home", why, sizeof why) != LM_OK, "a linked digest file is refused");
	UNIT_HAS(why, "link or no regular file", "... said so");
	UNIT_OK(identity_host_digest(d, &h, "tahoe-a", "fast", why, sizeof why) != LM_OK, "another location's folder is not it");
	UNIT_HAS(why, "no folder in the host's storage location fast", "... said so");
	free_vms(v, n);
	identity_host_clear(&h);

	/* Hostile: a digest line for a location the listing does not name, a path-like VM name, a
	 * digest with a tail, and a storage listing with "..". */
	UNIT_OK(parse(&h, &v, &n, good_sysctl, storage,
	    "elsewhere tahoe-a " D2 "\nhome ../../etc " D2 "\nhome tahoe-a " D1 "x\n", err) == LM_OK, "hostile digest lines");
	UNIT_OK(h.nfolders == 1, "... only the line of a listed location and a VM name is kept");
	UNIT_OK(identity_host_digest(d, &h, "tahoe-a", "home", why, sizeof why) != LM_OK, "... a digest with a tail refused");
	UNIT_HAS(why, "not a manifest digest", "... said so");
	free_vms(v, n);
	identity_host_clear(&h);
	UNIT_OK(parse(&h, &v, &n, good_sysctl, "VM Storage Locations:\n  - home: /Users/a/../../etc (default)\n",
	    "home tahoe-a " D1 "\n", err) == LM_OK && n == 2, "a storage listing with .. still lists the VMs");
	UNIT_OK(!h.storage_ok && identity_host_digest(d, &h, "tahoe-a", "home", why, sizeof why) != LM_OK,
	    "... but no digest is taken from it");
	UNIT_HAS(why, "mac1: lume config storage list: line 2", "... naming the host and line");
	free_vms(v, n);
	identity_host_clear(&h);
	UNIT_OK(parse(&h, &v, &n, "Apple\tM1\n\n", storage, "", err) == LM_OK && !h.mac_ok && h.mac.chip[0] == '\0',
	    "a Mac whose sysctl answers badly has no facts");
	UNIT_HAS(h.mac_why, "mac1: sysctl -n machdep.cpu.brand_string", "... saying which");
	free_vms(v, n);
	identity_host_clear(&h);
	{
		char many[IMAGE_STORAGE_MAX + 4096];
		int len = snprintf(many, sizeof many, "@sysctl\n%s@storage\nVM Storage Locations:\n  - home: ~/.lume (default)\n"
		    "@digests\n", good_sysctl);

		for (int i = 0; len < (int)sizeof many - 200; i++)
			len += snprintf(many + len, sizeof many - (size_t)len, "home vm%d " D1 "\n", i);
		len += snprintf(many + len, sizeof many - (size_t)len, "@ls\n[]\n");
		UNIT_OK(identity_host_parse(&h, &v, &n, many, (size_t)len, 0, "", err) == LM_OK &&
		    h.nfolders == IDENTITY_DIGESTS_MAX, "a host naming thousands of folders: %d kept", IDENTITY_DIGESTS_MAX);
		free_vms(v, n);
		identity_host_clear(&h);
	}
	UNIT_OK(identity_host_parse(&h, &v, &n, "", 0, 127, "mac1: ", err) != LM_OK, "no lume on the host is an error");
	UNIT_HAS(err, "mac1: lume is not installed", "... naming the host");
	identity_host_clear(&h);
	UNIT_OK(identity_host_parse(&h, &v, &n, "@sysctl\n", 8, 0, "mac1: ", err) != LM_OK, "no lume ls answer is an error");
	identity_host_clear(&h);

	{
		cJSON *doc = cJSON_Parse("{\"key\":{\"imageDigest\":\"" D1 "\",\"image\":null},\"records\":["
		    "{\"kind\":\"deploy\",\"image\":\"ghcr.io/a:1\"},{\"kind\":\"deploy\",\"image\":\"ghcr.io/a:2\"},{\"kind\":\"deploy\"}]}");
		cJSON *old = cJSON_Parse("{\"key\":{\"image\":\"ghcr.io/old\",\"imageDigest\":null},\"records\":[{\"kind\":\"deploy\"}]}");

		UNIT_OK(ledger_doc_ref(doc) && strcmp(ledger_doc_ref(doc), "ghcr.io/a:2") == 0,
		    "a document's reference: its last record's");
		UNIT_OK(ledger_doc_is(doc, "ghcr.io/a:1") && !ledger_doc_is(doc, "ghcr.io/b"), "... any record's matches");
		UNIT_OK(ledger_doc_ref(old) && strcmp(ledger_doc_ref(old), "ghcr.io/old") == 0, "an old key's: its key's");
		cJSON_Delete(doc);
		cJSON_Delete(old);
	}
	UNIT_DONE();
}

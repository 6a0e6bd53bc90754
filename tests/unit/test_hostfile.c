/* hostfile: known_hosts read as OpenSSH reads it. Host patterns (wildcards, negation, case,
 * [host]:port), hashed names (HMAC-SHA1 computed here, and lines hashed by ssh-keygen -H),
 * markers, keys (real ones from ssh-keygen, and broken ones), unreadable and huge lines, and the
 * verdicts of hostfile_check. tests/deploy/t-knownhosts.sh compares the verdicts with ssh's own. */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "net/hostfile.h"
#include "unit.h"

static char dir[] = "/tmp/lm-hostfile.XXXXXX", kh[4200];

/* A key made by ssh-keygen: its .pub line's type and base64, and the blob. */
typedef struct {
	char type[64], b64[1200];
	unsigned char blob[900];
	size_t len;
} key;

static int
keygen(key *k, const char *type, const char *name)
{
	char c[8400], path[4300], line[2048];
	FILE *f;
	int n;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	snprintf(c, sizeof c, "ssh-keygen -q -t %s -N '' -C t -f %s", type, path);
	if (system(c) != 0)
		return -1;
	strcat(path, ".pub");
	if ((f = fopen(path, "r")) == NULL || fgets(line, sizeof line, f) == NULL ||
	    sscanf(line, "%63s %1199s", k->type, k->b64) != 2) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	n = EVP_DecodeBlock(k->blob, (const unsigned char *)k->b64, (int)strlen(k->b64));
	for (size_t i = strlen(k->b64); n > 0 && i > 0 && k->b64[i - 1] == '='; i--)
		n--;
	k->len = n > 0 ? (size_t)n : 0;
	return 0;
}

static void
put(const char *text)
{
	FILE *f = fopen(kh, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* A hashed host field, "|1|" base64(salt) "|" base64(HMAC-SHA1(salt, name)), computed here. */
static void
hashed(char out[80], const char *name, unsigned char fill)
{
	unsigned char salt[20], mac[20], s64[32], m64[32];
	unsigned ml = 0;

	memset(salt, fill, sizeof salt);
	HMAC(EVP_sha1(), salt, 20, (const unsigned char *)name, strlen(name), mac, &ml);
	EVP_EncodeBlock(s64, salt, 20);
	EVP_EncodeBlock(m64, mac, 20);
	snprintf(out, 80, "|1|%s|%s", s64, m64);
}

static int
m(const char *field, const char *name)
{
	return hostfile_match_hosts(field, strlen(field), name);
}

static void
test_patterns(void)
{
	char big[1100], h[80], salt88[200];

	UNIT_OK(m("guest.example", "guest.example") == 1 && m("guest.example", "guest.exampl") == 0,
	    "a plain name matches itself only");
	UNIT_OK(m("a,b,guest.example,c", "guest.example") == 1, "... in a comma-separated list");
	UNIT_OK(m("GUEST.Example", "guest.example") == 1 && m("guest.example", "Guest.EXAMPLE") == 1,
	    "names and patterns compare without regard to case");
	UNIT_OK(m("*.example", "a.example") == 1 && m("*.example", "example") == 0 && m("*", "x") == 1,
	    "'*' matches any run, including a dot");
	UNIT_OK(m("host?", "host1") == 1 && m("host?", "host12") == 0 && m("host?", "host") == 0,
	    "'?' matches exactly one character");
	UNIT_OK(m("[10.0.0.*]:2222", "[10.0.0.5]:2222") == 1 && m("[10.0.0.*]:2222", "[10.0.0.5]:22") == 0 &&
	    m("[10.0.0.?]:*", "[10.0.0.5]:2222") == 1, "bracketed [host]:port with wildcards");
	UNIT_OK(m("*.example,!bad.example", "bad.example") == 0 && m("*.example,!bad.example", "ok.example") == 1,
	    "a negated pattern that matches means no match, whatever else matches");
	UNIT_OK(m("!bad.example,*.example", "bad.example") == 0 && m("!bad.example", "other") == 0,
	    "... first or alone (a negation alone names nobody)");
	UNIT_OK(m("*,!BAD.example", "bad.example") == 0, "... negations compare without case too");
	memset(big, 'a', 1023);
	big[1023] = '\0';
	strcat(big, ",*");
	UNIT_OK(m(big, "x") == 0, "a pattern of 1023 bytes fails the whole list, as OpenSSH's does");
	big[1022] = ',';
	UNIT_OK(m(big, "x") == 1, "... one of 1022 does not");

	hashed(h, "guest.example", 7);
	UNIT_OK(m(h, "guest.example") == 1 && m(h, "other.example") == 0, "a hashed name (HMAC-SHA1 under its salt)");
	hashed(h, "[127.0.0.9]:2222", 9);
	UNIT_OK(m(h, "[127.0.0.9]:2222") == 1 && m(h, "127.0.0.9") == 0, "... of [host]:port");
	hashed(h, "guest.example", 7);
	h[40] = h[40] == 'A' ? 'B' : 'A';
	UNIT_OK(m(h, "guest.example") == 0, "a hash that differs is another host, not an error");
	UNIT_OK(m("|1|AAAAAAAAAAAAAAAAAAAAAAAAAAB=|AAAA", "x") == -1,
	    "a salt of 20 bytes whose padding bits are not zero: unreadable");
	UNIT_OK(m("|1|AAAAAAAAAAAAAAAAAAAAAA==|AAAA", "x") == -1, "a salt of 16 bytes: unreadable");
	memset(salt88, 'A', 88);
	snprintf(salt88 + 88, sizeof salt88 - 88, "|%s", "AAAAAAAAAAAAAAAAAAAAAAAAAAA=");
	memmove(salt88 + 3, salt88, strlen(salt88) + 1);
	memcpy(salt88, "|1|", 3);
	UNIT_OK(m(salt88, "x") == -1, "a salt of 88 base64 characters (66 bytes; the old code wrote them into 64): "
	    "unreadable");
	UNIT_OK(m("|1|", "x") == -1 && m("|1|abc", "x") == -1 && m("|2|AAAA|AAAA", "x") == -1 && m("||", "x") == -1,
	    "hashed fields cut short or of another version: unreadable");
	UNIT_OK(m("|1|!!!!AAAAAAAAAAAAAAAAAAAAAAAA|x", "x") == -1, "... a salt that is not base64");
}

static void
test_names(void)
{
	char *n;

	n = hostfile_name("Guest.Example", 22, NULL);
	UNIT_OK(n && strcmp(n, "guest.example") == 0, "the name looked up is the host lower-cased (%s)", n ? n : "");
	free(n);
	n = hostfile_name("Guest.Example", 2222, NULL);
	UNIT_OK(n && strcmp(n, "[guest.example]:2222") == 0, "... [host]:port for another port (%s)", n ? n : "");
	free(n);
	n = hostfile_name("FE80::1", 0, NULL);
	UNIT_OK(n && strcmp(n, "FE80::1") == 0, "... an address is not lower-cased, port 0 is 22 (%s)", n ? n : "");
	free(n);
	n = hostfile_name("127.0.0.1", 2222, "Mac1/Tahoe");
	UNIT_OK(n && strcmp(n, "Mac1/Tahoe") == 0, "... a HostKeyAlias as it is, without the port (%s)", n ? n : "");
	free(n);
}

static void
test_keys(const key *ed, const key *ec, const key *rsa)
{
	char line[4096], why[128] = "", b64[1400];
	unsigned char *blob, buf[1000];
	size_t len;

	snprintf(line, sizeof line, "%s %s comment", ed->type, ed->b64);
	UNIT_OK(hostfile_read_key(line, &blob, &len, why, sizeof why) == LM_OK && len == ed->len &&
	    memcmp(blob, ed->blob, len) == 0, "an ed25519 key reads as its blob (%s)", why);
	free(blob);
	snprintf(line, sizeof line, "%s %s", ec->type, ec->b64);
	UNIT_OK(hostfile_read_key(line, &blob, &len, why, sizeof why) == LM_OK && len == ec->len,
	    "an ECDSA key (%s)", why);
	free(blob);
	snprintf(line, sizeof line, "%s\t%s\t", rsa->type, rsa->b64);
	UNIT_OK(hostfile_read_key(line, &blob, &len, why, sizeof why) == LM_OK && len == rsa->len,
	    "an RSA key, tabs between (%s)", why);
	free(blob);

	UNIT_OK(hostfile_read_key("ssh-ed25519", &blob, &len, why, sizeof why) != LM_OK && blob == NULL,
	    "a key type with no key: refused (%s)", why);
	UNIT_OK(hostfile_read_key("ssh-foo AAAA", &blob, &len, why, sizeof why) != LM_OK, "an unknown type (%s)", why);
	snprintf(line, sizeof line, "ssh-ed25519 %.20s!!", ed->b64);
	UNIT_OK(hostfile_read_key(line, &blob, &len, why, sizeof why) != LM_OK, "not base64 (%s)", why);
	snprintf(line, sizeof line, "ssh-ed25519 %.*s", (int)strlen(ed->b64) - 8, ed->b64);
	UNIT_OK(hostfile_read_key(line, &blob, &len, why, sizeof why) != LM_OK, "a key cut short (%s)", why);
	snprintf(line, sizeof line, "ssh-rsa %s", ed->b64);
	UNIT_OK(hostfile_read_key(line, &blob, &len, why, sizeof why) != LM_OK, "a line type that is not the key's (%s)",
	    why);
	snprintf(line, sizeof line, "ecdsa-sha2-nistp384 %s", ec->b64);
	UNIT_OK(hostfile_read_key(line, &blob, &len, why, sizeof why) != LM_OK, "... another curve's name (%s)", why);
	memcpy(buf, ed->blob, ed->len);
	memcpy(buf + ed->len, "\0\0\0\0", 4);
	EVP_EncodeBlock((unsigned char *)b64, buf, (int)ed->len + 4);
	snprintf(line, sizeof line, "ssh-ed25519 %s", b64);
	UNIT_OK(hostfile_read_key(line, &blob, &len, why, sizeof why) != LM_OK, "bytes after the key (%s)", why);
	memcpy(buf, ec->blob, ec->len);
	buf[ec->len - 1] ^= 1; /* the point's last byte: off the curve */
	EVP_EncodeBlock((unsigned char *)b64, buf, (int)ec->len);
	snprintf(line, sizeof line, "%s %s", ec->type, b64);
	UNIT_OK(hostfile_read_key(line, &blob, &len, why, sizeof why) != LM_OK, "an ECDSA point off its curve (%s)",
	    why);
	snprintf(line, sizeof line, "ssh-ed25519-cert-v01@openssh.com %s", ed->b64);
	UNIT_OK(hostfile_read_key(line, &blob, &len, why, sizeof why) != LM_OK && strstr(why, "certificate"),
	    "a certificate: not read, saying so (%s)", why);
}

static void
test_lines(const key *ed)
{
	char line[4096], why[128] = "";
	hostfile_entry e;

	snprintf(line, sizeof line, "@revoked * %s %s\n", ed->type, ed->b64);
	UNIT_OK(hostfile_line(&e, line, "x", why, sizeof why) == 1 && e.marker == HOSTFILE_MARK_REVOKED &&
	    e.key_len == ed->len, "@revoked * KEY: about every host, marked (%s)", why);
	free(e.key);
	snprintf(line, sizeof line, "  @cert-authority *.example %s %s\n", ed->type, ed->b64);
	UNIT_OK(hostfile_line(&e, line, "a.example", why, sizeof why) == 1 && e.marker == HOSTFILE_MARK_CA,
	    "@cert-authority, after blanks");
	free(e.key);
	snprintf(line, sizeof line, "@bogus x %s %s\n", ed->type, ed->b64);
	UNIT_OK(hostfile_line(&e, line, "x", why, sizeof why) == -1, "an unknown marker: unreadable (%s)", why);
	snprintf(line, sizeof line, "@revoked @revoked x %s %s\n", ed->type, ed->b64);
	UNIT_OK(hostfile_line(&e, line, "x", why, sizeof why) == -1, "two markers: unreadable");
	UNIT_OK(hostfile_line(&e, "@revoked\n", "x", why, sizeof why) == -1, "a marker alone: unreadable");
	UNIT_OK(hostfile_line(&e, "# x ssh-ed25519 AAAA\n", "x", why, sizeof why) == 0 &&
	    hostfile_line(&e, "   \t\n", "x", why, sizeof why) == 0 && hostfile_line(&e, "", "x", why, sizeof why) == 0,
	    "comments and blank lines are no entries");
	UNIT_OK(hostfile_line(&e, "oldbox\n", "x", why, sizeof why) == -1, "a host field alone: unreadable (%s)", why);
	UNIT_OK(hostfile_line(&e, "oldbox ssh-ed25519\n", "x", why, sizeof why) == 0,
	    "another host's line with no key is not read (OpenSSH reads only its host's keys)");
	UNIT_OK(hostfile_line(&e, "x ssh-ed25519\n", "x", why, sizeof why) == -1, "... this host's is unreadable (%s)",
	    why);
	UNIT_OK(hostfile_line(&e, "x # ssh-ed25519 AAAA\n", "x", why, sizeof why) == -1, "... as is a comment for a key");
}

/* hostfile_check of host:port with the offered key k against text. */
static int
check(hostfile_result *r, const char *text, const char *host, int port, const char *alias, const key *k)
{
	char err[LM_ERRLEN] = "";
	int rc;

	put(text);
	rc = hostfile_check(r, kh, host, port, alias, k->blob, k->len, err);
	if (rc != LM_OK)
		printf("# hostfile_check: %s\n", err);
	return rc == LM_OK ? r->status : -1;
}

static void
test_check(const key *ed, const key *ed2, const key *ec)
{
	char t[16384], h[80];
	hostfile_result r;
	int s;

#define LINE(fmt, ...) snprintf(t + strlen(t), sizeof t - strlen(t), fmt "\n", __VA_ARGS__)
	t[0] = '\0';
	LINE("# mine\n\nother.example %s %s", ed2->type, ed2->b64);
	LINE("guest.example %s %s c", ed->type, ed->b64);
	s = check(&r, t, "guest.example", 22, NULL, ed);
	UNIT_OK(s == HOSTFILE_MATCH && r.line == 4 && r.notes.len == 0, "an exact entry: a match, at its line (%lu)",
	    r.line);
	hostfile_result_free(&r);
	s = check(&r, t, "GUEST.example", 22, NULL, ed);
	UNIT_OK(s == HOSTFILE_MATCH, "... also for the host name in upper case");
	hostfile_result_free(&r);
	s = check(&r, t, "guest.example", 22, NULL, ed2);
	UNIT_OK(s == HOSTFILE_CHANGED && r.line == 4 && strcmp(r.type, "ssh-ed25519") == 0 && !r.other_types &&
	    r.old_len == ed->len && memcmp(r.old, ed->blob, ed->len) == 0,
	    "another key of the same type: changed, naming the line and its key");
	hostfile_result_free(&r);
	s = check(&r, t, "guest.example", 22, NULL, ec);
	UNIT_OK(s == HOSTFILE_CHANGED && r.other_types, "a key of a type the host is not known by: changed, saying so");
	hostfile_result_free(&r);
	s = check(&r, t, "new.example", 22, NULL, ed);
	UNIT_OK(s == HOSTFILE_UNKNOWN && strcmp(r.name, "new.example") == 0, "another host: unknown");
	hostfile_result_free(&r);

	t[0] = '\0';
	LINE("*.example,!bad.example %s %s", ed->type, ed->b64);
	UNIT_OK(check(&r, t, "a.example", 22, NULL, ed) == HOSTFILE_MATCH, "a wildcard entry");
	hostfile_result_free(&r);
	UNIT_OK(check(&r, t, "bad.example", 22, NULL, ed2) == HOSTFILE_UNKNOWN,
	    "a negated name: the line is not about it (unknown, not changed)");
	hostfile_result_free(&r);

	t[0] = '\0';
	LINE("@revoked * %s %s", ed->type, ed->b64);
	UNIT_OK(check(&r, t, "guest.example", 22, NULL, ed) == HOSTFILE_REVOKED && r.line == 1, "@revoked * KEY: revoked");
	hostfile_result_free(&r);
	LINE("guest.example %s %s", ed->type, ed->b64);
	UNIT_OK(check(&r, t, "guest.example", 22, NULL, ed) == HOSTFILE_REVOKED,
	    "... also when a plain line has the same key (the old code accepted it)");
	hostfile_result_free(&r);
	UNIT_OK(check(&r, t, "guest.example", 22, NULL, ed2) == HOSTFILE_CHANGED, "... another key of the host: changed");
	hostfile_result_free(&r);
	t[0] = '\0';
	LINE("@revoked other.example %s %s", ed->type, ed->b64);
	LINE("guest.example %s %s", ed->type, ed->b64);
	UNIT_OK(check(&r, t, "guest.example", 22, NULL, ed) == HOSTFILE_MATCH,
	    "a key revoked for another host only: a match, as OpenSSH's (its @revoked lines are per host)");
	hostfile_result_free(&r);

	t[0] = '\0';
	LINE("@cert-authority *.example %s %s", ed->type, ed->b64);
	s = check(&r, t, "guest.example", 22, NULL, ed);
	UNIT_OK(s == HOSTFILE_UNKNOWN && strstr(r.notes.data ? r.notes.data : "", ":1: @cert-authority is not supported"),
	    "@cert-authority: never trusted, a note naming the line (%s)", r.notes.data ? r.notes.data : "");
	hostfile_result_free(&r);

	t[0] = '\0';
	LINE("oldbox %s", "ssh-ed25519");
	LINE("@nonsense x %s %s", ed->type, ed->b64);
	LINE("guest.example %s %.30s", ed->type, ed->b64);
	LINE("|1|%s|AAAA %s %s", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    ed->type, ed->b64);
	LINE("[guest.example]:2222 %s %s", ed->type, ed->b64);
	s = check(&r, t, "guest.example", 2222, NULL, ed);
	UNIT_OK(s == HOSTFILE_MATCH && r.line == 5, "unreadable lines are skipped, not a reason to fail (%d)", s);
	UNIT_OK(r.nnotes == 3 && strstr(r.notes.data ? r.notes.data : "", ":2: an unknown or repeated @marker") &&
	    strstr(r.notes.data, ":3: ") && strstr(r.notes.data, ":4: a hashed host name"),
	    "... each noted with its file and line, another host's key-less line not (%s)", r.notes.data);
	hostfile_result_free(&r);
	s = check(&r, t, "guest.example", 22, NULL, ed);
	UNIT_OK(s == HOSTFILE_UNKNOWN && strstr(r.notes.data ? r.notes.data : "", ":3: the key"),
	    "the host's own unreadable line: unknown, noted (%s)", r.notes.data ? r.notes.data : "");
	hostfile_result_free(&r);
	t[0] = '\0';
	for (int i = 0; i < 12; i++)
		LINE("@x%d y z", i);
	check(&r, t, "guest.example", 22, NULL, ed);
	UNIT_OK(r.nnotes == 12 && strstr(r.notes.data ? r.notes.data : "", "; and 4 more such lines") &&
	    !strstr(r.notes.data, ":9:"), "notes stop at 8, then say how many more");
	hostfile_result_free(&r);

	/* Ports: OpenSSH's "checking without port identifier". */
	t[0] = '\0';
	LINE("guest.example %s %s", ed->type, ed->b64);
	s = check(&r, t, "guest.example", 2222, NULL, ed);
	UNIT_OK(s == HOSTFILE_MATCH && strcmp(r.name, "[guest.example]:2222") == 0,
	    "another port, the key known for the plain name: a match, as OpenSSH's");
	hostfile_result_free(&r);
	UNIT_OK(check(&r, t, "guest.example", 2222, NULL, ed2) == HOSTFILE_UNKNOWN,
	    "... another key there: unknown under [host]:port (OpenSSH adds it)");
	hostfile_result_free(&r);
	UNIT_OK(check(&r, t, "guest.example", 2222, "guest.example", ed2) == HOSTFILE_CHANGED,
	    "... with a HostKeyAlias, the alias alone: changed");
	hostfile_result_free(&r);
	t[0] = '\0';
	LINE("@revoked guest.example %s %s", ed->type, ed->b64);
	UNIT_OK(check(&r, t, "guest.example", 2222, NULL, ed) == HOSTFILE_REVOKED,
	    "... a key @revoked under the plain name stays revoked (OpenSSH would add it under [host]:port)");
	hostfile_result_free(&r);

	/* Hashed lines: computed here, and by ssh-keygen -H. */
	t[0] = '\0';
	hashed(h, "[guest.example]:2222", 3);
	LINE("%s %s %s", h, ed->type, ed->b64);
	UNIT_OK(check(&r, t, "Guest.Example", 2222, NULL, ed) == HOSTFILE_MATCH, "a hashed [host]:port entry");
	hostfile_result_free(&r);
	{
		char c[13000];

		t[0] = '\0';
		LINE("guest.example %s %s", ed->type, ed->b64);
		LINE("[10.0.0.7]:2200 %s %s", ed2->type, ed2->b64);
		put(t);
		snprintf(c, sizeof c, "ssh-keygen -q -H -f %s >/dev/null 2>&1 && rm -f %s.old && ! grep -q example %s", kh, kh,
		    kh);
		UNIT_OK(system(c) == 0, "ssh-keygen -H hashes the file");
		UNIT_OK(hostfile_check(&r, kh, "guest.example", 22, NULL, ed->blob, ed->len, t) == LM_OK &&
		    r.status == HOSTFILE_MATCH && r.line == 1, "... its hashed name matches");
		hostfile_result_free(&r);
		UNIT_OK(hostfile_check(&r, kh, "10.0.0.7", 2200, NULL, ed->blob, ed->len, t) == LM_OK &&
		    r.status == HOSTFILE_CHANGED && r.line == 2, "... its hashed [address]:port, another key: changed");
		hostfile_result_free(&r);
	}
}

static void
test_files(const key *ed)
{
	char err[LM_ERRLEN] = "", *t;
	size_t n = 3u << 20, at;
	hostfile_result r;
	FILE *f;

	put("");
	unlink(kh);
	UNIT_OK(hostfile_check(&r, kh, "x", 22, NULL, ed->blob, ed->len, err) == LM_OK && r.status == HOSTFILE_UNKNOWN,
	    "a missing file: no entries");
	hostfile_result_free(&r);
	UNIT_OK(hostfile_check(&r, dir, "x", 22, NULL, ed->blob, ed->len, err) == LM_EINPUT &&
	    strstr(err, "not a regular file"), "a directory: refused (%s)", err);
	hostfile_result_free(&r);

	/* Huge lines: a 3 MiB host field, a 3 MiB key, 3 MiB of commas, then the host. */
	if ((t = malloc(n + 1)) == NULL)
		return;
	f = fopen(kh, "w");
	memset(t, 'a', n);
	t[n] = '\0';
	fprintf(f, "%s ssh-ed25519 AAAA\nother ssh-ed25519 %s\n", t, t);
	memset(t, ',', n);
	fprintf(f, "%s ssh-ed25519 AAAA\n", t);
	at = strlen(ed->b64);
	fprintf(f, "guest.example %s %s\n", ed->type, ed->b64);
	fclose(f);
	free(t);
	UNIT_OK(hostfile_check(&r, kh, "guest.example", 22, NULL, ed->blob, ed->len, err) == LM_OK &&
	    r.status == HOSTFILE_MATCH && r.line == 4 && at > 0, "lines of 3 MiB are read through (%s)", err);
	hostfile_result_free(&r);
}

int
main(void)
{
	key ed, ed2, ec, rsa;

	if (mkdtemp(dir) == NULL)
		return 2;
	snprintf(kh, sizeof kh, "%s/known_hosts", dir);
	if (keygen(&ed, "ed25519", "ed") != 0 || keygen(&ed2, "ed25519", "ed2") != 0 || keygen(&ec, "ecdsa", "ec") != 0 ||
	    keygen(&rsa, "rsa", "rsa") != 0) {
		printf("not ok - ssh-keygen makes the test keys\n");
		return 1;
	}
	test_patterns();
	test_names();
	test_keys(&ed, &ec, &rsa);
	test_lines(&ed);
	test_check(&ed, &ed2, &ec);
	test_files(&ed);
	snprintf(kh, sizeof kh, "rm -rf %s", dir);
	if (system(kh) != 0)
		return 2;
	UNIT_DONE();
}

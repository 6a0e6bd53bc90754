/* registry: manifest digests from a REAL registry on loopback (tests/registry.sh: Debian's
 * docker-registry, plain and with htpasswd basic auth; images pushed by the simulated lume), and
 * the Bearer token flow against a stub that plays ghcr.io's challenge (tests/unit/registry-stub.py).
 * `test_registry digest REGISTRY REPO TAG` prints what registry_manifest_digest answers, with the
 * credentials from the environment (for tests/deploy/t-lume-sim.sh). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/registry.h"
#include "unit.h"
#include "core/util.h"

#define SECRET "p4ss-stub"

static char dir[] = "/tmp/lm-unit-registry.XXXXXX";
static char plain[64], authed[64], stub[64];

static int
sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* The Docker-Content-Digest curl -I sees for REPO/manifests/TAG, with -u userpass when given. */
static void
curl_digest(char *out, size_t len, const char *reg, const char *repo, const char *tag, const char *userpass)
{
	char cmd[2048];
	FILE *p;

	snprintf(cmd, sizeof cmd, "curl -sI %s%s -H 'Accept: application/vnd.oci.image.manifest.v1+json' "
	    "http://%s/v2/%s/manifests/%s | tr -d '\\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p'",
	    userpass ? "-u " : "", userpass ? userpass : "", reg, repo, tag);
	out[0] = '\0';
	if ((p = popen(cmd, "r")) == NULL)
		return;
	if (fgets(out, (int)len, p) != NULL)
		out[strcspn(out, "\n")] = '\0';
	pclose(p);
}

static int
tool(char **argv)
{
	char out[REGISTRY_DIGEST_LEN + 1], err[LM_ERRLEN];
	registry_creds c;
	int have = registry_creds_from_env(&c), rc;

	rc = registry_manifest_digest(out, argv[2], argv[3], argv[4], have == 1 ? &c : NULL, err);
	registry_creds_clear(&c);
	if (rc != LM_OK) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("%s\n", out);
	return 0;
}

static void
creds_tests(void)
{
	registry_creds c;
	int rc;

	unsetenv("GITHUB_USERNAME");
	unsetenv("GITHUB_TOKEN");
	unsetenv("GHCR_USERNAME");
	unsetenv("GHCR_TOKEN");
	rc = registry_creds_from_env(&c);
	UNIT_OK(rc == 0 && c.user == NULL && c.secret == NULL, "no credentials in the environment: anonymous");
	setenv("GHCR_USERNAME", "gu", 1);
	setenv("GHCR_TOKEN", "gt", 1);
	rc = registry_creds_from_env(&c);
	UNIT_OK(rc == 1 && strcmp(c.user, "gu") == 0 && strcmp(c.secret, "gt") == 0, "GHCR_USERNAME/GHCR_TOKEN");
	registry_creds_clear(&c);
	UNIT_OK(c.user == NULL && c.secret == NULL, "clear empties the struct");
	setenv("GITHUB_USERNAME", "hu", 1);
	setenv("GITHUB_TOKEN", "ht", 1);
	rc = registry_creds_from_env(&c);
	UNIT_OK(rc == 1 && strcmp(c.user, "hu") == 0 && strcmp(c.secret, "ht") == 0, "GITHUB_* come before GHCR_*");
	registry_creds_clear(&c);
	unsetenv("GITHUB_TOKEN");
	rc = registry_creds_from_env(&c);
	UNIT_OK(rc == 1 && strcmp(c.user, "hu") == 0 && strcmp(c.secret, "gt") == 0,
	    "each half falls back on its own, as Lume reads them");
	registry_creds_clear(&c);
	unsetenv("GHCR_TOKEN");
	rc = registry_creds_from_env(&c);
	UNIT_OK(rc == 0 && c.user == NULL, "a user without a token is anonymous");
	setenv("GITHUB_TOKEN", "", 1);
	rc = registry_creds_from_env(&c);
	UNIT_OK(rc == 0 && c.secret == NULL, "an empty token is anonymous");
	registry_creds_clear(NULL);
	unsetenv("GITHUB_USERNAME");
	unsetenv("GITHUB_TOKEN");
	unsetenv("GHCR_USERNAME");
}

/* n bytes of a DNS-like name ("a.a.a...a") into out (n + 1 bytes). */
static char *
long_name(char *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = i % 2 ? '.' : 'a';
	out[n - (n % 2 == 0)] = 'a';
	out[n] = '\0';
	return out;
}

/* The name limits, where golden (253 bytes for the registry) and the client (255 for each of
 * the registry and the repository) once disagreed: the reference grammar's one limit is 255
 * bytes for REGISTRY/REPO. */
static void
length_tests(void)
{
	char host[300], repo[300], out[REGISTRY_DIGEST_LEN + 1], err[LM_ERRLEN];
	registry_client *c = NULL;
	int rc;

	rc = registry_client_new(&c, long_name(host, 254), "org/img", NULL, 0, 1000, err);
	UNIT_OK(rc == LM_EINPUT && c == NULL, "a 254-byte registry is refused: no repository fits after it");
	registry_client_free(c);
	c = NULL;
	rc = registry_client_new(&c, long_name(host, 253), "o", NULL, 0, 1000, err);
	UNIT_OK(rc == LM_OK && c != NULL, "a 253-byte registry with a one-byte repository is 255 bytes: accepted");
	registry_client_free(c);
	memset(repo, 'a', 250);
	repo[250] = '\0';
	rc = registry_manifest_digest(out, "127.0.0.1:1", repo, "latest", NULL, err);
	UNIT_OK(rc == LM_EINPUT, "127.0.0.1:1/ and a 250-byte repository, 262 bytes, are refused");
	UNIT_HAS(err, "longer than 255 bytes", "... saying so");
	repo[243] = '\0';
	rc = registry_manifest_digest(out, "127.0.0.1:1", repo, "latest", NULL, err);
	UNIT_OK(rc == LM_EFAIL, "... and 255 bytes pass the checks (port 1 is unreachable)");
}

/* The host rule of the reference grammar, and the loopback answer the client's scheme follows. */
static void
rule_tests(void)
{
	int loop = -1;

	UNIT_OK(registry_host_ok("my-reg.example:5000", NULL) && registry_host_ok("a", NULL),
	    "a domain with a hyphen inside a component, and a one-letter host, are registries");
	UNIT_OK(!registry_host_ok("a-.b", NULL) && !registry_host_ok("a.-b", NULL) && !registry_host_ok("a..b", NULL) &&
	    !registry_host_ok("a.", NULL) && !registry_host_ok(".a", NULL), "a component that starts or ends with - or "
	    "is empty is not");
	UNIT_OK(registry_host_ok("localhost:5000", &loop) && loop == 1, "localhost is loopback");
	UNIT_OK(registry_host_ok("[::1]", &loop) && loop == 1 && registry_host_ok("10.0.0.1", &loop) && loop == 0,
	    "[::1] is, 10.0.0.1 is not");
	UNIT_OK(!registry_name_ok("ghcr.io", "Org/x", NULL) && registry_name_ok("ghcr.io", "org/x", NULL),
	    "registry_name_ok applies the repository rule");
	UNIT_OK(registry_tag_ok("_a.b-C") && !registry_tag_ok(NULL) && !registry_repo_ok(NULL), "tags; NULL is no name");
}

static void
input_tests(void)
{
	static const char *regs[] = {"", "a b", "host:1:2", "[::1", "host:123456", "host:", "h/x", "user@host", "host:80x"};
	static const char *repos[] = {"", "Org/img", "a//b", "/a", "a/", "a..b", "-a", "a/-b", "a b", "a:b", "a___b"};
	static const char *tags[] = {"", ".x", "-x", "a/b", "a b", "a:b"};
	char out[REGISTRY_DIGEST_LEN + 1], err[LM_ERRLEN], t129[130];
	int rc;

	for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++) {
		rc = registry_manifest_digest(out, regs[i], "org/img", "latest", NULL, err);
		UNIT_OK(rc == LM_EINPUT && out[0] == '\0', "registry \"%s\" refused", regs[i]);
	}
	for (size_t i = 0; i < sizeof repos / sizeof repos[0]; i++) {
		rc = registry_manifest_digest(out, "127.0.0.1:1", repos[i], "latest", NULL, err);
		UNIT_OK(rc == LM_EINPUT, "repository \"%s\" refused", repos[i]);
	}
	UNIT_HAS(err, "not a repository name", "... saying so");
	for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
		rc = registry_manifest_digest(out, "127.0.0.1:1", "org/img", tags[i], NULL, err);
		UNIT_OK(rc == LM_EINPUT, "tag \"%s\" refused", tags[i]);
	}
	memset(t129, 'a', 129);
	t129[129] = '\0';
	rc = registry_manifest_digest(out, "127.0.0.1:1", "org/img", t129, NULL, err);
	UNIT_OK(rc == LM_EINPUT, "a 129-byte tag refused");
	rc = registry_manifest_digest(out, "127.0.0.1:1", "a.b/c__d/e--f-g_h", "v1.2_3-x", NULL, err);
	UNIT_OK(rc == LM_EFAIL, "good names pass the checks (and port 1 is unreachable)");
	UNIT_HAS(err, "registry 127.0.0.1:1 is unreachable", "... naming the registry");
	rc = registry_manifest_digest_timeout(out, "127.0.0.1:1", "org/img", "latest", NULL, 0, err);
	UNIT_OK(rc == LM_EINPUT, "a zero timeout is refused");
	length_tests();
}

static void
real_tests(int port)
{
	char out[REGISTRY_DIGEST_LEN + 1], err[LM_ERRLEN] = "", want[128], want2[128];
	registry_creds good = {"lume", SECRET}, bad = {"lume", "wrong-" SECRET};
	int rc;

	snprintf(plain, sizeof plain, "127.0.0.62:%d", port);
	snprintf(authed, sizeof authed, "127.0.0.63:%d", port);
	if (sh("sh " LM_DATADIR "/tests/registry.sh start %s/plain 127.0.0.62 %d", dir, port) != 0 ||
	    sh("sh " LM_DATADIR "/tests/registry.sh start %s/authed 127.0.0.63 %d --htpasswd lume:" SECRET, dir, port) != 0) {
		printf("not ok - the test registries start\n");
		unit_failed++;
		return;
	}
	/* One image in each, pushed by the simulated lume. */
	if (sh("cd %s && mkdir -p home lume && export HOME=%s/home LUME_SIM_DIR=%s/lume LUME_SIM_REGISTRY_HTTP=1 "
	    "GITHUB_USERNAME=lume GITHUB_TOKEN=" SECRET " && sh " LM_DATADIR "/tests/lume-sim/vm.sh %s/lume src stopped null null "
	    "--folder %s/home/.lume --disk-kib 64 && " LM_DATADIR "/tests/lume-sim/lume push src img:latest --registry %s "
	    "--organization org >push.log 2>&1 && " LM_DATADIR "/tests/lume-sim/lume push src img:latest --registry %s "
	    "--organization org --additional-tags v1 >>push.log 2>&1", dir, dir, dir, dir, dir, plain, authed) != 0) {
		printf("not ok - the simulated lume pushes an image to each registry\n");
		unit_failed++;
		sh("cat %s/push.log", dir);
		return;
	}
	curl_digest(want, sizeof want, plain, "org/img", "latest", NULL);
	rc = registry_manifest_digest(out, plain, "org/img", "latest", NULL, err);
	UNIT_OK(rc == LM_OK && strcmp(out, want) == 0 && strlen(out) == REGISTRY_DIGEST_LEN,
	    "an open registry: the digest curl -I sees (%s) %s", want, rc ? err : "");
	rc = registry_manifest_digest(out, plain, "org/img", "latest", &good, err);
	UNIT_OK(rc == LM_OK && strcmp(out, want) == 0, "... credentials it does not ask for are not needed %s", rc ? err : "");
	rc = registry_manifest_digest(out, plain, "org/img", "nope", NULL, err);
	UNIT_OK(rc == LM_EFAIL && out[0] == '\0', "a missing tag is a failure");
	UNIT_HAS(err, "no such tag org/img:nope", "... saying so");
	rc = registry_manifest_digest(out, plain, "org/other", "latest", NULL, err);
	UNIT_OK(rc == LM_EFAIL, "a missing repository is a failure");
	UNIT_HAS(err, "no such tag org/other:latest", "... the same message");

	curl_digest(want2, sizeof want2, authed, "org/img", "v1", "lume:" SECRET);
	rc = registry_manifest_digest(out, authed, "org/img", "v1", &good, err);
	UNIT_OK(rc == LM_OK && strcmp(out, want2) == 0, "basic auth: the digest curl -I -u sees %s", rc ? err : "");
	rc = registry_manifest_digest(out, authed, "org/img", "v1", NULL, err);
	UNIT_OK(rc == LM_EFAIL && out[0] == '\0', "basic auth without credentials fails");
	UNIT_HAS(err, "registry 127.0.0.63", "... naming the registry");
	UNIT_HAS(err, "requires credentials (401)", "... and what it wants");
	rc = registry_manifest_digest(out, authed, "org/img", "v1", &bad, err);
	UNIT_OK(rc == LM_EFAIL && out[0] == '\0', "basic auth with a wrong token fails");
	UNIT_HAS(err, "refused the credentials (401)", "... saying so");
	UNIT_OK(strstr(err, SECRET) == NULL, "... without the secret in the message");
	rc = registry_manifest_digest(out, authed, "org/img", "nope", &good, err);
	UNIT_OK(rc == LM_EFAIL, "basic auth, missing tag");
	UNIT_HAS(err, "no such tag org/img:nope", "... saying so");

	sh("sh " LM_DATADIR "/tests/registry.sh stop %s/plain", dir);
	rc = registry_manifest_digest(out, plain, "org/img", "latest", NULL, err);
	UNIT_OK(rc == LM_EFAIL && out[0] == '\0', "a registry that is down fails");
	UNIT_HAS(err, "registry 127.0.0.62", "... naming it");
	UNIT_HAS(err, "is unreachable", "... as unreachable");
	sh("sh " LM_DATADIR "/tests/registry.sh stop %s/authed", dir);
}

static void
stub_tests(int port)
{
	char out[REGISTRY_DIGEST_LEN + 1], err[LM_ERRLEN] = "", pidf[512], logf[512], line[512];
	registry_creds good = {"u", SECRET}, bad = {"u", "x" SECRET};
	const char *D = "sha256:abababababababababababababababababababababababababababababababab";
	FILE *f;
	int rc, pid = 0, seen_basic = 0, seen_bearer = 0, seen_secret = 0;
	int64_t t0;

	snprintf(stub, sizeof stub, "127.0.0.64:%d", port);
	snprintf(pidf, sizeof pidf, "%s/stub.pid", dir);
	snprintf(logf, sizeof logf, "%s/stub.log", dir);
	sh("python3 " LM_DATADIR "/tests/unit/registry-stub.py 127.0.0.64 %d %s %s 2>%s/stub.err &", port, pidf, logf, dir);
	for (int i = 0; i < 200 && sh("curl -s -o /dev/null http://%s/ 2>/dev/null", stub) != 0; i++)
		usleep(50000);
	if ((f = fopen(pidf, "r")) != NULL) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	if (pid <= 0) {
		printf("not ok - the stub registry starts\n");
		unit_failed++;
		return;
	}
	rc = registry_manifest_digest(out, stub, "org/img", "latest", &good, err);
	UNIT_OK(rc == LM_OK && strcmp(out, D) == 0, "Bearer: challenge, token with Basic credentials, HEAD again %s", rc ? err : "");
	rc = registry_manifest_digest(out, stub, "org/access", "latest", &good, err);
	UNIT_OK(rc == LM_OK && strcmp(out, D) == 0, "... an access_token works as a token %s", rc ? err : "");
	{
		/* Failures through the stub: repository, tag, credentials, what the message must say. */
		static const struct {
			const char *repo, *tag;
			int creds; /* 0 none, 1 good, 2 wrong */
			const char *says, *what;
		} bad_cases[] = {
			{"org/img", "latest", 2, "refused the credentials (401)", "the token service refusing the credentials"},
			{"org/img", "latest", 0, "requires credentials (401)", "no credentials where the token service wants them"},
			{"org/wrongtoken", "latest", 1, "refused the credentials (401)", "a token the registry then refuses"},
			{"org/img", "nope", 1, "no such tag org/img:nope", "a missing tag behind a token"},
			{"org/notoken", "latest", 1, "answered no token", "a token answer without a token"},
			{"org/bigtoken", "latest", 1, "a token larger than 65536 bytes", "a token answer over 64 KiB (not read whole)"},
			{"org/httprealm", "latest", 1, "without an https realm", "a realm over plain http to another host (credentials stay)"},
			{"org/baddigest", "latest", 1, "not sha256: and 64 lowercase hex", "an uppercase Docker-Content-Digest"},
			{"org/nodigest", "latest", 1, "no Docker-Content-Digest", "a 200 without Docker-Content-Digest"},
			{"org/bigheaders", "latest", 1, "more than 65536 bytes of headers", "headers over 64 KiB (not read whole)"},
			{"org/redirect", "latest", 1, "answered HTTP 307", "a redirect (not followed)"},
			{"org/nochallenge", "latest", 1, "without a Bearer or Basic challenge", "a 401 without a challenge"},
		};
		for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
			const registry_creds *c = bad_cases[i].creds == 1 ? &good : bad_cases[i].creds == 2 ? &bad : NULL;

			rc = registry_manifest_digest(out, stub, bad_cases[i].repo, bad_cases[i].tag, c, err);
			UNIT_OK(rc == LM_EFAIL && out[0] == '\0', "%s fails", bad_cases[i].what);
			UNIT_HAS(err, bad_cases[i].says, "... saying \"%s\"", bad_cases[i].says);
			UNIT_OK(strstr(err, "registry 127.0.0.64") != NULL && strstr(err, SECRET) == NULL &&
			    strstr(err, "tok-123") == NULL, "... naming the registry, with no secret and no token");
		}
	}
	t0 = lm_now_ms();
	rc = registry_manifest_digest_timeout(out, stub, "org/slow", "latest", &good, 500, err);
	UNIT_OK(rc == LM_EFAIL && lm_now_ms() - t0 < 3000, "a registry that does not answer is left after the timeout (%lld ms)",
	    (long long)(lm_now_ms() - t0));
	UNIT_HAS(err, "did not answer within 500 ms", "... saying so");

	if ((f = fopen(logf, "r")) != NULL) {
		while (fgets(line, sizeof line, f) != NULL) {
			seen_basic |= strncmp(line, "GET /token?service=stub-registry&scope=repository%3Aorg%2Fimg%3Apull Basic", 73) == 0;
			seen_bearer |= strncmp(line, "HEAD /v2/org/img/manifests/latest Bearer accept=oci", 51) == 0;
			seen_secret |= strstr(line, SECRET) != NULL;
		}
		fclose(f);
	}
	UNIT_OK(seen_basic, "the token request carried service and scope from the challenge, and Basic credentials");
	UNIT_OK(seen_bearer, "the second HEAD carried the Bearer token and the OCI Accept");
	UNIT_OK(!seen_secret, "no secret in any request line");
	kill(pid, SIGTERM);
}

int
main(int argc, char **argv)
{
	int port = 30000 + (int)(getpid() % 20000);

	if (argc == 5 && strcmp(argv[1], "digest") == 0)
		return tool(argv);
	if (mkdtemp(dir) == NULL)
		return 2;
	creds_tests();
	input_tests();
	rule_tests();
	real_tests(port);
	stub_tests(port);
	sh("sh " LM_DATADIR "/tests/registry.sh stop %s/plain; sh " LM_DATADIR "/tests/registry.sh stop %s/authed; rm -rf %s", dir,
	    dir, dir);
	UNIT_DONE();
}

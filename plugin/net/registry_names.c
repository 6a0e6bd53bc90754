/* registry_names: the reference rules (registry.h), the one place: docker's reference grammar
 * (distribution/reference), which the OCI distribution spec follows. */
#include "net/registry.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"

/* A domain-name of the reference grammar: components [A-Za-z0-9] or [A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9],
 * joined by '.'; n bytes at s. */
static int
domain_ok(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t c = i;

		while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '-'))
			i++;
		if (i == c || s[c] == '-' || s[i - 1] == '-')
			return 0;
		if (i < n && (s[i] != '.' || ++i == n))
			return 0;
	}
	return n > 0;
}

int
registry_host_ok(const char *r, int *loopback)
{
	const char *h = r, *end, *p;
	char host[REGISTRY_NAME_MAX];
	size_t hl;
	unsigned char a[16];
	int loop;

	/* the registry, "/" and a repository of one byte, at most: REGISTRY_NAME_MAX */
	if (r == NULL || *r == '\0' || strlen(r) > REGISTRY_NAME_MAX - 2)
		return 0;
	if (*r == '[') {
		if ((end = strchr(r, ']')) == NULL)
			return 0;
		h = r + 1;
		p = end + 1;
	} else {
		end = strchr(r, ':');
		if (end == NULL)
			end = r + strlen(r);
		p = end;
		if (!domain_ok(r, (size_t)(end - r)))
			return 0;
	}
	hl = (size_t)(end - h);
	if (hl == 0 || hl >= sizeof host)
		return 0;
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (*p == ':') {
		size_t n = 0;

		for (p++; isdigit((unsigned char)*p) && n < 6; p++, n++)
			;
		if (n == 0 || n > 5)
			return 0;
	}
	if (*p != '\0')
		return 0;
	if (*r == '[') {
		if (inet_pton(AF_INET6, host, a) != 1)
			return 0;
		loop = strcmp(host, "::1") == 0;
	} else
		loop = strcasecmp(host, "localhost") == 0 || (inet_pton(AF_INET, host, a) == 1 && a[0] == 127);
	if (loopback)
		*loopback = loop;
	return 1;
}

int
registry_repo_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0, i = 0;

	if (n == 0 || n > REGISTRY_NAME_MAX - 2)
		return 0;
	for (;;) {
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return 0;
		while ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9'))
			i++;
		if (s[i] == '\0')
			return 1;
		if (s[i] == '/' || s[i] == '.')
			i++;
		else if (s[i] == '_')
			i += s[i + 1] == '_' ? 2 : 1;
		else if (s[i] == '-')
			while (s[i] == '-')
				i++;
		else
			return 0;
	}
}

int
registry_tag_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > REGISTRY_TAG_MAX || !(isalnum((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return 0;
	return 1;
}

int
registry_name_ok(const char *registry, const char *repo, int *loopback)
{
	return registry_host_ok(registry, loopback) && registry_repo_ok(repo) &&
	    strlen(registry) + 1 + strlen(repo) <= REGISTRY_NAME_MAX;
}

int
registry_name_check(const char *registry, const char *repo, int *loopback, char *err)
{
	if (!registry_host_ok(registry, loopback))
		return lm_err(err, LM_EINPUT, "not a registry HOST[:PORT]: %.100s", registry ? registry : "");
	if (!registry_repo_ok(repo))
		return lm_err(err, LM_EINPUT, "registry %s: not a repository name (lowercase path, e.g. trycua/macos-tahoe-cua)",
		    registry);
	if (!registry_name_ok(registry, repo, NULL))
		return lm_err(err, LM_EINPUT, "registry %s: %s/%.100s... is longer than " LM_STR(REGISTRY_NAME_MAX) " bytes",
		    registry, registry, repo);
	return LM_OK;
}

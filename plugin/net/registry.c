/* registry: see registry.h. */
#include "net/registry.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/evp.h>

#include "core/util.h"
#include "net/curl_lazy.h"
#include "net/registry_int.h"

static const char accept_types[] =
    "Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json, "
    "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json";

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc = LM_EFAIL;
static char curl_init_err[LM_ERRLEN];

/* libcurl loaded (net/curl_lazy.h) and initialized, once; curl_init_err says why not. */
static void
curl_init(void)
{
	CURLcode rc;

	if (curl_lazy_load(curl_init_err) != LM_OK)
		return;
	if ((rc = curl_global_init(CURL_GLOBAL_DEFAULT)) != CURLE_OK)
		lm_err(curl_init_err, LM_EFAIL, "libcurl: %s", curl_easy_strerror(rc));
	else
		curl_init_rc = LM_OK;
}

/* libcurl ready for the entry points below (curl_init, once): LM_OK, or LM_EFAIL saying why. */
static int
curl_ready(char *err)
{
	pthread_once(&curl_once, curl_init);
	return curl_init_rc == LM_OK ? LM_OK : lm_err(err, LM_EFAIL, "%s", curl_init_err);
}

/* What a 401 without credentials says: where credentials for a registry come from. */
#define NO_CREDS "none are set for it (GITHUB_USERNAME and GITHUB_TOKEN are sent only to the registry `lume " \
	"push` uses, registry=; for another, its entry in registry-auth=FILE, a Docker config's auths)"

static void
wipe_free(char *s)
{
	if (s != NULL) {
		lm_wipe(s, strlen(s));
		free(s);
	}
}


/* Header value of line (len bytes) when its name is name (case-insensitive), trimmed. */
static const char *
header_value(const char *line, size_t len, const char *name, size_t *vlen)
{
	size_t nl = strlen(name);

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return NULL;
	line += nl + 1;
	len -= nl + 1;
	while (len > 0 && (*line == ' ' || *line == '\t'))
		line++, len--;
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	*vlen = len;
	return line;
}

/* The target of the link-value of a Link header (v, vl bytes) whose rel is "next": `<URL>;
 * rel="next"`, several link-values separated by commas (RFC 8288). out gets it, or stays "". */
static void
link_next(char *out, size_t outlen, const char *v, size_t vl)
{
	const char *p = v, *end = v + vl;

	while (p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p)), *gt, *stop;
		int next = 0;

		if (lt == NULL || (gt = memchr(lt, '>', (size_t)(end - lt))) == NULL)
			return;
		/* the parameters run to the next link-value's comma (a quoted one is skipped) */
		for (stop = gt + 1; stop < end && *stop != ','; stop++)
			if (*stop == '"')
				while (++stop < end && *stop != '"')
					;
		for (const char *q = gt + 1; q + 3 < stop; q++)
			if (strncasecmp(q, "rel", 3) == 0 && (q[-1] == ';' || q[-1] == ' ')) {
				const char *r = q + 3;

				while (r < stop && *r == ' ')
					r++;
				if (r < stop && *r == '=') {
					r++;
					while (r < stop && *r == ' ')
						r++;
					r += r < stop && *r == '"';
					next |= stop - r >= 4 && strncasecmp(r, "next", 4) == 0 && (r + 4 == stop || r[4] == '"' ||
					    r[4] == ' ' || r[4] == ';');
				}
			}
		if (next && (size_t)(gt - lt - 1) < outlen) {
			memcpy(out, lt + 1, (size_t)(gt - lt - 1));
			out[gt - lt - 1] = '\0';
			return;
		}
		p = stop + 1;
	}
}

static size_t
on_header(char *buf, size_t size, size_t n, void *arg)
{
	heads *h = arg;
	size_t len = size * n, vl;
	const char *v;

	if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) { /* a new response (after 100, or a retry) */
		h->digest_seen = h->digest_bad = 0;
		h->digest[0] = h->challenge[0] = h->ctype[0] = h->location[0] = h->next[0] = '\0';
		h->challenge_bearer = h->challenge_over = h->oci_subject = 0;
	}
	h->bytes += len;
	if (h->bytes > REGISTRY_HEADERS_MAX) {
		h->over = 1;
		return 0; /* aborts the transfer */
	}
	if ((v = header_value(buf, len, "Docker-Content-Digest", &vl)) != NULL) {
		h->digest_seen = 1;
		h->digest_bad = vl != REGISTRY_DIGEST_LEN;
		if (!h->digest_bad) {
			memcpy(h->digest, v, vl);
			h->digest[vl] = '\0';
			h->digest_bad = !lm_is_digest(h->digest);
		}
	} else if ((v = header_value(buf, len, "Content-Type", &vl)) != NULL) {
		snprintf(h->ctype, sizeof h->ctype, "%.*s", (int)(vl < sizeof h->ctype ? vl : sizeof h->ctype - 1), v);
	} else if ((v = header_value(buf, len, "Location", &vl)) != NULL) {
		if (vl < sizeof h->location) {
			memcpy(h->location, v, vl);
			h->location[vl] = '\0';
		}
	} else if ((v = header_value(buf, len, "Link", &vl)) != NULL) {
		if (h->next[0] == '\0')
			link_next(h->next, sizeof h->next, v, vl);
	} else if (header_value(buf, len, "OCI-Subject", &vl) != NULL) {
		h->oci_subject = 1;
	} else if ((v = header_value(buf, len, "WWW-Authenticate", &vl)) != NULL) {
		int bearer = vl >= 7 && strncasecmp(v, "Bearer ", 7) == 0;

		if (h->challenge[0] == '\0' || (bearer && !h->challenge_bearer)) {
			if (vl >= sizeof h->challenge) {
				h->challenge_over = 1;
			} else {
				memcpy(h->challenge, v, vl);
				h->challenge[vl] = '\0';
				h->challenge_bearer = bearer;
			}
		}
	}
	return len;
}


static size_t
on_body(char *buf, size_t size, size_t n, void *arg)
{
	body *bd = arg;
	size_t len = size * n;

	if (bd->b.len + len > (bd->max ? bd->max : REGISTRY_BODY_MAX)) {
		bd->over = 1;
		return 0;
	}
	return lm_buf_add(&bd->b, buf, len) == 0 ? len : 0;
}

/* Parameter name of a challenge such as `Bearer realm="...",service="...",scope="..."` into out. */
static int
challenge_param(char *out, size_t outlen, const char *ch, const char *name)
{
	const char *p = strchr(ch, ' ');
	size_t nl = strlen(name);

	while (p != NULL && *p) {
		size_t o = 0;
		int match;

		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		match = strncasecmp(p, name, nl) == 0 && p[nl] == '=';
		while (*p && *p != '=' && *p != ',')
			p++;
		if (*p != '=')
			continue;
		p++;
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					p++;
				if (match && o + 1 < outlen)
					out[o++] = *p;
				else if (match)
					return -1;
			}
			if (*p != '"')
				return -1;
			p++;
		} else {
			for (; *p && *p != ',' && *p != ' '; p++) {
				if (match && o + 1 < outlen)
					out[o++] = *p;
				else if (match)
					return -1;
			}
		}
		if (match) {
			out[o] = '\0';
			return 0;
		}
	}
	return 1; /* absent */
}



/* Who answered, for an error: "registry R", or "HOST (where registry R redirected)". */
const char *
registry_who(char out[600], const ctx *c, const char *host)
{
	if (host == NULL || *host == '\0')
		snprintf(out, 600, "registry %s", c->registry);
	else
		snprintf(out, 600, "%s (where registry %s redirected)", host, c->registry);
	return out;
}

/* One exchange with url, answered by host (NULL: the registry). *next gets the absolute URL a
 * 3xx answer names (curl resolves a relative Location), "" when none. */
static int
perform(ctx *c, const char *url, const char *host, const char *auth, const registry_creds *basic, body *bd,
    heads *h, long *status, const sendspec *sp, char next[2048])
{
	CURL *e;
	CURLcode rc;
	struct curl_slist *hl = NULL, *t;
	int64_t left = c->deadline - lm_now_ms();
	char ebuf[CURL_ERROR_SIZE] = "", w[600], *loc = NULL;
	int ret = LM_OK;

	memset(h, 0, sizeof *h);
	*status = 0;
	next[0] = '\0';
	if (left <= 0)
		return lm_err(c->err, LM_EFAIL, "%s did not answer within %ld ms", registry_who(w, c, host), c->timeout_ms);
	if ((e = curl_easy_init()) == NULL)
		return lm_err(c->err, LM_EFAIL, "registry %s: cannot start libcurl", c->registry);
	if ((t = curl_slist_append(hl, accept_types)) != NULL)
		hl = t;
	if (auth != NULL && (t = curl_slist_append(hl, auth)) != NULL)
		hl = t;
	if (sp != NULL && sp->ctype != NULL) {
		char ct[200];

		snprintf(ct, sizeof ct, "Content-Type: %s", sp->ctype);
		if ((t = curl_slist_append(hl, ct)) != NULL)
			hl = t;
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L); /* request_sp follows, hop by hop */
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)left);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "lume-metal/" LM_VERSION);
	if (basic != NULL) {
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERNAME, basic->user);
		curl_easy_setopt(e, CURLOPT_PASSWORD, basic->secret);
	}
	if (bd == NULL && (sp == NULL || sp->method == NULL)) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else {
		curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(e, CURLOPT_WRITEDATA, bd);
	}
	if (sp != NULL && sp->method != NULL) {
		if (strcmp(sp->method, "HEAD") == 0)
			curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
		else if (strcmp(sp->method, "GET") != 0) {
			curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)sp->uplen);
			curl_easy_setopt(e, CURLOPT_POSTFIELDS, sp->up ? (const char *)sp->up : "");
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, sp->method);
		}
	}
	rc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	if (rc == CURLE_OK && *status >= 300 && *status < 400 && curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &loc) ==
	    CURLE_OK && loc != NULL && lm_fmt(next, 2048, "%s", loc) != 0)
		ret = lm_err(c->err, LM_EFAIL, "%s redirected to a URL longer than 2047 bytes: refused", registry_who(w, c, host));
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		ret = lm_err(c->err, LM_EFAIL, "%s did not answer within %ld ms", registry_who(w, c, host), c->timeout_ms);
	else if (h->over)
		ret = lm_err(c->err, LM_EFAIL, "%s answered more than %d bytes of headers", registry_who(w, c, host),
		    REGISTRY_HEADERS_MAX);
	else if (bd != NULL && bd->over && bd->max == 0)
		ret = lm_err(c->err, LM_EFAIL, "registry %s answered a token larger than %d bytes", c->registry,
		    REGISTRY_BODY_MAX);
	else if (bd != NULL && bd->over)
		ret = lm_err(c->err, LM_EFAIL, "%s answered more than %zu bytes for %s: refused", registry_who(w, c, host),
		    bd->max, strstr(url, "/v2/") ? strstr(url, "/v2/") : url);
	else if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
		ret = lm_err(c->err, LM_EFAIL, "%s is unreachable: %s", registry_who(w, c, host), ebuf[0] ? ebuf : curl_easy_strerror(rc));
	else if (rc != CURLE_OK)
		ret = lm_err(c->err, LM_EFAIL, "%s: %s", registry_who(w, c, host), ebuf[0] ? ebuf : curl_easy_strerror(rc));
	curl_easy_cleanup(e);
	curl_slist_free_all(hl);
	return ret;
}

/* Whether url may be reached from the registry (on loopback or not): https anywhere; plain http
 * only from a loopback registry to a loopback host; nothing else. host gets url's HOST[:PORT]. */
static int
hop_ok(const char *url, int from_loopback, char host[300])
{
	CURLU *u = curl_url();
	char *scheme = NULL, *hn = NULL, *port = NULL;
	int ok = 0, loop = 0;

	host[0] = '\0';
	if (u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK && curl_url_get(u, CURLUPART_HOST, &hn, 0) == CURLUE_OK) {
		if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK)
			port = NULL;
		snprintf(host, 300, "%.250s%s%.8s", hn, port ? ":" : "", port ? port : "");
		ok = strcmp(scheme, "https") == 0 || (strcmp(scheme, "http") == 0 && from_loopback && registry_host_ok(host, &loop) &&
		    loop);
	}
	curl_free(scheme);
	curl_free(hn);
	curl_free(port);
	curl_url_cleanup(u);
	return ok;
}

/* One request: HEAD (body NULL) or GET into *bd, or what sp says. auth is a header line or NULL;
 * creds as Basic when basic is set. *status gets the HTTP status. With sp->follow (a blob's
 * storage), a 3xx answer's Location is followed, at most 3 times, each hop checked by hop_ok
 * and sent without the Authorization or the credentials; h->host then names who answered. */
static int
request_sp(ctx *c, const char *url, const char *auth, const registry_creds *basic, body *bd,
    heads *h, long *status, const sendspec *sp)
{
	char next[2048], here[2048], host[300] = "", to[300], w[600];
	int rc;

	for (int hop = 0;; hop++) {
		if ((rc = perform(c, hop ? here : url, host, hop ? NULL : auth, hop ? NULL : basic, bd, h, status, sp, next)) !=
		    LM_OK || sp == NULL || !sp->follow || next[0] == '\0')
			break;
		if (hop == 3)
			return lm_err(c->err, LM_EFAIL, "registry %s redirected more than 3 times (the last from %s): refused",
			    c->registry, host[0] ? host : c->registry);
		if (!hop_ok(next, c->loopback, to))
			return lm_err(c->err, LM_EFAIL, "%s redirected to %.200s: refused (a redirect is followed to https, or "
			    "to plain http only from a registry on loopback to a loopback address)", registry_who(w, c, host), next);
		memcpy(here, next, sizeof here);
		memcpy(host, to, sizeof host);
		if (bd != NULL) {
			lm_buf_free(&bd->b);
			bd->over = 0;
		}
	}
	snprintf(h->host, sizeof h->host, "%s", host);
	return rc;
}

static int
request(ctx *c, const char *url, const char *auth, const registry_creds *basic, body *bd, heads *h, long *status)
{
	return request_sp(c, url, auth, basic, bd, h, status, NULL);
}

/* True when url is https://..., or http:// to a loopback host from a registry on loopback. */
static int
realm_ok(const char *url, int from_loopback)
{
	char host[300];
	const char *p, *end;
	size_t n;
	int loop = 0;

	if (strncmp(url, "https://", 8) == 0)
		p = url + 8;
	else if (strncmp(url, "http://", 7) == 0)
		p = url + 7;
	else
		return 0;
	end = p + strcspn(p, "/?#");
	n = (size_t)(end - p);
	if (n == 0 || n >= sizeof host || memchr(p, '@', n) != NULL)
		return 0;
	memcpy(host, p, n);
	host[n] = '\0';
	for (const char *q = end; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return 0;
	if (!registry_host_ok(host, &loop))
		return 0;
	return url[4] == 's' || (loop && from_loopback);
}

/* The Bearer token flow for challenge ch: *token (caller wipes and frees) from the realm. */
static int
fetch_token(ctx *c, char **token, const char *ch, const char *repo, const char *actions, const registry_creds *creds)
{
	char realm[1024], service[256] = "", scope[512], url[4096];
	char *es = NULL, *esc = NULL;
	body bd = {{0}, 0, 0};
	heads h;
	long status;
	cJSON *doc = NULL;
	const cJSON *tok;
	int rc, pr;

	*token = NULL;
	if (challenge_param(realm, sizeof realm, ch, "realm") != 0 || !realm_ok(realm, c->loopback))
		return lm_err(c->err, LM_EFAIL, "registry %s answered a Bearer challenge without an https realm", c->registry);
	if (challenge_param(service, sizeof service, ch, "service") < 0)
		return lm_err(c->err, LM_EFAIL, "registry %s answered a malformed Bearer challenge", c->registry);
	if ((pr = challenge_param(scope, sizeof scope, ch, "scope")) < 0)
		return lm_err(c->err, LM_EFAIL, "registry %s answered a malformed Bearer challenge", c->registry);
	if (pr == 1 && lm_fmt(scope, sizeof scope, "repository:%s:%s", repo, actions) != 0)
		return lm_err(c->err, LM_EINPUT, "registry %s: repository name too long", c->registry);
	es = curl_easy_escape(NULL, service, 0);
	esc = curl_easy_escape(NULL, scope, 0);
	if (es == NULL || esc == NULL) {
		rc = lm_err(c->err, LM_EFAIL, "out of memory");
		goto done;
	}
	if (lm_fmt(url, sizeof url, "%s%sservice=%s&scope=%s", realm, strchr(realm, '?') ? "&" : "?", es, esc) != 0) {
		rc = lm_err(c->err, LM_EFAIL, "registry %s: token URL too long", c->registry);
		goto done;
	}
	if ((rc = request(c, url, NULL, creds, &bd, &h, &status)) != LM_OK)
		goto done;
	if (status == 401 || status == 403) {
		rc = creds ? lm_err(c->err, LM_EFAIL, "registry %s refused the credentials (%ld)", c->registry, status)
		           : lm_err(c->err, LM_EFAIL, "registry %s requires credentials (%ld): " NO_CREDS, c->registry,
		                    status);
		goto done;
	}
	if (status != 200) {
		rc = lm_err(c->err, LM_EFAIL, "registry %s: its token service answered HTTP %ld", c->registry, status);
		goto done;
	}
	doc = cJSON_ParseWithLength(bd.b.data ? bd.b.data : "", bd.b.len);
	tok = cJSON_GetObjectItemCaseSensitive(doc, "token");
	if (!cJSON_IsString(tok) || tok->valuestring[0] == '\0')
		tok = cJSON_GetObjectItemCaseSensitive(doc, "access_token");
	if (!cJSON_IsString(tok) || tok->valuestring[0] == '\0' || strlen(tok->valuestring) > 16384 ||
	    strpbrk(tok->valuestring, "\r\n") != NULL) {
		rc = lm_err(c->err, LM_EFAIL, "registry %s: its token service answered no token", c->registry);
		goto done;
	}
	if ((*token = strdup(tok->valuestring)) == NULL)
		rc = lm_err(c->err, LM_EFAIL, "out of memory");
done:
	if (doc != NULL) {
		tok = cJSON_GetObjectItemCaseSensitive(doc, "token");
		if (cJSON_IsString(tok))
			lm_wipe(tok->valuestring, strlen(tok->valuestring));
		tok = cJSON_GetObjectItemCaseSensitive(doc, "access_token");
		if (cJSON_IsString(tok))
			lm_wipe(tok->valuestring, strlen(tok->valuestring));
		cJSON_Delete(doc);
	}
	if (bd.b.data != NULL)
		lm_wipe(bd.b.data, bd.b.len);
	lm_buf_free(&bd.b);
	curl_free(es);
	curl_free(esc);
	return rc;
}

/* What a final HEAD answer means. */
static int
conclude(ctx *c, char *out, const heads *h, long status, const char *repo, const char *tag, int authed)
{
	if (status == 200) {
		if (!h->digest_seen)
			return lm_err(c->err, LM_EFAIL, "registry %s answered no Docker-Content-Digest for %s:%s", c->registry,
			    repo, tag);
		if (h->digest_bad)
			return lm_err(c->err, LM_EFAIL, "registry %s answered a Docker-Content-Digest that is not sha256: "
			    "and 64 lowercase hex digits", c->registry);
		memcpy(out, h->digest, REGISTRY_DIGEST_LEN + 1);
		return LM_OK;
	}
	if (status == 404)
		return lm_err(c->err, LM_EFAIL, "registry %s: no such tag %s:%s", c->registry, repo, tag);
	if (status == 401 || status == 403)
		return authed ? lm_err(c->err, LM_EFAIL, "registry %s refused the credentials (%ld)", c->registry, status)
		              : lm_err(c->err, LM_EFAIL, "registry %s requires credentials (%ld): " NO_CREDS,
		                       c->registry, status);
	return lm_err(c->err, LM_EFAIL, "registry %s answered HTTP %ld for %s:%s", c->registry, status, repo, tag);
}

int
registry_manifest_digest_timeout(char out[REGISTRY_DIGEST_LEN + 1], const char *registry, const char *repo,
    const char *tag, const registry_creds *creds, long timeout_ms, char *err)
{
	ctx c = {registry, timeout_ms, lm_now_ms() + timeout_ms, err, 0};
	char url[1024], *token = NULL, *auth = NULL;
	heads h;
	long status;
	int loopback = 0, rc;
	size_t al;

	out[0] = '\0';
	if (creds != NULL && (creds->user == NULL || creds->secret == NULL || !*creds->user || !*creds->secret))
		creds = NULL;
	if ((rc = registry_name_check(registry, repo, &loopback, err)) != LM_OK)
		return rc;
	c.loopback = loopback;
	if (tag == NULL || !registry_tag_ok(tag))
		return lm_err(err, LM_EINPUT, "registry %s: not a tag ([A-Za-z0-9_][A-Za-z0-9._-]*, at most " LM_STR(REGISTRY_TAG_MAX) ")", registry);
	if (timeout_ms <= 0)
		return lm_err(err, LM_EINPUT, "registry %s: the timeout must be positive", registry);
	if ((rc = curl_ready(err)) != LM_OK)
		return rc;
	if (lm_fmt(url, sizeof url, "%s://%s/v2/%s/manifests/%s", loopback ? "http" : "https", registry, repo, tag) != 0)
		return lm_err(err, LM_EINPUT, "registry %s: URL too long", registry);
	if ((rc = request(&c, url, NULL, NULL, NULL, &h, &status)) != LM_OK)
		return rc;
	if (status != 401)
		return conclude(&c, out, &h, status, repo, tag, 0);
	if (h.challenge_over)
		return lm_err(err, LM_EFAIL, "registry %s answered a WWW-Authenticate longer than %zu bytes", registry,
		    sizeof h.challenge - 1);
	if (h.challenge_bearer) {
		char ch[sizeof h.challenge];

		memcpy(ch, h.challenge, sizeof ch);
		if ((rc = fetch_token(&c, &token, ch, repo, "pull", creds)) != LM_OK)
			return rc;
		al = strlen(token) + 32;
		if ((auth = malloc(al)) == NULL) {
			wipe_free(token);
			return lm_err(err, LM_EFAIL, "out of memory");
		}
		snprintf(auth, al, "Authorization: Bearer %s", token);
		wipe_free(token);
		rc = request(&c, url, auth, NULL, NULL, &h, &status);
		wipe_free(auth);
		return rc != LM_OK ? rc : conclude(&c, out, &h, status, repo, tag, creds != NULL);
	}
	if (strncasecmp(h.challenge, "Basic", 5) == 0 && (h.challenge[5] == '\0' || h.challenge[5] == ' ')) {
		if (creds == NULL)
			return conclude(&c, out, &h, status, repo, tag, 0);
		if ((rc = request(&c, url, NULL, creds, NULL, &h, &status)) != LM_OK)
			return rc;
		return conclude(&c, out, &h, status, repo, tag, 1);
	}
	return lm_err(err, LM_EFAIL, "registry %s answered 401 without a Bearer or Basic challenge", registry);
}

int
registry_manifest_digest(char out[REGISTRY_DIGEST_LEN + 1], const char *registry, const char *repo, const char *tag,
    const registry_creds *creds, char *err)
{
	return registry_manifest_digest_timeout(out, registry, repo, tag, creds, REGISTRY_TIMEOUT_MS, err);
}


int
registry_client_new(registry_client **out, const char *registry, const char *repo, const registry_creds *creds,
    int push, long timeout_ms, char *err)
{
	registry_client *c;
	int loopback = 0, rc;

	*out = NULL;
	if ((rc = registry_name_check(registry, repo, &loopback, err)) != LM_OK)
		return rc;
	if (timeout_ms <= 0)
		return lm_err(err, LM_EINPUT, "registry %s: the timeout must be positive", registry);
	if ((rc = curl_ready(err)) != LM_OK)
		return rc;
	if ((c = calloc(1, sizeof *c)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	snprintf(c->registry, sizeof c->registry, "%s", registry);
	snprintf(c->repo, sizeof c->repo, "%s", repo);
	snprintf(c->base, sizeof c->base, "%s://%s", loopback ? "http" : "https", registry);
	if (creds != NULL && creds->user != NULL && creds->secret != NULL && *creds->user && *creds->secret)
		c->creds = creds;
	c->push = push;
	c->loopback = loopback;
	c->c = (ctx){c->registry, timeout_ms, lm_now_ms() + timeout_ms, NULL, loopback};
	*out = c;
	return LM_OK;
}

void
registry_client_free(registry_client *c)
{
	if (c == NULL)
		return;
	wipe_free(c->auth);
	free(c);
}

const char *
registry_client_name(const registry_client *c)
{
	return c->registry;
}

const char *
registry_client_repo(const registry_client *c)
{
	return c->repo;
}

int
registry_client_requests(const registry_client *c)
{
	return c ? c->requests : 0;
}

/* One call of path ("/v2/...") with the client's authorization; a 401 is answered once from its
 * challenge and the call made again. */
int
registry_call(registry_client *c, const char *path, body *bd, heads *h, long *status, const sendspec *sp, char *err)
{
	char url[4096], *token = NULL;
	int rc;

	c->c.err = err;
	if (lm_fmt(url, sizeof url, "%s%s", c->base, path) != 0)
		return lm_err(err, LM_EINPUT, "registry %s: URL too long", c->registry);
	for (int attempt = 0;; attempt++) {
		if (bd != NULL) {
			lm_buf_free(&bd->b);
			bd->over = 0;
		}
		c->requests++;
		rc = request_sp(&c->c, url, c->auth, c->basic ? c->creds : NULL, bd, h, status, sp);
		if (rc == LM_OK && h->host[0] != '\0' && *status != 200) { /* a redirect's answer: no challenge to answer */
			char w[600];

			return lm_err(err, LM_EFAIL, "%s answered HTTP %ld for %s", registry_who(w, &c->c, h->host), *status, path);
		}
		if (rc != LM_OK || *status != 401 || attempt > 0)
			break;
		if (h->challenge_over)
			return lm_err(err, LM_EFAIL, "registry %s answered a WWW-Authenticate longer than %zu bytes", c->registry,
			    sizeof h->challenge - 1);
		if (h->challenge_bearer) {
			char ch[sizeof h->challenge];
			size_t al;

			memcpy(ch, h->challenge, sizeof ch);
			c->requests++;
			if ((rc = fetch_token(&c->c, &token, ch, c->repo, c->push ? "pull,push" : "pull", c->creds)) != LM_OK)
				return rc;
			wipe_free(c->auth);
			al = strlen(token) + 32;
			if ((c->auth = malloc(al)) == NULL) {
				wipe_free(token);
				return lm_err(err, LM_EFAIL, "out of memory");
			}
			snprintf(c->auth, al, "Authorization: Bearer %s", token);
			wipe_free(token);
			token = NULL;
		} else if (strncasecmp(h->challenge, "Basic", 5) == 0 && c->creds != NULL && !c->basic) {
			c->basic = 1;
		} else
			break;
	}
	if (rc == LM_OK && *status == 401)
		return c->creds != NULL && (c->auth != NULL || c->basic)
		    ? lm_err(err, LM_EFAIL, "registry %s refused the credentials (401)", c->registry)
		    : lm_err(err, LM_EFAIL, "registry %s requires credentials (401): " NO_CREDS, c->registry);
	if (rc == LM_OK && *status == 403)
		return lm_err(err, LM_EFAIL, "registry %s refused the credentials for %s (403)%s", c->registry, c->repo,
		    c->push ? ": they may not push there" : "");
	if (rc == LM_OK && *status >= 300 && *status < 400)
		return lm_err(err, LM_EFAIL, "registry %s answered a redirect (HTTP %ld) for %s: redirects are not followed",
		    c->registry, *status, path);
	return rc;
}

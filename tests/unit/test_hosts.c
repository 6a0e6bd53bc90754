/* hosts_load: both forms, the errors that name the line or entry, and the work on a large file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/hosts.h"
#include "unit.h"
#include "core/util.h"

static char dir[] = "/tmp/lm-unit-hosts.XXXXXX";

/* Writes text to dir/name; returns the path (static). */
static const char *
file(const char *name, const char *text)
{
	static char path[1024];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (lm_write_file_atomic(path, text, strlen(text), 0600, NULL) != LM_OK)
		printf("not ok - setup %s\n", path);
	return path;
}

int
main(void)
{
	char err[LM_ERRLEN] = "", cmd[2048];
	guest_target **v = NULL;
	size_t n = 0;
	lm_buf big = {0};
	int64_t t0;
	int rc;

	if (mkdtemp(dir) == NULL)
		return 2;
	rc = hosts_load(&v, &n, file("a.txt", "# fleet\nadmin@mac-1:2222\n\n  mac-2  # default user\n"), "lume", err);
	UNIT_OK(rc == LM_OK && n == 2 && strcmp(v[0]->name, "mac-1") == 0 && v[0]->port == 2222 &&
	    strcmp(v[1]->user, "lume") == 0, "text: two hosts, comments and blanks skipped %s", rc ? err : "");
	hosts_free(v, n);
	rc = hosts_load(&v, &n, file("b.json", "{\"hosts\":[{\"address\":\"m1\",\"name\":\"one\",\"port\":22},"
	    "{\"address\":\"m2\",\"user\":\"u\"}]}"), "lume", err);
	UNIT_OK(rc == LM_OK && n == 2 && strcmp(v[0]->name, "one") == 0 && strcmp(v[1]->user, "u") == 0,
	    "JSON: two hosts %s", rc ? err : "");
	hosts_free(v, n);
	rc = hosts_load(&v, &n, file("n.json", "{\"hosts\":[{\"address\":\"m1\"},{\"address\":\"m2\",\"user\":\"u\"}]}"),
	    NULL, err);
	UNIT_OK(rc == LM_OK && n == 2 && strcmp(v[0]->user, "lume") == 0 && !v[0]->user_given && v[1]->user_given,
	    "JSON, no -u (NULL): the default user, not given, so the OpenSSH User may apply %s", rc ? err : "");
	hosts_free(v, n);
	rc = hosts_load(&v, &n, file("n.txt", "m1\nx@m2\n"), NULL, err);
	UNIT_OK(rc == LM_OK && n == 2 && strcmp(v[0]->user, "lume") == 0 && !v[0]->user_given && v[1]->user_given,
	    "text, no -u: the same %s", rc ? err : "");
	hosts_free(v, n);
	rc = hosts_load(&v, &n, file("l.txt", "m1\n"), "lume", err);
	UNIT_OK(rc == LM_OK && n == 1 && v[0]->user_given, "an explicit -u lume is given %s", rc ? err : "");
	hosts_free(v, n);

	rc = hosts_load(&v, &n, file("d.txt", "a@m1\nb@m2\nc@m3\nd@m2\ne@m1\n"), "lume", err);
	UNIT_OK(rc == LM_EINPUT && v == NULL && n == 0, "a host listed twice is refused");
	UNIT_HAS(err, "d.txt: line 4: host m2 is listed twice", "... naming the first line that repeats one");
	rc = hosts_load(&v, &n, file("e.txt", "m1\nm2\nm1\nnot a host\n"), "lume", err);
	UNIT_OK(rc == LM_EINPUT, "a repeat before a bad line");
	UNIT_HAS(err, "e.txt: line 3: host m1 is listed twice", "... is the error reported");
	rc = hosts_load(&v, &n, file("f.txt", "m1\nnot a host\nm1\n"), "lume", err);
	UNIT_OK(rc == LM_EINPUT, "a bad line before a repeat");
	UNIT_HAS(err, "f.txt: line 2: \"not a host\" is not user@host[:port]", "... is the error reported");
	rc = hosts_load(&v, &n, file("g.json", "{\"hosts\":[{\"address\":\"m1\"},{\"address\":\"m2\",\"name\":\"m1\"}]}"),
	    "lume", err);
	UNIT_OK(rc == LM_EINPUT, "JSON: a label given twice is refused");
	UNIT_HAS(err, "g.json: hosts[1]: host m1 is listed twice", "... naming the entry");
	rc = hosts_load(&v, &n, file("h.txt", "# nothing\n\n"), "lume", err);
	UNIT_OK(rc == LM_EINPUT, "a file with no hosts is refused");
	UNIT_HAS(err, "h.txt: lists no hosts", "... saying so");

	/* 100000 hosts: the duplicate check sorts once (it compared each line with every earlier
	 * one: 19.7 s). A generous bound, the figure printed. */
	for (int i = 0; i < 100000; i++)
		lm_buf_addf(&big, "admin@mac-%06d.lan:22\n", i);
	t0 = lm_now_ms();
	rc = hosts_load(&v, &n, file("big.txt", big.data), "lume", err);
	t0 = lm_now_ms() - t0;
	UNIT_OK(rc == LM_OK && n == 100000 && strcmp(v[99999]->name, "mac-099999.lan") == 0 && t0 < 60000,
	    "100000 hosts load in %lld ms (generous bound 60 s) %s", (long long)t0, rc ? err : "");
	hosts_free(v, n);
	lm_buf_addf(&big, "admin@mac-000007.lan\n");
	rc = hosts_load(&v, &n, file("big2.txt", big.data), "lume", err);
	UNIT_OK(rc == LM_EINPUT, "... and a repeat on line 100001 is found");
	UNIT_HAS(err, "line 100001: host mac-000007.lan is listed twice", "... naming it");
	lm_buf_free(&big);

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 2;
	UNIT_DONE();
}

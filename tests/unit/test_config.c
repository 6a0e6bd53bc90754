/* test_config: the config file's KEY=VALUE lines, comments, ~/ in paths, and every bad line
 * named by file and line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/config.h"
#include "unit.h"
#include "core/util.h"

static char dir[] = "/tmp/lm-test-config.XXXXXX", file[256];

/* Writes text to the test's file and loads it into *c; the code returned. */
static int
load(config **c, const char *text, char *err)
{
	FILE *f = fopen(file, "w");

	if (f == NULL)
		return -99;
	fputs(text, f);
	fclose(f);
	return config_load(c, file, err);
}

/* text must be refused with a message holding want. */
static void
bad(const char *text, const char *want, const char *what)
{
	config *c = (config *)1;
	char err[LM_ERRLEN] = "";
	int rc = load(&c, text, err);

	UNIT_OK(rc == LM_EINPUT && c == NULL, "%s: refused (LM_EINPUT)", what);
	UNIT_HAS(err, want, "... %s", want);
}

int
main(void)
{
	config *c = NULL;
	char err[LM_ERRLEN] = "", want[512], path[512];
	int line = 0;

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(file, sizeof file, "%s/config", dir);
	setenv("HOME", "/home/u", 1);

	UNIT_OK(config_load(&c, file, err) == LM_OK && c != NULL && !config_exists(c), "a missing file is an empty configuration");
	UNIT_OK(config_get(c, "user", NULL) == NULL, "... that sets nothing");
	config_free(c);

	UNIT_OK(load(&c, "# defaults\n\n  user = admin  \nidentity=~/.ssh/fleet\r\nparallel=8\n\t# indented comment\n"
	    "state=/srv/lm\nregistry=ghcr.io\norganization=acme\nknown-hosts=~/kh\npassword-file=/p w\nlume=~/bin/lume",
	    err) == LM_OK && c != NULL && config_exists(c), "a file of KEY=VALUE lines, comments and blank lines loads");
	UNIT_OK(strcmp(config_get(c, "user", &line), "admin") == 0 && line == 3, "blanks around key and value are dropped; line 3");
	UNIT_OK(strcmp(config_get(c, "identity", NULL), "/home/u/.ssh/fleet") == 0, "~/ in a path is $HOME/; CR LF ends a line");
	UNIT_OK(strcmp(config_get(c, "known-hosts", NULL), "/home/u/kh") == 0 &&
	    strcmp(config_get(c, "lume", &line), "/home/u/bin/lume") == 0 && line == 12, "... for every path key; the last line without a newline");
	UNIT_OK(strcmp(config_get(c, "password-file", NULL), "/p w") == 0, "a blank inside a value stays");
	UNIT_OK(strcmp(config_get(c, "parallel", NULL), "8") == 0 && strcmp(config_get(c, "organization", NULL), "acme") == 0,
	    "parallel and organization");
	UNIT_OK(config_get(c, "nope", NULL) == NULL && config_get(NULL, "user", NULL) == NULL, "unknown key or no config: NULL");
	UNIT_OK(strcmp(config_path(c), file) == 0, "config_path is the file read");
	config_free(c);
	/* docs/verdicts.md's own setup line, and each file of trusted-key's list. */
	UNIT_OK(load(&c, "signing-key=~/.config/lume-metal/verdict-key\ntrusted-key=~/a.pub, ~/b.pub,/etc/c.pub\n"
	    "registry=~/not-a-path\n", err) == LM_OK, "signing-key and trusted-key load (%s)", err);
	UNIT_OK(strcmp(config_get(c, "signing-key", NULL), "/home/u/.config/lume-metal/verdict-key") == 0,
	    "~/ in signing-key is $HOME/ (%s)", config_get(c, "signing-key", NULL));
	UNIT_OK(strcmp(config_get(c, "trusted-key", NULL), "/home/u/a.pub, /home/u/b.pub,/etc/c.pub") == 0,
	    "... and in each file of trusted-key's list (%s)", config_get(c, "trusted-key", NULL));
	UNIT_OK(strcmp(config_get(c, "registry", NULL), "~/not-a-path") == 0, "... but not in a key that is no path");
	config_free(c);

	snprintf(want, sizeof want, "%s:2: unknown key 'usr'; did you mean user?", file);
	bad("user=a\nusr=b\n", want, "a misspelt key");
	snprintf(want, sizeof want, "%s:1: unknown key 'paralel'; did you mean parallel?", file);
	bad("paralel=4\n", want, "a key one letter short");
	snprintf(want, sizeof want, "%s:1: unknown key 'colour' (keys: user,", file);
	bad("colour=blue\n", want, "a key near none: the list");
	snprintf(want, sizeof want, "%s:3: no '=': want KEY=VALUE", file);
	bad("# c\n\nuser admin\n", want, "a line without =");
	snprintf(want, sizeof want, "%s:1: parallel: 'lots' is not a whole number from 1 to 1024", file);
	bad("parallel=lots\n", want, "a bad number");
	bad("parallel=0\n", "not a whole number from 1 to 1024", "parallel 0");
	bad("parallel=99999999999999999999\n", "not a whole number from 1 to 1024", "a parallel past long's range");
	UNIT_OK(load(&c, "confirm-timeout=0300\nconfirm-settle=0\n", err) == LM_OK &&
	    strcmp(config_get(c, "confirm-timeout", NULL), "0300") == 0 && strcmp(config_get(c, "confirm-settle", NULL), "0") == 0,
	    "deploy's confirm-timeout and confirm-settle");
	config_free(c);
	snprintf(want, sizeof want, "%s:1: confirm-timeout: '0' is not a whole number of seconds from 1 to 3600", file);
	bad("confirm-timeout=0\n", want, "a confirm-timeout of 0");
	bad("confirm-settle=601\n", ":1: confirm-settle: '601' is not a whole number of seconds from 0 to 600",
	    "a confirm-settle past 600");
	snprintf(want, sizeof want, "%s:2: user is set already, on line 1", file);
	bad("user=a\nuser=b\n", want, "a key twice");
	bad("user=\n", ":1: user: an empty value", "an empty value");
	bad("user=a\033[2Jb\n", ":1: user: a control character in the value", "an escape sequence in a value");
	bad("=x\n", ":1: no key before '='", "no key");

	unlink(file);
	mkdir(file, 0700);
	{
		char e2[LM_ERRLEN] = "";

		c = (config *)1;
		UNIT_OK(config_load(&c, file, e2) == LM_EINPUT && c == NULL, "a directory where the file is expected is refused");
		UNIT_HAS(e2, "not a regular file", "... not a regular file");
	}
	rmdir(file);
	mkfifo(file, 0600);
	{
		char e2[LM_ERRLEN] = "";

		UNIT_OK(config_load(&c, file, e2) == LM_EINPUT, "a FIFO is refused without waiting on it");
	}
	unlink(file);

	setenv("XDG_CONFIG_HOME", "/x/cfg", 1);
	UNIT_OK(config_default_path(path, sizeof path) == 0 && strcmp(path, "/x/cfg/lume-metal/config") == 0,
	    "$XDG_CONFIG_HOME/lume-metal/config");
	setenv("XDG_CONFIG_HOME", "relative", 1);
	UNIT_OK(config_default_path(path, sizeof path) == 0 && strcmp(path, "/home/u/.config/lume-metal/config") == 0,
	    "a relative XDG_CONFIG_HOME is ignored, as the XDG spec says: ~/.config/lume-metal/config");
	unsetenv("XDG_CONFIG_HOME");
	UNIT_OK(config_default_path(path, sizeof path) == 0 && strcmp(path, "/home/u/.config/lume-metal/config") == 0,
	    "no XDG_CONFIG_HOME: ~/.config/lume-metal/config");
	rmdir(dir);
	UNIT_DONE();
}

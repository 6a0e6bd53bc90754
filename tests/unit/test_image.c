/* image: `lume config storage list` parsing, the .manifest-digest path and its content, and the
 * local reader against the simulated lume (tests/lume-sim/) with VM folders on disk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/image.h"
#include "unit.h"
#include "core/util.h"

static const char *lume = LM_DATADIR "/tests/lume-sim/lume";
static const char D1[] = "sha256:ed1783e8aa0e7c1f1b7e4a1f0e9d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d";

static int
parse(image_location *locs, size_t max, size_t *n, const char *text, char *err)
{
	return image_storage_parse(locs, max, n, text, strlen(text), err);
}

static void
write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL || fwrite(data, 1, len, f) != len)
		printf("not ok - setup %s\n", path);
	if (f != NULL)
		fclose(f);
}

static void
storage_tests(void)
{
	image_location l[IMAGE_LOCATIONS_MAX];
	const image_location *f;
	char err[LM_ERRLEN] = "", big[IMAGE_STORAGE_MAX + 64], line[2048];
	size_t n = 99;
	int rc;

	rc = parse(l, IMAGE_LOCATIONS_MAX, &n, "VM Storage Locations:\n  - fast: /Volumes/ssd/lume\n  - home: ~/.lume (default)\n", err);
	UNIT_OK(rc == LM_OK && n == 2, "Lume's listing gives two locations %s", err);
	UNIT_OK(strcmp(l[0].name, "fast") == 0 && strcmp(l[0].path, "/Volumes/ssd/lume") == 0 && !l[0].is_default,
	    "... fast at its path, not the default");
	UNIT_OK(strcmp(l[1].name, "home") == 0 && strcmp(l[1].path, "~/.lume") == 0 && l[1].is_default,
	    "... home at ~/.lume, the default (the mark is not part of the path)");
	f = image_storage_find(l, n, NULL);
	UNIT_OK(f == &l[1], "the default location is found without a name");
	UNIT_OK(image_storage_find(l, n, "fast") == &l[0] && image_storage_find(l, n, "slow") == NULL,
	    "a location is found by name, an unknown one is not");

	rc = parse(l, IMAGE_LOCATIONS_MAX, &n, "[2026-08-09T12:00:00Z] INFO: Cleaned up stale session file\n\n"
	    "VM Storage Locations:\r\n  - home: ~/.lume (default)\r\n[2026-08-09T12:00:01Z] INFO: done\n", err);
	UNIT_OK(rc == LM_OK && n == 1 && strcmp(l[0].path, "~/.lume") == 0, "log lines, blank lines and CRLF are tolerated %s", err);
	rc = parse(l, IMAGE_LOCATIONS_MAX, &n, "VM Storage Locations:\n  - home: ~ (default)\n  - a_b-9: /x/y/ (default)\n", err);
	UNIT_OK(rc == LM_EINPUT, "two defaults are refused");
	UNIT_HAS(err, "more than one default", "... saying so");
	rc = parse(l, IMAGE_LOCATIONS_MAX, &n, "VM Storage Locations:\n  - home: ~\n", err);
	UNIT_OK(rc == LM_OK && n == 1 && strcmp(l[0].path, "~") == 0 && image_storage_find(l, n, NULL) == NULL,
	    "a bare ~ is a path; a listing without a default has no default location");

	rc = parse(l, IMAGE_LOCATIONS_MAX, &n, "No VM storage locations configured\n", err);
	UNIT_OK(rc == LM_EFAIL && n == 0, "no locations configured is a failure, not malformed input");
	rc = parse(l, IMAGE_LOCATIONS_MAX, &n, "  - home: ~/.lume (default)\n", err);
	UNIT_OK(rc == LM_EINPUT, "entries without the header are refused");
	UNIT_HAS(err, "line 1 is not \"VM Storage Locations:\"", "... naming the line");
	rc = parse(l, IMAGE_LOCATIONS_MAX, &n, "", err);
	UNIT_OK(rc == LM_EINPUT, "empty output is refused");

	{
		static const char *bad[] = {
			"- home: ~/.lume",             /* no indent */
			"  - home ~/.lume",            /* no colon */
			"  - ho me: /x",               /* space in the name */
			"  - a/b: /x",                 /* slash in the name */
			"  - : /x",                    /* empty name */
			"  - home: lume",              /* relative path */
			"  - home: ~root/lume",        /* ~user */
			"  - home: /a/../etc",         /* .. component */
			"  - home: /a/..",             /* .. at the end */
			"  - home: /a\033[31m/b",      /* an escape sequence */
			"  - home: /a\tb",             /* a tab */
			"  - home: ",                  /* empty path */
			"  - home: (default)",         /* only the mark */
			"  - home:/x",                 /* no space after the colon */
		};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			snprintf(line, sizeof line, "VM Storage Locations:\n%s\n", bad[i]);
			rc = parse(l, IMAGE_LOCATIONS_MAX, &n, line, err);
			UNIT_OK(rc == LM_EINPUT, "malformed entry %zu refused", i);
		}
		UNIT_HAS(err, "line 2 is not", "... naming its line");
	}
	rc = parse(l, IMAGE_LOCATIONS_MAX, &n, "VM Storage Locations:\n  - a..b: /a/..b/c..\n", err);
	UNIT_OK(rc == LM_EINPUT, "dots in a location name are refused (Lume's rule)");
	rc = parse(l, IMAGE_LOCATIONS_MAX, &n, "VM Storage Locations:\n  - ab: /a/..b/c../...\n", err);
	UNIT_OK(rc == LM_OK && strcmp(l[0].path, "/a/..b/c../...") == 0, "names that merely hold dots are paths %s", err);
	rc = parse(l, IMAGE_LOCATIONS_MAX, &n, "VM Storage Locations:\n  - home: /a\n  - home: /b\n", err);
	UNIT_OK(rc == LM_EINPUT, "a name listed twice is refused");
	UNIT_HAS(err, "home is listed twice", "... naming it");
	rc = parse(l, 2, &n, "VM Storage Locations:\n  - a: /a\n  - b: /b\n  - c: /c\n", err);
	UNIT_OK(rc == LM_EINPUT && n == 2, "more locations than the caller's room are refused");
	{
		char text[IMAGE_LOCATIONS_MAX * 32 + 64];
		size_t o = (size_t)snprintf(text, sizeof text, "VM Storage Locations:\n");

		for (int i = 0; i <= IMAGE_LOCATIONS_MAX; i++)
			o += (size_t)snprintf(text + o, sizeof text - o, "  - l%d: /l%d\n", i, i);
		rc = parse(l, 1000, &n, text, err);
		UNIT_OK(rc == LM_EINPUT && n == IMAGE_LOCATIONS_MAX, "at most %d locations whatever the caller asks",
		    IMAGE_LOCATIONS_MAX);
	}
	memset(line, 'n', IMAGE_NAME_MAX + 1);
	snprintf(line + IMAGE_NAME_MAX + 1, sizeof line - IMAGE_NAME_MAX - 1, ": /x\n");
	{
		char text[4096];

		snprintf(text, sizeof text, "VM Storage Locations:\n  - %s", line);
		rc = parse(l, IMAGE_LOCATIONS_MAX, &n, text, err);
		UNIT_OK(rc == LM_EINPUT, "a %d-byte name is refused", IMAGE_NAME_MAX + 1);
		memset(line, 'p', IMAGE_PATH_MAX);
		line[0] = '/';
		line[IMAGE_PATH_MAX] = '\0';
		snprintf(text, sizeof text, "VM Storage Locations:\n  - a: %s\n", line);
		rc = parse(l, IMAGE_LOCATIONS_MAX, &n, text, err);
		UNIT_OK(rc == LM_OK && strlen(l[0].path) == IMAGE_PATH_MAX, "a %d-byte path fits", IMAGE_PATH_MAX);
		snprintf(text, sizeof text, "VM Storage Locations:\n  - a: %sp\n", line);
		rc = parse(l, IMAGE_LOCATIONS_MAX, &n, text, err);
		UNIT_OK(rc == LM_EINPUT, "a %d-byte path is refused", IMAGE_PATH_MAX + 1);
	}
	memset(big, '\n', sizeof big);
	memcpy(big, "VM Storage Locations:\n", 22);
	rc = image_storage_parse(l, IMAGE_LOCATIONS_MAX, &n, big, sizeof big, err);
	UNIT_OK(rc == LM_EINPUT, "output longer than %d bytes is refused", IMAGE_STORAGE_MAX);
	rc = image_storage_parse(l, IMAGE_LOCATIONS_MAX, &n, "VM Storage Locations:\n  - a: /a\0b\n", 32, err);
	UNIT_OK(rc == LM_EINPUT, "a NUL byte is refused");
}

static void
path_tests(void)
{
	char out[2048], err[LM_ERRLEN] = "", name[IMAGE_NAME_MAX + 2];
	int rc;

	rc = image_digest_path(out, sizeof out, "~/.lume", "/Users/me", "tahoe-1", err);
	UNIT_OK(rc == LM_OK && strcmp(out, "/Users/me/.lume/tahoe-1/.manifest-digest") == 0, "~/.lume expands against HOME: %s", out);
	rc = image_digest_path(out, sizeof out, "~", "/Users/me/", "a.b_c", err);
	UNIT_OK(rc == LM_OK && strcmp(out, "/Users/me/a.b_c/.manifest-digest") == 0, "~ alone, HOME with a slash: %s", out);
	rc = image_digest_path(out, sizeof out, "/Volumes/ssd/lume//", "/ignored", "vm", err);
	UNIT_OK(rc == LM_OK && strcmp(out, "/Volumes/ssd/lume/vm/.manifest-digest") == 0, "trailing slashes go: %s", out);
	rc = image_digest_path(out, sizeof out, "/", NULL, "vm", err);
	UNIT_OK(rc == LM_OK && strcmp(out, "/vm/.manifest-digest") == 0, "the root location: %s", out);
	rc = image_digest_path(out, sizeof out, "~/", "/", "vm", err);
	UNIT_OK(rc == LM_OK && strcmp(out, "/vm/.manifest-digest") == 0, "HOME / : %s", out);
	{
		static const char *bad[] = {"", ".", "..", "a/b", "-x", ".hidden", "a b", "t\xc3\xa4", "a\n", "../x"};

		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			rc = image_digest_path(out, sizeof out, "~/.lume", "/Users/me", bad[i], err);
			UNIT_OK(rc == LM_EINPUT, "VM name %zu refused", i);
		}
		UNIT_HAS(err, "not a VM name", "... saying so");
	}
	memset(name, 'v', sizeof name);
	name[IMAGE_NAME_MAX] = '\0';
	UNIT_OK(image_vm_name_ok(name), "a %d-byte VM name is accepted", IMAGE_NAME_MAX);
	name[IMAGE_NAME_MAX] = 'v';
	name[IMAGE_NAME_MAX + 1] = '\0';
	UNIT_OK(!image_vm_name_ok(name) && !image_vm_name_ok(NULL), "a longer one, and NULL, are not");
	rc = image_digest_path(out, sizeof out, "~/.lume", NULL, "vm", err);
	UNIT_OK(rc == LM_EINPUT, "~ without a HOME is refused");
	rc = image_digest_path(out, sizeof out, "~/.lume", "relative/home", "vm", err);
	UNIT_OK(rc == LM_EINPUT, "~ with a relative HOME is refused");
	rc = image_digest_path(out, sizeof out, "~/.lume", "/home/../etc", "vm", err);
	UNIT_OK(rc == LM_EINPUT, "~ with a HOME holding .. is refused");
	rc = image_digest_path(out, sizeof out, "~root/.lume", "/h", "vm", err);
	UNIT_OK(rc == LM_EINPUT, "~user is refused");
	rc = image_digest_path(out, sizeof out, "lume", "/h", "vm", err);
	UNIT_OK(rc == LM_EINPUT, "a relative location is refused");
	rc = image_digest_path(out, sizeof out, "/a/../etc", "/h", "vm", err);
	UNIT_OK(rc == LM_EINPUT, "a location holding .. is refused");
	UNIT_HAS(err, "VM vm:", "... naming the VM");
	rc = image_digest_path(out, 20, "/Volumes/ssd/lume", "/h", "vm", err);
	UNIT_OK(rc == LM_EINPUT, "a path longer than the buffer is refused, not cut");
}

static void
digest_tests(void)
{
	char out[IMAGE_DIGEST_LEN + 1], err[LM_ERRLEN] = "", t[160];
	int rc;

	rc = image_digest_parse(out, D1, strlen(D1), err);
	UNIT_OK(rc == LM_OK && strcmp(out, D1) == 0, "a digest as Lume writes it (no newline)");
	snprintf(t, sizeof t, "%s\n", D1);
	rc = image_digest_parse(out, t, strlen(t), err);
	UNIT_OK(rc == LM_OK && strcmp(out, D1) == 0, "one trailing newline is allowed and dropped");
	{
		struct { const char *what, *text; } bad[] = {
			{"two newlines", "%s\n\n"}, {"CRLF", "%s\r\n"}, {"a leading space", " %s"}, {"trailing text", "%sx"},
			{"a trailing space", "%s "},
		};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			snprintf(t, sizeof t, bad[i].text, D1);
			rc = image_digest_parse(out, t, strlen(t), err);
			UNIT_OK(rc == LM_EINPUT && out[0] == '\0', "%s is refused", bad[i].what);
		}
	}
	snprintf(t, sizeof t, "%s", D1);
	t[10] = 'A';
	UNIT_OK(image_digest_parse(out, t, strlen(t), err) == LM_EINPUT, "uppercase hex is refused");
	t[10] = 'g';
	UNIT_OK(image_digest_parse(out, t, strlen(t), err) == LM_EINPUT, "a non-hex digit is refused");
	UNIT_OK(image_digest_parse(out, D1, strlen(D1) - 1, err) == LM_EINPUT, "63 hex digits are refused");
	snprintf(t, sizeof t, "%s0", D1);
	UNIT_OK(image_digest_parse(out, t, strlen(t), err) == LM_EINPUT, "65 hex digits are refused");
	snprintf(t, sizeof t, "sha512:%s", D1 + 7);
	UNIT_OK(image_digest_parse(out, t, strlen(t), err) == LM_EINPUT, "another algorithm is refused");
	snprintf(t, sizeof t, "%s", D1);
	t[20] = '\0';
	UNIT_OK(image_digest_parse(out, t, IMAGE_DIGEST_LEN, err) == LM_EINPUT, "a NUL inside is refused");
	UNIT_OK(image_digest_parse(out, "", 0, err) == LM_EINPUT, "an empty file is refused");
	UNIT_HAS(err, "not a manifest digest", "... saying what it wants");
}

static void
local_tests(void)
{
	char dir[] = "/tmp/lm-unit-image.XXXXXX", p[1024], cmd[4096], out[IMAGE_DIGEST_LEN + 1], err[LM_ERRLEN] = "";
	int rc;

	if (mkdtemp(dir) == NULL)
		return;
	snprintf(p, sizeof p, "%s/home", dir);
	setenv("HOME", p, 1);
	snprintf(p, sizeof p, "%s/sim", dir);
	setenv("LUME_SIM_DIR", p, 1);
	unsetenv("XDG_CONFIG_HOME");
	snprintf(cmd, sizeof cmd, "mkdir -p %s/home %s/sim %s/ssd && sh " LM_DATADIR "/tests/lume-sim/vm.sh %s/sim pulled stopped null null "
	    "--folder %s/home/.lume --disk-kib 4 && sh " LM_DATADIR "/tests/lume-sim/vm.sh %s/sim created stopped null null "
	    "--folder %s/home/.lume --disk-kib 4 && sh " LM_DATADIR "/tests/lume-sim/vm.sh %s/sim fastvm stopped null null "
	    "--folder %s/ssd --disk-kib 4", dir, dir, dir, dir, dir, dir, dir, dir, dir);
	if (system(cmd) != 0)
		printf("not ok - setup %s\n", cmd);
	snprintf(p, sizeof p, "%s/home/.lume/pulled/.manifest-digest", dir);
	write_file(p, D1, strlen(D1));

	rc = image_digest_local(out, lume, "pulled", NULL, err);
	UNIT_OK(rc == LM_OK && strcmp(out, D1) == 0, "a pulled VM's digest is read from the default location %s", err);
	rc = image_digest_local(out, lume, "created", NULL, err);
	UNIT_OK(rc == LM_EFAIL && out[0] == '\0', "a VM made by lume create has no digest");
	UNIT_HAS(err, "VM created has no .manifest-digest", "... saying so");
	rc = image_digest_local(out, lume, "ghost", NULL, err);
	UNIT_OK(rc == LM_EFAIL, "a VM that is not there is a failure");
	UNIT_HAS(err, "VM ghost is not in Lume's storage location home (~/.lume)", "... naming the location");
	rc = image_digest_local(out, lume, "../pulled", NULL, err);
	UNIT_OK(rc == LM_EINPUT, "a VM name with a slash is refused before lume runs");
	rc = image_digest_local(out, lume, "fastvm", "fast", err);
	UNIT_OK(rc == LM_EINPUT, "an unknown location is an input error");
	UNIT_HAS(err, "Lume has no storage location fast", "... naming it");

	/* A second location, in the config file Lume writes. */
	snprintf(cmd, sizeof cmd, "mkdir -p %s/home/.config/lume && printf '# Lume Configuration\\n\\ndefaultLocationName: \"home\"\\n"
	    "cacheDirectory: \"~/.lume/cache\"\\ncachingEnabled: false\\ntelemetryEnabled: true\\n\\n# VM Locations\\nvmLocations:\\n"
	    "  - name: \"home\"\\n    path: \"~/.lume\"\\n  - name: \"fast\"\\n    path: \"%s/ssd\"\\n' >%s/home/.config/lume/config.yaml",
	    dir, dir, dir);
	if (system(cmd) != 0)
		printf("not ok - setup %s\n", cmd);
	snprintf(p, sizeof p, "%s/ssd/fastvm/.manifest-digest", dir);
	write_file(p, D1, strlen(D1));
	write_file(p, "sha256:ed17\n", 12);
	rc = image_digest_local(out, lume, "fastvm", "fast", err);
	UNIT_OK(rc == LM_EFAIL && out[0] == '\0', "a malformed digest file is a failure");
	UNIT_HAS(err, "VM fastvm: .manifest-digest is not a manifest digest", "... saying so");
	snprintf(cmd, sizeof cmd, "%s\n", D1);
	write_file(p, cmd, strlen(cmd));
	rc = image_digest_local(out, lume, "fastvm", "fast", err);
	UNIT_OK(rc == LM_OK && strcmp(out, D1) == 0, "a named location from config.yaml is used %s", err);
	rc = image_digest_local(out, lume, "fastvm", NULL, err);
	UNIT_OK(rc == LM_EFAIL, "the same VM is not in the default location");

	unlink(p);
	snprintf(cmd, sizeof cmd, "%s/home/.lume/pulled/.manifest-digest", dir);
	if (symlink(cmd, p) != 0)
		printf("not ok - setup symlink\n");
	rc = image_digest_local(out, lume, "fastvm", "fast", err);
	UNIT_OK(rc == LM_EFAIL && out[0] == '\0', "a .manifest-digest that is a symlink is not followed");
	unlink(p);
	if (mkfifo(p, 0600) != 0)
		printf("not ok - setup fifo\n");
	rc = image_digest_local(out, lume, "fastvm", "fast", err);
	UNIT_OK(rc == LM_EFAIL, "a FIFO is refused without blocking");
	UNIT_HAS(err, "not a regular file", "... saying so");
	unlink(p);
	{
		char big[300];

		memset(big, 'a', sizeof big);
		write_file(p, big, sizeof big);
		rc = image_digest_local(out, lume, "fastvm", "fast", err);
		UNIT_OK(rc == LM_EFAIL, "a large file is read only up to its bound and refused");
	}
	rc = image_digest_local(out, "/nonexistent/lume", "pulled", NULL, err);
	UNIT_OK(rc != LM_OK, "a missing lume is an error");
	UNIT_HAS(err, "/nonexistent/lume", "... naming it");
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("not ok - cleanup\n");
}

int
main(void)
{
	storage_tests();
	path_tests();
	digest_tests();
	local_tests();
	UNIT_DONE();
}

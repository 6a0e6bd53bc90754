/* The remote command builder (net/rcmd.h) against a real shell: /bin/sh (dash here) parses each
 * command line it builds from hostile words and runs this binary again, which prints the argv it
 * got; that argv must be the words, byte for byte, and nothing in them may have run. Also the
 * embedded guest scripts: each is its guest-scripts/ file without comment lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/rcmd.h"
#include "unit.h"

static char self[4096];

/* Runs `/bin/sh -c text` and gives its stdout (*len bytes, caller frees) and exit status. */
static char *
sh_run(const char *text, size_t *len, int *status)
{
	int p[2];
	pid_t pid;
	char *out = NULL;
	size_t n = 0, cap = 0;
	ssize_t got;

	if (pipe(p) != 0 || (pid = fork()) < 0)
		abort();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl("/bin/sh", "sh", "-c", text, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	do {
		if (n + 4096 > cap && (out = realloc(out, cap = cap * 2 + 4096)) == NULL)
			abort();
		got = read(p[0], out + n, cap - n);
		n += got > 0 ? (size_t)got : 0;
	} while (got > 0 || (got < 0 && errno == EINTR));
	close(p[0]);
	waitpid(pid, status, 0);
	*len = n;
	return out;
}

/* What `sh -c rcmd_text(c)` ran with: its argv from argv[1] (this binary prints it, NUL after
 * each word) is want[0..n), byte for byte. */
static int
same_argv(const remote_cmd *c, const char *const *want, size_t n)
{
	size_t len, off = 0, i;
	int status, ok;
	char *out = sh_run(rcmd_text(c), &len, &status);

	ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	for (i = 0; ok && i < n; i++) {
		size_t w = strlen(want[i]);

		ok = off + w < len && memcmp(out + off, want[i], w) == 0 && out[off + w] == '\0';
		if (!ok)
			printf("#   word %zu: wanted \"%s\"\n", i, want[i]);
		off += w + 1;
	}
	ok = ok && off == len;
	free(out);
	return ok;
}

/* guest-scripts/NAME without its comment lines, as scripts/embed-scripts embeds it. */
static char *
file_code(const char *name)
{
	char path[4200], line[8192];
	FILE *f;
	lm_buf b = {0};

	snprintf(path, sizeof path, "%s/guest-scripts/%s", LM_DATADIR, name);
	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	while (fgets(line, sizeof line, f) != NULL)
		if (line[strspn(line, " \t")] != '#')
			lm_buf_addf(&b, "%s", line);
	fclose(f);
	return b.data ? b.data : strdup("");
}

int
main(int argc, char **argv)
{
	/* Hostile words: quotes, expansions, newlines, backslashes, empty, leading dashes, globs,
	 * operators, a comment, tildes, bytes that are not UTF-8. */
	static const char *const words[] = {
	    "plain", "two words", "'", "''", "it's", "\"", "'\"'", "\"'\"", "$(touch PWNED)", "`touch PWNED`",
	    "${HOME}", "$HOME", "$1", "$@", "$$", "a\nb", "\n", "trailing\n", "\\", "\\\\", "a\\'b", "\\n", "\\'",
	    "", " ", "\t", "-n", "-e", "--", "-c", "-", "*", "?", "[a-z]", "~", "~root", "x~/y", ";", "&&", "|", ">out",
	    "<in", "#comment", "!", "a;touch PWNED", "'; touch PWNED; '", "\xff\xfe", "caf\xc3\xa9", "\x80", "\x01\x1b[31m",
	    "end",
	};
	const size_t nw = sizeof words / sizeof *words;
	const char *argv_[2 + sizeof words / sizeof *words + 1], *want[sizeof words / sizeof *words + 2];
	remote_cmd *c = NULL;
	ssize_t n;

	/* Run again by the shell: print the argv got, NUL after each word. */
	if (argc > 1 && strcmp(argv[1], "--print-argv") == 0) {
		for (int i = 2; i < argc; i++)
			fwrite(argv[i], 1, strlen(argv[i]) + 1, stdout);
		return 0;
	}
	if ((n = readlink("/proc/self/exe", self, sizeof self - 1)) <= 0)
		abort();
	self[n] = '\0';
	if (chdir("/tmp") != 0)
		abort();
	/* PWNED, relative: a word that ran would make it in the shell's directory, /tmp */
	unlink("/tmp/PWNED");

	argv_[0] = self, argv_[1] = "--print-argv";
	for (size_t i = 0; i < nw; i++)
		argv_[2 + i] = words[i];
	argv_[2 + nw] = NULL;
	UNIT_OK(rcmd_argv(&c, argv_) == LM_OK && c != NULL, "rcmd_argv builds a command");
	UNIT_OK(c && same_argv(c, words, nw), "sh -c gets every hostile word as it was (%zu words)", nw);
	UNIT_OK(access("/tmp/PWNED", F_OK) != 0, "... and nothing in them ran");
	rcmd_free(c);

	/* A leading ~/ is the remote HOME, whatever HOME holds; the rest stays quoted. */
	{
		const char *a[] = {self, "--print-argv", "~/a b/$(touch PWNED)", "~", "~/", NULL};
		const char *w[] = {"/h o'me/$(touch PWNED)\n/a b/$(touch PWNED)", "~", "/h o'me/$(touch PWNED)\n/"};

		setenv("HOME", "/h o'me/$(touch PWNED)\n", 1);
		UNIT_OK(rcmd_argv(&c, a) == LM_OK && same_argv(c, w, 3), "a leading ~/ becomes \"$HOME\"/, unquoted HOME "
		    "and all: a HOME with spaces, quotes, $() and a newline arrives as it is");
		UNIT_OK(access("/tmp/PWNED", F_OK) != 0, "... and nothing in it ran");
		rcmd_free(c);
	}

	/* A script with hostile arguments: in-dir.sh DIR COMMAND... cds and execs the command. */
	{
		const char *a[3 + sizeof words / sizeof *words + 1];

		a[0] = "/", a[1] = self, a[2] = "--print-argv";
		for (size_t i = 0; i < nw; i++)
			a[3 + i] = words[i];
		a[3 + nw] = NULL;
		UNIT_OK(rcmd_script(&c, RSCRIPT_IN_DIR, a) == LM_OK && same_argv(c, words, nw),
		    "an embedded script (in-dir.sh) gets every hostile word as its arguments, as it was");
		UNIT_OK(access("/tmp/PWNED", F_OK) != 0, "... and nothing in them ran");
		rcmd_free(c);
	}
	/* Two scripts in one shell, as deploy's exec: validate-clean.sh leaves "/" alone, then
	 * in-dir.sh runs. */
	{
		const char *a[] = {"/", self, "--print-argv", "-n", "$(touch PWNED)", "", NULL};
		static const rscript parts[] = {RSCRIPT_VALIDATE_CLEAN, RSCRIPT_IN_DIR};

		want[0] = "-n", want[1] = "$(touch PWNED)", want[2] = "";
		UNIT_OK(rcmd_scripts(&c, parts, 2, a) == LM_OK && same_argv(c, want, 3),
		    "two scripts in one shell share the arguments");
		rcmd_free(c);
	}
	UNIT_OK(rcmd_script(&c, RSCRIPT_N, NULL) == LM_EFAIL && c == NULL, "a script id out of range is refused");
	{
		const char *none[] = {NULL};

		UNIT_OK(rcmd_argv(&c, none) == LM_EFAIL && c == NULL, "... and an empty argv");
	}

	/* The embedded scripts are their files' code. */
	for (int s = 0; s < RSCRIPT_N; s++) {
		char *code = file_code(rscript_name((rscript)s));

		UNIT_OK(code != NULL && strcmp(code, rscript_text((rscript)s)) == 0 && strlen(code) > 10,
		    "%s is embedded as its file, without the comment lines", rscript_name((rscript)s));
		free(code);
	}
	unlink("/tmp/PWNED");
	UNIT_DONE();
}

/* cli_help: a command's help (its usage and examples, from its cmd_*.c), wrapped at 80 columns,
 * and its option table's flags (help --flags). */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"

const cli_command *
cli_find(const char *name)
{
	for (size_t i = 0; cli_commands[i]; i++)
		if (strcmp(cli_commands[i]->name, name) == 0)
			return cli_commands[i];
	return NULL;
}

/* The hanging indentation of a line: under the description column of a flag row ("  --flag ARG
 * text"), else its own indentation; *lead gets its own. */
static size_t
hang_of(const char *line, size_t len, size_t *lead)
{
	size_t l = 0;

	while (l < len && line[l] == ' ')
		l++;
	*lead = l;
	if (l < len && line[l] == '-')
		for (size_t k = l; k + 2 < len; k++)
			if (line[k] == ' ' && line[k + 1] == ' ' && line[k + 2] != ' ') {
				while (line[k] == ' ')
					k++;
				return k <= 40 ? k : l;
			}
	return l;
}

/* The texts were wrapped by hand at ~95 columns: a prose line (no indentation) followed by
 * another, and a flag row followed by its continuation (indented to its description column),
 * are joined into one line for wrap80 to wrap again. */
static void
reflow(lm_buf *out, const char *text)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text), lead, hang = hang_of(text, len, &lead);

		lm_buf_add(out, text, len);
		text += len + (nl != NULL);
		while (nl && len > 0 && *text && *text != '\n') {
			size_t nlen, nlead;

			nl = strchr(text, '\n');
			nlen = nl ? (size_t)(nl - text) : strlen(text);
			hang_of(text, nlen, &nlead);
			if (!((lead == 0 && nlead == 0) || (hang > lead && nlead == hang && text[nlead] != '-')))
				break;
			lm_buf_add(out, " ", 1);
			lm_buf_add(out, text + nlead, nlen - nlead);
			text += nlen + (nl != NULL);
		}
		if (nl)
			lm_buf_add(out, "\n", 1);
	}
}

/* Writes text to stdout with every line wrapped at 80 columns, at a space: a continued line
 * lines up under the description column of a flag row ("  --flag ARG   text"), else under its
 * own indentation, and under the arguments for the synopsis (first) line. */
static void
wrap80(const char *text, size_t first_indent)
{
	for (int first = 1; *text; first = 0) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text), lead, hang = hang_of(text, len, &lead), col = 0;

		if (first)
			hang = first_indent;
		while (col + len > 80) {
			size_t cut = 80 - col; /* text[cut] is the space to break at */

			while (cut > 0 && text[cut] != ' ')
				cut--;
			if (cut == 0 || (col == 0 && cut <= lead)) /* a word longer than the line: left whole */
				break;
			fwrite(text, 1, cut, stdout);
			printf("\n%*s", (int)hang, "");
			while (cut < len && text[cut] == ' ')
				cut++;
			text += cut;
			len -= cut;
			col = hang;
		}
		fwrite(text, 1, len, stdout);
		putchar('\n');
		text += len + (nl != NULL);
	}
}

int
cli_help(const char *name)
{
	const cli_command *c = cli_find(name);
	lm_buf b = {0}, r = {0};

	if (c == NULL)
		return cli_error(EXIT_USAGE, "help: '%s' is not a lume-metal command; see 'lume-metal --help'", name);
	lm_buf_addf(&b, "usage: lume-metal %s", c->usage);
	if (c->issue)
		lm_buf_addf(&b, "\n(not built yet: arrives with issue %s)\n", c->issue);
	if (c->examples)
		lm_buf_addf(&b, "\nExamples:\n%s", c->examples);
	if (b.data != NULL && (reflow(&r, b.data), r.data != NULL)) {
		if (r.len > 0 && r.data[r.len - 1] == '\n')
			r.data[--r.len] = '\0';
		wrap80(r.data, strlen("usage: lume-metal ") + strlen(name) + 1);
	}
	lm_buf_free(&b);
	lm_buf_free(&r);
	return EXIT_OK;
}

int
cli_help_flags(const char *name)
{
	const cli_command *c = cli_find(name);

	if (c == NULL)
		return cli_error(EXIT_USAGE, "help: '%s' is not a lume-metal command; see 'lume-metal --help'", name);
	for (const struct option *o = c->options; o && o->name; o++)
		printf("--%s%s\n", o->name, o->has_arg == required_argument ? " VALUE" : "");
	return EXIT_OK;
}

/* The terminal-safe output: the escaper (core/escape.c) byte by byte, cli_bprintf against snprintf.
 * cmd/ is not in the library the unit tests link, so its files are compiled in here, statics and all. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "unit.h"
#include "cmd/cli.c"
#include "cmd/cli_format.c"
#include "cmd/cli_term.c"

/* s (n bytes) escaped must be want. */
static void
esc(const char *s, size_t n, int keep_nl, const char *want, const char *what)
{
	lm_buf b = {0};
	int rc = escape_text(&b, s, n, keep_nl);

	UNIT_OK(rc == 0 && strcmp(b.data ? b.data : "", want) == 0, "%s", what);
	if (rc != 0 || strcmp(b.data ? b.data : "", want) != 0)
		printf("#   got:  %s\n#   want: %s\n", b.data ? b.data : "(null)", want);
	lm_buf_free(&b);
}

#define ESC(lit, want, what) esc(lit, sizeof lit - 1, 0, want, what)

/* cli_bprintf of fmt must equal snprintf's when no argument holds a control character. */
#define SAME(fmt, ...) do {                                                          \
	char want_[256];                                                             \
	lm_buf b_ = {0};                                                             \
	snprintf(want_, sizeof want_, fmt, __VA_ARGS__);                             \
	UNIT_OK(cli_bprintf(&b_, fmt, __VA_ARGS__) == 0 && b_.data && strcmp(b_.data, want_) == 0, \
	    "cli_bprintf(\"%s\") as snprintf: %s", fmt, want_);                      \
	if (b_.data && strcmp(b_.data, want_) != 0)                                  \
		printf("#   got: %s\n", b_.data);                                        \
	lm_buf_free(&b_);                                                            \
} while (0)

int
main(void)
{
	lm_buf b = {0};

	ESC("plain ASCII, ~!@#$%^&*()", "plain ASCII, ~!@#$%^&*()", "printable ASCII passes");
	ESC("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80",
	    "well-formed UTF-8 (2, 3 and 4 bytes) passes");
	ESC("26.5\033[2J\033]0;pwned\007", "26.5\\x1b[2J\\x1b]0;pwned\\x07", "ESC and BEL as \\xNN");
	ESC("a\nb\rc\td", "a\\nb\\rc\\td", "newline, carriage return and tab as \\n \\r \\t");
	esc("a\nb\r", 4, 1, "a\nb\\r", "keep_nl lets only newlines through");
	ESC("\x01\x1f\x7f", "\\x01\\x1f\\x7f", "other C0 controls and DEL");
	ESC("x\xc2\x9b" "31m", "x\\xc2\\x9b31m", "a C1 control (U+009B CSI) as its two bytes");
	ESC("\xc2\x80\xc2\x9f\xc2\xa0", "\\xc2\\x80\\xc2\\x9f\xc2\xa0", "U+0080 and U+009F escaped, U+00A0 not");
	ESC("\xe2\x80\xae" "evil", "\\xe2\\x80\\xaeevil", "a bidi override (U+202E)");
	ESC("\xe2\x81\xa6", "\\xe2\\x81\\xa6", "a bidi isolate (U+2066)");
	ESC("\xff\xfe", "\\xff\\xfe", "bytes that are never UTF-8");
	ESC("\xc3", "\\xc3", "a truncated sequence at the end");
	ESC("\xc3(", "\\xc3(", "a lead byte without its continuation");
	ESC("\xc0\xaf", "\\xc0\\xaf", "an overlong encoding of '/'");
	ESC("\xe0\x80\xaf", "\\xe0\\x80\\xaf", "an overlong three-byte encoding");
	ESC("\xed\xa0\x80", "\\xed\\xa0\\x80", "a UTF-16 surrogate");
	ESC("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", "beyond U+10FFFF");
	ESC("\x80", "\\x80", "a stray continuation byte");
	esc("a\0b", 3, 0, "a\\x00b", "a NUL inside a counted string");

	SAME("%d %5d %-5d| %+d %05d", 42, -7, 3, 9, 12);
	SAME("%zu %ju %ld %lld %lu %llu", (size_t)7, (uintmax_t)8, -9L, -10LL, 11UL, 12ULL);
	SAME("%x %X %o %#x %hd %hhu", 255u, 255u, 8u, 16u, (short)-3, (unsigned char)200);
	SAME("%.1f %.0f %8.2f %-8.2f| %g %e", 3.14159, 2.5, 1.005, -2.0, 1e-5, 12345.678);
	SAME("%s|%10s|%-10s|%.3s|%5.2s|", "abc", "right", "left", "abcdef", "xyz");
	SAME("%*d|%-*d|%*s|%.*s|%-*s|", 6, 1, 6, 2, 4, "ab", 2, "abcd", -5, "neg");
	SAME("100%% %c%c", 'o', 'k');

	cli_bprintf(&b, "[%-8s] [%8s] [%.2s]", "\033x", "\033x", "\033\033\033");
	UNIT_OK(b.data && strcmp(b.data, "[\\x1bx   ] [   \\x1bx] [\\x1b\\x1b]") == 0,
	    "width pads the escaped text; precision counts the argument's bytes: %s", b.data ? b.data : "");
	lm_buf_free(&b);
	cli_bprintf(&b, "%s\r\033[K%c", "\r", '\007');
	UNIT_OK(b.data && strcmp(b.data, "\\r\r\033[K\\x07") == 0, "the format's own controls pass, the arguments' do not");
	lm_buf_free(&b);

	/* --timeout given is kept, even when it is the default's 120; without it, the command's own. */
	for (int given = 0; given <= 1; given++) {
		cli_conn c = {.r = {.timeout_s = 120}};
		const char *hosts[] = {"127.0.0.1"};
		session_opts o = {0};
		guest_target *t = NULL;

		c.r.hosts = hosts, c.r.nhosts = 1;
		if (given)
			UNIT_OK(cli_conn_flag(&c, CLI_OPT_TIMEOUT, "120", "validate") == 1, "--timeout 120 parses");
		UNIT_OK(cli_one_vm(&t, &c, NULL, &o, 3600) == EXIT_OK && o.timeout_s == (given ? 120 : 3600),
		    "--timeout %s: the run's timeout is %d", given ? "120 given" : "not given", o.timeout_s);
		guest_target_free(t);
	}
	UNIT_DONE();
}

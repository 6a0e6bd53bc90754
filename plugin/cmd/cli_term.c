/* cli_term: terminal-safe output (cli.h): cli_printf's engine, cli_error, cli_print_json. Every
 * string argument goes through core/escape.h's rule. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cmd/cli.h"
#include "core/escape.h"

/* One conversion of a cli_printf format into b; *fmt is past the '%' and is moved past the
 * conversion. Strings (%s, %c) are escaped, precision counting the bytes taken from the
 * argument and width the escaped bytes written; numbers are formatted as printf does. */
static int
convert(lm_buf *b, const char **fmt, va_list *ap)
{
	const char *p = *fmt, *fl = p;
	char spec[64], len[3] = "";
	int width = -1, prec = -1, left;
	size_t nfl = strspn(p, "-+ #0");

	left = memchr(fl, '-', nfl) != NULL;
	p += nfl;
	if (*p == '*') {
		width = va_arg(*ap, int);
		if (width < 0)
			left = 1, width = -width;
		p++;
	} else
		for (width = 0; *p >= '0' && *p <= '9' && width < 100000; p++)
			width = width * 10 + (*p - '0');
	if (*p == '.') {
		p++;
		if (*p == '*') {
			prec = va_arg(*ap, int);
			p++;
		} else
			for (prec = 0; *p >= '0' && *p <= '9' && prec < 100000; p++)
				prec = prec * 10 + (*p - '0');
	}
	if (*p != '\0' && strchr("hljztL", *p)) {
		len[0] = *p++;
		if ((len[0] == 'h' || len[0] == 'l') && *p == len[0])
			len[1] = *p++;
	}
	if (*p == '\0' || nfl > 5)
		return -1;
	*fmt = p + 1;
	if (*p == '%')
		return lm_buf_add(b, "%", 1);
	if (*p == 's' || *p == 'c') {
		char ch;
		const char *s;
		size_t n, at = b->len, w;

		if (*p == 'c') {
			ch = (char)va_arg(*ap, int);
			s = &ch, n = 1;
		} else {
			s = va_arg(*ap, const char *);
			if (s == NULL)
				s = "(null)";
			n = prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
		}
		if (escape_text(b, s, n, 0) != 0)
			return -1;
		if ((w = b->len - at) >= (size_t)(width > 0 ? width : 0))
			return 0;
		for (size_t k = w; k < (size_t)width; k++)
			if (lm_buf_add(b, " ", 1) != 0)
				return -1;
		if (!left) { /* right-aligned: the padding goes before the text */
			memmove(b->data + b->len - w, b->data + at, w);
			memset(b->data + at, ' ', (size_t)width - w);
		}
		return 0;
	}
	/* A number: printf itself, with the width and precision written out. */
	{
		char w[16] = "", pr[16] = "";

		if (width > 0)
			snprintf(w, sizeof w, "%d", width);
		if (prec >= 0)
			snprintf(pr, sizeof pr, ".%d", prec);
		snprintf(spec, sizeof spec, "%%%s%.*s%s%s%s%c", left && memchr(fl, '-', nfl) == NULL ? "-" : "",
		    (int)nfl, fl, w, pr, len, *p);
	}
	switch (*p) {
	case 'd': case 'i':
		return !*len || *len == 'h' ? lm_buf_addf(b, spec, va_arg(*ap, int)) :
		    strcmp(len, "l") == 0 ? lm_buf_addf(b, spec, va_arg(*ap, long)) :
		    strcmp(len, "ll") == 0 ? lm_buf_addf(b, spec, va_arg(*ap, long long)) :
		    *len == 'j' ? lm_buf_addf(b, spec, va_arg(*ap, intmax_t)) :
		    *len == 'z' ? lm_buf_addf(b, spec, va_arg(*ap, ssize_t)) :
		    *len == 't' ? lm_buf_addf(b, spec, va_arg(*ap, ptrdiff_t)) : -1;
	case 'u': case 'o': case 'x': case 'X':
		return !*len || *len == 'h' ? lm_buf_addf(b, spec, va_arg(*ap, unsigned)) :
		    strcmp(len, "l") == 0 ? lm_buf_addf(b, spec, va_arg(*ap, unsigned long)) :
		    strcmp(len, "ll") == 0 ? lm_buf_addf(b, spec, va_arg(*ap, unsigned long long)) :
		    *len == 'j' ? lm_buf_addf(b, spec, va_arg(*ap, uintmax_t)) :
		    *len == 'z' ? lm_buf_addf(b, spec, va_arg(*ap, size_t)) :
		    *len == 't' ? lm_buf_addf(b, spec, va_arg(*ap, ptrdiff_t)) : -1;
	case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
		return *len == 'L' ? lm_buf_addf(b, spec, va_arg(*ap, long double)) :
		    lm_buf_addf(b, spec, va_arg(*ap, double));
	case 'p':
		return lm_buf_addf(b, "%p", va_arg(*ap, void *));
	}
	return -1; /* %n and the rest: never used by the CLI */
}

/* fmt with its arguments into b, every string argument escaped. */
static int
vformat(lm_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int rc = 0;

	va_copy(aq, ap);
	while (*fmt && rc == 0) {
		size_t n = strcspn(fmt, "%");

		if (n > 0)
			rc = lm_buf_add(b, fmt, n);
		fmt += n;
		if (*fmt == '%' && rc == 0) {
			fmt++;
			rc = convert(b, &fmt, &aq);
		}
	}
	va_end(aq);
	return rc;
}

static int
put(FILE *f, const lm_buf *b, int rc)
{
	if (rc == 0 && b->len > 0 && fwrite(b->data, 1, b->len, f) != b->len)
		rc = -1;
	return rc == 0 ? (int)b->len : -1;
}

int
cli_printf(const char *fmt, ...)
{
	lm_buf b = {0};
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = put(stdout, &b, vformat(&b, fmt, ap));
	va_end(ap);
	lm_buf_free(&b);
	return rc;
}

int
cli_bprintf(lm_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vformat(b, fmt, ap);
	va_end(ap);
	return rc;
}

int
cli_text(FILE *f, const char *s, int keep_nl)
{
	lm_buf b = {0};
	int rc = put(f, &b, s ? escape_text(&b, s, strlen(s), keep_nl) : 0);

	lm_buf_free(&b);
	return rc;
}

int
cli_escape(lm_buf *out, const char *s)
{
	return escape_text(out, s, strlen(s), 0);
}

int
cli_escape_n(lm_buf *out, const char *s, size_t n, int keep_nl)
{
	return escape_text(out, s, n, keep_nl);
}

int
cli_error(int code, const char *fmt, ...)
{
	lm_buf b = {0};
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = lm_buf_add(&b, "lume-metal: ", 12) == 0 ? vformat(&b, fmt, ap) : -1;
	va_end(ap);
	if (rc == 0)
		rc = lm_buf_add(&b, "\n", 1);
	put(stderr, &b, rc);
	lm_buf_free(&b);
	return code;
}

int
cli_fail(int rc, const char *err)
{
	int code = rc == LM_EINPUT ? EXIT_USAGE : rc == LM_EREFUSED ? EXIT_REFUSED : EXIT_SOMEFAIL;

	return cli_error(code, "%s", err);
}

void
cli_print_json(const cJSON *v)
{
	char *s = cJSON_PrintUnformatted(v);
	lm_buf b = {0};
	int rc = escape_json(&b, s ? s : "null");

	if (rc == 0)
		rc = lm_buf_add(&b, "\n", 1);
	put(stdout, &b, rc);
	lm_buf_free(&b);
	free(s);
}

/* escape: the terminal-safety rule. Printed raw, "\033[2J\033]0;pwned\007" would clear the
 * screen and retitle the window, and "\r\033[1A\033[2Kgood deployed" would rewrite an earlier
 * line. Printable ASCII and well-formed UTF-8 pass; \n, \r and \t become those two characters (a
 * newline in a field would fake a line); every other C0 control, DEL, the C1 controls
 * U+0080..U+009F, the bidi overrides and isolates (U+202A..U+202E, U+2066..U+2069) and bytes
 * that are not UTF-8 become \xNN, one per byte (ESC is \x1b). Never prints. */
#ifndef LM_ESCAPE_H
#define LM_ESCAPE_H

#include <stddef.h>

#include "core/util.h"

/* Appends n bytes of s to b escaped, newlines kept as they are with keep_nl; 0, or -1 out of
 * memory. */
int escape_text(lm_buf *b, const char *s, size_t n, int keep_nl);

/* Appends the JSON text json to b with DEL, the C1 controls and the bidi overrides as \uXXXX
 * (the same string to a JSON parser) and a byte that is not UTF-8 as \ufffd; 0, or -1. */
int escape_json(lm_buf *b, const char *json);

#endif

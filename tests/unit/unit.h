/* unit: a small TAP harness for the C unit tests, built under ASan and UBSan. */
#ifndef LM_UNIT_H
#define LM_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_failed;

#define UNIT_OK(cond, ...) do {                                          \
	int unit_c_ = (cond) != 0;                                       \
	printf("%s - ", unit_c_ ? "ok" : "not ok");                      \
	printf(__VA_ARGS__);                                             \
	printf("\n");                                                    \
	if (!unit_c_) {                                                  \
		printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		unit_failed++;                                           \
	}                                                                \
} while (0)

/* err must contain needle. */
#define UNIT_HAS(err, needle, ...) do {                                  \
	UNIT_OK(strstr((err), (needle)) != NULL, __VA_ARGS__);           \
	if (strstr((err), (needle)) == NULL)                             \
		printf("#   message was: %s\n#   wanted: %s\n", (err), (needle)); \
} while (0)

#define UNIT_DONE() return unit_failed ? 1 : 0

#endif

/* bench_int: what bench.c (reading, checking, the table) and bench_render.c (its rendering)
 * share, included after core/bench.h (its types). Not for other modules: their interface is
 * bench.h. */
#ifndef LM_BENCH_INT_H
#define LM_BENCH_INT_H

#include <cjson/cJSON.h>

extern const char *const bench_arm_names[3]; /* the arms' keys in a table, in order: stock, shim, host */
const char *bench_base(const char *p);       /* p's last path component; "" for NULL */
double bench_fig(const cJSON *test, const char *arm, const char *k); /* test's arm's figure k, or NAN */

#endif

/* nearest_name.h - the "did you mean" hint for a misspelt key or option name: a job
 * option, a key of an `add-bulk` line. Part of the shared layer the CLI may use. */
#ifndef FERRY_UTIL_NEAREST_NAME_H
#define FERRY_UTIL_NEAREST_NAME_H

#include <stddef.h>

/* The name in names[0..n) nearest to `key` (edit distance: insert, delete, substitute, swap
 * of neighbours; case-insensitive) when it is close enough to be a slip of the keyboard,
 * else NULL. Returns a pointer into names (not a copy). Pure, thread-safe; no allocation. */
const char *ferryx_nearest_name(const char *key, const char *const *names, size_t n);

#endif

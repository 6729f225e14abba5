/* error.h - internal helpers to fill a ferry_error. */
#ifndef FERRY_UTIL_ERROR_H
#define FERRY_UTIL_ERROR_H

#include "ferry/common.h"

/* Set err->code and a formatted message (truncated at FERRY_ERROR_MESSAGE_MAX, with
 * "..." appended). err may be NULL. Returns code, so `return ferry__err(e, X, ...)`. */
int ferry__err(ferry_error *err, int code, const char *fmt, ...) FERRY_PRINTF(3, 4);

#endif

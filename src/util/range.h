/* range.h - the one check of a numeric option against its bounds, so every option a module
 * refuses is refused with the same words. */
#ifndef FERRY_UTIL_RANGE_H
#define FERRY_UTIL_RANGE_H

#include "ferry/common.h"

/* 0 when lo <= v <= hi; else FERRY_EINVAL with "<who>: <what> <v> out of range <lo>..<hi>"
 * (e.g. "relay: batch_size 20000 out of range 0..10000"). Pure, thread-safe. */
int ferry__check_range(ferry_error *err, const char *who, const char *what, long long v,
                       long long lo, long long hi);

#endif

/* options.h - owning copies of a caller's ferry_redis_options: a queue, a worker and the
 * relay each keep one, taken when they are opened (ferry/redis.h promises the caller may
 * free its struct and strings right after). */
#ifndef FERRY_REDIS_OPTIONS_H
#define FERRY_REDIS_OPTIONS_H

#include "ferry/redis.h"

/* *dst = *src (or the defaults when src is NULL) with every string field (url and the TLS
 * paths and name) replaced by a heap copy owned by dst. Returns 0, or FERRY_ENOMEM with the
 * copies made so far released (dst's strings all NULL then); err gets "out of memory".
 * Free dst's strings with ferry__redis_options_release. Pure apart from allocation;
 * thread-safe. */
int ferry__redis_options_dup(ferry_redis_options *dst, const ferry_redis_options *src,
                             ferry_error *err);

/* Free the strings of a struct filled by ferry__redis_options_dup and set them to NULL.
 * NULL o, or a struct already released, is a no-op. */
void ferry__redis_options_release(ferry_redis_options *o);

#endif

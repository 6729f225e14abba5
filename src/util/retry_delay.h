/* retry_delay.h - how long to wait before trying a lost server again: one rule for the
 * worker's Redis links, the relay's PostgreSQL and Redis connections and the CLI's retried
 * worker start, so processes that failed together do not retry together.
 * Part of the shared layer the CLI may use (docs/architecture.md). */
#ifndef FERRY_UTIL_RETRY_DELAY_H
#define FERRY_UTIL_RETRY_DELAY_H

#include <stdint.h>

/* A random delay in the upper half of ms: [ms/2, ms]. Returns ms/2 + ms/2 * r for a random
 * r in [0, 1] (r = 0.5 when the kernel gives no random bytes); ms <= 0 gives 0. Pure apart
 * from the random draw; thread-safe; no allocation. */
int64_t ferryx_jitter_upper_half(int64_t ms);

/* The delay before the next attempt after `failures` consecutive failures (>= 1): doubling
 * from 100 ms up to 5 s, jittered by ferryx_jitter_upper_half. Thread-safe. */
int64_t ferryx_reconnect_delay_ms(int failures);

#endif

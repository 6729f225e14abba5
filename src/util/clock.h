/* clock.h - wall-clock milliseconds (written to Redis, as BullMQ uses Date.now()) and
 * monotonic milliseconds (for local deadlines). Thread-safe. */
#ifndef FERRY_UTIL_CLOCK_H
#define FERRY_UTIL_CLOCK_H

#include <stdint.h>

int64_t ferry__now_ms(void);  /* CLOCK_REALTIME, ms since the epoch */
int64_t ferry__mono_ms(void); /* CLOCK_MONOTONIC, ms */

#endif

/* retry_delay.c - jittered delays before a retry (see retry_delay.h). */
#include "util/retry_delay.h"

#include <sys/random.h>
#include <sys/types.h>

int64_t ferryx_jitter_upper_half(int64_t ms) {
    if (ms <= 0) return 0;
    unsigned short rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) rnd = 0x8000;
    return ms / 2 + (int64_t)((double)(ms / 2) * rnd / 65535.0);
}

int64_t ferryx_reconnect_delay_ms(int failures) {
    int64_t d = 100;
    for (int i = 1; i < failures && d < 5000; i++)
        d *= 2;
    if (d > 5000) d = 5000;
    return ferryx_jitter_upper_half(d);
}

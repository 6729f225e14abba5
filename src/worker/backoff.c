/* backoff.c - built-in retry strategies, computed exactly as BullMQ 6.7.0's Backoffs:
 *   fixed:       delay, or with jitter j: floor(rnd * delay * j + delay * (1 - j))
 *   exponential: m = round(2^(attempt-1) * delay), or with jitter floor(rnd * m * j + m * (1 - j))
 * JavaScript's Math.round rounds halves up (towards +inf), which floor(x + 0.5) reproduces. */
#include "worker/backoff.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <openssl/rand.h>

#include "util/error.h"

static long long clamp_delay(double d) {
    if (!(d > 0)) return 0; /* also catches NaN */
    if (d >= (double)FERRY_BACKOFF_MAX_MS) return FERRY_BACKOFF_MAX_MS;
    return (long long)d;
}

static double jitter_of(const ferry__backoff *b) {
    double j = b->jitter;
    if (!(j > 0)) return 0;
    return j > 1 ? 1 : j;
}

static int backoff_fixed(const ferry__backoff *b, long attempt, double rnd, long long *delay_ms) {
    (void)attempt;
    double delay = (double)b->delay_ms;
    double j = jitter_of(b);
    if (j > 0)
        *delay_ms = clamp_delay(floor(rnd * delay * j + delay * (1 - j)));
    else
        *delay_ms = clamp_delay(delay);
    return 0;
}

static int backoff_exponential(const ferry__backoff *b, long attempt, double rnd,
                               long long *delay_ms) {
    if (attempt < 1) attempt = 1;
    /* 2^(attempt-1) overflows a double only past attempt 1024; the clamp handles inf */
    double m = floor(pow(2.0, (double)(attempt - 1)) * (double)b->delay_ms + 0.5);
    double j = jitter_of(b);
    if (j > 0)
        *delay_ms = clamp_delay(floor(rnd * m * j + m * (1 - j)));
    else
        *delay_ms = clamp_delay(m);
    return 0;
}

static const ferry__backoff_strategy builtins[] = {
    {"fixed", backoff_fixed},
    {"exponential", backoff_exponential},
};

const ferry__backoff_strategy *ferry__backoff_builtin(const char *type) {
    if (!type) return NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (!strcmp(builtins[i].name, type)) return &builtins[i];
    return NULL;
}

int ferry__backoff_delay(const ferry__backoff *b, long attempt, double rnd, long long *delay_ms,
                         ferry_error *err) {
    *delay_ms = 0;
    if (!b || !b->set) return 0;
    const ferry__backoff_strategy *s = ferry__backoff_builtin(b->type);
    if (!s) return ferry__err(err, FERRY_ENOTFOUND, "unknown backoff strategy \"%s\"", b->type);
    if (rnd < 0 || !(rnd < 1)) rnd = 0;
    return s->fn(b, attempt, rnd, delay_ms);
}

double ferry__backoff_random(void) {
    uint64_t r;
    if (RAND_bytes((unsigned char *)&r, sizeof r) != 1) return 0.5;
    return (double)(r >> 11) * (1.0 / 9007199254740992.0); /* 53 random bits */
}

/* backoff.h - retry delay of a failed job (BullMQ 6.7.0 Backoffs, pure, no I/O).
 *
 * Strategies are looked up by the `type` stored in the job's backoff option. The built-in
 * ones (fixed, exponential) live in a static table; a later worker-level registry of custom
 * strategies plugs in through ferry__backoff_strategy (same signature) and is consulted
 * before the built-ins by the caller. Thread-safe (no shared state). */
#ifndef FERRY_WORKER_BACKOFF_H
#define FERRY_WORKER_BACKOFF_H

#include "queue/job_opts.h"

/* Longest delay any strategy may return (2^40 ms, about 34 years); larger results are
 * clamped, so the delayed score (due ms * 4096) never overflows. */
#define FERRY_BACKOFF_MAX_MS (1LL << 40)

/* Delay for the attempt numbered `attempt` (BullMQ attemptsMade + 1, >= 1) given a random
 * number `rnd` in [0, 1) (used only with jitter). Writes *delay_ms >= 0, or -1 meaning
 * "do not retry" (the BullMQ custom-strategy convention). Returns 0 or a ferry_err. */
typedef int (*ferry__backoff_fn)(const ferry__backoff *b, long attempt, double rnd,
                                 long long *delay_ms);

typedef struct ferry__backoff_strategy {
    const char *name;
    ferry__backoff_fn fn;
} ferry__backoff_strategy;

/* The built-in strategy named `type`, or NULL. Static storage. */
const ferry__backoff_strategy *ferry__backoff_builtin(const char *type);

/* Delay for a failed attempt: b unset (no backoff option) -> 0 (immediate retry); known
 * type -> its strategy; unknown type -> FERRY_ENOTFOUND with a message naming it.
 * `attempt` >= 1, `rnd` in [0, 1). */
int ferry__backoff_delay(const ferry__backoff *b, long attempt, double rnd, long long *delay_ms,
                         ferry_error *err);

/* A uniformly distributed double in [0, 1) from the OpenSSL CSPRNG (thread-safe); 0.5 if
 * the generator fails, which only shifts jitter to its midpoint. */
double ferry__backoff_random(void);

#endif

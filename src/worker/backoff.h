/* backoff.h - retry delay of a failed job (BullMQ 6.7.0 Backoffs, plus custom strategies).
 *
 * Strategies are looked up by the `type` stored in the job's backoff option, in this order:
 *   1. the BullMQ built-ins (fixed, exponential), which a worker cannot override;
 *   2. the worker's registered strategies (ferry_worker_options.backoff_strategies);
 *   3. ferry's own built-in "capped" (a capped exponential, see
 *      ferry_backoff_capped), so a worker may register its own "capped" instead.
 * The built-ins are pure functions of (backoff option, attempt, random number) so they
 * are unit-tested with a fixed random number. Thread-safe (no shared mutable state; a
 * registry is read-only after ferry__backoff_registry_copy). */
#ifndef FERRY_WORKER_BACKOFF_H
#define FERRY_WORKER_BACKOFF_H

#include <stddef.h>

#include "ferry/worker.h"
#include "queue/job_opts.h"

/* FERRY_BACKOFF_MAX_MS (ferry/worker.h) keeps the delayed score (due ms * 4096) from
 * overflowing. */

/* Registry limits: at most this many custom strategies per worker, names at most
 * FERRY__BACKOFF_NAME_MAX bytes (the longest backoff.type a stored job can carry, see
 * ferry__backoff.type). */
#define FERRY__BACKOFF_STRATEGIES_MAX FERRY_BACKOFF_STRATEGIES_MAX
#define FERRY__BACKOFF_NAME_MAX FERRY_BACKOFF_NAME_MAX

/* "capped" defaults: base 2 s, cap 15 min. */
#define FERRY__CAPPED_BASE_MS 2000LL
#define FERRY__CAPPED_CAP_MS (15LL * 60 * 1000)

/* Delay for the attempt numbered `attempt` (BullMQ attemptsMade + 1, >= 1) given a random
 * number `rnd` in [0, 1) (used only with jitter). Writes *delay_ms >= 0, or -1 meaning
 * "do not retry" (the BullMQ custom-strategy convention). Returns 0 or a ferry_err. */
typedef int (*ferry__backoff_fn)(const ferry__backoff *b, long attempt, double rnd,
                                 long long *delay_ms);

typedef struct ferry__backoff_strategy {
    const char *name;
    ferry__backoff_fn fn;
} ferry__backoff_strategy;

/* A registered custom strategy (a worker's private copy; name owned). */
typedef struct ferry__backoff_custom {
    char *name;
    ferry_backoff_fn fn;
    void *userdata;
} ferry__backoff_custom;

/* The BullMQ built-in strategy named `type` (fixed, exponential), or NULL. Static. */
const ferry__backoff_strategy *ferry__backoff_builtin(const char *type);

/* ferry's built-in strategies consulted after the registered ones ("capped"), or NULL. */
const ferry__backoff_strategy *ferry__backoff_fallback(const char *type);

/* Delay for a failed attempt without custom strategies: b unset (no backoff option) -> 0
 * (immediate retry); built-in or fallback type -> its strategy; unknown type ->
 * FERRY_ENOTFOUND with a message naming it. `attempt` >= 1, `rnd` in [0, 1). */
int ferry__backoff_delay(const ferry__backoff *b, long attempt, double rnd, long long *delay_ms,
                         ferry_error *err);

/* Same with a registry of custom strategies (lookup order at the top of this file).
 * `reason` and `job` are passed to a custom strategy (job may be NULL in tests). A custom
 * result < 0 becomes -1 (do not retry), one over FERRY_BACKOFF_MAX_MS is clamped. */
int ferry__backoff_resolve(const ferry__backoff *b, long attempt, double rnd, const char *reason,
                           const ferry_job *job, const ferry__backoff_custom *reg, size_t nreg,
                           long long *delay_ms, ferry_error *err);

/* The capped exponential (pure): ceiling = min(cap, base * 2^(attempt-1)),
 * delay = round(ceiling/2 + rnd * ceiling/2), so delay is in [ceiling/2, ceiling].
 * Non-positive base/cap mean the defaults; attempt < 1 counts as 1; rnd outside [0, 1)
 * counts as 0; the result is clamped to FERRY_BACKOFF_MAX_MS. */
long long ferry__backoff_capped_calc(long attempt, long long base_ms, long long cap_ms, double rnd);

/* Validate and copy a worker's strategies (see ferry_worker_options.backoff_strategies).
 * *out is malloc'd (NULL when n == 0); free with ferry__backoff_registry_free. Returns 0,
 * FERRY_EINVAL with a message naming the bad entry, or FERRY_ENOMEM. */
int ferry__backoff_registry_copy(const ferry_backoff_strategy *s, size_t n,
                                 ferry__backoff_custom **out, ferry_error *err);
void ferry__backoff_registry_free(ferry__backoff_custom *reg, size_t n); /* NULL accepted */

/* A uniformly distributed double in [0, 1) from the OpenSSL CSPRNG (thread-safe); 0.5 if
 * the generator fails, which only shifts jitter to its midpoint. */
double ferry__backoff_random(void);

#endif

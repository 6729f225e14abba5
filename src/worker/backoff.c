/* backoff.c - retry strategies: the BullMQ 6.7.0 built-ins computed exactly as its Backoffs,
 *   fixed:       delay, or with jitter j: floor(rnd * delay * j + delay * (1 - j))
 *   exponential: m = round(2^(attempt-1) * delay), or with jitter floor(rnd * m * j + m * (1 - j))
 * the worker's registered custom strategies, and ferry's "capped" (a capped
 * exponential). JavaScript's Math.round rounds halves up (towards +inf), which
 * floor(x + 0.5) reproduces. */
#include "worker/backoff.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "util/error.h"
#include "util/numtext.h"
#include "worker/worker_internal.h"

static long long clamp_delay(double d) {
    return ferryx_clamp_ll(d, 0, FERRY_BACKOFF_MAX_MS);
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

long long ferry__backoff_capped_calc(long attempt, long long base_ms, long long cap_ms,
                                     double rnd) {
    if (attempt < 1) attempt = 1;
    if (base_ms <= 0) base_ms = FERRY__CAPPED_BASE_MS;
    if (cap_ms <= 0) cap_ms = FERRY__CAPPED_CAP_MS;
    if (!(rnd >= 0 && rnd < 1)) rnd = 0;
    double ceiling = (double)base_ms * pow(2.0, (double)(attempt - 1)); /* may be inf */
    if (!(ceiling < (double)cap_ms)) ceiling = (double)cap_ms;
    return clamp_delay(floor(ceiling / 2 + rnd * (ceiling / 2) + 0.5));
}

/* The built-in "capped": base = the job's backoff.delay when > 0. */
static int backoff_capped(const ferry__backoff *b, long attempt, double rnd, long long *delay_ms) {
    *delay_ms = ferry__backoff_capped_calc(attempt, b->delay_ms, 0, rnd);
    return 0;
}

static const ferry__backoff_strategy builtins[] = {
    {"fixed", backoff_fixed},
    {"exponential", backoff_exponential},
};

static const ferry__backoff_strategy fallbacks[] = {
    {"capped", backoff_capped},
};

const ferry__backoff_strategy *ferry__backoff_builtin(const char *type) {
    if (!type) return NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (!strcmp(builtins[i].name, type)) return &builtins[i];
    return NULL;
}

const ferry__backoff_strategy *ferry__backoff_fallback(const char *type) {
    if (!type) return NULL;
    for (size_t i = 0; i < sizeof fallbacks / sizeof fallbacks[0]; i++)
        if (!strcmp(fallbacks[i].name, type)) return &fallbacks[i];
    return NULL;
}

int ferry__backoff_resolve(const ferry__backoff *b, long attempt, double rnd, const char *reason,
                           const ferry_job *job, const ferry__backoff_custom *reg, size_t nreg,
                           long long *delay_ms, ferry_error *err) {
    *delay_ms = 0;
    if (!b || !b->set) return 0;
    if (rnd < 0 || !(rnd < 1)) rnd = 0;
    const ferry__backoff_strategy *s = ferry__backoff_builtin(b->type);
    if (s) return s->fn(b, attempt, rnd, delay_ms);
    for (size_t i = 0; i < nreg; i++) {
        if (strcmp(reg[i].name, b->type) != 0) continue;
        /* under the callback lock: a worker closed (its user data maybe freed) calls nobody */
        if (job && ferry__cb_enter(job->lane) != 0)
            return ferry__err(err, FERRY_ESTATE, "worker closed");
        long long d = reg[i].fn(attempt, b->type, reason ? reason : "", job, reg[i].userdata);
        if (job) ferry__cb_leave(job->lane);
        *delay_ms = d < 0 ? -1 : d > FERRY_BACKOFF_MAX_MS ? FERRY_BACKOFF_MAX_MS : d;
        return 0;
    }
    s = ferry__backoff_fallback(b->type);
    if (s) return s->fn(b, attempt, rnd, delay_ms);
    return ferry__err(err, FERRY_ENOTFOUND, "unknown backoff strategy \"%s\"", b->type);
}

int ferry__backoff_delay(const ferry__backoff *b, long attempt, double rnd, long long *delay_ms,
                         ferry_error *err) {
    return ferry__backoff_resolve(b, attempt, rnd, NULL, NULL, NULL, 0, delay_ms, err);
}

long long ferry_backoff_capped(long attempts_made, const char *type, const char *reason,
                               const ferry_job *job, void *userdata) {
    (void)type;
    (void)reason;
    long long base = 0, cap = 0;
    if (userdata) {
        const ferry_backoff_capped_config *c = userdata;
        base = c->base_ms;
        cap = c->cap_ms;
    } else if (job) {
        base = ferry__job_backoff_delay(job);
    }
    return ferry__backoff_capped_calc(attempts_made, base, cap, ferry__backoff_random());
}

/* ---- registry -------------------------------------------------------------------------- */

void ferry__backoff_registry_free(ferry__backoff_custom *reg, size_t n) {
    if (!reg) return;
    for (size_t i = 0; i < n; i++)
        free(reg[i].name);
    free(reg);
}

int ferry__backoff_registry_copy(const ferry_backoff_strategy *s, size_t n,
                                 ferry__backoff_custom **out, ferry_error *err) {
    *out = NULL;
    if (n == 0) return 0;
    if (!s)
        return ferry__err(err, FERRY_EINVAL,
                          "worker: backoff_strategies is NULL but nbackoff_strategies is %zu", n);
    if (n > FERRY__BACKOFF_STRATEGIES_MAX)
        return ferry__err(err, FERRY_EINVAL, "worker: %zu backoff strategies (at most %d)", n,
                          FERRY__BACKOFF_STRATEGIES_MAX);
    for (size_t i = 0; i < n; i++) {
        const char *name = s[i].name;
        size_t len = name ? strlen(name) : 0;
        if (len == 0)
            return ferry__err(err, FERRY_EINVAL, "worker: backoff strategy %zu has no name", i);
        if (len > FERRY__BACKOFF_NAME_MAX)
            return ferry__err(err, FERRY_EINVAL,
                              "worker: backoff strategy name \"%.40s...\" is %zu bytes (at most "
                              "%d: the longest backoff.type a job can carry)",
                              name, len, FERRY__BACKOFF_NAME_MAX);
        if (ferry__backoff_builtin(name))
            return ferry__err(err, FERRY_EINVAL,
                              "worker: backoff strategy \"%s\" is built into BullMQ and cannot "
                              "be replaced",
                              name);
        if (!s[i].fn)
            return ferry__err(err, FERRY_EINVAL, "worker: backoff strategy \"%s\" has no function",
                              name);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(s[k].name, name))
                return ferry__err(err, FERRY_EINVAL,
                                  "worker: backoff strategy \"%s\" registered twice", name);
    }
    ferry__backoff_custom *reg = calloc(n, sizeof *reg);
    if (!reg) return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
    for (size_t i = 0; i < n; i++) {
        reg[i].name = strdup(s[i].name);
        reg[i].fn = s[i].fn;
        reg[i].userdata = s[i].userdata;
        if (!reg[i].name) {
            ferry__backoff_registry_free(reg, n);
            return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
        }
    }
    *out = reg;
    return 0;
}

double ferry__backoff_random(void) {
    uint64_t r;
    if (RAND_bytes((unsigned char *)&r, sizeof r) != 1) return 0.5;
    return (double)(r >> 11) * (1.0 / 9007199254740992.0); /* 53 random bits */
}

/* metrics_internal.h - the layouts of the registry, its families and series, shared by the
 * files of src/metrics/ (names.c, registry.c, update.c, render.c, listener.c). */
#ifndef FERRY_METRICS_INTERNAL_H
#define FERRY_METRICS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ferry/metrics.h"

/* The counter every registry has: lookups folded into a family's overflow series. */
#define FERRY__METRICS_FOLDED_NAME "ferry_metrics_folded_series_total"
/* The label value of every label of an overflow series. */
#define FERRY__METRICS_OTHER "other"

/* One series. The public ferry_metrics_counter / _gauge / _histogram handles point to one of
 * these (they are never defined: a cast each way). */
typedef struct ferry__mseries {
    /* Written by the update functions without a lock (relaxed atomics). */
    _Atomic uint64_t value;    /* counter: the count; gauge: the double's bits */
    _Atomic uint64_t sum_bits; /* histogram: the sum's bits */
    _Atomic uint64_t *buckets; /* histogram: bucket_count + 1 counts (last: above every
                                  bound), not cumulative; NULL otherwise */
    /* Read-only after creation. */
    struct ferry_metrics_family *family;
    uint64_t hash;
    char **values; /* label_count strings, in this allocation */
    /* Guarded by the registry's mu. */
    ferry_metrics_gauge_fn fn;
    void *fn_userdata;
    int dropped; /* ferry__metrics_series_drop: not rendered until looked up again */
} ferry__mseries;

struct ferry_metrics_family {
    /* Read-only after registration. */
    struct ferry_metrics *registry;
    int kind;
    char *name;
    char *help;
    char **labels;
    size_t label_count;
    double *bounds; /* histogram bucket bounds */
    size_t bound_count;
    size_t max_series;
    /* Guarded by the registry's mu. */
    ferry__mseries **series; /* in the order of first lookup (the overflow one included) */
    size_t series_count;     /* of series[], the overflow one included */
    size_t series_cap;
    size_t bounded_count;   /* series counted against max_series */
    ferry__mseries **table; /* open addressing on hash, table_cap a power of two */
    size_t table_cap;
    ferry__mseries *overflow; /* the all-"other" series, once needed */
    ferry__mseries *folded;   /* its row of FERRY__METRICS_FOLDED_NAME (labelled families) */
};

struct ferry_metrics {
    pthread_mutex_t mu;
    size_t max_series; /* the default for families */
    /* Guarded by mu. */
    struct ferry_metrics_family **families; /* FERRY_METRICS_FAMILIES_MAX slots */
    size_t family_count;
    struct ferry_metrics_family *folded_family;
};

/* names.c: the rules of a spec, checked before anything is allocated. Returns 0 or
 * FERRY_EINVAL with the rule in err. Pure. */
int ferry__metrics_check_spec(const ferry_metrics_spec *s, ferry_error *err);
/* A label value: NULL, not UTF-8 or too long refused (FERRY_EINVAL). Pure. */
int ferry__metrics_check_value(const struct ferry_metrics_family *f, size_t i, const char *v,
                               ferry_error *err);

/* registry.c: the series of f for values, with mu held (created when new, the overflow one
 * past the bound). Returns NULL on ENOMEM. */
ferry__mseries *ferry__metrics_series_locked(struct ferry_metrics_family *f,
                                             const char *const *values);

/* update.c: a double's bits and back (no type punning through a union in the atomics). */
uint64_t ferry__metrics_bits(double d);
double ferry__metrics_double(uint64_t bits);

#endif

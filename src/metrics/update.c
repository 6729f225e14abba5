/* update.c - the hot path: counter, gauge and histogram updates on a series handle, lock-free
 * (relaxed atomics; doubles kept as their bits in a 64-bit atomic, changed by
 * compare-and-swap), and the reads of the current values. */
#include <math.h>
#include <string.h>

#include "metrics/metrics_internal.h"

/* "the update must not take a lock": a platform whose 64-bit atomics are locks fails here */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics are not lock-free here");

uint64_t ferry__metrics_bits(double d) {
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

double ferry__metrics_double(uint64_t bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static void add_double(_Atomic uint64_t *a, double delta) {
    uint64_t old = atomic_load_explicit(a, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(
        a, &old, ferry__metrics_bits(ferry__metrics_double(old) + delta), memory_order_relaxed,
        memory_order_relaxed)) {
    }
}

void ferry_metrics_counter_add(ferry_metrics_counter *c, uint64_t n) {
    ferry__mseries *s = (ferry__mseries *)c;
    if (s) atomic_fetch_add_explicit(&s->value, n, memory_order_relaxed);
}

void ferry_metrics_gauge_set(ferry_metrics_gauge *g, double v) {
    ferry__mseries *s = (ferry__mseries *)g;
    if (s) atomic_store_explicit(&s->value, ferry__metrics_bits(v), memory_order_relaxed);
}

void ferry_metrics_gauge_add(ferry_metrics_gauge *g, double delta) {
    ferry__mseries *s = (ferry__mseries *)g;
    if (s) add_double(&s->value, delta);
}

void ferry_metrics_histogram_observe(ferry_metrics_histogram *h, double v) {
    ferry__mseries *s = (ferry__mseries *)h;
    if (!s || isnan(v)) return;
    const struct ferry_metrics_family *f = s->family;
    /* the first bound >= v (Prometheus' buckets are upper-inclusive), by bisection */
    size_t lo = 0, hi = f->bound_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v <= f->bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    atomic_fetch_add_explicit(&s->buckets[lo], 1, memory_order_relaxed);
    add_double(&s->sum_bits, v);
}

uint64_t ferry_metrics_counter_value(const ferry_metrics_counter *c) {
    const ferry__mseries *s = (const ferry__mseries *)c;
    return s ? atomic_load_explicit(&s->value, memory_order_relaxed) : 0;
}

double ferry_metrics_gauge_value(const ferry_metrics_gauge *g) {
    const ferry__mseries *s = (const ferry__mseries *)g;
    return s ? ferry__metrics_double(atomic_load_explicit(&s->value, memory_order_relaxed)) : 0;
}

uint64_t ferry_metrics_histogram_count(const ferry_metrics_histogram *h) {
    const ferry__mseries *s = (const ferry__mseries *)h;
    if (!s) return 0;
    uint64_t n = 0;
    for (size_t i = 0; i <= s->family->bound_count; i++)
        n += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
    return n;
}

double ferry_metrics_histogram_sum(const ferry_metrics_histogram *h) {
    const ferry__mseries *s = (const ferry__mseries *)h;
    return s ? ferry__metrics_double(atomic_load_explicit(&s->sum_bits, memory_order_relaxed)) : 0;
}

/* ferry/metrics.h - a registry of counters, gauges and histograms, rendered as Prometheus
 * text (exposition format 0.0.4), and a per-process /metrics listener.
 *
 * A registry holds families (a name, help text, a kind, fixed label names, for histograms
 * fixed bucket bounds); a family holds series, one per combination of label values. A program
 * looks a series up once (ferry_metrics_counter_with, ..._gauge_with, ..._histogram_with) and
 * keeps the handle: updating it (ferry_metrics_counter_add, ferry_metrics_gauge_set, ...) is
 * a few lock-free atomic operations, never a lock, never an allocation. docs/metrics.md has
 * the naming rules, the label bound and the output.
 *
 * Names follow Prometheus' rules, checked at registration: "ferry_" prefix, lower case
 * [a-z0-9_], base units (seconds, bytes; "_ms", "_milliseconds", "_kb"... are refused),
 * "_total" at the end of every counter and of nothing else.
 *
 * The label bound: a family has at most max_series combinations of label values
 * (FERRY_METRICS_SERIES_DEFAULT unless the options or the spec say otherwise). A lookup of a
 * new combination past the bound is not refused: it returns the family's overflow series,
 * whose every label value is "other", and counts one in
 * ferry_metrics_folded_series_total{family="<name>"}, a counter every registry has. So sums
 * over a family stay right, the hot path has no error to handle, and an alert on that counter
 * finds the label that is not bounded.
 *
 * For every function below unless it says otherwise:
 * Blocks: no (registration, lookups and rendering take the registry's mutex for a short
 *   time; updates take no lock at all).
 * Threads: any thread, concurrently, on the same registry; destroy last, alone.
 * Ownership: strings passed in are copied; handles returned are owned by the registry and
 *   valid until ferry_metrics_destroy. */
#ifndef FERRY_METRICS_H
#define FERRY_METRICS_H

#include "common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits; input over one is refused with FERRY_EINVAL naming it. */
#define FERRY_METRICS_NAME_MAX 128           /* bytes of a family name */
#define FERRY_METRICS_HELP_MAX 512           /* bytes of help text */
#define FERRY_METRICS_LABELS_MAX 8           /* label names of a family */
#define FERRY_METRICS_LABEL_NAME_MAX 64      /* bytes of a label name */
#define FERRY_METRICS_LABEL_VALUE_MAX 256    /* bytes of a label value */
#define FERRY_METRICS_BUCKETS_MAX 64         /* bucket bounds of a histogram (+Inf implied) */
#define FERRY_METRICS_FAMILIES_MAX 1024      /* families of a registry */
#define FERRY_METRICS_SERIES_DEFAULT 1000    /* label combinations of a family, by default */
#define FERRY_METRICS_SERIES_MAX 100000      /* the largest max_series */
#define FERRY_METRICS_RENDER_MAX (64u << 20) /* bytes of one rendering (FERRY_ETOOBIG past it) */

/* The listener's address when none is given: loopback, on the port OpenTelemetry's
 * Prometheus exporters use. */
#define FERRY_METRICS_LISTEN_DEFAULT "127.0.0.1:9464"
/* The Content-Type of the text ferry_metrics_render writes. */
#define FERRY_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct ferry_metrics ferry_metrics;                     /* a registry */
typedef struct ferry_metrics_family ferry_metrics_family;       /* one metric name */
typedef struct ferry_metrics_counter ferry_metrics_counter;     /* one series of a counter */
typedef struct ferry_metrics_gauge ferry_metrics_gauge;         /* one series of a gauge */
typedef struct ferry_metrics_histogram ferry_metrics_histogram; /* one series of a histogram */
typedef struct ferry_metrics_listener ferry_metrics_listener;   /* a /metrics HTTP listener */

typedef enum ferry_metrics_kind {
    FERRY_METRICS_COUNTER = 1,
    FERRY_METRICS_GAUGE = 2,
    FERRY_METRICS_HISTOGRAM = 3,
} ferry_metrics_kind;

typedef struct ferry_metrics_options {
    /* Label combinations per family (the bound above); 0 = FERRY_METRICS_SERIES_DEFAULT,
     * at most FERRY_METRICS_SERIES_MAX. */
    size_t max_series;
} ferry_metrics_options;

/* Zero the options (every default). Cannot fail. Threads: any. */
FERRY_API void ferry_metrics_options_init(ferry_metrics_options *o);

/* A new, empty registry (it holds only ferry_metrics_folded_series_total). o may be NULL
 * (defaults).
 * Returns: 0 and the registry in *out, freed with ferry_metrics_destroy.
 * Errors: FERRY_EINVAL for max_series over FERRY_METRICS_SERIES_MAX; FERRY_ENOMEM. */
FERRY_API int ferry_metrics_create(const ferry_metrics_options *o, ferry_metrics **out,
                                   ferry_error *err);

/* Free the registry, its families and series; every handle into it becomes invalid. m may
 * be NULL. Threads: no other call on m (or on a listener serving it: stop that first) may
 * run or follow. */
FERRY_API void ferry_metrics_destroy(ferry_metrics *m);

/* What a family is. Start from ferry_metrics_spec_init, then set fields by name. */
typedef struct ferry_metrics_spec {
    int kind;         /* a ferry_metrics_kind */
    const char *name; /* "ferry_jobs_processed_total": the rules in the top comment */
    const char *help; /* one line of UTF-8 text for # HELP, 1..FERRY_METRICS_HELP_MAX bytes */
    /* Label names, [a-z_][a-z0-9_]* not starting with "__", distinct, "le" refused on a
     * histogram; label_count 0..FERRY_METRICS_LABELS_MAX. */
    const char *const *label_names;
    size_t label_count;
    /* Histograms: bucket upper bounds, finite and strictly increasing, 1..
     * FERRY_METRICS_BUCKETS_MAX of them (the +Inf bucket is implied, do not list it);
     * buckets NULL (and bucket_count 0) = Prometheus' defaults, .005 .01 .025 .05 .1 .25 .5 1
     * 2.5 5 10 (seconds). */
    const double *buckets;
    size_t bucket_count;
    size_t max_series; /* 0 = the registry's */
} ferry_metrics_spec;

/* Zero the spec. Cannot fail. Threads: any. */
FERRY_API void ferry_metrics_spec_init(ferry_metrics_spec *s);

/* Register a family. A family without labels gets its one series now (value 0), so it is in
 * every rendering; one with labels shows only the combinations looked up so far.
 * Returns: 0 and the family in *out (may be NULL when only the series matter; find them
 *   again with ferry_metrics_family_find).
 * Errors: FERRY_EINVAL for a name, help text, label name or bucket list that breaks a rule
 *   (the message names the rule and the offending part), a name already registered or one
 *   that clashes with a histogram's _bucket / _sum / _count series, more than
 *   FERRY_METRICS_FAMILIES_MAX families; FERRY_ENOMEM. Nothing is registered on failure. */
FERRY_API int ferry_metrics_register(ferry_metrics *m, const ferry_metrics_spec *s,
                                     ferry_metrics_family **out, ferry_error *err);

/* The family registered under name, or NULL. Cannot fail. */
FERRY_API ferry_metrics_family *ferry_metrics_family_find(ferry_metrics *m, const char *name);

/* The series of family f for the label values `values` (label_count strings, in the order
 * of the label names; NULL when the family has no labels): created at 0 on first use, the
 * same handle on every later call. Past the family's bound, the overflow series (every value
 * "other"; see the top comment).
 * Returns: 0 and the series in *out.
 * Errors: FERRY_EINVAL when f is not of the function's kind, a value is NULL, not UTF-8 or
 *   longer than FERRY_METRICS_LABEL_VALUE_MAX; FERRY_ENOMEM. *out is set to NULL on
 *   failure, and every update function accepts NULL (a no-op), so a program may ignore the
 *   error and keep going without the metric. */
FERRY_API int ferry_metrics_counter_with(ferry_metrics_family *f, const char *const *values,
                                         ferry_metrics_counter **out, ferry_error *err);
FERRY_API int ferry_metrics_gauge_with(ferry_metrics_family *f, const char *const *values,
                                       ferry_metrics_gauge **out, ferry_error *err);
FERRY_API int ferry_metrics_histogram_with(ferry_metrics_family *f, const char *const *values,
                                           ferry_metrics_histogram **out, ferry_error *err);

/* Updates. Cannot fail; c / g / h may be NULL (nothing happens). Blocks: no, and takes no
 * lock (relaxed atomic operations; a gauge add or histogram sum is a compare-and-swap
 * loop). Threads: any number at once on the same series; every update is counted.
 * A counter only goes up; it wraps at 2^64. A NaN observation is ignored; +-Inf go to the
 * first / last bucket and make the sum infinite, as in Prometheus' own clients. */
FERRY_API void ferry_metrics_counter_add(ferry_metrics_counter *c, uint64_t n);
FERRY_API void ferry_metrics_gauge_set(ferry_metrics_gauge *g, double v);
FERRY_API void ferry_metrics_gauge_add(ferry_metrics_gauge *g, double delta);
FERRY_API void ferry_metrics_histogram_observe(ferry_metrics_histogram *h, double v);

/* The current values, for tests and for programs that also show them elsewhere. Cannot
 * fail; 0 for NULL. A histogram's count is the sum of its buckets. */
FERRY_API uint64_t ferry_metrics_counter_value(const ferry_metrics_counter *c);
FERRY_API double ferry_metrics_gauge_value(const ferry_metrics_gauge *g);
FERRY_API uint64_t ferry_metrics_histogram_count(const ferry_metrics_histogram *h);
FERRY_API double ferry_metrics_histogram_sum(const ferry_metrics_histogram *h);

/* A gauge computed at scrape time: returns the value, called with the userdata given. */
typedef double (*ferry_metrics_gauge_fn)(void *userdata);

/* Make the series of gauge family f for `values` (as ferry_metrics_gauge_with) a computed
 * one: every rendering calls fn(userdata) for its value instead of showing the stored one
 * (gauge_set / gauge_add still change the stored value, shown again once fn is NULL).
 * Errors: as ferry_metrics_gauge_with.
 * Threads: fn runs on the rendering thread with the registry's mutex held: it may update
 *   series but must not register, look up or render on this registry, and must not block
 *   for long. Ownership: userdata must stay valid until fn is replaced or the registry is
 *   destroyed. */
FERRY_API int ferry_metrics_gauge_callback(ferry_metrics_family *f, const char *const *values,
                                           ferry_metrics_gauge_fn fn, void *userdata,
                                           ferry_error *err);

/* Register ferry_build_info{version="<ferry_version()>",bullmq="<FERRY_BULLMQ_VERSION>"} 1.
 * Errors: FERRY_EINVAL when it is already registered; FERRY_ENOMEM. */
FERRY_API int ferry_metrics_build_info(ferry_metrics *m, ferry_error *err);

/* Render every family, in registration order (series in the order they were first looked
 * up), as Prometheus text format 0.0.4: # HELP, # TYPE, then the samples; histograms as
 * cumulative _bucket{le="..."} lines up to le="+Inf", then _sum and _count. Label values and
 * help text escaped (backslash, double quote, newline); numbers with '.' whatever the locale.
 * Returns: 0 and a malloc'd NUL-terminated string in *out (free it with free()), its length
 *   in *len (may be NULL).
 * Errors: FERRY_ETOOBIG past FERRY_METRICS_RENDER_MAX; FERRY_ENOMEM. */
FERRY_API int ferry_metrics_render(ferry_metrics *m, char **out, size_t *len, ferry_error *err);

/* Render into the caller's buffer buf[0..cap), NUL-terminated.
 * Returns: 0 and the length (without the NUL) in *len.
 * Errors: FERRY_ETOOBIG when it does not fit (then *len is the size buf needs, NUL
 *   included, at the time of the call), or past FERRY_METRICS_RENDER_MAX; FERRY_ENOMEM. */
FERRY_API int ferry_metrics_render_to(ferry_metrics *m, char *buf, size_t cap, size_t *len,
                                      ferry_error *err);

/* Serve GET (and HEAD) /metrics with the rendering of m on addr: "HOST:PORT" with HOST an
 * IPv4 literal, "[IPv6 literal]" or "localhost", PORT 0..65535 (0 = any free port; see
 * ferry_metrics_listener_port); NULL = FERRY_METRICS_LISTEN_DEFAULT, loopback. No name is
 * resolved. Other paths answer 404, other methods 405. One thread of its own (libmicrohttpd),
 * at most 16 connections at once, 10 s idle timeout per connection. That thread blocks every
 * signal, so a program's own SIGTERM handling is never taken over by it.
 * Returns: 0 and the listener in *out, stopped and freed with ferry_metrics_listener_stop.
 * Errors: FERRY_EINVAL for a malformed address; FERRY_EIO when the socket cannot be bound
 *   (the reason in the message); FERRY_ENOMEM.
 * Blocks: no (bind and listen). Ownership: m must outlive the listener. */
FERRY_API int ferry_metrics_listen(ferry_metrics *m, const char *addr, ferry_metrics_listener **out,
                                   ferry_error *err);

/* The port the listener is bound to (the chosen one when asked for 0). Cannot fail; 0 for
 * NULL. */
FERRY_API int ferry_metrics_listener_port(const ferry_metrics_listener *l);

/* Stop serving (waits for a request in progress to finish), close the socket, free l.
 * l may be NULL. Blocks: until the listener's thread has ended. */
FERRY_API void ferry_metrics_listener_stop(ferry_metrics_listener *l);

#ifdef __cplusplus
}
#endif
#endif

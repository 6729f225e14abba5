/* relay_metrics.c - the relay's Prometheus series (ferry_relay_options.metrics; what each
 * counts is docs/metrics.md "The relay's metrics"). Registered once per registry by
 * whichever relay comes first, looked up once at create; relay_batch.c and relay.c update
 * them on the run thread. */
#include <stddef.h>
#include <time.h>

#include "outbox/relay/relay_internal.h"
#include "util/error.h"

/* Seconds: Prometheus' defaults, then on to an hour (an outbox that fell behind). */
static const double time_buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                      2.5,   5,      10,    30,   60,    120,  300, 900,  3600};

/* Find family s->name, or register it (another relay may win a race to it: then find). */
static int family(ferry_metrics *reg, int kind, const char *name, const char *help,
                  ferry_metrics_family **out, ferry_error *err) {
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = kind;
    s.name = name;
    s.help = help;
    if (kind == FERRY_METRICS_HISTOGRAM) {
        s.buckets = time_buckets;
        s.bucket_count = sizeof time_buckets / sizeof time_buckets[0];
    }
    if ((*out = ferry_metrics_family_find(reg, name))) return 0;
    ferry_error e = {0};
    int rc = ferry_metrics_register(reg, &s, out, &e);
    if (rc == 0 || (*out = ferry_metrics_family_find(reg, name))) return 0;
    return ferry__err(err, rc, "relay: metrics: %s", e.message);
}

int ferry__relay_metrics_init(ferry_relay *r, ferry_metrics *reg, ferry_error *err) {
    if (!reg) return 0;
    ferry_metrics_family *pub, *dur, *lag, *last;
    int rc = family(reg, FERRY_METRICS_COUNTER, "ferry_relay_published_total",
                    "Outbox events this process's relays committed as published", &pub, err);
    if (!rc)
        rc = family(reg, FERRY_METRICS_HISTOGRAM, "ferry_relay_batch_duration_seconds",
                    "From a batch's claim being sent to its commit, for batches with rows", &dur,
                    err);
    if (!rc)
        rc = family(reg, FERRY_METRICS_HISTOGRAM, "ferry_relay_commit_to_enqueue_seconds",
                    "From an event's created_at to its jobs added to Redis", &lag, err);
    if (!rc)
        rc = family(reg, FERRY_METRICS_GAUGE, "ferry_relay_last_success_timestamp_seconds",
                    "Unix time of the relay's last drain that ended without error", &last, err);
    if (rc) return rc;
    ferry_error e = {0};
    rc = ferry_metrics_counter_with(pub, NULL, &r->m_published, &e);
    if (!rc) rc = ferry_metrics_histogram_with(dur, NULL, &r->m_batch_duration, &e);
    if (!rc) rc = ferry_metrics_histogram_with(lag, NULL, &r->m_commit_to_enqueue, &e);
    if (!rc) rc = ferry_metrics_gauge_with(last, NULL, &r->m_last_success, &e);
    if (rc) return ferry__err(err, rc, "relay: metrics: %s", e.message);
    return 0;
}

int64_t ferry__relay_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void ferry__relay_metrics_committed(ferry_relay *r, size_t published, int64_t claim_sent_us) {
    if (!r->m_published) return;
    ferry_metrics_counter_add(r->m_published, published);
    ferry_metrics_histogram_observe(r->m_batch_duration,
                                    (double)(ferry__relay_mono_us() - claim_sent_us) / 1e6);
}

void ferry__relay_metrics_enqueued(ferry_relay *r, int64_t now_ms, double created_s) {
    double age = (double)now_ms / 1e3 - created_s;
    ferry_metrics_histogram_observe(r->m_commit_to_enqueue, age > 0 ? age : 0);
}

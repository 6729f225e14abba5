/* wmetrics.c - the worker's Prometheus series (ferry_worker_options.metrics; the list and
 * what each counts is docs/metrics.md "The worker's metrics"). The families are registered
 * once per registry by whichever worker comes first; every lane looks up its queue's series
 * at create and the series of each job name the first time it settles one of that name,
 * keeping them in a small direct-mapped cache owned by the thread holding the dispatcher
 * role, so settling a job costs a hash of its name and a few relaxed atomic adds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/error.h"
#include "worker/worker_internal.h"

static const char *const outcome_names[FERRY__WM_OUTCOMES] = {
    "completed", "failed", "retried", "retried_later", "throttled", "lock_lost"};

static const char *const class_names[FERRY__FC_COUNT] = {
    "permanent", /* FERRY__FC_OUTCOME is never a label: resolved before use */
    "check",          "stalled",  "max_started_attempts", "payload_too_big", "deferred",
    "return_too_big", "children", "unsendable",           "transient",       "permanent"};

/* Seconds: Prometheus' defaults, then on to a day (jobs and waits run long). */
static const double time_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1,  0.25,  0.5,
                                      1,     2.5,  5,     10,   30,   60,    120,
                                      300,   600,  1800,  3600, 7200, 21600, 86400};
static const double attempt_buckets[] = {1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 25, 50, 100};

#define NBUCKETS(a) (sizeof(a) / sizeof(a)[0])

/* Find family `s->name`, or register it. Two workers created at once may race to register:
 * the loser finds the winner's. */
static int family_get(ferry_metrics *reg, const ferry_metrics_spec *s, ferry_metrics_family **out,
                      ferry_error *err) {
    *out = ferry_metrics_family_find(reg, s->name);
    if (*out) return 0;
    ferry_error e = {0};
    int rc = ferry_metrics_register(reg, s, out, &e);
    if (rc == 0) return 0;
    if ((*out = ferry_metrics_family_find(reg, s->name))) return 0;
    return ferry__err(err, rc, "worker: metrics: %s", e.message);
}

static int family(ferry_metrics *reg, int kind, const char *name, const char *help,
                  const char *const *labels, size_t nlabels, const double *buckets, size_t nbuckets,
                  ferry_metrics_family **out, ferry_error *err) {
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = kind;
    s.name = name;
    s.help = help;
    s.label_names = labels;
    s.label_count = nlabels;
    s.buckets = buckets;
    s.bucket_count = nbuckets;
    return family_get(reg, &s, out, err);
}

int ferry__wm_init(ferry__wmetrics *m, ferry_metrics *reg, const char *queue, int no_name,
                   ferry_error *err) {
    memset(m, 0, sizeof *m);
    if (!reg) return 0;
    static const char *const l_qno[] = {"queue", "name", "outcome"};
    static const char *const l_qnrf[] = {"queue", "name", "reason_class", "final"};
    static const char *const l_qn[] = {"queue", "name"};
    static const char *const l_q[] = {"queue"};
    ferry_metrics_family *wait, *attempts, *slots, *busy;
    int rc = family(reg, FERRY_METRICS_COUNTER, "ferry_jobs_processed_total",
                    "Jobs this process's workers finished an attempt of, by outcome", l_qno, 3,
                    NULL, 0, &m->processed, err);
    if (!rc)
        rc = family(reg, FERRY_METRICS_COUNTER, "ferry_jobs_failed_total",
                    "Failed attempts, by reason class; final=true when the job moved to failed",
                    l_qnrf, 4, NULL, 0, &m->failed, err);
    if (!rc)
        rc = family(reg, FERRY_METRICS_HISTOGRAM, "ferry_job_duration_seconds",
                    "Handler run time of each attempt that ran", l_qn, 2, time_buckets,
                    NBUCKETS(time_buckets), &m->duration, err);
    if (!rc)
        rc = family(reg, FERRY_METRICS_HISTOGRAM, "ferry_job_wait_seconds",
                    "From when a job became ready (timestamp + delay) to its first start "
                    "(processedOn)",
                    l_q, 1, time_buckets, NBUCKETS(time_buckets), &wait, err);
    if (!rc)
        rc = family(reg, FERRY_METRICS_HISTOGRAM, "ferry_job_attempts",
                    "Attempt number (attemptsMade + 1) at which jobs completed or failed for "
                    "good",
                    l_q, 1, attempt_buckets, NBUCKETS(attempt_buckets), &attempts, err);
    if (!rc)
        rc = family(reg, FERRY_METRICS_GAUGE, "ferry_worker_slots",
                    "Handler slots (concurrency) of this process's running workers", l_q, 1, NULL,
                    0, &slots, err);
    if (!rc)
        rc = family(reg, FERRY_METRICS_GAUGE, "ferry_worker_busy_slots",
                    "Handler slots running a job now", l_q, 1, NULL, 0, &busy, err);
    if (rc) return rc;
    const char *v[] = {queue};
    ferry_error e = {0};
    rc = ferry_metrics_histogram_with(wait, v, &m->wait, &e);
    if (!rc) rc = ferry_metrics_histogram_with(attempts, v, &m->attempts, &e);
    if (!rc) rc = ferry_metrics_gauge_with(slots, v, &m->slots, &e);
    if (!rc) rc = ferry_metrics_gauge_with(busy, v, &m->busy, &e);
    if (rc) return ferry__err(err, rc, "worker: metrics: %s", e.message);
    m->on = 1;
    m->no_name = no_name;
    return 0;
}

void ferry__wm_free(ferry__wmetrics *m) {
    for (size_t i = 0; i < FERRY__WM_NAMES; i++)
        free(m->names[i].name);
    memset(m->names, 0, sizeof m->names);
}

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The series of the job name `name` (in its slot; looked up when the slot holds another
 * name). A name the registry refuses as a label value (not UTF-8, too long) counts as
 * "other", as the registry's own overflow. NULL on ENOMEM (nothing is counted then). */
static ferry__wm_name *name_series(ferry__lane *lane, const char *name) {
    ferry__wmetrics *m = &lane->m;
    ferry__wm_name *n = &m->names[name_hash(name) % FERRY__WM_NAMES];
    if (n->name && !strcmp(n->name, name)) return n;
    char *copy = strdup(name);
    if (!copy) return NULL;
    free(n->name);
    memset(n, 0, sizeof *n);
    n->name = copy;
    const char *label = name;
    for (int tries = 0; tries < 2; tries++, label = "other") {
        ferry_error e = {0};
        const char *v[] = {lane->queue, label, NULL};
        int rc = 0;
        for (int k = 0; k < FERRY__WM_OUTCOMES && !rc; k++) {
            v[2] = outcome_names[k];
            rc = ferry_metrics_counter_with(m->processed, v, &n->processed[k], &e);
        }
        if (!rc) rc = ferry_metrics_histogram_with(m->duration, v, &n->duration, &e);
        if (rc != FERRY_EINVAL) break;
    }
    return n;
}

static ferry_metrics_counter *failed_series(ferry__lane *lane, ferry__wm_name *n, const char *name,
                                            int cls, int final) {
    ferry_metrics_counter **c = &n->failed[cls][final];
    if (*c) return *c;
    const char *v[] = {lane->queue, name, class_names[cls], final ? "true" : "false"};
    ferry_error e = {0};
    if (ferry_metrics_counter_with(lane->m.failed, v, c, &e) == FERRY_EINVAL) {
        v[1] = "other";
        (void)ferry_metrics_counter_with(lane->m.failed, v, c, &e);
    }
    return *c;
}

static long long field_ll(const ferry_job *j, const char *field) {
    const char *s = ferry_job_field(j, field);
    return s ? strtoll(s, NULL, 10) : 0;
}

void ferry__wm_settled(ferry__lane *lane, const ferry_job *j, ferry__wm_outcome oc) {
    ferry__wmetrics *m = &lane->m;
    if (!m->on) return;
    const char *name = m->no_name || !j->name ? "" : j->name;
    ferry__wm_name *n = name_series(lane, name);
    if (!n) return;
    ferry_metrics_counter_add(n->processed[oc], 1);
    if (j->ran) ferry_metrics_histogram_observe(n->duration, (double)j->run_us / 1e6);
    if (oc == FERRY__WM_FAILED || oc == FERRY__WM_RETRIED) {
        int cls = j->fail_class;
        if (cls == FERRY__FC_OUTCOME)
            cls = j->outcome == FERRY_FAILED ? FERRY__FC_TRANSIENT : FERRY__FC_PERMANENT;
        ferry_metrics_counter_add(failed_series(lane, n, name, cls, oc == FERRY__WM_FAILED), 1);
    }
    if (oc == FERRY__WM_COMPLETED || oc == FERRY__WM_FAILED)
        ferry_metrics_histogram_observe(m->attempts, (double)(j->attempts_made + 1));
    /* the wait of the first start only: later starts' timestamp + delay is not when they
     * became ready (the timestamp stays the enqueue time, the delay is the backoff's) */
    if (j->attempts_started <= 1) {
        long long po = field_ll(j, "processedOn"), ready = j->timestamp + field_ll(j, "delay");
        if (po > 0 && j->timestamp > 0)
            ferry_metrics_histogram_observe(m->wait, po > ready ? (double)(po - ready) / 1e3 : 0);
    }
}

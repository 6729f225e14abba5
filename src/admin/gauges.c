/* gauges.c - ferry serve's system-wide gauges: jobs by state, oldest ready and active ages
 * and paused flag of every queue under the prefix (Redis), the outbox backlog and the dead
 * letters not redriven (PostgreSQL), recomputed by ferry__admin_gauges_refresh, and a
 * counter and an up gauge per source so a source that cannot be read is visible.
 * docs/metrics.md "ferry serve's system-wide gauges" has every family and the cost of a
 * refresh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_internal.h"
#include "ferry/deadletter.h"
#include "metrics/metrics_module.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/utf8.h"

/* Queues one refresh looks at (ferry_queue_names' max): past it, the first this many
 * names in sorted order have series, and vanished queues are not dropped (the list is not
 * known to be complete). */
#define GAUGES_QUEUES_MAX 1000

/* The states of ferry_queue_jobs, BullMQ's names, in ferry_job_counts order below. */
static const char *const STATES[] = {"wait",   "active",           "delayed",   "prioritized",
                                     "paused", "waiting-children", "completed", "failed"};
#define NSTATES (sizeof STATES / sizeof STATES[0])

/* One queue with series: its name and the handle kept between refreshes. */
typedef struct gq {
    char *name;
    ferry_queue *q;
} gq;

struct ferry__admin_gauges {
    ferry_metrics *m;
    ferry_metrics_family *jobs, *ready_age, *active_age, *paused;
    ferry_metrics_gauge *outbox_unpublished, *outbox_age, *dead_letters, *dead_letters_age;
    ferry_metrics_counter *errors_redis, *errors_outbox, *errors_dlq;
    ferry_metrics_gauge *up_redis, *up_outbox, *up_dlq;
    ferry_metrics_family *up_family;
    ferry_metrics_gauge *queues_listed, *queue_list_complete;
    gq *queues; /* sorted by name */
    size_t nqueues;
};

static int family(ferry_metrics *m, int kind, const char *name, const char *help,
                  const char *const *labels, size_t nlabels, ferry_metrics_family **out,
                  ferry_error *err) {
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = kind;
    s.name = name;
    s.help = help;
    s.label_names = labels;
    s.label_count = nlabels;
    return ferry_metrics_register(m, &s, out, err);
}

/* An unlabelled gauge family and its one series. */
static int plain_gauge(ferry_metrics *m, const char *name, const char *help,
                       ferry_metrics_gauge **out, ferry_error *err) {
    ferry_metrics_family *f;
    int rc = family(m, FERRY_METRICS_GAUGE, name, help, NULL, 0, &f, err);
    return rc ? rc : ferry_metrics_gauge_with(f, NULL, out, err);
}

int ferry__admin_gauges_create(ferry_metrics *m, ferry__admin_gauges **out, ferry_error *err) {
    if (out) *out = NULL;
    if (!m || !out) return ferry__err(err, FERRY_EINVAL, "gauges: NULL argument");
    ferry__admin_gauges *g = calloc(1, sizeof *g);
    if (!g) return ferry__err(err, FERRY_ENOMEM, "gauges: out of memory");
    g->m = m;
    static const char *const qs[] = {"queue", "state"};
    static const char *const src[] = {"source"};
    ferry_metrics_family *errors = NULL, *up = NULL;
    int rc = family(m, FERRY_METRICS_GAUGE, "ferry_queue_jobs",
                    "Jobs of the queue in each BullMQ state (getJobCounts)", qs, 2, &g->jobs, err);
    if (!rc)
        rc = family(m, FERRY_METRICS_GAUGE, "ferry_queue_oldest_ready_age_seconds",
                    "Seconds the oldest job ready to run has waited, from when it became ready "
                    "(0 when none)",
                    qs, 1, &g->ready_age, err);
    if (!rc)
        rc = family(m, FERRY_METRICS_GAUGE, "ferry_queue_oldest_active_age_seconds",
                    "Seconds since the oldest active job started (0 when none)", qs, 1,
                    &g->active_age, err);
    if (!rc)
        rc = family(m, FERRY_METRICS_GAUGE, "ferry_queue_paused", "1 when the queue is paused", qs,
                    1, &g->paused, err);
    if (!rc)
        rc = plain_gauge(m, "ferry_outbox_unpublished", "Outbox rows not published yet",
                         &g->outbox_unpublished, err);
    if (!rc)
        rc = plain_gauge(m, "ferry_outbox_oldest_unpublished_age_seconds",
                         "Age of the oldest unpublished outbox row (0 when none)", &g->outbox_age,
                         err);
    if (!rc)
        rc = plain_gauge(m, "ferry_dead_letters", "Dead letters never redriven", &g->dead_letters,
                         err);
    if (!rc)
        rc = plain_gauge(m, "ferry_dead_letters_oldest_age_seconds",
                         "Seconds since the oldest never-redriven dead letter failed (0 when none)",
                         &g->dead_letters_age, err);
    if (!rc)
        rc = family(m, FERRY_METRICS_COUNTER, "ferry_serve_scrape_errors_total",
                    "Refreshes of the system-wide gauges that could not read a source", src, 1,
                    &errors, err);
    if (!rc)
        rc = family(m, FERRY_METRICS_GAUGE, "ferry_serve_source_up",
                    "1 when the last refresh read the source, 0 when it failed (its gauges keep "
                    "their last values)",
                    src, 1, &up, err);
    if (!rc)
        rc = plain_gauge(m, "ferry_serve_queues", "Queues the last refresh found (at most 1000)",
                         &g->queues_listed, err);
    if (!rc)
        rc = plain_gauge(m, "ferry_serve_queue_list_complete",
                         "1 when the last refresh listed every queue, 0 when a bound cut the list "
                         "short (queues past it have no series)",
                         &g->queue_list_complete, err);
    const char *v_redis[] = {"redis"}, *v_outbox[] = {"outbox"}, *v_dlq[] = {"dead_letters"};
    if (!rc) rc = ferry_metrics_counter_with(errors, v_redis, &g->errors_redis, err);
    if (!rc) rc = ferry_metrics_counter_with(errors, v_outbox, &g->errors_outbox, err);
    if (!rc) rc = ferry_metrics_counter_with(errors, v_dlq, &g->errors_dlq, err);
    if (!rc) rc = ferry_metrics_gauge_with(up, v_redis, &g->up_redis, err);
    if (!rc) rc = ferry_metrics_gauge_with(up, v_outbox, &g->up_outbox, err);
    if (!rc) rc = ferry_metrics_gauge_with(up, v_dlq, &g->up_dlq, err);
    if (rc) {
        free(g);
        return rc;
    }
    g->up_family = up;
    *out = g;
    return 0;
}

/* ---- Redis: the queues ---------------------------------------------------------------- */

static void drop_queue_series(ferry__admin_gauges *g, const char *name) {
    for (size_t i = 0; i < NSTATES; i++) {
        const char *v[] = {name, STATES[i]};
        ferry__metrics_series_drop(g->jobs, v, NULL);
    }
    const char *v[] = {name};
    ferry__metrics_series_drop(g->ready_age, v, NULL);
    ferry__metrics_series_drop(g->active_age, v, NULL);
    ferry__metrics_series_drop(g->paused, v, NULL);
}

static int gq_cmp(const void *a, const void *b) {
    return strcmp(((const gq *)a)->name, ((const gq *)b)->name);
}

/* The entry of `name` in sorted list[0..n), or NULL. */
static gq *gq_find(gq *list, size_t n, const char *name) {
    gq key = {.name = (char *)name};
    return n ? bsearch(&key, list, n, sizeof *list, gq_cmp) : NULL;
}

/* The handle of queue `name` kept from the last refresh (taken out of old[], sorted), or a
 * new one. */
static int queue_for(const ferry__admin_config *cfg, gq *old, size_t nold, const char *name,
                     ferry_queue **q, ferry_error *err) {
    gq *o = gq_find(old, nold, name);
    if (o && o->q) {
        *q = o->q;
        o->q = NULL;
        return 0;
    }
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = cfg->redis;
    qo.prefix = cfg->prefix;
    qo.skip_meta_update = 1; /* looking creates nothing */
    return ferry_queue_open(name, &qo, q, err);
}

/* Counts, paused flag and ages of one queue into its series. */
static int queue_refresh(ferry__admin_gauges *g, ferry_queue *q, const char *name,
                         ferry_error *err) {
    ferry_job_counts c;
    ferry_job_ages a;
    int paused = 0;
    int rc = ferry_queue_counts(q, &c, err);
    if (!rc) rc = ferry_queue_is_paused(q, &paused, err);
    if (!rc) rc = ferry_queue_ages(q, &a, err);
    if (rc) return rc;
    const long long n[NSTATES] = {c.waiting, c.active,           c.delayed,   c.prioritized,
                                  c.paused,  c.waiting_children, c.completed, c.failed};
    ferry_metrics_gauge *s = NULL;
    for (size_t i = 0; i < NSTATES; i++) {
        const char *v[] = {name, STATES[i]};
        if ((rc = ferry_metrics_gauge_with(g->jobs, v, &s, err))) return rc;
        ferry_metrics_gauge_set(s, (double)n[i]);
    }
    const char *v[] = {name};
    if ((rc = ferry_metrics_gauge_with(g->ready_age, v, &s, err))) return rc;
    ferry_metrics_gauge_set(s, a.ready_found ? a.oldest_ready_s : 0);
    if ((rc = ferry_metrics_gauge_with(g->active_age, v, &s, err))) return rc;
    ferry_metrics_gauge_set(s, a.active_found ? a.oldest_active_s : 0);
    if ((rc = ferry_metrics_gauge_with(g->paused, v, &s, err))) return rc;
    ferry_metrics_gauge_set(s, paused ? 1 : 0);
    return 0;
}

/* A name the registry takes as a label value (UTF-8, at most 256 bytes), so a queue whose
 * name is not one is left out rather than failing the refresh. */
static int labelable(const char *name) {
    size_t n = strlen(name);
    if (n > FERRY_METRICS_LABEL_VALUE_MAX) return 0;
    for (size_t i = 0; i < n;) {
        size_t k = ferryx_utf8_seq((const unsigned char *)name + i, n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

static int refresh_queues(ferry__admin_gauges *g, const ferry__admin_config *cfg,
                          ferry_error *err) {
    char **names = NULL;
    size_t n = 0;
    int complete = 0;
    int rc =
        ferry_queue_names(cfg->redis, cfg->prefix, GAUGES_QUEUES_MAX, &names, &n, &complete, err);
    if (rc) return rc;
    ferry_metrics_gauge_set(g->queues_listed, (double)n);
    ferry_metrics_gauge_set(g->queue_list_complete, complete ? 1 : 0);
    gq *now = n ? calloc(n, sizeof *now) : NULL;
    if (n && !now) {
        ferry_queue_job_ids_free(names, n);
        return ferry__err(err, FERRY_ENOMEM, "gauges: out of memory");
    }
    size_t kept = 0;
    int first_rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!labelable(names[i])) continue;
        ferry_queue *q = NULL;
        ferry_error e = {0};
        rc = queue_for(cfg, g->queues, g->nqueues, names[i], &q, &e);
        if (!rc) rc = queue_refresh(g, q, names[i], &e);
        if (rc && !first_rc) first_rc = ferry__err(err, rc, "gauges: queue %s", e.message);
        now[kept].name = names[i];
        now[kept].q = q; /* may be NULL after a failed open: retried next time */
        names[i] = NULL;
        kept++;
    }
    /* Queues of the last refresh not seen now: gone (when the list is complete). */
    size_t listed = kept;
    if (listed > 1) qsort(now, listed, sizeof *now, gq_cmp);
    for (size_t i = 0; i < g->nqueues; i++) {
        int seen = gq_find(now, listed, g->queues[i].name) != NULL;
        if (!seen && complete) {
            drop_queue_series(g, g->queues[i].name);
        } else if (!seen) {
            /* not known to be gone: keep its series, and it in the list */
            gq *grown = realloc(now, (kept + 1) * sizeof *now);
            if (grown) {
                now = grown;
                now[kept++] = g->queues[i];
                g->queues[i].name = NULL;
                g->queues[i].q = NULL;
            }
        }
        ferry_queue_close(g->queues[i].q);
        free(g->queues[i].name);
    }
    free(g->queues);
    if (kept > listed) qsort(now, kept, sizeof *now, gq_cmp);
    g->queues = now;
    g->nqueues = kept;
    ferry_queue_job_ids_free(names, n);
    return first_rc;
}

/* ---- PostgreSQL: outbox and dead letters ---------------------------------------------- */

static int refresh_outbox(ferry__admin_gauges *g, const ferry__admin_config *cfg, PGconn *conn,
                          ferry_error *err) {
    ferry_outbox_options o;
    ferry_outbox_options_init(&o);
    o.schema = cfg->schema;
    ferry_outbox_status *st = NULL;
    int rc = ferry_outbox_status_get(conn, &o, NULL, &st, err);
    if (rc) return rc;
    ferry_metrics_gauge_set(g->outbox_unpublished, (double)st->unpublished);
    ferry_metrics_gauge_set(g->outbox_age, st->unpublished ? st->oldest_age_s : 0);
    ferry_outbox_status_free(st);
    return 0;
}

static int refresh_dead_letters(ferry__admin_gauges *g, const ferry__admin_config *cfg,
                                PGconn *conn, ferry_error *err) {
    ferry_dlq_options o;
    ferry_dlq_options_init(&o);
    o.schema = cfg->schema;
    ferry_dlq_filter f = {0};
    f.redriven_fewer_than = 1; /* never redriven */
    f.limit = 1;               /* the oldest failure, and the total */
    ferry_dlq_list *l = NULL;
    int rc = ferry_dlq_list_get(conn, &o, &f, &l, err);
    if (rc) return rc;
    double age = 0;
    if (l->n) {
        long long now = (long long)ferry__now_ms(), at = l->entries[0].failed_at_ms;
        age = at < now ? (double)(now - at) / 1000.0 : 0;
    }
    ferry_metrics_gauge_set(g->dead_letters, (double)l->total);
    ferry_metrics_gauge_set(g->dead_letters_age, age);
    ferry_dlq_list_free(l);
    return 0;
}

/* Count the outcome of reading one source. */
static void source_done(ferry_metrics_counter *errors, ferry_metrics_gauge *up, int rc) {
    if (rc) ferry_metrics_counter_add(errors, 1);
    ferry_metrics_gauge_set(up, rc ? 0 : 1);
}

int ferry__admin_gauges_refresh(ferry__admin_gauges *g, const ferry__admin_config *cfg,
                                PGconn *conn, ferry_error *err) {
    if (!g || !cfg) return ferry__err(err, FERRY_EINVAL, "gauges refresh: NULL argument");
    ferry_error e = {0};
    int first = refresh_queues(g, cfg, &e);
    source_done(g->errors_redis, g->up_redis, first);
    if (first) ferry__err(err, first, "%s", e.message);
    if (!conn && cfg->has_database) { /* configured, but no connection could be had */
        source_done(g->errors_outbox, g->up_outbox, FERRY_EIO);
        source_done(g->errors_dlq, g->up_dlq, FERRY_EIO);
        if (!first) first = ferry__err(err, FERRY_EIO, "gauges: no database connection");
        return first;
    }
    if (!conn) { /* no database: no outbox or dead-letter source to report on */
        const char *v_outbox[] = {"outbox"}, *v_dlq[] = {"dead_letters"};
        ferry__metrics_series_drop(g->up_family, v_outbox, NULL);
        ferry__metrics_series_drop(g->up_family, v_dlq, NULL);
        return first;
    }
    /* looked up again, so a series dropped by a refresh without a database shows again */
    const char *v_outbox[] = {"outbox"}, *v_dlq[] = {"dead_letters"};
    ferry_metrics_gauge_with(g->up_family, v_outbox, &g->up_outbox, NULL);
    ferry_metrics_gauge_with(g->up_family, v_dlq, &g->up_dlq, NULL);
    int rc = refresh_outbox(g, cfg, conn, &e);
    source_done(g->errors_outbox, g->up_outbox, rc);
    if (rc && !first) first = ferry__err(err, rc, "gauges: outbox: %s", e.message);
    rc = refresh_dead_letters(g, cfg, conn, &e);
    source_done(g->errors_dlq, g->up_dlq, rc);
    if (rc && !first) first = ferry__err(err, rc, "gauges: dead letters: %s", e.message);
    return first;
}

void ferry__admin_gauges_destroy(ferry__admin_gauges *g) {
    if (!g) return;
    for (size_t i = 0; i < g->nqueues; i++) {
        ferry_queue_close(g->queues[i].q);
        free(g->queues[i].name);
    }
    free(g->queues);
    free(g);
}

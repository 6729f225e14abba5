/* recorder.c - a worker's dead-letter recorder: final failures handed over by the worker
 * (ferry_dlq_recorder_final_failure, on the worker's thread, never blocking) wait in a
 * bounded queue until the recorder's own thread writes them with its own connection. When
 * PostgreSQL is away they stay queued and the thread reconnects with a doubling pause;
 * what does not fit, or is still queued at close, is counted and logged as missed (the job
 * is in its queue's failed set, where `ferry dlq sync` finds it). A failure written twice
 * (a reply lost after the commit) is a no-op the second time: the INSERT's conflict key. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadletter/dlq_internal.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/printable.h"

#define CLIENT_SLACK_MS 1000
#define MISS_LOG_EVERY_MS 1000

/* One failure, owning copies of its texts. */
typedef struct held {
    char *prefix, *queue, *job_id, *job_name, *data, *opts, *error, *stacktrace;
    long attempts_made;
    long long job_timestamp_ms, failed_at_ms;
} held;

struct ferry_dlq_recorder {
    char *url, *schema, *prefix;
    char qs[FERRY__QSCHEMA_MAX];
    char insert_sql[FERRY__DLQ_INSERT_SQL_MAX];
    size_t capacity;
    int connect_ms, statement_ms, retry_min_ms, retry_max_ms;
    ferry_log_fn log;
    void *log_ud;
    pthread_mutex_t log_mu;

    pthread_mutex_t mu;
    pthread_cond_t wake; /* work, or stop */
    pthread_cond_t idle; /* nothing held, nothing being written */
    held *ring;
    size_t head, count;
    int writing; /* 1 while the thread writes one taken out of the ring */
    int stopping;
    int64_t stop_at; /* mono ms: give up on what is held */
    ferry_dlq_recorder_stats st;
    int64_t last_miss_log;
    long long misses_unlogged;

    pthread_t thread;
    ferry__pgc pg;
    ferry_metrics_family *recorded; /* ferry_dead_letters_total, or NULL */
};

static void rec_log(ferry_dlq_recorder *r, int level, const char *fmt, ...) FERRY_PRINTF(3, 4);
static void rec_log(ferry_dlq_recorder *r, int level, const char *fmt, ...) {
    if (!r->log) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&r->log_mu);
    r->log(level, line, r->log_ud);
    pthread_mutex_unlock(&r->log_mu);
}

static void held_free(held *h) {
    free(h->prefix);
    free(h->queue);
    free(h->job_id);
    free(h->job_name);
    free(h->data);
    free(h->opts);
    free(h->error);
    free(h->stacktrace);
    memset(h, 0, sizeof *h);
}

static int dup_opt(char **dst, const char *s) {
    *dst = NULL;
    if (!s) return 0;
    *dst = strdup(s);
    return *dst ? 0 : -1;
}

static int held_copy(held *h, const ferry_dlq_failure *f) {
    memset(h, 0, sizeof *h);
    int bad = dup_opt(&h->prefix, f->prefix) | dup_opt(&h->queue, f->queue) |
              dup_opt(&h->job_id, f->job_id) | dup_opt(&h->job_name, f->job_name) |
              dup_opt(&h->data, f->data) | dup_opt(&h->opts, f->opts) |
              dup_opt(&h->error, f->error) | dup_opt(&h->stacktrace, f->stacktrace);
    h->attempts_made = f->attempts_made;
    h->job_timestamp_ms = f->job_timestamp_ms;
    h->failed_at_ms = f->failed_at_ms;
    if (bad) held_free(h);
    return bad ? -1 : 0;
}

static ferry_dlq_failure held_failure(const held *h) {
    ferry_dlq_failure f = {
        h->prefix, h->queue,      h->job_id,        h->job_name,         h->data,        h->opts,
        h->error,  h->stacktrace, h->attempts_made, h->job_timestamp_ms, h->failed_at_ms};
    return f;
}

/* A miss, counted; logged at once for the first and then at most once a second with the
 * count since (caller holds mu). */
static void miss_locked(ferry_dlq_recorder *r, const char *queue, const char *job_id,
                        const char *why) {
    r->st.missed++;
    int64_t now = ferry__mono_ms();
    if (r->last_miss_log && now - r->last_miss_log < MISS_LOG_EVERY_MS) {
        r->misses_unlogged++;
        return;
    }
    char q[160], id[160];
    rec_log(r, FERRY_LOG_WARN,
            "dead letters: job %s of queue %s not recorded (%s)%s; it stays in the queue's "
            "failed set: `ferry dlq sync` records it",
            ferryx_printable(job_id ? job_id : "", id, sizeof id),
            ferryx_printable(queue ? queue : "", q, sizeof q), why,
            r->misses_unlogged ? " (and earlier misses not logged one by one)" : "");
    r->misses_unlogged = 0;
    r->last_miss_log = now;
}

void ferry_dlq_recorder_options_init(ferry_dlq_recorder_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

int ferry_dlq_recorder_push(ferry_dlq_recorder *r, const ferry_dlq_failure *f) {
    if (!r || !f || !f->queue || !*f->queue || !f->job_id || !*f->job_id) return FERRY_EINVAL;
    pthread_mutex_lock(&r->mu);
    int rc = 0;
    if (r->stopping) {
        miss_locked(r, f->queue, f->job_id, "the recorder is closing");
        rc = FERRY_ECLOSED;
    } else if (r->count == r->capacity) {
        miss_locked(r, f->queue, f->job_id, "the recorder's queue is full");
        rc = FERRY_ETOOBIG;
    } else if (held_copy(&r->ring[(r->head + r->count) % r->capacity], f)) {
        miss_locked(r, f->queue, f->job_id, "out of memory");
        rc = FERRY_ENOMEM;
    } else {
        r->count++;
        r->st.pending = (long long)r->count + r->writing;
        pthread_cond_signal(&r->wake);
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void ferry_dlq_recorder_final_failure(const ferry_job *job, const char *reason, void *recorder) {
    ferry_dlq_recorder *r = recorder;
    if (!r || !job) return;
    ferry_dlq_failure f = {
        .prefix = r->prefix,
        .queue = ferry_job_queue(job),
        .job_id = ferry_job_id(job),
        .job_name = ferry_job_name(job),
        .data = ferry_job_data(job),
        .opts = ferry_job_opts(job),
        .error = reason,
        .stacktrace = ferry_job_failure_stacktrace(job),
        /* the failure itself counted one more attempt (BullMQ's moveToFinished) */
        .attempts_made = ferry_job_attempts_made(job) + 1,
        .job_timestamp_ms = ferry_job_timestamp(job) > 0 ? ferry_job_timestamp(job) : 0,
        .failed_at_ms = ferry__now_ms(),
    };
    (void)ferry_dlq_recorder_push(r, &f);
}

/* ---- the thread --------------------------------------------------------------------- */

static int64_t deadline(const ferry_dlq_recorder *r) {
    return ferry__mono_ms() + r->statement_ms + CLIENT_SLACK_MS;
}

/* Wait on `wake` until ms have passed or stop is asked (caller holds mu). */
static void pause_locked(ferry_dlq_recorder *r, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&r->wake, &r->mu, &ts);
}

/* Connect (outside mu). Returns 0 when connected. */
static int connect_db(ferry_dlq_recorder *r, ferry_error *err) {
    ferry__pg_session s = {r->url, "ferry dlq recorder", r->connect_ms, r->statement_ms,
                           r->statement_ms + CLIENT_SLACK_MS};
    return ferry__pgc_connect(&r->pg, &s, err);
}

/* Whether a server error about this one failure will not go away by retrying: the data
 * (class 22) or a limit (class 54). Anything else (a missing table before `ferry migrate`,
 * a read-only server during a failover, a timeout) is retried. */
static int permanent_sqlstate(const char *st) {
    return (st[0] == '2' && st[1] == '2') || (st[0] == '5' && st[1] == '4');
}

static void *recorder_main(void *arg) {
    ferry_dlq_recorder *r = arg;
    int pause_ms = 0;
    int down_logged = 0;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (r->count == 0 && !r->stopping)
            pthread_cond_wait(&r->wake, &r->mu);
        if (r->count == 0 || (r->stopping && ferry__mono_ms() >= r->stop_at)) break;
        held h = r->ring[r->head];
        r->writing = 1;
        r->head = (r->head + 1) % r->capacity;
        r->count--;
        pthread_mutex_unlock(&r->mu);

        ferry_error err = {0};
        int rc = 0, done = 0, permanent = 0;
        if (!r->pg.conn) rc = connect_db(r, &err);
        PGresult *res = NULL;
        if (rc == 0) {
            ferry_dlq_failure f = held_failure(&h);
            ferry__dlq_params p;
            rc = ferry__dlq_params_fill(&p, &f, "worker", &err);
            if (rc) {
                permanent = 1;
            } else {
                rc = ferry__pgc_exec(&r->pg, deadline(r), "dead letter", NULL, r->insert_sql,
                                     FERRY__DLQ_NPARAMS, p.v, &res, &err);
                ferry__dlq_params_free(&p);
                if (rc == 0)
                    done = 1;
                else if (!r->pg.broken && permanent_sqlstate(r->pg.sqlstate))
                    permanent = 1;
            }
        }
        char state[6];
        memcpy(state, r->pg.sqlstate, sizeof state); /* close below clears it */
        int inserted = done && res && atoi(PQcmdTuples(res)) > 0;
        PQclear(res);
        if (r->pg.conn && (r->pg.broken || (rc && !permanent))) ferry__pgc_close(&r->pg);

        pthread_mutex_lock(&r->mu);
        r->writing = 0;
        if (done || permanent) {
            if (done && inserted) {
                r->st.recorded++;
                ferry__dlq_count_recorded(r->recorded, h.queue);
            }
            if (done && !inserted) r->st.duplicates++;
            if (permanent) miss_locked(r, h.queue, h.job_id, err.message);
            held_free(&h);
            if (down_logged) {
                rec_log(r, FERRY_LOG_INFO,
                        "dead letters: database reachable again; recording "
                        "resumes (%zu held)",
                        r->count);
                down_logged = 0;
            }
            r->st.connected = r->pg.conn != NULL && !r->pg.broken;
            pause_ms = 0;
        } else {
            /* put it back in front and wait before the next try */
            if (r->count < r->capacity) {
                r->head = (r->head + r->capacity - 1) % r->capacity;
                r->ring[r->head] = h;
                r->count++;
            } else {
                miss_locked(r, h.queue, h.job_id, "the recorder's queue is full");
                held_free(&h);
            }
            r->st.connected = 0;
            if (!down_logged) {
                r->st.outages++;
                rec_log(r, FERRY_LOG_WARN,
                        "dead letters: cannot record (%s)%s; %zu held, retrying with backoff",
                        err.message,
                        !strcmp(state, "42P01")
                            ? " (is the schema migrated? run `ferry migrate` with the same "
                              "database and schema)"
                            : "",
                        r->count);
                down_logged = 1;
            }
            pause_ms = pause_ms ? pause_ms * 2 : r->retry_min_ms;
            if (pause_ms > r->retry_max_ms) pause_ms = r->retry_max_ms;
            int64_t left = r->stopping ? r->stop_at - ferry__mono_ms() : pause_ms;
            if (left > 0) pause_locked(r, left < pause_ms ? (int)left : pause_ms);
        }
        r->st.pending = (long long)r->count;
        if (r->count == 0) pthread_cond_broadcast(&r->idle);
    }
    r->st.pending = (long long)r->count;
    pthread_cond_broadcast(&r->idle);
    pthread_mutex_unlock(&r->mu);
    ferry__pgc_close(&r->pg);
    return NULL;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

static void recorder_free(ferry_dlq_recorder *r) {
    for (size_t i = 0; i < r->count; i++)
        held_free(&r->ring[(r->head + i) % r->capacity]);
    free(r->ring);
    free(r->url);
    free(r->schema);
    free(r->prefix);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->log_mu);
    pthread_cond_destroy(&r->wake);
    pthread_cond_destroy(&r->idle);
    free(r);
}

int ferry_dlq_recorder_start(const ferry_dlq_recorder_options *o, ferry_dlq_recorder **out,
                             ferry_error *err) {
    if (out) *out = NULL;
    if (!o || !out) return ferry__err(err, FERRY_EINVAL, "dead letter recorder: NULL argument");
    const char *url = o->database_url ? o->database_url : "";
    int rc = *url ? ferry_outbox_database_url_check(url, err) : 0;
    if (rc) return rc;
    char qs[FERRY__QSCHEMA_MAX];
    rc = ferry__pg_quote_schema(o->schema, qs, err);
    if (rc) return rc;
    const char *prefix = o->prefix ? o->prefix : FERRY_DEFAULT_PREFIX;
    if (!*prefix || strlen(prefix) > FERRY_QUEUE_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "dead letter recorder: prefix must be 1..%d bytes",
                          FERRY_QUEUE_NAME_MAX);
    if (o->connect_timeout_ms < 0 || o->statement_timeout_ms < 0 || o->retry_min_ms < 0 ||
        o->retry_max_ms < 0)
        return ferry__err(err, FERRY_EINVAL, "dead letter recorder: timeouts must be >= 0");
    int rmin = o->retry_min_ms ? o->retry_min_ms : 200;
    int rmax = o->retry_max_ms ? o->retry_max_ms : 10000;
    if (rmax < rmin)
        return ferry__err(err, FERRY_EINVAL,
                          "dead letter recorder: retry_max_ms (%d) is below retry_min_ms (%d)",
                          rmax, rmin);
    ferry_metrics_family *recorded = NULL;
    rc = ferry__dlq_recorded_family(o->metrics, &recorded, err);
    if (rc) return rc;
    size_t cap = o->capacity ? o->capacity : FERRY_DLQ_RECORDER_CAPACITY;
    if (cap > 10000000)
        return ferry__err(err, FERRY_EINVAL, "dead letter recorder: capacity over 10000000");
    ferry_dlq_recorder *r = calloc(1, sizeof *r);
    if (!r) return ferry__err(err, FERRY_ENOMEM, "dead letter recorder: out of memory");
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->log_mu, NULL);
    pthread_cond_init(&r->wake, NULL);
    pthread_cond_init(&r->idle, NULL);
    r->capacity = cap;
    r->ring = calloc(cap, sizeof *r->ring);
    r->url = strdup(url);
    r->schema = o->schema ? strdup(o->schema) : NULL;
    r->prefix = strdup(prefix);
    if (!r->ring || !r->url || !r->prefix || (o->schema && !r->schema)) {
        recorder_free(r);
        return ferry__err(err, FERRY_ENOMEM, "dead letter recorder: out of memory");
    }
    memcpy(r->qs, qs, sizeof qs);
    ferry__dlq_insert_sql(r->qs, r->insert_sql, sizeof r->insert_sql);
    r->connect_ms = o->connect_timeout_ms ? o->connect_timeout_ms : 5000;
    r->statement_ms = o->statement_timeout_ms ? o->statement_timeout_ms : 5000;
    r->retry_min_ms = rmin;
    r->retry_max_ms = rmax;
    r->log = o->log;
    r->log_ud = o->log_userdata;
    r->recorded = recorded;
    if (pthread_create(&r->thread, NULL, recorder_main, r) != 0) {
        recorder_free(r);
        return ferry__err(err, FERRY_EIO, "dead letter recorder: cannot start its thread");
    }
    *out = r;
    return 0;
}

void ferry_dlq_recorder_get_stats(ferry_dlq_recorder *r, ferry_dlq_recorder_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    *out = r->st;
    out->pending = (long long)r->count + r->writing;
    pthread_mutex_unlock(&r->mu);
}

int ferry_dlq_recorder_flush(ferry_dlq_recorder *r, int timeout_ms) {
    if (!r) return 0;
    int64_t end = ferry__mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    pthread_mutex_lock(&r->mu);
    while (r->count || r->writing) {
        int64_t left = end - ferry__mono_ms();
        if (left <= 0) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int step = left > 100 ? 100 : (int)left;
        ts.tv_nsec += (long)step * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&r->idle, &r->mu, &ts);
    }
    int rc = r->count || r->writing ? FERRY_ETIMEDOUT : 0;
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void ferry_dlq_recorder_close(ferry_dlq_recorder *r, int deadline_ms) {
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    r->stopping = 1;
    r->stop_at = ferry__mono_ms() + (deadline_ms > 0 ? deadline_ms : 0);
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    if (r->count) {
        r->st.missed += (long long)r->count;
        rec_log(r, FERRY_LOG_WARN,
                "dead letters: %zu final failures not recorded at close; their jobs stay in "
                "their queues' failed sets: `ferry dlq sync QUEUE` records them",
                r->count);
    }
    recorder_free(r);
}

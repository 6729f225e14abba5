/* relay.c - the relay engine's life cycle and main loop: options, routes and queues at
 * create/start, then wait for a NOTIFY (or the poll interval), publish batches while they
 * come back full (relay_batch.c), back off (capped, jittered) after failures, reconnect to
 * PostgreSQL (conn.c), and count and warn about topics no route knows. One relay adds one batch's
 * jobs at a time, oldest first; replicas share the work through SKIP LOCKED. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outbox/relay/relay_internal.h"
#include "outbox/routes.h"
#include "queue/queue_module.h" /* ferry__queue_data_limit, ferry__queue_defaults_load */
#include "redis/eviction.h"
#include "redis/options.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/printable.h"
#include "util/range.h"
#include "util/retry_delay.h"

#define DEFAULT_BATCH 100
#define MAX_BATCH FERRY_RELAY_BATCH_SIZE_MAX
#define DEFAULT_POLL_MS 500
#define DEFAULT_MAX_BACKOFF_MS 30000
#define BACKOFF_BASE_MS 100
#define DEFAULT_STATEMENT_MS 10000
#define DEFAULT_CONNECT_MS 5000
#define DEFAULT_RETENTION_S (7LL * 24 * 3600)
#define DEFAULT_RETENTION_INTERVAL_MS 3600000
#define DEFAULT_RETENTION_BATCH 1000
#define DEFAULT_UNKNOWN_MS 60000
#define DEFAULT_MAX_ENVELOPE FERRY_RELAY_DEFAULT_MAX_ENVELOPE
#define MAX_ENVELOPE_LIMIT FERRY_RELAY_MAX_ENVELOPE_LIMIT
#define DAY_MS (24 * 3600 * 1000)
#define UNKNOWN_TOPICS_SHOWN 100

void ferry_relay_options_init(ferry_relay_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

/* ---- create / free ------------------------------------------------------------------- */

static char *dup_or_null(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

/* The relay's bounds check: "relay: <name> <v> out of range <lo>..<hi>". */
static int range(ferry_error *err, const char *name, long long v, long long lo, long long hi) {
    return ferry__check_range(err, "relay", name, v, lo, hi);
}

static int copy_options(ferry_relay *r, const ferry_relay_options *o, ferry_error *err) {
    int rc = range(err, "batch_size", o->batch_size, 0, MAX_BATCH);
    if (!rc)
        rc = range(err, "poll_interval_ms", o->poll_interval_ms, 0, FERRY_RELAY_INTERVAL_MAX_MS);
    if (!rc) rc = range(err, "max_backoff_ms", o->max_backoff_ms, 0, FERRY_RELAY_INTERVAL_MAX_MS);
    if (!rc)
        rc = range(err, "statement_timeout_ms", o->statement_timeout_ms, 0,
                   FERRY_RELAY_TIMEOUT_MAX_MS);
    if (!rc)
        rc = range(err, "connect_timeout_ms", o->connect_timeout_ms, 0, FERRY_RELAY_TIMEOUT_MAX_MS);
    if (!rc) rc = range(err, "retention_s", o->retention_s, -1, FERRY_RELAY_RETENTION_MAX_S);
    if (!rc)
        rc = range(err, "retention_interval_ms", o->retention_interval_ms, 0,
                   FERRY_RELAY_RETENTION_INTERVAL_MAX_MS);
    if (!rc)
        rc = range(err, "retention_batch", o->retention_batch, 0, FERRY_RELAY_RETENTION_BATCH_MAX);
    if (!rc)
        rc = range(err, "unknown_report_ms", o->unknown_report_ms, 0, FERRY_RELAY_INTERVAL_MAX_MS);
    if (!rc)
        rc = range(err, "max_envelope_bytes", (long long)o->max_envelope_bytes, 0,
                   (long long)MAX_ENVELOPE_LIMIT);
    if (!rc && o->batch_bytes &&
        (o->batch_bytes < FERRY_RELAY_BATCH_BYTES_MIN ||
         o->batch_bytes > FERRY_RELAY_BATCH_BYTES_MAX))
        rc = ferry__err(err, FERRY_EINVAL, "relay: batch_bytes %zu out of range %zu..%zu (0 = %zu)",
                        o->batch_bytes, FERRY_RELAY_BATCH_BYTES_MIN, FERRY_RELAY_BATCH_BYTES_MAX,
                        FERRY_RELAY_BATCH_BYTES_DEFAULT);
    if (rc) return rc;
    r->batch_size = o->batch_size ? o->batch_size : DEFAULT_BATCH;
    r->batch_bytes = o->batch_bytes ? o->batch_bytes : FERRY_RELAY_BATCH_BYTES_DEFAULT;
    r->claim_limit = r->batch_size;
    r->poll_interval_ms = o->poll_interval_ms ? o->poll_interval_ms : DEFAULT_POLL_MS;
    r->max_backoff_ms = o->max_backoff_ms ? o->max_backoff_ms : DEFAULT_MAX_BACKOFF_MS;
    r->statement_timeout_ms =
        o->statement_timeout_ms ? o->statement_timeout_ms : DEFAULT_STATEMENT_MS;
    r->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : DEFAULT_CONNECT_MS;
    r->retention_s = o->retention_s ? o->retention_s : DEFAULT_RETENTION_S;
    r->retention_interval_ms =
        o->retention_interval_ms ? o->retention_interval_ms : DEFAULT_RETENTION_INTERVAL_MS;
    r->retention_batch = o->retention_batch ? o->retention_batch : DEFAULT_RETENTION_BATCH;
    r->unknown_report_ms = o->unknown_report_ms ? o->unknown_report_ms : DEFAULT_UNKNOWN_MS;
    r->max_envelope = o->max_envelope_bytes ? o->max_envelope_bytes : DEFAULT_MAX_ENVELOPE;
    r->log = o->log;
    r->log_userdata = o->log_userdata;
    r->event = o->event;
    r->fault = o->fault;
    r->fault_userdata = o->fault_userdata;

    int oom = 0;
    r->database_url = dup_or_null(o->database_url ? o->database_url : "", &oom);
    r->schema = dup_or_null(o->schema ? o->schema : FERRY_OUTBOX_DEFAULT_SCHEMA, &oom);
    r->prefix = dup_or_null(o->prefix, &oom);
    r->default_job_opts = dup_or_null(o->default_job_opts, &oom);
    if (!oom && ferry__redis_options_dup(&r->redis, o->redis, NULL)) oom = 1;
    /* The same defaults the queue uses, made explicit for the idle-in-transaction budget. */
    if (!r->redis.connect_timeout_ms) r->redis.connect_timeout_ms = 5000;
    if (!r->redis.command_timeout_ms) r->redis.command_timeout_ms = 5000;
    if (oom) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    ferryx_printable(r->schema, r->schema_shown, sizeof r->schema_shown);
    return ferry__pg_quote_schema(r->schema, r->qs, err);
}

/* Distinct queues of the routes, and each topic's targets as queue indexes. */
static int index_queues(ferry_relay *r, ferry_error *err) {
    size_t nt = ferry_routes_topic_count(r->routes), total = 0;
    for (size_t i = 0; i < nt; i++)
        total += ferry_routes_target_count(r->routes, i);
    r->topics = calloc(nt, sizeof *r->topics);
    r->queue_names = calloc(total, sizeof *r->queue_names);
    const char **topic_names = calloc(nt, sizeof *topic_names);
    if (!r->topics || !r->queue_names || !topic_names) {
        free(topic_names);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < nt; i++) {
        topic_names[i] = ferry_routes_topic(r->routes, i);
        relay_topic *t = &r->topics[i];
        t->ntargets = ferry_routes_target_count(r->routes, i);
        t->targets = calloc(t->ntargets, sizeof *t->targets);
        if (!t->targets) {
            free(topic_names);
            return ferry__err(err, FERRY_ENOMEM, "out of memory");
        }
        for (size_t j = 0; j < t->ntargets; j++) {
            const char *q = NULL;
            ferry_routes_target(r->routes, i, j, &q, &t->targets[j].job_name);
            size_t k = 0;
            while (k < r->nqueues && strcmp(r->queue_names[k], q))
                k++;
            if (k == r->nqueues) r->queue_names[r->nqueues++] = (char *)q; /* borrowed */
            t->targets[j].queue = k;
        }
    }
    r->topics_array = ferry__pg_text_array(topic_names, nt);
    free(topic_names);
    r->queues = calloc(r->nqueues ? r->nqueues : 1, sizeof *r->queues);
    r->queue_opts = calloc(r->nqueues ? r->nqueues : 1, sizeof *r->queue_opts);
    if (!r->topics_array || !r->queues || !r->queue_opts)
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    return 0;
}

/* Attach each queue_defaults entry to its queue: checked (a queue the routes target, once,
 * valid JobsOptions) and copied. */
static int index_queue_defaults(ferry_relay *r, const ferry_relay_options *o, ferry_error *err) {
    if (o->nqueue_defaults && !o->queue_defaults)
        return ferry__err(err, FERRY_EINVAL, "queue_defaults: NULL with nqueue_defaults %zu",
                          o->nqueue_defaults);
    if (o->nqueue_defaults > FERRY_RELAY_QUEUE_DEFAULTS_MAX)
        return ferry__err(err, FERRY_EINVAL, "queue_defaults: %zu entries, at most %d",
                          o->nqueue_defaults, FERRY_RELAY_QUEUE_DEFAULTS_MAX);
    for (size_t i = 0; i < o->nqueue_defaults; i++) {
        const ferry_relay_queue_defaults *d = &o->queue_defaults[i];
        char shown[4 * FERRY_QUEUE_NAME_MAX + 8], what[64];
        if (!d->queue || !d->job_opts)
            return ferry__err(err, FERRY_EINVAL,
                              "queue_defaults[%zu]: queue and job_opts are "
                              "required",
                              i);
        size_t k = 0;
        while (k < r->nqueues && strcmp(r->queue_names[k], d->queue))
            k++;
        ferryx_printable(d->queue, shown, sizeof shown);
        if (k == r->nqueues)
            return ferry__err(err, FERRY_EINVAL,
                              "queue_defaults[%zu]: queue '%s' is not a target of any route", i,
                              shown);
        if (r->queue_opts[k])
            return ferry__err(err, FERRY_EINVAL, "queue_defaults[%zu]: queue '%s' given twice", i,
                              shown);
        snprintf(what, sizeof what, "queue_defaults[%zu].job_opts", i);
        int rc = ferry__queue_defaults_load(d->job_opts, what, NULL, err);
        if (rc) return rc;
        r->queue_opts[k] = strdup(d->job_opts);
        if (!r->queue_opts[k]) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    return 0;
}

int ferry_relay_create(const ferry_relay_options *o, ferry_relay **out, ferry_error *err) {
    if (out) *out = NULL;
    if (!o || !out) return ferry__err(err, FERRY_EINVAL, "ferry_relay_create: NULL argument");
    if (!o->routes == !o->routes_file)
        return ferry__err(err, FERRY_EINVAL, "relay: give exactly one of routes and routes_file");
    ferry_relay *r = calloc(1, sizeof *r);
    if (!r) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    r->stop_pipe[0] = r->stop_pipe[1] = -1;
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->log_mu, NULL);
    atomic_init(&r->stopping, 0);
    int rc = copy_options(r, o, err);
    if (!rc && o->redis && o->redis->url) rc = ferry_redis_url_check(o->redis->url, err);
    if (!rc) rc = ferry_outbox_database_url_check(o->database_url, err);
    /* checked now, not when the first queue opens inside ferry_relay_run */
    if (!rc && o->default_job_opts)
        rc = ferry__queue_defaults_load(o->default_job_opts, "default_job_opts", NULL, err);
    if (!rc) {
        if (o->routes_file) {
            rc = ferry_routes_load(o->routes_file, &r->routes, err);
        } else {
            r->routes = ferry__routes_clone(o->routes);
            if (!r->routes) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
        }
    }
    if (!rc) rc = index_queues(r, err);
    if (!rc) rc = index_queue_defaults(r, o, err);
    if (!rc) rc = ferry__relay_metrics_init(r, o->metrics, err);
    if (!rc && pipe(r->stop_pipe) != 0)
        rc = ferry__err(err, FERRY_EIO, "relay: pipe: %s", strerror(errno));
    if (!rc)
        for (int i = 0; i < 2; i++) {
            fcntl(r->stop_pipe[i], F_SETFD, FD_CLOEXEC);
            fcntl(r->stop_pipe[i], F_SETFL, O_NONBLOCK);
        }
    if (rc) {
        ferry_relay_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void ferry_relay_free(ferry_relay *r) {
    if (!r) return;
    for (size_t i = 0; r->queues && i < r->nqueues; i++)
        ferry_queue_close(r->queues[i]);
    free(r->queues);
    for (size_t i = 0; r->queue_opts && i < r->nqueues; i++)
        free(r->queue_opts[i]);
    free(r->queue_opts);
    if (r->topics)
        for (size_t i = 0; i < ferry_routes_topic_count(r->routes); i++)
            free(r->topics[i].targets);
    free(r->topics);
    free(r->queue_names);
    free(r->topics_array);
    ferry_routes_free(r->routes);
    ferry__pgc_close(&r->pg);
    ferry__pgc_close(&r->pg2);
    ferry__redis_options_release(&r->redis);
    free(r->database_url);
    free(r->schema);
    free(r->prefix);
    free(r->default_job_opts);
    for (int i = 0; i < 2; i++)
        if (r->stop_pipe[i] >= 0) close(r->stop_pipe[i]);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->log_mu);
    free(r);
}

void ferry_relay_stop(ferry_relay *r) {
    if (!r) return;
    int saved = errno; /* callable from a signal handler */
    atomic_store(&r->stopping, 1);
    if (r->stop_pipe[1] >= 0) {
        ssize_t n = write(r->stop_pipe[1], "x", 1);
        (void)n; /* a full pipe is already readable */
    }
    errno = saved;
}

void ferry_relay_get_stats(ferry_relay *r, ferry_relay_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    *out = r->stats;
    pthread_mutex_unlock(&r->mu);
}

/* Next backoff: doubling from BACKOFF_BASE_MS up to the cap. The wait itself is jittered
 * into its upper half so replicas that failed together do not retry together. */
static int backoff_next(const ferry_relay *r, int cur) {
    long long next = cur ? 2LL * cur : BACKOFF_BASE_MS;
    return next > r->max_backoff_ms ? r->max_backoff_ms : (int)next;
}

static void set_backing_off(ferry_relay *r, int on) {
    pthread_mutex_lock(&r->mu);
    r->stats.backing_off = on;
    pthread_mutex_unlock(&r->mu);
}

/* Take the notifications libpq holds; 1 when one is for our schema. */
static int take_notifies(ferry_relay *r) {
    int ours = 0;
    PGnotify *n;
    while ((n = PQnotifies(r->pg.conn)) != NULL) {
        if (!strcmp(n->relname, FERRY__NOTIFY_CHANNEL) && n->extra && !strcmp(n->extra, r->schema))
            ours = 1;
        PQfreemem(n);
    }
    return ours;
}

/* Wait out a backoff (1 = stop requested). Notifications keep arriving meanwhile: read and
 * drop them (they only say "rows exist", and the retry comes anyway) so they pile up
 * neither in the socket nor on the server. */
static int backoff_wait(ferry_relay *r, int64_t until) {
    for (;;) {
        int w = ferry__relay_wait(r, r->pg.conn ? PQsocket(r->pg.conn) : -1, until);
        if (w != 2) return w == 1;
        ferry_error e = {0};
        if (ferry__pgc_consume(&r->pg, &e)) return 0; /* broken: the loop reconnects */
        take_notifies(r);
    }
}

/* ---- unknown topics ------------------------------------------------------------------- */

static void report_unknown(ferry_relay *r) {
    char sql[FERRY__QSCHEMA_MAX + 256];
    snprintf(
        sql, sizeof sql,
        "SELECT topic, count(*) FROM %s.outbox_events WHERE published_at IS NULL "
        "AND NOT (topic = ANY($1::text[])) GROUP BY topic ORDER BY count(*) DESC, topic LIMIT %d",
        r->qs, UNKNOWN_TOPICS_SHOWN);
    const char *params[] = {r->topics_array};
    PGresult *res = NULL;
    ferry_error e = {0};
    if (ferry__pgc_exec(&r->pg, ferry__relay_deadline(r), "unknown topics", NULL, sql, 1, params,
                        &res, &e)) {
        ferry__relay_log(r, FERRY_LOG_WARN, "relay: counting unknown topics failed: %s", e.message);
        return;
    }
    unsigned long long rows = 0, topics = (unsigned long long)PQntuples(res);
    for (int i = 0; i < PQntuples(res); i++) {
        long long n = atoll(PQgetvalue(res, i, 1));
        rows += (unsigned long long)n;
        char topic[4 * FERRY_OUTBOX_TOPIC_MAX + 8];
        ferry_relay_event ev = {.kind = FERRY_RELAY_EVENT_UNKNOWN_TOPIC,
                                .level = FERRY_LOG_WARN,
                                .topic = PQgetvalue(res, i, 0),
                                .count = n};
        ferry__relay_event(r, &ev,
                           "relay: %lld unpublished row(s) with topic '%s', which no route "
                           "names; left for a relay whose routes have it",
                           n, ferryx_printable(PQgetvalue(res, i, 0), topic, sizeof topic));
    }
    PQclear(res);
    pthread_mutex_lock(&r->mu);
    r->stats.unknown_rows = rows;
    r->stats.unknown_topics = topics;
    pthread_mutex_unlock(&r->mu);
}

/* ---- run ----------------------------------------------------------------------------- */

static int open_queues(ferry_relay *r, ferry_error *err) {
    for (size_t i = 0; i < r->nqueues; i++) {
        ferry_queue_options qo;
        ferry_queue_options_init(&qo);
        qo.redis = &r->redis;
        qo.prefix = r->prefix;
        qo.default_job_opts = r->queue_opts[i] ? r->queue_opts[i] : r->default_job_opts;
        qo.max_payload_bytes = r->max_envelope;
        ferry_error e = {0};
        int rc = ferry_queue_open(r->queue_names[i], &qo, &r->queues[i], &e);
        char shown[4 * FERRY_QUEUE_NAME_MAX + 8];
        if (rc)
            return ferry__err(err, rc, "queue %s: %s",
                              ferryx_printable(r->queue_names[i], shown, sizeof shown), e.message);
    }
    r->data_limit = r->max_envelope;
    for (size_t i = 0; i < r->nqueues; i++) {
        size_t lim = ferry__queue_data_limit(r->queues[i]);
        if (lim < r->data_limit) r->data_limit = lim;
    }
    return 0;
}

/* Under a maxmemory-policy other than noeviction Redis may delete job keys when it is full:
 * say so at start, through the log callback (programs using the library see it too). Read
 * on the first queue's connection, which opening the queues made. */
static void warn_eviction(ferry_relay *r) {
    if (!r->nqueues) return;
    ferry_queue *q = r->queues[0];
    char policy[64], msg[512];
    ferry_error e = {0};
    int rc = ferry__queue_eviction_policy(q, policy, sizeof policy, &e);
    if (rc == 1)
        ferry__relay_log(r, FERRY_LOG_INFO,
                         "relay: Redis does not report its maxmemory-policy (INFO refused); it "
                         "must be noeviction, or Redis may evict job keys when full");
    else if (rc)
        ferry__relay_log(r, FERRY_LOG_WARN, "relay: could not read Redis' maxmemory-policy: %s",
                         e.message);
    else if (ferry__redis_eviction_warning(policy, msg, sizeof msg))
        ferry__relay_log(r, FERRY_LOG_WARN, "relay: %s", msg);
}

static void close_queues(ferry_relay *r) {
    for (size_t i = 0; i < r->nqueues; i++) {
        ferry_queue_close(r->queues[i]);
        r->queues[i] = NULL;
    }
}

/* The loop after start-up; returns when stopping. */
static void relay_loop(ferry_relay *r) {
    int need_batch = 1, backoff = 0;
    int64_t now = ferry__mono_ms();
    int64_t next_poll = now + r->poll_interval_ms, next_unknown = now, reconnect_at = 0;
    while (!atomic_load(&r->stopping)) {
        if (!r->pg.conn || r->pg.broken) {
            ferry__pgc_close(&r->pg);
            if (ferry__relay_wait(r, -1, reconnect_at) == 1) break;
            ferry_error e = {0};
            if (ferry__relay_db_connect(r, &e)) {
                backoff = backoff_next(r, backoff);
                ferry__relay_log(r, FERRY_LOG_WARN, "relay: database: %s (retrying in about %d ms)",
                                 e.message, backoff);
                reconnect_at = ferry__mono_ms() + ferryx_jitter_upper_half(backoff);
                set_backing_off(r, 1);
                continue;
            }
            pthread_mutex_lock(&r->mu);
            r->stats.reconnects++;
            pthread_mutex_unlock(&r->mu);
            ferry__relay_log(r, FERRY_LOG_INFO, "relay: database connection restored");
            need_batch = 1;
        }
        now = ferry__mono_ms();
        if (now >= next_unknown) {
            report_unknown(r);
            next_unknown = now + r->unknown_report_ms;
            continue;
        }
        if (need_batch) {
            int rows = 0, more = 0;
            ferry_error e = {0};
            relay_batch_rc brc = ferry__relay_drain(r, &rows, &more, &e);
            if (brc == RELAY_BATCH_NARROWED) continue; /* a claim timed out: logged, retry now */
            if (brc == RELAY_BATCH_OK) {
                if (r->m_last_success)
                    ferry_metrics_gauge_set(r->m_last_success, (double)ferry__now_ms() / 1e3);
                if (backoff) {
                    ferry__relay_log(r, FERRY_LOG_INFO, "relay: publishing again");
                    set_backing_off(r, 0);
                }
                backoff = 0;
                need_batch = more || take_notifies(r);
                next_poll = ferry__mono_ms() + r->poll_interval_ms;
                continue;
            }
            backoff = backoff_next(r, backoff);
            ferry_relay_event ev = {.kind = FERRY_RELAY_EVENT_BATCH_FAILED,
                                    .level = FERRY_LOG_WARN,
                                    .batch_rows = rows > 0 ? (size_t)rows : 0,
                                    .retry_in_ms = backoff,
                                    .code = e.code,
                                    .reason = e.message};
            ferry__relay_event(r, &ev,
                               "relay: batch of %d row(s) not published: %s "
                               "(retrying in about %d ms)",
                               rows, e.message, backoff);
            set_backing_off(r, 1);
            if (r->pg.broken) {
                reconnect_at = ferry__mono_ms() + ferryx_jitter_upper_half(backoff);
            } else if (backoff_wait(r, ferry__mono_ms() + ferryx_jitter_upper_half(backoff))) {
                break;
            }
            need_batch = 1;
            continue;
        }
        if (take_notifies(r)) { /* libpq may have read some during the last statement */
            need_batch = 1;
            continue;
        }
        int64_t until = next_poll < next_unknown ? next_poll : next_unknown;
        int w = ferry__relay_wait(r, PQsocket(r->pg.conn), until);
        if (w == 1) break;
        if (w == 2) {
            ferry_error e = {0};
            if (ferry__pgc_consume(&r->pg, &e)) {
                ferry__relay_log(r, FERRY_LOG_WARN, "relay: %s (reconnecting)", e.message);
                reconnect_at = 0;
                continue;
            }
            need_batch = take_notifies(r);
        } else if (ferry__mono_ms() >= next_poll) {
            need_batch = 1;
        }
    }
}

int ferry_relay_run(ferry_relay *r, ferry_error *err) {
    if (!r) return ferry__err(err, FERRY_EINVAL, "ferry_relay_run: NULL relay");
    if (r->running) return ferry__err(err, FERRY_ESTATE, "relay: already running");
    r->running = 1;
    memset(&r->stats, 0, sizeof r->stats);
    ferry_error e = {0};
    int rc = ferry__relay_db_connect(r, &e);
    if (rc) {
        rc = ferry__err(err, rc, "database: %s", e.message);
    } else if ((rc = open_queues(r, err)) == 0) {
        pthread_t ret;
        int have_ret = 0;
        if (r->retention_s > 0) {
            rc = ferry__relay_retention_start(r, &ret, err);
            have_ret = rc == 0;
        }
        if (rc == 0) {
            warn_eviction(r);
            ferry__relay_pool_start(r);
            ferry__relay_log(
                r, FERRY_LOG_INFO,
                "relay: started (schema %s, %zu topic(s), %zu queue(s), batch %d rows / %zu "
                "bytes, poll %d ms)",
                r->schema_shown, ferry_routes_topic_count(r->routes), r->nqueues, r->batch_size,
                r->batch_bytes, r->poll_interval_ms);
            relay_loop(r);
            ferry__relay_pool_stop(r);
            ferry__relay_log(r, FERRY_LOG_INFO, "relay: stopped");
        }
        if (have_ret) pthread_join(ret, NULL);
    }
    close_queues(r);
    ferry__pgc_close(&r->pg);
    ferry__pgc_close(&r->pg2);
    r->running = 0;
    return rc;
}

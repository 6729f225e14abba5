/* worker.c - the public worker API (include/ferry/worker.h): options, create, start,
 * stop, close, free, stats, and lanes.
 *
 * Lanes: a worker of two or more lanes is a shell around complete inner workers (one per
 * lane, each with its share of the concurrency); the public functions act on every lane,
 * and everything below describes one lane. Start connects every lane before any lane
 * starts a thread; close gives all lanes one deadline.
 *
 * Threads: one dispatcher (dispatch.c, command connection), one waiter (waiter.c,
 * blocking connection) and `concurrency` handler threads (handlers.c): each takes a job
 * from the ready queue, runs the user's handler and pushes the result; when no other
 * fetched job is waiting, the same thread writes the results and fetches the next jobs
 * itself (ferry__lead, dispatch.c) and runs one of them at once, so a handler thread at
 * concurrency 1 goes handler -> Redis -> handler without a single thread switch.
 *
 * Lifetime: the worker is reference counted (the owner + every live thread). Close waits
 * for the threads up to its deadline; threads still running then are detached and free
 * the worker when the last one leaves, so an abandoned handler never touches freed
 * memory. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "redis/options.h"
#include "util/clock.h"
#include "util/error.h"
#include "worker/worker_internal.h"

/* Below this concurrency a batch is too small to be worth splitting in two (each half
 * pays a full round trip); above, overlapping handlers with Redis pays. */
#define SPLIT_MIN_CONCURRENCY 32

/* ---- small shared helpers (declared in worker_internal.h) -------------------------- */

void ferry__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_mono_ms) {
    if (deadline_mono_ms <= 0) {
        pthread_cond_wait(cv, mu);
        return;
    }
    struct timespec ts = {(time_t)(deadline_mono_ms / 1000),
                          (long)(deadline_mono_ms % 1000) * 1000000L};
    pthread_cond_timedwait(cv, mu, &ts);
}

int ferry__cb_enter(ferry_worker *w) {
    pthread_mutex_lock(&w->cbg->mu);
    if (!atomic_load(&w->abandon)) return 0;
    pthread_mutex_unlock(&w->cbg->mu);
    return -1;
}

void ferry__cb_leave(ferry_worker *w) {
    pthread_mutex_unlock(&w->cbg->mu);
}

static ferry__cbgate *cbgate_new(void) {
    ferry__cbgate *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        return NULL;
    }
    atomic_init(&g->refs, 1);
    return g;
}

static void cbgate_drop(ferry__cbgate *g) {
    if (g && atomic_fetch_sub(&g->refs, 1) == 1) {
        pthread_mutex_destroy(&g->mu);
        free(g);
    }
}

/* ---- options ------------------------------------------------------------------------ */

void ferry_worker_options_init(ferry_worker_options *o) {
    memset(o, 0, sizeof *o);
}

static char *dupz(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

static char *key_of(const ferry__keys *k, const char *suffix, int *oom) {
    size_t n = k->base_len + strlen(suffix) + 1;
    char *s = malloc(n);
    if (!s) {
        *oom = 1;
        return NULL;
    }
    snprintf(s, n, "%s%s", k->base, suffix);
    return s;
}

static void destroy(ferry_worker *w) {
    ferry__conn_close(w->d.conn);
    ferry__conn_close(w->bconn);
    ferry_job *lists[] = {atomic_load(&w->done), w->d.pending, w->rq_head};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        for (ferry_job *j = lists[i], *n; j; j = n) {
            n = j->next;
            ferry__job_free(j);
        }
    free(w->d.owned);
    free(w->threads);
    ferry__backoff_registry_free(w->backoffs, w->nbackoffs);
    free(w->queue);
    free(w->name);
    free(w->client_name);
    ferry__redis_options_release(&w->redis);
    char *keys[] = {w->k_wait,          w->k_active,  w->k_prioritized, w->k_events,
                    w->k_limiter,       w->k_delayed, w->k_meta,        w->k_pc,
                    w->k_marker,        w->k_stalled, w->k_completed,   w->k_failed,
                    w->k_stalled_check, w->k_repeat};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        free(keys[i]);
    pthread_mutex_destroy(&w->mu);
    cbgate_drop(w->cbg);
    pthread_mutex_destroy(&w->rq_mu);
    pthread_cond_destroy(&w->rq_cv);
    pthread_cond_destroy(&w->disp_cv);
    pthread_cond_destroy(&w->waiter_cv);
    pthread_cond_destroy(&w->exit_cv);
    free(w);
}

static int check_range(ferry_error *err, const char *what, int v, int lo, int hi) {
    if (v < lo || v > hi)
        return ferry__err(err, FERRY_EINVAL, "worker: %s %d out of range (%d..%d)", what, v, lo,
                          hi);
    return 0;
}

static int validate_name(const char *name, ferry_error *err) {
    size_t n = strlen(name);
    if (n == 0 || n > FERRY_WORKER_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "worker: name must be 1..%d bytes", FERRY_WORKER_NAME_MAX);
    if (!ferry__redis_name_chars_ok(name))
        return ferry__err(err, FERRY_EINVAL,
                          "worker: name may hold only printable ASCII without spaces (it is "
                          "part of the Redis client name)");
    return 0;
}

static int make_uuid(char *out, size_t cap) {
    unsigned char b[16];
    if (RAND_bytes(b, sizeof b) != 1) return -1;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, cap,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x:", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
    return 0;
}

/* "<prefix>:<base64(queue)>" plus ":w:<name>" for a named worker: how Node BullMQ names a
 * worker's blocking connection, so Queue.getWorkers() lists ferry workers too. */
static char *make_client_name(const ferry_worker *w, int *oom) {
    size_t qn = strlen(w->queue);
    size_t b64 = 4 * ((qn + 2) / 3) + 1;
    size_t n = strlen(w->keys.prefix) + 1 + b64 + (w->name ? 3 + strlen(w->name) : 0) + 1;
    char *s = malloc(n);
    if (!s) {
        *oom = 1;
        return NULL;
    }
    size_t off = (size_t)snprintf(s, n, "%s:", w->keys.prefix);
    EVP_EncodeBlock((unsigned char *)s + off, (const unsigned char *)w->queue, (int)qn);
    if (w->name) {
        size_t len = strlen(s);
        snprintf(s + len, n - len, ":w:%s", w->name);
    }
    return s;
}

/* A worker-level keepJobs default, its error naming the option it came from. */
static int keep_option(const char *json, const char *name, ferry__keep_jobs *out,
                       ferry_error *err) {
    ferry_error e = {0};
    int rc = ferry__keep_jobs_parse(json, out, &e);
    return rc ? ferry__err(err, rc, "worker: %s: %s", name, e.message) : 0;
}

/* One lane (or the whole worker when it has one lane): the options already validated,
 * `concurrency` its share of the handler threads, `cbg` the worker's callback lock (a
 * reference is taken). */
static int create_lane(const char *queue, const ferry_worker_options *opts, int concurrency,
                       ferry__cbgate *cbg, ferry_handler_fn handler, void *handler_userdata,
                       ferry_worker **out, ferry_error *err) {
    ferry_worker *w = calloc(1, sizeof *w);
    if (!w) return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
    int rc = ferry__keys_init(&w->keys, opts->prefix ? opts->prefix : "bull", queue, err);
    if (!rc)
        rc = keep_option(opts->remove_on_complete, "remove_on_complete", &w->keep_complete, err);
    if (!rc) rc = keep_option(opts->remove_on_fail, "remove_on_fail", &w->keep_fail, err);
    if (rc) {
        free(w);
        return rc;
    }
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        return ferry__err(err, FERRY_ENOMEM, "worker: cannot create a mutex");
    }
    if (pthread_mutex_init(&w->rq_mu, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return ferry__err(err, FERRY_ENOMEM, "worker: cannot create a mutex");
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->disp_cv, &ca);
    pthread_cond_init(&w->waiter_cv, &ca);
    pthread_cond_init(&w->exit_cv, &ca);
    pthread_cond_init(&w->rq_cv, &ca);
    pthread_condattr_destroy(&ca);
    w->refs = 1;
    w->cbg = cbg;
    atomic_fetch_add(&cbg->refs, 1);

    int oom = 0;
    w->queue = dupz(queue, &oom);
    w->name = dupz(opts->name, &oom);
    if (!oom && ferry__redis_options_dup(&w->redis, opts->redis, NULL)) oom = 1;

    w->concurrency = concurrency;
    w->lock_duration_ms = opts->lock_duration_ms ? opts->lock_duration_ms : 30000;
    w->stalled_interval_ms = opts->stalled_interval_ms ? opts->stalled_interval_ms : 30000;
    w->max_stalled_count = opts->max_stalled_count ? opts->max_stalled_count : 1;
    w->max_started_attempts = opts->max_started_attempts;
    w->limiter_max = opts->limiter_max;
    w->limiter_duration_ms = opts->limiter_duration_ms;
    w->drain_delay_ms = opts->drain_delay_ms ? opts->drain_delay_ms : 5000;
    w->fetch_batch = opts->fetch_batch ? opts->fetch_batch : w->concurrency;
    w->split_at = w->concurrency >= SPLIT_MIN_CONCURRENCY ? w->concurrency / 2 : 0;
    if (w->fetch_batch > w->concurrency) w->fetch_batch = w->concurrency;
    w->cb = opts->callbacks;
    w->cb_ud = opts->userdata;
    w->handler = handler;
    w->handler_ud = handler_userdata;
    atomic_init(&w->handler_ns, FERRY__EAGER_HANDLER_US * 1000); /* unknown: start every thread */
    w->min_block_s = 0.002;

    const struct {
        char **dst;
        const char *suffix;
    } keys[] = {{&w->k_wait, "wait"},
                {&w->k_active, "active"},
                {&w->k_prioritized, "prioritized"},
                {&w->k_events, "events"},
                {&w->k_limiter, "limiter"},
                {&w->k_delayed, "delayed"},
                {&w->k_meta, "meta"},
                {&w->k_pc, "pc"},
                {&w->k_marker, "marker"},
                {&w->k_stalled, "stalled"},
                {&w->k_completed, "completed"},
                {&w->k_failed, "failed"},
                {&w->k_stalled_check, "stalled-check"},
                {&w->k_repeat, "repeat"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        *keys[i].dst = key_of(&w->keys, keys[i].suffix, &oom);
    w->client_name = oom ? NULL : make_client_name(w, &oom);
    w->bconn_name = w->client_name;
    /* running/queued jobs (<= concurrency) + results not written yet (<= concurrency) */
    w->d.owned = calloc(2 * (size_t)w->concurrency, sizeof *w->d.owned);
    if (!w->d.owned) oom = 1;
    w->d.free_slots = w->concurrency;
    if (oom) {
        destroy(w);
        return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
    }
    rc = ferry__backoff_registry_copy(opts->backoff_strategies, opts->nbackoff_strategies,
                                      &w->backoffs, err);
    if (rc) {
        destroy(w);
        return rc;
    }
    w->nbackoffs = opts->nbackoff_strategies;
    /* The blocking connection is named after the prefix and the name (as Node's is, for
     * getWorkers), and Redis takes only printable ASCII without spaces: say so now, naming
     * the culprit, rather than at start. */
    if (!ferry__redis_name_chars_ok(w->keys.prefix)) {
        destroy(w);
        return ferry__err(err, FERRY_EINVAL,
                          "worker: the prefix may hold only printable ASCII without spaces (it is "
                          "part of the Redis client name)");
    }
    if (make_uuid(w->token_prefix, sizeof w->token_prefix) != 0) {
        destroy(w);
        return ferry__err(err, FERRY_EIO, "worker: no randomness for the worker id");
    }
    w->s_fetch = ferry__script_get("moveToActive");
    w->s_finish = ferry__script_get("moveToFinished");
    w->s_delay = ferry__script_get("moveToDelayed");
    w->s_retry = ferry__script_get("retryJob");
    w->s_extend = ferry__script_get("extendLocks");
    w->s_stalled = ferry__script_get("moveStalledJobsToWait");
    w->s_throttle = ferry__script_get("throttleJob");
    if (!w->s_fetch || !w->s_finish || !w->s_delay || !w->s_retry || !w->s_extend ||
        !w->s_stalled || !w->s_throttle) {
        destroy(w);
        return ferry__err(err, FERRY_EINVAL, "worker: embedded scripts missing (build problem)");
    }
    *out = w;
    return 0;
}

int ferry_worker_create(const char *queue, const ferry_worker_options *opts,
                        ferry_handler_fn handler, void *handler_userdata, ferry_worker **out,
                        ferry_error *err) {
    if (!out) return ferry__err(err, FERRY_EINVAL, "worker: out is NULL");
    *out = NULL;
    ferry_worker_options defaults;
    if (!opts) {
        ferry_worker_options_init(&defaults);
        opts = &defaults;
    }
    if (!handler) return ferry__err(err, FERRY_EINVAL, "worker: handler is NULL");
    if (!queue) return ferry__err(err, FERRY_EINVAL, "worker: queue name is NULL");
    int rc = check_range(err, "concurrency", opts->concurrency, 0, FERRY_CONCURRENCY_MAX);
    if (!rc) rc = check_range(err, "lock_duration_ms", opts->lock_duration_ms, 0, INT_MAX);
    if (!rc) rc = check_range(err, "stalled_interval_ms", opts->stalled_interval_ms, 0, INT_MAX);
    if (!rc)
        rc = check_range(err, "max_stalled_count", opts->max_stalled_count,
                         FERRY_STALLED_FAIL_FIRST, INT_MAX);
    if (!rc) rc = check_range(err, "max_started_attempts", opts->max_started_attempts, 0, INT_MAX);
    if (!rc) rc = check_range(err, "drain_delay_ms", opts->drain_delay_ms, 0, INT_MAX);
    if (!rc) rc = check_range(err, "fetch_batch", opts->fetch_batch, 0, FERRY_CONCURRENCY_MAX);
    if (!rc) rc = check_range(err, "limiter_max", opts->limiter_max, 0, INT_MAX);
    if (!rc) rc = check_range(err, "limiter_duration_ms", opts->limiter_duration_ms, 0, INT_MAX);
    if (!rc) rc = check_range(err, "lanes", opts->lanes, 0, FERRY__MAX_LANES);
    if (!rc && (opts->limiter_max > 0) != (opts->limiter_duration_ms > 0))
        rc = ferry__err(err, FERRY_EINVAL,
                        "worker: limiter_max (%d) and limiter_duration_ms (%d) must both be > 0 "
                        "for a limiter, or both 0 for none",
                        opts->limiter_max, opts->limiter_duration_ms);
    if (!rc && opts->name) rc = validate_name(opts->name, err);
    if (!rc && opts->redis && opts->redis->url) rc = ferry_redis_url_check(opts->redis->url, err);
    if (!rc) rc = ferry__redis_timeouts_check(opts->redis, err);
    if (rc) return rc;

    int concurrency = opts->concurrency ? opts->concurrency : 1;
    int nlanes =
        opts->lanes ? opts->lanes : (concurrency >= FERRY__AUTO_LANES_MIN_CONCURRENCY ? 2 : 1);
    if (nlanes > concurrency) nlanes = concurrency;
    ferry__cbgate *cbg = cbgate_new();
    if (!cbg) return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
    if (nlanes == 1) {
        rc = create_lane(queue, opts, concurrency, cbg, handler, handler_userdata, out, err);
        cbgate_drop(cbg);
        return rc;
    }
    ferry_worker *w = calloc(1, sizeof *w);
    if (!w || pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        cbgate_drop(cbg);
        return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
    }
    w->refs = 1;
    for (int i = 0; i < nlanes && !rc; i++) {
        int share = concurrency / nlanes + (i < concurrency % nlanes);
        rc = create_lane(queue, opts, share, cbg, handler, handler_userdata, &w->lanes[i], err);
        if (!rc) w->nlanes = i + 1;
        if (!rc && i > 0) w->lanes[i]->bconn_name = NULL;
    }
    cbgate_drop(cbg);
    if (rc) {
        ferry_worker_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* ---- threads ------------------------------------------------------------------------ */

void ferry__thread_exit(ferry__thread *t) {
    ferry_worker *w = t->w;
    pthread_mutex_lock(&w->mu);
    t->exited = 1;
    pthread_cond_broadcast(&w->exit_cv);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last) destroy(w);
}

/* Server features by version: the smallest BZPOPMIN timeout it honours (BullMQ's rule:
 * 1 ms from 7.0.8, 2 ms on 6.x, whole seconds before 6.0) and RPOP with a count (6.2). */
static void probe_server(ferry_worker *w, ferry_conn *c) {
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_command(c, &r, &e, "INFO server") != 0) return;
    if (r->type == REDIS_REPLY_STRING) {
        const char *v = strstr(r->str, "redis_version:");
        int maj = 0, min = 0, pat = 0;
        if (v && sscanf(v + 14, "%d.%d.%d", &maj, &min, &pat) >= 2) {
            long ver = maj * 10000L + min * 100L + pat;
            w->pop_many = ver >= 60200;
            if (ver >= 70008)
                w->min_block_s = 0.001;
            else if (ver >= 60000)
                w->min_block_s = 0.002;
            else
                w->min_block_s = 1, w->whole_second_block = 1;
        }
    }
    freeReplyObject(r);
}

static int close_lanes(ferry_worker *w, int deadline_ms);

/* Milliseconds left until `deadline` (mono ms; 0 = none: `full`), at most `full`, at
 * least 1. */
static int time_left(long long deadline, int full) {
    if (!deadline) return full;
    long long left = deadline - (long long)ferry__mono_ms();
    return left < 1 ? 1 : left < full ? (int)left : full;
}

/* Open a lane's two connections and probe the server, all cut to `deadline` (mono ms; 0 =
 * none). Nothing stays open on failure. No thread of the lane runs yet: its options may be
 * changed for the while. */
static int lane_connect(ferry_worker *w, long long deadline, ferry_error *err) {
    w->d.conn_epoch = w->bconn_epoch = ferry__link_epoch(w);
    int full_connect = w->redis.connect_timeout_ms ? w->redis.connect_timeout_ms : 5000;
    int full_command = w->redis.command_timeout_ms ? w->redis.command_timeout_ms : 5000;
    int saved = w->redis.connect_timeout_ms;
    w->redis.connect_timeout_ms = time_left(deadline, full_connect);
    int rc = ferry__conn_open(&w->redis, NULL, &w->d.conn, err);
    w->redis.connect_timeout_ms = time_left(deadline, full_connect);
    if (rc == 0) rc = ferry__conn_open(&w->redis, w->bconn_name, &w->bconn, err);
    w->redis.connect_timeout_ms = saved;
    if (rc != 0) {
        ferry__conn_close(w->d.conn);
        w->d.conn = NULL;
        return rc;
    }
    ferry__conn_set_timeout(w->d.conn, time_left(deadline, full_command));
    probe_server(w, w->d.conn);
    ferry__conn_set_timeout(w->d.conn, 0);
    redisReply *r = NULL;
    ferry_error e = {0};
    ferry__conn_set_timeout(w->bconn, time_left(deadline, full_command));
    if (ferry__conn_command(w->bconn, &r, &e, "CLIENT ID") == 0) {
        if (r->type == REDIS_REPLY_INTEGER) w->bclient_id = r->integer;
        freeReplyObject(r);
    }
    ferry__conn_set_timeout(w->bconn, 0);
    return 0;
}

static void lane_disconnect(ferry_worker *w) {
    ferry__conn_close(w->d.conn);
    ferry__conn_close(w->bconn);
    w->d.conn = NULL;
    w->bconn = NULL;
}

/* Start a connected lane's threads (its `started` already set). On failure the lane is
 * closed again and may only be freed. */
static int lane_launch(ferry_worker *w, ferry_error *err) {
    int rc = 0;
    w->nthreads = 2 + w->concurrency;
    w->threads = calloc((size_t)w->nthreads, sizeof *w->threads);
    if (!w->threads) {
        rc = ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
        goto fail;
    }
    for (int i = 0; i < w->nthreads; i++) {
        ferry__thread *t = &w->threads[i];
        t->w = w;
        void *(*fn)(void *) = i == 0   ? ferry__dispatcher_main
                              : i == 1 ? ferry__waiter_main
                                       : ferry__handler_main;
        pthread_mutex_lock(&w->mu);
        w->refs++;
        pthread_mutex_unlock(&w->mu);
        if (pthread_create(&t->tid, NULL, fn, t) != 0) {
            pthread_mutex_lock(&w->mu);
            w->refs--;
            pthread_mutex_unlock(&w->mu);
            rc = ferry__err(err, FERRY_ENOMEM, "worker: cannot start thread %d of %d", i + 1,
                            w->nthreads);
            goto fail;
        }
        t->started = 1;
    }
    return 0;

fail:
    /* stop whatever started; the threads exit quickly as nothing was fetched yet */
    ferry_worker_close(w, 5000);
    pthread_mutex_lock(&w->mu);
    w->closed = 0; /* a failed start leaves a worker that may only be freed */
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static void set_started(ferry_worker *w, int v) {
    pthread_mutex_lock(&w->mu);
    w->started = v;
    pthread_mutex_unlock(&w->mu);
}

int ferry_worker_start(ferry_worker *w, ferry_error *err) {
    return ferry_worker_start_within(w, 0, err);
}

int ferry_worker_start_within(ferry_worker *w, int timeout_ms, ferry_error *err) {
    if (!w) return ferry__err(err, FERRY_EINVAL, "worker: NULL");
    if (timeout_ms < 0) return ferry__err(err, FERRY_EINVAL, "worker: timeout_ms < 0");
    long long deadline = timeout_ms ? (long long)ferry__mono_ms() + timeout_ms : 0;
    pthread_mutex_lock(&w->mu);
    int started = w->started, closed = w->closed;
    if (!closed) w->started = 1;
    pthread_mutex_unlock(&w->mu);
    if (closed) return ferry__err(err, FERRY_ESTATE, "worker: closed (it may only be freed)");
    if (started) return ferry__err(err, FERRY_ESTATE, "worker: already started");
    int n = w->nlanes ? w->nlanes : 1;
    ferry_worker **lanes = w->nlanes ? w->lanes : &w;
    /* Every lane connects before any thread starts: a lane that cannot connect leaves the
     * worker as it was (no job taken, start may be tried again). */
    for (int i = 0; i < n; i++) {
        int rc = lane_connect(lanes[i], deadline, err);
        if (rc == 0) continue;
        for (int k = 0; k < i; k++)
            lane_disconnect(lanes[k]);
        set_started(w, 0);
        return rc;
    }
    pthread_mutex_lock(&w->mu);
    int aborted = w->start_aborted;
    if (!aborted) w->launching = 1;
    pthread_mutex_unlock(&w->mu);
    if (aborted) {
        for (int i = 0; i < n; i++)
            lane_disconnect(lanes[i]);
        return ferry__err(err, FERRY_ESTATE, "worker: stopped while connecting (no job taken)");
    }
    /* once per start, not per lane: they all talk to the same server */
    ferry__link_check_eviction(lanes[0], lanes[0]->d.conn);
    for (int i = 0; i < n; i++) {
        if (w->nlanes) set_started(lanes[i], 1);
        int rc = lane_launch(lanes[i], err);
        if (rc == 0) continue;
        if (w->nlanes) {
            /* the lanes already running stop; this one closed itself */
            close_lanes(w, 5000);
            pthread_mutex_lock(&w->mu);
            w->closed = 0;
            pthread_mutex_unlock(&w->mu);
        }
        return rc;
    }
    return 0;
}

int ferry_worker_abort_start(ferry_worker *w) {
    if (!w) return 0;
    pthread_mutex_lock(&w->mu);
    int ok = !w->launching;
    if (ok) w->start_aborted = 1;
    pthread_mutex_unlock(&w->mu);
    return ok;
}

void ferry_worker_stop(ferry_worker *w) {
    if (!w) return;
    for (int i = 0; i < w->nlanes; i++)
        ferry_worker_stop(w->lanes[i]);
    if (w->nlanes) return;
    atomic_store(&w->stopping, 1);
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->disp_cv);
    pthread_cond_broadcast(&w->waiter_cv);
    pthread_mutex_unlock(&w->mu);
}

/* Close every lane within one deadline: all stop fetching at once, then each is given
 * what is left of the deadline. */
static int close_lanes(ferry_worker *w, int deadline_ms) {
    ferry_worker_stop(w);
    int64_t deadline = ferry__mono_ms() + (deadline_ms > 0 ? deadline_ms : 0);
    int rc = 0;
    for (int i = 0; i < w->nlanes; i++) {
        int64_t left = deadline - ferry__mono_ms();
        if (ferry_worker_close(w->lanes[i], left > 0 ? (int)left : 0) != 0) rc = FERRY_ETIMEDOUT;
    }
    return rc;
}

int ferry_worker_close(ferry_worker *w, int deadline_ms) {
    if (!w) return 0;
    pthread_mutex_lock(&w->mu);
    if (w->closed || !w->started || (!w->threads && !w->nlanes)) {
        w->closed = 1;
        int rc = w->close_rc;
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    w->closed = 1;
    pthread_mutex_unlock(&w->mu);
    if (w->nlanes) {
        int rc = close_lanes(w, deadline_ms);
        pthread_mutex_lock(&w->mu);
        w->close_rc = rc;
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    ferry_worker_stop(w);

    int64_t deadline = ferry__mono_ms() + (deadline_ms > 0 ? deadline_ms : 0);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        int alive = 0;
        for (int i = 0; i < w->nthreads; i++)
            if (w->threads[i].started && !w->threads[i].exited) alive++;
        if (!alive || ferry__mono_ms() >= deadline) break;
        ferry__cond_wait_until(&w->exit_cv, &w->mu, deadline);
    }
    int all_exited = 1;
    for (int i = 0; i < w->nthreads; i++)
        if (w->threads[i].started && !w->threads[i].exited) all_exited = 0;
    int clean = all_exited && w->disp_exited_clean;
    if (!all_exited) {
        /* no callback may start (or still run) once close returns; cbg->mu is taken
         * without mu held, as the dispatcher takes mu inside callbacks' callers */
        pthread_mutex_unlock(&w->mu);
        pthread_mutex_lock(&w->cbg->mu);
        atomic_store(&w->abandon, 1);
        pthread_mutex_unlock(&w->cbg->mu);
        ferry__handlers_release(w);
        pthread_mutex_lock(&w->mu);
        pthread_cond_broadcast(&w->disp_cv);
        pthread_cond_broadcast(&w->waiter_cv);
    }
    /* Join what has exited; detach the rest (they hold a reference and free the worker
     * when the last of them leaves). */
    int exited[2 + FERRY_CONCURRENCY_MAX];
    for (int i = 0; i < w->nthreads; i++)
        exited[i] = w->threads[i].exited;
    w->close_rc = clean ? 0 : FERRY_ETIMEDOUT;
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->nthreads; i++) {
        ferry__thread *t = &w->threads[i];
        if (!t->started) continue;
        if (exited[i])
            pthread_join(t->tid, NULL);
        else
            pthread_detach(t->tid);
        t->started = 0;
    }
    return clean ? 0 : FERRY_ETIMEDOUT;
}

int ferry_worker_lanes(const ferry_worker *w) {
    return w->nlanes ? w->nlanes : 1;
}

void ferry_worker_free(ferry_worker *w) {
    if (!w) return;
    ferry_worker_close(w, 0);
    if (!w->cbg) { /* a shell: every lane (and a one-lane worker) holds the callback lock */
        for (int i = 0; i < w->nlanes; i++)
            ferry_worker_free(w->lanes[i]);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return;
    }
    pthread_mutex_lock(&w->mu);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last) destroy(w);
}

void ferry_worker_get_stats(ferry_worker *w, ferry_worker_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!w) return;
    if (w->nlanes) {
        for (int i = 0; i < w->nlanes; i++) {
            ferry_worker_stats l;
            ferry_worker_get_stats(w->lanes[i], &l);
            out->completed += l.completed;
            out->failed += l.failed;
            out->retried += l.retried;
            out->stalled += l.stalled;
            out->lock_lost += l.lock_lost;
            out->retried_later += l.retried_later;
            out->throttled += l.throttled;
            out->busy += l.busy;
        }
        return;
    }
    pthread_mutex_lock(&w->mu);
    *out = w->stats;
    out->busy = atomic_load(&w->busy);
    pthread_mutex_unlock(&w->mu);
}

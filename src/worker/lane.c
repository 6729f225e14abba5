/* lane.c - one lane of a worker: create (options copied, keys built, scripts looked up),
 * connect (two connections, server probe), launch its threads, stop, close within a
 * deadline, and free.
 *
 * Threads: one dispatcher (dispatch.c, command connection), one waiter (waiter.c,
 * blocking connection) and `concurrency` handler threads (handlers.c): each takes a job
 * from the ready queue, runs the user's handler and pushes the result; when no other
 * fetched job is waiting, the same thread writes the results and fetches the next jobs
 * itself (ferry__lead, dispatch.c) and runs one of them at once, so a handler thread at
 * concurrency 1 goes handler -> Redis -> handler without a single thread switch.
 *
 * Lifetime: a lane is reference counted (the handle + every live thread). Close waits
 * for the threads up to its deadline; threads still running then are detached and free
 * the lane when the last one leaves, so an abandoned handler never touches freed
 * memory. */
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

static char *dupz(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

/* Build the lane's keys, "<base><suffix>", in one allocation. */
static int build_keys(ferry__lane *lane) {
    ferry__lane_keys *k = &lane->key;
    const struct {
        const char **dst;
        const char *suffix;
    } keys[] = {{&k->wait, "wait"},
                {&k->active, "active"},
                {&k->prioritized, "prioritized"},
                {&k->events, "events"},
                {&k->limiter, "limiter"},
                {&k->delayed, "delayed"},
                {&k->meta, "meta"},
                {&k->pc, "pc"},
                {&k->marker, "marker"},
                {&k->stalled, "stalled"},
                {&k->completed, "completed"},
                {&k->failed, "failed"},
                {&k->stalled_check, "stalled-check"},
                {&k->repeat, "repeat"},
                {&k->metrics_completed, "metrics:completed"},
                {&k->metrics_failed, "metrics:failed"}};
    size_t nkeys = sizeof keys / sizeof keys[0], total = 0;
    for (size_t i = 0; i < nkeys; i++)
        total += lane->keys.base_len + strlen(keys[i].suffix) + 1;
    char *p = k->block = malloc(total);
    if (!p) return -1;
    for (size_t i = 0; i < nkeys; i++) {
        size_t n = lane->keys.base_len + strlen(keys[i].suffix) + 1;
        snprintf(p, n, "%s%s", lane->keys.base, keys[i].suffix);
        *keys[i].dst = p;
        p += n;
    }
    return 0;
}

static void destroy(ferry__lane *lane) {
    ferry__conn_close(lane->d.conn);
    ferry__conn_close(lane->bconn);
    ferry_job *lists[] = {atomic_load(&lane->done), lane->d.pending, lane->rq_head};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        for (ferry_job *j = lists[i], *n; j; j = n) {
            n = j->next;
            ferry__job_free(j);
        }
    free(lane->d.owned);
    free(lane->threads);
    ferry__backoff_registry_free(lane->backoffs, lane->nbackoffs);
    free(lane->queue);
    free(lane->name);
    free(lane->client_name);
    ferry__redis_options_release(&lane->redis);
    free(lane->key.block);
    ferry__wm_free(&lane->m);
    pthread_mutex_destroy(&lane->mu);
    ferry__cbgate_drop(lane->cbg);
    pthread_mutex_destroy(&lane->rq_mu);
    pthread_cond_destroy(&lane->rq_cv);
    pthread_cond_destroy(&lane->disp_cv);
    pthread_cond_destroy(&lane->waiter_cv);
    pthread_cond_destroy(&lane->exit_cv);
    free(lane);
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
static char *make_client_name(const ferry__lane *lane, int *oom) {
    size_t qn = strlen(lane->queue);
    size_t b64 = 4 * ((qn + 2) / 3) + 1;
    size_t n = strlen(lane->keys.prefix) + 1 + b64 + (lane->name ? 3 + strlen(lane->name) : 0) + 1;
    char *s = malloc(n);
    if (!s) {
        *oom = 1;
        return NULL;
    }
    size_t off = (size_t)snprintf(s, n, "%s:", lane->keys.prefix);
    EVP_EncodeBlock((unsigned char *)s + off, (const unsigned char *)lane->queue, (int)qn);
    if (lane->name) {
        size_t len = strlen(s);
        snprintf(s + len, n - len, ":w:%s", lane->name);
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

/* The lane's locks and condition variables (monotonic clock) and its first reference. */
static int init_sync(ferry__lane *lane) {
    if (pthread_mutex_init(&lane->mu, NULL) != 0) return -1;
    if (pthread_mutex_init(&lane->rq_mu, NULL) != 0) {
        pthread_mutex_destroy(&lane->mu);
        return -1;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&lane->disp_cv, &ca);
    pthread_cond_init(&lane->waiter_cv, &ca);
    pthread_cond_init(&lane->exit_cv, &ca);
    pthread_cond_init(&lane->rq_cv, &ca);
    pthread_condattr_destroy(&ca);
    lane->refs = 1;
    return 0;
}

/* The lane's copy of the options (validated by ferry_worker_create), defaults filled in.
 * Sets *oom when a copy could not be made. */
static void copy_options(ferry__lane *lane, const char *queue, const ferry_worker_options *opts,
                         int concurrency, int *oom) {
    lane->queue = dupz(queue, oom);
    lane->name = dupz(opts->name, oom);
    if (!*oom && ferry__redis_options_dup(&lane->redis, opts->redis, NULL)) *oom = 1;

    lane->concurrency = concurrency;
    lane->lock_duration_ms = opts->lock_duration_ms ? opts->lock_duration_ms : 30000;
    lane->stalled_interval_ms = opts->stalled_interval_ms ? opts->stalled_interval_ms : 30000;
    lane->max_stalled_count = opts->max_stalled_count ? opts->max_stalled_count : 1;
    lane->max_started_attempts = opts->max_started_attempts;
    lane->max_payload_bytes = opts->max_payload_bytes;
    lane->limiter_max = opts->limiter_max;
    lane->limiter_duration_ms = opts->limiter_duration_ms;
    lane->bullmq_metrics_max_points = opts->bullmq_metrics_max_points;
    lane->drain_delay_ms = opts->drain_delay_ms ? opts->drain_delay_ms : 5000;
    lane->fetch_batch = opts->fetch_batch ? opts->fetch_batch : lane->concurrency;
    lane->split_at = lane->concurrency >= SPLIT_MIN_CONCURRENCY ? lane->concurrency / 2 : 0;
    if (lane->fetch_batch > lane->concurrency) lane->fetch_batch = lane->concurrency;
    lane->cb = opts->callbacks;
    lane->check = opts->check;
    lane->check_ud = opts->check_userdata;
    lane->final_failure = opts->final_failure;
    lane->final_ud = opts->final_failure_userdata;
    lane->cb_ud = opts->userdata;
    atomic_init(&lane->handler_ns,
                FERRY__EAGER_HANDLER_US * 1000); /* unknown: start every thread */
    lane->min_block_s = 0.002;
}

/* The embedded scripts the lane calls; -1 when one is missing. */
static int find_scripts(ferry__lane_scripts *s) {
    s->fetch = ferry__script_get("moveToActive");
    s->finish = ferry__script_get("moveToFinished");
    s->delay = ferry__script_get("moveToDelayed");
    s->retry = ferry__script_get("retryJob");
    s->extend = ferry__script_get("extendLocks");
    s->stalled = ferry__script_get("moveStalledJobsToWait");
    s->throttle = ferry__script_get("throttleJob");
    return s->fetch && s->finish && s->delay && s->retry && s->extend && s->stalled && s->throttle
               ? 0
               : -1;
}

int ferry__lane_create(const char *queue, const ferry_worker_options *opts, int concurrency,
                       ferry__cbgate *cbg, ferry_handler_fn handler, void *handler_userdata,
                       ferry__lane **out, ferry_error *err) {
    ferry__lane *lane = calloc(1, sizeof *lane);
    if (!lane) return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
    int rc = ferry__keys_init(&lane->keys, opts->prefix ? opts->prefix : "bull", queue, err);
    if (!rc)
        rc = keep_option(opts->remove_on_complete, "remove_on_complete", &lane->keep_complete, err);
    if (!rc) rc = keep_option(opts->remove_on_fail, "remove_on_fail", &lane->keep_fail, err);
    if (rc) {
        free(lane);
        return rc;
    }
    if (init_sync(lane) != 0) {
        free(lane);
        return ferry__err(err, FERRY_ENOMEM, "worker: cannot create a mutex");
    }
    lane->cbg = cbg;
    atomic_fetch_add(&cbg->refs, 1);
    lane->handler = handler;
    lane->handler_ud = handler_userdata;

    int oom = 0;
    copy_options(lane, queue, opts, concurrency, &oom);
    if (!oom && build_keys(lane) != 0) oom = 1;
    lane->client_name = oom ? NULL : make_client_name(lane, &oom);
    lane->bconn_name = lane->client_name;
    /* running/queued jobs (<= concurrency) + results not written yet (<= concurrency) */
    lane->d.owned = calloc(2 * (size_t)lane->concurrency, sizeof *lane->d.owned);
    if (!lane->d.owned) oom = 1;
    lane->d.free_slots = lane->concurrency;
    if (oom) {
        destroy(lane);
        return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
    }
    rc = ferry__backoff_registry_copy(opts->backoff_strategies, opts->nbackoff_strategies,
                                      &lane->backoffs, err);
    if (rc) {
        destroy(lane);
        return rc;
    }
    lane->nbackoffs = opts->nbackoff_strategies;
    /* The blocking connection is named after the prefix and the name (as Node's is, for
     * getWorkers), and Redis takes only printable ASCII without spaces: say so now, naming
     * the culprit, rather than at start. */
    if (!ferry__redis_name_chars_ok(lane->keys.prefix)) {
        destroy(lane);
        return ferry__err(err, FERRY_EINVAL,
                          "worker: the prefix may hold only printable ASCII without spaces (it is "
                          "part of the Redis client name)");
    }
    if (make_uuid(lane->token_prefix, sizeof lane->token_prefix) != 0) {
        destroy(lane);
        return ferry__err(err, FERRY_EIO, "worker: no randomness for the worker id");
    }
    if (find_scripts(&lane->script) != 0) {
        destroy(lane);
        return ferry__err(err, FERRY_EINVAL, "worker: embedded scripts missing (build problem)");
    }
    if ((rc = ferry__wm_init(&lane->m, opts->metrics, queue, opts->metrics_no_job_name, err))) {
        destroy(lane);
        return rc;
    }
    *out = lane;
    return 0;
}

/* ---- threads ------------------------------------------------------------------------ */

void ferry__thread_exit(ferry__thread *t) {
    ferry__lane *lane = t->lane;
    pthread_mutex_lock(&lane->mu);
    t->exited = 1;
    pthread_cond_broadcast(&lane->exit_cv);
    int last = --lane->refs == 0;
    pthread_mutex_unlock(&lane->mu);
    if (last) destroy(lane);
}

/* Server features by version: the smallest BZPOPMIN timeout it honours (BullMQ's rule:
 * 1 ms from 7.0.8, 2 ms on 6.x, whole seconds before 6.0) and RPOP with a count (6.2). */
static void probe_server(ferry__lane *lane, ferry_conn *c) {
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_command(c, &r, &e, "INFO server") != 0) return;
    if (r->type == REDIS_REPLY_STRING) {
        const char *v = strstr(r->str, "redis_version:");
        int maj = 0, min = 0, pat = 0;
        if (v && sscanf(v + 14, "%d.%d.%d", &maj, &min, &pat) >= 2) {
            long ver = maj * 10000L + min * 100L + pat;
            lane->pop_many = ver >= 60200;
            if (ver >= 70008)
                lane->min_block_s = 0.001;
            else if (ver >= 60000)
                lane->min_block_s = 0.002;
            else
                lane->min_block_s = 1, lane->whole_second_block = 1;
        }
    }
    freeReplyObject(r);
}

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
int ferry__lane_connect(ferry__lane *lane, long long deadline, ferry_error *err) {
    lane->d.conn_epoch = lane->bconn_epoch = ferry__link_epoch(lane);
    int full_connect = lane->redis.connect_timeout_ms ? lane->redis.connect_timeout_ms : 5000;
    int full_command = lane->redis.command_timeout_ms ? lane->redis.command_timeout_ms : 5000;
    int saved = lane->redis.connect_timeout_ms;
    lane->redis.connect_timeout_ms = time_left(deadline, full_connect);
    int rc = ferry__conn_open(&lane->redis, NULL, &lane->d.conn, err);
    lane->redis.connect_timeout_ms = time_left(deadline, full_connect);
    if (rc == 0) rc = ferry__conn_open(&lane->redis, lane->bconn_name, &lane->bconn, err);
    lane->redis.connect_timeout_ms = saved;
    if (rc != 0) {
        ferry__conn_close(lane->d.conn);
        lane->d.conn = NULL;
        return rc;
    }
    ferry__conn_set_timeout(lane->d.conn, time_left(deadline, full_command));
    probe_server(lane, lane->d.conn);
    ferry__conn_set_timeout(lane->d.conn, 0);
    redisReply *r = NULL;
    ferry_error e = {0};
    ferry__conn_set_timeout(lane->bconn, time_left(deadline, full_command));
    if (ferry__conn_command(lane->bconn, &r, &e, "CLIENT ID") == 0) {
        if (r->type == REDIS_REPLY_INTEGER) lane->bclient_id = r->integer;
        freeReplyObject(r);
    }
    ferry__conn_set_timeout(lane->bconn, 0);
    return 0;
}

void ferry__lane_disconnect(ferry__lane *lane) {
    ferry__conn_close(lane->d.conn);
    ferry__conn_close(lane->bconn);
    lane->d.conn = NULL;
    lane->bconn = NULL;
}

/* Start a connected lane's threads (the shell has marked itself started). On failure the lane is
 * closed again and may only be freed. */
int ferry__lane_launch(ferry__lane *lane, ferry_error *err) {
    int rc = 0;
    lane->nthreads = 2 + lane->concurrency;
    lane->threads = calloc((size_t)lane->nthreads, sizeof *lane->threads);
    if (!lane->threads) {
        rc = ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
        goto fail;
    }
    for (int i = 0; i < lane->nthreads; i++) {
        ferry__thread *t = &lane->threads[i];
        t->lane = lane;
        void *(*fn)(void *) = i == 0   ? ferry__dispatcher_main
                              : i == 1 ? ferry__waiter_main
                                       : ferry__handler_main;
        pthread_mutex_lock(&lane->mu);
        lane->refs++;
        pthread_mutex_unlock(&lane->mu);
        if (pthread_create(&t->tid, NULL, fn, t) != 0) {
            pthread_mutex_lock(&lane->mu);
            lane->refs--;
            pthread_mutex_unlock(&lane->mu);
            rc = ferry__err(err, FERRY_ENOMEM, "worker: cannot start thread %d of %d", i + 1,
                            lane->nthreads);
            goto fail;
        }
        t->started = 1;
    }
    return 0;

fail:
    /* stop whatever started; the threads exit quickly as nothing was fetched yet */
    ferry__lane_close(lane, 5000);
    return rc;
}

void ferry__lane_stop(ferry__lane *lane) {
    atomic_store(&lane->stopping, 1);
    pthread_mutex_lock(&lane->mu);
    pthread_cond_broadcast(&lane->disp_cv);
    pthread_cond_broadcast(&lane->waiter_cv);
    pthread_mutex_unlock(&lane->mu);
}

/* Threads started and not exited yet. mu held. */
static int threads_alive(const ferry__lane *lane) {
    int alive = 0;
    for (int i = 0; i < lane->nthreads; i++)
        if (lane->threads[i].started && !lane->threads[i].exited) alive++;
    return alive;
}

/* The deadline passed with threads still running: no callback may start (or still run)
 * once close returns, and every thread is told to leave at once. mu held on entry and
 * return; cbg->mu is taken without mu held, as the dispatcher takes mu inside callbacks'
 * callers. */
static void abandon_threads(ferry__lane *lane) {
    pthread_mutex_unlock(&lane->mu);
    pthread_mutex_lock(&lane->cbg->mu);
    atomic_store(&lane->abandon, 1);
    pthread_mutex_unlock(&lane->cbg->mu);
    ferry__handlers_release(lane);
    pthread_mutex_lock(&lane->mu);
    pthread_cond_broadcast(&lane->disp_cv);
    pthread_cond_broadcast(&lane->waiter_cv);
}

int ferry__lane_close(ferry__lane *lane, int deadline_ms) {
    if (!lane->threads) return 0; /* never launched */
    ferry__lane_stop(lane);

    int64_t deadline = ferry__mono_ms() + (deadline_ms > 0 ? deadline_ms : 0);
    pthread_mutex_lock(&lane->mu);
    while (threads_alive(lane) && ferry__mono_ms() < deadline)
        ferry__cond_wait_until(&lane->exit_cv, &lane->mu, deadline);
    int all_exited = !threads_alive(lane);
    int clean = all_exited && lane->disp_exited_clean;
    if (!all_exited) abandon_threads(lane);
    /* Join what has exited; detach the rest (they hold a reference and free the lane
     * when the last of them leaves). */
    int exited[2 + FERRY_CONCURRENCY_MAX];
    for (int i = 0; i < lane->nthreads; i++)
        exited[i] = lane->threads[i].exited;
    pthread_mutex_unlock(&lane->mu);
    for (int i = 0; i < lane->nthreads; i++) {
        ferry__thread *t = &lane->threads[i];
        if (!t->started) continue;
        if (exited[i])
            pthread_join(t->tid, NULL);
        else
            pthread_detach(t->tid);
        t->started = 0;
    }
    return clean ? 0 : FERRY_ETIMEDOUT;
}

void ferry__lane_release(ferry__lane *lane) {
    if (!lane) return;
    pthread_mutex_lock(&lane->mu);
    int last = --lane->refs == 0;
    pthread_mutex_unlock(&lane->mu);
    if (last) destroy(lane);
}

void ferry__lane_get_stats(ferry__lane *lane, ferry_worker_stats *out) {
    pthread_mutex_lock(&lane->mu);
    *out = lane->stats;
    out->busy = atomic_load(&lane->busy);
    pthread_mutex_unlock(&lane->mu);
}

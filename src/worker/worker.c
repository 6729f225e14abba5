/* worker.c - the public worker API (include/ferry/worker.h): options, create, start,
 * stop, close, free, stats. A ferry_worker is a shell around its lanes (lane.c): each
 * lane is a complete worker of the queue with its share of the concurrency; the functions
 * here validate, then act on every lane. Start connects every lane before any lane
 * starts a thread; close gives all lanes one deadline. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "redis/options.h"
#include "util/clock.h"
#include "util/error.h"
#include "worker/worker_internal.h"

void ferry_worker_options_init(ferry_worker_options *o) {
    memset(o, 0, sizeof *o);
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
        return ferry__err(err, FERRY_EINVAL, "worker: name must be 1..%d bytes",
                          FERRY_WORKER_NAME_MAX);
    if (!ferry__redis_name_chars_ok(name))
        return ferry__err(err, FERRY_EINVAL,
                          "worker: name may hold only printable ASCII without spaces (it is "
                          "part of the Redis client name)");
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
    if (!rc && opts->max_payload_bytes > FERRY_MAX_PAYLOAD_LIMIT)
        rc =
            ferry__err(err, FERRY_EINVAL, "worker: max_payload_bytes must be at most %zu (got %zu)",
                       (size_t)FERRY_MAX_PAYLOAD_LIMIT, opts->max_payload_bytes);
    if (!rc) rc = check_range(err, "drain_delay_ms", opts->drain_delay_ms, 0, INT_MAX);
    if (!rc) rc = check_range(err, "fetch_batch", opts->fetch_batch, 0, FERRY_CONCURRENCY_MAX);
    if (!rc) rc = check_range(err, "limiter_max", opts->limiter_max, 0, INT_MAX);
    if (!rc) rc = check_range(err, "limiter_duration_ms", opts->limiter_duration_ms, 0, INT_MAX);
    if (!rc) rc = check_range(err, "lanes", opts->lanes, 0, FERRY__MAX_LANES);
    if (!rc && (opts->bullmq_metrics_max_points < 0 ||
                opts->bullmq_metrics_max_points > FERRY_BULLMQ_METRICS_POINTS_MAX))
        rc = ferry__err(err, FERRY_EINVAL,
                        "worker: bullmq_metrics_max_points %ld out of range (0 = off, 1..%ld)",
                        opts->bullmq_metrics_max_points, FERRY_BULLMQ_METRICS_POINTS_MAX);
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
    ferry__cbgate *cbg = ferry__cbgate_new();
    if (!cbg) return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
    ferry_worker *w = calloc(1, sizeof *w);
    if (!w || pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        ferry__cbgate_drop(cbg);
        return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
    }
    for (int i = 0; i < nlanes && !rc; i++) {
        int share = concurrency / nlanes + (i < concurrency % nlanes);
        rc = ferry__lane_create(queue, opts, share, cbg, handler, handler_userdata, &w->lanes[i],
                                err);
        if (!rc) w->nlanes = i + 1;
        if (!rc && i > 0) w->lanes[i]->bconn_name = NULL;
    }
    ferry__cbgate_drop(cbg);
    if (rc) {
        ferry_worker_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

static int close_lanes(ferry_worker *w, int deadline_ms);

/* ferry_worker_slots: + the worker's concurrency once it runs, - again at close. */
static void count_slots(ferry_worker *w, int on) {
    if (!w->lanes[0]->m.on) return;
    pthread_mutex_lock(&w->mu);
    int change = on != w->slots_counted;
    w->slots_counted = on;
    pthread_mutex_unlock(&w->mu);
    if (!change) return;
    int total = 0;
    for (int i = 0; i < w->nlanes; i++)
        total += w->lanes[i]->concurrency;
    ferry_metrics_gauge_add(w->lanes[0]->m.slots, on ? total : -total);
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
    int n = w->nlanes;
    ferry__lane **lanes = w->lanes;
    /* Every lane connects before any thread starts: a lane that cannot connect leaves the
     * worker as it was (no job taken, start may be tried again). */
    for (int i = 0; i < n; i++) {
        int rc = ferry__lane_connect(lanes[i], deadline, err);
        if (rc == 0) continue;
        for (int k = 0; k < i; k++)
            ferry__lane_disconnect(lanes[k]);
        set_started(w, 0);
        return rc;
    }
    pthread_mutex_lock(&w->mu);
    int aborted = w->start_aborted;
    if (!aborted) w->launching = 1;
    pthread_mutex_unlock(&w->mu);
    if (aborted) {
        for (int i = 0; i < n; i++)
            ferry__lane_disconnect(lanes[i]);
        return ferry__err(err, FERRY_ESTATE, "worker: stopped while connecting (no job taken)");
    }
    /* once per start, not per lane: they all talk to the same server */
    ferry__link_check_eviction(lanes[0], lanes[0]->d.conn);
    for (int i = 0; i < n; i++) {
        int rc = ferry__lane_launch(lanes[i], err);
        if (rc == 0) continue;
        /* the lanes already running stop; this one closed itself. The worker may only be
         * freed now. */
        close_lanes(w, 5000);
        return rc;
    }
    count_slots(w, 1);
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
        ferry__lane_stop(w->lanes[i]);
}

/* Close every lane within one deadline: all stop fetching at once, then each is given
 * what is left of the deadline. */
static int close_lanes(ferry_worker *w, int deadline_ms) {
    ferry_worker_stop(w);
    int64_t deadline = ferry__mono_ms() + (deadline_ms > 0 ? deadline_ms : 0);
    int rc = 0;
    for (int i = 0; i < w->nlanes; i++) {
        int64_t left = deadline - ferry__mono_ms();
        if (ferry__lane_close(w->lanes[i], left > 0 ? (int)left : 0) != 0) rc = FERRY_ETIMEDOUT;
    }
    return rc;
}

int ferry_worker_close(ferry_worker *w, int deadline_ms) {
    if (!w) return 0;
    pthread_mutex_lock(&w->mu);
    /* A one-lane worker still connecting (no thread launched) is only marked closed, as
     * before lanes had a shell of their own. */
    if (w->closed || !w->started || (w->nlanes == 1 && !w->lanes[0]->threads)) {
        w->closed = 1;
        int rc = w->close_rc;
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    w->closed = 1;
    pthread_mutex_unlock(&w->mu);
    int rc = close_lanes(w, deadline_ms);
    count_slots(w, 0);
    pthread_mutex_lock(&w->mu);
    w->close_rc = rc;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int ferry_worker_lanes(const ferry_worker *w) {
    return w->nlanes;
}

void ferry_worker_free(ferry_worker *w) {
    if (!w) return;
    ferry_worker_close(w, 0);
    for (int i = 0; i < w->nlanes; i++)
        ferry__lane_release(w->lanes[i]);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void ferry_worker_get_stats(ferry_worker *w, ferry_worker_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!w) return;
    if (w->nlanes == 1) {
        ferry__lane_get_stats(w->lanes[0], out);
        return;
    }
    for (int i = 0; i < w->nlanes; i++) {
        ferry_worker_stats l;
        ferry__lane_get_stats(w->lanes[i], &l);
        out->completed += l.completed;
        out->failed += l.failed;
        out->retried += l.retried;
        out->stalled += l.stalled;
        out->lock_lost += l.lock_lost;
        out->retried_later += l.retried_later;
        out->throttled += l.throttled;
        out->busy += l.busy;
    }
}

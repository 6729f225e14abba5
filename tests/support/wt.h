/* wt.h - helpers of the worker integration tests (test_worker*.c and the tests that run a
 * worker beside what they check), prefix wt_: a queue "wq" + raw connection per test under a
 * fresh key prefix (wt_init / wt_fini), job adds, hash/zset/list reads, the events stream of
 * a job as one string, a worker factory whose callbacks count into the struct, waits on
 * those counts; a gate handlers block on (their jobs stay active and locked) until the test
 * opens it, with the handler context that holds it (wt_hctx); and what a worker that then
 * dies does to a job (wt_dead_worker_fetch), for the stalled-job tests. Header-only (static
 * functions): each test file is its own executable. */
#ifndef FERRY_TEST_WT_H
#define FERRY_TEST_WT_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/queue.h"
#include "ferry/worker.h"
#include "redis/conn.h"
#include "support/th.h"
#include "util/clock.h"

/* The queue every wt test uses (under its own prefix). */
#define WT_QUEUE "wq"

/* ---- a gate handlers block on ---------------------------------------------------------- */

/* A gate handlers block on until the test opens it. */
typedef struct wt_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    int entered; /* handlers that reached the gate */
    int inside, max_inside;
} wt_gate;

static inline void wt_gate_init(wt_gate *g) {
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
}

static inline void wt_gate_open(wt_gate *g) {
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Called by a handler: record entry, wait for the gate (at most 30 s). Returns 1 if it
 * opened. */
static inline int wt_gate_pass(wt_gate *g) {
    pthread_mutex_lock(&g->mu);
    g->entered++;
    g->inside++;
    if (g->inside > g->max_inside) g->max_inside = g->inside;
    pthread_cond_broadcast(&g->cv);
    int64_t end = ferry__mono_ms() + 30000;
    while (!g->open && ferry__mono_ms() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    g->inside--;
    int ok = g->open;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

static inline int wt_gate_entered_at_least(void *arg) {
    wt_gate *g = ((void **)arg)[0];
    int n = *(int *)((void **)arg)[1];
    pthread_mutex_lock(&g->mu);
    int v = g->entered >= n;
    pthread_mutex_unlock(&g->mu);
    return v;
}

/* wt_gate_init's counterpart at the end of a test. */
static inline void wt_gate_destroy(wt_gate *g) {
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

/* ---- the test's queue and connection ---------------------------------------------------- */

typedef struct wt {
    char prefix[64];
    char base[96]; /* "<prefix>:wq:" */
    ferry_queue *q;
    ferry_conn *c;
    /* callback counters (dispatcher thread writes, test thread reads under mu) */
    pthread_mutex_t mu;
    int completed, failed_final, failed_retry, stalled, errors;
    char last_error[FERRY_ERROR_MESSAGE_MAX];
    char last_return[256];
    char last_reason[256];
} wt;

static inline void wt_init(wt *t) {
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    snprintf(t->prefix, sizeof t->prefix, "%s", th_prefix());
    snprintf(t->base, sizeof t->base, "%s:%s:", t->prefix, WT_QUEUE);
    t->q = th_queue_open(t->prefix, WT_QUEUE, NULL, 0);
    t->c = th_conn();
}

static inline void wt_fini(wt *t) {
    ferry_queue_close(t->q);
    ferry__conn_close(t->c);
    pthread_mutex_destroy(&t->mu);
}

/* Add a job; returns a malloc'd id. */
static inline char *wt_add(wt *t, const char *name, const char *data, const char *opts) {
    ferry_job_spec s = {name, data, opts};
    char *id = NULL;
    ferry_error e = {0};
    if (ferry_queue_add(t->q, &s, &id, &e) != 0) fail_msg("add %s: %s", name, e.message);
    return id;
}

static inline redisReply *wt_cmd(wt *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = th_vcmd(t->c, 1, fmt, ap);
    va_end(ap);
    return r;
}

/* HGET <base><id> field: malloc'd value or NULL. */
static inline char *wt_hget(wt *t, const char *id, const char *field) {
    char key[2048];
    snprintf(key, sizeof key, "%s%s", t->base, id);
    return th_hget(t->c, key, field);
}

static inline long long wt_hget_ll(wt *t, const char *id, const char *field) {
    char *v = wt_hget(t, id, field);
    long long n = v ? strtoll(v, NULL, 10) : -1;
    free(v);
    return n;
}

static inline void wt_expect_field(wt *t, const char *id, const char *field, const char *want) {
    char key[2048];
    snprintf(key, sizeof key, "%s%s", t->base, id);
    th_expect_field(t->c, key, field, want);
}

/* Integer answer of a command like "ZCARD %s" built on a key suffix. */
static inline long long wt_int(wt *t, const char *fmt, const char *suffix) {
    redisReply *r = wt_cmd(t, fmt, t->base, suffix);
    long long n = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return n;
}
#define WT_ZCARD(t, s) wt_int((t), "ZCARD %s%s", (s))
#define WT_LLEN(t, s) wt_int((t), "LLEN %s%s", (s))
#define WT_EXISTS(t, s) wt_int((t), "EXISTS %s%s", (s))

/* ZSCORE <base>set id as text (malloc'd) or NULL. */
static inline char *wt_zscore(wt *t, const char *set, const char *id) {
    char key[2048];
    snprintf(key, sizeof key, "%s%s", t->base, set);
    return th_zscore(t->c, key, id);
}

/* The events of one job (or all when id is NULL) as "name name ...", plus a field of
 * interest appended as name(field=value) when `field` is given. malloc'd. */
static inline char *wt_events(wt *t, const char *id, const char *field) {
    redisReply *r = wt_cmd(t, "XRANGE %sevents - +", t->base);
    size_t cap = 64 + r->elements * 96, len = 0;
    char *out = malloc(cap);
    out[0] = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *kv = r->element[i]->element[1];
        const char *ev = NULL, *jid = NULL, *fv = NULL;
        for (size_t k = 0; k + 1 < kv->elements; k += 2) {
            const char *n = kv->element[k]->str, *v = kv->element[k + 1]->str;
            if (!strcmp(n, "event"))
                ev = v;
            else if (!strcmp(n, "jobId"))
                jid = v;
            if (field && !strcmp(n, field)) fv = v;
        }
        if (!ev) continue;
        if (id && (!jid || strcmp(jid, id) != 0) && strcmp(ev, "drained") != 0) continue;
        int n = fv ? snprintf(out + len, cap - len, "%s%s(%s=%s)", len ? " " : "", ev, field, fv)
                   : snprintf(out + len, cap - len, "%s%s", len ? " " : "", ev);
        if (n > 0 && (size_t)n < cap - len) len += (size_t)n;
    }
    freeReplyObject(r);
    return out;
}

/* ---- worker ------------------------------------------------------------------------- */

static void wt_cb_completed(const ferry_job *job, const char *rv, void *ud) {
    wt *t = ud;
    (void)job;
    pthread_mutex_lock(&t->mu);
    t->completed++;
    snprintf(t->last_return, sizeof t->last_return, "%s", rv);
    pthread_mutex_unlock(&t->mu);
}

static void wt_cb_failed(const ferry_job *job, const char *reason, int final, void *ud) {
    wt *t = ud;
    (void)job;
    pthread_mutex_lock(&t->mu);
    if (final)
        t->failed_final++;
    else
        t->failed_retry++;
    snprintf(t->last_reason, sizeof t->last_reason, "%s", reason);
    pthread_mutex_unlock(&t->mu);
}

static void wt_cb_stalled(const char *id, void *ud) {
    wt *t = ud;
    (void)id;
    pthread_mutex_lock(&t->mu);
    t->stalled++;
    pthread_mutex_unlock(&t->mu);
}

static void wt_cb_error(const ferry_error *e, void *ud) {
    wt *t = ud;
    if (getenv("WT_VERBOSE")) fprintf(stderr, "worker error: %s\n", e->message);
    pthread_mutex_lock(&t->mu);
    t->errors++;
    snprintf(t->last_error, sizeof t->last_error, "%s", e->message);
    pthread_mutex_unlock(&t->mu);
}

static inline int wt_count(wt *t, const int *field) {
    pthread_mutex_lock(&t->mu);
    int v = *field;
    pthread_mutex_unlock(&t->mu);
    return v;
}

/* Options with the test's prefix, URL and counting callbacks; adjust, then wt_start. */
static inline void wt_options(wt *t, ferry_worker_options *o, ferry_redis_options *ro) {
    ferry_redis_options_init(ro);
    ro->url = th_env_require("REDIS_URL");
    ferry_worker_options_init(o);
    o->redis = ro;
    o->prefix = t->prefix;
    o->name = "wtest";
    o->callbacks.completed = wt_cb_completed;
    o->callbacks.failed = wt_cb_failed;
    o->callbacks.stalled = wt_cb_stalled;
    o->callbacks.error = wt_cb_error;
    o->userdata = t;
}

static inline ferry_worker *wt_start(const ferry_worker_options *o, ferry_handler_fn fn, void *ud) {
    ferry_worker *w = NULL;
    ferry_error e = {0};
    if (ferry_worker_create(WT_QUEUE, o, fn, ud, &w, &e) != 0)
        fail_msg("worker create: %s", e.message);
    if (ferry_worker_start(w, &e) != 0) fail_msg("worker start: %s", e.message);
    return w;
}

static inline void wt_stop(ferry_worker *w) {
    assert_int_equal(ferry_worker_close(w, 10000), 0);
    ferry_worker_free(w);
}

/* Wait conditions for th_wait_until. */
typedef struct wt_cond {
    wt *t;
    const char *set; /* key suffix */
    long long n;
    const int *counter;
} wt_cond;

static inline int wt_zcard_at_least(void *arg) {
    wt_cond *c = arg;
    return WT_ZCARD(c->t, c->set) >= c->n;
}

static inline int wt_counter_at_least(void *arg) {
    wt_cond *c = arg;
    return wt_count(c->t, c->counter) >= c->n;
}

#define WT_WAIT_ZCARD(t, set, n)                                                                   \
    do {                                                                                           \
        wt_cond wc_ = {(t), (set), (n), NULL};                                                     \
        if (!th_wait_until(wt_zcard_at_least, &wc_, 15000))                                        \
            fail_msg("timed out waiting for %s >= %lld (have %lld)", (set), (long long)(n),        \
                     WT_ZCARD((t), (set)));                                                        \
    } while (0)

#define WT_WAIT_COUNT(t, field, n)                                                                 \
    do {                                                                                           \
        wt_cond wc_ = {(t), NULL, (n), &(t)->field};                                               \
        if (!th_wait_until(wt_counter_at_least, &wc_, 15000))                                      \
            fail_msg("timed out waiting for " #field " >= %d (have %d)", (int)(n),                 \
                     wt_count((t), &(t)->field));                                                  \
    } while (0)

#define WT_WAIT_GATE_ENTERED(g, n)                                                                 \
    do {                                                                                           \
        int n_ = (n);                                                                              \
        void *a_[2] = {(g), &n_};                                                                  \
        if (!th_wait_until(wt_gate_entered_at_least, a_, 15000))                                   \
            fail_msg("timed out waiting for %d handlers to start", n_);                            \
    } while (0)

/* ---- handler context shared by the worker tests ------------------------------------- */

/* What a test handler records: a gate to hold it in, and how often it ran. */
typedef struct wt_hctx {
    wt_gate g;
    pthread_mutex_t mu;
    int runs;
} wt_hctx;

static inline void wt_hctx_init(wt_hctx *h) {
    memset(h, 0, sizeof *h);
    wt_gate_init(&h->g);
    pthread_mutex_init(&h->mu, NULL);
}

/* Called first by a handler: count this run. */
static inline void wt_hctx_count_run(wt_hctx *h) {
    pthread_mutex_lock(&h->mu);
    h->runs++;
    pthread_mutex_unlock(&h->mu);
}

static inline int wt_runs_of(wt_hctx *h) {
    pthread_mutex_lock(&h->mu);
    int v = h->runs;
    pthread_mutex_unlock(&h->mu);
    return v;
}

/* ---- a worker that fetched a job and died ---------------------------------------------- */

/* Fetch the next job of the queue whose keys start with `base` ("<prefix>:<queue>:") with a
 * lock of lock_ms and token "dead-worker:1"; fails the test unless it is `want_id`. */
static inline void wt_dead_worker_fetch(ferry_conn *c, const char *base, const char *want_id,
                                        int lock_ms) {
    const ferry_script *s = ferry__script_get("moveToActive");
    assert_non_null(s);
    char k[9][200];
    const char *sfx[] = {"wait",    "active", "prioritized", "events", "limiter",
                         "delayed", "meta",   "pc",          "marker"};
    const char *keys[9];
    for (int i = 0; i < 9; i++) {
        snprintf(k[i], sizeof k[i], "%s%s", base, sfx[i]);
        keys[i] = k[i];
    }
    char now[24], lock[16];
    snprintf(now, sizeof now, "%lld", (long long)ferry__now_ms());
    snprintf(lock, sizeof lock, "%d", lock_ms);
    const char *args[] = {base, now, "1", "dead-worker:", "1", lock, "", "", ""};
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_evalsha(c, s, 9, keys, 9, args, NULL, &r, &e) != 0) fail_msg("%s", e.message);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->elements, 2);
    assert_string_equal(r->element[0]->element[0]->str, want_id);
    freeReplyObject(r);
}

#endif

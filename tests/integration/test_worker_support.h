/* test_worker_support.h - helpers shared by the worker integration tests (test_worker.c,
 * test_worker_recovery.c): a queue + raw connection per test with a fresh key prefix, job
 * adds, hash/zset/list reads, the events stream as one string, and a worker factory whose
 * callbacks count into a struct. Header-only (static functions): each test file is its own
 * executable. */
#ifndef FERRY_TEST_WORKER_SUPPORT_H
#define FERRY_TEST_WORKER_SUPPORT_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/queue.h"
#include "ferry/worker.h"
#include "support/testenv.h"
#include "test_gate.h"
#include "util/clock.h"

#define QNAME "wq"

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

/* Queue `name` under `prefix` on the test Redis (the caller closes it). */
static inline ferry_queue *wt_queue_open(const char *prefix, const char *name) {
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = testenv_require("REDIS_URL");
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = &ro;
    qo.prefix = prefix;
    ferry_queue *q = NULL;
    ferry_error e = {0};
    if (ferry_queue_open(name, &qo, &q, &e) != 0) fail_msg("queue open: %s", e.message);
    return q;
}

static inline void wt_init(wt *t) {
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    snprintf(t->prefix, sizeof t->prefix, "%s", testenv_prefix());
    snprintf(t->base, sizeof t->base, "%s:%s:", t->prefix, QNAME);
    t->q = wt_queue_open(t->prefix, QNAME);
    t->c = testenv_conn();
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
    redisReply *r = NULL;
    ferry_error e = {0};
    int rc = ferry__conn_vcommand(t->c, &r, &e, fmt, ap);
    va_end(ap);
    if (rc != 0) fail_msg("redis: %s", e.message);
    if (r->type == REDIS_REPLY_ERROR) fail_msg("redis error: %s", r->str);
    return r;
}

/* HGET <base><id> field: malloc'd value or NULL. */
static inline char *wt_hget(wt *t, const char *id, const char *field) {
    redisReply *r = wt_cmd(t, "HGET %s%s %s", t->base, id, field);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return v;
}

static inline long long wt_hget_ll(wt *t, const char *id, const char *field) {
    char *v = wt_hget(t, id, field);
    long long n = v ? strtoll(v, NULL, 10) : -1;
    free(v);
    return n;
}

static inline void wt_expect_field(wt *t, const char *id, const char *field, const char *want) {
    char *v = wt_hget(t, id, field);
    if (!want) {
        if (v) fail_msg("job %s: %s = '%s', want absent", id, field, v);
        return;
    }
    if (!v || strcmp(v, want) != 0)
        fail_msg("job %s: %s = '%s', want '%s'", id, field, v ? v : "(absent)", want);
    free(v);
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
    redisReply *r = wt_cmd(t, "ZSCORE %s%s %s", t->base, set, id);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return v;
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
    ro->url = testenv_require("REDIS_URL");
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
    if (ferry_worker_create(QNAME, o, fn, ud, &w, &e) != 0)
        fail_msg("worker create: %s", e.message);
    if (ferry_worker_start(w, &e) != 0) fail_msg("worker start: %s", e.message);
    return w;
}

static inline void wt_stop(ferry_worker *w) {
    assert_int_equal(ferry_worker_close(w, 10000), 0);
    ferry_worker_free(w);
}

/* Wait conditions for testenv_wait_until. */
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
        if (!testenv_wait_until(wt_zcard_at_least, &wc_, 15000))                                   \
            fail_msg("timed out waiting for %s >= %lld (have %lld)", (set), (long long)(n),        \
                     WT_ZCARD((t), (set)));                                                        \
    } while (0)

#define WT_WAIT_COUNT(t, field, n)                                                                 \
    do {                                                                                           \
        wt_cond wc_ = {(t), NULL, (n), &(t)->field};                                               \
        if (!testenv_wait_until(wt_counter_at_least, &wc_, 15000))                                 \
            fail_msg("timed out waiting for " #field " >= %d (have %d)", (int)(n),                 \
                     wt_count((t), &(t)->field));                                                  \
    } while (0)

#define GATE_WAIT_ENTERED(g, n)                                                                    \
    do {                                                                                           \
        int n_ = (n);                                                                              \
        void *a_[2] = {(g), &n_};                                                                  \
        if (!testenv_wait_until(gate_entered_at_least, a_, 15000))                                 \
            fail_msg("timed out waiting for %d handlers to start", n_);                            \
    } while (0)

/* ---- handler context shared by the worker tests ------------------------------------- */

/* What a test handler records: a gate to hold it in, and how often it ran. */
typedef struct hctx {
    gate g;
    pthread_mutex_t mu;
    int runs;
} hctx;

static inline void hctx_init(hctx *h) {
    memset(h, 0, sizeof *h);
    gate_init(&h->g);
    pthread_mutex_init(&h->mu, NULL);
}

/* Called first by a handler: count this run. */
static inline void hctx_count_run(hctx *h) {
    pthread_mutex_lock(&h->mu);
    h->runs++;
    pthread_mutex_unlock(&h->mu);
}

static inline int runs_of(hctx *h) {
    pthread_mutex_lock(&h->mu);
    int v = h->runs;
    pthread_mutex_unlock(&h->mu);
    return v;
}

#endif

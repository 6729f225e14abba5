/* test_worker_lanes.c - a worker of several lanes (ferry_worker_options.lanes) against a
 * private Redis: the concurrency is shared out between the lanes (each with its own lock
 * tokens and blocking connection), the automatic choice and its caps, option checks,
 * callbacks still one at a time across lanes, stats summed, and close covering every
 * lane within one deadline (no callback after it returns). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/wt.h"

typedef struct lctx {
    wt_gate g;
    /* completed callback: how often it ran, and whether two ever overlapped */
    atomic_int in_cb;
    atomic_int overlaps;
    atomic_int completed;
    atomic_int failed, errors;
} lctx;

static void lctx_init(lctx *c) {
    memset(c, 0, sizeof *c);
    wt_gate_init(&c->g);
}

static ferry_outcome handler(ferry_job *job, void *ud) {
    lctx *c = ud;
    if (strcmp(ferry_job_name(job), "gate") == 0 && !wt_gate_pass(&c->g)) return FERRY_FAILED;
    return FERRY_COMPLETED;
}

static void on_completed(const ferry_job *job, const char *rv, void *ud) {
    (void)job;
    (void)rv;
    lctx *c = ud;
    if (atomic_fetch_add(&c->in_cb, 1) != 0) atomic_fetch_add(&c->overlaps, 1);
    usleep(50); /* widen the window another lane's callback would have to overlap */
    atomic_fetch_sub(&c->in_cb, 1);
    atomic_fetch_add(&c->completed, 1);
}

static void on_failed(const ferry_job *job, const char *reason, int final, void *ud) {
    (void)job;
    (void) final;
    lctx *c = ud;
    fprintf(stderr, "job failed: %s\n", reason);
    atomic_fetch_add(&c->failed, 1);
}

static void on_error(const ferry_error *e, void *ud) {
    lctx *c = ud;
    fprintf(stderr, "worker error: %s\n", e->message);
    atomic_fetch_add(&c->errors, 1);
}

static int completed_at_least(void *arg) {
    lctx *c = ((void **)arg)[0];
    return atomic_load(&c->completed) >= *(int *)((void **)arg)[1];
}

/* Named blocking connections of this test's workers ("<prefix>:<base64(wq)>:w:wtest"): one
 * per worker, whatever its lanes (the first lane's), as Node names one per Worker. */
static long blocking_conns(wt *t) {
    char name[160];
    snprintf(name, sizeof name, "name=%s:d3E=:w:wtest ", t->prefix);
    redisReply *r = wt_cmd(t, "CLIENT LIST");
    long n = 0;
    for (const char *p = r->str; (p = strstr(p, name)); p += strlen(name))
        n++;
    freeReplyObject(r);
    return n;
}

static long connected_clients(wt *t) {
    redisReply *r = wt_cmd(t, "INFO clients");
    const char *cc = strstr(r->str, "connected_clients:");
    long n = cc ? strtol(cc + 18, NULL, 10) : -1;
    freeReplyObject(r);
    return n;
}

/* Wait until count(t) == want (a closed worker's sockets may take the server a moment to
 * notice); fails the test with `what` otherwise. */
typedef struct count_arg {
    wt *t;
    long (*count)(wt *);
    long want;
} count_arg;

static int count_is(void *arg) {
    count_arg *a = arg;
    return a->count(a->t) == a->want;
}

static void expect_count(wt *t, long (*count)(wt *), long want, const char *what) {
    count_arg a = {t, count, want};
    if (!th_wait_until(count_is, &a, 5000)) fail_msg("%s: %ld, want %ld", what, count(t), want);
}

static void expect_blocking_conns(wt *t, int want, const char *what) {
    expect_count(t, blocking_conns, want, what);
}

static void lane_options(wt *t, lctx *c, ferry_worker_options *o, ferry_redis_options *ro,
                         int concurrency, int lanes) {
    wt_options(t, o, ro);
    o->concurrency = concurrency;
    o->lanes = lanes;
    o->callbacks.completed = on_completed;
    o->callbacks.failed = on_failed;
    o->callbacks.stalled = NULL;
    o->callbacks.error = on_error;
    o->userdata = c;
}

static ferry_worker *start_lanes(wt *t, lctx *c, int concurrency, int lanes) {
    ferry_worker_options o;
    ferry_redis_options ro;
    lane_options(t, c, &o, &ro, concurrency, lanes);
    return wt_start(&o, handler, c);
}

/* Close, then read the stats (every result is counted once close returned), then free. */
static void stop_with_stats(ferry_worker *w, ferry_worker_stats *s) {
    assert_int_equal(ferry_worker_close(w, 10000), 0);
    ferry_worker_get_stats(w, s);
    ferry_worker_free(w);
}

/* K gate jobs fill both lanes' slots: half each, with two distinct lock token prefixes
 * (one per lane), two connections per lane but one named blocking connection, the summed
 * busy count; then all complete. */
static void test_lanes_share_concurrency(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    lctx c;
    lctx_init(&c);
    enum { K = 8 };
    for (int i = 0; i < K + 2; i++)
        free(wt_add(&t, "gate", NULL, NULL));
    long base = connected_clients(&t);
    ferry_worker *w = start_lanes(&t, &c, K, 0); /* automatic: 2 lanes at 8 */
    WT_WAIT_GATE_ENTERED(&c.g, K);
    /* two connections per lane; one named blocking connection for the worker */
    expect_count(&t, connected_clients, base + 4, "connections of a two-lane worker");
    expect_blocking_conns(&t, 1, "running");
    ferry_worker_stats s;
    ferry_worker_get_stats(w, &s);
    assert_int_equal(s.busy, K);
    assert_int_equal(WT_LLEN(&t, "active"), K);
    assert_int_equal(WT_LLEN(&t, "wait"), 2);

    /* lock tokens are "<lane uuid>:<n>": two prefixes, K/2 jobs each */
    char prefixes[2][64] = {{0}};
    int per[2] = {0, 0};
    redisReply *ids = wt_cmd(&t, "LRANGE %sactive 0 -1", t.base);
    for (size_t i = 0; i < ids->elements; i++) {
        redisReply *r = wt_cmd(&t, "GET %s%s:lock", t.base, ids->element[i]->str);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        const char *colon = strrchr(r->str, ':');
        assert_non_null(colon);
        int len = (int)(colon - r->str);
        assert_true(len > 0 && len < 64);
        int k = 0;
        while (k < 2 && prefixes[k][0] && strncmp(prefixes[k], r->str, (size_t)len) != 0)
            k++;
        if (k == 2) fail_msg("a third lock token prefix: %s", r->str);
        if (!prefixes[k][0]) memcpy(prefixes[k], r->str, (size_t)len);
        per[k]++;
        freeReplyObject(r);
    }
    freeReplyObject(ids);
    assert_int_equal(per[0], K / 2);
    assert_int_equal(per[1], K / 2);

    wt_gate_open(&c.g);
    WT_WAIT_ZCARD(&t, "completed", K + 2);
    assert_int_equal(c.g.max_inside, K);
    int want = K + 2;
    void *a[2] = {&c, &want};
    assert_true(th_wait_until(completed_at_least, a, 15000));
    stop_with_stats(w, &s);
    assert_int_equal(s.completed, K + 2);
    assert_int_equal(s.busy, 0);
    assert_int_equal(atomic_load(&c.errors), 0);
    expect_blocking_conns(&t, 0, "closed");
    wt_gate_destroy(&c.g);
    wt_fini(&t);
}

/* How many lanes a worker gets: automatic below and from concurrency 8, explicit, and
 * never more than its concurrency. Counted by their connections (two each), and as
 * ferry_worker_lanes reports them. */
static void test_lanes_automatic_and_capped(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    lctx c;
    lctx_init(&c);
    const struct {
        int concurrency, lanes, want;
    } cases[] = {{1, 0, 1}, {7, 0, 1}, {8, 0, 2},  {100, 0, 2},
                 {8, 1, 1}, {3, 3, 3}, {10, 4, 4}, {2, 4, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long base = connected_clients(&t);
        ferry_worker *w = start_lanes(&t, &c, cases[i].concurrency, cases[i].lanes);
        char what[64];
        snprintf(what, sizeof what, "concurrency %d lanes %d", cases[i].concurrency,
                 cases[i].lanes);
        expect_count(&t, connected_clients, base + 2 * cases[i].want, what); /* 2 per lane */
        expect_blocking_conns(&t, 1, what);
        assert_int_equal(ferry_worker_lanes(w), cases[i].want);
        wt_stop(w);
        expect_blocking_conns(&t, 0, what);
        expect_count(&t, connected_clients, base, what);
    }
    wt_gate_destroy(&c.g);
    wt_fini(&t);
}

static void test_lanes_out_of_range(void **state) {
    (void)state;
    ferry_worker_options o;
    ferry_worker_options_init(&o);
    const int bad[] = {-1, 5, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.lanes = bad[i];
        ferry_worker *w = (ferry_worker *)&o; /* must be reset to NULL */
        ferry_error e = {0};
        assert_int_equal(ferry_worker_create(WT_QUEUE, &o, handler, NULL, &w, &e), FERRY_EINVAL);
        assert_null(w);
        char want[64];
        snprintf(want, sizeof want, "lanes %d out of range (0..4)", bad[i]);
        if (!strstr(e.message, want)) fail_msg("message '%s' lacks '%s'", e.message, want);
    }
}

/* Callbacks of different lanes never run at the same time, and every job is reported
 * once (stats summed over the lanes). */
static void test_lanes_callbacks_one_at_a_time(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    lctx c;
    lctx_init(&c);
    enum { N = 400 };
    ferry_job_spec specs[N];
    for (int i = 0; i < N; i++)
        specs[i] = (ferry_job_spec){"none", NULL, "{\"removeOnComplete\":true}"};
    ferry_error e = {0};
    if (ferry_queue_add_bulk(t.q, specs, N, NULL, &e) != 0) fail_msg("add_bulk: %s", e.message);
    ferry_worker *w = start_lanes(&t, &c, 8, 4);
    int want = N;
    void *a[2] = {&c, &want};
    assert_true(th_wait_until(completed_at_least, a, 30000));
    assert_int_equal(atomic_load(&c.overlaps), 0);
    ferry_worker_stats s;
    stop_with_stats(w, &s);
    assert_int_equal(s.completed, N);
    assert_int_equal(atomic_load(&c.completed), N);
    assert_int_equal(atomic_load(&c.errors), 0);
    assert_int_equal(WT_LLEN(&t, "wait"), 0);
    assert_int_equal(WT_LLEN(&t, "active"), 0);
    wt_gate_destroy(&c.g);
    wt_fini(&t);
}

static void *open_later(void *arg) {
    usleep(300 * 1000);
    wt_gate_open(arg);
    return NULL;
}

/* Close waits for the running handlers of every lane; with a deadline too short it
 * reports the timeout and no callback runs after it returned. */
static void test_lanes_close(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    lctx c;
    lctx_init(&c);
    free(wt_add(&t, "gate", NULL, NULL));
    free(wt_add(&t, "gate", NULL, NULL));
    ferry_worker *w = start_lanes(&t, &c, 2, 2); /* one slot per lane: each runs one */
    WT_WAIT_GATE_ENTERED(&c.g, 2);
    pthread_t th;
    pthread_create(&th, NULL, open_later, &c.g);
    assert_int_equal(ferry_worker_close(w, 10000), 0);
    pthread_join(th, NULL);
    assert_int_equal(WT_ZCARD(&t, "completed"), 2);
    assert_int_equal(atomic_load(&c.completed), 2);
    ferry_worker_free(w);
    wt_gate_destroy(&c.g);

    lctx_init(&c);
    free(wt_add(&t, "gate", NULL, NULL));
    free(wt_add(&t, "gate", NULL, NULL));
    w = start_lanes(&t, &c, 2, 2);
    WT_WAIT_GATE_ENTERED(&c.g, 2);
    assert_int_equal(ferry_worker_close(w, 200), FERRY_ETIMEDOUT);
    /* a second close says the same, while the handlers still run (0 would tell the caller
     * it may free the userdata they use) */
    assert_int_equal(ferry_worker_close(w, 3000), FERRY_ETIMEDOUT);
    wt_gate_open(&c.g);
    usleep(300 * 1000); /* the abandoned handlers return meanwhile */
    assert_int_equal(atomic_load(&c.completed), 0);
    assert_int_equal(WT_LLEN(&t, "active"), 2); /* left for the stalled check */
    ferry_worker_free(w);
    wt_gate_destroy(&c.g);
    wt_fini(&t);
}

/* A lane that cannot connect (the server's maxclients reached after the first lane's two
 * connections) fails the start before any lane takes a job, and the worker can be started
 * again once the server accepts it. */
static void test_lanes_start_all_or_nothing(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    lctx c;
    lctx_init(&c);
    char *id = wt_add(&t, "none", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    lane_options(&t, &c, &o, &ro, 2, 2);
    ferry_worker *w = NULL;
    ferry_error e = {0};
    if (ferry_worker_create(WT_QUEUE, &o, handler, &c, &w, &e) != 0)
        fail_msg("create: %s", e.message);

    redisReply *r = wt_cmd(&t, "CONFIG GET maxclients");
    char saved[32];
    snprintf(saved, sizeof saved, "%s", r->element[1]->str);
    freeReplyObject(r);
    long now = connected_clients(&t); /* this test's own connections only (it runs first) */
    freeReplyObject(wt_cmd(&t, "CONFIG SET maxclients %ld", now + 3)); /* lane 1 gets one */
    int rc = ferry_worker_start(w, &e);
    freeReplyObject(wt_cmd(&t, "CONFIG SET maxclients %s", saved));
    if (rc == 0) fail_msg("start succeeded with maxclients %ld", now + 3);
    if (!strstr(e.message, "max number of clients")) fail_msg("start: %s", e.message);
    usleep(200 * 1000); /* a lane that had started would have fetched by now */
    assert_int_equal(WT_LLEN(&t, "wait"), 1);
    assert_int_equal(WT_LLEN(&t, "active"), 0);
    assert_int_equal(atomic_load(&c.completed), 0);
    expect_blocking_conns(&t, 0, "after the failed start");
    /* lane 0's connections (2) and lane 1's first (1) were closed again */
    expect_count(&t, connected_clients, now, "connected clients after the failed start");

    if (ferry_worker_start(w, &e) != 0) fail_msg("second start: %s", e.message);
    WT_WAIT_ZCARD(&t, "completed", 1);
    assert_int_equal(ferry_worker_close(w, 10000), 0);
    /* once closed, it may only be freed */
    assert_int_equal(ferry_worker_start(w, &e), FERRY_ESTATE);
    assert_non_null(strstr(e.message, "closed"));
    ferry_worker_free(w);
    free(id);
    wt_gate_destroy(&c.g);
    wt_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lanes_start_all_or_nothing), /* first: counts connections */
        cmocka_unit_test(test_lanes_share_concurrency),
        cmocka_unit_test(test_lanes_automatic_and_capped),
        cmocka_unit_test(test_lanes_out_of_range),
        cmocka_unit_test(test_lanes_callbacks_one_at_a_time),
        cmocka_unit_test(test_lanes_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

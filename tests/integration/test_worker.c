/* test_worker.c - the worker against real Redis: completion with JSON and non-JSON return
 * values, retries with fixed and exponential backoff, permanent failure, removeOnComplete
 * (true / count / age, job option and worker option), concurrency K, maxStartedAttempts,
 * batched results with per-job checks, the marker after a fetch, thread hand-off when a
 * fast workload meets a blocking job, graceful close. Effects are checked on the Redis
 * side (job hash, sets, events) exactly as BullMQ 6.7.0 leaves them. Recovery paths are in
 * test_worker_recovery.c. */
#include <jansson.h>

#include "support/wt.h"

/* Behaviour by job name. */
static ferry_outcome handler(ferry_job *job, void *ud) {
    wt_hctx *h = ud;
    wt_hctx_count_run(h);
    const char *n = ferry_job_name(job);
    if (!strcmp(n, "json")) {
        ferry_job_set_return(job, "{\"ok\":1,\"n\":[1,2]}");
        return FERRY_COMPLETED;
    }
    if (!strcmp(n, "text")) {
        ferry_job_set_return(job, "plain \"words\"\n");
        return FERRY_COMPLETED;
    }
    if (!strcmp(n, "fail")) {
        ferry_job_set_failure(job, "boom", NULL);
        return FERRY_FAILED;
    }
    if (!strcmp(n, "fatal")) {
        ferry_job_set_failure(job, "fatal input", "MyError: fatal input\n    at check (x.c:1)");
        return FERRY_FAILED_PERMANENT;
    }
    if (!strcmp(n, "gate")) {
        wt_gate_pass(&h->g);
        return FERRY_COMPLETED;
    }
    return FERRY_COMPLETED; /* "none": no return value -> null */
}

/* ---- completion --------------------------------------------------------------------- */

static void test_complete_return_values(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *j1 = wt_add(&t, "json", "{\"a\":1}", NULL);
    char *j2 = wt_add(&t, "text", NULL, NULL);
    char *j3 = wt_add(&t, "none", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "completed", 3);
    WT_WAIT_COUNT(&t, completed, 3);

    wt_expect_field(&t, j1, "returnvalue", "{\"ok\":1,\"n\":[1,2]}");
    wt_expect_field(&t, j2, "returnvalue", "\"plain \\\"words\\\"\\n\"");
    wt_expect_field(&t, j3, "returnvalue", "null");
    const char *ids[] = {j1, j2, j3};
    for (int i = 0; i < 3; i++) {
        wt_expect_field(&t, ids[i], "atm", "1");
        wt_expect_field(&t, ids[i], "ats", "1");
        wt_expect_field(&t, ids[i], "pb", "wtest");
        assert_true(wt_hget_ll(&t, ids[i], "processedOn") > 0);
        char *fin = wt_hget(&t, ids[i], "finishedOn");
        char *score = wt_zscore(&t, "completed", ids[i]);
        assert_non_null(fin);
        assert_non_null(score);
        assert_string_equal(fin, score);
        free(fin);
        free(score);
        char lock[160];
        snprintf(lock, sizeof lock, "%s:lock", ids[i]);
        assert_int_equal(WT_EXISTS(&t, lock), 0);
        /* returnvalue must be JSON for Node's QueueEvents */
        char *rv = wt_hget(&t, ids[i], "returnvalue");
        json_t *parsed = json_loads(rv, JSON_DECODE_ANY, NULL);
        assert_non_null(parsed);
        json_decref(parsed);
        free(rv);
    }
    char *ev = wt_events(&t, j1, "returnvalue");
    assert_non_null(
        strstr(ev, "added waiting active completed(returnvalue={\"ok\":1,\"n\":[1,2]})"));
    free(ev);
    ev = wt_events(&t, NULL, NULL);
    assert_non_null(strstr(ev, "drained")); /* the last finish left the queue empty */
    free(ev);
    assert_int_equal(WT_LLEN(&t, "active"), 0);
    assert_int_equal(WT_LLEN(&t, "wait"), 0);

    ferry_worker_stats st;
    ferry_worker_get_stats(w, &st);
    assert_int_equal(st.completed, 3);
    assert_int_equal(st.failed, 0);
    wt_stop(w);
    assert_int_equal(t.errors, 0);
    free(j1), free(j2), free(j3);
    wt_fini(&t);
}

/* ---- failures ----------------------------------------------------------------------- */

static void test_retry_fixed_then_fail(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id =
        wt_add(&t, "fail", NULL, "{\"attempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":50}}");
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "failed", 1);
    WT_WAIT_COUNT(&t, failed_final, 1);

    assert_int_equal(wt_runs_of(&h), 3);
    wt_expect_field(&t, id, "atm", "3");
    wt_expect_field(&t, id, "ats", "3");
    wt_expect_field(&t, id, "failedReason", "boom");
    wt_expect_field(&t, id, "delay", "0"); /* reset by the promotion from delayed */
    char *st = wt_hget(&t, id, "stacktrace");
    json_t *arr = json_loads(st, 0, NULL);
    assert_true(json_is_array(arr));
    assert_int_equal(json_array_size(arr), 3);
    char want_stack[128];
    snprintf(want_stack, sizeof want_stack, "Error: boom\n    at ferry handler (queue wq, job %s)",
             id);
    assert_string_equal(json_string_value(json_array_get(arr, 2)), want_stack);
    json_decref(arr);
    free(st);

    char *ev = wt_events(&t, id, NULL);
    assert_string_equal(ev, "added waiting active delayed waiting active delayed waiting active "
                            "failed retries-exhausted drained");
    free(ev);
    ev = wt_events(&t, id, "attemptsMade");
    assert_non_null(strstr(ev, "retries-exhausted(attemptsMade=3)"));
    free(ev);
    ev = wt_events(&t, id, "failedReason");
    assert_non_null(strstr(ev, "failed(failedReason=boom)"));
    free(ev);

    ferry_worker_stats s;
    ferry_worker_get_stats(w, &s);
    assert_int_equal(s.retried, 2);
    assert_int_equal(s.failed, 1);
    assert_int_equal(t.failed_retry, 2);
    assert_string_equal(t.last_reason, "boom");
    wt_stop(w);
    free(id);
    wt_fini(&t);
}

typedef struct delayed_cond {
    wt *t;
    const char *id;
    long long atm;
} delayed_cond;

static int job_delayed_with_atm(void *arg) {
    delayed_cond *c = arg;
    char *s = wt_zscore(c->t, "delayed", c->id);
    int ok = s && wt_hget_ll(c->t, c->id, "atm") == c->atm;
    free(s);
    return ok;
}

static void test_exponential_backoff_delays(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "fail", NULL,
                      "{\"attempts\":4,\"backoff\":{\"type\":\"exponential\",\"delay\":100000}}");
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &h);
    const long long want[] = {100000, 200000, 400000};
    for (int i = 0; i < 3; i++) {
        delayed_cond dc = {&t, id, i + 1};
        long long before = ferry__now_ms();
        if (!th_wait_until(job_delayed_with_atm, &dc, 15000))
            fail_msg("attempt %d did not move the job to delayed", i + 1);
        long long after = ferry__now_ms();
        assert_int_equal(wt_hget_ll(&t, id, "delay"), want[i]);
        /* delayed score = due ms * 4096 (+ sequence); due = now + delay at the move */
        char *sc = wt_zscore(&t, "delayed", id);
        long long due = (long long)(strtod(sc, NULL) / 4096);
        free(sc);
        assert_true(due >= before - 1000 + want[i] && due <= after + want[i]);
        /* make it due now instead of waiting: move its score to 0 and wake the worker */
        freeReplyObject(wt_cmd(&t, "ZADD %sdelayed 0 %s", t.base, id));
        freeReplyObject(wt_cmd(&t, "ZADD %smarker 0 0", t.base));
    }
    WT_WAIT_ZCARD(&t, "failed", 1);
    wt_expect_field(&t, id, "atm", "4");
    char *ev = wt_events(&t, id, "delay");
    assert_non_null(strstr(ev, "delayed(delay="));
    free(ev);
    assert_int_equal(wt_runs_of(&h), 4);
    wt_stop(w);
    free(id);
    wt_fini(&t);
}

static void test_permanent_failure(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "fatal", NULL, "{\"attempts\":5,\"backoff\":1000}");
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "failed", 1);
    WT_WAIT_COUNT(&t, failed_final, 1);
    assert_int_equal(wt_runs_of(&h), 1);
    wt_expect_field(&t, id, "atm", "1");
    wt_expect_field(&t, id, "failedReason", "fatal input");
    wt_expect_field(&t, id, "stacktrace", "[\"MyError: fatal input\\n    at check (x.c:1)\"]");
    char *ev = wt_events(&t, id, NULL);
    assert_string_equal(ev, "added waiting active failed drained"); /* atm 1 < attempts 5 */
    free(ev);
    assert_int_equal(t.failed_retry, 0);
    wt_stop(w);
    free(id);
    wt_fini(&t);
}

/* Entries a Node worker stored before are kept as written, even those jansson cannot read
 * (\u0000, a lone surrogate escape), and stackTraceLimit drops the oldest. */
static void test_stacktrace_keeps_earlier_entries(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "fatal", NULL, "{\"attempts\":5,\"stackTraceLimit\":3}");
    freeReplyObject(wt_cmd(&t, "HSET %s%s stacktrace %s", t.base, id,
                           "[\"old\", \"Error: bad\\u0000byte\" ,\"lone \\ud800 x\"]"));
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "failed", 1);
    wt_expect_field(&t, id, "stacktrace",
                    "[\"Error: bad\\u0000byte\",\"lone \\ud800 x\",\"MyError: fatal input\\n"
                    "    at check (x.c:1)\"]");
    wt_stop(w);
    free(id);
    wt_fini(&t);
}

typedef struct longq_arg {
    ferry_conn *c;
    const char *prefix, *queue;
} longq_arg;

static int longq_completed(void *arg) {
    longq_arg *a = arg;
    redisReply *r = th_cmd(a->c, "ZCARD %s:%s:completed", a->prefix, a->queue);
    int done = r->type == REDIS_REPLY_INTEGER && r->integer >= 1;
    freeReplyObject(r);
    return done;
}

/* Every queue a producer can fill, a worker can consume: the longest queue name (512
 * bytes), a long prefix and the longest worker name (256) still make a valid client name. */
static void test_longest_names_consumed(void **state) {
    (void)state;
    char qname[513], prefix[300], wname[257];
    memset(qname, 'q', 512);
    qname[512] = 0;
    snprintf(prefix, sizeof prefix, "%s-%0280d", th_prefix(), 0);
    memset(wname, 'n', 256);
    wname[256] = 0;
    ferry_queue *q = th_queue_open(prefix, qname, NULL, 0);
    ferry_error e = {0};
    ferry_job_spec s = {"json", NULL, NULL};
    char *id = NULL;
    if (ferry_queue_add(q, &s, &id, &e) != 0) fail_msg("add: %s", e.message);
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = th_env_require("REDIS_URL");
    ferry_worker_options o;
    ferry_worker_options_init(&o);
    o.redis = &ro;
    o.prefix = prefix;
    o.name = wname;
    wt_hctx h;
    wt_hctx_init(&h);
    ferry_worker *w = NULL;
    if (ferry_worker_create(qname, &o, handler, &h, &w, &e) != 0)
        fail_msg("worker create: %s", e.message);
    if (ferry_worker_start(w, &e) != 0) fail_msg("worker start: %s", e.message);
    longq_arg a = {th_conn(), prefix, qname};
    if (!th_wait_until(longq_completed, &a, 20000)) fail_msg("the job was not completed");
    wt_stop(w);
    ferry__conn_close(a.c);
    free(id);
    ferry_queue_close(q);
}

static void test_unknown_backoff_fails_clearly(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "fail", NULL,
                      "{\"attempts\":3,\"backoff\":{\"type\":\"jittery\",\"delay\":10}}");
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "failed", 1);
    char *reason = wt_hget(&t, id, "failedReason");
    assert_non_null(strstr(reason, "boom"));
    assert_non_null(strstr(reason, "unknown backoff strategy \"jittery\""));
    free(reason);
    wt_expect_field(&t, id, "atm", "1");
    wt_stop(w);
    free(id);
    wt_fini(&t);
}

/* ---- keepJobs ------------------------------------------------------------------------- */

/* BullMQ's age is seconds and may carry a fraction (Node computes now - age * 1000): 1.5 s
 * trims a job finished 1.8 s ago (2 s would not), and not everything. (ferry once read a
 * fraction below 1 as "no age limit" and refused fractions at add.) The exact bound is
 * checked with a fixed clock in test_finish_script. */
static void test_remove_on_complete_fractional_age(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    long long now = ferry__now_ms();
    freeReplyObject(wt_cmd(&t, "HSET %sold name old data {} opts {} timestamp 1", t.base));
    freeReplyObject(wt_cmd(&t, "ZADD %scompleted %lld old", t.base, now - 1800));
    freeReplyObject(wt_cmd(&t, "HSET %srecent name recent data {} opts {} timestamp 1", t.base));
    freeReplyObject(wt_cmd(&t, "ZADD %scompleted %lld recent", t.base, now + 60000));
    char *aged = wt_add(&t, "none", NULL, "{\"removeOnComplete\":{\"age\":1.5}}");
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_COUNT(&t, completed, 1);
    wt_stop(w);
    assert_int_equal(WT_EXISTS(&t, "old"), 0);
    assert_null(wt_zscore(&t, "completed", "old"));
    assert_int_equal(WT_EXISTS(&t, "recent"), 1);
    assert_int_equal(WT_EXISTS(&t, aged), 1);
    assert_int_equal(WT_ZCARD(&t, "completed"), 2);
    free(aged);
    wt_fini(&t);
}

static void test_remove_on_complete(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    /* true: the job is deleted, its events stay */
    char *gone = wt_add(&t, "none", NULL, "{\"removeOnComplete\":true}");
    /* an old completed job that an age rule must trim, and one recent enough to stay */
    long long now = ferry__now_ms();
    freeReplyObject(wt_cmd(&t, "HSET %sold name old data {} opts {} timestamp 1", t.base));
    freeReplyObject(wt_cmd(&t, "ZADD %scompleted %lld old", t.base, now - 3600 * 1000LL));
    freeReplyObject(wt_cmd(&t, "HSET %srecent name recent data {} opts {} timestamp 1", t.base));
    freeReplyObject(wt_cmd(&t, "ZADD %scompleted %lld recent", t.base, now - 10 * 1000LL));
    char *aged = wt_add(&t, "none", NULL, "{\"removeOnComplete\":{\"age\":60}}");
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.concurrency = 1; /* keep the order: gone, aged */
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_COUNT(&t, completed, 2);
    assert_int_equal(WT_EXISTS(&t, gone), 0);
    assert_null(wt_zscore(&t, "completed", gone));
    char *ev = wt_events(&t, gone, NULL);
    assert_non_null(strstr(ev, "completed"));
    free(ev);
    assert_int_equal(WT_EXISTS(&t, "old"), 0);
    assert_null(wt_zscore(&t, "completed", "old"));
    assert_int_equal(WT_EXISTS(&t, "recent"), 1);
    assert_int_equal(WT_EXISTS(&t, aged), 1);
    assert_int_equal(WT_ZCARD(&t, "completed"), 2);

    /* count: keep the newest 2 of everything in completed */
    char *ids[5];
    for (int i = 0; i < 5; i++)
        ids[i] = wt_add(&t, "none", NULL, "{\"removeOnComplete\":2}");
    WT_WAIT_COUNT(&t, completed, 7);
    assert_int_equal(WT_ZCARD(&t, "completed"), 2);
    int kept = 0;
    for (int i = 0; i < 5; i++)
        kept += (int)WT_EXISTS(&t, ids[i]);
    assert_int_equal(kept, 2);
    assert_int_equal(WT_EXISTS(&t, ids[4]), 1); /* the newest survives */
    assert_int_equal(WT_EXISTS(&t, "recent"), 0);
    for (int i = 0; i < 5; i++)
        free(ids[i]);
    wt_stop(w);

    /* worker-level option applies to jobs without their own; a job option wins */
    o.remove_on_complete = "1";
    w = wt_start(&o, handler, &h);
    char *a = wt_add(&t, "none", NULL, NULL);
    WT_WAIT_COUNT(&t, completed, 8);
    assert_int_equal(WT_ZCARD(&t, "completed"), 1);
    assert_int_equal(WT_EXISTS(&t, a), 1);
    char *b = wt_add(&t, "none", NULL, "{\"removeOnComplete\":false}");
    WT_WAIT_COUNT(&t, completed, 9);
    assert_int_equal(WT_ZCARD(&t, "completed"), 2);
    wt_stop(w);
    free(a), free(b), free(gone), free(aged);
    wt_fini(&t);
}

static void test_remove_on_fail_worker_option(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "fatal", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.remove_on_fail = "true";
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_COUNT(&t, failed_final, 1);
    assert_int_equal(WT_EXISTS(&t, id), 0);
    assert_int_equal(WT_ZCARD(&t, "failed"), 0);
    char *ev = wt_events(&t, id, NULL);
    assert_non_null(strstr(ev, "failed retries-exhausted")); /* attempts 0: always exhausted */
    free(ev);
    wt_stop(w);
    free(id);
    wt_fini(&t);
}

/* ---- concurrency ------------------------------------------------------------------------ */

static void test_concurrency_runs_k_at_once(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    enum { K = 6 };
    for (int i = 0; i < K + 2; i++)
        free(wt_add(&t, "gate", NULL, NULL));
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.concurrency = K;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_GATE_ENTERED(&h.g, K); /* all K run at the same time: none can finish yet */
    ferry_worker_stats s;
    ferry_worker_get_stats(w, &s);
    assert_int_equal(s.busy, K);
    assert_int_equal(WT_LLEN(&t, "active"), K);
    assert_int_equal(WT_LLEN(&t, "wait"), 2);
    wt_gate_open(&h.g);
    WT_WAIT_ZCARD(&t, "completed", K + 2);
    assert_int_equal(h.g.max_inside, K);
    wt_stop(w);
    wt_fini(&t);
}

/* Queue-wide limits in meta: global concurrency (maxed) and rate limit (max/duration). */
static void test_queue_limits(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    /* global concurrency 1: a worker with 5 slots runs one job at a time */
    freeReplyObject(wt_cmd(&t, "HSET %smeta concurrency 1", t.base));
    for (int i = 0; i < 3; i++)
        free(wt_add(&t, "gate", NULL, NULL));
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.concurrency = 5;
    o.drain_delay_ms = 200;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_GATE_ENTERED(&h.g, 1);
    int two = 2;
    void *a2[2] = {&h.g, &two};
    assert_false(th_wait_until(wt_gate_entered_at_least, a2, 400));
    assert_int_equal(WT_LLEN(&t, "active"), 1);
    wt_gate_open(&h.g);
    WT_WAIT_ZCARD(&t, "completed", 3);
    assert_int_equal(h.g.max_inside, 1);
    freeReplyObject(wt_cmd(&t, "HDEL %smeta concurrency", t.base));

    /* rate limit: 2 jobs per 3 s window, counted in `limiter` with the window as TTL; a
     * limited worker waits for the window to end (BullMQ: min(ttl, 30 s)) */
    freeReplyObject(wt_cmd(&t, "HSET %smeta max 2 duration 3000", t.base));
    for (int i = 0; i < 5; i++)
        free(wt_add(&t, "none", NULL, NULL));
    WT_WAIT_ZCARD(&t, "completed", 5);
    assert_false(th_wait_until(wt_zcard_at_least, &(wt_cond){&t, "completed", 6, NULL}, 300));
    redisReply *r = wt_cmd(&t, "GET %slimiter", t.base);
    assert_string_equal(r->str, "2");
    freeReplyObject(r);
    r = wt_cmd(&t, "PTTL %slimiter", t.base);
    assert_true(r->integer > 0 && r->integer <= 3000);
    freeReplyObject(r);
    WT_WAIT_ZCARD(&t, "completed", 7); /* next window */
    WT_WAIT_ZCARD(&t, "completed", 8); /* and the one after */
    wt_stop(w);
    wt_fini(&t);
}

/* ---- maxStartedAttempts ------------------------------------------------------------------ */

static void test_max_started_attempts(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    /* started twice before (a stall loop, say): the third start is refused without running */
    char *id = wt_add(&t, "none", NULL, NULL);
    freeReplyObject(wt_cmd(&t, "HSET %s%s ats 2", t.base, id));
    /* at failure: no retry once ats reaches the limit, whatever attempts says */
    char *id2 = wt_add(&t, "fail", NULL, "{\"attempts\":5}");
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.max_started_attempts = 2;
    o.concurrency = 1;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "failed", 2);
    wt_expect_field(&t, id, "failedReason", "job started more than allowable limit");
    wt_expect_field(&t, id, "ats", "3");
    wt_expect_field(&t, id, "atm", "1");
    wt_expect_field(&t, id2, "ats", "2");
    wt_expect_field(&t, id2, "atm", "2");
    wt_expect_field(&t, id2, "failedReason", "boom");
    assert_int_equal(wt_runs_of(&h), 2); /* id never ran; id2 ran twice */
    wt_stop(w);
    free(id), free(id2);
    wt_fini(&t);
}

/* ---- fetch order, pause, names, scripts ------------------------------------------------- */

/* One batched fetch takes jobs in BullMQ's order: wait from the tail (lifo first, then
 * FIFO), then prioritized by priority; the `active` events record that order. */
static void test_batch_fetch_order(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *a = wt_add(&t, "none", NULL, NULL);
    char *b = wt_add(&t, "none", NULL, NULL);
    char *c = wt_add(&t, "none", NULL, "{\"lifo\":true}");
    char *d = wt_add(&t, "none", NULL, "{\"priority\":5}");
    char *e = wt_add(&t, "none", NULL, "{\"priority\":1}");
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.concurrency = 5;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "completed", 5);
    char want[256];
    snprintf(want, sizeof want,
             "active(jobId=%s) active(jobId=%s) active(jobId=%s) "
             "active(jobId=%s) active(jobId=%s)",
             c, a, b, e, d);
    char *ev = wt_events(&t, NULL, "jobId");
    /* keep only the active events */
    char got[256] = "";
    for (char *p = strstr(ev, "active("); p; p = strstr(p + 1, "active(")) {
        char *end = strchr(p, ')');
        size_t len = strlen(got);
        snprintf(got + len, sizeof got - len, "%s%.*s", len ? " " : "", (int)(end - p + 1), p);
    }
    assert_string_equal(got, want);
    free(ev);
    assert_int_equal(WT_EXISTS(&t, "pc"), 0); /* prioritized ran dry: counter reset */
    wt_stop(w);
    free(a), free(b), free(c), free(d), free(e);
    wt_fini(&t);
}

/* ---- batching and thread hand-off ------------------------------------------------------ */

/* Fast jobs teach the worker that its handlers are quick, so it stops waking a thread per
 * job; when a batch's first job then blocks, the other jobs of the batch must still start
 * on other threads (the dispatcher wakes them once a queued job waited too long). */
static void test_blocking_job_after_fast_ones(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    enum { K = 4, FAST = 200 };
    for (int i = 0; i < FAST; i++)
        free(wt_add(&t, "none", NULL, "{\"removeOnComplete\":true}"));
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.concurrency = K;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_COUNT(&t, completed, FAST);
    /* K gate jobs added together, fetched together */
    ferry_job_spec specs[K];
    for (int i = 0; i < K; i++)
        specs[i] = (ferry_job_spec){"gate", NULL, NULL};
    ferry_error e = {0};
    if (ferry_queue_add_bulk(t.q, specs, K, NULL, &e) != 0) fail_msg("add_bulk: %s", e.message);
    WT_WAIT_GATE_ENTERED(&h.g, K);
    assert_int_equal(h.g.max_inside, K);
    wt_gate_open(&h.g);
    WT_WAIT_ZCARD(&t, "completed", K);
    wt_stop(w);
    wt_fini(&t);
}

/* The marker: a fetch that leaves jobs behind re-adds "0" as BullMQ does (other workers
 * look for it); a fetch that empties wait and prioritized removes a stale "0" instead, so
 * an idle worker blocks rather than waking for nothing; new jobs still wake it. */
static void test_marker_after_fetch(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *a = wt_add(&t, "gate", NULL, NULL);
    char *b = wt_add(&t, "none", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.concurrency = 1;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_GATE_ENTERED(&h.g, 1); /* a runs, b still waits */
    char *m = wt_zscore(&t, "marker", "0");
    assert_non_null(m);
    assert_string_equal(m, "0");
    free(m);
    wt_gate_open(&h.g);
    WT_WAIT_COUNT(&t, completed, 2);
    assert_null(wt_zscore(&t, "marker", "0"));
    char *c = wt_add(&t, "none", NULL, NULL);
    WT_WAIT_COUNT(&t, completed, 3);
    assert_null(wt_zscore(&t, "marker", "0"));
    assert_int_equal(WT_ZCARD(&t, "completed"), 3);
    wt_stop(w);
    free(a), free(b), free(c);
    wt_fini(&t);
}

/* Results written together keep their own checks: a job whose lock was taken over or
 * whose hash vanished is refused alone; the others complete with exactly their own
 * effects (kept ones in completed, removeOnComplete ones deleted, one event each). */
static void test_batch_per_job_checks(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    enum { K = 8 };
    char *ids[K];
    for (int i = 0; i < K; i++)
        ids[i] = wt_add(&t, "gate", NULL, i % 2 ? "{\"removeOnComplete\":true}" : NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.concurrency = K;
    o.lanes = 1; /* all K results in one batch */
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_GATE_ENTERED(&h.g, K);
    freeReplyObject(wt_cmd(&t, "SET %s%s:lock intruder:1 PX 60000", t.base, ids[2]));
    freeReplyObject(wt_cmd(&t, "DEL %s%s", t.base, ids[3]));
    /* other workers' jobs around ours in active: they stay, in their order */
    freeReplyObject(wt_cmd(&t, "LPUSH %sactive foreignA", t.base));
    freeReplyObject(wt_cmd(&t, "RPUSH %sactive foreignB", t.base));
    wt_gate_open(&h.g);
    WT_WAIT_COUNT(&t, completed, K - 2);
    WT_WAIT_COUNT(&t, errors, 2);
    /* refused: nothing of theirs changed (fetched oldest first, so ids[3] is nearer the
     * head of active than ids[2]) */
    {
        redisReply *r = wt_cmd(&t, "LRANGE %sactive 0 -1", t.base);
        assert_int_equal(r->elements, 4);
        assert_string_equal(r->element[0]->str, "foreignA");
        assert_string_equal(r->element[1]->str, ids[3]);
        assert_string_equal(r->element[2]->str, ids[2]);
        assert_string_equal(r->element[3]->str, "foreignB");
        freeReplyObject(r);
    }
    wt_expect_field(&t, ids[2], "finishedOn", NULL);
    wt_expect_field(&t, ids[2], "atm", NULL);
    assert_int_equal(WT_EXISTS(&t, ids[3]), 0);
    char *lock = NULL;
    {
        redisReply *r = wt_cmd(&t, "GET %s%s:lock", t.base, ids[2]);
        lock = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
        freeReplyObject(r);
    }
    assert_non_null(lock);
    assert_string_equal(lock, "intruder:1");
    free(lock);
    /* the rest */
    assert_int_equal(WT_ZCARD(&t, "completed"), 3); /* 0, 4, 6 kept */
    for (int i = 0; i < K; i++) {
        if (i == 2 || i == 3) continue;
        char *ev = wt_events(&t, ids[i], NULL);
        assert_string_equal(strstr(ev, "active"), "active completed");
        free(ev);
        char key[160];
        snprintf(key, sizeof key, "%s:lock", ids[i]);
        assert_int_equal(WT_EXISTS(&t, key), 0);
        if (i % 2) {
            assert_int_equal(WT_EXISTS(&t, ids[i]), 0);
        } else {
            wt_expect_field(&t, ids[i], "returnvalue", "null");
            wt_expect_field(&t, ids[i], "atm", "1");
            char *sc = wt_zscore(&t, "completed", ids[i]);
            assert_non_null(sc);
            free(sc);
        }
    }
    ferry_worker_stats s;
    ferry_worker_get_stats(w, &s);
    assert_int_equal(s.completed, K - 2);
    assert_int_equal(s.lock_lost, 1);
    wt_stop(w);
    for (int i = 0; i < K; i++)
        free(ids[i]);
    wt_fini(&t);
}

static int runs_at_least_one(void *arg) {
    return wt_runs_of(arg) >= 1;
}

static void test_pause_name_scheduler_job_and_script_flush(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.drain_delay_ms = 300;
    ferry_worker *w = wt_start(&o, handler, &h);

    /* the blocking connection is named like Node's, so Queue.getWorkers() lists it */
    char name[128];
    snprintf(name, sizeof name, "name=%s:d3E=:w:wtest ", t.prefix); /* base64("wq") */
    redisReply *r = wt_cmd(&t, "CLIENT LIST");
    assert_non_null(strstr(r->str, name));
    freeReplyObject(r);

    /* paused: nothing is fetched; resumed: the job runs */
    ferry_error err = {0};
    assert_int_equal(ferry_queue_pause(t.q, &err), 0);
    char *id = wt_add(&t, "none", NULL, NULL);
    assert_false(th_wait_until(runs_at_least_one, &h, 700));
    assert_int_equal(WT_LLEN(&t, "wait"), 1);
    assert_int_equal(ferry_queue_resume(t.q, &err), 0);
    WT_WAIT_ZCARD(&t, "completed", 1);

    /* a scheduler iteration (rjk) is processed like any job for now */
    char *sj = wt_add(&t, "none", NULL, NULL);
    freeReplyObject(wt_cmd(&t, "HSET %s%s rjk some-scheduler", t.base, sj));
    WT_WAIT_ZCARD(&t, "completed", 2);

    /* the script cache flushed under a running worker: scripts are loaded again */
    freeReplyObject(wt_cmd(&t, "SCRIPT FLUSH"));
    char *after = wt_add(&t, "json", NULL, NULL);
    WT_WAIT_ZCARD(&t, "completed", 3);
    wt_expect_field(&t, after, "returnvalue", "{\"ok\":1,\"n\":[1,2]}");
    wt_stop(w);
    free(id), free(sj), free(after);
    wt_fini(&t);
}

/* ---- close ------------------------------------------------------------------------------- */

typedef struct closer {
    ferry_worker *w;
    int rc;
    int done;
    pthread_mutex_t mu;
} closer;

static void *close_thread(void *arg) {
    closer *c = arg;
    int rc = ferry_worker_close(c->w, 20000);
    pthread_mutex_lock(&c->mu);
    c->rc = rc;
    c->done = 1;
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static int closer_done(void *arg) {
    closer *c = arg;
    pthread_mutex_lock(&c->mu);
    int d = c->done;
    pthread_mutex_unlock(&c->mu);
    return d;
}

static void test_graceful_close_waits_for_handler(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "gate", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.concurrency = 3;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_GATE_ENTERED(&h.g, 1);
    ferry_worker_stop(w); /* returns at once; from now on nothing is fetched */
    char *late = wt_add(&t, "none", NULL, NULL);
    closer c = {w, -99, 0, PTHREAD_MUTEX_INITIALIZER};
    pthread_t th;
    pthread_create(&th, NULL, close_thread, &c);
    /* close must not return while the handler runs */
    assert_false(th_wait_until(closer_done, &c, 300));
    wt_gate_open(&h.g);
    pthread_join(th, NULL);
    assert_int_equal(c.rc, 0);
    char *s = wt_zscore(&t, "completed", id);
    assert_non_null(s);
    free(s);
    assert_int_equal(wt_runs_of(&h), 1);
    assert_int_equal(WT_LLEN(&t, "wait"), 1); /* `late` is still waiting */
    ferry_worker_free(w);
    free(id), free(late);
    wt_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete_return_values),
        cmocka_unit_test(test_retry_fixed_then_fail),
        cmocka_unit_test(test_exponential_backoff_delays),
        cmocka_unit_test(test_permanent_failure),
        cmocka_unit_test(test_stacktrace_keeps_earlier_entries),
        cmocka_unit_test(test_longest_names_consumed),
        cmocka_unit_test(test_unknown_backoff_fails_clearly),
        cmocka_unit_test(test_remove_on_complete),
        cmocka_unit_test(test_remove_on_complete_fractional_age),
        cmocka_unit_test(test_remove_on_fail_worker_option),
        cmocka_unit_test(test_concurrency_runs_k_at_once),
        cmocka_unit_test(test_queue_limits),
        cmocka_unit_test(test_max_started_attempts),
        cmocka_unit_test(test_batch_fetch_order),
        cmocka_unit_test(test_blocking_job_after_fast_ones),
        cmocka_unit_test(test_marker_after_fetch),
        cmocka_unit_test(test_batch_per_job_checks),
        cmocka_unit_test(test_pause_name_scheduler_job_and_script_flush),
        cmocka_unit_test(test_graceful_close_waits_for_handler),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_worker_bullmq_metrics.c - BullMQ's own per-minute metrics keys
 * (<prefix>:<queue>:metrics:completed / :failed and their :data lists) as
 * ferry_worker_options.bullmq_metrics_max_points writes them, against a private Redis:
 * moveToFinished.lua driven directly checks a batch against what BullMQ 6.7.0's
 * collectMetrics leaves after one call per job (the first data point, points after idle
 * minutes, the cap on points, refused finishes not counted, completions and failures in one
 * batch), and a real worker checks which outcomes count (completions and final failures, not
 * retries or retry-later), that a worker without the option touches no metrics key, and the
 * option's range. interop.metrics_keys compares with a Node worker. */
#include "support/qt.h"
#include "support/wt.h"

#include "redis/conn.h"

#define HEAD 11
#define STRIDE 11
#define NOW_MS 1700000080000LL /* a whole minute (28333334) plus 40 s */

/* ---- the script, driven directly --------------------------------------------------------- */

typedef struct mjob {
    const char *id, *token, *target;
} mjob;

/* Put job `id` in active with lock "tok" (as a fetch leaves it). */
static void make_active(ferry_queue *q, const char *id) {
    freeReplyObject(qt_cmd("HSET %s name n data {} opts {} timestamp 1 ats 1", qt_key(q, id)));
    freeReplyObject(qt_cmd("LPUSH %s %s", qt_key(q, "active"), id));
    char lock[256];
    snprintf(lock, sizeof lock, "%s:lock", id);
    freeReplyObject(qt_cmd("SET %s tok PX 60000", qt_key(q, lock)));
}

/* One moveToFinished call for jobs[0..n) at `now_ms` (jobs kept, no fetch); max_points "" =
 * the call a worker without metrics makes (12 keys, no trailing argument). Writes the
 * per-job codes into codes. */
static void finish(ferry_queue *q, const mjob *jobs, size_t n, long long now_ms,
                   const char *max_points, long long *codes) {
    const ferry_script *s = ferry__script_get("moveToFinished");
    assert_non_null(s);
    static const char *suffix[] = {"wait",
                                   "active",
                                   "prioritized",
                                   "events",
                                   "limiter",
                                   "delayed",
                                   "meta",
                                   "pc",
                                   "marker",
                                   "stalled",
                                   "completed",
                                   "failed",
                                   "metrics:completed",
                                   "metrics:failed"};
    char keys[14][256];
    const char *kp[14];
    for (int i = 0; i < 14; i++) {
        snprintf(keys[i], sizeof keys[i], "%s:%s:%s", ferry_queue_prefix(q), ferry_queue_name(q),
                 suffix[i]);
        kp[i] = keys[i];
    }
    int on = max_points[0] != 0;
    char base[256], count[16], now[32];
    snprintf(base, sizeof base, "%s:%s:", ferry_queue_prefix(q), ferry_queue_name(q));
    snprintf(count, sizeof count, "%zu", n);
    snprintf(now, sizeof now, "%lld", now_ms);
    size_t nargs = HEAD + STRIDE * n + (size_t)on;
    const char **args = calloc(nargs, sizeof *args);
    size_t *lens = calloc(nargs, sizeof *lens);
    assert_true(args && lens);
    const char *head[HEAD] = {base, now, "0", "tok:", "1", "30000", "", "", "", "1", count};
    for (int i = 0; i < HEAD; i++)
        args[i] = head[i];
    for (size_t j = 0; j < n; j++) {
        const char **a = args + HEAD + STRIDE * j;
        const char *v[STRIDE] = {
            jobs[j].id, jobs[j].token, jobs[j].target, "\"ok\"", "", "-1", "", "1000", "1", "0",
            ""};
        memcpy(a, v, sizeof v);
    }
    if (on) args[nargs - 1] = max_points;
    for (size_t i = 0; i < nargs; i++)
        lens[i] = strlen(args[i]);
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_evalsha(qt_conn, s, on ? 14 : 12, kp, (int)nargs, args, lens, &r, &e))
        fail_msg("moveToFinished: %s", e.message);
    if (r->type == REDIS_REPLY_ERROR) fail_msg("moveToFinished: %s", r->str);
    redisReply *c = r->element[0];
    assert_int_equal(c->elements, n);
    for (size_t j = 0; j < n; j++)
        codes[j] = c->element[j]->integer;
    freeReplyObject(r);
    free(args);
    free(lens);
}

static ferry_queue *fresh_queue(void) {
    return qt_open(th_prefix(), "mq", NULL);
}

/* The first finishes of a queue: BullMQ's first call sets prevTS and prevCount 0 and pushes
 * nothing; the other jobs of the batch only count. Completions and final failures go to
 * their own hashes, in one batch. */
static void test_first_batch_sets_baseline(void **state) {
    (void)state;
    ferry_queue *q = fresh_queue();
    const char *ids[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++)
        make_active(q, ids[i]);
    mjob b[] = {{"a", "tok", "completed"},
                {"b", "tok", "failed"},
                {"c", "tok", "completed"},
                {"d", "tok", "completed"},
                {"e", "tok", "failed"}};
    long long codes[5];
    finish(q, b, 5, NOW_MS, "60", codes);
    for (int i = 0; i < 5; i++)
        assert_int_equal(codes[i], 0);
    assert_string_equal(qt_hgetall(qt_key(q, "metrics:completed")),
                        "count=3;prevCount=0;prevTS=1700000080000");
    assert_string_equal(qt_hgetall(qt_key(q, "metrics:failed")),
                        "count=2;prevCount=0;prevTS=1700000080000");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s", qt_key(q, "metrics:completed:data"),
                                    qt_key(q, "metrics:failed:data"))),
                     0);

    /* later in the same minute: only the count moves */
    make_active(q, "f");
    finish(q, (mjob[]){{"f", "tok", "completed"}}, 1, NOW_MS + 19999, "60", codes);
    assert_string_equal(qt_hgetall(qt_key(q, "metrics:completed")),
                        "count=4;prevCount=0;prevTS=1700000080000");
    /* the next minute: the jobs of the minute before the first of this call (4), then the
     * rest of this batch only counts */
    make_active(q, "g");
    make_active(q, "h");
    finish(q, (mjob[]){{"g", "tok", "completed"}, {"h", "tok", "completed"}}, 2, NOW_MS + 20000,
           "60", codes);
    assert_string_equal(qt_hgetall(qt_key(q, "metrics:completed")),
                        "count=6;prevCount=4;prevTS=1700000100000");
    assert_string_equal(qt_lrange(qt_key(q, "metrics:completed:data")), "4");
    ferry_queue_close(q);
}

/* After idle minutes, BullMQ pushes the delta and a 0 per empty minute (newest first), at
 * most maxDataPoints of them, and trims the list to maxDataPoints. */
static void test_idle_minutes_and_cap(void **state) {
    (void)state;
    ferry_queue *q = fresh_queue();
    const char *mk = qt_key(q, "metrics:completed");
    char key[256];
    snprintf(key, sizeof key, "%s", mk);
    freeReplyObject(qt_cmd("HSET %s count 10 prevCount 4 prevTS %lld", key, NOW_MS - 180000));
    freeReplyObject(qt_cmd("RPUSH %s:data 7", key));
    make_active(q, "a");
    make_active(q, "b");
    make_active(q, "c");
    long long codes[3];
    finish(
        q,
        (mjob[]){{"a", "tok", "completed"}, {"b", "tok", "completed"}, {"c", "tok", "completed"}},
        3, NOW_MS, "100", codes);
    assert_string_equal(qt_hgetall(key), "count=13;prevCount=10;prevTS=1700000080000");
    assert_string_equal(qt_lrange(qt_key(q, "metrics:completed:data")), "0,0,6,7");

    /* the same state with maxDataPoints 2: N = min(3, 2), then LTRIM to 2 points */
    ferry_queue *q2 = qt_open(th_prefix(), "mq2", NULL);
    snprintf(key, sizeof key, "%s", qt_key(q2, "metrics:completed"));
    freeReplyObject(qt_cmd("HSET %s count 10 prevCount 4 prevTS %lld", key, NOW_MS - 180000));
    freeReplyObject(qt_cmd("RPUSH %s:data 7", key));
    make_active(q2, "a");
    finish(q2, (mjob[]){{"a", "tok", "completed"}}, 1, NOW_MS, "2", codes);
    assert_string_equal(qt_hgetall(key), "count=11;prevCount=10;prevTS=1700000080000");
    assert_string_equal(qt_lrange(qt_key(q2, "metrics:completed:data")), "0,6");
    ferry_queue_close(q);
    ferry_queue_close(q2);
}

/* A refused finish (lock lost, job gone) counts nowhere, as BullMQ returns before its
 * collectMetrics; a call without the metrics argument writes no metrics key. */
static void test_refused_and_off(void **state) {
    (void)state;
    ferry_queue *q = fresh_queue();
    make_active(q, "a");
    make_active(q, "b");
    long long codes[3];
    finish(q,
           (mjob[]){{"a", "other", "completed"}, {"gone", "tok", "failed"}, {"b", "tok", "failed"}},
           3, NOW_MS, "10", codes);
    assert_int_equal(codes[0], -6);
    assert_int_equal(codes[1], -1);
    assert_int_equal(codes[2], 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "metrics:completed"))), 0);
    assert_string_equal(qt_hgetall(qt_key(q, "metrics:failed")),
                        "count=1;prevCount=0;prevTS=1700000080000");

    make_active(q, "c");
    freeReplyObject(qt_cmd("DEL %s", qt_key(q, "metrics:failed")));
    finish(q, (mjob[]){{"c", "tok", "failed"}, {"a", "tok", "completed"}}, 2, NOW_MS, "", codes);
    assert_int_equal(codes[0], 0);
    assert_int_equal(codes[1], 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s", qt_key(q, "metrics:completed"),
                                    qt_key(q, "metrics:failed"))),
                     0);
    ferry_queue_close(q);
}

/* ---- a real worker ------------------------------------------------------------------------ */

/* "ok" completes; "perm" fails for good; "flaky" fails each attempt (attempts from its
 * options); "later" asks to run again later on its first run, then completes; "forever"
 * asks to run later every time (until max_started_attempts fails it). */
static ferry_outcome outcome_handler(ferry_job *job, void *ud) {
    (void)ud;
    const char *name = ferry_job_name(job);
    if (!strcmp(name, "perm")) return FERRY_FAILED_PERMANENT;
    if (!strcmp(name, "flaky")) return FERRY_FAILED;
    if (!strcmp(name, "forever")) {
        ferry_job_set_delay(job, 1);
        return FERRY_RETRY_LATER;
    }
    if (!strcmp(name, "later") && ferry_job_attempts_started(job) == 1) {
        ferry_job_set_delay(job, 1);
        return FERRY_RETRY_LATER;
    }
    return FERRY_COMPLETED;
}

static long long hash_ll(wt *t, const char *suffix, const char *field) {
    char key[256];
    snprintf(key, sizeof key, "%s%s", t->base, suffix);
    char *v = th_hget(t->c, key, field);
    long long n = v ? strtoll(v, NULL, 10) : -1;
    free(v);
    return n;
}

/* Completions and final failures count (a retried job once, when it fails for good, and a
 * job failed by max_started_attempts without running); a retry and a retry-later do not.
 * The counts are read once the jobs are in their sets. */
static void test_worker_counts_what_node_counts(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    free(wt_add(&t, "ok", NULL, NULL));
    free(wt_add(&t, "ok", NULL, NULL));
    free(wt_add(&t, "perm", NULL, "{\"attempts\":3}"));
    free(wt_add(&t, "flaky", NULL, "{\"attempts\":2}"));
    free(wt_add(&t, "later", NULL, NULL));
    free(wt_add(&t, "forever", NULL, NULL));
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.concurrency = 4;
    o.max_started_attempts = 2;
    o.bullmq_metrics_max_points = 10;
    ferry_worker *w = wt_start(&o, outcome_handler, NULL);
    WT_WAIT_ZCARD(&t, "completed", 3);
    WT_WAIT_ZCARD(&t, "failed", 3);
    wt_stop(w);
    assert_int_equal(hash_ll(&t, "metrics:completed", "count"), 3);
    assert_int_equal(hash_ll(&t, "metrics:failed", "count"), 3);
    /* the first of each set only starts the baseline: prevCount 0, prevTS a time */
    assert_int_equal(hash_ll(&t, "metrics:completed", "prevCount"), 0);
    assert_true(hash_ll(&t, "metrics:completed", "prevTS") > 1700000000000LL);
    assert_true(hash_ll(&t, "metrics:failed", "prevTS") > 1700000000000LL);
    wt_fini(&t);
}

/* Without the option nothing is written under metrics:*. */
static void test_worker_without_option_writes_no_metrics(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    free(wt_add(&t, "ok", NULL, NULL));
    free(wt_add(&t, "perm", NULL, NULL));
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, outcome_handler, NULL);
    WT_WAIT_ZCARD(&t, "completed", 1);
    WT_WAIT_ZCARD(&t, "failed", 1);
    wt_stop(w);
    redisReply *r = wt_cmd(&t,
                           "EXISTS %smetrics:completed %smetrics:completed:data "
                           "%smetrics:failed %smetrics:failed:data",
                           t.base, t.base, t.base, t.base);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    wt_fini(&t);
}

static void test_option_range(void **state) {
    (void)state;
    ferry_worker_options o;
    ferry_worker_options_init(&o);
    ferry_worker *w = NULL;
    ferry_error e = {0};
    long bad[] = {-1, FERRY_BULLMQ_METRICS_POINTS_MAX + 1};
    for (size_t i = 0; i < 2; i++) {
        o.bullmq_metrics_max_points = bad[i];
        assert_int_equal(ferry_worker_create("q", &o, outcome_handler, NULL, &w, &e), FERRY_EINVAL);
        assert_null(w);
        assert_non_null(strstr(e.message, "bullmq_metrics_max_points"));
    }
    o.bullmq_metrics_max_points = FERRY_BULLMQ_METRICS_POINTS_MAX;
    assert_int_equal(ferry_worker_create("q", &o, outcome_handler, NULL, &w, &e), 0);
    ferry_worker_free(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_batch_sets_baseline),
        cmocka_unit_test(test_idle_minutes_and_cap),
        cmocka_unit_test(test_refused_and_off),
        cmocka_unit_test(test_worker_counts_what_node_counts),
        cmocka_unit_test(test_worker_without_option_writes_no_metrics),
        cmocka_unit_test(test_option_range),
    };
    return cmocka_run_group_tests(tests, qt_setup, qt_teardown);
}

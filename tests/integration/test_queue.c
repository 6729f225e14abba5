/* test_queue.c - the producer's adds against a real Redis: the exact keys, fields, scores,
 * markers and events BullMQ 6.7.0 writes for each kind of add (standard, lifo, delayed,
 * prioritized, custom id and duplicates, defaults), bulk adds, limits and bad input, and
 * recovery from a flushed script cache. Admin calls and deadlines: test_queue_admin.c. */
#include "support/qt.h"

/* ---- open / meta ---------------------------------------------------------------------- */

static void test_open_writes_meta(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, "meta", NULL);
    assert_string_equal(ferry_queue_name(q), "meta");
    assert_string_equal(ferry_queue_prefix(q), prefix);
    assert_string_equal(qt_hgetall(qt_key(q, "meta")),
                        "opts.maxLenEvents=10000;version=bullmq:6.7.0");
    ferry_queue_close(q);
    ferry_queue_close(NULL);

    /* default prefix "bull" */
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = th_env_require("REDIS_URL");
    ferry_queue_options o;
    ferry_queue_options_init(&o);
    o.redis = &ro;
    char name[64];
    snprintf(name, sizeof name, "%s-defprefix", th_prefix());
    ferry_error e = {0};
    assert_int_equal(ferry_queue_open(name, &o, &q, &e), 0);
    assert_string_equal(ferry_queue_prefix(q), "bull");
    assert_string_equal(qt_hget(qt_key(q, "meta"), "version"), "bullmq:6.7.0");
    redisReply *r = qt_cmd("DEL %s", qt_key(q, "meta"));
    freeReplyObject(r);
    ferry_queue_close(q);
}

static void test_open_rejects_bad_options(void **state) {
    (void)state;
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = "redis://127.0.0.1:1"; /* never reached: validation comes first */
    ferry_queue_options o;
    ferry_queue_options_init(&o);
    o.redis = &ro;
    ferry_queue *q = (ferry_queue *)&o;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_open("a:b", &o, &q, &e), FERRY_EINVAL);
    assert_null(q);
    assert_non_null(strstr(e.message, "contains ':'"));
    assert_int_equal(ferry_queue_open("", &o, &q, &e), FERRY_EINVAL);
    o.default_job_opts = "{\"attempts\":\"3\"}";
    assert_int_equal(ferry_queue_open("q", &o, &q, &e), FERRY_EINVAL);
    assert_non_null(
        strstr(e.message, "default_job_opts: opts.attempts: expected a non-negative integer"));
    o.default_job_opts = NULL;
    o.global_default_job_opts = "{\"backoff\":{\"type\":\"fixed\",\"jitter\":2}}";
    assert_int_equal(ferry_queue_open("q", &o, &q, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "global_default_job_opts: opts.backoff.jitter"));
    /* default_job_opts replaces global ones entirely: a bad global one is then ignored */
    o.default_job_opts = "{\"jobId\":\"same-for-all\"}";
    assert_int_equal(ferry_queue_open("q", &o, &q, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "jobId cannot be a default"));
    o.default_job_opts = "{\"deduplication\":{\"id\":\"x\"}}";
    assert_int_equal(ferry_queue_open("q", &o, &q, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "not supported"));
    o.default_job_opts = "[]";
    assert_int_equal(ferry_queue_open("q", &o, &q, &e), FERRY_EINVAL);
    o.default_job_opts = NULL;
    o.global_default_job_opts = NULL;
    o.max_payload_bytes = (size_t)1 << 30;
    assert_int_equal(ferry_queue_open("q", &o, &q, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "max_payload_bytes"));
}

/* ---- adds: exact Redis state ---------------------------------------------------------- */

static void test_add_standard_exact_state(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "std", NULL);
    int64_t before = ferry__now_ms();
    qt_add_expect(q, "email", "{\"n\":42}", NULL, "1");
    int64_t after = ferry__now_ms();
    long long ts = atoll(qt_hget(qt_key(q, "1"), "timestamp"));
    assert_true(ts >= before && ts <= after);
    char want[512];
    snprintf(want, sizeof want,
             "data={\"n\":42};delay=0;name=email;opts={\"attempts\":0};priority=0;timestamp=%lld",
             ts);
    assert_string_equal(qt_hgetall(qt_key(q, "1")), want);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "1");
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "0,0");
    assert_string_equal(qt_get(qt_key(q, "id")), "1");
    assert_string_equal(qt_events(q), "added:jobId=1:name=email|waiting:jobId=1");
    /* data NULL = {} */
    qt_add_expect(q, "n", NULL, "{}", "2");
    assert_string_equal(qt_hget(qt_key(q, "2"), "data"), "{}");
    ferry_queue_close(q);
}

static void test_add_full_options_hash(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "full", NULL);
    qt_add_expect(
        q, "full", "{\"n\":42}",
        "{\"attempts\":3,\"backoff\":{\"type\":\"exponential\",\"delay\":1000,\"jitter\":0.5},"
        "\"removeOnComplete\":true,\"removeOnFail\":{\"age\":3600,\"count\":10},"
        "\"stackTraceLimit\":3,\"keepLogs\":5,\"sizeLimit\":100000,\"failParentOnFailure\":false,"
        "\"timestamp\":1795978463239}",
        "1");
    assert_string_equal(
        qt_hgetall(qt_key(q, "1")),
        "data={\"n\":42};delay=0;name=full;opts={\"attempts\":3,\"backoff\":{\"type\":"
        "\"exponential\",\"delay\":1000,\"jitter\":0.5},\"removeOnComplete\":true,"
        "\"removeOnFail\":{\"age\":3600,\"count\":10},\"stackTraceLimit\":3,\"kl\":5,"
        "\"sizeLimit\":100000,\"fpof\":false,\"timestamp\":1795978463239};priority=0;"
        "timestamp=1795978463239");
    ferry_queue_close(q);
}

static const char *WAIT_ORDER_JOBS[][2] = {
    {"a", NULL},
    {"b", NULL},
    {"c", "{\"lifo\":true}"},
    {"d", NULL},
    {"e", "{\"lifo\":true}"},
    {"f", "{\"lifo\":false}"},
};

static void test_wait_order_and_lifo(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q1 = qt_open(prefix, "order1", NULL), *q2 = qt_open(prefix, "order2", NULL);
    size_t n = sizeof WAIT_ORDER_JOBS / sizeof WAIT_ORDER_JOBS[0];
    ferry_job_spec specs[6];
    for (size_t i = 0; i < n; i++) {
        specs[i] = (ferry_job_spec){WAIT_ORDER_JOBS[i][0], NULL, WAIT_ORDER_JOBS[i][1]};
        char *id = qt_add(q1, specs[i].name, NULL, specs[i].opts_json);
        free(id);
    }
    char *ids[6];
    ferry_error e = {0};
    assert_int_equal(ferry_queue_add_bulk(q2, specs, n, ids, &e), 0);
    for (size_t i = 0; i < n; i++) {
        char want[8];
        snprintf(want, sizeof want, "%zu", i + 1);
        assert_string_equal(ids[i], want);
        free(ids[i]);
    }
    /* LPUSH a, LPUSH b, RPUSH c, LPUSH d, RPUSH e, LPUSH f: head newest, lifo at the tail
     * (taken first), so the run order is e, c, a, b, d, f */
    assert_string_equal(qt_lrange(qt_key(q1, "wait")), "6,4,2,1,3,5");
    assert_string_equal(qt_lrange(qt_key(q2, "wait")), "6,4,2,1,3,5");
    assert_string_equal(qt_events(q2), "added:jobId=1:name=a|waiting:jobId=1|added:jobId=2:name=b|"
                                       "waiting:jobId=2|added:jobId=3:name=c|waiting:jobId=3|"
                                       "added:jobId=4:name=d|waiting:jobId=4|added:jobId=5:name=e|"
                                       "waiting:jobId=5|added:jobId=6:name=f|waiting:jobId=6");
    assert_string_equal(qt_hget(qt_key(q2, "3"), "opts"), "{\"attempts\":0,\"lifo\":true}");
    ferry_queue_close(q1);
    ferry_queue_close(q2);
}

static void test_delayed_scores_and_marker(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "delayed", NULL);
    long long T = 1795978582232LL; /* fixed timestamp: both due in the same ms */
    char opts[128];
    snprintf(opts, sizeof opts, "{\"delay\":1000,\"timestamp\":%lld}", T);
    ferry_job_spec s[2] = {{"d1", NULL, opts}, {"d2", NULL, opts}};
    char *ids[2];
    ferry_error e = {0};
    assert_int_equal(ferry_queue_add_bulk(q, s, 2, ids, &e), 0);
    assert_string_equal(ids[0], "1");
    assert_string_equal(ids[1], "2");
    free(ids[0]);
    free(ids[1]);
    long long due = T + 1000;
    char want[256];
    snprintf(want, sizeof want, "1,%lld,2,%lld", due * 4096, due * 4096 + 1);
    assert_string_equal(qt_zrange(qt_key(q, "delayed")), want);
    assert_string_equal(qt_zrange(qt_key(q, "delayed")), "1,7356328276918272,2,7356328276918273");
    snprintf(want, sizeof want, "1,%lld", due);
    assert_string_equal(qt_zrange(qt_key(q, "marker")), want); /* no "0" member: nothing is ready */
    assert_string_equal(qt_hget(qt_key(q, "1"), "delay"), "1000");
    assert_string_equal(qt_hget(qt_key(q, "1"), "timestamp"), "1795978582232");
    snprintf(want, sizeof want,
             "added:jobId=1:name=d1|delayed:jobId=1:delay=%lld|added:jobId=2:name=d2|delayed:jobId="
             "2:delay=%lld",
             due, due);
    assert_string_equal(qt_events(q), want);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "wait"))), 0);

    /* an earlier job moves the delay marker; a ready job adds marker "0" */
    snprintf(opts, sizeof opts, "{\"delay\":500,\"timestamp\":%lld,\"priority\":3}", T);
    qt_add_expect(q, "d3", NULL, opts, "3");
    assert_string_equal(qt_hget(qt_key(q, "3"), "priority"), "3");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "prioritized"))), 0);
    qt_add_expect(q, "now", NULL, NULL, "4");
    snprintf(want, sizeof want, "0,0,1,%lld", T + 500);
    assert_string_equal(qt_zrange(qt_key(q, "marker")), want);

    /* the 4096th job in one ms keeps the capped score */
    redisReply *r = qt_cmd("ZADD %s %lld x", qt_key(q, "delayed"), (T + 2000) * 4096 + 4095);
    freeReplyObject(r);
    snprintf(opts, sizeof opts, "{\"delay\":2000,\"timestamp\":%lld}", T);
    qt_add_expect(q, "cap", NULL, opts, "5");
    r = qt_cmd("ZSCORE %s 5", qt_key(q, "delayed"));
    snprintf(want, sizeof want, "%lld", (T + 2000) * 4096 + 4095);
    assert_string_equal(qt_str(r), want);
    ferry_queue_close(q);
}

static void test_prioritized_scores(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "prio", NULL);
    qt_add_expect(q, "p5", NULL, "{\"priority\":5}", "1");
    qt_add_expect(q, "p10", NULL, "{\"priority\":10,\"lifo\":true}", "2");
    qt_add_expect(q, "p0", NULL, "{\"priority\":0}", "3");
    assert_string_equal(qt_zrange(qt_key(q, "prioritized")), "1,21474836481,2,42949672962");
    assert_string_equal(qt_get(qt_key(q, "pc")), "2");
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "3");
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "0,0");
    assert_string_equal(qt_hget(qt_key(q, "1"), "priority"), "5");
    assert_string_equal(qt_hget(qt_key(q, "1"), "opts"), "{\"attempts\":0,\"priority\":5}");
    assert_string_equal(qt_events(q),
                        "added:jobId=1:name=p5|waiting:jobId=1|added:jobId=2:name=p10|"
                        "waiting:jobId=2|added:jobId=3:name=p0|waiting:jobId=3");
    qt_add_expect(q, "max", NULL, "{\"priority\":2097151}", "4");
    redisReply *r = qt_cmd("ZSCORE %s 4", qt_key(q, "prioritized"));
    assert_string_equal(qt_str(r), "9007194959773699"); /* 2097151 * 2^32 + 3 */
    ferry_queue_close(q);
}

static void test_custom_id_and_duplicates(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "dup", NULL);
    qt_add_expect(q, "order", "{\"v\":1}", "{\"jobId\":\"order-42\"}", "order-42");
    assert_string_equal(qt_get(qt_key(q, "id")), "1");
    assert_string_equal(qt_hget(qt_key(q, "order-42"), "opts"),
                        "{\"attempts\":0,\"jobId\":\"order-42\"}");
    qt_add_expect(q, "order", "{\"v\":2}", "{\"jobId\":\"order-42\",\"delay\":100}", "order-42");
    assert_string_equal(qt_get(qt_key(q, "id")), "2"); /* consumed by the duplicate too */
    assert_string_equal(qt_hget(qt_key(q, "order-42"), "data"), "{\"v\":1}");
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "order-42");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "delayed"))), 0);
    qt_add_expect(q, "auto", NULL, NULL, "3");
    assert_string_equal(qt_events(q),
                        "added:jobId=order-42:name=order|waiting:jobId=order-42|"
                        "duplicated:jobId=order-42|added:jobId=3:name=auto|waiting:jobId=3");
    /* duplicates inside one bulk call */
    ferry_job_spec s[3] = {{"x", "{}", "{\"jobId\":\"k1\"}"},
                           {"x", "{\"second\":1}", "{\"jobId\":\"k1\"}"},
                           {"y", NULL, NULL}};
    char *ids[3];
    ferry_error e = {0};
    assert_int_equal(ferry_queue_add_bulk(q, s, 3, ids, &e), 0);
    assert_string_equal(ids[0], "k1");
    assert_string_equal(ids[1], "k1");
    assert_string_equal(ids[2], "6");
    for (int i = 0; i < 3; i++)
        free(ids[i]);
    assert_string_equal(qt_hget(qt_key(q, "k1"), "data"), "{}");
    assert_string_equal(qt_get(qt_key(q, "id")), "6");
    /* an existing id next to new ones, one of them twice: each answered on its own */
    freeReplyObject(qt_cmd("XTRIM %s MAXLEN 0", qt_key(q, "events")));
    ferry_job_spec s2[4] = {{"x", "{\"again\":1}", "{\"jobId\":\"k1\"}"},
                            {"z", "{\"n\":2}", "{\"jobId\":\"k2\"}"},
                            {"z", "{\"n\":3}", "{\"jobId\":\"k2\"}"},
                            {"z", "{\"n\":4}", "{\"jobId\":\"k3\"}"}};
    char *ids2[4];
    assert_int_equal(ferry_queue_add_bulk(q, s2, 4, ids2, &e), 0);
    const char *want2[4] = {"k1", "k2", "k2", "k3"};
    for (int i = 0; i < 4; i++) {
        assert_string_equal(ids2[i], want2[i]);
        free(ids2[i]);
    }
    assert_string_equal(qt_hget(qt_key(q, "k1"), "data"), "{}");
    assert_string_equal(qt_hget(qt_key(q, "k2"), "data"), "{\"n\":2}");
    assert_string_equal(qt_hget(qt_key(q, "k3"), "data"), "{\"n\":4}");
    assert_string_equal(qt_events(q), "duplicated:jobId=k1|added:jobId=k2:name=z|waiting:jobId=k2|"
                                      "duplicated:jobId=k2|added:jobId=k3:name=z|waiting:jobId=k3");
    /* once the hash is gone the id can be used again */
    assert_int_equal(ferry_queue_remove_job(q, "order-42", &e), 0);
    qt_add_expect(q, "order", "{\"v\":3}", "{\"jobId\":\"order-42\"}", "order-42");
    assert_string_equal(qt_hget(qt_key(q, "order-42"), "data"), "{\"v\":3}");
    /* an id that names one of the queue's own keys: refused by add, get and remove, and the
     * key stays (remove used to delete meta, the queue's settings) */
    qt_add_fail(q, "n", NULL, "{\"jobId\":\"meta\"}", FERRY_EINVAL,
                "is the name of one of the queue's own keys");
    ferry_job_info *info = NULL;
    assert_int_equal(ferry_queue_get_job(q, "id", &info, &e), FERRY_EINVAL);
    assert_null(info);
    assert_int_equal(ferry_queue_remove_job(q, "meta", &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "job id 'meta' is the name of one of queue dup's own keys"));
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "meta"))), 1);
    ferry_queue_close(q);
}

static void test_default_options_merge(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "defs",
                             "{\"attempts\":5,\"backoff\":{\"type\":\"exponential\",\"delay\":100},"
                             "\"removeOnComplete\":true}");
    qt_add_expect(q, "a", NULL, NULL, "1");
    assert_string_equal(qt_hget(qt_key(q, "1"), "opts"),
                        "{\"attempts\":5,\"backoff\":{\"type\":\"exponential\",\"delay\":100},"
                        "\"removeOnComplete\":true}");
    qt_add_expect(q, "b", NULL, "{\"backoff\":50,\"removeOnComplete\":null,\"priority\":2}", "2");
    assert_string_equal(
        qt_hget(qt_key(q, "2"), "opts"),
        "{\"attempts\":5,\"backoff\":{\"type\":\"fixed\",\"delay\":50},\"priority\":2}");
    ferry_queue_close(q);
}

static void test_bulk_10000_in_order(void **state) {
    (void)state;
    enum { N = 10000 };
    ferry_queue *q = qt_open(th_prefix(), "bulk", NULL);
    ferry_job_spec *s = calloc(N, sizeof *s);
    char(*data)[32] = calloc(N, sizeof *data);
    char **ids = calloc(N, sizeof *ids);
    for (int i = 0; i < N; i++) {
        snprintf(data[i], sizeof data[i], "{\"i\":%d}", i);
        s[i] = (ferry_job_spec){"bulk", data[i], i % 100 == 7 ? "{\"attempts\":2}" : NULL};
    }
    ferry_error e = {0};
    assert_int_equal(ferry_queue_add_bulk(q, s, N, ids, &e), 0);
    for (int i = 0; i < N; i++) {
        char want[16];
        snprintf(want, sizeof want, "%d", i + 1);
        assert_string_equal(ids[i], want);
        free(ids[i]);
    }
    assert_string_equal(qt_get(qt_key(q, "id")), "10000");
    redisReply *r = qt_cmd("LRANGE %s 0 -1", qt_key(q, "wait"));
    assert_int_equal(r->elements, N);
    for (int k = 0; k < N; k++)
        assert_int_equal(atoi(r->element[k]->str), N - k); /* head newest */
    freeReplyObject(r);
    assert_string_equal(qt_hget(qt_key(q, "5000"), "data"), "{\"i\":4999}");
    assert_string_equal(qt_hget(qt_key(q, "8"), "opts"), "{\"attempts\":2}");
    /* events: 20000 written, `waiting` ones capped approximately at maxLenEvents */
    long long xlen = qt_ival(qt_cmd("XLEN %s", qt_key(q, "events")));
    assert_true(xlen >= 10000 && xlen <= 20000);
    ferry_job_counts c;
    assert_int_equal(ferry_queue_counts(q, &c, &e), 0);
    assert_int_equal(c.waiting, N);
    free(s);
    free(data);
    free(ids);
    ferry_queue_close(q);
}

/* ---- limits and bad input ------------------------------------------------------------- */

static void test_payload_limit_and_bad_input(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "limits", NULL);
    size_t n = 600000;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    big[0] = '"';
    big[n - 1] = '"';
    big[n] = 0;
    qt_add_fail(q, "big", big, NULL, FERRY_ETOOBIG, "job data is 600000 bytes, limit 524288");
    big[524288 - 1] = '"';
    big[524288] = 0;
    qt_add_expect(q, "edge", big, NULL, "1"); /* exactly the limit */
    qt_add_fail(q, "x", "{\"a\":1}", "{\"sizeLimit\":3}", FERRY_ETOOBIG,
                "over its opts.sizeLimit 3");
    qt_add_fail(q, "x", "{\"a\":", NULL, FERRY_EINVAL, "job data: invalid JSON at byte 5");
    qt_add_fail(q, "x", "{\"a\":1} {}", NULL, FERRY_EINVAL, "trailing characters");
    qt_add_fail(q, "x", "\"\xff\"", NULL, FERRY_EINVAL, "invalid UTF-8");
    qt_add_fail(q, "x", NULL, "{\"attempts\":\"3\"}", FERRY_EINVAL,
                "opts.attempts: expected a non-negative integer up to 2^53-1, got \"3\"");
    qt_add_fail(q, "x", NULL, "{\"jobId\":\"77\"}", FERRY_EINVAL, "cannot be integers");
    qt_add_fail(q, "x", NULL, "{\"deduplication\":{\"id\":\"d\"}}", FERRY_EINVAL,
                "deduplication is not supported yet");
    qt_add_fail(q, "x", NULL, "{\"parent\":{\"id\":\"1\",\"queue\":\"bull:p\"}}", FERRY_EINVAL,
                "flows");
    qt_add_fail(q, "x", NULL, "{\"delay\":9000000000000}", FERRY_EINVAL, "2039");
    qt_add_fail(q, "", NULL, NULL, FERRY_EINVAL, "job name is empty");
    qt_add_fail(q, "\xc3", NULL, NULL, FERRY_EINVAL, "UTF-8");
    char name[1100];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    qt_add_fail(q, name, NULL, NULL, FERRY_EINVAL, "job name is 1099 bytes, limit 1024");

    /* one bad job in a bulk: nothing is added, the message names it */
    ferry_job_spec s[3] = {{"ok", NULL, NULL}, {"ok", NULL, NULL}, {"bad", "{", NULL}};
    char *ids[3] = {(char *)"x", (char *)"x", (char *)"x"};
    ferry_error e = {0};
    assert_int_equal(ferry_queue_add_bulk(q, s, 3, ids, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "job 2: job data: invalid JSON"));
    for (int i = 0; i < 3; i++)
        assert_null(ids[i]);
    assert_string_equal(qt_get(qt_key(q, "id")), "1"); /* only "edge" */
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "1");
    assert_int_equal(ferry_queue_add_bulk(q, NULL, 0, NULL, &e), 0);
    assert_int_equal(ferry_queue_add_bulk(q, NULL, 2, NULL, &e), FERRY_EINVAL);
    free(big);
    ferry_queue_close(q);

    /* a smaller configured limit */
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = th_env_require("REDIS_URL");
    ferry_queue_options o;
    ferry_queue_options_init(&o);
    o.redis = &ro;
    o.prefix = th_prefix();
    o.max_payload_bytes = 10;
    assert_int_equal(ferry_queue_open("small", &o, &q, &e), 0);
    qt_add_fail(q, "x", "{\"abcdefgh\":1}", NULL, FERRY_ETOOBIG, "job data is 14 bytes, limit 10");
    ferry_queue_close(q);
}

/* A script cache flush between calls is survived (NOSCRIPT -> reload -> resend). */
static void test_script_flush(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "flush", NULL);
    freeReplyObject(qt_cmd("SCRIPT FLUSH"));
    qt_add_expect(q, "a", NULL, NULL, "1");
    freeReplyObject(qt_cmd("SCRIPT FLUSH"));
    /* 2500 jobs = 3 addJobs calls in one round trip, all answered NOSCRIPT */
    enum { N = 2500 };
    ferry_job_spec *s = calloc(N, sizeof *s);
    for (int i = 0; i < N; i++)
        s[i] = (ferry_job_spec){"b", NULL, NULL};
    ferry_error e = {0};
    assert_int_equal(ferry_queue_add_bulk(q, s, N, NULL, &e), 0);
    assert_string_equal(qt_get(qt_key(q, "id")), "2501");
    assert_int_equal(qt_ival(qt_cmd("LLEN %s", qt_key(q, "wait"))), N + 1);
    freeReplyObject(qt_cmd("SCRIPT FLUSH"));
    ferry_job_info *info = NULL;
    assert_int_equal(ferry_queue_get_job(q, "1", &info, &e), 0);
    ferry_job_info_free(info);
    free(s);
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_writes_meta),
        cmocka_unit_test(test_open_rejects_bad_options),
        cmocka_unit_test(test_add_standard_exact_state),
        cmocka_unit_test(test_add_full_options_hash),
        cmocka_unit_test(test_wait_order_and_lifo),
        cmocka_unit_test(test_delayed_scores_and_marker),
        cmocka_unit_test(test_prioritized_scores),
        cmocka_unit_test(test_custom_id_and_duplicates),
        cmocka_unit_test(test_default_options_merge),
        cmocka_unit_test(test_bulk_10000_in_order),
        cmocka_unit_test(test_payload_limit_and_bad_input),
        cmocka_unit_test(test_script_flush),
    };
    return cmocka_run_group_tests(tests, qt_setup, qt_teardown);
}

/* test_queue_throughput.c - ferry_queue_throughput against a real Redis: finishes of the
 * completed and failed sets counted per bucket ending at Redis' clock (the bucket edges,
 * finishes stamped in the future, finishes older than the window), an empty queue, the
 * arrays left out, and the bad arguments it refuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/qt.h"

/* Redis' clock in ms. */
static long long redis_now_ms(void) {
    redisReply *r = qt_cmd("TIME");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

static void put(ferry_queue *q, const char *set, const char *id, long long finished) {
    freeReplyObject(qt_cmd("HSET %s name n data {} timestamp %lld finishedOn %lld", qt_key(q, id),
                           finished - 10, finished));
    freeReplyObject(qt_cmd("ZADD %s %lld %s", qt_key(q, set), finished, id));
}

static void test_buckets(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "tp", NULL);
    long long t0 = redis_now_ms();
    const long long b = 60000; /* wide buckets: the test may take seconds and stay exact */
    put(q, "completed", "c1", t0 - 1000);       /* newest bucket */
    put(q, "completed", "c2", t0 - 2000);       /* newest bucket */
    put(q, "completed", "c3", t0 - b - 30000);  /* bucket n-2 */
    put(q, "completed", "c4", t0 + 3600000);    /* a clock ahead: newest */
    put(q, "completed", "c5", t0 - 10 * b - 1); /* older than the window of 5 */
    put(q, "failed", "f1", t0 - 4 * b - 30000); /* the oldest bucket (0) */
    put(q, "failed", "f2", t0 - 500);           /* newest */
    long long c[5], f[5], now = 0;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_throughput(q, b, 5, c, f, &now, &e), 0);
    assert_true(now >= t0 && now < t0 + 20000);
    long long wc[5] = {0, 0, 0, 1, 3}, wf[5] = {1, 0, 0, 0, 1};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(c[i], wc[i]);
        assert_int_equal(f[i], wf[i]);
    }
    /* Either array may be left out. */
    long long only[5];
    assert_int_equal(ferry_queue_throughput(q, b, 5, NULL, only, NULL, &e), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(only[i], wf[i]);
    /* A window of one bucket holds everything within b of now, and the future. */
    assert_int_equal(ferry_queue_throughput(q, b, 1, c, f, NULL, &e), 0);
    assert_int_equal(c[0], 3);
    assert_int_equal(f[0], 1);

    /* Where a finish lands: bucket i holds ages in [(n-1-i) * b, (n-i) * b) ms before now
     * (an age of exactly k * b belongs to the older bucket). 200 buckets of 1 s: "edge"
     * 100 s back; f2 (about now) in the newest or the one before; the rest outside. */
    long long t1 = redis_now_ms();
    put(q, "failed", "edge", t1 - 100000);
    long long big_c[200], big_f[200];
    assert_int_equal(ferry_queue_throughput(q, 1000, 200, big_c, big_f, &now, &e), 0);
    long long age = now - (t1 - 100000); /* >= 100000 */
    size_t want = 199 - (size_t)(age / 1000);
    long long sum = 0;
    for (size_t i = 0; i < 200; i++)
        sum += big_f[i];
    assert_int_equal(sum, 2);
    assert_int_equal(big_f[want], 1);
    assert_int_equal(big_f[198] + big_f[199], 1);
    ferry_queue_close(q);
}

static void test_empty_and_bad_input(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "tp-empty", NULL);
    long long c[3] = {7, 7, 7}, f[3] = {7, 7, 7};
    ferry_error e = {0};
    assert_int_equal(ferry_queue_throughput(q, 1000, 3, c, f, NULL, &e), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c[i], 0);
        assert_int_equal(f[i], 0);
    }
    assert_int_equal(ferry_queue_throughput(q, 0, 3, c, f, NULL, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "bucket_ms"));
    assert_int_equal(
        ferry_queue_throughput(q, FERRY_QUEUE_THROUGHPUT_BUCKET_MS_MAX + 1LL, 3, c, f, NULL, &e),
        FERRY_EINVAL);
    assert_int_equal(ferry_queue_throughput(q, 1000, 0, c, f, NULL, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "nbuckets"));
    assert_int_equal(
        ferry_queue_throughput(q, 1000, FERRY_QUEUE_THROUGHPUT_BUCKETS_MAX + 1, c, f, NULL, &e),
        FERRY_EINVAL);
    assert_int_equal(ferry_queue_throughput(NULL, 1000, 3, c, f, NULL, &e), FERRY_EINVAL);
    /* A read: it created no key (the meta is the open's). */
    redisReply *r = qt_cmd("KEYS %s", qt_key(q, "*"));
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, qt_key(q, "meta"));
    freeReplyObject(r);
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_empty_and_bad_input),
    };
    int failed = cmocka_run_group_tests(tests, qt_setup, qt_teardown);
    return th_exit(failed);
}

/* test_scheduler_next.c - the worker hook that produces a job scheduler's next iteration,
 * against a real Redis: every, cron with time zone, only the current iteration produces,
 * duplicated, limit, end date, batches, NOSCRIPT - including from Node-written state copied
 * from dumps of what Node BullMQ 6.7.0 wrote (the literals below). */
#include "support/sc.h"

/* ---- next iteration (the worker hook) ----------------------------------------------------- */

static void test_next_every(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "snext", NULL);
    ferry_scheduler_spec s = sc_every(1000);
    s.name = "tick";
    s.data_json = "{\"t\":1}";
    s.opts_json = "{\"removeOnComplete\":50}";
    char *first = sc_upsert(q, "tick", &s, NULL);
    long long m1 = sc_millis_of(first);
    sc_fetched f = sc_fetch(q, first);
    int64_t now = m1 + 20;
    ferry__sched_result res = sc_on_fetch(q, &f, now);
    assert_int_equal(res.outcome, FERRY__SCHED_PRODUCED);
    assert_int_equal(res.next_ms, m1 + 1000);
    assert_int_equal(res.delay_ms, 980);
    char next[128], want[1024];
    snprintf(next, sizeof next, "repeat:tick:%lld", m1 + 1000);
    assert_int_equal(sc_zscore(qt_key(q, "repeat"), "tick"), m1 + 1000);
    assert_int_equal(sc_zscore(qt_key(q, "delayed"), next), (m1 + 1000) * 4096);
    assert_string_equal(qt_hget(qt_key(q, "repeat:tick"), "ic"), "2");
    assert_string_equal(qt_get(qt_key(q, "id")), "2");
    snprintf(want, sizeof want,
             "{\"removeOnComplete\":50,\"repeat\":{\"every\":1000,\"count\":2},\"timestamp\":%lld,"
             "\"repeatJobKey\":\"tick\",\"attempts\":0,\"jobId\":\"%s\",\"delay\":980}",
             (long long)now, next);
    sc_json_same(qt_hget(qt_key(q, next), "opts"), want);
    snprintf(want, sizeof want,
             "data={\"t\":1};delay=980;name=tick;opts=%s;priority=0;rjk=tick;timestamp=%lld",
             qt_hget(qt_key(q, next), "opts"), (long long)now);
    assert_string_equal(qt_hgetall(qt_key(q, next)), want);
    snprintf(want, sizeof want, "added:jobId=%s:name=tick|delayed:jobId=%s:delay=%lld", next, next,
             m1 + 1000);
    assert_true(sc_has_event(q, want)); /* both, in this order */

    /* the same job again (a retried call, a stalled copy): not current any more */
    assert_int_equal(sc_on_fetch(q, &f, now + 5).outcome, FERRY__SCHED_NOT_CURRENT);
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(q, "delayed"))), 1);

    /* a new template applies from the next iteration on (name/data from the hash) */
    s.data_json = "{\"t\":2}";
    s.name = "tock";
    char *again = sc_upsert(q, "tick", &s, NULL);
    assert_string_equal(again, next); /* replaced in place, same millis */
    sc_fetched g = sc_fetch(q, next);
    /* late by 3.5 intervals: missed ticks are skipped to the next aligned slot */
    res = sc_on_fetch(q, &g, m1 + 1000 + 3500);
    assert_int_equal(res.outcome, FERRY__SCHED_PRODUCED);
    long long off = m1 % 1000;
    long long aligned = (m1 + 4500) / 1000 * 1000 + off;
    if (aligned <= m1 + 4500) aligned += 1000;
    assert_int_equal(res.next_ms, aligned);
    snprintf(next, sizeof next, "repeat:tick:%lld", aligned);
    assert_string_equal(qt_hget(qt_key(q, next), "data"), "{\"t\":2}");
    assert_string_equal(qt_hget(qt_key(q, next), "name"), "tock");
    assert_string_equal(qt_hget(qt_key(q, "repeat:tick"), "ic"), "3");

    /* duplicated: the scheduler points at g again while its successor exists */
    freeReplyObject(qt_cmd("ZADD %s %lld tick", qt_key(q, "repeat"), sc_millis_of(g.id)));
    res = sc_on_fetch(q, &g, m1 + 1000 + 3500);
    assert_int_equal(res.outcome, FERRY__SCHED_DUPLICATED);
    assert_int_equal(res.next_ms, aligned);
    snprintf(want, sizeof want, "duplicated:jobId=%s", next);
    assert_true(sc_has_event(q, want));
    assert_string_equal(qt_hget(qt_key(q, "repeat:tick"), "ic"), "3");
    free(first), free(again);
    ferry_queue_close(q);
}

static void test_next_cron_tz(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "sncron", NULL);
    ferry_scheduler_spec s = sc_cron("0 3 * * *", "Asia/Ho_Chi_Minh");
    s.name = "nightly";
    s.opts_json = "{\"attempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":100}}";
    char *first = sc_upsert(q, "n", &s, NULL);
    long long m1 = sc_millis_of(first);
    sc_fetched f = sc_fetch(q, first);
    /* the worker fetches it 40 ms after it was due */
    ferry__sched_result res = sc_on_fetch(q, &f, m1 + 40);
    assert_int_equal(res.outcome, FERRY__SCHED_PRODUCED);
    assert_int_equal(res.next_ms, m1 + SC_DAY_MS);
    assert_int_equal(res.delay_ms, SC_DAY_MS - 40);
    char next[128], want[1024];
    snprintf(next, sizeof next, "repeat:n:%lld", m1 + SC_DAY_MS);
    snprintf(want, sizeof want,
             "{\"attempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":100},\"repeat\":{"
             "\"pattern\":\"0 3 * * *\",\"tz\":\"Asia/Ho_Chi_Minh\",\"count\":2},\"timestamp\":"
             "%lld,\"prevMillis\":%lld,\"repeatJobKey\":\"n\",\"jobId\":\"%s\",\"delay\":%lld}",
             m1 + 40, m1 + SC_DAY_MS, next, SC_DAY_MS - 40);
    sc_json_same(qt_hget(qt_key(q, next), "opts"), want);
    /* fetched early (clock skew): still the next slot after prevMillis, not the same one */
    sc_fetched g = sc_fetch(q, next);
    res = sc_on_fetch(q, &g, m1 + SC_DAY_MS - 5000);
    assert_int_equal(res.outcome, FERRY__SCHED_PRODUCED);
    assert_int_equal(res.next_ms, m1 + 2 * SC_DAY_MS);
    assert_string_equal(qt_hget(qt_key(q, "repeat:n"), "ic"), "3");
    free(first);
    ferry_queue_close(q);
}

static void test_next_limit_and_end(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "snend", NULL);
    ferry_scheduler_spec s = sc_every(1000);
    s.limit = 2;
    char *first = sc_upsert(q, "lim", &s, NULL);
    sc_fetched f = sc_fetch(q, first);
    ferry__sched_result res = sc_on_fetch(q, &f, sc_millis_of(first) + 1);
    assert_int_equal(res.outcome, FERRY__SCHED_PRODUCED);
    char second[128];
    snprintf(second, sizeof second, "repeat:lim:%lld", res.next_ms);
    sc_fetched g = sc_fetch(q, second);
    res = sc_on_fetch(q, &g, sc_millis_of(second) + 1); /* would be the 3rd of 2 */
    assert_int_equal(res.outcome, FERRY__SCHED_ENDED);
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(q, "delayed"))), 0);
    assert_string_equal(qt_hget(qt_key(q, "repeat:lim"), "ic"), "2");

    int64_t now = ferry__now_ms();
    ferry_scheduler_spec e = sc_every(1000);
    e.end_date_ms = now + 60000;
    char *j = sc_upsert(q, "end", &e, NULL);
    sc_fetched h = sc_fetch(q, j);
    assert_int_equal(sc_on_fetch(q, &h, now + 60001).outcome, FERRY__SCHED_ENDED);
    assert_int_equal(sc_on_fetch(q, &h, now + 100).outcome, FERRY__SCHED_PRODUCED);
    free(j);

    /* a pattern whose next time is past the end date ends too */
    ferry_scheduler_spec c = sc_cron("0 0 1 1 *", "UTC");
    c.immediately = 1;
    c.end_date_ms = now + 3600000;
    j = sc_upsert(q, "cend", &c, NULL);
    sc_fetched k = sc_fetch(q, j);
    assert_int_equal(sc_on_fetch(q, &k, now + 10).outcome, FERRY__SCHED_ENDED);
    free(j), free(first);
    ferry_queue_close(q);
}

static void test_next_batch_noscript_and_errors(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "snbatch", NULL);
    ferry_scheduler_spec s = sc_every(2000);
    char *a = sc_upsert(q, "a", &s, NULL);
    char *b = sc_upsert(q, "b", &s, NULL);
    char *plain = qt_add(q, "plain", NULL, NULL);
    sc_fetched fa = sc_fetch(q, a), fb = sc_fetch(q, b);
    freeReplyObject(qt_cmd("SCRIPT FLUSH"));
    /* a legacy-shaped rjk without a scheduler hash, and one with unusable repeat options */
    freeReplyObject(qt_cmd("ZADD %s 1 %s", qt_key(q, "repeat"), "n:i::UTC:0 * * * *"));
    ferry__sched_fetched jobs[] = {
        {plain, NULL, "{}"},
        {fa.id, fa.rjk, fa.opts},
        {"repeat:n:i::UTC:0 * * * *:1", "n:i::UTC:0 * * * *", "{\"repeat\":{\"every\":5}}"},
        {fb.id, fb.rjk, fb.opts},
        {"repeat:z:1", "z", "{\"repeat\":{\"every\":5,\"pattern\":\"* * * * *\"}}"},
        {"repeat:y:1", "y", "not json"},
        /* absurd numbers (Node's worker accepts them): no undefined behaviour, no crash */
        {"repeat:w:1", "w", "{\"repeat\":{\"every\":1e300}}"},
        {"repeat:v:1", "v",
         "{\"prevMillis\":-1e300,\"repeat\":{\"pattern\":\"* * * * *\",\"count\":1e300,"
         "\"startDate\":1e300,\"offset\":1e300}}"},
    };
    ferry__sched_result res[8];
    ferry_error e = {0};
    int64_t now = ferry__now_ms();
    assert_int_equal(ferry__scheduler_on_fetch(qt_conn, qt_key(q, ""), jobs, 8, now, res, &e), 0);
    assert_int_equal(res[0].outcome, FERRY__SCHED_NONE);
    assert_int_equal(res[1].outcome, FERRY__SCHED_PRODUCED);
    assert_int_equal(res[2].outcome, FERRY__SCHED_LEGACY);
    assert_non_null(strstr(res[2].error.message, "legacy repeatable job"));
    assert_int_equal(res[3].outcome, FERRY__SCHED_PRODUCED);
    assert_int_equal(res[4].outcome, FERRY__SCHED_ERROR);
    assert_non_null(strstr(res[4].error.message, "exactly one of every and pattern"));
    assert_int_equal(res[5].outcome, FERRY__SCHED_ERROR);
    /* Node only checks that every is truthy; with no scheduler "w" there is nothing to do */
    assert_int_equal(res[6].outcome, FERRY__SCHED_NOT_CURRENT);
    assert_int_equal(res[7].outcome, FERRY__SCHED_ENDED); /* startDate past the cron range */
    assert_int_equal(sc_zscore(qt_key(q, "repeat"), "a"), sc_millis_of(a) + 2000);
    assert_int_equal(sc_zscore(qt_key(q, "repeat"), "b"), sc_millis_of(b) + 2000);
    /* no rjk anywhere: no round trip, nothing touched */
    assert_int_equal(ferry__scheduler_on_fetch(qt_conn, qt_key(q, ""), jobs, 1, now, res, &e), 0);
    assert_int_equal(ferry__scheduler_on_fetch(NULL, qt_key(q, ""), NULL, 0, now, NULL, &e), 0);
    assert_int_equal(ferry__scheduler_on_fetch(qt_conn, qt_key(q, ""), jobs,
                                               FERRY__SCHED_BATCH_MAX + 1, now, res, &e),
                     FERRY_EINVAL);

    /* pure pieces */
    assert_true(ferry__sched_legacy_shape("name:id::UTC:0 * * * *"));
    assert_true(ferry__sched_legacy_shape("name:id:1700000000000::5000"));
    assert_false(ferry__sched_legacy_shape("name:id:abc::5000"));
    assert_false(ferry__sched_legacy_shape("a:b:c:d"));
    assert_false(ferry__sched_legacy_shape("a:b:c:d:e5"));
    assert_false(ferry__sched_legacy_shape("every-1500"));
    free(a), free(b), free(plain);
    ferry_queue_close(q);
}

/* Node-written state, field for field from observed/e5-scheduler.txt: a ferry worker must
 * continue it exactly as Node's worker did (same next id, delay, opts). */
static void test_next_from_node_state(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "snode", NULL);
    freeReplyObject(
        qt_cmd("ZADD %s 1795979227429 every-1500 1795979228000 cron-2s", qt_key(q, "repeat")));
    freeReplyObject(qt_cmd("HSET %s name tick every 1500 offset 1429 opts %s data %s ic 2",
                           qt_key(q, "repeat:every-1500"),
                           "{\"removeOnComplete\":3,\"attempts\":2}", "{\"a\":1}"));
    freeReplyObject(qt_cmd("HSET %s name cronjob tz UTC pattern %s offset 0 data %s ic 2",
                           qt_key(q, "repeat:cron-2s"), "*/2 * * * * *", "{\"c\":true}"));
    const char *every_opts =
        "{\"repeat\":{\"every\":1500,\"count\":2},\"removeOnComplete\":3,\"repeatJobKey\":"
        "\"every-1500\",\"jobId\":\"repeat:every-1500:1795979227429\",\"timestamp\":"
        "1795979225991,\"delay\":1438,\"attempts\":2}";
    const char *cron_opts =
        "{\"prevMillis\":1795979228000,\"repeat\":{\"count\":2,\"pattern\":\"*\\/2 * * * * *\","
        "\"tz\":\"UTC\"},\"repeatJobKey\":\"cron-2s\",\"jobId\":\"repeat:cron-2s:1795979228000\","
        "\"timestamp\":1795979226014,\"delay\":1986,\"attempts\":0}";
    ferry__sched_fetched j1 = {"repeat:every-1500:1795979227429", "every-1500", every_opts};
    ferry__sched_fetched j2 = {"repeat:cron-2s:1795979228000", "cron-2s", cron_opts};
    ferry__sched_result r;
    ferry_error e = {0};
    assert_int_equal(
        ferry__scheduler_on_fetch(qt_conn, qt_key(q, ""), &j1, 1, 1795979227526, &r, &e), 0);
    assert_int_equal(r.outcome, FERRY__SCHED_PRODUCED);
    const char *n1 = "repeat:every-1500:1795979228929";
    assert_string_equal(qt_hget(qt_key(q, n1), "delay"), "1403");
    assert_string_equal(qt_hget(qt_key(q, n1), "data"), "{\"a\":1}");
    /* what Node wrote for this iteration (its opts.timestamp was 1 ms before its script's) */
    sc_json_same(qt_hget(qt_key(q, n1), "opts"),
                 "{\"timestamp\":1795979227526,\"repeat\":{\"every\":1500,\"count\":3},"
                 "\"repeatJobKey\":\"every-1500\",\"jobId\":\"repeat:every-1500:1795979228929\","
                 "\"removeOnComplete\":3,\"delay\":1403,\"attempts\":2}");
    assert_int_equal(
        ferry__scheduler_on_fetch(qt_conn, qt_key(q, ""), &j2, 1, 1795979228028, &r, &e), 0);
    assert_int_equal(r.outcome, FERRY__SCHED_PRODUCED);
    const char *n2 = "repeat:cron-2s:1795979230000";
    assert_string_equal(qt_hget(qt_key(q, n2), "delay"), "1972");
    assert_string_equal(qt_hget(qt_key(q, n2), "timestamp"), "1795979228028");
    sc_json_same(qt_hget(qt_key(q, n2), "opts"),
                 "{\"timestamp\":1795979228028,\"prevMillis\":1795979230000,\"repeatJobKey\":"
                 "\"cron-2s\",\"jobId\":\"repeat:cron-2s:1795979230000\",\"repeat\":{\"pattern\":"
                 "\"*\\/2 * * * * *\",\"tz\":\"UTC\",\"count\":3},\"delay\":1972,\"attempts\":0}");
    assert_string_equal(qt_zrange(qt_key(q, "repeat")),
                        "every-1500,1795979228929,cron-2s,1795979230000");
    assert_string_equal(qt_hget(qt_key(q, "repeat:cron-2s"), "ic"), "3");
    /* and ferry's list reads Node's hashes */
    ferry_scheduler_info *i = NULL;
    assert_int_equal(ferry_scheduler_get(q, "every-1500", &i, &e), 0);
    assert_int_equal(i->every_ms, 1500);
    assert_int_equal(i->offset_ms, 1429);
    assert_int_equal(i->iteration_count, 3);
    assert_int_equal(i->next_ms, 1795979228929);
    assert_string_equal(i->opts_json, "{\"removeOnComplete\":3,\"attempts\":2}");
    ferry_scheduler_info_free(i);
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_next_every),
        cmocka_unit_test(test_next_cron_tz),
        cmocka_unit_test(test_next_limit_and_end),
        cmocka_unit_test(test_next_batch_noscript_and_errors),
        cmocka_unit_test(test_next_from_node_state),
    };
    return cmocka_run_group_tests(tests, qt_setup, qt_teardown);
}

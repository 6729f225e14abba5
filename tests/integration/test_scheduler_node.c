/* test_scheduler_node.c - the worker hook continuing schedulers that Node BullMQ 6.7.0 wrote
 * with values Node accepts loosely (a `limit` stored as a string, `every` as a numeric string or
 * a fraction, `lifo: 1`), and refusing, with a clear error and nothing written, scheduler state
 * that Node's script would break on (no usable `every`, a `repeat` entry without its hash or a
 * hash without `name`, a non-integer `ic`). The hashes are written as Node writes them. */
#include <stdarg.h>

#include "support/sc.h"

#define P 1795979227000LL /* millis of the current iteration */

/* A Node-shaped scheduler: its `repeat` entry at P and its hash from field/value pairs
 * (NULL-terminated; no hash at all when the first field is NULL). */
static void node_sched(ferry_queue *q, const char *id, ...) {
    freeReplyObject(qt_cmd("ZADD %s %lld %s", qt_key(q, "repeat"), P, id));
    char key[512];
    snprintf(key, sizeof key, "%s", qt_key(q, "repeat:"));
    snprintf(key + strlen(key), sizeof key - strlen(key), "%s", id);
    va_list ap;
    va_start(ap, id);
    for (const char *f; (f = va_arg(ap, const char *)) != NULL;) {
        const char *v = va_arg(ap, const char *);
        freeReplyObject(qt_cmd("HSET %s %s %s", key, f, v));
    }
    va_end(ap);
}

/* The hook on the current iteration "repeat:<id>:P" with these opts, at `now`. */
static ferry__sched_result run_at(ferry_queue *q, const char *id, const char *opts, int64_t now) {
    char job[256];
    snprintf(job, sizeof job, "repeat:%s:%lld", id, P);
    ferry__sched_fetched j = {job, id, opts};
    ferry__sched_result res;
    ferry_error e = {0};
    if (ferry__scheduler_on_fetch(qt_conn, qt_key(q, ""), &j, 1, now, &res, &e))
        fail_msg("on_fetch %s: %s", job, e.message);
    return res;
}

/* Node's iteration opts around a `repeat` object (and extra members, "" for none). */
static const char *iter_opts(const char *id, const char *repeat, const char *extra) {
    static char buf[4][1024];
    static int n;
    char *b = buf[n++ % 4];
    snprintf(b, sizeof buf[0],
             "{\"repeat\":%s,\"repeatJobKey\":\"%s\",\"jobId\":\"repeat:%s:%lld\","
             "\"timestamp\":%lld,\"delay\":0,\"attempts\":0%s%s}",
             repeat, id, id, P, P - 1000, *extra ? "," : "", extra);
    return b;
}

/* Nothing was written for scheduler id: still at P, ic as given, no new iteration. */
static void untouched(ferry_queue *q, const char *id, const char *ic) {
    char key[256];
    snprintf(key, sizeof key, "repeat:%s", id);
    assert_int_equal(sc_zscore(qt_key(q, "repeat"), id), P);
    assert_string_equal(qt_hget(qt_key(q, key), "ic"), ic);
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(q, "delayed"))), 0);
    assert_int_equal(qt_ival(qt_cmd("LLEN %s", qt_key(q, "wait"))), 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "id"))), 0);
}

static void expect_error(ferry__sched_result r, const char *msg) {
    assert_int_equal(r.outcome, FERRY__SCHED_ERROR);
    if (!strstr(r.error.message, msg))
        fail_msg("message \"%s\" lacks \"%s\"", r.error.message, msg);
}

/* Node: typeof limit !== 'undefined' && count + 1 > limit, with JavaScript's coercion. The
 * expectations are what node prints for `n > limit`. */
static void test_limit_coerced_like_js(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "snlimit", NULL);
    static const struct {
        const char *limit; /* JSON */
        int n;             /* the iteration to produce (stored count + 1) */
        int ended;
    } cases[] = {
        {"\"2\"", 3, 1},    {"\"2\"", 2, 0},        {"\" 2\\n\"", 3, 1},    {"\" 2\\n\"", 2, 0},
        {"\"abc\"", 9, 0},  {"\"\"", 1, 1},         {"\"0x1\"", 2, 1},      {"\"0b11\"", 3, 0},
        {"\"0b11\"", 4, 1}, {"\"1e0\"", 2, 1},      {"\"Infinity\"", 9, 0}, {"\"-Infinity\"", 1, 1},
        {"\"1_0\"", 2, 0},  {"\"inf\"", 2, 0},      {"true", 2, 1},         {"2", 3, 1},
        {"2", 2, 0},        {"\"\\u00a02\"", 3, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char id[32], rep[128];
        snprintf(id, sizeof id, "l%zu", i);
        node_sched(q, id, "name", "n", "every", "1000", "offset", "0", "ic", "1", NULL);
        snprintf(rep, sizeof rep, "{\"every\":1000,\"limit\":%s,\"count\":%d}", cases[i].limit,
                 cases[i].n - 1);
        ferry__sched_result r = run_at(q, id, iter_opts(id, rep, ""), P + 10);
        if (r.outcome != (cases[i].ended ? FERRY__SCHED_ENDED : FERRY__SCHED_PRODUCED))
            fail_msg("limit %s, iteration %d: outcome %d (%s)", cases[i].limit, cases[i].n,
                     r.outcome, r.error.message);
    }
    ferry_queue_close(q);
}

/* Node's worker only checks that every is truthy; its script takes every from the hash, else
 * tonumber of the job's, and floors the next slot. */
static void test_every_string_and_fraction(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "snevery", NULL);
    /* a numeric string, as Node stores upsertJobScheduler('s', {every: '700'}) */
    node_sched(q, "es", "name", "n", "every", "700", "offset", "300", "ic", "1", NULL);
    ferry__sched_result r =
        run_at(q, "es", iter_opts("es", "{\"every\":\"700\",\"count\":1}", ""), P + 10);
    assert_int_equal(r.outcome, FERRY__SCHED_PRODUCED);
    assert_int_equal(r.next_ms, P + 700);
    assert_int_equal(r.delay_ms, 690);
    char next[128];
    snprintf(next, sizeof next, "repeat:es:%lld", P + 700);
    json_t *o = json_loads(qt_hget(qt_key(q, next), "opts"), 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "repeat"), "every")),
                        "700"); /* kept as given, as Node's getNextJobOpts does */
    json_decref(o);

    /* a fraction: prev + 1500.5, floored */
    node_sched(q, "ef", "name", "n", "every", "1500.5", "offset", "0", "ic", "1", NULL);
    r = run_at(q, "ef", iter_opts("ef", "{\"every\":1500.5,\"count\":1}", ""), P + 10);
    assert_int_equal(r.outcome, FERRY__SCHED_PRODUCED);
    assert_int_equal(r.next_ms, P + 1500);
    assert_string_equal(qt_hget(qt_key(q, "repeat:ef"), "ic"), "2");

    /* no every in the hash: the job's, as a string */
    node_sched(q, "eo", "name", "n", "ic", "1", NULL);
    r = run_at(q, "eo", iter_opts("eo", "{\"every\":\" 700 \",\"count\":1}", ""), P + 10);
    assert_int_equal(r.outcome, FERRY__SCHED_PRODUCED);
    assert_int_equal(r.next_ms, P + 700);
    ferry_queue_close(q);
}

/* What Node would fail on (or turn into a broken id) is refused, nothing written. */
static void test_every_refused_writes_nothing(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "snevbad", NULL);
    node_sched(q, "z", "name", "n", "every", "0", "ic", "1", NULL);
    expect_error(run_at(q, "z", iter_opts("z", "{\"every\":1000,\"count\":1}", ""), P + 10),
                 "no usable every: the hash");
    untouched(q, "z", "1");
    node_sched(q, "a", "name", "n", "ic", "1", NULL);
    expect_error(run_at(q, "a", iter_opts("a", "{\"every\":\"abc\",\"count\":1}", ""), P + 10),
                 "no usable every");
    expect_error(run_at(q, "a", iter_opts("a", "{\"every\":1e300,\"count\":1}", ""), P + 10),
                 "(0, 2^53-1]");
    expect_error(run_at(q, "a", iter_opts("a", "{\"every\":-5,\"count\":1}", ""), P + 10),
                 "no usable every");
    untouched(q, "a", "1");
    expect_error(
        run_at(q, "a", iter_opts("a", "{\"every\":\"700\",\"pattern\":\"* * * * *\"}", ""), P + 10),
        "exactly one of every and pattern (it has both)");
    expect_error(run_at(q, "a", iter_opts("a", "{\"every\":\"\",\"count\":1}", ""), P + 10),
                 "(it has neither)");
    expect_error(run_at(q, "a", iter_opts("a", "{\"pattern\":5}", ""), P + 10),
                 "opts.repeat.pattern is not a string");
    untouched(q, "a", "1");
    ferry_queue_close(q);
}

/* A `repeat` entry without its hash, or a hash without `name`: reported, not "not current". */
static void test_broken_hash_reported(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "snbroken", NULL);
    const char *opts = iter_opts("nn", "{\"every\":1000,\"count\":1}", "");
    node_sched(q, "nn", "every", "1000", "ic", "1", NULL);
    ferry__sched_result r = run_at(q, "nn", opts, P + 10);
    expect_error(r, "has no name: corrupted or half-removed");
    assert_non_null(strstr(r.error.message, qt_key(q, "repeat:nn")));
    untouched(q, "nn", "1");
    node_sched(q, "nh", NULL);
    r = run_at(q, "nh", iter_opts("nh", "{\"every\":1000,\"count\":1}", ""), P + 10);
    expect_error(r, "does not exist: corrupted or half-removed");
    assert_int_equal(sc_zscore(qt_key(q, "repeat"), "nh"), P);
    /* a copy that is not the current iteration stays quiet, as in Node */
    char job[64];
    snprintf(job, sizeof job, "repeat:nh:%lld", P - 1000);
    ferry__sched_fetched j = {job, "nh", opts};
    ferry_error e = {0};
    assert_int_equal(ferry__scheduler_on_fetch(qt_conn, qt_key(q, ""), &j, 1, P + 10, &r, &e), 0);
    assert_int_equal(r.outcome, FERRY__SCHED_NOT_CURRENT);
    ferry_queue_close(q);
}

/* A corrupted `ic`: HINCRBY would fail after the ZADD in Node's order; refused first here. */
static void test_bad_ic_writes_nothing(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "snic", NULL);
    node_sched(q, "ic", "name", "n", "every", "1000", "ic", "abc", NULL);
    ferry__sched_result r =
        run_at(q, "ic", iter_opts("ic", "{\"every\":1000,\"count\":1}", ""), P + 10);
    untouched(q, "ic", "abc"); /* first: the `repeat` entry did not move */
    expect_error(r, "has ic 'abc', not an integer");
    node_sched(q, "ic2", "name", "n", "every", "1000", "ic", "007", NULL);
    expect_error(run_at(q, "ic2", iter_opts("ic2", "{\"every\":1000,\"count\":1}", ""), P + 10),
                 "has ic '007'");
    untouched(q, "ic2", "007");
    ferry_queue_close(q);
}

/* Node's script pushes with opts['lifo'] and ...: any value but false / null is LIFO there. */
static void test_lifo_lua_truthiness(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "snlifo", NULL);
    freeReplyObject(qt_cmd("LPUSH %s other", qt_key(q, "wait")));
    static const char *const ids[] = {"one", "fal", "zero"};
    static const char *const lifo[] = {"\"lifo\":1", "\"lifo\":false", "\"lifo\":0"};
    for (int i = 0; i < 3; i++) {
        node_sched(q, ids[i], "name", "n", "every", "1000", "offset", "0", "ic", "1", NULL);
        /* fetched exactly one interval late: the next slot is now, delay 0, into wait */
        ferry__sched_result r =
            run_at(q, ids[i], iter_opts(ids[i], "{\"every\":1000,\"count\":1}", lifo[i]), P + 1000);
        assert_int_equal(r.outcome, FERRY__SCHED_PRODUCED);
        assert_int_equal(r.delay_ms, 0);
    }
    char want[256];
    snprintf(want, sizeof want, "repeat:fal:%lld,other,repeat:one:%lld,repeat:zero:%lld", P + 1000,
             P + 1000, P + 1000);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), want);
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_coerced_like_js),
        cmocka_unit_test(test_every_string_and_fraction),
        cmocka_unit_test(test_every_refused_writes_nothing),
        cmocka_unit_test(test_broken_hash_reported),
        cmocka_unit_test(test_bad_ic_writes_nothing),
        cmocka_unit_test(test_lifo_lua_truthiness),
    };
    return cmocka_run_group_tests(tests, qt_setup, qt_teardown);
}

/* test_scheduler.c - job schedulers against a real Redis: the exact layout BullMQ 6.7.0
 * stores for `every` and cron (+ time zone) schedulers, re-upserts that neither duplicate nor
 * shift, refused upserts that leave the pending iteration in place, removal, validation and
 * reading back (get/list/count). The worker hook producing the next iteration is tested in
 * test_scheduler_next.c. */
#include "support/sc.h"

/* ---- stored layout ---------------------------------------------------------------------- */

static void test_every_exact_state(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "severy", NULL);
    ferry_scheduler_spec s = sc_every(1500);
    s.name = "tick";
    s.data_json = "{\"a\":1}";
    s.opts_json = "{\"attempts\":2,\"removeOnComplete\":3}";
    long long delay = -1;
    int64_t before = ferry__now_ms();
    char *job = sc_upsert(q, "every-1500", &s, &delay);
    int64_t after = ferry__now_ms();
    long long next = sc_millis_of(job);
    /* a new `every` scheduler without start/offset runs now (Node: delay 0, in wait) */
    assert_true(next >= before && next <= after);
    assert_int_equal(delay, 0);
    char want[2048], id[64];
    snprintf(id, sizeof id, "repeat:every-1500:%lld", next);
    assert_string_equal(job, id);
    snprintf(want, sizeof want,
             "data={\"a\":1};every=1500;ic=1;name=tick;offset=%lld;"
             "opts={\"attempts\":2,\"removeOnComplete\":3}",
             next % 1500);
    assert_string_equal(qt_hgetall(qt_key(q, "repeat:every-1500")), want);
    snprintf(want, sizeof want, "every-1500,%lld", next);
    assert_string_equal(qt_zrange(qt_key(q, "repeat")), want);
    long long ts = atoll(qt_hget(qt_key(q, job), "timestamp"));
    assert_int_equal(ts, next);
    snprintf(want, sizeof want,
             "data={\"a\":1};delay=0;name=tick;opts={\"attempts\":2,\"removeOnComplete\":3,"
             "\"repeat\":{\"every\":1500,\"count\":1},\"timestamp\":%lld,\"repeatJobKey\":"
             "\"every-1500\",\"jobId\":\"repeat:every-1500:%lld\",\"delay\":0};priority=0;"
             "rjk=every-1500;timestamp=%lld",
             ts, next, ts);
    assert_string_equal(qt_hgetall(qt_key(q, job)), want);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), job);
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "0,0");
    assert_string_equal(qt_get(qt_key(q, "id")), "1");
    snprintf(want, sizeof want, "added:jobId=%s:name=tick|waiting:jobId=%s", job, job);
    assert_string_equal(qt_events(q), want);
    free(job);
    ferry_queue_close(q);
}

static void test_cron_tz_exact_state(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "scron", NULL);
    ferry_scheduler_spec s = sc_cron("0 3 * * *", "Asia/Ho_Chi_Minh");
    s.name = "c";
    long long delay = -1;
    int64_t before = ferry__now_ms();
    char *job = sc_upsert(q, "s-cron", &s, &delay);
    long long next = sc_millis_of(job);
    /* 03:00 in Ho Chi Minh City (+07, no DST) is 20:00 UTC the day before */
    assert_int_equal(next % SC_DAY_MS, 20LL * 3600000);
    assert_true(next > before && next <= before + SC_DAY_MS);
    long long ts = atoll(qt_hget(qt_key(q, job), "timestamp"));
    assert_int_equal(delay, next - ts);
    assert_string_equal(qt_hgetall(qt_key(q, "repeat:s-cron")),
                        "ic=1;name=c;offset=0;pattern=0 3 * * *;tz=Asia/Ho_Chi_Minh");
    char want[2048];
    snprintf(want, sizeof want,
             "data={};delay=%lld;name=c;opts={\"repeat\":{\"pattern\":\"0 3 * * *\",\"tz\":"
             "\"Asia/Ho_Chi_Minh\",\"count\":1},\"timestamp\":%lld,\"prevMillis\":%lld,"
             "\"repeatJobKey\":\"s-cron\",\"jobId\":\"%s\",\"delay\":%lld};priority=0;"
             "rjk=s-cron;timestamp=%lld",
             delay, ts, next, job, delay, ts);
    assert_string_equal(qt_hgetall(qt_key(q, job)), want);
    snprintf(want, sizeof want, "%s,%lld", job, next * 4096);
    assert_string_equal(qt_zrange(qt_key(q, "delayed")), want);
    snprintf(want, sizeof want, "1,%lld", next);
    assert_string_equal(qt_zrange(qt_key(q, "marker")), want);
    snprintf(want, sizeof want, "added:jobId=%s:name=c|delayed:jobId=%s:delay=%lld", job, job,
             next);
    assert_string_equal(qt_events(q), want);

    /* a 6-field pattern with seconds, UTC */
    ferry_scheduler_spec s2 = sc_cron("*/2 * * * * *", "UTC");
    s2.name = "cronjob";
    s2.data_json = "{\"c\":true}";
    char *job2 = sc_upsert(q, "cron-2s", &s2, NULL);
    assert_int_equal(sc_millis_of(job2) % 2000, 0);
    assert_string_equal(qt_hgetall(qt_key(q, "repeat:cron-2s")),
                        "data={\"c\":true};ic=1;name=cronjob;offset=0;pattern=*/2 * * * * *;"
                        "tz=UTC");
    free(job2);
    free(job);
    ferry_queue_close(q);
}

static void test_limit_start_offset_priority_state(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "slimit", "{\"removeOnFail\":10}");
    int64_t now = ferry__now_ms();
    long long start = now + 3600000;
    ferry_scheduler_spec s = sc_every(60000);
    s.limit = 5;
    s.start_date_ms = start;
    long long delay = 0;
    char *job = sc_upsert(q, "limited", &s, &delay);
    assert_int_equal(sc_millis_of(job), start);
    assert_true(delay > 3590000 && delay <= 3600000);
    char want[2048];
    /* the queue's default job options are part of the template, as in Node */
    snprintf(want, sizeof want,
             "every=60000;ic=1;limit=5;name=limited;offset=%lld;opts={\"removeOnFail\":10};"
             "startDate=%lld",
             start % 60000, start);
    assert_string_equal(qt_hgetall(qt_key(q, "repeat:limited")), want);
    long long ts = atoll(qt_hget(qt_key(q, job), "timestamp"));
    snprintf(want, sizeof want,
             "{\"removeOnFail\":10,\"repeat\":{\"every\":60000,\"limit\":5,\"startDate\":%lld,"
             "\"count\":1},\"timestamp\":%lld,\"repeatJobKey\":\"limited\",\"jobId\":\"%s\","
             "\"delay\":%lld}",
             start, ts, job, delay);
    assert_string_equal(qt_hget(qt_key(q, job), "opts"), want);
    assert_string_equal(qt_hget(qt_key(q, job), "data"), "{}");
    free(job);

    /* offset aligns the slots; priority sends an immediate iteration to prioritized */
    ferry_scheduler_spec o = sc_every(10000);
    o.offset_ms = 2500;
    o.end_date_ms = now + 7200000;
    o.name = "o";
    o.opts_json = "{\"priority\":3,\"keepLogs\":5,\"backoff\":1000}";
    job = sc_upsert(q, "off", &o, NULL);
    assert_int_equal(sc_millis_of(job) % 10000, 2500);
    snprintf(want, sizeof want,
             "endDate=%lld;every=10000;ic=1;name=o;offset=2500;opts={\"removeOnFail\":10,"
             "\"priority\":3,\"kl\":5,\"backoff\":1000}",
             (long long)now + 7200000);
    assert_string_equal(qt_hgetall(qt_key(q, "repeat:off")), want);
    assert_string_equal(qt_hget(qt_key(q, job), "priority"), "3");
    free(job);

    ferry_scheduler_spec p = sc_cron("0 0 1 1 *", NULL);
    p.immediately = 1;
    p.opts_json = "{\"priority\":7}";
    delay = -1;
    job = sc_upsert(q, "imm", &p, &delay);
    assert_int_equal(delay, 0);
    assert_string_equal(qt_hget(qt_key(q, job), "name"), "imm"); /* name defaults to the id */
    assert_true(sc_zscore(qt_key(q, "prioritized"), job) > 7 * 4294967296.0);
    assert_string_equal(qt_hget(qt_key(q, "repeat:imm"), "tz"), "(nil)");
    free(job);
    ferry_queue_close(q);
}

/* ---- re-upsert, remove ------------------------------------------------------------------- */

static void test_reupsert_no_duplicates(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "sreup", NULL);
    ferry_scheduler_spec s = sc_every(60000);
    s.name = "e";
    char *a = sc_upsert(q, "s-every", &s, NULL);
    s.data_json = "{\"v\":2}";
    char *b = sc_upsert(q, "s-every", &s, NULL);
    assert_string_equal(a, b); /* same millis: the deploy did not shift the schedule */
    assert_string_equal(qt_lrange(qt_key(q, "wait")), b);
    assert_string_equal(qt_hget(qt_key(q, b), "data"), "{\"v\":2}");
    assert_string_equal(qt_hget(qt_key(q, "repeat:s-every"), "ic"), "1");
    assert_string_equal(qt_get(qt_key(q, "id")),
                        "2"); /* the counter moves on every upsert, as in Node */

    ferry_scheduler_spec c = sc_cron("0 3 * * *", "Asia/Ho_Chi_Minh");
    c.name = "c";
    char *x = sc_upsert(q, "s-cron", &c, NULL);
    char *y = sc_upsert(q, "s-cron", &c, NULL);
    assert_string_equal(x, y);
    char want[256];
    snprintf(want, sizeof want, "%s,%lld", y, sc_millis_of(y) * 4096);
    assert_string_equal(qt_zrange(qt_key(q, "delayed")), want);
    assert_string_equal(qt_hgetall(qt_key(q, "repeat:s-cron")),
                        "ic=1;name=c;offset=0;pattern=0 3 * * *;tz=Asia/Ho_Chi_Minh");

    /* a changed interval starts over; still one pending iteration */
    ferry_scheduler_spec s2 = sc_every(45000);
    s2.name = "e";
    char *z = sc_upsert(q, "s-every", &s2, NULL);
    assert_string_equal(qt_hget(qt_key(q, "repeat:s-every"), "every"), "45000");
    assert_string_equal(qt_lrange(qt_key(q, "wait")), z);
    assert_int_equal(sc_zscore(qt_key(q, "repeat"), "s-every"), sc_millis_of(z));
    /* switching from every to a pattern */
    ferry_scheduler_spec c2 = sc_cron("30 4 * * *", "UTC");
    char *w = sc_upsert(q, "s-every", &c2, NULL);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "");
    assert_int_equal(sc_millis_of(w) % SC_DAY_MS, 4LL * 3600000 + 30 * 60000);
    assert_string_equal(qt_hget(qt_key(q, "repeat:s-every"), "every"), "(nil)");
    assert_string_equal(qt_hget(qt_key(q, "repeat:s-every"), "pattern"), "30 4 * * *");
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(q, "delayed"))), 2);
    free(a), free(b), free(x), free(y), free(z), free(w);
    ferry_queue_close(q);
}

static void test_reupsert_keeps_running_iteration(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "srun", NULL);
    ferry_scheduler_spec s = sc_every(60000);
    char *a = sc_upsert(q, "r", &s, NULL);
    sc_fetched f = sc_fetch(q, a); /* the iteration is running: it cannot be replaced */
    char *b = sc_upsert(q, "r", &s, NULL);
    assert_int_equal(sc_millis_of(b), sc_millis_of(a) + 60000);
    assert_string_equal(qt_lrange(qt_key(q, "active")), a);
    assert_string_equal(qt_hget(qt_key(q, a), "rjk"), "r");
    /* the running one is no longer current: its worker produces nothing */
    ferry__sched_result res = sc_on_fetch(q, &f, ferry__now_ms());
    assert_int_equal(res.outcome, FERRY__SCHED_NOT_CURRENT);
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(q, "delayed"))), 1);
    free(a), free(b);
    ferry_queue_close(q);
}

/* A cron iteration promoted and completed early holds its slot: upserting the same pattern
 * again before that time computes that slot, which is refused (-10) - and the scheduler's
 * pending next iteration must survive the refusal, or the schedule would never run again. */
static void test_reupsert_refused_keeps_pending(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "scol", NULL);
    ferry_scheduler_spec c = sc_cron("0 3 * * *", "UTC");
    char *t1 = sc_upsert(q, "c", &c, NULL);
    sc_fetched f = sc_fetch(q, t1); /* promoted and run early */
    ferry__sched_result res = sc_on_fetch(q, &f, ferry__now_ms());
    assert_int_equal(res.outcome, FERRY__SCHED_PRODUCED);
    freeReplyObject(qt_cmd("LREM %s 0 %s", qt_key(q, "active"), t1));
    freeReplyObject(qt_cmd("ZADD %s 1 %s", qt_key(q, "completed"), t1));
    redisReply *r = qt_cmd("ZRANGE %s 0 -1", qt_key(q, "delayed"));
    assert_int_equal(r->elements, 1);
    char t2[256];
    snprintf(t2, sizeof t2, "%s", r->element[0]->str);
    freeReplyObject(r);
    assert_int_equal(sc_millis_of(t2), sc_millis_of(t1) + SC_DAY_MS);

    sc_upsert_fail(q, "c", &c, FERRY_ESTATE, "");
    char want[300];
    snprintf(want, sizeof want, "%s,%lld", t2, sc_millis_of(t2) * 4096);
    assert_string_equal(qt_zrange(qt_key(q, "delayed")), want);
    assert_int_equal(sc_zscore(qt_key(q, "repeat"), "c"), sc_millis_of(t2));
    assert_string_equal(qt_hget(qt_key(q, t2), "rjk"), "c");
    free(t1);
    ferry_queue_close(q);
}

/* Everything an upsert of scheduler `id` may touch, as one string (malloc'd; caller frees). */
static char *sched_snapshot(ferry_queue *q, const char *id, const char *job) {
    char key[256], *out = NULL;
    snprintf(key, sizeof key, "repeat:%s", id);
    size_t cap = 4 * 16384 + 65536 + 8 * 65536;
    out = malloc(cap);
    assert_non_null(out);
    int n = snprintf(out, cap, "sched[%s] ", qt_hgetall(qt_key(q, key)));
    n += snprintf(out + n, cap - (size_t)n, "job[%s] ", qt_hgetall(qt_key(q, job)));
    n += snprintf(out + n, cap - (size_t)n, "repeat[%s] ", qt_zrange(qt_key(q, "repeat")));
    n += snprintf(out + n, cap - (size_t)n, "delayed[%s] ", qt_zrange(qt_key(q, "delayed")));
    n += snprintf(out + n, cap - (size_t)n, "wait[%s] ", qt_lrange(qt_key(q, "wait")));
    n += snprintf(out + n, cap - (size_t)n, "id[%s] ", qt_get(qt_key(q, "id")));
    snprintf(out + n, cap - (size_t)n, "events[%s]", qt_events(q));
    return out;
}

/* A changed `every` starts over at startDate; when that slot and the 32 after it are all
 * held by job hashes (finished iterations of an earlier scheduler with this id), the
 * upsert is refused (-11) - and, as for a pattern, before the pending iteration is deleted:
 * otherwise the scheduler would be left with no next run. A pending iteration among the
 * scanned slots is no obstacle (it is the one being replaced); a running one is. */
static void test_every_change_refused_keeps_pending(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "sevref", NULL);
    long long start = ferry__now_ms() + 3600000;
    ferry_scheduler_spec s = sc_every(60000);
    s.start_date_ms = start;
    char *cur = sc_upsert(q, "ev", &s, NULL);
    assert_int_equal(sc_millis_of(cur), start);

    /* every 30 s from 10 minutes later: the first slot and the 32 scanned after it held */
    long long start2 = start + 600000;
    for (long long i = 0; i <= 32; i++)
        freeReplyObject(
            qt_cmd("HSET %s:%lld name old", qt_key(q, "repeat:ev"), start2 + i * 30000));
    char *before = sched_snapshot(q, "ev", cur);
    ferry_scheduler_spec s2 = sc_every(30000);
    s2.start_date_ms = start2;
    sc_upsert_fail(q, "ev", &s2, FERRY_ESTATE, "the next slot and the 32 after it are held");
    char *after = sched_snapshot(q, "ev", cur);
    assert_string_equal(after, before); /* nothing touched */
    assert_string_equal(qt_hget(qt_key(q, "repeat:ev"), "every"), "60000");
    assert_int_equal(sc_zscore(qt_key(q, "repeat"), "ev"), start);
    assert_true(sc_zscore(qt_key(q, "delayed"), cur) >= 0);
    assert_string_equal(qt_hget(qt_key(q, cur), "rjk"), "ev");
    free(before), free(after);

    /* 32 held slots, then the pending iteration's own slot (the last one scanned): it is
     * replaced in place */
    for (long long i = 1; i <= 32; i++)
        freeReplyObject(qt_cmd("HSET %s:%lld name old", qt_key(q, "repeat:ev"), start - i * 30000));
    s2.start_date_ms = start - 32 * 30000;
    char *same = sc_upsert(q, "ev", &s2, NULL);
    assert_string_equal(same, cur);
    assert_string_equal(qt_hget(qt_key(q, "repeat:ev"), "every"), "30000");
    char want[512];
    snprintf(want, sizeof want, "ev,%lld", start);
    assert_string_equal(qt_zrange(qt_key(q, "repeat")), want);
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(q, "delayed"))), 1);
    assert_true(sc_zscore(qt_key(q, "delayed"), cur) >= 0);
    snprintf(want, sizeof want, "%s:%lld", qt_key(q, "repeat:ev"), start - 30000);
    assert_string_equal(qt_hget(want, "name"), "old"); /* the held slots are left alone */

    /* once it runs, that slot is held like the others: the next free one is taken */
    sc_fetched f = sc_fetch(q, cur);
    ferry_scheduler_spec s3 = sc_every(30000 * 16); /* start - 8 min held, start running */
    s3.start_date_ms = start - 16 * 30000;
    char *next = sc_upsert(q, "ev", &s3, NULL);
    assert_int_equal(sc_millis_of(next), start + 16 * 30000);
    assert_string_equal(qt_lrange(qt_key(q, "active")), f.id);
    assert_string_equal(qt_hget(qt_key(q, f.id), "rjk"), "ev");
    free(cur), free(same), free(next);
    ferry_queue_close(q);
}

static void test_remove(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "srm", NULL);
    ferry_scheduler_spec c = sc_cron("0 3 * * *", "Asia/Ho_Chi_Minh");
    char *job = sc_upsert(q, "s-cron", &c, NULL);
    ferry_error e = {0};
    assert_int_equal(ferry_scheduler_remove(q, "s-cron", &e), 0);
    assert_string_equal(qt_zrange(qt_key(q, "delayed")), "");
    assert_string_equal(qt_zrange(qt_key(q, "repeat")), "");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s", qt_key(q, "repeat:s-cron"), qt_key(q, job))),
                     0);
    char want[512];
    snprintf(want, sizeof want, "removed:jobId=%s:prev=delayed", job);
    assert_true(sc_has_event(q, want));
    assert_int_equal(ferry_scheduler_remove(q, "s-cron", &e), FERRY_ENOTFOUND);
    assert_non_null(strstr(e.message, "no job scheduler 's-cron'"));
    free(job);

    /* an `every` iteration already waiting is removed too (Node leaves it to run once) */
    ferry_scheduler_spec s = sc_every(5000);
    job = sc_upsert(q, "ev", &s, NULL);
    assert_int_equal(ferry_scheduler_remove(q, "ev", &e), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "");
    snprintf(want, sizeof want, "removed:jobId=%s:prev=wait", job);
    assert_true(sc_has_event(q, want));
    free(job);

    /* a running iteration is left alone and produces nothing after the removal */
    job = sc_upsert(q, "ev2", &s, NULL);
    sc_fetched f = sc_fetch(q, job);
    assert_int_equal(ferry_scheduler_remove(q, "ev2", &e), 0);
    assert_string_equal(qt_lrange(qt_key(q, "active")), job);
    assert_int_equal(sc_on_fetch(q, &f, ferry__now_ms()).outcome, FERRY__SCHED_NOT_CURRENT);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "repeat:ev2"))), 0);
    free(job);
    ferry_queue_close(q);
}

/* ---- validation --------------------------------------------------------------------------- */

static void test_validation(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "sval", NULL);
    ferry_scheduler_spec s = sc_cron("0 3 * * *", NULL);
    s.every_ms = 1000;
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "either every or pattern, not both");
    ferry_scheduler_spec none;
    ferry_scheduler_spec_init(&none);
    sc_upsert_fail(q, "x", &none, FERRY_EINVAL, "give every (ms) or a cron pattern");
    s = sc_every(-5);
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "every -5 ms is out of range");
    s = sc_every(FERRY_SCHEDULER_EVERY_MAX + 1);
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "out of range");
    s = sc_cron("0 25 * * *", NULL);
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "hour field");
    s = sc_cron("* * *", NULL);
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "has 3 fields");
    s = sc_cron("0 3 * * *", "Mars/Olympus_Mons");
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "Mars/Olympus_Mons");
    s = sc_cron("0 0 31 2,4 *", NULL);
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "has no run time");
    s = sc_cron("0 3 * * *", NULL);
    s.end_date_ms = ferry__now_ms() - 1000;
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "end_date_ms");
    s.end_date_ms = ferry__now_ms() + 1000; /* before the next 03:00 (unless it is 02:59:59) */
    s.pattern = "0 0 1 1 *";
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "no run time before end_date");
    s = sc_cron("0 3 * * *", NULL);
    s.immediately = 1;
    s.start_date_ms = ferry__now_ms() + 1000;
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "immediately and start_date");
    s = sc_cron("0 3 * * *", NULL);
    s.offset_ms = 10;
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "offset applies to every only");
    s = sc_every(1000);
    s.limit = -1;
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "limit -1 is out of range");
    s = sc_every(1000);
    s.start_date_ms = -1;
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "start_date_ms -1");
    s.start_date_ms = 4000000000000LL;
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "2039-09");
    s = sc_every(1000);
    s.data_json = "{\"a\":";
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "job data: invalid JSON");
    s.data_json = NULL;
    const char *bad_opts[][2] = {{"{\"jobId\":\"j\"}", "opts.jobId cannot be set"},
                                 {"{\"repeat\":{\"every\":5}}", "opts.repeat cannot be set"},
                                 {"{\"delay\":5}", "opts.delay cannot be set"},
                                 {"{\"attempts\":\"3\"}", "opts.attempts"},
                                 {"[1]", "opts"}};
    for (size_t i = 0; i < sizeof bad_opts / sizeof bad_opts[0]; i++) {
        s.opts_json = bad_opts[i][0];
        sc_upsert_fail(q, "x", &s, FERRY_EINVAL, bad_opts[i][1]);
    }
    s.opts_json = NULL;
    sc_upsert_fail(q, "", &s, FERRY_EINVAL, "scheduler id is empty");
    sc_upsert_fail(q, NULL, &s, FERRY_EINVAL, "scheduler id is empty");
    char big[FERRY_SCHEDULER_ID_MAX + 2];
    memset(big, 'i', sizeof big - 1);
    big[sizeof big - 1] = 0;
    sc_upsert_fail(q, big, &s, FERRY_ETOOBIG, "scheduler id is 1025 bytes");
    sc_upsert_fail(q, "\xff\xfe", &s, FERRY_EINVAL, "UTF-8");
    char *data = malloc(FERRY_DEFAULT_MAX_PAYLOAD + 16);
    memset(data, ' ', FERRY_DEFAULT_MAX_PAYLOAD + 15);
    data[0] = '1';
    data[FERRY_DEFAULT_MAX_PAYLOAD + 15] = 0;
    s.data_json = data;
    sc_upsert_fail(q, "x", &s, FERRY_ETOOBIG, "job data is");
    free(data);
    ferry_error e = {0};
    assert_int_equal(ferry_scheduler_upsert(NULL, "x", &s, NULL, NULL, &e), FERRY_EINVAL);
    /* nothing was written by any of these */
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s", qt_key(q, "repeat"), qt_key(q, "id"))), 0);
    ferry_queue_close(q);
}

/* ---- reading back -------------------------------------------------------------------------- */

static void test_get_list_count(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "slist", NULL);
    ferry_scheduler_spec a = sc_cron("0 3 * * *", "Asia/Ho_Chi_Minh");
    a.name = "nightly";
    a.data_json = "{\"k\":[1,2]}";
    a.opts_json = "{\"attempts\":3}";
    a.limit = 9;
    free(sc_upsert(q, "a", &a, NULL));
    ferry_scheduler_spec b = sc_every(1000);
    free(sc_upsert(q, "b", &b, NULL));
    /* a `repeat` entry with no hash (e.g. a legacy repeatable job) */
    freeReplyObject(qt_cmd("ZADD %s 5 legacy", qt_key(q, "repeat")));

    ferry_scheduler_info *i = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_scheduler_get(q, "a", &i, &e), 0);
    assert_string_equal(i->id, "a");
    assert_string_equal(i->name, "nightly");
    assert_string_equal(i->pattern, "0 3 * * *");
    assert_string_equal(i->tz, "Asia/Ho_Chi_Minh");
    assert_string_equal(i->data_json, "{\"k\":[1,2]}");
    assert_string_equal(i->opts_json, "{\"attempts\":3}");
    assert_int_equal(i->limit, 9);
    assert_int_equal(i->iteration_count, 1);
    assert_int_equal(i->every_ms, 0);
    assert_int_equal(i->next_ms % SC_DAY_MS, 20LL * 3600000);
    assert_int_equal(i->offset_ms, 0); /* stored "0": present, as Node reports it */
    ferry_scheduler_info_free(i);
    assert_int_equal(ferry_scheduler_get(q, "nope", &i, &e), FERRY_ENOTFOUND);
    assert_null(i);

    long long n = 0;
    assert_int_equal(ferry_scheduler_count(q, &n, &e), 0);
    assert_int_equal(n, 3);
    ferry_scheduler_info *items = NULL;
    size_t got = 0;
    assert_int_equal(ferry_scheduler_list(q, 0, 10, 1, &items, &got, &e), 0);
    assert_int_equal(got, 3);
    assert_string_equal(items[0].id, "legacy");
    assert_null(items[0].name);
    assert_int_equal(items[0].offset_ms, -1);
    assert_string_equal(items[1].id, "b");
    assert_int_equal(items[1].every_ms, 1000);
    assert_null(items[1].data_json);
    assert_string_equal(items[2].id, "a");
    ferry_scheduler_list_free(items, got);
    assert_int_equal(ferry_scheduler_list(q, 1, 1, 0, &items, &got, &e), 0); /* descending */
    assert_int_equal(got, 1);
    assert_string_equal(items[0].id, "b");
    ferry_scheduler_list_free(items, got);
    assert_int_equal(ferry_scheduler_list(q, 3, 5, 0, &items, &got, &e), 0);
    assert_int_equal(got, 0);
    assert_null(items);
    assert_int_equal(ferry_scheduler_list(q, 0, 0, 0, &items, &got, &e), FERRY_EINVAL);
    assert_int_equal(ferry_scheduler_list(q, 0, FERRY_SCHEDULER_LIST_MAX + 1, 0, &items, &got, &e),
                     FERRY_EINVAL);
    ferry_queue_close(q);
}

/* limit and end_date_ms stop at JavaScript's safe integers, as the CLI does. */
static void test_validation_js_bounds(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "sjsmax", NULL);
    ferry_scheduler_spec s = sc_every(1000);
    s.limit = FERRY_SCHEDULER_NUM_MAX + 1;
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL,
                   "limit 9007199254740992 is out of range 0..9007199254740991");
    s = sc_every(1000);
    s.end_date_ms = 9000000000000000000LL;
    sc_upsert_fail(q, "x", &s, FERRY_EINVAL, "end_date_ms 9000000000000000000 is out of range");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "repeat"))), 0);
    /* the largest are taken and stored as given */
    s = sc_every(1000);
    s.limit = FERRY_SCHEDULER_NUM_MAX;
    s.end_date_ms = FERRY_SCHEDULER_NUM_MAX;
    free(sc_upsert(q, "max", &s, NULL));
    assert_string_equal(qt_hget(qt_key(q, "repeat:max"), "limit"), "9007199254740991");
    assert_string_equal(qt_hget(qt_key(q, "repeat:max"), "endDate"), "9007199254740991");
    ferry_queue_close(q);
}

/* Node-written ids longer than upsert takes: ferry lists and continues such a scheduler, so
 * it reads and removes it too. */
static void test_get_remove_long_id(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "slongid", NULL);
    ferry_error e = {0};
    size_t len = 5000;
    char *id = malloc(FERRY_SCHEDULER_FOREIGN_ID_MAX + 2);
    memset(id, 'n', len);
    id[len] = 0;
    freeReplyObject(qt_cmd("ZADD %s 1795979227000 %s", qt_key(q, "repeat"), id));
    freeReplyObject(qt_cmd("HSET %s%s name long every 1000 ic 3", qt_key(q, "repeat:"), id));
    ferry_scheduler_info *i = NULL;
    assert_int_equal(ferry_scheduler_get(q, id, &i, &e), 0);
    assert_string_equal(i->id, id);
    assert_string_equal(i->name, "long");
    assert_int_equal(i->every_ms, 1000);
    assert_int_equal(i->next_ms, 1795979227000LL);
    ferry_scheduler_info_free(i);
    assert_int_equal(ferry_scheduler_remove(q, id, &e), 0);
    assert_int_equal(
        qt_ival(qt_cmd("EXISTS %s %s%s", qt_key(q, "repeat"), qt_key(q, "repeat:"), id)), 0);
    assert_int_equal(ferry_scheduler_get(q, id, &i, &e), FERRY_ENOTFOUND);
    memset(id, 'n', FERRY_SCHEDULER_FOREIGN_ID_MAX + 1);
    id[FERRY_SCHEDULER_FOREIGN_ID_MAX + 1] = 0;
    assert_int_equal(ferry_scheduler_get(q, id, &i, &e), FERRY_ETOOBIG);
    assert_non_null(strstr(e.message, "limit 65536"));
    assert_int_equal(ferry_scheduler_remove(q, id, &e), FERRY_ETOOBIG);

    /* an iteration of a scheduler with an id of the longest upsert takes is over the 1024
     * bytes of a plain job id: get and remove still take it */
    memset(id, 'u', FERRY_SCHEDULER_ID_MAX);
    id[FERRY_SCHEDULER_ID_MAX] = 0;
    ferry_scheduler_spec s = sc_every(60000);
    char *job = sc_upsert(q, id, &s, NULL);
    assert_true(strlen(job) > 1024);
    ferry_job_info *ji = NULL;
    if (ferry_queue_get_job(q, job, &ji, &e)) fail_msg("get_job: %s", e.message);
    assert_string_equal(ji->id, job);
    ferry_job_info_free(ji);
    assert_int_equal(ferry_queue_remove_job(q, job, &e), FERRY_ESTATE); /* the pending one */
    free(job);
    free(id);
    ferry_queue_close(q);
}

/* Scores outside long long (a client may write any): clamped, not cast. */
static void test_get_list_odd_scores(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "sscores", NULL);
    ferry_error e = {0};
    ferry_scheduler_info *i = NULL;
    freeReplyObject(qt_cmd("ZADD %s inf hi -inf lo 1e300 big", qt_key(q, "repeat")));
    assert_int_equal(ferry_scheduler_get(q, "hi", &i, &e), 0);
    assert_int_equal(i->next_ms, 9007199254740991LL);
    ferry_scheduler_info_free(i);
    assert_int_equal(ferry_scheduler_get(q, "lo", &i, &e), 0);
    assert_int_equal(i->next_ms, -9007199254740991LL);
    ferry_scheduler_info_free(i);
    ferry_scheduler_info *items = NULL;
    size_t got = 0;
    assert_int_equal(ferry_scheduler_list(q, 0, 10, 1, &items, &got, &e), 0);
    assert_int_equal(got, 3);
    assert_int_equal(items[0].next_ms, -9007199254740991LL);
    assert_int_equal(items[1].next_ms, 9007199254740991LL);
    assert_int_equal(items[2].next_ms, 9007199254740991LL);
    ferry_scheduler_list_free(items, got);
    ferry_queue_close(q);
}

/* A key of the wrong type: get says Redis's WRONGTYPE, as list does. */
static void test_get_wrongtype(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "swrongt", NULL);
    ferry_error e = {0};
    ferry_scheduler_info *i = NULL, *items = NULL;
    size_t got = 0;
    freeReplyObject(qt_cmd("ZADD %s 5 hi", qt_key(q, "repeat")));
    freeReplyObject(qt_cmd("SET %s x", qt_key(q, "repeat:hi")));
    assert_int_equal(ferry_scheduler_get(q, "hi", &i, &e), FERRY_EREDIS);
    assert_non_null(strstr(e.message, "WRONGTYPE"));
    assert_null(i);
    assert_int_equal(ferry_scheduler_list(q, 0, 10, 1, &items, &got, &e), FERRY_EREDIS);
    assert_non_null(strstr(e.message, "WRONGTYPE"));
    /* the `repeat` key itself */
    freeReplyObject(qt_cmd("DEL %s", qt_key(q, "repeat")));
    freeReplyObject(qt_cmd("SET %s x", qt_key(q, "repeat")));
    assert_int_equal(ferry_scheduler_get(q, "hi", &i, &e), FERRY_EREDIS);
    assert_non_null(strstr(e.message, "WRONGTYPE"));
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_exact_state),
        cmocka_unit_test(test_cron_tz_exact_state),
        cmocka_unit_test(test_limit_start_offset_priority_state),
        cmocka_unit_test(test_reupsert_no_duplicates),
        cmocka_unit_test(test_reupsert_keeps_running_iteration),
        cmocka_unit_test(test_reupsert_refused_keeps_pending),
        cmocka_unit_test(test_every_change_refused_keeps_pending),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_get_list_count),
        cmocka_unit_test(test_validation_js_bounds),
        cmocka_unit_test(test_get_remove_long_id),
        cmocka_unit_test(test_get_list_odd_scores),
        cmocka_unit_test(test_get_wrongtype),
    };
    return cmocka_run_group_tests(tests, qt_setup, qt_teardown);
}

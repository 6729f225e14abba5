/* test_queue_retry_select.c - ferry_queue_retry_selected against a real Redis: jobs failed
 * by a real worker run retried by name, failed reason and data text (only the matches move,
 * with Job.retry's fields and events), pages of hand-written finished jobs with jobs moved
 * by another client between pages and new failures not chased, a cancel midway, scan_max,
 * another client retrying the same set at the same time, stray members, selectors matching
 * nothing, the bad input it refuses without changing anything, jobs trimmed ahead of and
 * behind the cursor between pages (none skipped, none twice), more jobs at one finishedOn
 * than a page, what a page reads inside Redis (MONITOR: data only with a data text) and
 * a page's byte budget. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/qt.h"
#include "support/wt.h"

/* ---- jobs failed by a real worker ---------------------------------------------------- */

/* Fails every job: "timeout talking to bank" for odd data n, "card declined" for even. */
static ferry_outcome failing(ferry_job *job, void *ud) {
    (void)ud;
    int odd = strstr(ferry_job_data(job), "\"odd\":true") != NULL;
    ferry_job_set_failure(job, odd ? "timeout talking to bank" : "card declined", NULL);
    return FERRY_FAILED_PERMANENT;
}

/* 30 jobs through a real worker: i < 20 "charge", else "refund"; data {"n":i,"odd":bool,
 * "customer":"c<i % 3>"}; all failed. */
static void make_failed_by_worker(wt *t) {
    for (int i = 0; i < 30; i++) {
        char data[128];
        snprintf(data, sizeof data, "{\"n\":%d,\"odd\":%s,\"customer\":\"c%d\"}", i,
                 i % 2 ? "true" : "false", i % 3);
        free(wt_add(t, i < 20 ? "charge" : "refund", data, NULL));
    }
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(t, &o, &ro);
    ferry_worker *w = wt_start(&o, failing, NULL);
    WT_WAIT_ZCARD(t, "failed", 30);
    wt_stop(w);
}

static long long zcard(wt *t, const char *suffix) {
    return th_cmd_int(t->c, "ZCARD %s%s", t->base, suffix);
}
static long long llen(wt *t, const char *suffix) {
    return th_cmd_int(t->c, "LLEN %s%s", t->base, suffix);
}

static int in_failed(wt *t, const char *id) {
    char *s = wt_zscore(t, "failed", id);
    free(s);
    return s != NULL;
}

/* The ids 1..30 the worker run made: which moved must be exactly `want(i)`. */
static void expect_moved(wt *t, int (*want)(int i)) {
    for (int i = 0; i < 30; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", i + 1);
        if (in_failed(t, id) == want(i)) fail_msg("job %s (n %d): moved %d", id, i, !want(i));
    }
}

static int refund_timeouts(int i) {
    return i >= 20 && i % 2;
}
static int refund_timeouts_or_c1(int i) {
    return refund_timeouts(i) || i % 3 == 1;
}

static void test_selectors_on_worker_failures(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    make_failed_by_worker(&t);
    ferry_error e = {0};
    ferry_queue_retry_counts c;
    int ended = -1;

    /* Matching nothing moves nothing. */
    ferry_queue_retry_select none = {.name = "charge", .reason_contains = "no such reason"};
    assert_int_equal(ferry_queue_retry_selected(t.q, &none, &c, &ended, &e), 0);
    assert_int_equal(ended, FERRY_RETRY_SELECT_DONE);
    assert_int_equal(c.total, 30);
    assert_int_equal(c.scanned, 30);
    assert_int_equal(c.matched, 0);
    assert_int_equal(c.retried, 0);
    assert_int_equal(zcard(&t, "failed"), 30);
    ferry_queue_retry_select nobody = {.name = "charg"}; /* exact names only */
    assert_int_equal(ferry_queue_retry_selected(t.q, &nobody, &c, NULL, &e), 0);
    assert_int_equal(c.matched, 0);

    /* Name and reason: the refunds that timed out (n 21, 23, ..., 29). */
    long long ev0 = th_cmd_int(t.c, "XLEN %sevents", t.base);
    ferry_queue_retry_select sel = {.name = "refund", .reason_contains = "timeout"};
    assert_int_equal(ferry_queue_retry_selected(t.q, &sel, &c, &ended, &e), 0);
    assert_int_equal(ended, FERRY_RETRY_SELECT_DONE);
    assert_int_equal(c.total, 30);
    assert_int_equal(c.scanned, 30);
    assert_int_equal(c.matched, 5);
    assert_int_equal(c.retried, 5);
    assert_int_equal(c.skipped, 0);
    assert_int_equal(zcard(&t, "failed"), 25);
    assert_int_equal(llen(&t, "wait"), 5);
    expect_moved(&t, refund_timeouts);
    /* As Job.retry leaves them: finish fields gone, a waiting event with prev failed. */
    wt_expect_field(&t, "22", "failedReason", NULL);
    wt_expect_field(&t, "22", "finishedOn", NULL);
    wt_expect_field(&t, "22", "name", "refund");
    assert_int_equal(th_cmd_int(t.c, "XLEN %sevents", t.base), ev0 + 5);
    char *ev = wt_events(&t, "22", "prev");
    assert_non_null(strstr(ev, "waiting(prev=failed)"));
    free(ev);
    /* Oldest first: each retried job goes where Job.retry puts it, so the wait list holds
     * them in retry order (LPUSH: the first retried is at the tail). */
    assert_string_equal(qt_lrange(qt_key(t.q, "wait")), "30,28,26,24,22");

    /* Data text: customer c1 (n 1, 4, 7, ...); completed jobs are not looked at. */
    ferry_queue_retry_select data = {.data_contains = "\"customer\":\"c1\""};
    assert_int_equal(ferry_queue_retry_selected(t.q, &data, &c, &ended, &e), 0);
    assert_int_equal(c.total, 25);
    assert_int_equal(c.scanned, 25);
    assert_int_equal(c.matched, 9); /* n 1,4,...,28 = 10, minus 25 (retried above) */
    assert_int_equal(c.retried, 9);
    expect_moved(&t, refund_timeouts_or_c1);

    /* The completed state: none there. */
    ferry_queue_retry_select comp = {.state = "completed"};
    assert_int_equal(ferry_queue_retry_selected(t.q, &comp, &c, &ended, &e), 0);
    assert_int_equal(c.total, 0);
    assert_int_equal(c.scanned, 0);
    wt_fini(&t);
}

/* ---- pages of hand-written finished jobs --------------------------------------------- */

/* n failed jobs j0..j<n-1>, finished at base_ms + i (oldest first), data {"i":i,"even":b}. */
static void put_failed(ferry_queue *q, int n, long long base_ms) {
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "j%d", i);
        freeReplyObject(qt_cmd("HSET %s name n data {\"i\":%d,\"even\":%s} opts {} timestamp %lld "
                               "delay 0 priority 0 processedOn %lld finishedOn %lld atm 1 ats 1 "
                               "failedReason boom%d",
                               qt_key(q, id), i, i % 2 ? "false" : "true", base_ms - 10,
                               base_ms + i - 1, base_ms + i, i));
        freeReplyObject(qt_cmd("ZADD %s %lld %s", qt_key(q, "failed"), base_ms + i, id));
    }
}

struct mover {
    ferry_queue *q;
    int calls;
    long long scanned_at[64];
    int cancel_after; /* cancel on this call (0 = never) */
};

/* After the first page: another client retries j300..j309 (in the next pages), deletes
 * j201's hash and set entry, and a job fails anew (after the start: not chased). */
static int move_between_pages(void *ctx, const ferry_queue_retry_counts *so_far) {
    struct mover *m = ctx;
    m->scanned_at[m->calls < 64 ? m->calls : 63] = so_far->scanned;
    if (++m->calls == 1) {
        ferry_error e = {0};
        for (int i = 300; i < 310; i++) {
            char id[32];
            snprintf(id, sizeof id, "j%d", i);
            assert_int_equal(ferry_queue_retry_job(m->q, id, "failed", 0, NULL, &e), 0);
        }
        assert_int_equal(ferry_queue_remove_job(m->q, "j201", &e), 0);
        freeReplyObject(qt_cmd("HSET %s name n data {\"even\":true} timestamp 1 finishedOn %lld",
                               qt_key(m->q, "late"), (long long)ferry__now_ms() + 60000));
        freeReplyObject(qt_cmd("ZADD %s %lld late", qt_key(m->q, "failed"),
                               (long long)ferry__now_ms() + 60000));
    }
    return m->cancel_after && m->calls >= m->cancel_after;
}

static void test_pages_with_moves_between_them(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "pages", NULL);
    long long t0 = (long long)ferry__now_ms() - 100000;
    put_failed(q, 1000, t0);
    struct mover m = {q, 0, {0}, 0};
    ferry_queue_retry_select sel = {
        .data_contains = "\"even\":true", .progress = move_between_pages, .progress_ctx = &m};
    ferry_queue_retry_counts c;
    int ended = -1;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_retry_selected(q, &sel, &c, &ended, &e), 0);
    assert_int_equal(ended, FERRY_RETRY_SELECT_DONE);
    assert_int_equal(c.total, 1000);
    assert_int_equal(m.calls, 5); /* pages of 200: the last one short */
    assert_int_equal(m.scanned_at[0], 200);
    /* 1000 - 10 retried by the other client - 1 removed; "late" is not looked at. */
    assert_int_equal(c.scanned, 989);
    assert_int_equal(c.matched, 495); /* 500 even, 5 of them taken by the other client */
    assert_int_equal(c.retried, 495);
    assert_int_equal(c.skipped, 0);
    /* Left in failed: the odd ones (minus the 5 odd j30x and j201) and "late". */
    assert_int_equal(th_cmd_int(qt_conn, "ZCARD %s", qt_key(q, "failed")), 500 - 5 - 1 + 1);
    assert_int_equal(th_cmd_int(qt_conn, "LLEN %s", qt_key(q, "wait")), 495 + 10);
    assert_string_equal(qt_hget(qt_key(q, "j998"), "failedReason"), "(nil)");
    assert_string_equal(qt_hget(qt_key(q, "j999"), "failedReason"), "boom999");
    char *late = th_zscore(qt_conn, qt_key(q, "failed"), "late");
    assert_non_null(late);
    free(late);
    ferry_queue_close(q);
}

static void test_cancel_and_scan_max(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "cancel", NULL);
    put_failed(q, 1000, (long long)ferry__now_ms() - 100000);
    struct mover m = {q, 0, {0}, 2};
    m.calls = 1; /* no moves: only the cancel on the second page's callback */
    ferry_queue_retry_select sel = {.progress = move_between_pages, .progress_ctx = &m};
    ferry_queue_retry_counts c;
    int ended = -1;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_retry_selected(q, &sel, &c, &ended, &e), 0);
    assert_int_equal(ended, FERRY_RETRY_SELECT_CANCELLED);
    assert_int_equal(c.scanned, 200);
    assert_int_equal(c.retried, 200);
    assert_int_equal(th_cmd_int(qt_conn, "ZCARD %s", qt_key(q, "failed")), 800);
    /* The oldest went first. */
    assert_null(th_zscore(qt_conn, qt_key(q, "failed"), "j199"));
    char *s = th_zscore(qt_conn, qt_key(q, "failed"), "j200");
    assert_non_null(s);
    free(s);

    /* scan_max bounds what is looked at, not what is matched. */
    ferry_queue_retry_select bounded = {.scan_max = 250, .data_contains = "\"even\":false"};
    assert_int_equal(ferry_queue_retry_selected(q, &bounded, &c, &ended, &e), 0);
    assert_int_equal(ended, FERRY_RETRY_SELECT_SCAN_MAX);
    assert_int_equal(c.total, 800);
    assert_int_equal(c.scanned, 250);
    assert_int_equal(c.retried, 125);
    assert_int_equal(th_cmd_int(qt_conn, "ZCARD %s", qt_key(q, "failed")), 675);
    ferry_queue_close(q);
}

/* ---- another client on the same set --------------------------------------------------- */

struct bulk {
    ferry_queue *q;
    long long moved;
    int rc;
};

static void *bulk_retry(void *arg) {
    struct bulk *b = arg;
    ferry_error e = {0};
    th_sleep_ms(2);
    b->rc = ferry_queue_retry_jobs(b->q, "failed", 0, &b->moved, &e);
    return NULL;
}

static void test_concurrent_retry_of_the_same_set(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, "race", NULL);
    ferry_queue *other = qt_open(prefix, "race", NULL);
    put_failed(q, 3000, (long long)ferry__now_ms() - 100000);
    struct bulk b = {other, 0, -1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, bulk_retry, &b), 0);
    ferry_queue_retry_counts c;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_retry_selected(q, NULL, &c, NULL, &e), 0);
    pthread_join(th, NULL);
    assert_int_equal(b.rc, 0);
    /* Every job went back exactly once, whoever moved it. */
    assert_int_equal(c.matched, c.retried + c.skipped);
    assert_int_equal(c.retried + b.moved, 3000);
    assert_int_equal(th_cmd_int(qt_conn, "ZCARD %s", qt_key(q, "failed")), 0);
    assert_int_equal(th_cmd_int(qt_conn, "LLEN %s", qt_key(q, "wait")), 3000);
    ferry_queue_close(other);
    ferry_queue_close(q);
}

/* ---- trims while it runs: the cursor ---------------------------------------------------- */

/* Another client removing jobs from the set as removeOnFail or Queue.clean do (ZREM + DEL). */
static void trim(ferry_queue *q, const char *id) {
    freeReplyObject(qt_cmd("ZREM %s %s", qt_key(q, "failed"), id));
    freeReplyObject(qt_cmd("DEL %s", qt_key(q, id)));
}

/* The id of job i of a test set: letter, then i zero-padded to width digits (0: none). */
static const char *test_id(char *buf, size_t cap, char letter, int width, int i) {
    snprintf(buf, cap, "%c%0*d", letter, width, i);
    return buf;
}

static void trim_range(ferry_queue *q, char letter, int width, int from, int to, int step) {
    for (int i = from; i <= to; i += step) {
        char id[32];
        trim(q, test_id(id, sizeof id, letter, width, i));
    }
}

/* The wait list holds the ids want(i) for i in 0..n-1 (test_id), each once, and `others`
 * ids besides. */
static void expect_wait_exactly(ferry_queue *q, char letter, int width, int n, int (*want)(int i),
                                long long others) {
    redisReply *r = qt_cmd("LRANGE %s 0 -1", qt_key(q, "wait"));
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long expected = 0;
    for (int i = 0; i < n; i++) {
        char id[32];
        test_id(id, sizeof id, letter, width, i);
        int seen = 0;
        for (size_t k = 0; k < r->elements; k++)
            seen += strcmp(r->element[k]->str, id) == 0;
        if (seen != (want(i) ? 1 : 0)) fail_msg("job %s is %d times in wait", id, seen);
        expected += want(i) != 0;
    }
    assert_int_equal((long long)r->elements, expected + others);
    freeReplyObject(r);
}

struct trimmer {
    ferry_queue *q;
    int calls;
    long long scanned_at[64];
};

/* After page 1 (j0..j199 looked at, the even ones retried): the odd j1..j99 are trimmed
 * (behind the cursor) and j501..j520 (ahead of it). After page 2 (up to j399): the cursor's
 * own member j399 and the odd j301..j349 are trimmed. */
static int trim_between_pages(void *ctx, const ferry_queue_retry_counts *so_far) {
    struct trimmer *m = ctx;
    m->scanned_at[m->calls < 64 ? m->calls : 63] = so_far->scanned;
    m->calls++;
    if (m->calls == 1) {
        trim_range(m->q, 'j', 0, 1, 99, 2);
        trim_range(m->q, 'j', 0, 501, 520, 1);
    } else if (m->calls == 2) {
        trim(m->q, "j399");
        trim_range(m->q, 'j', 0, 301, 349, 2);
    }
    return 0;
}

static int even_but_trimmed_ahead(int i) {
    return i % 2 == 0 && !(i >= 501 && i <= 520);
}

static void test_trims_ahead_and_behind_the_cursor(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "trims", NULL);
    put_failed(q, 1000, (long long)ferry__now_ms() - 100000);
    struct trimmer m = {q, 0, {0}};
    ferry_queue_retry_select sel = {
        .data_contains = "\"even\":true", .progress = trim_between_pages, .progress_ctx = &m};
    ferry_queue_retry_counts c;
    int ended = -1;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_retry_selected(q, &sel, &c, &ended, &e), 0);
    assert_int_equal(ended, FERRY_RETRY_SELECT_DONE);
    assert_int_equal(c.total, 1000);
    assert_int_equal(m.scanned_at[0], 200);
    assert_int_equal(m.scanned_at[1], 400);
    /* every job still there was looked at once: all but the 20 trimmed ahead */
    assert_int_equal(c.scanned, 980);
    assert_int_equal(c.matched, 490); /* 500 even, 10 of them trimmed ahead */
    assert_int_equal(c.retried, 490);
    assert_int_equal(c.skipped, 0);
    expect_wait_exactly(q, 'j', 0, 1000, even_but_trimmed_ahead, 0);
    /* left: the odd ones not trimmed: 500 - 50 - 10 - 1 (j399) - 25 */
    assert_int_equal(th_cmd_int(qt_conn, "ZCARD %s", qt_key(q, "failed")), 500 - 50 - 10 - 1 - 25);
    ferry_queue_close(q);
}

/* ---- many jobs with one finishedOn ------------------------------------------------------ */

/* n failed jobs fmt(i) all finished (and scored) at ms, data {"i":i,"even":b}. */
static void put_failed_at(ferry_queue *q, const char *fmt, int n, long long ms) {
    char base[512];
    snprintf(base, sizeof base, "%s", qt_key(q, ""));
    freeReplyObject(qt_cmd(
        "EVAL %s 0 %s %s %d %lld",
        "local base, fmt, n, t = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]) "
        "for i = 0, n - 1 do local id = string.format(fmt, i) "
        "redis.call('HSET', base .. id, 'name', 'n', 'data', '{\"i\":' .. i .. ',\"even\":' .. "
        "tostring(i % 2 == 0) .. '}', 'opts', '{}', 'timestamp', t - 10, 'delay', 0, "
        "'priority', 0, 'processedOn', t - 1, 'finishedOn', t, 'atm', 1, 'ats', 1, "
        "'failedReason', 'boom') "
        "redis.call('ZADD', base .. 'failed', t, id) end return n",
        base, fmt, n, ms));
}

/* After page 1 (u00..u49 and t000..t149 looked at): the cursor's own member t149 (odd, still
 * there) and the odd t101..t147 are trimmed (behind), t300 and t301 (ahead). */
static int trim_ties(void *ctx, const ferry_queue_retry_counts *so_far) {
    struct trimmer *m = ctx;
    m->scanned_at[m->calls < 64 ? m->calls : 63] = so_far->scanned;
    if (++m->calls == 1) {
        trim_range(m->q, 't', 3, 101, 149, 2);
        trim(m->q, "t300");
        trim(m->q, "t301");
    }
    return 0;
}

static int even_tie_kept(int i) {
    return i % 2 == 0 && i != 300;
}

static void test_ties_over_a_page(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "ties", NULL);
    long long t = (long long)ferry__now_ms() - 100000;
    put_failed_at(q, "u%02d", 50, t - 1); /* before the ties */
    put_failed_at(q, "t%03d", 450, t);    /* 450 jobs at one finishedOn: over two pages */
    put_failed_at(q, "v%02d", 50, t + 1); /* after them */
    struct trimmer m = {q, 0, {0}};
    ferry_queue_retry_select sel = {
        .data_contains = "\"even\":true", .progress = trim_ties, .progress_ctx = &m};
    ferry_queue_retry_counts c;
    int ended = -1;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_retry_selected(q, &sel, &c, &ended, &e), 0);
    assert_int_equal(ended, FERRY_RETRY_SELECT_DONE);
    assert_int_equal(c.total, 550);
    assert_int_equal(m.scanned_at[0], 200);
    assert_int_equal(c.scanned, 548); /* all but t300, t301 */
    assert_int_equal(c.matched, 25 + 224 + 25);
    assert_int_equal(c.retried, 25 + 224 + 25);
    assert_int_equal(c.skipped, 0);
    expect_wait_exactly(q, 't', 3, 450, even_tie_kept, 25 + 25);
    /* oldest first, ties by id: u00 was retried first (the tail), v48 last (the head) */
    redisReply *r = qt_cmd("LRANGE %s 0 -1", qt_key(q, "wait"));
    assert_int_equal(r->elements, 274);
    assert_string_equal(r->element[0]->str, "v48");
    assert_string_equal(r->element[25]->str, "t448");
    assert_string_equal(r->element[273]->str, "u00");
    freeReplyObject(r);
    /* a second run over the rest (odd ones, all at or around the ties) retries them all */
    ferry_queue_retry_counts c2;
    assert_int_equal(ferry_queue_retry_selected(q, NULL, &c2, &ended, &e), 0);
    assert_int_equal(ended, FERRY_RETRY_SELECT_DONE);
    assert_int_equal(c2.retried, 25 + (225 - 25 - 1) + 25);
    assert_int_equal(th_cmd_int(qt_conn, "ZCARD %s", qt_key(q, "failed")), 0);
    ferry_queue_close(q);
}

/* ---- what a page reads inside Redis ----------------------------------------------------- */

/* A plain hiredis connection in MONITOR mode: sees the commands scripts run ("[0 lua]"). */
static redisContext *monitor_open(void) {
    redisContext *m = redisConnect("127.0.0.1", atoi(th_env_require("REDIS_PORT")));
    assert_non_null(m);
    assert_int_equal(m->err, 0);
    redisReply *r = redisCommand(m, "MONITOR");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    return m;
}

/* Read the monitor until `marker` shows; count the script HMGETs of keys under `base` and
 * those of them that ask for field `field`. */
static void monitor_count(redisContext *m, const char *marker, const char *base, const char *field,
                          long long *hmgets, long long *with_field) {
    char want_key[600], want_field[64];
    snprintf(want_key, sizeof want_key, "\"HMGET\" \"%s", base);
    snprintf(want_field, sizeof want_field, "\"%s\"", field);
    *hmgets = *with_field = 0;
    for (;;) {
        redisReply *r = NULL;
        assert_int_equal(redisGetReply(m, (void **)&r), REDIS_OK);
        assert_non_null(r);
        int done = r->str && strstr(r->str, marker) != NULL;
        if (r->str && strstr(r->str, "[0 lua]") && strstr(r->str, want_key)) {
            (*hmgets)++;
            if (strstr(r->str, want_field)) (*with_field)++;
        }
        freeReplyObject(r);
        if (done) break;
    }
}

static void test_reads_data_only_when_asked(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "reads", NULL);
    put_failed(q, 10, (long long)ferry__now_ms() - 100000);
    const char *base = qt_key(q, "");
    char base_copy[512];
    snprintf(base_copy, sizeof base_copy, "%s", base);
    ferry_queue_retry_counts c;
    ferry_error e = {0};
    long long hm, hm_data;

    /* a name: no job's data is read, nor its failedReason */
    redisContext *m = monitor_open();
    ferry_queue_retry_select by_name = {.name = "nobody"};
    assert_int_equal(ferry_queue_retry_selected(q, &by_name, &c, NULL, &e), 0);
    assert_int_equal(c.scanned, 10);
    freeReplyObject(qt_cmd("ECHO retry-select-marker-1"));
    monitor_count(m, "retry-select-marker-1", base_copy, "data", &hm, &hm_data);
    assert_int_equal(hm, 10);
    assert_int_equal(hm_data, 0);
    redisFree(m);

    m = monitor_open();
    assert_int_equal(ferry_queue_retry_selected(q, &by_name, &c, NULL, &e), 0);
    freeReplyObject(qt_cmd("ECHO retry-select-marker-2"));
    monitor_count(m, "retry-select-marker-2", base_copy, "failedReason", &hm, &hm_data);
    assert_int_equal(hm, 10);
    assert_int_equal(hm_data, 0);
    redisFree(m);

    /* a data text: the data is read (inside Redis) */
    m = monitor_open();
    ferry_queue_retry_select by_data = {.data_contains = "no such text"};
    assert_int_equal(ferry_queue_retry_selected(q, &by_data, &c, NULL, &e), 0);
    assert_int_equal(c.matched, 0);
    freeReplyObject(qt_cmd("ECHO retry-select-marker-3"));
    monitor_count(m, "retry-select-marker-3", base_copy, "data", &hm, &hm_data);
    assert_int_equal(hm, 10);
    assert_int_equal(hm_data, 10);
    redisFree(m);
    ferry_queue_close(q);
}

/* After every page: the counts so far. */
static int record_pages(void *ctx, const ferry_queue_retry_counts *so_far) {
    struct trimmer *m = ctx;
    m->scanned_at[m->calls < 64 ? m->calls : 63] = so_far->scanned;
    m->calls++;
    return 0;
}

static void test_page_byte_budget(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "budget", NULL);
    /* 300 jobs of 40 KiB of data each: 12 MiB, three times a page's budget */
    enum { N = 300, PAD = 40 * 1024 };
    long long t = (long long)ferry__now_ms() - 100000;
    freeReplyObject(
        qt_cmd("EVAL %s 0 %s %d %lld %d",
               "local base, n, t, pad = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), "
               "tonumber(ARGV[4]) local fill = string.rep('x', pad) "
               "for i = 0, n - 1 do local id = 'b' .. i "
               "redis.call('HSET', base .. id, 'name', 'n', 'data', '{\"pad\":\"' .. fill .. "
               "'\",\"even\":' .. tostring(i % 2 == 0) .. '}', 'opts', '{}', 'timestamp', t, "
               "'finishedOn', t + i, 'atm', 1, 'ats', 1, 'failedReason', 'boom') "
               "redis.call('ZADD', base .. 'failed', t + i, id) end return n",
               qt_key(q, ""), N, t, PAD));
    struct trimmer m = {q, 0, {0}};
    ferry_queue_retry_select sel = {
        .data_contains = "\"even\":true", .progress = record_pages, .progress_ctx = &m};
    ferry_queue_retry_counts c;
    int ended = -1;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_retry_selected(q, &sel, &c, &ended, &e), 0);
    assert_int_equal(ended, FERRY_RETRY_SELECT_DONE);
    /* a page stops once it has read FERRY_RETRY_SELECT_PAGE_BYTES: about 100 such jobs */
    long long per_page = FERRY_RETRY_SELECT_PAGE_BYTES / PAD + 1;
    assert_true(m.scanned_at[0] >= per_page - 2 && m.scanned_at[0] <= per_page + 1);
    assert_true(m.calls >= 3);
    /* and the short pages are not taken for the end */
    assert_int_equal(c.total, N);
    assert_int_equal(c.scanned, N);
    assert_int_equal(c.matched, N / 2);
    assert_int_equal(c.retried, N / 2);
    assert_int_equal(th_cmd_int(qt_conn, "ZCARD %s", qt_key(q, "failed")), N / 2);

    /* without a data text the data is not read: full pages of 200 */
    struct trimmer m2 = {q, 0, {0}};
    ferry_queue_retry_select by_name = {
        .name = "nobody", .progress = record_pages, .progress_ctx = &m2};
    assert_int_equal(ferry_queue_retry_selected(q, &by_name, &c, &ended, &e), 0);
    assert_int_equal(m2.scanned_at[0], N / 2 < 200 ? N / 2 : 200);
    assert_int_equal(m2.calls, 1);
    ferry_queue_close(q);
}

/* ---- stray members and bad input ------------------------------------------------------ */

static void test_stray_members_and_bad_input(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "bad", NULL);
    put_failed(q, 3, (long long)ferry__now_ms() - 100000);
    /* A member without a hash, one whose key is the id counter (a string), one named like
     * the meta key: looked at, never retried, nothing breaks. */
    freeReplyObject(qt_cmd("SET %s 5", qt_key(q, "id")));
    freeReplyObject(qt_cmd("ZADD %s 1 ghost 2 id 3 meta", qt_key(q, "failed")));
    freeReplyObject(qt_cmd("HSET %s name n", qt_key(q, "meta"))); /* so that it matches */
    ferry_queue_retry_counts c;
    int ended = -1;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_retry_selected(q, NULL, &c, &ended, &e), 0);
    assert_int_equal(c.total, 6);
    assert_int_equal(c.scanned, 6);
    assert_int_equal(c.retried, 3);
    assert_int_equal(c.matched, 4); /* "meta" (a hash with a name) matches, is refused */
    assert_int_equal(c.skipped, 1);
    assert_int_equal(th_cmd_int(qt_conn, "ZCARD %s", qt_key(q, "failed")), 3);

    char *before = strdup(qt_zrange(qt_key(q, "failed")));
    char big[FERRY_RETRY_SELECT_TEXT_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    char bigname[FERRY_JOB_NAME_MAX + 2];
    memset(bigname, 'n', sizeof bigname - 1);
    bigname[sizeof bigname - 1] = 0;
    struct {
        ferry_queue_retry_select s;
        const char *msg;
    } bad[] = {
        {{.state = "wait"}, "state must be failed or completed"},
        {{.state = "completed", .reason_contains = "boom"}, "needs state failed"},
        {{.scan_max = -1}, "scan max"},
        {{.scan_max = FERRY_QUEUE_FIND_SCAN_MAX + 1}, "scan max"},
        {{.flags = 8}, "flags"},
        {{.data_contains = big}, "data text"},
        {{.reason_contains = big}, "reason text"},
        {{.name = bigname}, "name of"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c.scanned = 99;
        assert_int_equal(ferry_queue_retry_selected(q, &bad[i].s, &c, NULL, &e), FERRY_EINVAL);
        if (!strstr(e.message, bad[i].msg)) fail_msg("\"%s\" lacks \"%s\"", e.message, bad[i].msg);
        assert_int_equal(c.scanned, 0);
    }
    assert_int_equal(ferry_queue_retry_selected(NULL, NULL, NULL, NULL, &e), FERRY_EINVAL);
    assert_string_equal(qt_zrange(qt_key(q, "failed")), before);
    free(before);
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selectors_on_worker_failures),
        cmocka_unit_test(test_pages_with_moves_between_them),
        cmocka_unit_test(test_cancel_and_scan_max),
        cmocka_unit_test(test_concurrent_retry_of_the_same_set),
        cmocka_unit_test(test_stray_members_and_bad_input),
        cmocka_unit_test(test_trims_ahead_and_behind_the_cursor),
        cmocka_unit_test(test_ties_over_a_page),
        cmocka_unit_test(test_reads_data_only_when_asked),
        cmocka_unit_test(test_page_byte_budget),
    };
    int failed = cmocka_run_group_tests(tests, qt_setup, qt_teardown);
    return th_exit(failed);
}

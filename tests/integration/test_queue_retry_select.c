/* test_queue_retry_select.c - ferry_queue_retry_selected against a real Redis: jobs failed
 * by a real worker run retried by name, failed reason and data text (only the matches move,
 * with Job.retry's fields and events), pages of hand-written finished jobs with jobs moved
 * by another client between pages and new failures not chased, a cancel midway, scan_max,
 * another client retrying the same set at the same time, stray members, selectors matching
 * nothing, and the bad input it refuses without changing anything. */
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
    };
    int failed = cmocka_run_group_tests(tests, qt_setup, qt_teardown);
    return th_exit(failed);
}

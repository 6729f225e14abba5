/* test_worker_recovery.c - the worker's recovery paths against real Redis: a job left
 * active by a dead worker is re-queued by the stalled checker and processed (stc = 1);
 * over maxStalledCount it fails without running (deferred failure `defa`); lock renewal
 * keeps a long handler from being stalled; a lock taken away is reported and the finish
 * refused; a Redis that stops answering is survived (results kept and written after the
 * reconnect); and close stays bounded when Redis is killed. The last test kills the
 * fixture's server and starts it again. */
#include <signal.h>
#include <sys/types.h>

#include "support/wt.h"

static ferry_outcome handler(ferry_job *job, void *ud) {
    wt_hctx *h = ud;
    wt_hctx_count_run(h);
    if (!strcmp(ferry_job_name(job), "gate")) wt_gate_pass(&h->g);
    ferry_job_set_return(job, "\"done\"");
    return FERRY_COMPLETED;
}

/* ---- stalled ------------------------------------------------------------------------- */

static void test_stalled_job_recovered(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "work", "{\"x\":1}", NULL);
    wt_dead_worker_fetch(t.c, t.base, id, 300);
    wt_expect_field(&t, id, "ats", "1");

    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.stalled_interval_ms = 200;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "completed", 1);
    WT_WAIT_COUNT(&t, stalled, 1);
    wt_expect_field(&t, id, "stc", "1");
    wt_expect_field(&t, id, "ats", "2");
    wt_expect_field(&t, id, "atm", "1");
    wt_expect_field(&t, id, "returnvalue", "\"done\"");
    char *ev = wt_events(&t, id, NULL);
    assert_non_null(strstr(ev, "active waiting stalled active completed"));
    free(ev);
    ferry_worker_stats s;
    ferry_worker_get_stats(w, &s);
    assert_int_equal(s.stalled, 1);
    assert_int_equal(wt_runs_of(&h), 1);
    wt_stop(w);
    free(id);
    wt_fini(&t);
}

static void test_stalled_too_often_fails_without_running(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "work", NULL, "{\"attempts\":3}");
    freeReplyObject(wt_cmd(&t, "HSET %s%s stc 1", t.base, id)); /* it stalled once before */
    wt_dead_worker_fetch(t.c, t.base, id, 200);

    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.stalled_interval_ms = 150;
    o.max_stalled_count = 1;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "failed", 1);
    WT_WAIT_COUNT(&t, failed_final, 1);
    assert_int_equal(wt_runs_of(&h), 0);
    wt_expect_field(&t, id, "failedReason", "job stalled more than allowable limit");
    wt_expect_field(&t, id, "defa", NULL);
    wt_expect_field(&t, id, "stc", "2");
    wt_expect_field(&t, id, "ats", "2");
    wt_expect_field(&t, id, "atm", "1");
    char *st = wt_hget(&t, id, "stacktrace");
    assert_non_null(strstr(st, "UnrecoverableError: job stalled more than allowable limit"));
    free(st);
    char *ev = wt_events(&t, id, NULL);
    assert_non_null(strstr(ev, "waiting stalled active failed"));
    assert_null(strstr(ev, "retries-exhausted")); /* atm 1 < attempts 3 */
    free(ev);
    wt_stop(w);
    free(id);
    wt_fini(&t);
}

/* FERRY_STALLED_FAIL_FIRST (BullMQ's maxStalledCount 0): the first stall fails the job,
 * which never runs again. */
static void test_stalled_once_fails_with_fail_first(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "work", NULL, "{\"attempts\":3}");
    wt_dead_worker_fetch(t.c, t.base, id, 200);

    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.stalled_interval_ms = 150;
    o.max_stalled_count = FERRY_STALLED_FAIL_FIRST;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "failed", 1);
    WT_WAIT_COUNT(&t, failed_final, 1);
    assert_int_equal(wt_runs_of(&h), 0);
    wt_expect_field(&t, id, "failedReason", "job stalled more than allowable limit");
    wt_expect_field(&t, id, "stc", "1");
    wt_stop(w);

    /* values below FERRY_STALLED_FAIL_FIRST are refused */
    o.max_stalled_count = -3;
    ferry_worker *bad = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_worker_create(WT_QUEUE, &o, handler, &h, &bad, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "max_stalled_count"));
    assert_null(bad);
    free(id);
    wt_fini(&t);
}

/* ---- locks ----------------------------------------------------------------------------- */

static int job_has_stc(void *arg) {
    void **a = arg;
    char *v = wt_hget(a[0], a[1], "stc");
    free(v);
    return v != NULL;
}

static void test_lock_renewal_keeps_long_job(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "gate", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.lock_duration_ms = 300;
    o.stalled_interval_ms = 100;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_GATE_ENTERED(&h.g, 1);
    char lock[160];
    snprintf(lock, sizeof lock, "%s%s:lock", t.base, id);
    redisReply *r = wt_cmd(&t, "GET %s", lock);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_non_null(strchr(r->str, ':')); /* "<worker uuid>:<counter>" */
    freeReplyObject(r);
    /* The handler runs for several lock durations while stalled checks run every 100 ms: the
     * job must never be declared stalled. */
    void *a[2] = {&t, id};
    assert_false(th_wait_until(job_has_stc, a, 1200));
    r = wt_cmd(&t, "PTTL %s", lock);
    assert_true(r->integer > 0 && r->integer <= 300);
    freeReplyObject(r);
    wt_gate_open(&h.g);
    WT_WAIT_ZCARD(&t, "completed", 1);
    wt_expect_field(&t, id, "stc", NULL);
    ferry_worker_stats s;
    ferry_worker_get_stats(w, &s);
    assert_int_equal(s.lock_lost, 0);
    assert_int_equal(s.stalled, 0);
    wt_stop(w);
    assert_int_equal(t.errors, 0);
    free(id);
    wt_fini(&t);
}

static void test_lost_lock_is_reported(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "gate", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.lock_duration_ms = 200;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_GATE_ENTERED(&h.g, 1);
    /* another worker took the job over */
    freeReplyObject(wt_cmd(&t, "SET %s%s:lock intruder:1 PX 60000", t.base, id));
    WT_WAIT_COUNT(&t, errors, 1);
    pthread_mutex_lock(&t.mu);
    assert_non_null(strstr(t.last_error, "lock lost"));
    pthread_mutex_unlock(&t.mu);
    wt_gate_open(&h.g);
    WT_WAIT_COUNT(&t, errors, 2); /* the finish is refused (-6), never forced */
    pthread_mutex_lock(&t.mu);
    assert_non_null(strstr(t.last_error, "lock owned by another worker"));
    pthread_mutex_unlock(&t.mu);
    assert_int_equal(WT_ZCARD(&t, "completed"), 0);
    assert_int_equal(WT_LLEN(&t, "active"), 1);
    ferry_worker_stats s;
    ferry_worker_get_stats(w, &s);
    assert_int_equal(s.lock_lost, 1);
    assert_int_equal(s.completed, 0);
    assert_int_equal(t.completed, 0);
    wt_stop(w);
    free(id);
    wt_fini(&t);
}

/* ---- connection loss ---------------------------------------------------------------------- */

static pid_t redis_pid(void) {
    const char *pf = th_env_require("REDIS_PIDFILE");
    FILE *f = fopen(pf, "r");
    if (!f) fail_msg("cannot read %s", pf);
    long pid = 0;
    if (fscanf(f, "%ld", &pid) != 1) pid = 0;
    fclose(f);
    assert_true(pid > 0);
    return (pid_t)pid;
}

static void test_results_survive_unresponsive_redis(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "gate", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ro.command_timeout_ms = 400;
    ro.connect_timeout_ms = 400;
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_GATE_ENTERED(&h.g, 1);
    pid_t pid = redis_pid();
    assert_int_equal(kill(pid, SIGSTOP), 0);
    wt_gate_open(&h.g);           /* the result arrives while Redis does not answer */
    WT_WAIT_COUNT(&t, errors, 1); /* the worker noticed */
    assert_int_equal(kill(pid, SIGCONT), 0);
    WT_WAIT_ZCARD(&t, "completed", 1);
    wt_expect_field(&t, id, "returnvalue", "\"done\"");
    wt_expect_field(&t, id, "atm", "1");
    /* The lost call may have been executed by Redis after it resumed; then the resend is
     * refused and reported as such instead of a completed callback. */
    int done = 0;
    for (int i = 0; i < 300 && !done; i++) {
        pthread_mutex_lock(&t.mu);
        done = t.completed == 1 ||
               strstr(t.last_error, "sent again (after a broken connection") != NULL;
        pthread_mutex_unlock(&t.mu);
        if (!done) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    assert_true(done);
    /* and the worker goes on working */
    char *id2 = wt_add(&t, "work", NULL, NULL);
    WT_WAIT_ZCARD(&t, "completed", 2);
    wt_stop(w);
    free(id), free(id2);
    wt_fini(&t);
}

static void test_close_bounded_when_redis_killed(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    char *id = wt_add(&t, "gate", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_GATE_ENTERED(&h.g, 1);
    th_redis_ctl("kill9");
    wt_gate_open(&h.g);
    int64_t t0 = ferry__mono_ms();
    int rc = ferry_worker_close(w, 1000);
    int64_t took = ferry__mono_ms() - t0;
    assert_int_equal(rc, FERRY_ETIMEDOUT); /* the result could not be written */
    assert_true(took < 4000);
    ferry_worker_free(w);
    th_redis_ctl("start");
    free(id);
    wt_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stalled_job_recovered),
        cmocka_unit_test(test_stalled_too_often_fails_without_running),
        cmocka_unit_test(test_stalled_once_fails_with_fail_first),
        cmocka_unit_test(test_lock_renewal_keeps_long_job),
        cmocka_unit_test(test_lost_lock_is_reported),
        cmocka_unit_test(test_results_survive_unresponsive_redis),
        cmocka_unit_test(test_close_bounded_when_redis_killed), /* last: restarts Redis */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_scheduler_worker.c - a running ferry worker fetching the current iteration of a broken
 * job scheduler (its hash lost `name`: corrupted or half-removed) reports that through its
 * error callback instead of ending the schedule silently, and still runs the job. */
#include "support/wt.h"

static ferry_outcome handler(ferry_job *job, void *ud) {
    (void)job;
    wt_hctx_count_run(ud);
    return FERRY_COMPLETED;
}

static void test_broken_scheduler_reported_job_runs(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    /* Node-shaped: the scheduler's entry and hash (without name), and its current iteration
     * waiting */
    const long long prev = ferry__now_ms();
    char job[128], opts[512];
    snprintf(job, sizeof job, "repeat:broken:%lld", prev);
    snprintf(opts, sizeof opts,
             "{\"repeat\":{\"every\":1000,\"count\":1},\"repeatJobKey\":\"broken\",\"jobId\":"
             "\"%s\",\"timestamp\":%lld,\"delay\":0,\"attempts\":0}",
             job, prev);
    freeReplyObject(wt_cmd(&t, "ZADD %srepeat %lld broken", t.base, prev));
    freeReplyObject(wt_cmd(&t, "HSET %srepeat:broken every 1000 ic 1", t.base));
    freeReplyObject(wt_cmd(&t,
                           "HSET %s%s name tick data {} opts %s timestamp %lld delay 0 "
                           "priority 0 rjk broken",
                           t.base, job, opts, prev));
    freeReplyObject(wt_cmd(&t, "LPUSH %swait %s", t.base, job));
    freeReplyObject(wt_cmd(&t, "ZADD %smarker 0 0", t.base));

    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &h);
    WT_WAIT_ZCARD(&t, "completed", 1);
    WT_WAIT_COUNT(&t, errors, 1);
    wt_stop(w);
    assert_int_equal(wt_runs_of(&h), 1);
    pthread_mutex_lock(&t.mu);
    char want[256];
    snprintf(want, sizeof want, "scheduler hash %srepeat:broken has no name", t.base);
    if (!strstr(t.last_error, want) || !strstr(t.last_error, "corrupted or half-removed"))
        fail_msg("error \"%s\" lacks \"%s\"", t.last_error, want);
    pthread_mutex_unlock(&t.mu);
    /* nothing was produced for it */
    assert_int_equal(WT_ZCARD(&t, "delayed"), 0);
    wt_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broken_scheduler_reported_job_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_queue_ops.c - queue administration against a real Redis: retrying finished jobs one
 * at a time and queue-wide (fields, placement, attempts, marker, events, chunks, limits),
 * promoting delayed jobs, cleaning by state and age, draining, hard removal (schedulers,
 * dedup keys, flow parents), pages of a state's jobs, the queues under a prefix, job logs,
 * workers, the refusals that change nothing, and the CLI commands on top (output, exit 2 for
 * usage errors, exit 1 for runtime failures). tests/interop/queue_ops.test.js compares the
 * same operations with Node BullMQ's. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/cli.h"
#include "support/qt.h"
#include "util/clock.h"

/* A finished job written by hand, as a worker leaves it: `set` is failed or completed,
 * `finished` its score and finishedOn; `opts` its stored options. */
static void put_finished(ferry_queue *q, const char *id, const char *set, long long finished,
                         const char *opts, int priority) {
    const char *result = strcmp(set, "failed") == 0 ? "failedReason" : "returnvalue";
    const char *value = strcmp(set, "failed") == 0 ? "boom" : "{\"r\":1}";
    freeReplyObject(qt_cmd("HSET %s name n data {} opts %s timestamp 1700000000000 delay 0 "
                           "priority %d processedOn %lld finishedOn %lld atm 2 ats 3 %s %s "
                           "stacktrace [\"e1\",\"e2\"]",
                           qt_key(q, id), opts, priority, finished - 5, finished, result, value));
    freeReplyObject(qt_cmd("ZADD %s %lld %s", qt_key(q, set), finished, id));
}

static ferry_job_info *job(ferry_queue *q, const char *id) {
    ferry_job_info *info = NULL;
    ferry_error e = {0};
    if (ferry_queue_get_job(q, id, &info, &e)) fail_msg("get %s: %s", id, e.message);
    return info;
}

/* Every key of the queue as one string, to show that a refused call changed nothing. */
static char *queue_dump(ferry_queue *q) {
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s:%s:*", ferry_queue_prefix(q), ferry_queue_name(q));
    redisReply *keys = qt_cmd("KEYS %s", pattern);
    size_t cap = 1 << 20, len = 0;
    char *out = calloc(1, cap);
    char **names = calloc(keys->elements + 1, sizeof *names);
    for (size_t i = 0; i < keys->elements; i++)
        names[i] = strdup(keys->element[i]->str);
    qsort(names, keys->elements, sizeof *names, th_cmp_str);
    for (size_t i = 0; i < keys->elements; i++) {
        redisReply *d = qt_cmd("DUMP %s", names[i]);
        len += (size_t)snprintf(out + len, cap - len, "%s=", names[i]);
        for (size_t j = 0; j < d->len && len + 3 < cap; j++)
            len += (size_t)snprintf(out + len, cap - len, "%02x", (unsigned char)d->str[j]);
        len += (size_t)snprintf(out + len, cap - len, ";");
        freeReplyObject(d);
        free(names[i]);
    }
    free(names);
    freeReplyObject(keys);
    return out;
}

/* ---- ferry_queue_retry_job ------------------------------------------------------------ */

static void test_retry_job(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "retry1", NULL);
    ferry_error e = {0};
    put_finished(q, "f1", "failed", 1700000001000, "{\"attempts\":3}", 0);
    put_finished(q, "f2", "failed", 1700000002000, "{\"lifo\":true}", 0);
    put_finished(q, "f3", "failed", 1700000003000, "{\"priority\":5}", 5);
    put_finished(q, "c1", "completed", 1700000004000, "{}", 0);
    freeReplyObject(qt_cmd("LPUSH %s w1", qt_key(q, "wait")));

    const char *from = NULL;
    assert_int_equal(ferry_queue_retry_job(q, "f1", "failed", 0, &from, &e), 0);
    assert_string_equal(from, "failed");
    /* finish fields gone, attempts and stacktrace kept */
    assert_string_equal(qt_hgetall(qt_key(q, "f1")),
                        "atm=2;ats=3;data={};delay=0;name=n;opts={\"attempts\":3};priority=0;"
                        "stacktrace=[\"e1\",\"e2\"];timestamp=1700000000000");
    /* head of wait; lifo: the tail (runs next); a priority: prioritized, fresh counter */
    assert_int_equal(ferry_queue_retry_job(q, "f2", NULL, 0, &from, &e), 0);
    assert_string_equal(from, "failed");
    assert_int_equal(ferry_queue_retry_job(q, "f3", NULL, FERRY_RETRY_RESET_ATTEMPTS, NULL, &e), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "f1,w1,f2");
    assert_string_equal(qt_zrange(qt_key(q, "prioritized")), "f3,21474836481");
    assert_string_equal(qt_hget(qt_key(q, "f3"), "atm"), "(nil)");
    assert_string_equal(qt_hget(qt_key(q, "f3"), "ats"), "3");
    /* completed: returnvalue goes; both counters reset on request */
    assert_int_equal(ferry_queue_retry_job(q, "c1", NULL,
                                           FERRY_RETRY_RESET_ATTEMPTS | FERRY_RETRY_RESET_STARTED,
                                           &from, &e),
                     0);
    assert_string_equal(from, "completed");
    ferry_job_info *info = job(q, "c1");
    assert_string_equal(info->state, "waiting");
    assert_null(info->returnvalue);
    assert_int_equal(info->finished_on, -1);
    assert_int_equal(info->processed_on, -1);
    assert_int_equal(info->attempts_made, 0);
    assert_int_equal(info->attempts_started, 0);
    ferry_job_info_free(info);
    assert_string_equal(qt_zrange(qt_key(q, "failed")), "");
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "0,0");
    assert_string_equal(qt_events(q), "waiting:jobId=f1:prev=failed|waiting:jobId=f2:prev=failed|"
                                      "waiting:jobId=f3:prev=failed|"
                                      "waiting:jobId=c1:prev=completed");
    assert_string_equal(qt_hget(qt_key(q, "meta"), "opts.maxLenEvents"), "10000");
    ferry_queue_close(q);
}

static void test_retry_job_refusals_change_nothing(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "retry2", NULL);
    ferry_error e = {0};
    put_finished(q, "f1", "failed", 1700000001000, "{}", 0);
    put_finished(q, "c1", "completed", 1700000002000, "{}", 0);
    qt_add_expect(q, "w", NULL, NULL, "1");
    char *before = queue_dump(q);
    const char *from = "x";
    assert_int_equal(ferry_queue_retry_job(q, "c1", "failed", 0, &from, &e), FERRY_ESTATE);
    assert_null(from);
    assert_non_null(strstr(e.message, "job c1 of queue retry2 is not failed"));
    assert_int_equal(ferry_queue_retry_job(q, "1", NULL, 0, NULL, &e), FERRY_ESTATE);
    assert_non_null(strstr(e.message, "is not failed or completed"));
    assert_int_equal(ferry_queue_retry_job(q, "nope", NULL, 0, NULL, &e), FERRY_ENOTFOUND);
    assert_non_null(strstr(e.message, "job nope not found in queue retry2"));
    assert_int_equal(ferry_queue_retry_job(q, "f1", "delayed", 0, NULL, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "state must be failed or completed"));
    assert_int_equal(ferry_queue_retry_job(q, "f1", NULL, 4, NULL, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_retry_job(q, "", NULL, 0, NULL, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_retry_job(q, "meta", NULL, 0, NULL, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "own keys"));
    assert_int_equal(ferry_queue_retry_job(NULL, "f1", NULL, 0, NULL, &e), FERRY_EINVAL);
    char *after = queue_dump(q);
    assert_string_equal(after, before);
    free(before);
    free(after);
    ferry_queue_close(q);
}

static void test_retry_while_paused_or_maxed_sets_no_marker(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "retry3", NULL);
    ferry_error e = {0};
    put_finished(q, "f1", "failed", 1700000001000, "{}", 0);
    put_finished(q, "f2", "failed", 1700000002000, "{}", 0);
    assert_int_equal(ferry_queue_pause(q, &e), 0);
    assert_int_equal(ferry_queue_retry_job(q, "f1", NULL, 0, NULL, &e), 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "marker"))), 0);
    assert_int_equal(ferry_queue_resume(q, &e), 0);
    freeReplyObject(qt_cmd("DEL %s", qt_key(q, "marker")));
    assert_int_equal(ferry_queue_set_global_concurrency(q, 1, &e), 0);
    freeReplyObject(qt_cmd("LPUSH %s a1", qt_key(q, "active")));
    long long moved = 0;
    assert_int_equal(ferry_queue_retry_jobs(q, "failed", 0, &moved, &e), 0);
    assert_int_equal(moved, 1);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "marker"))), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "f2,f1");
    ferry_queue_close(q);
}

/* A flow child retried is its parent's pending dependency again. */
static void test_retry_flow_child(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "retry4", NULL);
    ferry_error e = {0};
    char parent[600], child[600];
    snprintf(parent, sizeof parent, "%s", qt_key(q, "p"));
    snprintf(child, sizeof child, "%s", qt_key(q, "c"));
    put_finished(q, "p", "completed", 1700000000500, "{}", 0);
    put_finished(q, "c", "failed", 1700000001000, "{}", 0);
    freeReplyObject(qt_cmd("HSET %s parentKey %s", child, parent));
    freeReplyObject(qt_cmd("HSET %s:failed %s boom", parent, child));
    put_finished(q, "c2", "completed", 1700000002000, "{}", 0);
    freeReplyObject(qt_cmd("HSET %s parentKey %s", qt_key(q, "c2"), parent));
    freeReplyObject(qt_cmd("HSET %s:processed %s 1", parent, qt_key(q, "c2")));
    assert_int_equal(ferry_queue_retry_job(q, "c", NULL, 0, NULL, &e), 0);
    long long moved = 0;
    assert_int_equal(ferry_queue_retry_jobs(q, "completed", 0, &moved, &e), 0);
    assert_int_equal(moved, 2); /* p and c2 */
    char want[1300];
    redisReply *r = qt_cmd("SMEMBERS %s:dependencies", parent);
    assert_int_equal(r->elements, 2);
    freeReplyObject(r);
    assert_int_equal(qt_ival(qt_cmd("SISMEMBER %s:dependencies %s", parent, child)), 1);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s:failed %s:processed", parent, parent)), 0);
    snprintf(want, sizeof want, "%s", qt_lrange(qt_key(q, "wait")));
    assert_string_equal(want, "c2,p,c");
    ferry_queue_close(q);
}

/* ---- ferry_queue_retry_jobs ----------------------------------------------------------- */

static void test_retry_jobs_chunks_and_limit(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "retry5", NULL);
    ferry_error e = {0};
    enum { N = 2500 };
    char id[16];
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof id, "j%d", i);
        /* scores out of id order: j0 finished last */
        put_finished(q, id, "failed", 1700000000000LL + (N - i), "{\"priority\":3}", 3);
    }
    /* finished "later" than the call: not retried */
    put_finished(q, "future", "failed", 4102444800000LL, "{}", 0);
    long long moved = -1;
    assert_int_equal(ferry_queue_retry_jobs(q, NULL, 1200, &moved, &e), 0);
    assert_int_equal(moved, 1200);
    /* oldest first: j2499 finished first, so it is deepest (runs first); priority ignored */
    redisReply *r = qt_cmd("LRANGE %s 0 -1", qt_key(q, "wait"));
    assert_int_equal(r->elements, 1200);
    assert_string_equal(r->element[1199]->str, "j2499");
    assert_string_equal(r->element[0]->str, "j1300");
    freeReplyObject(r);
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(q, "prioritized"))), 0);
    assert_int_equal(qt_ival(qt_cmd("XLEN %s", qt_key(q, "events"))), 1200);
    assert_string_equal(qt_hget(qt_key(q, "j2499"), "finishedOn"), "(nil)");
    assert_string_equal(qt_hget(qt_key(q, "j2499"), "failedReason"), "(nil)");
    assert_string_equal(qt_hget(qt_key(q, "j2499"), "atm"), "2");
    /* the rest (over two chunks), and nothing more */
    assert_int_equal(ferry_queue_retry_jobs(q, "failed", 0, &moved, &e), 0);
    assert_int_equal(moved, N - 1200);
    assert_string_equal(qt_zrange(qt_key(q, "failed")), "future,4102444800000");
    assert_int_equal(qt_ival(qt_cmd("LLEN %s", qt_key(q, "wait"))), N);
    assert_int_equal(ferry_queue_retry_jobs(q, "completed", 0, &moved, &e), 0);
    assert_int_equal(moved, 0);
    /* bad input */
    assert_int_equal(ferry_queue_retry_jobs(q, "delayed", 0, &moved, &e), FERRY_EINVAL);
    assert_int_equal(moved, 0);
    assert_int_equal(ferry_queue_retry_jobs(q, "failed", -1, &moved, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_retry_jobs(q, "failed", FERRY_QUEUE_MOVE_MAX + 1, NULL, &e),
                     FERRY_EINVAL);
    assert_non_null(strstr(e.message, "limit"));
    ferry_queue_close(q);
}

/* Nothing to move writes nothing, not even the queue's meta. */
static void test_empty_moves_write_nothing(void **state) {
    (void)state;
    ferry_queue_options o;
    ferry_queue_options_init(&o);
    ferry_redis_options ro = th_redis_options(0);
    o.redis = &ro;
    o.prefix = th_prefix();
    o.skip_meta_update = 1;
    ferry_queue *q = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_open("nothing", &o, &q, &e), 0);
    long long moved = -1;
    assert_int_equal(ferry_queue_retry_jobs(q, "failed", 0, &moved, &e), 0);
    assert_int_equal(moved, 0);
    assert_int_equal(ferry_queue_promote_jobs(q, 0, &moved, &e), 0);
    assert_int_equal(moved, 0);
    int exists = 1;
    assert_int_equal(ferry_queue_exists(q, &exists, &e), 0);
    assert_int_equal(exists, 0);
    ferry_queue_close(q);
}

/* ---- promote -------------------------------------------------------------------------- */

static void test_promote_job(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "promote1", NULL);
    ferry_error e = {0};
    qt_add_expect(q, "d", NULL, "{\"delay\":60000,\"lifo\":true}", "1");
    qt_add_expect(q, "d", NULL, "{\"delay\":60000,\"priority\":9}", "2");
    qt_add_expect(q, "w", NULL, NULL, "3");
    freeReplyObject(qt_cmd("DEL %s %s", qt_key(q, "events"), qt_key(q, "marker")));
    assert_int_equal(ferry_queue_promote_job(q, "1", &e), 0);
    assert_int_equal(ferry_queue_promote_job(q, "2", &e), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "1,3"); /* LPUSH, lifo or not */
    assert_string_equal(qt_zrange(qt_key(q, "prioritized")), "2,38654705665");
    assert_string_equal(qt_hget(qt_key(q, "1"), "delay"), "0");
    assert_string_equal(qt_hget(qt_key(q, "2"), "delay"), "0");
    assert_string_equal(qt_zrange(qt_key(q, "delayed")), "");
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "0,0");
    assert_string_equal(qt_events(q), "waiting:jobId=1:prev=delayed|waiting:jobId=2:prev=delayed");
    char *before = queue_dump(q);
    assert_int_equal(ferry_queue_promote_job(q, "3", &e), FERRY_ESTATE);
    assert_non_null(strstr(e.message, "job 3 of queue promote1 is not delayed"));
    assert_int_equal(ferry_queue_promote_job(q, "9", &e), FERRY_ENOTFOUND);
    /* an id left in delayed without its hash: refused as missing, left alone */
    freeReplyObject(qt_cmd("ZADD %s 1 ghost", qt_key(q, "delayed")));
    char *with_ghost = queue_dump(q);
    assert_int_equal(ferry_queue_promote_job(q, "ghost", &e), FERRY_ENOTFOUND);
    assert_int_equal(ferry_queue_promote_job(q, "wait", &e), FERRY_EINVAL);
    char *after = queue_dump(q);
    assert_string_equal(after, with_ghost);
    assert_string_not_equal(before, with_ghost);
    free(before);
    free(with_ghost);
    free(after);
    ferry_queue_close(q);
}

static void test_promote_jobs(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "promote2", NULL);
    ferry_error e = {0};
    qt_add_expect(q, "d", NULL, "{\"delay\":90000}", "1");
    qt_add_expect(q, "d", NULL, "{\"delay\":30000,\"priority\":4}", "2");
    qt_add_expect(q, "d", NULL, "{\"delay\":60000}", "3");
    freeReplyObject(qt_cmd("DEL %s %s", qt_key(q, "events"), qt_key(q, "marker")));
    long long moved = 0;
    assert_int_equal(ferry_queue_promote_jobs(q, 2, &moved, &e), 0);
    assert_int_equal(moved, 2);
    /* soonest due first into wait (deepest = runs first); priority and delay untouched */
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "3,2");
    assert_string_equal(qt_hget(qt_key(q, "2"), "delay"), "30000");
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(q, "prioritized"))), 0);
    assert_string_equal(qt_events(q), "waiting:jobId=2:prev=delayed|waiting:jobId=3:prev=delayed");
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "0,0");
    assert_int_equal(ferry_queue_promote_jobs(q, 0, &moved, &e), 0);
    assert_int_equal(moved, 1);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "1,3,2");
    assert_int_equal(ferry_queue_promote_jobs(q, -5, &moved, &e), FERRY_EINVAL);
    ferry_queue_close(q);
}

/* ---- the CLI -------------------------------------------------------------------------- */

static void test_cli(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, "cliops", NULL);
    put_finished(q, "f1", "failed", 1700000001000, "{}", 0);
    put_finished(q, "f2", "failed", 1700000002000, "{}", 0);
    put_finished(q, "f3", "failed", 1700000003000, "{}", 0);
    put_finished(q, "c1", "completed", 1700000004000, "{}", 0);
    qt_add_expect(q, "d", NULL, "{\"delay\":60000}", "1");
    qt_add_expect(q, "d", NULL, "{\"delay\":60000}", "2");
    const char *url = cli_url();
    cli_run r;

    CLI(r, "job", "retry", "cliops", "f1", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "job f1: retried (was failed)\n");
    cli_run_free(&r);
    CLI(r, "job", "retry", "cliops", "f1", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 1);
    assert_non_null(strstr(r.err, "ferry job retry: job f1 of queue cliops is not failed or "
                                  "completed"));
    cli_run_free(&r);
    CLI(r, "job", "retry", "cliops", "zz", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 1);
    assert_string_equal(r.err, "ferry job retry: job zz not found in queue cliops\n");
    cli_run_free(&r);
    CLI(r, "job", "retry", "cliops", "c1", "--state", "wait", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--state: expected failed or completed, got 'wait'"));
    cli_run_free(&r);
    CLI(r, "job", "retry", "cliops", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "job", "retry", "cliops", "c1", "--state", "completed", "--reset-attempts", "--redis",
        url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "job c1: retried (was completed)\n");
    assert_string_equal(qt_hget(qt_key(q, "c1"), "atm"), "(nil)");
    cli_run_free(&r);

    CLI(r, "queue", "retry", "cliops", "--limit", "0", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "queue", "retry", "cliops", "--state", "active", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "ferry queue retry: --state: expected failed or completed"));
    cli_run_free(&r);
    CLI(r, "queue", "retry", "cliops", "--limit", "1", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue cliops: 1 failed job retried\n");
    cli_run_free(&r);
    CLI(r, "queue", "retry", "cliops", "--json", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"retried\":1}\n");
    cli_run_free(&r);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "f3,f2,c1,f1");

    CLI(r, "job", "promote", "cliops", "1", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "");
    cli_run_free(&r);
    CLI(r, "job", "promote", "cliops", "1", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 1);
    assert_string_equal(r.err, "ferry job promote: job 1 of queue cliops is not delayed\n");
    cli_run_free(&r);
    CLI(r, "queue", "promote", "cliops", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue cliops: 1 delayed job promoted\n");
    cli_run_free(&r);
    CLI(r, "queue", "promote", "cliops", "extra", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "2,1,f3,f2,c1,f1");

    /* a queue that does not exist: nothing to do, and no key made */
    CLI(r, "queue", "retry", "ghostq", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue ghostq: 0 failed jobs retried\n");
    cli_run_free(&r);
    CLI(r, "job", "promote", "ghostq", "1", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 1);
    cli_run_free(&r);
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s:ghostq:*", prefix);
    redisReply *keys = qt_cmd("KEYS %s", pattern);
    assert_int_equal(keys->elements, 0);
    freeReplyObject(keys);

    /* Redis unreachable: a runtime failure */
    CLI(r, "queue", "promote", "cliops", "--redis", "redis://127.0.0.1:1", "--timeout", "500");
    CLI_EXPECT(r, 1);
    cli_run_free(&r);
    CLI(r, "queue", "retry", "--help");
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "Usage: ferry queue retry"));
    assert_non_null(strstr(r.out, "--limit N"));
    cli_run_free(&r);
    ferry_queue_close(q);
}

/* ---- clean / drain -------------------------------------------------------------------- */

/* A job hash with the given time fields (-1 = absent) and nothing else that matters. */
static void put_job(ferry_queue *q, const char *id, long long timestamp, long long processed,
                    long long finished) {
    freeReplyObject(qt_cmd("HSET %s name n data {} opts {} delay 0 priority 0", qt_key(q, id)));
    if (timestamp >= 0) freeReplyObject(qt_cmd("HSET %s timestamp %lld", qt_key(q, id), timestamp));
    if (processed >= 0)
        freeReplyObject(qt_cmd("HSET %s processedOn %lld", qt_key(q, id), processed));
    if (finished >= 0) freeReplyObject(qt_cmd("HSET %s finishedOn %lld", qt_key(q, id), finished));
}

static char *joined_ids(char **ids, size_t n) {
    static char buf[4096];
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? "," : "", ids[i]);
    return buf;
}

static void test_clean_lists_and_sets(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "clean1", NULL);
    ferry_error e = {0};
    long long now = ferry__now_ms(), old = now - 7200000, young = now - 60000;
    /* wait, head first: y (young), o1 (old), r (old but processed recently), o2 (old), f
     * (finishedOn old, timestamp young), n (no time at all) */
    put_job(q, "y", young, -1, -1);
    put_job(q, "o1", old, -1, -1);
    put_job(q, "r", old, young, -1);
    put_job(q, "o2", old, -1, -1);
    put_job(q, "f", young, -1, old);
    freeReplyObject(qt_cmd("RPUSH %s y o1 r o2 f n", qt_key(q, "wait")));
    char **ids = NULL;
    size_t n = 0;
    /* limit 3: only the 3 at the tail are looked at */
    assert_int_equal(ferry_queue_clean(q, "waiting", 3600000, 3, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "o2,f,n");
    ferry_queue_job_ids_free(ids, n);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "y,o1,r");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s", qt_key(q, "o2"), qt_key(q, "f"))), 0);
    assert_int_equal(ferry_queue_clean(q, "wait", 3600000, 0, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "o1");
    ferry_queue_job_ids_free(ids, n);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "y,r");

    /* delayed by processedOn else timestamp; prioritized by timestamp; completed by score */
    put_job(q, "d1", old, -1, -1);
    put_job(q, "d2", old, young, -1);
    put_job(q, "d3", young, -1, -1);
    freeReplyObject(qt_cmd("ZADD %s 10 d1 20 d2 30 d3", qt_key(q, "delayed")));
    put_job(q, "p1", young, -1, -1);
    put_job(q, "p2", old, -1, -1);
    freeReplyObject(qt_cmd("ZADD %s 1 p1 2 p2", qt_key(q, "prioritized")));
    freeReplyObject(
        qt_cmd("ZADD %s %lld c1 %lld c2 %lld c3", qt_key(q, "completed"), old, old + 1, young));
    assert_int_equal(ferry_queue_clean(q, "delayed", 3600000, 0, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "d1");
    ferry_queue_job_ids_free(ids, n);
    /* BullMQ looks at the `limit` most urgent only: p1 (young) hides p2 */
    assert_int_equal(ferry_queue_clean(q, "prioritized", 3600000, 1, &ids, &n, &e), 0);
    assert_int_equal(n, 0);
    assert_null(ids);
    assert_int_equal(ferry_queue_clean(q, "prioritized", 3600000, 0, NULL, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_string_equal(qt_zrange(qt_key(q, "prioritized")), "p1,1");
    assert_int_equal(ferry_queue_clean(q, "completed", 3600000, 0, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "c1,c2");
    ferry_queue_job_ids_free(ids, n);
    assert_int_equal(ferry_queue_clean(q, "failed", 0, 0, &ids, &n, &e), 0);
    assert_int_equal(n, 0);
    /* one `cleaned` event per call, 0 included */
    assert_string_equal(qt_events(q), "cleaned:count=3|cleaned:count=1|cleaned:count=1|"
                                      "cleaned:count=0|cleaned:count=1|cleaned:count=2|"
                                      "cleaned:count=0");
    /* bad input changes nothing */
    assert_int_equal(ferry_queue_clean(q, "active", 0, 0, &ids, &n, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "unknown state"));
    assert_int_equal(ferry_queue_clean(q, "wait", -1, 0, &ids, &n, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_clean(q, "wait", 0, -1, &ids, &n, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_clean(q, "wait", 0, 0, &ids, NULL, &e), FERRY_EINVAL);
    assert_int_equal(qt_ival(qt_cmd("XLEN %s", qt_key(q, "events"))), 7);
    ferry_queue_close(q);
}

/* Hard removal: the job scheduler's iteration stays, dedup keys go, a parent in the same
 * queue left without children is deleted, one in another queue goes to wait. */
static void test_clean_hard_removal(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, "clean2", NULL);
    ferry_queue *other = qt_open(prefix, "clean2other", NULL);
    ferry_error e = {0};
    long long old = ferry__now_ms() - 7200000;
    put_job(q, "repeat:s1:123", old, -1, -1);
    freeReplyObject(qt_cmd("HSET %s rjk s1", qt_key(q, "repeat:s1:123")));
    freeReplyObject(qt_cmd("ZADD %s 123 s1", qt_key(q, "repeat")));
    put_job(q, "dd", old, -1, -1);
    freeReplyObject(qt_cmd("HSET %s deid x1", qt_key(q, "dd")));
    freeReplyObject(qt_cmd("SET %s dd", qt_key(q, "de:x1")));
    put_job(q, "c1", old, -1, -1);
    put_job(q, "c2", old, -1, -1);
    put_job(q, "par", old, -1, -1);
    put_job(other, "opar", old, -1, -1);
    freeReplyObject(qt_cmd("HSET %s parentKey %s", qt_key(q, "c1"), qt_key(q, "par")));
    freeReplyObject(qt_cmd("HSET %s parentKey %s", qt_key(q, "c2"), qt_key(other, "opar")));
    freeReplyObject(qt_cmd("SADD %s:dependencies %s", qt_key(q, "par"), qt_key(q, "c1")));
    freeReplyObject(qt_cmd("SADD %s:dependencies %s", qt_key(other, "opar"), qt_key(q, "c2")));
    freeReplyObject(qt_cmd("ZADD %s 1 par", qt_key(q, "waiting-children")));
    freeReplyObject(qt_cmd("ZADD %s 1 opar", qt_key(other, "waiting-children")));
    freeReplyObject(qt_cmd("RPUSH %s repeat:s1:123 dd c1 c2", qt_key(q, "wait")));
    char **ids = NULL;
    size_t n = 0;
    assert_int_equal(ferry_queue_clean(q, "wait", 0, 0, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "dd,c1,c2");
    ferry_queue_job_ids_free(ids, n);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "repeat:s1:123");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "de:x1"))), 0);
    assert_int_equal(
        qt_ival(qt_cmd("EXISTS %s %s:dependencies", qt_key(q, "par"), qt_key(q, "par"))), 0);
    assert_string_equal(qt_zrange(qt_key(q, "waiting-children")), "");
    assert_string_equal(qt_lrange(qt_key(other, "wait")), "opar");
    assert_string_equal(qt_zrange(qt_key(other, "marker")), "0,0");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(other, "events"))), 0);
    ferry_queue_close(other);
    ferry_queue_close(q);
}

/* More than one call: exactly `limit`, and everything without one. */
static void test_clean_chunks(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "clean3", NULL);
    ferry_error e = {0};
    enum { N = 10005 };
    const char **argv = calloc(2 * N + 2, sizeof *argv);
    char(*vals)[16] = calloc(N, sizeof *vals);
    argv[0] = "ZADD";
    argv[1] = qt_key(q, "failed");
    for (int i = 0; i < N; i++) {
        snprintf(vals[i], sizeof vals[i], "j%d", i);
        argv[2 + 2 * i] = "1000";
        argv[3 + 2 * i] = vals[i];
    }
    redisReply *r = NULL;
    if (ferry__conn_command_argv(qt_conn, 2 * N + 2, argv, NULL, &r, &e))
        fail_msg("ZADD: %s", e.message);
    freeReplyObject(r);
    size_t n = 0;
    assert_int_equal(ferry_queue_clean(q, "failed", 0, 10002, NULL, &n, &e), 0);
    assert_int_equal(n, 10002);
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(q, "failed"))), 3);
    assert_string_equal(qt_events(q), "cleaned:count=10000|cleaned:count=2");
    assert_int_equal(ferry_queue_clean(q, "failed", 0, 0, NULL, &n, &e), 0);
    assert_int_equal(n, 3);
    free(argv);
    free(vals);
    ferry_queue_close(q);
}

static void test_drain(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, "drain1", NULL);
    ferry_error e = {0};
    enum { M = 2500 };
    const char **argv = calloc(M + 2, sizeof *argv);
    char(*vals)[16] = calloc(M, sizeof *vals);
    char wait_key[600];
    snprintf(wait_key, sizeof wait_key, "%s", qt_key(q, "wait")); /* qt_key's buffers rotate */
    argv[0] = "RPUSH";
    argv[1] = wait_key;
    for (int i = 0; i < M; i++) {
        snprintf(vals[i], sizeof vals[i], "w%d", i);
        argv[i + 2] = vals[i];
        put_job(q, vals[i], 1, -1, -1);
    }
    redisReply *r = NULL;
    if (ferry__conn_command_argv(qt_conn, M + 2, argv, NULL, &r, &e))
        fail_msg("RPUSH: %s", e.message);
    freeReplyObject(r);
    /* scheduler iterations in wait (in the middle) and in delayed are kept */
    freeReplyObject(qt_cmd("ZADD %s 5 s1 7 s2", qt_key(q, "repeat")));
    freeReplyObject(qt_cmd("LINSERT %s BEFORE w1500 repeat:s1:5", qt_key(q, "wait")));
    freeReplyObject(qt_cmd("ZADD %s 1 repeat:s2:7 2 d1", qt_key(q, "delayed")));
    freeReplyObject(qt_cmd("ZADD %s 1 p1 2 p2", qt_key(q, "prioritized")));
    freeReplyObject(qt_cmd("RPUSH %s l1", qt_key(q, "paused")));
    put_job(q, "d1", 1, -1, -1);
    put_job(q, "p1", 1, -1, -1);
    freeReplyObject(qt_cmd("ZADD %s 1 c1", qt_key(q, "completed")));
    freeReplyObject(qt_cmd("LPUSH %s a1", qt_key(q, "active")));
    long long removed = 0;
    assert_int_equal(ferry_queue_drain(q, 0, &removed, &e), 0);
    assert_int_equal(removed, M + 1 + 2);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "repeat:s1:5");
    assert_int_equal(
        qt_ival(qt_cmd("EXISTS %s %s %s", qt_key(q, "w0"), qt_key(q, "w2499"), qt_key(q, "p1"))),
        0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "paused"))), 0);
    assert_string_equal(qt_zrange(qt_key(q, "delayed")), "repeat:s2:7,1,d1,2");
    assert_string_equal(qt_lrange(qt_key(q, "active")), "a1");
    assert_string_equal(qt_zrange(qt_key(q, "completed")), "c1,1");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "events"))), 0);
    assert_int_equal(ferry_queue_drain(q, 1, &removed, &e), 0);
    assert_int_equal(removed, 1);
    assert_string_equal(qt_zrange(qt_key(q, "delayed")), "repeat:s2:7,1");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "d1"))), 0);
    assert_int_equal(ferry_queue_drain(q, 1, NULL, &e), 0);
    assert_int_equal(ferry_queue_drain(NULL, 1, NULL, &e), FERRY_EINVAL);
    free(argv);
    free(vals);
    ferry_queue_close(q);
}

static void test_cli_clean_drain(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, "clicd", NULL);
    long long old = ferry__now_ms() - 7200000;
    put_job(q, "a", old, -1, -1);
    put_job(q, "b", ferry__now_ms(), -1, -1);
    freeReplyObject(qt_cmd("LPUSH %s a b", qt_key(q, "wait")));
    freeReplyObject(qt_cmd("ZADD %s 1 c1 2 c2", qt_key(q, "completed")));
    const char *url = cli_url();
    cli_run r;
    CLI(r, "queue", "clean", "clicd", "--grace", "1h", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_string_equal(r.err, "ferry queue clean: --state is required\n");
    cli_run_free(&r);
    CLI(r, "queue", "clean", "clicd", "--state", "wait", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--grace is required"));
    cli_run_free(&r);
    CLI(r, "queue", "clean", "clicd", "--state", "wait", "--grace", "1w", "--redis", url,
        "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--grace: expected 0 or a whole number with a unit"));
    cli_run_free(&r);
    CLI(r, "queue", "clean", "clicd", "--state", "wait", "--grace", "-5ms", "--redis", url,
        "--prefix", prefix);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "queue", "clean", "clicd", "--state", "wait", "--grace", "30m", "--redis", url,
        "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue clicd: 1 wait job deleted\n  a\n");
    cli_run_free(&r);
    CLI(r, "queue", "clean", "clicd", "--state", "completed", "--grace", "0", "--limit", "1",
        "--json", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"count\":1,\"ids\":[\"c1\"]}\n");
    cli_run_free(&r);
    CLI(r, "queue", "drain", "clicd", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue clicd: drained, 1 job deleted\n");
    cli_run_free(&r);
    CLI(r, "queue", "drain", "clicd", "--delayed", "--json", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"deleted\":0}\n");
    cli_run_free(&r);
    CLI(r, "queue", "drain", "clicd", "--redis", "redis://127.0.0.1:1", "--timeout", "500");
    CLI_EXPECT(r, 1);
    cli_run_free(&r);
    assert_string_equal(qt_zrange(qt_key(q, "completed")), "c2,2");
    ferry_queue_close(q);
}

/* ---- job page / job list -------------------------------------------------------------- */

static void test_job_page(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "page1", NULL);
    ferry_error e = {0};
    for (int i = 1; i <= 6; i++)
        qt_add_expect(q, i % 2 ? "odd" : "even", NULL, NULL, (char[]){(char)('0' + i), 0});
    /* ids without a job: one at the head, one in the middle */
    freeReplyObject(qt_cmd("LPUSH %s gone1", qt_key(q, "wait")));
    freeReplyObject(qt_cmd("LINSERT %s AFTER 4 gone2", qt_key(q, "wait")));
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "gone1,6,5,4,gone2,3,2,1");
    char **ids = NULL;
    size_t n = 0;
    assert_int_equal(ferry_queue_job_page(q, "wait", 0, 2, 0, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "6,5,4"); /* filled up from behind gone1 */
    ferry_queue_job_ids_free(ids, n);
    /* positions 2..4 are 5, 4, gone2: gone2 skipped, 3 (position 5) fills its place */
    assert_int_equal(ferry_queue_job_page(q, "waiting", 2, 4, 0, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "5,4,3");
    ferry_queue_job_ids_free(ids, n);
    assert_int_equal(ferry_queue_job_page(q, "wait", 0, 3, 1, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "1,2,3,4");
    ferry_queue_job_ids_free(ids, n);
    assert_int_equal(ferry_queue_job_page(q, "wait", 5, -1, 1, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "5,6");
    ferry_queue_job_ids_free(ids, n);
    assert_int_equal(ferry_queue_job_page(q, "wait", 50, 60, 1, &ids, &n, &e), 0);
    assert_int_equal(n, 0);
    assert_null(ids);
    /* sorted sets: by descending score, asc by ascending */
    freeReplyObject(qt_cmd("ZADD %s 30 3 10 1 20 2 25 gone3", qt_key(q, "completed")));
    assert_int_equal(ferry_queue_job_page(q, "completed", 0, 1, 0, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "3,2");
    ferry_queue_job_ids_free(ids, n);
    assert_int_equal(ferry_queue_job_page(q, "completed", 0, -1, 1, &ids, &n, &e), 0);
    assert_string_equal(joined_ids(ids, n), "1,2,3");
    ferry_queue_job_ids_free(ids, n);
    /* bad input */
    assert_int_equal(ferry_queue_job_page(q, "done", 0, 1, 0, &ids, &n, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "unknown state"));
    assert_int_equal(ferry_queue_job_page(q, "wait", 3, 2, 0, &ids, &n, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_job_page(q, "wait", -1, 2, 0, &ids, &n, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_job_page(q, "wait", 0, FERRY_QUEUE_IDS_MAX, 0, &ids, &n, &e),
                     FERRY_EINVAL);
    assert_non_null(strstr(e.message, "at most 10000"));
    assert_int_equal(ferry_queue_job_page(q, "wait", 0, 1, 0, NULL, &n, &e), FERRY_EINVAL);
    /* read-only: the ids without a job are still there */
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "gone1,6,5,4,gone2,3,2,1");
    ferry_queue_close(q);
}

static void test_cli_job_list(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, "clilist", NULL);
    qt_add_expect(q, "a\nb", NULL, "{\"timestamp\":1700000000000}", "1");
    qt_add_expect(q, "other", NULL, "{\"timestamp\":1700000001000}", "2");
    put_finished(q, "f1", "failed", 1700000002000, "{}", 0);
    freeReplyObject(qt_cmd("HSET %s failedReason %s", qt_key(q, "f1"), "bad\x1b[31m"));
    const char *url = cli_url();
    cli_run r;
    CLI(r, "job", "list", "clilist", "--state", "waiting", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "2  other  attempts 0  added 2023-11-14T22:13:21Z\n"
                               "1  a\\nb  attempts 0  added 2023-11-14T22:13:20Z\n");
    cli_run_free(&r);
    CLI(r, "job", "list", "clilist", "--state", "wait", "--asc", "--limit", "1", "--redis", url,
        "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "1  a\\nb  attempts 0  added 2023-11-14T22:13:20Z\n");
    cli_run_free(&r);
    CLI(r, "job", "list", "clilist", "--state", "wait", "--name", "other", "--json", "--redis", url,
        "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), 1);
    assert_non_null(strstr(r.out, "\"id\":\"2\""));
    cli_run_free(&r);
    CLI(r, "job", "list", "clilist", "--state", "failed", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "f1  n  attempts 2  added 2023-11-14T22:13:20Z  reason: "
                               "bad\\x1b[31m\n");
    cli_run_free(&r);
    CLI(r, "job", "list", "clilist", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_string_equal(r.err, "ferry job list: --state is required\n");
    cli_run_free(&r);
    CLI(r, "job", "list", "clilist", "--state", "wait", "--end", "5", "--limit", "2", "--redis",
        url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--limit cannot be combined with --end"));
    cli_run_free(&r);
    CLI(r, "job", "list", "clilist", "--state", "wait", "--start", "5", "--end", "2", "--redis",
        url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--end 2 is before --start 5"));
    cli_run_free(&r);
    CLI(r, "job", "list", "clilist", "--state", "wait", "--start", "0", "--end", "10000", "--redis",
        url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "at most 10000 positions per page"));
    cli_run_free(&r);
    CLI(r, "job", "list", "clilist", "--state", "wait", "--redis", "redis://127.0.0.1:1",
        "--timeout", "500");
    CLI_EXPECT(r, 1);
    cli_run_free(&r);
    ferry_queue_close(q);
}

/* ---- queue names / queue list --------------------------------------------------------- */

static void test_queue_names(void **state) {
    (void)state;
    /* glob characters in the prefix are matched as themselves: a prefix they would match as
     * a pattern (lookalike) is not listed */
    char prefix[128], lookalike[128];
    snprintf(prefix, sizeof prefix, "%s-[g]*?", th_prefix());
    snprintf(lookalike, sizeof lookalike, "%s-gxy", th_prefix());
    ferry_queue *a = qt_open(prefix, "beta", NULL);
    ferry_queue *b = qt_open(prefix, "alpha", NULL);
    ferry_queue *c = qt_open(lookalike, "other", NULL);
    /* keys that end in :meta but are not a queue's */
    freeReplyObject(qt_cmd("SET %s:x:y:meta 1", prefix));
    freeReplyObject(qt_cmd("SET %s::meta 1", prefix));
    ferry_redis_options ro = th_redis_options(0);
    ferry_error e = {0};
    char **names = NULL;
    size_t n = 0;
    int complete = 0;
    assert_int_equal(ferry_queue_names(&ro, prefix, 100, &names, &n, &complete, &e), 0);
    assert_string_equal(joined_ids(names, n), "alpha,beta");
    assert_int_equal(complete, 1);
    ferry_queue_job_ids_free(names, n);
    assert_int_equal(ferry_queue_names(&ro, prefix, 1, &names, &n, &complete, &e), 0);
    assert_int_equal(n, 1);
    assert_int_equal(complete, 0);
    ferry_queue_job_ids_free(names, n);
    assert_int_equal(ferry_queue_names(&ro, "no-such-prefix-xyz", 10, &names, &n, NULL, &e), 0);
    assert_int_equal(n, 0);
    assert_null(names);
    assert_int_equal(ferry_queue_names(&ro, prefix, 0, &names, &n, NULL, &e), FERRY_EINVAL);
    assert_int_equal(
        ferry_queue_names(&ro, prefix, FERRY_QUEUE_NAMES_MAX + 1, &names, &n, NULL, &e),
        FERRY_EINVAL);
    assert_int_equal(ferry_queue_names(&ro, "", 10, &names, &n, NULL, &e), FERRY_EINVAL);
    ferry_redis_options bad = ro;
    bad.url = "redis://127.0.0.1:1";
    bad.connect_timeout_ms = 500;
    assert_int_not_equal(ferry_queue_names(&bad, prefix, 10, &names, &n, NULL, &e), 0);
    ferry_queue_close(a);
    ferry_queue_close(b);
    ferry_queue_close(c);
}

static void test_cli_queue_list(void **state) {
    (void)state;
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s-list", th_prefix());
    ferry_queue *a = qt_open(prefix, "q1", NULL);
    ferry_queue *b = qt_open(prefix, "q2", NULL);
    qt_add_expect(a, "x", NULL, NULL, "1");
    qt_add_expect(b, "x", NULL, "{\"delay\":60000}", "1");
    ferry_error e = {0};
    assert_int_equal(ferry_queue_pause(b, &e), 0);
    const char *url = cli_url();
    cli_run r;
    CLI(r, "queue", "list", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "q1  waiting 1  active 0  delayed 0  prioritized 0  completed 0  "
                               "failed 0  waiting-children 0\n"
                               "q2  waiting 0  active 0  delayed 1  prioritized 0  completed 0  "
                               "failed 0  waiting-children 0  PAUSED\n");
    assert_string_equal(r.err, "");
    cli_run_free(&r);
    CLI(r, "queue", "list", "--json", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    json_error_t je;
    json_t *doc = json_loads(r.out, 0, &je);
    assert_non_null(doc);
    assert_true(json_is_true(json_object_get(doc, "complete")));
    json_t *qs = json_object_get(doc, "queues");
    assert_int_equal(json_array_size(qs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(qs, 1), "name")), "q2");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(qs, 1), "delayed")), 1);
    assert_true(json_is_true(json_object_get(json_array_get(qs, 1), "isPaused")));
    json_decref(doc);
    cli_run_free(&r);
    CLI(r, "queue", "list", "--max", "1", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), 1);
    assert_non_null(strstr(r.err, "the list is incomplete"));
    cli_run_free(&r);
    CLI(r, "queue", "list", "--max", "0", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "queue", "list", "--redis", "redis://127.0.0.1:1", "--timeout", "500");
    CLI_EXPECT(r, 1);
    cli_run_free(&r);
    ferry_queue_close(a);
    ferry_queue_close(b);
}

/* ---- job logs ------------------------------------------------------------------------- */

static void test_job_logs(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "logs1", NULL);
    ferry_error e = {0};
    qt_add_expect(q, "a", NULL, "{\"keepLogs\":2}", "1");
    qt_add_expect(q, "b", NULL, NULL, "2");
    long long count = 0;
    /* keep every line / the newest N / the job's own keepLogs */
    assert_int_equal(ferry_queue_add_log(q, "2", "one", 0, &count, &e), 0);
    assert_int_equal(count, 1);
    assert_int_equal(ferry_queue_add_log(q, "2", "two\nlines", 0, &count, &e), 0);
    assert_int_equal(ferry_queue_add_log(q, "2", "three", 0, &count, &e), 0);
    assert_int_equal(count, 3);
    assert_string_equal(qt_lrange(qt_key(q, "2:logs")), "one,two\nlines,three");
    assert_int_equal(ferry_queue_add_log(q, "2", "four", 2, &count, &e), 0);
    assert_int_equal(count, 2);
    assert_string_equal(qt_lrange(qt_key(q, "2:logs")), "three,four");
    for (int i = 0; i < 3; i++)
        assert_int_equal(ferry_queue_add_log(q, "1", (char[]){(char)('x' + i), 0},
                                             FERRY_LOG_KEEP_JOB, &count, &e),
                         0);
    assert_int_equal(count, 2);
    assert_string_equal(qt_lrange(qt_key(q, "1:logs")), "y,z");
    /* the job's keepLogs absent: every line */
    assert_int_equal(ferry_queue_add_log(q, "2", "five", FERRY_LOG_KEEP_JOB, &count, &e), 0);
    assert_int_equal(count, 3);
    /* refusals change nothing */
    assert_int_equal(ferry_queue_add_log(q, "9", "x", 0, &count, &e), FERRY_ENOTFOUND);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "9:logs"))), 0);
    assert_int_equal(ferry_queue_add_log(q, "2", "x", -2, NULL, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_add_log(q, "meta", "x", 0, NULL, &e), FERRY_EINVAL);
    char *big = malloc(FERRY_JOB_LOG_LINE_MAX + 2);
    memset(big, 'a', FERRY_JOB_LOG_LINE_MAX + 1);
    big[FERRY_JOB_LOG_LINE_MAX + 1] = 0;
    assert_int_equal(ferry_queue_add_log(q, "2", big, 0, NULL, &e), FERRY_ETOOBIG);
    big[FERRY_JOB_LOG_LINE_MAX] = 0;
    assert_int_equal(ferry_queue_add_log(q, "1", big, 1, &count, &e), 0);
    assert_int_equal(count, 1); /* exactly at the limit is accepted */
    redisReply *line = qt_cmd("LINDEX %s 0", qt_key(q, "1:logs"));
    assert_int_equal(line->len, FERRY_JOB_LOG_LINE_MAX);
    freeReplyObject(line);
    free(big);
    assert_string_equal(qt_lrange(qt_key(q, "2:logs")), "three,four,five");

    /* reading: oldest first, newest first, ranges, totals */
    char **lines = NULL;
    size_t n = 0;
    assert_int_equal(ferry_queue_job_logs(q, "2", 0, -1, 1, &lines, &n, &count, &e), 0);
    assert_string_equal(joined_ids(lines, n), "three,four,five");
    assert_int_equal(count, 3);
    ferry_queue_job_ids_free(lines, n);
    assert_int_equal(ferry_queue_job_logs(q, "2", 0, 1, 0, &lines, &n, &count, &e), 0);
    assert_string_equal(joined_ids(lines, n), "five,four");
    ferry_queue_job_ids_free(lines, n);
    assert_int_equal(ferry_queue_job_logs(q, "2", 1, 5, 1, &lines, &n, &count, &e), 0);
    assert_string_equal(joined_ids(lines, n), "four,five");
    ferry_queue_job_ids_free(lines, n);
    assert_int_equal(ferry_queue_job_logs(q, "9", 0, -1, 1, &lines, &n, &count, &e), 0);
    assert_int_equal(n, 0);
    assert_null(lines);
    assert_int_equal(count, 0);
    assert_int_equal(ferry_queue_job_logs(q, "2", 2, 1, 1, &lines, &n, &count, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_job_logs(q, "2", 0, FERRY_QUEUE_IDS_MAX, 1, &lines, &n, NULL, &e),
                     FERRY_EINVAL);
    ferry_queue_close(q);
}

static void test_cli_job_logs(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, "clilogs", NULL);
    ferry_error e = {0};
    qt_add_expect(q, "a", NULL, NULL, "1");
    qt_add_expect(q, "b", NULL, NULL, "2");
    assert_int_equal(ferry_queue_add_log(q, "1", "first", 0, NULL, &e), 0);
    assert_int_equal(ferry_queue_add_log(q, "1", "second\x1b[2J\nline", 0, NULL, &e), 0);
    assert_int_equal(ferry_queue_add_log(q, "1", "third \"q\"", 0, NULL, &e), 0);
    const char *url = cli_url();
    cli_run r;
    CLI(r, "job", "logs", "clilogs", "1", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "first\nsecond\\x1b[2J\\nline\nthird \"q\"\n");
    assert_string_equal(r.err, "");
    cli_run_free(&r);
    CLI(r, "job", "logs", "clilogs", "1", "--desc", "--limit", "1", "--redis", url, "--prefix",
        prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "third \"q\"\n");
    assert_string_equal(r.err, "ferry job logs: 1 of 3 lines shown (see --start, --limit)\n");
    cli_run_free(&r);
    CLI(r, "job", "logs", "clilogs", "1", "--start", "1", "--end", "1", "--json", "--redis", url,
        "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"logs\":[\"second\\u001b[2J\\nline\"],\"count\":3}\n");
    cli_run_free(&r);
    CLI(r, "job", "logs", "clilogs", "2", "--json", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"logs\":[],\"count\":0}\n");
    cli_run_free(&r);
    CLI(r, "job", "logs", "clilogs", "7", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 1);
    assert_string_equal(r.err, "ferry job logs: job 7 not found in queue clilogs\n");
    cli_run_free(&r);
    CLI(r, "job", "logs", "clilogs", "1", "--end", "3", "--limit", "1", "--redis", url, "--prefix",
        prefix);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "job", "logs", "clilogs", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    ferry_queue_close(q);
}

/* ---- workers -------------------------------------------------------------------------- */

/* A connection of the test Redis named `name` (as a worker names its blocking one). */
static ferry_conn *named_conn(const char *name) {
    ferry_conn *c = th_conn();
    freeReplyObject(th_cmd_ok(c, "CLIENT SETNAME %s", name));
    return c;
}

static void test_queue_workers(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, "wq", NULL); /* base64("wq") = "d3E=" */
    char n1[256], n2[256], n3[256], n4[256];
    snprintf(n1, sizeof n1, "%s:d3E=", prefix);
    snprintf(n2, sizeof n2, "%s:d3E=:w:alpha", prefix);
    snprintf(n3, sizeof n3, "%s:d3E=x", prefix);       /* another queue's name, longer */
    snprintf(n4, sizeof n4, "%s:d3E=:x:beta", prefix); /* not the worker form */
    ferry_conn *c[4] = {named_conn(n1), named_conn(n2), named_conn(n3), named_conn(n4)};
    ferry_queue_worker *w = NULL;
    size_t n = 0;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_workers(q, &w, &n, &e), 0);
    assert_int_equal(n, 2);
    int seen_unnamed = 0, seen_alpha = 0;
    for (size_t i = 0; i < n; i++) {
        assert_non_null(w[i].id);
        assert_non_null(w[i].addr);
        assert_true(w[i].age_s >= 0 && w[i].idle_s >= 0);
        if (!strcmp(w[i].rawname, n1)) {
            assert_null(w[i].worker_name);
            seen_unnamed = 1;
        } else {
            assert_string_equal(w[i].rawname, n2);
            assert_string_equal(w[i].worker_name, "alpha");
            seen_alpha = 1;
        }
    }
    assert_true(seen_unnamed && seen_alpha);
    ferry_queue_workers_free(w, n);

    const char *url = cli_url();
    cli_run r;
    CLI(r, "queue", "workers", "wq", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), 2);
    assert_non_null(strstr(r.out, "alpha  id "));
    assert_non_null(strstr(r.out, "-  id "));
    cli_run_free(&r);
    CLI(r, "queue", "workers", "wq", "--json", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    json_error_t je;
    json_t *doc = json_loads(r.out, 0, &je);
    assert_non_null(doc);
    assert_int_equal(json_array_size(json_object_get(doc, "workers")), 2);
    json_decref(doc);
    cli_run_free(&r);
    for (int i = 0; i < 4; i++)
        ferry__conn_close(c[i]);
    assert_int_equal(ferry_queue_workers(q, &w, &n, &e), 0);
    assert_int_equal(n, 0);
    assert_null(w);
    CLI(r, "queue", "workers", "--redis", url);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_job),
        cmocka_unit_test(test_retry_job_refusals_change_nothing),
        cmocka_unit_test(test_retry_while_paused_or_maxed_sets_no_marker),
        cmocka_unit_test(test_retry_flow_child),
        cmocka_unit_test(test_retry_jobs_chunks_and_limit),
        cmocka_unit_test(test_empty_moves_write_nothing),
        cmocka_unit_test(test_promote_job),
        cmocka_unit_test(test_promote_jobs),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_clean_lists_and_sets),
        cmocka_unit_test(test_clean_hard_removal),
        cmocka_unit_test(test_clean_chunks),
        cmocka_unit_test(test_drain),
        cmocka_unit_test(test_cli_clean_drain),
        cmocka_unit_test(test_job_page),
        cmocka_unit_test(test_cli_job_list),
        cmocka_unit_test(test_queue_names),
        cmocka_unit_test(test_cli_queue_list),
        cmocka_unit_test(test_job_logs),
        cmocka_unit_test(test_cli_job_logs),
        cmocka_unit_test(test_queue_workers),
    };
    int failed = cmocka_run_group_tests(tests, qt_setup, qt_teardown);
    th_tmpdir_remove();
    return th_exit(failed);
}

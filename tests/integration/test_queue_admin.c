/* test_queue_admin.c - the producer's other calls against a real Redis: counts,
 * pause/resume (with the legacy v5 paused list), get_job in every state, remove_job, and
 * deadlines and recovery when Redis is unreachable or frozen; one handle shared by threads. */
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/qt.h"

/* ---- counts, pause/resume ------------------------------------------------------------- */

static void test_counts(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "counts", NULL);
    ferry_job_counts c;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_counts(q, &c, &e), 0);
    assert_int_equal(c.waiting + c.active + c.completed + c.failed + c.delayed + c.prioritized +
                         c.waiting_children + c.paused,
                     0);
    qt_add_expect(q, "w", NULL, NULL, "1");
    qt_add_expect(q, "w", NULL, NULL, "2");
    qt_add_expect(q, "p", NULL, "{\"priority\":1}", "3");
    qt_add_expect(q, "d", NULL, "{\"delay\":60000}", "4");
    freeReplyObject(qt_cmd("LPUSH %s a1", qt_key(q, "active")));
    freeReplyObject(qt_cmd("ZADD %s 1 c1 2 c2 3 c3", qt_key(q, "completed")));
    freeReplyObject(qt_cmd("ZADD %s 1 f1", qt_key(q, "failed")));
    freeReplyObject(qt_cmd("ZADD %s 1 wc1 2 wc2", qt_key(q, "waiting-children")));
    freeReplyObject(qt_cmd("LPUSH %s lp1 lp2 lp3", qt_key(q, "paused")));
    assert_int_equal(ferry_queue_counts(q, &c, &e), 0);
    assert_int_equal(c.waiting, 2);
    assert_int_equal(c.prioritized, 1);
    assert_int_equal(c.delayed, 1);
    assert_int_equal(c.active, 1);
    assert_int_equal(c.completed, 3);
    assert_int_equal(c.failed, 1);
    assert_int_equal(c.waiting_children, 2);
    assert_int_equal(c.paused, 3);
    ferry_queue_close(q);
}

static void test_pause_resume(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "pause", NULL);
    ferry_error e = {0};
    int paused = -1;
    qt_add_expect(q, "before", NULL, NULL, "1");
    assert_int_equal(ferry_queue_is_paused(q, &paused, &e), 0);
    assert_int_equal(paused, 0);
    assert_int_equal(ferry_queue_pause(q, &e), 0);
    assert_int_equal(ferry_queue_is_paused(q, &paused, &e), 0);
    assert_int_equal(paused, 1);
    assert_string_equal(qt_hget(qt_key(q, "meta"), "paused"), "1");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "marker"))), 0);
    /* adds while paused go to wait / prioritized without a marker */
    qt_add_expect(q, "during", NULL, NULL, "2");
    qt_add_expect(q, "during-p", NULL, "{\"priority\":4}", "3");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "marker"))), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "2,1");
    assert_int_equal(ferry_queue_resume(q, &e), 0);
    assert_int_equal(ferry_queue_is_paused(q, &paused, &e), 0);
    assert_int_equal(paused, 0);
    assert_string_equal(qt_hget(qt_key(q, "meta"), "paused"), "(nil)");
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "0,0");
    assert_string_equal(qt_events(q), "added:jobId=1:name=before|waiting:jobId=1|paused|"
                                      "added:jobId=2:name=during|waiting:jobId=2|"
                                      "added:jobId=3:name=during-p|waiting:jobId=3|resumed");
    ferry_queue_close(q);

    /* nothing ready: resume sets the delay marker */
    q = qt_open(th_prefix(), "pause2", NULL);
    assert_int_equal(ferry_queue_pause(q, &e), 0);
    qt_add_expect(q, "later", NULL, "{\"delay\":5000,\"timestamp\":1795978582232}", "1");
    freeReplyObject(qt_cmd("DEL %s", qt_key(q, "marker")));
    assert_int_equal(ferry_queue_resume(q, &e), 0);
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "1,1795978587232");
    ferry_queue_close(q);
}

static void test_resume_migrates_legacy_paused(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "legacy", NULL);
    ferry_error e = {0};
    /* v5 layout: paused list, no wait -> RENAME */
    freeReplyObject(qt_cmd("HSET %s paused 1", qt_key(q, "meta")));
    freeReplyObject(qt_cmd("LPUSH %s 1 2 3", qt_key(q, "paused")));
    assert_int_equal(ferry_queue_resume(q, &e), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "3,2,1");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "paused"))), 0);
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "0,0");
    ferry_queue_close(q);

    /* wait exists and the legacy list is longer than one call moves (7000) */
    q = qt_open(th_prefix(), "legacy2", NULL);
    qt_add_expect(q, "w", NULL, NULL, "1");
    assert_int_equal(ferry_queue_pause(q, &e), 0);
    enum { M = 7500 };
    const char **argv = calloc(M + 2, sizeof *argv);
    char(*vals)[16] = calloc(M, sizeof *vals);
    argv[0] = "RPUSH";
    argv[1] = qt_key(q, "paused");
    for (int i = 0; i < M; i++) {
        snprintf(vals[i], sizeof vals[i], "p%d", i);
        argv[i + 2] = vals[i];
    }
    redisReply *r = NULL;
    assert_int_equal(ferry__conn_command_argv(qt_conn, M + 2, argv, NULL, &r, &e), 0);
    assert_int_equal(r->integer, M);
    freeReplyObject(r);
    assert_int_equal(ferry_queue_resume(q, &e), 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "paused"))), 0);
    r = qt_cmd("LRANGE %s 0 -1", qt_key(q, "wait"));
    assert_int_equal(r->elements, M + 1);
    assert_string_equal(r->element[0]->str, "1");
    for (int i = 0; i < M; i++)
        assert_string_equal(r->element[i + 1]->str, vals[i]);
    freeReplyObject(r);
    r = qt_cmd("XRANGE %s - +", qt_key(q, "events"));
    int resumed = 0;
    for (size_t i = 0; i < r->elements; i++)
        resumed += !strcmp(r->element[i]->element[1]->element[1]->str, "resumed");
    freeReplyObject(r);
    assert_int_equal(resumed, 1);
    free(argv);
    free(vals);
    ferry_queue_close(q);
}

/* ---- get / remove --------------------------------------------------------------------- */

static void expect_state(ferry_queue *q, const char *id, const char *state) {
    ferry_job_info *info = NULL;
    ferry_error e = {0};
    if (ferry_queue_get_job(q, id, &info, &e)) fail_msg("get %s: %s", id, e.message);
    if (strcmp(info->state, state)) fail_msg("job %s state %s, want %s", id, info->state, state);
    ferry_job_info_free(info);
}

static void test_get_job(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "get", NULL);
    ferry_error e = {0};
    qt_add_expect(q, "w", "{\"a\":1}", "{\"attempts\":2,\"timestamp\":1700000000000}", "1");
    qt_add_expect(q, "p", NULL, "{\"priority\":9}", "2");
    qt_add_expect(q, "d", NULL, "{\"delay\":60000}", "3");
    for (int i = 4; i <= 9; i++)
        qt_add_expect(q, "x", NULL, NULL, (char[]){(char)('0' + i), 0});
    expect_state(q, "1", "waiting");
    expect_state(q, "2", "prioritized");
    expect_state(q, "3", "delayed");
    /* move the rest by hand into the other states */
    freeReplyObject(qt_cmd("LREM %s 1 4", qt_key(q, "wait")));
    freeReplyObject(qt_cmd("LPUSH %s 4", qt_key(q, "active")));
    freeReplyObject(qt_cmd("LREM %s 1 5", qt_key(q, "wait")));
    freeReplyObject(qt_cmd("ZADD %s 1 5", qt_key(q, "completed")));
    freeReplyObject(qt_cmd("LREM %s 1 6", qt_key(q, "wait")));
    freeReplyObject(qt_cmd("ZADD %s 1 6", qt_key(q, "failed")));
    freeReplyObject(qt_cmd("LREM %s 1 7", qt_key(q, "wait")));
    freeReplyObject(qt_cmd("ZADD %s 1 7", qt_key(q, "waiting-children")));
    freeReplyObject(qt_cmd("LREM %s 1 8", qt_key(q, "wait")));
    freeReplyObject(qt_cmd("LPUSH %s 8", qt_key(q, "paused")));
    freeReplyObject(qt_cmd("LREM %s 1 9", qt_key(q, "wait")));
    expect_state(q, "4", "active");
    expect_state(q, "5", "completed");
    expect_state(q, "6", "failed");
    expect_state(q, "7", "waiting-children");
    expect_state(q, "8", "waiting");
    expect_state(q, "9", "unknown");

    ferry_job_info *info = NULL;
    assert_int_equal(ferry_queue_get_job(q, "1", &info, &e), 0);
    assert_string_equal(info->id, "1");
    assert_string_equal(info->name, "w");
    assert_string_equal(info->data, "{\"a\":1}");
    assert_string_equal(info->opts, "{\"attempts\":2,\"timestamp\":1700000000000}");
    assert_int_equal(info->timestamp, 1700000000000LL);
    assert_int_equal(info->delay, 0);
    assert_int_equal(info->priority, 0);
    assert_int_equal(info->processed_on, -1);
    assert_int_equal(info->finished_on, -1);
    assert_int_equal(info->attempts_made, 0);
    assert_null(info->returnvalue);
    assert_null(info->failed_reason);
    assert_null(info->processed_by);
    ferry_job_info_free(info);

    freeReplyObject(
        qt_cmd("HSET %s processedOn 1700000000100 finishedOn 1700000000200 atm 2 ats 3 stc 1 "
               "returnvalue {\"ok\":true} failedReason boom stacktrace [\"e\"] progress 50 "
               "pb w1",
               qt_key(q, "5")));
    assert_int_equal(ferry_queue_get_job(q, "5", &info, &e), 0);
    assert_int_equal(info->processed_on, 1700000000100LL);
    assert_int_equal(info->finished_on, 1700000000200LL);
    assert_int_equal(info->attempts_made, 2);
    assert_int_equal(info->attempts_started, 3);
    assert_int_equal(info->stalled_count, 1);
    assert_string_equal(info->returnvalue, "{\"ok\":true}");
    assert_string_equal(info->failed_reason, "boom");
    assert_string_equal(info->stacktrace, "[\"e\"]");
    assert_string_equal(info->progress, "50");
    assert_string_equal(info->processed_by, "w1");
    ferry_job_info_free(info);
    /* legacy attemptsMade */
    freeReplyObject(qt_cmd("HSET %s attemptsMade 4", qt_key(q, "6")));
    assert_int_equal(ferry_queue_get_job(q, "6", &info, &e), 0);
    assert_int_equal(info->attempts_made, 4);
    ferry_job_info_free(info);

    info = (ferry_job_info *)&e;
    assert_int_equal(ferry_queue_get_job(q, "nope", &info, &e), FERRY_ENOTFOUND);
    assert_null(info);
    assert_non_null(strstr(e.message, "job nope not found"));
    assert_int_equal(ferry_queue_get_job(q, "", &info, &e), FERRY_EINVAL);
    ferry_job_info_free(NULL);
    ferry_queue_close(q);
}

static void test_remove_job(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "rm", NULL);
    ferry_error e = {0};
    qt_add_expect(q, "w", NULL, NULL, "1");
    qt_add_expect(q, "d", NULL, "{\"delay\":60000}", "2");
    qt_add_expect(q, "l", NULL, NULL, "3");
    freeReplyObject(qt_cmd("RPUSH %s line", qt_key(q, "1:logs")));
    freeReplyObject(qt_cmd("XTRIM %s MAXLEN 0", qt_key(q, "events")));

    assert_int_equal(ferry_queue_remove_job(q, "1", &e), 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s", qt_key(q, "1"), qt_key(q, "1:logs"))), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "3");
    assert_int_equal(ferry_queue_remove_job(q, "2", &e), 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "delayed"))), 0);
    assert_string_equal(qt_events(q), "removed:jobId=1:prev=wait|removed:jobId=2:prev=delayed");

    assert_int_equal(ferry_queue_remove_job(q, "1", &e), FERRY_ENOTFOUND);
    assert_non_null(strstr(e.message, "not found"));

    /* an id whose hash is gone is still taken out of its state, with its sub-keys */
    freeReplyObject(qt_cmd("XTRIM %s MAXLEN 0", qt_key(q, "events")));
    freeReplyObject(qt_cmd("LPUSH %s orphan", qt_key(q, "wait")));
    freeReplyObject(qt_cmd("RPUSH %s line", qt_key(q, "orphan:logs")));
    assert_int_equal(ferry_queue_remove_job(q, "orphan", &e), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "3");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "orphan:logs"))), 0);
    freeReplyObject(qt_cmd("RPUSH %s line", qt_key(q, "subkeys-only:logs")));
    assert_int_equal(ferry_queue_remove_job(q, "subkeys-only", &e), 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "subkeys-only:logs"))), 0);
    assert_string_equal(qt_events(q), "removed:jobId=orphan:prev=wait|"
                                      "removed:jobId=subkeys-only:prev=unknown");
    /* an id left alone in a state (no key at all): taken out, no event, as Node does */
    freeReplyObject(qt_cmd("LPUSH %s state-only", qt_key(q, "wait")));
    assert_int_equal(ferry_queue_remove_job(q, "state-only", &e), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "3");
    assert_string_equal(qt_events(q), "removed:jobId=orphan:prev=wait|"
                                      "removed:jobId=subkeys-only:prev=unknown");

    /* locked by a worker */
    freeReplyObject(qt_cmd("SET %s token PX 60000", qt_key(q, "3:lock")));
    assert_int_equal(ferry_queue_remove_job(q, "3", &e), FERRY_ESTATE);
    assert_non_null(strstr(e.message, "locked"));
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "3"))), 1);
    freeReplyObject(qt_cmd("DEL %s", qt_key(q, "3:lock")));

    /* the pending iteration of a job scheduler */
    freeReplyObject(qt_cmd("HSET %s name s rjk sch1", qt_key(q, "repeat:sch1:1000")));
    freeReplyObject(qt_cmd("ZADD %s 1000 sch1", qt_key(q, "repeat")));
    assert_int_equal(ferry_queue_remove_job(q, "repeat:sch1:1000", &e), FERRY_ESTATE);
    assert_non_null(strstr(e.message, "scheduler"));

    /* owned dedup key goes with the job, someone else's stays */
    freeReplyObject(qt_cmd("HSET %s deid dd1", qt_key(q, "3")));
    freeReplyObject(qt_cmd("SET %s 3", qt_key(q, "de:dd1")));
    qt_add_expect(q, "o", NULL, NULL, "4");
    freeReplyObject(qt_cmd("HSET %s deid dd2", qt_key(q, "4")));
    freeReplyObject(qt_cmd("SET %s other", qt_key(q, "de:dd2")));
    assert_int_equal(ferry_queue_remove_job(q, "3", &e), 0);
    assert_int_equal(ferry_queue_remove_job(q, "4", &e), 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s", qt_key(q, "de:dd1"), qt_key(q, "de:dd2"))), 1);
    assert_string_equal(qt_get(qt_key(q, "de:dd2")), "other");

    /* an id longer than ferry's producer takes (1024 bytes), as Node may write one */
    char long_id[2001], long_key[2600];
    memset(long_id, 'L', 2000);
    long_id[2000] = 0;
    snprintf(long_key, sizeof long_key, "%s:%s:%s", ferry_queue_prefix(q), ferry_queue_name(q),
             long_id);
    char *wait_before = strdup(qt_lrange(qt_key(q, "wait")));
    freeReplyObject(qt_cmd("HSET %s name long timestamp 1", long_key));
    freeReplyObject(qt_cmd("LPUSH %s %s", qt_key(q, "wait"), long_id));
    ferry_job_info *info = NULL;
    assert_int_equal(ferry_queue_get_job(q, long_id, &info, &e), 0);
    assert_string_equal(info->name, "long");
    assert_string_equal(info->state, "waiting");
    ferry_job_info_free(info);
    assert_int_equal(ferry_queue_remove_job(q, long_id, &e), 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", long_key)), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), wait_before);
    free(wait_before);
    freeReplyObject(qt_cmd("XTRIM %s MAXLEN 0", qt_key(q, "events")));

    /* the last pending child releases its flow parent */
    qt_add_expect(q, "child", NULL, NULL, "5");
    freeReplyObject(qt_cmd("HSET %s name parent", qt_key(q, "par")));
    freeReplyObject(qt_cmd("ZADD %s 1 par", qt_key(q, "waiting-children")));
    freeReplyObject(qt_cmd("SADD %s %s", qt_key(q, "par:dependencies"), qt_key(q, "5")));
    freeReplyObject(qt_cmd("HSET %s parentKey %s", qt_key(q, "5"), qt_key(q, "par")));
    freeReplyObject(qt_cmd("XTRIM %s MAXLEN 0", qt_key(q, "events")));
    assert_int_equal(ferry_queue_remove_job(q, "5", &e), 0);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "par");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "waiting-children"))), 0);
    assert_string_equal(qt_events(q),
                        "waiting:jobId=par:prev=waiting-children|removed:jobId=5:prev=wait");
    ferry_queue_close(q);
}

/* ---- deadlines ------------------------------------------------------------------------ */

static int closed_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_unreachable_fails_fast(void **state) {
    (void)state;
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", closed_port());
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = url;
    ro.connect_timeout_ms = 500;
    ro.command_timeout_ms = 500;
    ferry_queue_options o;
    ferry_queue_options_init(&o);
    o.redis = &ro;
    ferry_queue *q = NULL;
    ferry_error e = {0};
    int64_t t0 = ferry__mono_ms();
    int rc = ferry_queue_open("q", &o, &q, &e);
    assert_true(rc == FERRY_EIO || rc == FERRY_ETIMEDOUT);
    assert_null(q);
    assert_true(ferry__mono_ms() - t0 < 3000);
}

static int redis_pid(void) {
    const char *pidfile = th_env_require("REDIS_PIDFILE");
    FILE *f = fopen(pidfile, "r");
    assert_non_null(f);
    int pid = 0;
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    return pid;
}

/* Redis frozen (SIGSTOP: connections are accepted by the kernel, nothing answers): every
 * call fails within connect + command timeout; afterwards the same handle works again. */
static void test_frozen_redis_deadline_and_recovery(void **state) {
    (void)state;
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = th_env_require("REDIS_URL");
    ro.connect_timeout_ms = 300;
    ro.command_timeout_ms = 300;
    ferry_queue_options o;
    ferry_queue_options_init(&o);
    o.redis = &ro;
    o.prefix = th_prefix();
    ferry_queue *q = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_open("frozen", &o, &q, &e), 0);
    int pid = redis_pid();
    assert_int_equal(kill(pid, SIGSTOP), 0);
    int64_t t0 = ferry__mono_ms();
    ferry_job_spec s = {"x", NULL, NULL};
    int rc_add = ferry_queue_add(q, &s, NULL, &e);
    int64_t t1 = ferry__mono_ms();
    ferry_job_counts c;
    int rc_counts = ferry_queue_counts(q, &c, &e); /* reconnect + retry, same budget */
    int64_t t2 = ferry__mono_ms();
    kill(pid, SIGCONT);
    assert_int_equal(rc_add, FERRY_ETIMEDOUT);
    assert_true(rc_counts == FERRY_ETIMEDOUT || rc_counts == FERRY_EIO);
    /* budget 600 ms each; generous slack for a loaded 2-core box */
    assert_true(t1 - t0 < 2500);
    assert_true(t2 - t1 < 2500);
    /* Redis is back: the broken connection is replaced on the next call */
    assert_int_equal(ferry_queue_counts(q, &c, &e), 0);
    char *id = NULL;
    assert_int_equal(ferry_queue_add(q, &s, &id, &e), 0);
    free(id);
    ferry_queue_close(q);
}

/* Many threads share one handle: the mutex keeps the connection consistent. */
static void *adder(void *arg) {
    ferry_queue *q = arg;
    for (int i = 0; i < 200; i++) {
        ferry_job_spec s = {"t", "{}", NULL};
        char *id = NULL;
        ferry_error e = {0};
        if (ferry_queue_add(q, &s, &id, &e)) return (void *)1;
        free(id);
        ferry_job_counts c;
        if (ferry_queue_counts(q, &c, &e)) return (void *)1;
    }
    return NULL;
}

static void test_shared_between_threads(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "threads", NULL);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, adder, q);
    for (int i = 0; i < 4; i++) {
        void *rv;
        pthread_join(t[i], &rv);
        assert_null(rv);
    }
    assert_int_equal(qt_ival(qt_cmd("LLEN %s", qt_key(q, "wait"))), 800);
    assert_string_equal(qt_get(qt_key(q, "id")), "800");
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_pause_resume),
        cmocka_unit_test(test_resume_migrates_legacy_paused),
        cmocka_unit_test(test_get_job),
        cmocka_unit_test(test_remove_job),
        cmocka_unit_test(test_unreachable_fails_fast),
        cmocka_unit_test(test_frozen_redis_deadline_and_recovery),
        cmocka_unit_test(test_shared_between_threads),
    };
    return cmocka_run_group_tests(tests, qt_setup, qt_teardown);
}

/* test_queue_ages.c - ferry_queue_ages against the fixture's Redis: the oldest ready job
 * measured from when it became ready (plain, LIFO, prioritized at both ends of the priority
 * range, delayed and due but not promoted, delayed then promoted, retried after a fixed and
 * an exponential backoff, paused queue and legacy paused list), the oldest active job from
 * its start, an empty queue, and the bound (a job in the middle of a long list is not seen).
 * Jobs carry opts.timestamp in the past, so ages are known without waiting; the fields a
 * worker writes (processedOn, ats, atm) are set as BullMQ 6.7.0 writes them (protocol
 * §3.1) where a run is the case. Ages are compared to within a few seconds of clock
 * movement during the test. test_node builds the same cases with Node BullMQ 6.7.0 itself
 * (queue_ages_node.js: its producer, its worker failing a job into a fixed backoff, its
 * promote scripts, a job its worker holds active) and checks ferry's ages against the times
 * Node reports. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>

#include "support/qt.h"

#define SLACK 5.0 /* seconds the clock may move between writing a time and reading an age */

static ferry_job_ages ages(ferry_queue *q) {
    ferry_job_ages a;
    ferry_error e = {0};
    if (ferry_queue_ages(q, &a, &e)) fail_msg("ferry_queue_ages: %s", e.message);
    return a;
}

static void expect_ready(ferry_queue *q, double want_s) {
    ferry_job_ages a = ages(q);
    if (!a.ready_found) fail_msg("no ready job found, want age %.1f", want_s);
    if (a.oldest_ready_s < want_s - 0.001 || a.oldest_ready_s > want_s + SLACK)
        fail_msg("oldest ready age %.3f s, want %.1f s", a.oldest_ready_s, want_s);
}

/* opts JSON with a timestamp `ago_s` seconds in the past, plus `more` (may be ""). */
static const char *opts_ago(double ago_s, const char *more) {
    static char buf[512];
    long long ts = (long long)ferry__now_ms() - (long long)(ago_s * 1000);
    snprintf(buf, sizeof buf, "{\"timestamp\":%lld%s%s}", ts, more[0] ? "," : "", more);
    return buf;
}

static void add_ago(ferry_queue *q, double ago_s, const char *more) {
    free(qt_add(q, "j", NULL, opts_ago(ago_s, more)));
}

static void test_empty(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "empty", NULL);
    ferry_job_ages a = ages(q);
    assert_int_equal(a.ready_found, 0);
    assert_int_equal(a.active_found, 0);
    assert_true(a.oldest_ready_s == 0 && a.oldest_active_s == 0);
    ferry_error e = {0};
    assert_int_equal(ferry_queue_ages(NULL, &a, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_ages(q, NULL, &e), FERRY_EINVAL);
    ferry_queue_close(q);
}

static void test_plain_fifo(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "plain", NULL);
    add_ago(q, 100, "");
    for (int i = 0; i < 30; i++)
        add_ago(q, 1, "");
    expect_ready(q, 100);
    ferry_queue_close(q);
}

/* LIFO jobs are RPUSHed: the right end, where the oldest FIFO job also sits. The oldest
 * LIFO job is found next to it, and an old job at the left end (a promoted one) too. */
static void test_lifo(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "lifo", NULL);
    for (int i = 0; i < 30; i++)
        add_ago(q, 1, "");
    add_ago(q, 200, "\"lifo\":true");
    add_ago(q, 2, "\"lifo\":true");
    expect_ready(q, 200);
    ferry_queue_close(q);
}

static void test_prioritized(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "prio", NULL);
    for (int i = 0; i < 30; i++)
        add_ago(q, 1, "\"priority\":3");
    add_ago(q, 300, "\"priority\":9"); /* least urgent: the last end of the zset */
    expect_ready(q, 300);
    ferry_queue_close(q);
    q = qt_open(th_prefix(), "prio2", NULL);
    for (int i = 0; i < 30; i++)
        add_ago(q, 1, "\"priority\":3");
    add_ago(q, 250, "\"priority\":1"); /* most urgent: the first end */
    expect_ready(q, 250);
    ferry_queue_close(q);
}

/* The stated bound: an old job in the middle of a long wait list is not seen. */
static void test_bound(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "bound", NULL);
    for (int i = 0; i < FERRY_QUEUE_AGES_SAMPLE + 5; i++)
        add_ago(q, 10, "");
    add_ago(q, 900, ""); /* LPUSHed: the next adds push it into the middle */
    for (int i = 0; i < FERRY_QUEUE_AGES_SAMPLE + 5; i++)
        add_ago(q, 5, "");
    ferry_job_ages a = ages(q);
    assert_int_equal(a.ready_found, 1);
    assert_true(a.oldest_ready_s >= 10 && a.oldest_ready_s < 10 + SLACK);
    ferry_queue_close(q);
}

/* Delayed: not ready while not due; due but not promoted counts from the due time; promoted
 * (hash delay reset to 0) still counts from the due time, not from the add. */
static void test_delayed_then_promoted(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "delayed", NULL);
    add_ago(q, 0, "\"delay\":600000");
    ferry_job_ages a = ages(q);
    assert_int_equal(a.ready_found, 0);
    ferry_queue_close(q);

    q = qt_open(th_prefix(), "due", NULL);
    add_ago(q, 3600, "\"delay\":3590000"); /* added an hour ago, due 10 s ago */
    expect_ready(q, 10);
    ferry_error e = {0};
    /* Job.promote, like the promotion in a worker's fetch, resets the hash's delay to 0 */
    assert_int_equal(ferry_queue_promote_job(q, "1", &e), 0);
    assert_string_equal(qt_hget(qt_key(q, "1"), "delay"), "0");
    assert_int_equal(qt_ival(qt_cmd("LLEN %s", qt_key(q, "wait"))), 1);
    expect_ready(q, 10);
    ferry_queue_close(q);

    /* Queue.promoteJobs keeps the hash's delay: the same age */
    q = qt_open(th_prefix(), "due2", NULL);
    add_ago(q, 3600, "\"delay\":3580000");
    long long moved = 0;
    assert_int_equal(ferry_queue_promote_jobs(q, 0, &moved, &e), 0);
    assert_int_equal(moved, 1);
    expect_ready(q, 20);
    /* promoted early by hand: ready from now on (its due time is still ahead) */
    add_ago(q, 0, "\"delay\":600000");
    assert_int_equal(ferry_queue_promote_job(q, "2", &e), 0);
    expect_ready(q, 20);
    ferry_queue_close(q);
}

/* A job back in wait after a failed attempt: processedOn = its last start; ats == atm. */
static void ran(ferry_queue *q, const char *id, double started_ago_s, int ats, int atm) {
    long long p = (long long)ferry__now_ms() - (long long)(started_ago_s * 1000);
    freeReplyObject(qt_cmd("HSET %s processedOn %lld ats %d atm %d failedReason boom",
                           qt_key(q, id), p, ats, atm));
}

static void test_retried_after_backoff(void **state) {
    (void)state;
    /* created 1000 s ago, last start 100 s ago, fixed backoff 30 s: ready 70 s ago */
    ferry_queue *q = qt_open(th_prefix(), "fixed", NULL);
    add_ago(q, 1000, "\"attempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":30000}");
    ran(q, "1", 100, 1, 1);
    expect_ready(q, 70);
    ferry_queue_close(q);

    /* exponential 10 s, third attempt (atm 2): 2^(2-1) * 10 = 20 s after the start */
    q = qt_open(th_prefix(), "expo", NULL);
    add_ago(q, 1000, "\"attempts\":5,\"backoff\":{\"type\":\"exponential\",\"delay\":10000}");
    ran(q, "1", 100, 2, 2);
    expect_ready(q, 80);
    ferry_queue_close(q);

    /* jitter 0.5: the smallest draw, 50 % of 40 s */
    q = qt_open(th_prefix(), "jitter", NULL);
    add_ago(q, 1000,
            "\"attempts\":5,\"backoff\":{\"type\":\"fixed\",\"delay\":40000,\"jitter\":0.5}");
    ran(q, "1", 100, 1, 1);
    expect_ready(q, 80);
    ferry_queue_close(q);

    /* a start that was not counted (stalled, throttled: ats > atm): from the start */
    q = qt_open(th_prefix(), "stalled", NULL);
    add_ago(q, 1000, "\"attempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":30000}");
    ran(q, "1", 100, 2, 1);
    expect_ready(q, 100);
    ferry_queue_close(q);

    /* retried without a backoff: from the last start */
    q = qt_open(th_prefix(), "immediate", NULL);
    add_ago(q, 1000, "\"attempts\":3");
    ran(q, "1", 40, 1, 1);
    expect_ready(q, 40);
    ferry_queue_close(q);
}

static void test_paused(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "paused", NULL);
    ferry_error e = {0};
    assert_int_equal(ferry_queue_pause(q, &e), 0);
    add_ago(q, 120, "");
    expect_ready(q, 120);
    ferry_queue_close(q);
    /* the legacy (v5) paused list */
    q = qt_open(th_prefix(), "legacy", NULL);
    add_ago(q, 150, "");
    freeReplyObject(qt_cmd("RPOPLPUSH %s %s", qt_key(q, "wait"), qt_key(q, "paused")));
    assert_int_equal(qt_ival(qt_cmd("LLEN %s", qt_key(q, "wait"))), 0);
    expect_ready(q, 150);
    ferry_queue_close(q);
}

static void test_active(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "active", NULL);
    add_ago(q, 500, "");
    add_ago(q, 400, "");
    add_ago(q, 1, "");
    /* a fetch: RPOPLPUSH wait active, processedOn = the start (BullMQ moveToActive) */
    for (int i = 0; i < 2; i++)
        freeReplyObject(qt_cmd("RPOPLPUSH %s %s", qt_key(q, "wait"), qt_key(q, "active")));
    ran(q, "1", 42, 1, 0);
    ran(q, "2", 7, 1, 0);
    ferry_job_ages a = ages(q);
    assert_int_equal(a.active_found, 1);
    assert_true(a.oldest_active_s >= 42 && a.oldest_active_s < 42 + SLACK);
    /* the one left in wait is 1 s old: active jobs are not ready ones */
    assert_int_equal(a.ready_found, 1);
    assert_true(a.oldest_ready_s >= 1 && a.oldest_ready_s < 1 + SLACK);
    ferry_queue_close(q);
}

/* The node script's process while it runs (it holds a job active until killed). */
static pid_t node_pid = -1;

static void node_stop(void) {
    if (node_pid <= 0) return;
    int st;
    kill(node_pid, SIGKILL);
    waitpid(node_pid, &st, 0);
    node_pid = -1;
}

static int teardown(void **state) {
    node_stop();
    return qt_teardown(state);
}

/* The JSON line of queue `name` in the node script's output (a new reference). */
static json_t *node_line(const char *text, const char *name) {
    char needle[64];
    snprintf(needle, sizeof needle, "{\"queue\":\"%s\"", name);
    const char *p = strstr(text, needle);
    if (!p) fail_msg("no line for %s in the node output:\n%s", name, text);
    json_error_t je;
    json_t *j = json_loadb(p, strcspn(p, "\n"), 0, &je);
    if (!j) fail_msg("bad node line: %s", je.text);
    return j;
}

/* The ages of queue `name`, and this host's clock (ms) just before and after the call. */
static ferry_job_ages ages_of(const char *prefix, const char *name, long long *before,
                              long long *after) {
    ferry_queue *q = qt_open(prefix, name, NULL);
    long long b = (long long)ferry__now_ms();
    ferry_job_ages a = ages(q);
    long long e = (long long)ferry__now_ms();
    ferry_queue_close(q);
    if (before) *before = b;
    if (after) *after = e;
    return a;
}

static void test_node(void **state) {
    (void)state;
    static char node[4096];
    FILE *f = popen("command -v node", "r");
    if (!f || !fgets(node, sizeof node, f)) node[0] = '\0';
    if (f) pclose(f);
    node[strcspn(node, "\n")] = '\0';
    if (!node[0]) fail_msg("node not found on PATH (scripts/install-deps.sh installs it)");
    const char *src = getenv("FERRY_SOURCE_DIR");
    if (!src) fail_msg("FERRY_SOURCE_DIR not set (CTest sets it)");
    char script[1024], nodepath[1100], outp[512], errp[512], prefix[64];
    snprintf(script, sizeof script, "%s/tests/integration/queue_ages_node.js", src);
    snprintf(nodepath, sizeof nodepath, "NODE_PATH=%s/tests/interop/node_modules", src);
    snprintf(outp, sizeof outp, "%s/node-ages.out", th_tmpdir());
    snprintf(errp, sizeof errp, "%s/node-ages.err", th_tmpdir());
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *extra[] = {nodepath, NULL};
    char **env = th_env_with(extra, "NODE_PATH=");
    const char *argv[] = {node, script, th_env_require("REDIS_URL"), prefix, NULL};
    pid_t pid = node_pid = th_spawn(argv, env, NULL, outp, errp, 0);
    free(env);
    th_log_arg w = {outp, "\"ACTIVE\""};
    long long end = th_mono_ms() + 60000;
    while (!th_log_has(&w)) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid && (node_pid = -1))
            fail_msg("node exited (status %d):\n%s\n%s", st, th_slurp(outp), th_slurp(errp));
        if (th_mono_ms() > end) {
            node_stop();
            fail_msg("node did not get there:\n%s\n%s", th_slurp(outp), th_slurp(errp));
        }
        th_sleep_ms(20);
    }
    char *text = th_slurp(outp);

    /* added by Node 100 s ago */
    ferry_job_ages a = ages_of(prefix, "nplain", NULL, NULL);
    assert_int_equal(a.ready_found, 1);
    assert_true(a.oldest_ready_s >= 100 && a.oldest_ready_s < 100 + SLACK);

    /* added an hour ago, due 10 s ago, promoted by Node (which set the hash's delay to 0) */
    json_t *j = node_line(text, "npromoted");
    assert_string_equal(json_string_value(json_object_get(j, "delayField")), "0");
    json_decref(j);
    a = ages_of(prefix, "npromoted", NULL, NULL);
    assert_int_equal(a.ready_found, 1);
    assert_true(a.oldest_ready_s >= 10 && a.oldest_ready_s < 10 + SLACK);

    /* failed once by a Node worker, backoff 1500 ms, promoted when due: ready from the due
     * time Node's delayed zset held, give or take the failed run's duration */
    j = node_line(text, "nretry");
    assert_string_equal(json_string_value(json_object_get(j, "state")), "waiting");
    assert_string_equal(json_string_value(json_object_get(j, "ats")), "1");
    assert_string_equal(json_string_value(json_object_get(j, "atm")), "1");
    long long due = (long long)json_number_value(json_object_get(j, "due"));
    json_decref(j);
    long long t0, t1;
    a = ages_of(prefix, "nretry", &t0, &t1);
    assert_int_equal(a.ready_found, 1);
    /* the age at the call, from the due time; up to 1 s more: the failed run's duration */
    if (a.oldest_ready_s < (double)(t0 - due) / 1000.0 - 0.001 ||
        a.oldest_ready_s > (double)(t1 - due) / 1000.0 + 1.0)
        fail_msg("retried job: age %.3f s, want %.3f..%.3f s (from its backoff's end)",
                 a.oldest_ready_s, (double)(t0 - due) / 1000.0, (double)(t1 - due) / 1000.0);

    /* held active by a Node worker: from its processedOn */
    j = node_line(text, "nactive");
    long long started = (long long)json_number_value(json_object_get(j, "processedOn"));
    json_decref(j);
    a = ages_of(prefix, "nactive", &t0, &t1);
    assert_int_equal(a.active_found, 1);
    assert_int_equal(a.ready_found, 0);
    if (a.oldest_active_s < (double)(t0 - started) / 1000.0 - 0.001 ||
        a.oldest_active_s > (double)(t1 - started) / 1000.0 + 0.001)
        fail_msg("active job: age %.3f s, want %.3f..%.3f s", a.oldest_active_s,
                 (double)(t0 - started) / 1000.0, (double)(t1 - started) / 1000.0);
    free(text);
    node_stop();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_plain_fifo),
        cmocka_unit_test(test_lifo),
        cmocka_unit_test(test_prioritized),
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_delayed_then_promoted),
        cmocka_unit_test(test_retried_after_backoff),
        cmocka_unit_test(test_paused),
        cmocka_unit_test(test_active),
        cmocka_unit_test(test_node),
    };
    return cmocka_run_group_tests(tests, qt_setup, teardown);
}

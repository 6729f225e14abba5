/* test_cli_worker_bullmq_metrics.c - `ferry worker --bullmq-metrics N` against a real Redis:
 * the worker writes BullMQ's per-minute metrics hashes for the jobs it completes and fails
 * (<prefix>:<queue>:metrics:completed / :failed, `count` = jobs finished so far, as Node's
 * Queue.getMetrics reads it); without the flag it writes none; a value out of range is a
 * usage error (exit 2) that names the option. The script's arithmetic is checked against
 * BullMQ in test_worker_bullmq_metrics.c and, through Node, in interop.metrics_keys. */
#include "support/cli.h"
#include "support/qt.h"

static long long metric_count(const char *p, const char *q, const char *which) {
    char *v = cli_hget(p, q, which, "count");
    long long n = v ? atoll(v) : -1;
    free(v);
    return n;
}

static void run_worker(const char *p, const char *q, const char *const *extra, int jobs) {
    char errp[160];
    const char *argv[8];
    int k = 0;
    for (int i = 0; extra && extra[i]; i++)
        argv[k++] = extra[i];
    char max[16];
    snprintf(max, sizeof max, "%d", jobs);
    argv[k++] = "--max-jobs";
    argv[k++] = max;
    argv[k] = NULL;
    pid_t pid = cli_worker_start(p, q, argv, errp, sizeof errp);
    int code = cli_wait(pid, 60000);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, th_slurp(errp));
}

static void test_flag_writes_metrics_keys(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "bmcli";
    char id[64];
    for (int i = 0; i < 3; i++)
        cli_add_job(p, q, "text", "{}", "{}", id, sizeof id);
    cli_add_job(p, q, "permanent", "{}", "{}", id, sizeof id);
    run_worker(p, q, CLI_ARGV("--bullmq-metrics", "60"), 4);
    /* cli_hget reads <prefix>:<queue>:<id>: the metrics hashes are "metrics:completed" */
    assert_int_equal(metric_count(p, q, "metrics:completed"), 3);
    assert_int_equal(metric_count(p, q, "metrics:failed"), 1);
}

static void test_no_flag_no_keys(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "bmcli-off";
    char id[64];
    cli_add_job(p, q, "text", "{}", "{}", id, sizeof id);
    run_worker(p, q, NULL, 1);
    cli_expect_state(p, q, id, "completed");
    ferry_conn *c = th_conn();
    assert_int_equal(th_cmd_int(c, "EXISTS %s:%s:metrics:completed", p, q), 0);
    ferry__conn_close(c);
}

static void test_out_of_range(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "worker", "bmcli-bad", "--bullmq-metrics", "0", "--redis", cli_url(), "--prefix", p,
        "--", "/bin/true");
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--bullmq-metrics"));
    cli_run_free(&r);
    CLI(r, "worker", "bmcli-bad", "--bullmq-metrics", "100001", "--redis", cli_url(), "--prefix", p,
        "--", "/bin/true");
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--bullmq-metrics"));
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flag_writes_metrics_keys),
        cmocka_unit_test(test_no_flag_no_keys),
        cmocka_unit_test(test_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

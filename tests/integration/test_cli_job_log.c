/* test_cli_job_log.c - `ferry job logs QUEUE ID --add TEXT [--keep N] [--json]` against a
 * real Redis: the line lands at the end of the job's log list as Node's job.log() writes it
 * (what `ferry job logs` then prints), the count printed is the log's length, --keep trims
 * to the newest N (queue.addJobLog's keepLogs, 0 = every line), without --keep the job's own
 * keepLogs option decides (job.log()), a missing job exits 1 and creates nothing, and the
 * options that read the log are refused with --add (exit 2). interop.bullboard checks that
 * Node's getJobLogs and bull-board show the lines. */
#include "support/cli.h"
#include "support/qt.h"

#define Q "clilog"

/* `ferry job logs Q ID --add TEXT [extra...]`, exit 0 expected; returns stdout (static). */
static const char *add_line(const char *prefix, const char *id, const char *text,
                            const char *extra1, const char *extra2) {
    static char out[256];
    cli_run r;
    if (extra1 && extra2)
        CLI(r, "job", "logs", Q, id, "--add", text, extra1, extra2, "--redis", cli_url(),
            "--prefix", prefix);
    else if (extra1)
        CLI(r, "job", "logs", Q, id, "--add", text, extra1, "--redis", cli_url(), "--prefix",
            prefix);
    else
        CLI(r, "job", "logs", Q, id, "--add", text, "--redis", cli_url(), "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.err, "");
    snprintf(out, sizeof out, "%s", r.out);
    cli_run_free(&r);
    return out;
}

static void test_add_lines_and_keep(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, Q, NULL);
    char id[64];
    cli_add_job(prefix, Q, "a", "{}", "{}", id, sizeof id);
    assert_string_equal(add_line(prefix, id, "one", NULL, NULL), "1\n");
    assert_string_equal(add_line(prefix, id, "two\nlines \"q\"", NULL, NULL), "2\n");
    assert_string_equal(add_line(prefix, id, "three", "--json", NULL), "{\"count\":3}\n");
    char logs[128];
    snprintf(logs, sizeof logs, "%s:logs", id);
    assert_string_equal(qt_lrange(qt_key(q, logs)), "one,two\nlines \"q\",three");
    /* what `job logs` prints back */
    cli_run r;
    CLI(r, "job", "logs", Q, id, "--redis", cli_url(), "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "one\ntwo\\nlines \"q\"\nthree\n");
    cli_run_free(&r);
    /* --keep N: the newest N stay */
    assert_string_equal(add_line(prefix, id, "four", "--keep", "2"), "2\n");
    assert_string_equal(qt_lrange(qt_key(q, logs)), "three,four");
    /* the CLI refuses empty option values, so no empty line from here (the C call takes one) */
    CLI(r, "job", "logs", Q, id, "--add", "", "--redis", cli_url(), "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_string_equal(r.err, "ferry job logs: --add: empty value\n");
    cli_run_free(&r);
    assert_string_equal(qt_lrange(qt_key(q, logs)), "three,four");
    ferry_queue_close(q);
}

/* Without --keep the job's keepLogs option trims (Node's job.log); --keep 0 keeps all. */
static void test_job_keep_logs_option(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, Q, NULL);
    char id[64], logs[128];
    cli_add_job(prefix, Q, "a", "{}", "{\"keepLogs\":1}", id, sizeof id);
    snprintf(logs, sizeof logs, "%s:logs", id);
    assert_string_equal(add_line(prefix, id, "x", NULL, NULL), "1\n");
    assert_string_equal(add_line(prefix, id, "y", NULL, NULL), "1\n");
    assert_string_equal(qt_lrange(qt_key(q, logs)), "y");
    assert_string_equal(add_line(prefix, id, "z", "--keep", "0"), "2\n");
    assert_string_equal(qt_lrange(qt_key(q, logs)), "y,z");
    ferry_queue_close(q);
}

static void test_missing_job_and_usage(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = qt_open(prefix, Q, NULL);
    char id[64];
    cli_add_job(prefix, Q, "a", "{}", "{}", id, sizeof id);
    cli_run r;
    CLI(r, "job", "logs", Q, "nope", "--add", "x", "--redis", cli_url(), "--prefix", prefix);
    CLI_EXPECT(r, 1);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "ferry job logs: job nope not found in queue " Q "\n");
    cli_run_free(&r);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "nope:logs"))), 0);

    const char *const bad[][3] = {{"--keep", "2", NULL},
                                  {"--add", "x", "--desc"},
                                  {"--add", "x", "--limit"},
                                  {"--add", "x", "--start"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (bad[i][2] && strcmp(bad[i][2], "--desc") != 0)
            CLI(r, "job", "logs", Q, id, bad[i][0], bad[i][1], bad[i][2], "1", "--redis", cli_url(),
                "--prefix", prefix);
        else if (bad[i][2])
            CLI(r, "job", "logs", Q, id, bad[i][0], bad[i][1], bad[i][2], "--redis", cli_url(),
                "--prefix", prefix);
        else
            CLI(r, "job", "logs", Q, id, bad[i][0], bad[i][1], "--redis", cli_url(), "--prefix",
                prefix);
        CLI_EXPECT(r, 2);
        assert_non_null(strstr(r.err, "ferry job logs: "));
        assert_non_null(strstr(r.err, i == 0 ? "--keep needs --add" : "--add cannot be combined"));
        cli_run_free(&r);
    }
    CLI(r, "job", "logs", Q, id, "--add", "x", "--keep", "-1", "--redis", cli_url(), "--prefix",
        prefix);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    char logs[128];
    snprintf(logs, sizeof logs, "%s:logs", id);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, logs))), 0);
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_lines_and_keep),
        cmocka_unit_test(test_job_keep_logs_option),
        cmocka_unit_test(test_missing_job_and_usage),
    };
    int rc = cmocka_run_group_tests(tests, qt_setup, qt_teardown);
    th_tmpdir_remove();
    return rc;
}

/* test_cli_queue_retry_select.c - `ferry queue retry` with a selector (--name,
 * --reason-contains, --data-contains, --scan-max): only the matches move, the sentence and
 * --json counts, the progress lines on stderr, the scan-max notice, the usage errors (exit
 * 2, nothing moved), --help naming the flags, and the command without them unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/cli.h"
#include "support/qt.h"
#include "util/clock.h"

static void put_failed(ferry_queue *q, const char *id, const char *name, const char *reason,
                       const char *data, long long finished) {
    freeReplyObject(qt_cmd("HSET %s name %s data %s opts {} timestamp %lld delay 0 priority 0 "
                           "processedOn %lld finishedOn %lld atm 1 ats 1 failedReason %s",
                           qt_key(q, id), name, data, finished - 10, finished - 1, finished,
                           reason));
    freeReplyObject(qt_cmd("ZADD %s %lld %s", qt_key(q, "failed"), finished, id));
}

static void test_cli_selective_retry(void **state) {
    (void)state;
    const char *prefix = th_prefix(), *url = cli_url();
    ferry_queue *q = qt_open(prefix, "cliq", NULL);
    long long t = (long long)ferry__now_ms() - 60000;
    put_failed(q, "a", "charge", "card declined", "{\"c\":1}", t + 1);
    put_failed(q, "b", "charge", "timeout", "{\"c\":2}", t + 2);
    put_failed(q, "c", "refund", "timeout", "{\"c\":1}", t + 3);
    put_failed(q, "d", "charge", "timeout", "{\"c\":1}", t + 4);
    cli_run r;

    CLI(r, "queue", "retry", "--help");
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "--reason-contains"));
    assert_non_null(strstr(r.out, "--data-contains"));
    assert_non_null(strstr(r.out, "--scan-max"));
    cli_run_free(&r);

    /* usage errors: exit 2, nothing moved */
    CLI(r, "queue", "retry", "cliq", "--name", "charge", "--limit", "3", "--redis", url, "--prefix",
        prefix);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--limit does not combine"));
    cli_run_free(&r);
    CLI(r, "queue", "retry", "cliq", "--reason-contains", "x", "--state", "completed", "--redis",
        url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--reason-contains needs --state failed"));
    cli_run_free(&r);
    CLI(r, "queue", "retry", "cliq", "--data-contains", "", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--data-contains"));
    cli_run_free(&r);
    CLI(r, "queue", "retry", "cliq", "--scan-max", "0", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    assert_int_equal(th_cmd_int(qt_conn, "ZCARD %s", qt_key(q, "failed")), 4);

    /* name + reason + data: only d */
    CLI(r, "queue", "retry", "cliq", "--name", "charge", "--reason-contains", "time",
        "--data-contains", "\"c\":1", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out,
                        "queue cliq: 1 failed job retried (1 matched, 0 skipped, 4 scanned)\n");
    assert_non_null(strstr(r.err, "ferry queue retry: scanned 4 of 4 jobs, 1 match, 1 retried\n"));
    cli_run_free(&r);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "d");
    assert_string_equal(qt_hget(qt_key(q, "d"), "failedReason"), "(nil)");

    /* --scan-max stops early and says so; --json counts */
    CLI(r, "queue", "retry", "cliq", "--scan-max", "1", "--json", "--redis", url, "--prefix",
        prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"retried\":1,\"total\":3,\"scanned\":1,\"matched\":1,"
                               "\"skipped\":0,\"complete\":false}\n");
    assert_non_null(strstr(r.err, "--scan-max"));
    cli_run_free(&r);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "a,d"); /* the oldest first */

    /* matching nothing */
    CLI(r, "queue", "retry", "cliq", "--name", "nope", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out,
                        "queue cliq: 0 failed jobs retried (0 matched, 0 skipped, 2 scanned)\n");
    cli_run_free(&r);

    /* without the new flags: the bulk command as before */
    CLI(r, "queue", "retry", "cliq", "--redis", url, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue cliq: 2 failed jobs retried\n");
    assert_string_equal(r.err, "");
    cli_run_free(&r);
    assert_int_equal(th_cmd_int(qt_conn, "ZCARD %s", qt_key(q, "failed")), 0);
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_selective_retry),
    };
    int failed = cmocka_run_group_tests(tests, qt_setup, qt_teardown);
    th_tmpdir_remove();
    return th_exit(failed);
}

/* test_cli_worker_contracts.c - `ferry worker --contracts DIR` and the envelope variables,
 * against the fixture's Redis: a payload that passes its contract runs the command, which
 * sees FERRY_EVENT_ID / FERRY_TRACE_ID and the whole data on stdin; one that does not, one of
 * an unknown job name and one of an unknown schemaVersion fail for good without running, with
 * reasons naming the path and keyword but no value; a bad contracts directory is a usage error
 * naming the file and the keyword. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/cli.h"
#include "support/th.h"

#define EV "0190b6a2-7c00-7abc-8def-0123456789ab"

/* The job command: records its environment and stdin, prints nothing. */
static const char *script(void) {
    static char path[256];
    snprintf(path, sizeof path, "%s/env.sh", th_tmpdir());
    th_write_file(
        path,
        "#!/bin/sh\n"
        "{ echo \"event=${FERRY_EVENT_ID-unset}\"; echo \"trace=${FERRY_TRACE_ID-unset}\";"
        " echo \"stdin=$(cat)\"; } >> \"$CLITEST_DIR/ran.$FERRY_JOB_ID\"\n",
        0755);
    return path;
}

static void write_contracts(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "mkdir -p %s", dir);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof path, "%s/order.placed.json", dir);
    th_write_file(path,
                  "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"object\","
                  "\"required\":[\"qty\"],\"properties\":{\"qty\":{\"type\":\"integer\","
                  "\"minimum\":1},\"email\":{\"type\":\"string\",\"pattern\":\"@\"}}}",
                  0644);
    snprintf(path, sizeof path, "%s/task@1.json", dir);
    th_write_file(path, "{\"type\":\"object\",\"required\":[\"taskId\"]}", 0644);
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void test_contracts_checked_before_the_command(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "cq";
    char dir[256];
    snprintf(dir, sizeof dir, "%s/contracts", th_tmpdir());
    write_contracts(dir);
    char ok[64], bad[64], unknown[64], version[64], plain[64];
    cli_add_job(p, q, "order.placed",
                "{\"eventId\":\"" EV "\",\"traceId\":\"req-1\",\"payload\":{\"qty\":2}}",
                "{\"attempts\":3}", ok, sizeof ok);
    cli_add_job(p, q, "order.placed",
                "{\"eventId\":\"" EV "\",\"payload\":{\"qty\":0,\"email\":\"secret-value\"}}",
                "{\"attempts\":3}", bad, sizeof bad);
    cli_add_job(p, q, "nobody.knows", "{\"eventId\":\"" EV "\",\"payload\":{}}", "{\"attempts\":3}",
                unknown, sizeof unknown);
    cli_add_job(p, q, "task", "{\"schemaVersion\":2,\"taskId\":1}", "{\"attempts\":3}", version,
                sizeof version);
    cli_add_job(p, q, "task", "{\"schemaVersion\":1,\"taskId\":1}", "{\"attempts\":3}", plain,
                sizeof plain);

    char errp[256];
    pid_t pid =
        cli_worker_start_cmd(p, q, CLI_ARGV("--contracts", dir), script(), errp, sizeof errp);
    cli_finished_arg fa = {p, q, 5};
    if (!th_wait_until(cli_all_finished, &fa, 20000)) fail_msg("jobs did not finish");
    kill(pid, SIGTERM);
    assert_int_equal(cli_wait(pid, 20000), 0);

    cli_expect_state(p, q, ok, "completed");
    cli_expect_state(p, q, plain, "completed");
    char path[512];
    snprintf(path, sizeof path, "%s/ran.%s", th_tmpdir(), ok);
    const char *ran = read_all(path);
    assert_non_null(ran);
    assert_non_null(strstr(ran, "event=" EV "\n"));
    assert_non_null(strstr(ran, "trace=req-1\n"));
    assert_non_null(strstr(ran, "\"payload\":{\"qty\":2}")); /* stdin: the whole data */
    snprintf(path, sizeof path, "%s/ran.%s", th_tmpdir(), plain);
    ran = read_all(path);
    assert_non_null(ran);
    assert_non_null(strstr(ran, "event=unset\ntrace=unset\n"));

    const char *failed[] = {bad, unknown, version};
    const char *want[] = {"contract order.placed: /qty: minimum",
                          "contract: no contract for job name \"nobody.knows\"",
                          "contract task: unknown schemaVersion \"2\""};
    for (int i = 0; i < 3; i++) {
        cli_expect_state(p, q, failed[i], "failed");
        snprintf(path, sizeof path, "%s/ran.%s", th_tmpdir(), failed[i]);
        assert_int_equal(access(path, F_OK), -1); /* never ran */
        char *reason = cli_hget(p, q, failed[i], "failedReason");
        assert_non_null(reason);
        if (!strstr(reason, want[i])) fail_msg("reason %s lacks %s", reason, want[i]);
        assert_null(strstr(reason, "secret"));
        free(reason);
        cli_expect_field(p, q, failed[i], "atm", "1"); /* no retry though attempts remain */
    }
}

static void test_bad_contracts_dir_is_a_usage_error(void **state) {
    (void)state;
    char dir[256], path[512];
    snprintf(dir, sizeof dir, "%s/badcontracts", th_tmpdir());
    snprintf(path, sizeof path, "mkdir -p %s", dir);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof path, "%s/x.json", dir);
    th_write_file(path, "{\"type\":\"object\",\"allOf\":[]}", 0644);
    cli_run r;
    CLI(r, "worker", "cq2", "--redis", cli_url(), "--contracts", dir, "--", "/bin/true");
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--contracts"));
    assert_non_null(strstr(r.err, "x.json"));
    assert_non_null(strstr(r.err, "allOf"));
    cli_run_free(&r);
    CLI(r, "worker", "cq2", "--redis", cli_url(), "--contracts", "/nonexistent/dir", "--",
        "/bin/true");
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "/nonexistent/dir"));
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contracts_checked_before_the_command),
        cmocka_unit_test(test_bad_contracts_dir_is_a_usage_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

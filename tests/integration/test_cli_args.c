/* test_cli_args.c - how the `ferry` CLI treats what it is given, with the real binary against
 * the fixture's Redis: job ids that are not UTF-8, DATA on stdin at the payload limit, TLS
 * options on a plain URL, empty environment variables, strict numbers, group help, extra
 * arguments, and the scheduler options' ranges and listing. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/cli.h"
#include "support/th.h"

/* A usage error: exit 2, nothing on stdout, exactly one line on stderr containing `want`. */
static void expect_usage_error(cli_run *r, const char *want) {
    CLI_EXPECT(*r, 2);
    if (r->out[0]) fail_msg("stdout should be empty, got: %s", r->out);
    if (cli_lines(r->err) != 1 || !strstr(r->err, want))
        fail_msg("stderr should be one line containing '%s', got: %s", want, r->err);
}

/* EXISTS <prefix>:<queue>:<rest> */
static long long exists(const char *p, const char *q, const char *rest) {
    ferry_conn *c = th_conn();
    redisReply *r = th_cmd(c, "EXISTS %s:%s:%s", p, q, rest);
    long long v = r->integer;
    freeReplyObject(r);
    ferry__conn_close(c);
    return v;
}

/* ---- queue add: --job-id and stdin ------------------------------------------------------ */

static void test_job_id_not_utf8(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "queue", "add", "u1", "n", "--job-id",
        "ab\xff"
        "c",
        "--redis", cli_url(), "--prefix", p);
    expect_usage_error(&r, "ferry queue add: --job-id: not valid UTF-8");
    cli_run_free(&r);
    /* not silently replaced by the jobId of --opts either */
    CLI(r, "queue", "add", "u1", "n", "--opts", "{\"jobId\":\"foo\"}", "--job-id", "\xff",
        "--redis", cli_url(), "--prefix", p);
    expect_usage_error(&r, "--job-id: not valid UTF-8");
    cli_run_free(&r);
    /* nothing was added: no job, no id counter */
    assert_int_equal(exists(p, "u1", "foo"), 0);
    assert_int_equal(exists(p, "u1", "id"), 0);
    assert_int_equal(exists(p, "u1", "1"), 0);
    /* a UTF-8 id still works, and is idempotent */
    for (int i = 0; i < 2; i++) {
        CLI(r, "queue", "add", "u1", "n", "--job-id", "caf\xc3\xa9", "--redis", cli_url(),
            "--prefix", p);
        CLI_EXPECT(r, 0);
        assert_string_equal(r.out, "caf\xc3\xa9\n");
        cli_run_free(&r);
    }
}

/* JSON text of exactly `size` bytes: {"a":"xxx..."}. malloc'd, with room for `extra` more. */
static char *json_of_size(size_t size, size_t extra) {
    char *s = malloc(size + extra + 1);
    memcpy(s, "{\"a\":\"", 6);
    memset(s + 6, 'x', size - 8);
    memcpy(s + size - 2, "\"}", 3);
    return s;
}

static void test_stdin_payload_limit_after_trim(void **state) {
    (void)state;
    const char *p = th_prefix();
    const size_t limit = 524288; /* the default --max-payload */
    cli_run r;
    /* exactly at the limit, with the newline `echo` or a file leaves and more blanks */
    char *data = json_of_size(limit, 8);
    strcat(data, "\n \t\r\n\n");
    CLI_IN(r, data, "queue", "add", "q", "n", "-", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "1\n");
    cli_run_free(&r);
    ferry_conn *c = th_conn();
    redisReply *rep = th_cmd(c, "HSTRLEN %s:q:1 data", p);
    assert_int_equal(rep->integer, (long long)limit);
    freeReplyObject(rep);
    ferry__conn_close(c);
    free(data);

    /* one byte over: refused, newline or not */
    data = json_of_size(limit + 1, 2);
    strcat(data, "\n");
    CLI_IN(r, data, "queue", "add", "q", "n", "-", "--redis", cli_url(), "--prefix", p);
    expect_usage_error(&r, "over the payload limit of 524288 bytes");
    cli_run_free(&r);
    free(data);

    /* a huge input fails at the limit, without reading it all */
    size_t huge = 8u * 1024 * 1024;
    data = json_of_size(huge, 0);
    CLI_IN(r, data, "queue", "add", "q", "n", "-", "--redis", cli_url(), "--prefix", p);
    expect_usage_error(&r, "over the payload limit");
    cli_run_free(&r);
    free(data);

    /* endless blanks after the data are bounded too: at most 1 MiB past the limit */
    size_t blanks = limit + 1024 * 1024 + 2;
    data = json_of_size(16, blanks);
    memset(data + 16, '\n', blanks);
    data[16 + blanks] = 0;
    CLI_IN(r, data, "queue", "add", "q", "n", "-", "--redis", cli_url(), "--prefix", p);
    expect_usage_error(&r, "bytes of whitespace after DATA");
    cli_run_free(&r);
    free(data);
    /* only the first job was added */
    assert_int_equal(exists(p, "q", "2"), 0);
}

/* ---- connection options ----------------------------------------------------------------- */

static void test_tls_options_need_rediss(void **state) {
    (void)state;
    const char *ca = th_env_require("TLS_CA");
    cli_run r;
    CLI(r, "queue", "counts", "q", "--redis", cli_url(), "--tls-insecure");
    expect_usage_error(&r, "--tls-insecure applies to rediss:// (TLS) URLs only");
    cli_run_free(&r);
    char env_url[1100];
    snprintf(env_url, sizeof env_url, "REDIS_URL=%s", cli_url());
    cli_exec_env(&r, NULL, CLI_ARGV(env_url), CLI_ARGV("queue", "counts", "q", "--tls-ca", ca));
    expect_usage_error(&r, "--tls-ca applies to rediss:// (TLS) URLs only; the URL (REDIS_URL) is "
                           "redis://");
    cli_run_free(&r);
    char unix_url[1100];
    snprintf(unix_url, sizeof unix_url, "unix://%s", th_env_require("REDIS_UNIX"));
    CLI(r, "queue", "counts", "q", "--redis", unix_url, "--tls-cert", ca);
    expect_usage_error(&r, "--tls-cert applies to rediss://");
    cli_run_free(&r);
    /* with a rediss:// URL they are used */
    const char *tls_url = th_env_get("REDIS_TLS_URL");
    if (tls_url) {
        CLI(r, "queue", "counts", "q", "--json", "--redis", tls_url, "--tls-ca", ca, "--prefix",
            th_prefix());
        CLI_EXPECT(r, 0);
        assert_non_null(strstr(r.out, "\"waiting\":0"));
        cli_run_free(&r);
    }
}

static void test_empty_env_refused(void **state) {
    (void)state;
    char env_url[1100];
    snprintf(env_url, sizeof env_url, "REDIS_URL=%s", cli_url());
    cli_run r;
    cli_exec_env(&r, NULL, CLI_ARGV(env_url, "FERRY_PREFIX="), CLI_ARGV("queue", "counts", "q"));
    expect_usage_error(&r, "ferry queue counts: FERRY_PREFIX is set but empty");
    cli_run_free(&r);
    cli_exec_env(&r, NULL, CLI_ARGV("REDIS_URL="), CLI_ARGV("queue", "counts", "q"));
    expect_usage_error(&r, "REDIS_URL is set but empty");
    cli_run_free(&r);
    /* as the options are */
    CLI(r, "queue", "counts", "q", "--prefix", "");
    expect_usage_error(&r, "--prefix: empty value");
    cli_run_free(&r);
}

/* ---- argument syntax -------------------------------------------------------------------- */

static void test_numbers_are_strict(void **state) {
    (void)state;
    static const char *const bad[] = {" 5", "+5", "5 ", "0x10", "1e3", "", "-"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cli_run r;
        CLI(r, "queue", "counts", "q", "--timeout", bad[i], "--redis", cli_url());
        char want[64];
        snprintf(want, sizeof want, "--timeout: expected an integer from 1 to 3600000, got '%s'",
                 bad[i]);
        expect_usage_error(&r, want);
        cli_run_free(&r);
        CLI(r, "queue", "rate-limit", "q", bad[i], "--redis", cli_url());
        expect_usage_error(&r, "MS: expected an integer");
        cli_run_free(&r);
    }
    cli_run r;
    CLI(r, "queue", "counts", "q", "--json", "--timeout", "5000", "--redis", cli_url(), "--prefix",
        th_prefix());
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    /* every numeric option states its range in --help */
    CLI(r, "queue", "counts", "--help");
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "Range: 1 to 3600000."));
    cli_run_free(&r);
}

static void test_group_help_and_extra_arguments(void **state) {
    (void)state;
    static const char *const groups[][3] = {{"help", "queue", "queue global-rate-limit"},
                                            {"queue", "--help", "queue obliterate"},
                                            {"job", "--help", "job remove"},
                                            {"outbox", "-h", "outbox cleanup"},
                                            {"help", "scheduler", "scheduler upsert"},
                                            {"scheduler", "-h", "scheduler list"}};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        cli_run r;
        CLI(r, groups[i][0], groups[i][1]);
        CLI_EXPECT(r, 0);
        const char *group = strcmp(groups[i][0], "help") ? groups[i][0] : groups[i][1];
        char want[96];
        snprintf(want, sizeof want, "Usage: ferry %s SUBCOMMAND", group);
        if (strncmp(r.out, want, strlen(want)) || !strstr(r.out, groups[i][2]))
            fail_msg("ferry %s %s: want the group's subcommands, got:\n%s", groups[i][0],
                     groups[i][1], r.out);
        assert_string_equal(r.err, "");
        cli_run_free(&r);
    }
    cli_run r;
    CLI(r, "queue");
    expect_usage_error(&r, "ferry queue: missing subcommand (see ferry queue --help)");
    cli_run_free(&r);
    CLI(r, "help", "queue", "frob");
    expect_usage_error(&r, "ferry help: unknown command 'queue frob'");
    cli_run_free(&r);

    CLI(r, "--version", "x");
    expect_usage_error(&r, "ferry --version: unexpected argument 'x'");
    cli_run_free(&r);
    static const char *const none[][2] = {
        {"migrate", NULL}, {"bench", NULL}, {"outbox", "status"}, {"outbox", "cleanup"}};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        if (none[i][1])
            CLI(r, none[i][0], none[i][1], "x");
        else
            CLI(r, none[i][0], "x");
        expect_usage_error(&r, "unexpected argument 'x' (takes no positional arguments)");
        cli_run_free(&r);
    }
}

/* ---- scheduler -------------------------------------------------------------------------- */

static void test_scheduler_ranges_and_list(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "scheduler", "upsert", "--help");
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "1 to 2199023255551"));
    assert_non_null(strstr(r.out, "9007199254740991"));
    assert_non_null(strstr(r.out, "1 to 315360000000"));
    cli_run_free(&r);
    CLI(r, "scheduler", "upsert", "q", "s", "--every", "1000", "--start", "2199023255552");
    expect_usage_error(&r, "--start: expected an integer from 1 to 2199023255551");
    cli_run_free(&r);
    CLI(r, "scheduler", "upsert", "q", "s", "--every", "1000", "--offset", "0");
    expect_usage_error(&r, "--offset: expected an integer from 1 to 315360000000");
    cli_run_free(&r);
    /* messages name the options, not the library's fields */
    CLI(r, "scheduler", "upsert", "q", "s", "--every", "1000", "--end", "5");
    expect_usage_error(&r, "--end 5 is in the past");
    cli_run_free(&r);
    CLI(r, "scheduler", "upsert", "q", "s", "--cron", "0 3 * * *", "--start", "5", "--immediately");
    expect_usage_error(&r, "--immediately cannot be combined with --start");
    cli_run_free(&r);

    CLI(r, "scheduler", "upsert", "q", "tick", "--every", "60000", "--offset", "250", "--redis",
        cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    CLI(r, "scheduler", "list", "q", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    if (!strstr(r.out, "every 60000 ms +250 ms")) fail_msg("offset not shown:\n%s", r.out);
    cli_run_free(&r);

    /* data another client stored that is neither JSON nor UTF-8: shown, not dropped */
    ferry_conn *c = th_conn();
    redisReply *rep = th_cmd(c, "HSET %s:q:repeat:tick data %s", p, "caf\xe9");
    freeReplyObject(rep);
    ferry__conn_close(c);
    CLI(r, "scheduler", "list", "q", "--json", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    if (!j) fail_msg("scheduler list --json is not JSON (%s): %s", je.text, r.out);
    json_t *data = json_object_get(json_object_get(j, "template"), "data");
    if (!json_is_string(data) || strcmp(json_string_value(data), "caf?"))
        fail_msg("template.data should be \"caf?\": %s", r.out);
    assert_int_equal(json_integer_value(json_object_get(j, "offset")), 250);
    json_decref(j);
    cli_run_free(&r);

    /* remove: the scheduler and its pending iteration go; a second remove finds nothing */
    c = th_conn();
    rep = th_cmd(c, "ZCARD %s:q:delayed", p);
    assert_int_equal(rep->integer, 1); /* the pending iteration */
    freeReplyObject(rep);
    ferry__conn_close(c);
    CLI(r, "scheduler", "remove", "q", "tick", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    c = th_conn();
    rep = th_cmd(c, "EXISTS %s:q:repeat:tick", p);
    assert_int_equal(rep->integer, 0);
    freeReplyObject(rep);
    rep = th_cmd(c, "ZCARD %s:q:delayed", p);
    assert_int_equal(rep->integer, 0);
    freeReplyObject(rep);
    rep = th_cmd(c, "ZCARD %s:q:repeat", p);
    assert_int_equal(rep->integer, 0);
    freeReplyObject(rep);
    ferry__conn_close(c);
    CLI(r, "scheduler", "remove", "q", "tick", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 1);
    if (!strstr(r.err, "no job scheduler tick in queue q")) fail_msg("second remove: %s", r.err);
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_id_not_utf8),
        cmocka_unit_test(test_stdin_payload_limit_after_trim),
        cmocka_unit_test(test_tls_options_need_rediss),
        cmocka_unit_test(test_empty_env_refused),
        cmocka_unit_test(test_numbers_are_strict),
        cmocka_unit_test(test_group_help_and_extra_arguments),
        cmocka_unit_test(test_scheduler_ranges_and_list),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}

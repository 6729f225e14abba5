/* test_cli_dlq.c - dead letters from the command line, against the fixture's Redis and
 * PostgreSQL: `ferry worker --database` records each final failure once while good jobs
 * complete (and --no-dead-letters records none); `ferry dlq sync` then finds them all
 * recorded; list / show in text and JSON; redrive is a dry run by default (nothing changes),
 * --execute re-enqueues exactly the filtered rows, a second --execute adds nothing; purge
 * likewise; bad input is refused with a clear message and no password shown. */
#include <jansson.h>
#include <signal.h>

#include "support/cli.h"
#include "support/ob.h"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

static long long dl(const char *s, const char *where) {
    return ob_ll(db, "SELECT count(*) FROM %s.dead_letters WHERE %s", s, where);
}

static void run_worker(const char *p, const char *q, int want_finished, const char *const *extra) {
    char errp[256];
    pid_t pid = cli_worker_start(p, q, extra, errp, sizeof errp);
    cli_finished_arg fa = {p, q, want_finished};
    if (!th_wait_until(cli_all_finished, &fa, 30000)) fail_msg("jobs did not finish");
    kill(pid, SIGTERM);
    assert_int_equal(cli_wait(pid, 20000), 0);
}

static void test_worker_records_then_operate(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    const char *url = th_env_require("DATABASE_URL");
    const char *p = th_prefix(), *q = "dq";
    char id[64], perm[3][64];
    for (int i = 0; i < 5; i++)
        cli_add_job(p, q, "echo", "{\"n\":1}", "{}", id, sizeof id);
    for (int i = 0; i < 3; i++)
        cli_add_job(p, q, "permanent", "{\"eventId\":\"0190b6a2-7c00-7abc-8def-0123456789ab\"}",
                    "{\"attempts\":3}", perm[i], sizeof perm[i]);
    cli_add_job(p, q, "transient", "{\"n\":3}", "{\"attempts\":2}", id, sizeof id);
    run_worker(p, q, 9, CLI_ARGV("--database", url, "--schema", s));
    assert_int_equal(dl(s, "true"), 4);
    assert_int_equal(dl(s, "job_name = 'permanent' AND error = 'bad input' AND recorded_by = "
                           "'worker'"),
                     3);
    assert_int_equal(dl(s, "job_name = 'transient' AND attempts_made = 2"), 1);

    cli_run r;
    CLI(r, "dlq", "sync", q, "--redis", cli_url(), "--prefix", p, "--database", url, "--schema", s);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "scanned 4 failed jobs: recorded 0, already recorded 4"));
    cli_run_free(&r);

    CLI(r, "dlq", "list", "--queue", q, "--json", "--database", url, "--schema", s);
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), 4);
    char first_id[64];
    json_t *j = json_loads(r.out, JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(j);
    snprintf(first_id, sizeof first_id, "%s", json_string_value(json_object_get(j, "id")));
    json_decref(j);
    cli_run_free(&r);
    CLI(r, "dlq", "list", "--name", "permanent", "--error", "BAD", "--since", "1h", "--database",
        url, "--schema", s);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "3 of 3 matching rows"));
    cli_run_free(&r);
    CLI(r, "dlq", "show", first_id, "--database", url, "--schema", s);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "error:"));
    assert_non_null(strstr(r.out, "attempts made:"));
    cli_run_free(&r);

    /* dry run: nothing changes but the audit */
    long long waiting = cli_llen(p, q, "wait");
    CLI(r, "dlq", "redrive", "--name", "permanent", "--redis", cli_url(), "--database", url,
        "--schema", s);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "dry run: 3 rows would be redriven; nothing changed"));
    assert_int_equal(cli_lines(r.out), 4);
    cli_run_free(&r);
    assert_int_equal(cli_llen(p, q, "wait"), waiting);
    assert_int_equal(dl(s, "redrive_count > 0"), 0);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.dead_letter_redrives WHERE dry_run", s), 3);

    CLI(r, "dlq", "redrive", "--name", "permanent", "--execute", "--actor", "alice", "--redis",
        cli_url(), "--database", url, "--schema", s);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "3 rows redriven"));
    cli_run_free(&r);
    assert_int_equal(cli_llen(p, q, "wait"), waiting + 3);
    assert_int_equal(dl(s, "redrive_count = 1 AND redriven_by = 'alice'"), 3);
    CLI(r, "dlq", "redrive", "--name", "permanent", "--execute", "--redis", cli_url(), "--database",
        url, "--schema", s);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "0 rows redriven (0 matched)"));
    cli_run_free(&r);
    assert_int_equal(cli_llen(p, q, "wait"), waiting + 3);

    CLI(r, "dlq", "purge", "--name", "transient", "--database", url, "--schema", s);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "dry run: 1 row would be purged"));
    cli_run_free(&r);
    assert_int_equal(dl(s, "true"), 4);
    CLI(r, "dlq", "purge", "--name", "transient", "--execute", "--database", url, "--schema", s);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "1 row purged"));
    cli_run_free(&r);
    assert_int_equal(dl(s, "true"), 3);
}

static void test_no_dead_letters_and_bad_input(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    const char *url = th_env_require("DATABASE_URL");
    const char *p = th_prefix(), *q = "dq2";
    char id[64];
    cli_add_job(p, q, "permanent", "{}", "{}", id, sizeof id);
    run_worker(p, q, 1, CLI_ARGV("--database", url, "--schema", s, "--no-dead-letters"));
    assert_int_equal(dl(s, "true"), 0);

    cli_run r;
    CLI(r, "dlq", "show", "not-an-id", "--database", url, "--schema", s);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "id"));
    cli_run_free(&r);
    CLI(r, "dlq", "list", "--since", "yesterday", "--database", url, "--schema", s);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--since"));
    cli_run_free(&r);
    CLI(r, "dlq", "list", "--since", "2026-12-02T00:00:00Z", "--until", "2026-12-01", "--database",
        url, "--schema", s);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "dlq", "redrive", "--actor", "a\nb", "--redis", cli_url(), "--database", url, "--schema",
        s);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--actor"));
    cli_run_free(&r);
    CLI(r, "dlq", "list", "--database", "postgresql://u:hunter2@127.0.0.1:1/x", "--db-timeout",
        "2000");
    CLI_EXPECT(r, 1);
    assert_null(strstr(r.err, "hunter2"));
    cli_run_free(&r);
    CLI(r, "dlq", "list", "--database", url, "--schema", "nosuch");
    CLI_EXPECT(r, 1);
    assert_true(strlen(r.err) > 0);
    cli_run_free(&r);
    CLI(r, "worker", q, "--redis", cli_url(), "--database", "postgress://x/y", "--", "/bin/true");
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
}

static void test_oversized_payload_is_a_dead_letter(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    const char *url = th_env_require("DATABASE_URL");
    const char *p = th_prefix(), *q = "dq3";
    char id[64], small[64];
    cli_add_job(p, q, "echo",
                "{\"blob\":\"0123456789012345678901234567890123456789012345678901234567890\"}",
                "{}", id, sizeof id);
    cli_add_job(p, q, "echo", "{\"n\":1}", "{}", small, sizeof small);
    run_worker(p, q, 2, CLI_ARGV("--max-payload", "50", "--database", url, "--schema", s));
    cli_expect_state(p, q, small, "completed");
    cli_expect_state(p, q, id, "failed");
    assert_int_equal(dl(s, "error = 'job data is 72 bytes, over this worker''s limit of 50 bytes "
                           "(max_payload_bytes)'"),
                     1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_records_then_operate),
        cmocka_unit_test(test_no_dead_letters_and_bad_input),
        cmocka_unit_test(test_oversized_payload_is_a_dead_letter),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}

/* test_cli_worker_limits.c - `ferry worker` at its limits, with the real binary against the
 * fixture's Redis: --max-jobs runs exactly N commands and hands the jobs it fetched beyond N
 * back unharmed; a stderr line longer than the pass-through buffer gives a failedReason made
 * of the line's beginning, cut at 1 KiB with "...". */
#include "support/cli.h"

/* ---- helpers -------------------------------------------------------------------------- */

static long long count_in(const char *p, const char *q, const char *set) {
    ferry_conn *c = th_conn();
    long long v = cli_zcard(c, p, q, set);
    ferry__conn_close(c);
    return v;
}

/* A job field as a number; an absent field counts as 0 (BullMQ's reading of atm/ats). */
static long long hget_ll(const char *p, const char *q, const char *id, const char *field) {
    char *v = cli_hget(p, q, id, field);
    long long n = v ? atoll(v) : 0;
    free(v);
    return n;
}

static int count_substr(const char *s, const char *needle) {
    int n = 0;
    for (const char *h = s; (h = strstr(h, needle)) != NULL; h += strlen(needle))
        n++;
    return n;
}

/* Run `ferry worker` with extra args to its end; returns its log (malloc'd). */
static char *run_worker(const char *p, const char *q, const char *const *args) {
    char errp[160];
    pid_t pid = cli_worker_start(p, q, args, errp, sizeof errp);
    int code = cli_wait(pid, 60000);
    char *log = th_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    return log;
}

/* Every job of the queue that did not complete is waiting or delayed, untouched apart from
 * the fetch that attemptsStarted counts: no attempt spent, no failure recorded. Returns how
 * many of them were fetched (attemptsStarted 1) and so handed back. */
static int expect_rest_unharmed(const char *p, const char *q, char ids[][64], int n) {
    int handed = 0;
    for (int i = 0; i < n; i++) {
        if (cli_in_set(p, q, "completed", ids[i])) continue;
        int delayed = cli_in_set(p, q, "delayed", ids[i]);
        ferry_conn *c = th_conn();
        redisReply *r = th_cmd(c, "LPOS %s:%s:wait %s", p, q, ids[i]);
        int waiting = r->type == REDIS_REPLY_INTEGER;
        freeReplyObject(r);
        ferry__conn_close(c);
        if (!delayed && !waiting)
            fail_msg("job %s is neither completed, waiting nor delayed", ids[i]);
        if (hget_ll(p, q, ids[i], "atm") != 0)
            fail_msg("job %s: attemptsMade %lld, want 0", ids[i], hget_ll(p, q, ids[i], "atm"));
        char *reason = cli_hget(p, q, ids[i], "failedReason");
        if (reason) fail_msg("job %s got a failedReason: %s", ids[i], reason);
        char *rv = cli_hget(p, q, ids[i], "returnvalue");
        if (rv) fail_msg("job %s has a return value (it ran): %s", ids[i], rv);
        long long ats = hget_ll(p, q, ids[i], "ats");
        if (ats > 1) fail_msg("job %s: attemptsStarted %lld, want at most 1", ids[i], ats);
        if (ats == 1) {
            if (!delayed) fail_msg("job %s was handed back but is not delayed", ids[i]);
            handed++;
        }
    }
    return handed;
}

/* ---- --max-jobs ----------------------------------------------------------------------- */

static void test_max_jobs_runs_exactly_n(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "maxjobs";
    enum { NJOBS = 10 };
    char ids[NJOBS][64];
    for (int i = 0; i < NJOBS; i++)
        cli_add_job(p, q, "text", "{}", "{}", ids[i], sizeof ids[i]);

    /* --max-jobs 1: one command, even though finishing it could fetch the next job */
    char *log = run_worker(p, q, CLI_ARGV("--max-jobs", "1"));
    if (count_in(p, q, "completed") != 1)
        fail_msg("--max-jobs 1 completed %lld jobs; log:\n%s", count_in(p, q, "completed"), log);
    if (!strstr(log, "ferry worker: ran 1 job, outcomes stored (--max-jobs), stopping"))
        fail_msg("no exact --max-jobs line; log:\n%s", log);
    int handed = expect_rest_unharmed(p, q, ids, NJOBS);
    if (count_substr(log, "status=not-run") != handed)
        fail_msg("%d jobs handed back but the log says otherwise:\n%s", handed, log);
    free(log);

    /* --max-jobs 2 with 4 slots: the first fetch takes up to 4 jobs; only 2 run, the others
     * go back to delayed (ready at once) with no attempt spent */
    log = run_worker(p, q, CLI_ARGV("--max-jobs", "2", "--concurrency", "4"));
    if (count_in(p, q, "completed") != 3)
        fail_msg("--max-jobs 2 completed %lld jobs (want 1 + 2); log:\n%s",
                 count_in(p, q, "completed") - 1, log);
    if (!strstr(log, "ferry worker: ran 2 jobs, outcomes stored (--max-jobs), stopping"))
        fail_msg("no exact --max-jobs line; log:\n%s", log);
    handed = expect_rest_unharmed(p, q, ids, NJOBS);
    assert_int_equal(count_substr(log, "status=not-run"), handed);
    /* 8 jobs were waiting when the worker started: its first fetch filled the 4 slots */
    if (handed < 1) fail_msg("no job was handed back, so the path went untested; log:\n%s", log);
    char want[128];
    snprintf(want, sizeof want, "stopped; %d fetched job%s handed back without running", handed,
             handed == 1 ? "" : "s");
    if (!strstr(log, want)) fail_msg("want '%s'; log:\n%s", want, log);
    /* nothing is left active or locked */
    assert_int_equal(cli_llen(p, q, "active"), 0);
    free(log);

    /* a later worker takes every job that is left: each runs once, on its first attempt */
    log = run_worker(p, q, CLI_ARGV("--max-jobs", "7", "--concurrency", "4"));
    if (count_in(p, q, "completed") != NJOBS)
        fail_msg("the last worker left %lld jobs; log:\n%s", NJOBS - count_in(p, q, "completed"),
                 log);
    free(log);
    for (int i = 0; i < NJOBS; i++) {
        cli_expect_field(p, q, ids[i], "returnvalue", "\"plain words\"");
        cli_expect_field(p, q, ids[i], "atm", "1");
    }
    assert_int_equal(cli_llen(p, q, "wait"), 0);
    assert_int_equal(count_in(p, q, "delayed"), 0);
}

/* ---- failedReason from a long stderr line --------------------------------------------- */

static void expect_reason_of_xs(const char *p, const char *q, const char *id, char ch, size_t n) {
    char *reason = cli_hget(p, q, id, "failedReason");
    if (!reason) fail_msg("job %s has no failedReason", id);
    size_t keep = n < 1024 ? n : 1020;
    int ok =
        strlen(reason) == keep + (n < 1024 ? 0 : 3) && (n < 1024 || !strcmp(reason + keep, "..."));
    for (size_t i = 0; ok && i < keep; i++)
        ok = reason[i] == ch;
    if (!ok)
        fail_msg("line of %zu '%c': failedReason has %zu bytes, want %zu '%c'%s: %.60s...%s", n, ch,
                 strlen(reason), keep, ch, n < 1024 ? "" : " + \"...\"", reason,
                 strlen(reason) > 8 ? reason + strlen(reason) - 8 : "");
    free(reason);
}

static void test_long_stderr_line_reason(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "longerr";
    static const size_t sizes[] = {1023, 1024, 4095, 4096, 4097, 5000, 100000};
    enum { NSIZES = sizeof sizes / sizeof sizes[0] };
    char ids[NSIZES][64], utf8[64], blank[64], shortlast[64];
    for (size_t i = 0; i < NSIZES; i++) {
        char name[32];
        snprintf(name, sizeof name, "longerr:%zu", sizes[i]);
        cli_add_job(p, q, name, "{}", "{}", ids[i], sizeof ids[i]);
    }
    cli_add_job(p, q, "longerr-utf8", "{}", "{}", utf8, sizeof utf8);
    cli_add_job(p, q, "longerr-then-blank", "{}", "{}", blank, sizeof blank);
    cli_add_job(p, q, "longerr-then-short", "{}", "{}", shortlast, sizeof shortlast);
    char max_jobs[16];
    snprintf(max_jobs, sizeof max_jobs, "%d", NSIZES + 3);
    char *log = run_worker(p, q, CLI_ARGV("--max-jobs", max_jobs, "--concurrency", "2"));

    for (size_t i = 0; i < NSIZES; i++) {
        cli_expect_state(p, q, ids[i], "failed");
        expect_reason_of_xs(p, q, ids[i], 'x', sizes[i]);
    }
    /* the long line is still passed through whole (in 4096-byte pieces) */
    char want[160];
    snprintf(want, sizeof want, "[job %s] xxxxxxxx", ids[NSIZES - 1]);
    if (!strstr(log, want)) fail_msg("stderr not passed through; log starts:\n%.400s", log);
    free(log);

    /* cut at a character boundary: 'a' + 509 two-byte characters (1019 bytes) + "..." */
    char *reason = cli_hget(p, q, utf8, "failedReason");
    if (!reason) fail_msg("longerr-utf8 has no failedReason");
    assert_int_equal(strlen(reason), 1019 + 3);
    assert_int_equal(reason[0], 'a');
    for (size_t i = 1; i < 1019; i += 2)
        if ((unsigned char)reason[i] != 0xc3 || (unsigned char)reason[i + 1] != 0xa9)
            fail_msg("longerr-utf8: byte %zu is not part of U+00E9: %.40s", i, reason + i - 1);
    assert_string_equal(reason + 1019, "...");
    free(reason);

    /* a blank line after the long one does not replace it; a short line after it does */
    expect_reason_of_xs(p, q, blank, 'y', 5000);
    cli_expect_field(p, q, shortlast, "failedReason", "short last");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_jobs_runs_exactly_n),
        cmocka_unit_test(test_long_stderr_line_reason),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}

/* test_cli_worker_postpone.c - `ferry worker QUEUE -- CMD` exits 118 (retry later) and 119
 * (throttled) with their delay hints: back to delayed or wait without spending an attempt,
 * the due time taken from the command's last stdout line, Retry-After forms, and with
 * --limiter-max the whole queue paused for the delay. Real binary, fixture's Redis. */
#include <sys/time.h>

#include "support/cli.h"

/* ---- retry later / throttled ---------------------------------------------------------------- */

static long long wall_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Due time (ms) of a job in the delayed zset (score = due * 4096 + seq), or -1. */
static long long delayed_due(const char *p, const char *q, const char *id) {
    ferry_conn *c = th_conn();
    redisReply *r = th_cmd(c, "ZSCORE %s:%s:delayed %s", p, q, id);
    long long due = r->type == REDIS_REPLY_STRING ? (long long)(strtod(r->str, NULL) / 4096) : -1;
    freeReplyObject(r);
    ferry__conn_close(c);
    return due;
}

static int in_list(const char *p, const char *q, const char *list, const char *id) {
    ferry_conn *c = th_conn();
    redisReply *r = th_cmd(c, "LPOS %s:%s:%s %s", p, q, list, id);
    int found = r->type == REDIS_REPLY_INTEGER;
    freeReplyObject(r);
    ferry__conn_close(c);
    return found;
}

static long long key_pttl(const char *p, const char *q, const char *suffix) {
    ferry_conn *c = th_conn();
    redisReply *r = th_cmd(c, "PTTL %s:%s:%s", p, q, suffix);
    long long v = r->integer;
    freeReplyObject(r);
    ferry__conn_close(c);
    return v;
}

/* The runs file the job script appends to: "FERRY_ATTEMPT FERRY_ATTEMPTS_STARTED start_ms"
 * per run (named by queue and id: ids repeat across the tests' prefixes). Returns how many
 * runs (up to max) and fills the arrays. */
static int read_runs(const char *q, const char *id, long long *attempt, long long *started,
                     long long *at, int max) {
    char path[200];
    snprintf(path, sizeof path, "%s/runs-%s-%s", th_tmpdir(), q, id);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0;
    long long a, s, t;
    while (fscanf(f, "%lld %lld %lld", &a, &s, &t) == 3)
        if (n < max) {
            attempt[n] = a;
            started[n] = s;
            at[n++] = t;
        }
    fclose(f);
    return n;
}

static long long read_end_ms(const char *q, const char *id) {
    char path[1200]; /* temp dir (< 200) + queue + id, both short here */
    int n = snprintf(path, sizeof path, "%s/end-%s-%s", th_tmpdir(), q, id);
    assert_true(n > 0 && (size_t)n < sizeof path);
    char *s = th_slurp(path);
    long long v = strtoll(s, NULL, 10);
    free(s);
    return v;
}

/* Wait condition: every job of the list in its wanted state. */
typedef struct state_want {
    const char *prefix, *queue;
    const char *ids[16], *sets[16]; /* set: "completed", "failed", "delayed" or "wait" */
    int n;
} state_want;

static int states_reached(void *arg) {
    state_want *w = arg;
    for (int i = 0; i < w->n; i++) {
        int ok = !strcmp(w->sets[i], "wait")
                     ? in_list(w->prefix, w->queue, "wait", w->ids[i])
                     : cli_in_set(w->prefix, w->queue, w->sets[i], w->ids[i]);
        if (!ok) return 0;
    }
    return 1;
}

static void want_state(state_want *w, const char *id, const char *set) {
    w->ids[w->n] = id;
    w->sets[w->n++] = set;
}

/* The job's atm (attempts made): absent and "0" both mean none spent. */
static void expect_no_attempt_spent(const char *p, const char *q, const char *id) {
    char *atm = cli_hget(p, q, id, "atm");
    if (atm && strcmp(atm, "0") != 0) fail_msg("job %s spent an attempt: atm=%s", id, atm);
    free(atm);
}

static void expect_due_between(const char *p, const char *q, const char *id, long long lo,
                               long long hi) {
    long long due = delayed_due(p, q, id);
    if (due < lo || due > hi)
        fail_msg("job %s: due at %lld, want %lld..%lld (delay %lld..%lld from the start)", id, due,
                 lo, hi, due - lo, hi - lo);
}

static void test_retry_later_and_throttled_without_limiter(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "later";
    enum {
        ONCE_MS,
        ONCE_RA,
        LONG,
        NOHINT,
        BAD_RA,
        HUGE,
        NEG,
        ABC,
        T_LONG,
        T_NOHINT,
        H503,
        H429,
        LOOP,
        NJOBS
    };
    static const char *const names[NJOBS] = {
        "postpone:once:118:FERRY_RETRY_AFTER_MS=300",
        "postpone:once:118:Retry-After: 1",
        "postpone:always:118:FERRY_RETRY_AFTER_MS=60000",
        "postpone:always:118:-",
        "postpone:always:118:Retry-After: soon",
        "postpone:always:118:FERRY_RETRY_AFTER_MS=99999999999999999999999",
        "postpone:always:118:FERRY_RETRY_AFTER_MS=-5",
        "postpone:always:118:FERRY_RETRY_AFTER_MS=abc",
        "postpone:always:119:FERRY_RETRY_AFTER_MS=60000",
        "postpone:always:119:-",
        "http:503:3600",
        "http:429:",
        "postpone:always:118:FERRY_RETRY_AFTER_MS=0",
    };
    char ids[NJOBS][64];
    long long t0 = wall_ms();
    for (int i = 0; i < NJOBS; i++)
        cli_add_job(p, q, names[i], "{}", i == NEG ? "{\"attempts\":1}" : "{\"attempts\":2}",
                    ids[i], sizeof ids[i]);

    char errp[160];
    pid_t pid = cli_worker_start(p, q,
                                 CLI_ARGV("--concurrency", "4", "--retry-later-default", "45000",
                                          "--max-started-attempts", "3"),
                                 errp, sizeof errp);
    state_want w = {.prefix = p, .queue = q};
    want_state(&w, ids[ONCE_MS], "completed");
    want_state(&w, ids[ONCE_RA], "completed");
    want_state(&w, ids[NEG], "failed");
    want_state(&w, ids[ABC], "failed");
    want_state(&w, ids[LOOP], "failed");
    for (int i = LONG; i <= H429; i++)
        if (i != NEG && i != ABC) want_state(&w, ids[i], "delayed");
    int ok = th_wait_until(states_reached, &w, 60000);
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 60000);
    long long t1 = wall_ms();
    char *log = th_slurp(errp);
    if (!ok) fail_msg("jobs did not reach their states; worker log:\n%s", log);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);

    /* 118 with FERRY_RETRY_AFTER_MS=300 / Retry-After: 1: delayed for at least that long,
     * then run again with the same FERRY_ATTEMPT (no attempt spent) and the next
     * FERRY_ATTEMPTS_STARTED; atm counts only the completing run. */
    const long long min_gap[2] = {300, 1000};
    for (int k = 0; k < 2; k++) {
        const char *id = ids[k == 0 ? ONCE_MS : ONCE_RA];
        long long att[4], st[4], at[4];
        int runs = read_runs(q, id, att, st, at, 4);
        if (runs != 2) fail_msg("job %s ran %d times, want 2; log:\n%s", id, runs, log);
        assert_int_equal(att[0], 1);
        assert_int_equal(att[1], 1);
        assert_int_equal(st[0], 1);
        assert_int_equal(st[1], 2);
        long long gap = at[1] - read_end_ms(q, id);
        if (gap < min_gap[k])
            fail_msg("job %s re-ran %lld ms after exit 118, want >= %lld", id, gap, min_gap[k]);
        cli_expect_field(p, q, id, "returnvalue", "{\"attempt\":1,\"started\":2}");
        cli_expect_field(p, q, id, "atm", "1");
    }

    /* still postponed: no attempt spent, reason = last stderr line, due from the hint */
    for (int i = LONG; i <= H429; i++) {
        if (i == NEG || i == ABC) continue;
        cli_expect_state(p, q, ids[i], "delayed");
        expect_no_attempt_spent(p, q, ids[i]);
        cli_expect_field(p, q, ids[i], "ats", "1");
    }
    cli_expect_field(p, q, ids[LONG], "failedReason", "postponed by 118");
    expect_due_between(p, q, ids[LONG], t0 + 60000, t1 + 60000);
    /* no hint, and an unusable Retry-After: --retry-later-default */
    expect_due_between(p, q, ids[NOHINT], t0 + 45000, t1 + 45000);
    expect_due_between(p, q, ids[BAD_RA], t0 + 45000, t1 + 45000);
    /* huge: clamped to a day */
    expect_due_between(p, q, ids[HUGE], t0 + 86400000, t1 + 86400000);
    /* 119 without a limiter: delayed like 118, the queue is not limited; no hint = 10 s */
    cli_expect_field(p, q, ids[T_LONG], "failedReason", "postponed by 119");
    expect_due_between(p, q, ids[T_LONG], t0 + 60000, t1 + 60000);
    expect_due_between(p, q, ids[T_NOHINT], t0 + 10000, t1 + 10000);
    assert_true(key_pttl(p, q, "limiter") == -2);
    /* through ferry http-outcome: its stderr line is the reason */
    cli_expect_field(p, q, ids[H503], "failedReason", "HTTP 503: retry-later (delay 3600000 ms)");
    expect_due_between(p, q, ids[H503], t0 + 3600000, t1 + 3600000);
    cli_expect_field(p, q, ids[H429], "failedReason", "HTTP 429: throttled (delay 10000 ms)");
    expect_due_between(p, q, ids[H429], t0 + 10000, t1 + 10000);

    /* a malformed FERRY_RETRY_AFTER_MS line fails the run as transient, with the reason */
    cli_expect_field(p, q, ids[NEG], "atm", "1");
    char *reason = cli_hget(p, q, ids[NEG], "failedReason");
    if (!reason || !strstr(reason, "exit 118: invalid FERRY_RETRY_AFTER_MS") ||
        !strstr(reason, "\"-5\""))
        fail_msg("failedReason of a bad hint: %s", reason ? reason : "(absent)");
    free(reason);
    cli_expect_field(p, q, ids[ABC], "atm", "2");
    reason = cli_hget(p, q, ids[ABC], "failedReason");
    if (!reason || !strstr(reason, "\"abc\"")) fail_msg("failedReason: %s", reason);
    free(reason);

    /* endless 0 ms postponing is stopped by --max-started-attempts 3 */
    long long att[8], st[8], at[8];
    int loops = read_runs(q, ids[LOOP], att, st, at, 8);
    if (loops != 3) fail_msg("looping job ran %d times, want 3; log:\n%s", loops, log);
    for (int i = 0; i < loops; i++)
        assert_int_equal(att[i], 1);

    /* log: what was written to Redis; 119 without a limiter is a retry-later */
    char want[200];
    snprintf(want, sizeof want, "id=%s attempt=1", ids[LONG]);
    if (!strstr(log, want)) fail_msg("log lacks '%s':\n%s", want, log);
    snprintf(want, sizeof want,
             "id=%s attempt=1 trace=job-%s-%s outcome=retry-later duration_ms=", ids[T_LONG], q,
             ids[T_LONG]);
    const char *line = strstr(log, want);
    if (!line) fail_msg("log lacks '%s':\n%s", want, log);
    if (!strstr(line, "delay_ms=60000 reason=\"postponed by 119\" status=exit:119\n"))
        fail_msg("log line of the 119 job: %.*s", (int)strcspn(line, "\n"), line);
    assert_null(strstr(log, "outcome=throttled"));
    free(log);
}

static int limited_and_waiting(void *arg) {
    state_want *w = arg;
    return key_pttl(w->prefix, w->queue, "limiter") > 0 && states_reached(w);
}

static void test_throttled_with_limiter(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "throttle";
    char id[64];
    cli_add_job(p, q, "postpone:always:119:FERRY_RETRY_AFTER_MS=60000", "{}", "{\"attempts\":2}",
                id, sizeof id);
    char errp[160];
    pid_t pid = cli_worker_start(
        p, q, CLI_ARGV("--limiter-max", "100", "--limiter-duration", "1000"), errp, sizeof errp);
    state_want w = {.prefix = p, .queue = q};
    want_state(&w, id, "wait");
    th_file_arg ran;
    snprintf(ran.path, sizeof ran.path, "%s/end-%s-%s", th_tmpdir(), q, id);
    int ok =
        th_wait_until(th_file_exists, &ran, 60000) && th_wait_until(limited_and_waiting, &w, 60000);
    long long ttl = key_pttl(p, q, "limiter");
    ferry_conn *c = th_conn();
    redisReply *lim = th_cmd(c, "GET %s:%s:limiter", p, q);
    /* BullMQ queue.rateLimit's value, so Node workers with a limiter stop too */
    int bullmq_value = lim->type == REDIS_REPLY_STRING && !strcmp(lim->str, "9007199254740991");
    freeReplyObject(lim);
    ferry__conn_close(c);
    /* a job added now is not handed out while the queue is limited (checked below, after
     * the worker stopped: it never ran) */
    char later[64];
    cli_add_job(p, q, "text", "{}", "{}", later, sizeof later);
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 60000);
    char *log = th_slurp(errp);
    if (!ok) fail_msg("queue not limited with the job back in wait; log:\n%s", log);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    /* over the limiter's own 1000 ms window: the key is the throttle's, not the fetch count */
    if (ttl <= 1000 || ttl > 60000) fail_msg("limiter PTTL %lld, want 1001..60000", ttl);
    assert_true(bullmq_value);
    expect_no_attempt_spent(p, q, id);
    cli_expect_field(p, q, id, "failedReason", "postponed by 119");
    long long att[4], st[4], at[4];
    assert_int_equal(read_runs(q, id, att, st, at, 4), 1);
    assert_false(cli_in_set(p, q, "completed", later));
    assert_non_null(strstr(log, "outcome=throttled"));
    assert_non_null(strstr(log, "limiter=100/1000ms"));
    free(log);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_later_and_throttled_without_limiter),
        cmocka_unit_test(test_throttled_with_limiter),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}

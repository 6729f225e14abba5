/* test_queue_limits.c - queue-level throttles against real Redis: the manual rate limit
 * (limiter key), global concurrency (meta.concurrency) and the global rate limit
 * (meta.max/duration) write exactly what BullMQ 6.7.0's Queue writes, read back what Node
 * would have written (including values ferry refuses to interpret), reject out-of-range
 * input without writing, work through `ferry queue rate-limit | concurrency |
 * global-rate-limit`, and are obeyed by a running ferry worker - including BullMQ's rule that
 * the manual limit stops only workers that have a limiter. Timing checks are lower bounds. */
#include <jansson.h>
#include <limits.h>

#include "support/cli.h"
#include "support/wt.h"

#define MANUAL "9007199254740991"

/* ---- helpers ---------------------------------------------------------------------------- */

static char *str_of(wt *t, const char *fmt, const char *suffix) {
    redisReply *r = wt_cmd(t, fmt, t->base, suffix);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return v;
}

static void expect_str(wt *t, const char *fmt, const char *suffix, const char *want) {
    char *v = str_of(t, fmt, suffix);
    if (!want) {
        if (v) fail_msg("%s: got '%s', want nothing", suffix, v);
        return;
    }
    if (!v || strcmp(v, want) != 0)
        fail_msg("%s: got '%s', want '%s'", suffix, v ? v : "(nil)", want);
    free(v);
}
#define EXPECT_META(t, field, want) expect_str((t), "HGET %smeta %s", (field), (want))
#define EXPECT_LIMITER(t, want) expect_str((t), "GET %s%s", "limiter", (want))

static long long limiter_pttl(wt *t) {
    return wt_int(t, "PTTL %s%s", "limiter");
}

static long long api_ttl(wt *t) {
    long long ttl = -99;
    ferry_error e = {0};
    if (ferry_queue_rate_limit_ttl(t->q, &ttl, &e)) fail_msg("rate_limit_ttl: %s", e.message);
    return ttl;
}

static void expect_fail(int rc, const ferry_error *e, int code, const char *msg) {
    if (rc != code) fail_msg("rc %d (%s), want %d", rc, e->message, code);
    if (!strstr(e->message, msg)) fail_msg("message \"%s\" lacks \"%s\"", e->message, msg);
}

static void set_conc(wt *t, long n) {
    ferry_error e = {0};
    if (ferry_queue_set_global_concurrency(t->q, n, &e)) fail_msg("set concurrency: %s", e.message);
}

static void set_grl(wt *t, long max, long long dur) {
    ferry_error e = {0};
    if (ferry_queue_set_global_rate_limit(t->q, max, dur, &e))
        fail_msg("set global rate limit: %s", e.message);
}

static void manual_limit(wt *t, long long ms) {
    ferry_error e = {0};
    if (ferry_queue_rate_limit(t->q, ms, &e)) fail_msg("rate limit: %s", e.message);
}

/* ---- manual rate limit ------------------------------------------------------------------- */

static void test_rate_limit_key(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    ferry_error e = {0};
    assert_int_equal(api_ttl(&t), -2); /* no key: PTTL */

    manual_limit(&t, 60000);
    EXPECT_LIMITER(&t, MANUAL);
    long long p = limiter_pttl(&t);
    assert_true(p > 50000 && p <= 60000);
    long long ttl = api_ttl(&t);
    assert_true(ttl > 50000 && ttl <= 60000);
    /* with a global rate limit the manual value is over any max: still the TTL */
    set_grl(&t, 5, 1000);
    ttl = api_ttl(&t);
    assert_true(ttl > 50000 && ttl <= 60000);

    int removed = -1;
    assert_int_equal(ferry_queue_clear_rate_limit(t.q, &removed, &e), 0);
    assert_int_equal(removed, 1);
    assert_int_equal(WT_EXISTS(&t, "limiter"), 0);
    assert_int_equal(api_ttl(&t), 0); /* meta.max set: "not limited" is 0, not -2 */
    assert_int_equal(ferry_queue_clear_rate_limit(t.q, &removed, &e), 0);
    assert_int_equal(removed, 0);
    assert_int_equal(ferry_queue_clear_rate_limit(t.q, NULL, &e), 0);

    /* a window counted by workers: below meta.max -> 0, at it -> the window's PTTL */
    freeReplyObject(wt_cmd(&t, "SET %slimiter 3 PX 60000", t.base));
    assert_int_equal(api_ttl(&t), 0);
    freeReplyObject(wt_cmd(&t, "SET %slimiter 5 PX 60000", t.base));
    ttl = api_ttl(&t);
    assert_true(ttl > 50000 && ttl <= 60000);
    freeReplyObject(wt_cmd(&t, "SET %slimiter abc PX 60000", t.base));
    assert_int_equal(api_ttl(&t), 0); /* tonumber() = nil counts as 0 */
    /* without meta.max: the plain PTTL, even below any max; -1 without expiry */
    assert_int_equal(ferry_queue_remove_global_rate_limit(t.q, &e), 0);
    freeReplyObject(wt_cmd(&t, "SET %slimiter 1 PX 60000", t.base));
    ttl = api_ttl(&t);
    assert_true(ttl > 50000 && ttl <= 60000);
    freeReplyObject(wt_cmd(&t, "SET %slimiter 3", t.base));
    assert_int_equal(api_ttl(&t), -1);
    wt_fini(&t);
}

/* ---- validation -------------------------------------------------------------------------- */

static void test_validation(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    ferry_error e = {0};
    expect_fail(ferry_queue_rate_limit(t.q, 0, &e), &e, FERRY_EINVAL, "rate limit");
    expect_fail(ferry_queue_rate_limit(t.q, -5, &e), &e, FERRY_EINVAL, "1 to 1099511627776 ms");
    expect_fail(ferry_queue_rate_limit(t.q, FERRY_LIMIT_MS_MAX + 1, &e), &e, FERRY_EINVAL,
                "1099511627777");
    expect_fail(ferry_queue_rate_limit(NULL, 100, &e), &e, FERRY_EINVAL, "NULL");
    assert_int_equal(WT_EXISTS(&t, "limiter"), 0);
    manual_limit(&t, FERRY_LIMIT_MS_MAX); /* the maximum itself is fine */
    assert_true(limiter_pttl(&t) > (1LL << 39));

    expect_fail(ferry_queue_set_global_concurrency(t.q, 0, &e), &e, FERRY_EINVAL,
                "global concurrency: expected 1 to 2147483647, got 0");
    expect_fail(ferry_queue_set_global_concurrency(t.q, -1, &e), &e, FERRY_EINVAL, "got -1");
#if LONG_MAX > 2147483647L
    expect_fail(ferry_queue_set_global_concurrency(t.q, FERRY_LIMIT_COUNT_MAX + 1, &e), &e,
                FERRY_EINVAL, "got 2147483648");
    expect_fail(ferry_queue_set_global_rate_limit(t.q, FERRY_LIMIT_COUNT_MAX + 1, 10, &e), &e,
                FERRY_EINVAL, "max");
#endif
    expect_fail(ferry_queue_set_global_rate_limit(t.q, 0, 1000, &e), &e, FERRY_EINVAL, "max");
    expect_fail(ferry_queue_set_global_rate_limit(t.q, 2, 0, &e), &e, FERRY_EINVAL, "duration");
    expect_fail(ferry_queue_set_global_rate_limit(t.q, 2, FERRY_LIMIT_MS_MAX + 1, &e), &e,
                FERRY_EINVAL, "duration");
    expect_fail(ferry_queue_set_global_rate_limit(NULL, 2, 10, &e), &e, FERRY_EINVAL, "NULL");
    assert_int_equal(wt_int(&t, "HLEN %s%s", "meta"), 2); /* only opts.maxLenEvents, version */

    long n;
    expect_fail(ferry_queue_get_global_concurrency(t.q, NULL, &e), &e, FERRY_EINVAL, "NULL");
    expect_fail(ferry_queue_get_global_concurrency(NULL, &n, &e), &e, FERRY_EINVAL, "NULL");
    expect_fail(ferry_queue_get_global_rate_limit(t.q, &n, NULL, &e), &e, FERRY_EINVAL, "NULL");
    expect_fail(ferry_queue_rate_limit_ttl(t.q, NULL, &e), &e, FERRY_EINVAL, "NULL");
    expect_fail(ferry_queue_remove_global_concurrency(NULL, &e), &e, FERRY_EINVAL, "NULL");
    expect_fail(ferry_queue_remove_global_rate_limit(NULL, &e), &e, FERRY_EINVAL, "NULL");
    expect_fail(ferry_queue_clear_rate_limit(NULL, NULL, &e), &e, FERRY_EINVAL, "NULL");
    wt_fini(&t);
}

/* ---- global concurrency ------------------------------------------------------------------ */

static long get_conc(wt *t) {
    long n = -99;
    ferry_error e = {0};
    if (ferry_queue_get_global_concurrency(t->q, &n, &e))
        fail_msg("get concurrency: %s", e.message);
    return n;
}

static void test_global_concurrency(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    ferry_error e = {0};
    assert_int_equal(get_conc(&t), 0);
    set_conc(&t, 3);
    EXPECT_META(&t, "concurrency", "3");
    assert_int_equal(get_conc(&t), 3);
    set_conc(&t, FERRY_LIMIT_COUNT_MAX);
    assert_int_equal(get_conc(&t), FERRY_LIMIT_COUNT_MAX);
    set_conc(&t, 1);
    EXPECT_META(&t, "concurrency", "1");
    EXPECT_META(&t, "version", "bullmq:" FERRY_BULLMQ_VERSION); /* other fields untouched */
    assert_int_equal(ferry_queue_remove_global_concurrency(t.q, &e), 0);
    EXPECT_META(&t, "concurrency", NULL);
    EXPECT_META(&t, "version", "bullmq:" FERRY_BULLMQ_VERSION);
    assert_int_equal(get_conc(&t), 0);
    assert_int_equal(ferry_queue_remove_global_concurrency(t.q, &e), 0); /* already gone */

    /* what Node may store but ferry cannot report as a concurrency: refused, named */
    const char *bad[] = {"0", "2.5", "abc", "-3", "99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        freeReplyObject(wt_cmd(&t, "HSET %smeta concurrency %s", t.base, bad[i]));
        long n = 7;
        char want[64];
        snprintf(want, sizeof want, "meta.concurrency is \"%s\"", bad[i]);
        expect_fail(ferry_queue_get_global_concurrency(t.q, &n, &e), &e, FERRY_EPROTO, want);
    }
    wt_fini(&t);
}

/* ---- global rate limit ------------------------------------------------------------------- */

static void test_global_rate_limit(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    ferry_error e = {0};
    long max = -1;
    long long dur = -1;
    assert_int_equal(ferry_queue_get_global_rate_limit(t.q, &max, &dur, &e), 0);
    assert_int_equal(max, 0);
    assert_int_equal(dur, 0);
    set_grl(&t, 2, 1000);
    EXPECT_META(&t, "max", "2");
    EXPECT_META(&t, "duration", "1000");
    assert_int_equal(ferry_queue_get_global_rate_limit(t.q, &max, &dur, &e), 0);
    assert_int_equal(max, 2);
    assert_int_equal(dur, 1000);
    set_grl(&t, FERRY_LIMIT_COUNT_MAX, FERRY_LIMIT_MS_MAX);
    assert_int_equal(ferry_queue_get_global_rate_limit(t.q, &max, &dur, &e), 0);
    assert_int_equal(max, FERRY_LIMIT_COUNT_MAX);
    assert_true(dur == FERRY_LIMIT_MS_MAX);
    assert_int_equal(ferry_queue_remove_global_rate_limit(t.q, &e), 0);
    EXPECT_META(&t, "max", NULL);
    EXPECT_META(&t, "duration", NULL);
    EXPECT_META(&t, "version", "bullmq:" FERRY_BULLMQ_VERSION);
    assert_int_equal(ferry_queue_get_global_rate_limit(t.q, &max, &dur, &e), 0);
    assert_int_equal(max, 0);
    assert_int_equal(dur, 0);

    /* half-set or non-integer pairs are refused (workers would still obey meta.max) */
    freeReplyObject(wt_cmd(&t, "HSET %smeta max 5", t.base));
    expect_fail(ferry_queue_get_global_rate_limit(t.q, &max, &dur, &e), &e, FERRY_EPROTO,
                "meta.max is \"5\" and meta.duration is (absent)");
    freeReplyObject(wt_cmd(&t, "HSET %smeta duration 1000.5", t.base));
    expect_fail(ferry_queue_get_global_rate_limit(t.q, &max, &dur, &e), &e, FERRY_EPROTO,
                "meta.duration is \"1000.5\"");
    freeReplyObject(wt_cmd(&t, "HDEL %smeta max", t.base));
    expect_fail(ferry_queue_get_global_rate_limit(t.q, &max, &dur, &e), &e, FERRY_EPROTO,
                "meta.max is (absent)");
    wt_fini(&t);
}

/* ---- CLI --------------------------------------------------------------------------------- */

static json_t *out_json(const cli_run *r) {
    json_error_t je;
    json_t *v = json_loads(r->out, 0, &je);
    if (!v) fail_msg("stdout is not JSON (%s): %s", je.text, r->out);
    return v;
}

static void expect_usage_error(cli_run *r, const char *want) {
    CLI_EXPECT(*r, 2);
    assert_string_equal(r->out, "");
    if (cli_lines(r->err) != 1 || !strstr(r->err, want))
        fail_msg("stderr should be one line containing '%s', got: %s", want, r->err);
    cli_run_free(r);
}

/* Run `ferry queue ARGS... --redis URL --prefix P` for the test's queue. */
#define QCLI(r, t, ...)                                                                            \
    CLI(r, "queue", __VA_ARGS__, "--redis", th_env_require("REDIS_URL"), "--prefix", (t)->prefix)

static void test_cli_help(void **state) {
    (void)state;
    const char *cmds[] = {"rate-limit", "concurrency", "global-rate-limit"};
    for (size_t i = 0; i < 3; i++) {
        cli_run r;
        char want[64];
        CLI(r, "queue", cmds[i], "--help");
        CLI_EXPECT(r, 0);
        snprintf(want, sizeof want, "Usage: ferry queue %s", cmds[i]);
        if (strncmp(r.out, want, strlen(want)) != 0) fail_msg("help starts: %.80s", r.out);
        assert_non_null(strstr(r.out, "--redis URL"));
        assert_non_null(strstr(r.out, "--prefix"));
        assert_string_equal(r.err, "");
        cli_run_free(&r);
    }
    cli_run r;
    CLI(r, "queue", "rate-limit", "--help");
    assert_non_null(strstr(r.out, "only stops workers that have a limiter"));
    assert_non_null(strstr(r.out, "1099511627776"));
    cli_run_free(&r);
    CLI(r, "queue", "concurrency", "--help");
    assert_non_null(strstr(r.out, "2147483647"));
    cli_run_free(&r);
    CLI(r, "queue", "global-rate-limit", "--help");
    assert_non_null(strstr(r.out, "--max N"));
    assert_non_null(strstr(r.out, "--duration MS"));
    cli_run_free(&r);
    CLI(r, "help");
    assert_non_null(strstr(r.out, "queue global-rate-limit"));
    cli_run_free(&r);
}

static void test_cli_rate_limit(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    cli_run r;
    QCLI(r, &t, "rate-limit", WT_QUEUE, "--show");
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue wq: not rate limited\n");
    cli_run_free(&r);
    QCLI(r, &t, "rate-limit", WT_QUEUE, "60000");
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "");
    cli_run_free(&r);
    EXPECT_LIMITER(&t, MANUAL);
    long long p = limiter_pttl(&t);
    assert_true(p > 50000 && p <= 60000);
    QCLI(r, &t, "rate-limit", WT_QUEUE, "--show", "--json");
    CLI_EXPECT(r, 0);
    json_t *j = out_json(&r);
    long long ttl = json_integer_value(json_object_get(j, "ttl"));
    assert_true(ttl > 50000 && ttl <= 60000);
    json_decref(j);
    cli_run_free(&r);
    QCLI(r, &t, "rate-limit", WT_QUEUE); /* no MS: show */
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "queue wq: rate limited for "));
    cli_run_free(&r);
    QCLI(r, &t, "rate-limit", WT_QUEUE, "--clear");
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "");
    cli_run_free(&r);
    assert_int_equal(WT_EXISTS(&t, "limiter"), 0);
    QCLI(r, &t, "rate-limit", WT_QUEUE, "--json");
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"ttl\":-2}\n");
    cli_run_free(&r);

    QCLI(r, &t, "rate-limit", WT_QUEUE, "0");
    expect_usage_error(&r, "MS: expected an integer from 1 to 1099511627776, got '0'");
    QCLI(r, &t, "rate-limit", WT_QUEUE, "1099511627777");
    expect_usage_error(&r, "MS:");
    QCLI(r, &t, "rate-limit", WT_QUEUE, "10s");
    expect_usage_error(&r, "got '10s'");
    QCLI(r, &t, "rate-limit", WT_QUEUE, "500", "--clear");
    expect_usage_error(&r, "MS cannot be combined with --clear");
    QCLI(r, &t, "rate-limit", WT_QUEUE, "--clear", "--show");
    expect_usage_error(&r, "--clear cannot be combined with --show");
    QCLI(r, &t, "rate-limit", WT_QUEUE, "500", "--json");
    expect_usage_error(&r, "--json only applies to --show");
    QCLI(r, &t, "rate-limit", WT_QUEUE, "1", "2");
    expect_usage_error(&r, "unexpected argument '2'");
    CLI(r, "queue", "rate-limit");
    expect_usage_error(&r, "missing argument");
    QCLI(r, &t, "rate-limit", "a:b", "100");
    CLI_EXPECT(r, 2); /* bad queue name: the library's FERRY_EINVAL */
    cli_run_free(&r);
    assert_int_equal(WT_EXISTS(&t, "limiter"), 0);

    CLI(r, "queue", "rate-limit", "q", "100", "--redis", "redis://127.0.0.1:1", "--timeout",
        "2000");
    CLI_EXPECT(r, 1);
    assert_int_equal(cli_lines(r.err), 1);
    assert_non_null(strstr(r.err, "127.0.0.1:1"));
    cli_run_free(&r);
    wt_fini(&t);
}

static void test_cli_concurrency(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    cli_run r;
    QCLI(r, &t, "concurrency", WT_QUEUE, "--json");
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"concurrency\":null}\n");
    cli_run_free(&r);
    QCLI(r, &t, "concurrency", WT_QUEUE, "3");
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "");
    cli_run_free(&r);
    EXPECT_META(&t, "concurrency", "3");
    QCLI(r, &t, "concurrency", WT_QUEUE, "--json");
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"concurrency\":3}\n");
    cli_run_free(&r);
    QCLI(r, &t, "concurrency", WT_QUEUE);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue wq: global concurrency 3\n");
    cli_run_free(&r);
    QCLI(r, &t, "concurrency", WT_QUEUE, "--remove");
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    EXPECT_META(&t, "concurrency", NULL);
    QCLI(r, &t, "concurrency", WT_QUEUE);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue wq: no global concurrency\n");
    cli_run_free(&r);

    QCLI(r, &t, "concurrency", WT_QUEUE, "0");
    expect_usage_error(&r, "N: expected an integer from 1 to 2147483647, got '0'");
    QCLI(r, &t, "concurrency", WT_QUEUE, "2147483648");
    expect_usage_error(&r, "got '2147483648'");
    QCLI(r, &t, "concurrency", WT_QUEUE, "-1");
    expect_usage_error(&r, "-1");
    QCLI(r, &t, "concurrency", WT_QUEUE, "2", "--remove");
    expect_usage_error(&r, "N cannot be combined with --remove");
    QCLI(r, &t, "concurrency", WT_QUEUE, "2", "--json");
    expect_usage_error(&r, "--json only applies when showing");
    EXPECT_META(&t, "concurrency", NULL);

    /* a stored value ferry cannot interpret: runtime error naming it */
    freeReplyObject(wt_cmd(&t, "HSET %smeta concurrency 0", t.base));
    QCLI(r, &t, "concurrency", WT_QUEUE);
    CLI_EXPECT(r, 1);
    assert_int_equal(cli_lines(r.err), 1);
    assert_non_null(strstr(r.err, "meta.concurrency is \"0\""));
    cli_run_free(&r);
    wt_fini(&t);
}

static void test_cli_global_rate_limit(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    cli_run r;
    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "--json");
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"max\":null,\"duration\":null}\n");
    cli_run_free(&r);
    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "--max", "2", "--duration", "1000");
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "");
    cli_run_free(&r);
    EXPECT_META(&t, "max", "2");
    EXPECT_META(&t, "duration", "1000");
    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "--json");
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"max\":2,\"duration\":1000}\n");
    cli_run_free(&r);
    QCLI(r, &t, "global-rate-limit", WT_QUEUE);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue wq: global rate limit 2 jobs per 1000 ms\n");
    cli_run_free(&r);
    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "--remove");
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    EXPECT_META(&t, "max", NULL);
    EXPECT_META(&t, "duration", NULL);
    QCLI(r, &t, "global-rate-limit", WT_QUEUE);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "queue wq: no global rate limit\n");
    cli_run_free(&r);

    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "--max", "2");
    expect_usage_error(&r, "--max needs --duration");
    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "--duration", "2");
    expect_usage_error(&r, "--duration needs --max");
    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "--max", "0", "--duration", "10");
    expect_usage_error(&r, "--max: expected an integer from 1 to 2147483647, got '0'");
    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "--max", "1", "--duration", "1099511627777");
    expect_usage_error(&r, "--duration: expected an integer from 1 to 1099511627776");
    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "--max", "1", "--duration", "10", "--remove");
    expect_usage_error(&r, "--remove cannot be combined");
    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "--remove", "--json");
    expect_usage_error(&r, "--json only applies when showing");
    QCLI(r, &t, "global-rate-limit", WT_QUEUE, "5");
    expect_usage_error(&r, "unexpected argument '5'");
    EXPECT_META(&t, "max", NULL);
    wt_fini(&t);
}

/* ---- a ferry worker obeys them ------------------------------------------------------------ */

/* "slow" jobs record how many handlers overlap (in the wt_hctx gate's counters); "gate" jobs
 * wait at the gate. */
static ferry_outcome limits_handler(ferry_job *job, void *ud) {
    wt_hctx *h = ud;
    wt_hctx_count_run(h);
    if (!strcmp(ferry_job_name(job), "gate")) {
        wt_gate_pass(&h->g);
        return FERRY_COMPLETED;
    }
    if (!strcmp(ferry_job_name(job), "slow")) {
        pthread_mutex_lock(&h->g.mu);
        if (++h->g.inside > h->g.max_inside) h->g.max_inside = h->g.inside;
        pthread_mutex_unlock(&h->g.mu);
        struct timespec ts = {0, 40 * 1000 * 1000}; /* room for another handler to overlap */
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&h->g.mu);
        h->g.inside--;
        pthread_mutex_unlock(&h->g.mu);
    }
    return FERRY_COMPLETED;
}

static ferry_worker *start_worker(wt *t, wt_hctx *h, int concurrency) {
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(t, &o, &ro);
    o.concurrency = concurrency;
    o.drain_delay_ms = 200;
    return wt_start(&o, limits_handler, h);
}

static void test_worker_global_concurrency(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    set_conc(&t, 1);
    for (int i = 0; i < 6; i++)
        free(wt_add(&t, "slow", NULL, NULL));
    ferry_worker *w = start_worker(&t, &h, 4);
    WT_WAIT_ZCARD(&t, "completed", 6);
    WT_WAIT_COUNT(&t, completed, 6);
    pthread_mutex_lock(&h.g.mu);
    int max_inside = h.g.max_inside;
    pthread_mutex_unlock(&h.g.mu);
    assert_int_equal(max_inside, 1);

    /* the same worker runs 4 at once when the setting is removed (the check above could
     * fail), and the setting applies again when restored */
    ferry_error e = {0};
    assert_int_equal(ferry_queue_remove_global_concurrency(t.q, &e), 0);
    for (int i = 0; i < 4; i++)
        free(wt_add(&t, "gate", NULL, NULL));
    WT_WAIT_GATE_ENTERED(&h.g, 4);
    assert_int_equal(WT_LLEN(&t, "active"), 4);
    set_conc(&t, 2);
    wt_gate_open(&h.g);
    WT_WAIT_ZCARD(&t, "completed", 10);
    pthread_mutex_lock(&h.g.mu);
    h.g.max_inside = 0;
    pthread_mutex_unlock(&h.g.mu);
    for (int i = 0; i < 8; i++)
        free(wt_add(&t, "slow", NULL, NULL));
    WT_WAIT_ZCARD(&t, "completed", 18);
    pthread_mutex_lock(&h.g.mu);
    max_inside = h.g.max_inside;
    pthread_mutex_unlock(&h.g.mu);
    assert_true(max_inside >= 1 && max_inside <= 2);
    wt_stop(w);
    wt_fini(&t);
}

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static void test_worker_global_rate_limit(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    set_grl(&t, 2, 1000);
    enum { N = 6 };
    char *ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = wt_add(&t, "none", NULL, NULL);
    ferry_worker *w = start_worker(&t, &h, 4);
    WT_WAIT_ZCARD(&t, "completed", N);
    long long p[N];
    for (int i = 0; i < N; i++) {
        p[i] = wt_hget_ll(&t, ids[i], "processedOn");
        assert_true(p[i] > 0);
        free(ids[i]);
    }
    qsort(p, N, sizeof p[0], cmp_ll);
    /* 2 per fixed 1000 ms window: job 2 is in the second window at the earliest, jobs 4-5
     * in the third; any 5 consecutive starts span more than a window. Lower bounds only,
     * with 100 ms for the gap between a fetch's client timestamp and its execution. */
    if (p[2] - p[0] < 900 || p[4] - p[0] < 1900 || p[5] - p[1] < 900)
        fail_msg("processedOn offsets 0 %lld %lld %lld %lld %lld: more than 2 per 1000 ms",
                 p[1] - p[0], p[2] - p[0], p[3] - p[0], p[4] - p[0], p[5] - p[0]);
    /* the window was counted in the limiter key with meta.duration as its TTL */
    long long pt = limiter_pttl(&t);
    assert_true(pt <= 1000);
    wt_stop(w);
    wt_fini(&t);
}

/* BullMQ's rule, both ways: the manual limit stops a worker that has a limiter (here the
 * queue's global rate limit) and does not stop one without. */
static void test_worker_manual_rate_limit(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    wt_hctx h;
    wt_hctx_init(&h);
    set_grl(&t, 1000, 60000); /* a limiter that by itself never limits this test */
    ferry_worker *w = start_worker(&t, &h, 2);
    free(wt_add(&t, "none", NULL, NULL)); /* the worker is up and fetching */
    WT_WAIT_ZCARD(&t, "completed", 1);

    long long t0 = ferry__now_ms();
    manual_limit(&t, 1500);
    char *id = wt_add(&t, "none", NULL, NULL);
    WT_WAIT_ZCARD(&t, "completed", 2);
    long long po = wt_hget_ll(&t, id, "processedOn");
    if (po - t0 < 1400) fail_msg("job ran %lld ms after a 1500 ms rate limit", po - t0);
    free(id);

    /* no limiter at all: the manual limit is ignored - the job completes while the key
     * still lives, and the worker never counts in it */
    ferry_error e = {0};
    assert_int_equal(ferry_queue_remove_global_rate_limit(t.q, &e), 0);
    manual_limit(&t, 120000);
    id = wt_add(&t, "none", NULL, NULL);
    WT_WAIT_ZCARD(&t, "completed", 3);
    assert_true(limiter_pttl(&t) > 0);
    EXPECT_LIMITER(&t, MANUAL);
    free(id);
    wt_stop(w);
    wt_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_limit_key),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_global_concurrency),
        cmocka_unit_test(test_global_rate_limit),
        cmocka_unit_test(test_cli_help),
        cmocka_unit_test(test_cli_rate_limit),
        cmocka_unit_test(test_cli_concurrency),
        cmocka_unit_test(test_cli_global_rate_limit),
        cmocka_unit_test(test_worker_global_concurrency),
        cmocka_unit_test(test_worker_global_rate_limit),
        cmocka_unit_test(test_worker_manual_rate_limit),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}

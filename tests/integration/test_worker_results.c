/* test_worker_results.c - results over their size limits (FERRY_RETURN_MAX_BYTES,
 * FERRY_REASON_MAX_BYTES),
 * and what keeps a worker sound around them, against a private Redis: a return value over
 * the limit fails the attempt with the size in failedReason (the worker goes on), a reason
 * over the limit is cut with a note, a pipelined command refused before sending leaves the
 * connection usable, and a custom backoff strategy is never called once close returned. */
#include <stdatomic.h>
#include <unistd.h>

#include "redis/conn.h"
#include "support/wt.h"

/* ---- return values and reasons over the limit -------------------------------------------- */

typedef struct big_ctx {
    atomic_int set_return_rc, quoted_rc;
} big_ctx;

/* "big": a JSON text one byte over the limit; "quoted": non-JSON text that only goes over
 * the limit once quoted as a JSON string (each '"' becomes \"); "long-reason": a failure
 * whose reason is over the limit; anything else completes with a small value. */
static ferry_outcome big_handler(ferry_job *job, void *ud) {
    big_ctx *c = ud;
    const char *name = ferry_job_name(job);
    if (!strcmp(name, "big")) {
        size_t n = FERRY_RETURN_MAX_BYTES + 1;
        char *v = malloc(n + 1);
        if (!v) return FERRY_FAILED;
        memset(v, '1', n); /* a JSON number of 16 MiB + 1 digits */
        v[n] = 0;
        atomic_store(&c->set_return_rc, ferry_job_set_return(job, v));
        free(v);
        return FERRY_COMPLETED;
    }
    if (!strcmp(name, "quoted")) {
        size_t n = FERRY_RETURN_MAX_BYTES / 2 + 1;
        char *v = malloc(n + 1);
        if (!v) return FERRY_FAILED;
        memset(v, '"', n);
        v[n] = 0;
        atomic_store(&c->quoted_rc, ferry_job_set_return(job, v));
        free(v);
        return FERRY_COMPLETED;
    }
    if (!strcmp(name, "long-reason")) {
        size_t n = FERRY_REASON_MAX_BYTES + 1000;
        char *v = malloc(n + 1);
        if (!v) return FERRY_FAILED;
        memset(v, 'r', n);
        v[n] = 0;
        int rc = ferry_job_set_failure(job, v, "short trace");
        free(v);
        return rc == 0 ? FERRY_FAILED_PERMANENT : FERRY_COMPLETED;
    }
    ferry_job_set_return(job, "{\"ok\":true}");
    return FERRY_COMPLETED;
}

static void test_return_over_limit_fails_attempt(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    big_ctx c = {0};
    atomic_store(&c.set_return_rc, 1);
    atomic_store(&c.quoted_rc, 1);
    char *big = wt_add(&t, "big", NULL, "{\"attempts\":2}");
    char *quoted = wt_add(&t, "quoted", NULL, NULL);
    char *small = wt_add(&t, "small", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, big_handler, &c);
    WT_WAIT_ZCARD(&t, "failed", 2);
    WT_WAIT_ZCARD(&t, "completed", 1);
    wt_stop(w);

    assert_int_equal(atomic_load(&c.set_return_rc), FERRY_ETOOBIG);
    assert_int_equal(atomic_load(&c.quoted_rc), FERRY_ETOOBIG);
    /* both attempts of "big" ran and failed, saying why; no return value stored */
    char want[160];
    snprintf(want, sizeof want,
             "return value of %u bytes is over the %u-byte limit (FERRY_RETURN_MAX_BYTES)",
             FERRY_RETURN_MAX_BYTES + 1, FERRY_RETURN_MAX_BYTES);
    wt_expect_field(&t, big, "failedReason", want);
    wt_expect_field(&t, big, "atm", "2");
    wt_expect_field(&t, big, "returnvalue", NULL);
    char *reason = wt_hget(&t, quoted, "failedReason");
    if (!reason || !strstr(reason, "over the 16777216-byte limit"))
        fail_msg("quoted: failedReason '%s'", reason ? reason : "(absent)");
    free(reason);
    /* the worker went on: the small job completed with its value */
    wt_expect_field(&t, small, "returnvalue", "{\"ok\":true}");
    free(big);
    free(quoted);
    free(small);
    wt_fini(&t);
}

static void test_reason_over_limit_is_cut(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    big_ctx c = {0};
    char *id = wt_add(&t, "long-reason", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, big_handler, &c);
    WT_WAIT_ZCARD(&t, "failed", 1);
    wt_stop(w);
    char *reason = wt_hget(&t, id, "failedReason");
    assert_non_null(reason);
    char tail[64];
    snprintf(tail, sizeof tail, "... [cut: %u bytes]", FERRY_REASON_MAX_BYTES + 1000);
    size_t n = strlen(reason), tn = strlen(tail);
    assert_int_equal(n, FERRY_REASON_MAX_BYTES);
    assert_string_equal(reason + n - tn, tail);
    assert_int_equal(reason[0], 'r');
    free(reason);
    free(id);
    wt_fini(&t);
}

/* ---- the connection after a refused append ---------------------------------------------- */

/* A pipelined command appended, then an append refused (bad EVALSHA arguments: the same
 * path as a request over 512 MiB or out of memory): both are dropped unsent, and the
 * connection answers the next command. Before, the first stayed counted as pending and
 * every later call failed with "pipelined commands not read yet". */
static void test_refused_append_leaves_connection_usable(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    ferry_conn *c = th_conn();
    char key[160];
    snprintf(key, sizeof key, "%sdropped", t.base);
    const char *set[] = {"SET", key, "1"};
    ferry_error e = {0};
    assert_int_equal(ferry__conn_append_argv(c, 3, set, NULL, &e), 0);
    const ferry_script *s = ferry__script_get("getJob");
    assert_non_null(s);
    assert_int_equal(ferry__conn_append_evalsha(c, s, -1, NULL, 0, NULL, NULL, &e), FERRY_EINVAL);
    redisReply *r = NULL;
    if (ferry__conn_command(c, &r, &e, "PING") != 0)
        fail_msg("after a refused append: %s", e.message);
    assert_string_equal(r->str, "PONG");
    freeReplyObject(r);
    /* the SET appended before the refusal was never sent */
    assert_int_equal(WT_EXISTS(&t, "dropped"), 0);
    ferry__conn_close(c);
    wt_fini(&t);
}

/* ---- backoff strategies and close ------------------------------------------------------- */

typedef struct late_ctx {
    wt_gate g;
    atomic_int returning, strategy_calls;
} late_ctx;

static ferry_outcome late_handler(ferry_job *job, void *ud) {
    late_ctx *c = ud;
    (void)job;
    wt_gate_pass(&c->g);
    atomic_store(&c->returning, 1);
    return FERRY_FAILED; /* attempts left: the job's strategy would be asked for a delay */
}

static long long late_strategy(long attempts_made, const char *type, const char *reason,
                               const ferry_job *job, void *userdata) {
    (void)attempts_made, (void)type, (void)reason, (void)job;
    late_ctx *c = userdata;
    atomic_fetch_add(&c->strategy_calls, 1);
    return 10;
}

static int strategy_called(void *arg) {
    late_ctx *c = arg;
    return atomic_load(&c->strategy_calls) > 0;
}

static int handler_returning(void *arg) {
    late_ctx *c = arg;
    return atomic_load(&c->returning);
}

/* A handler still running when close gives up returns FERRY_FAILED afterwards: the custom
 * strategy (whose user data the caller may have freed once close returned) is not called. */
static void test_strategy_not_called_after_close(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    late_ctx *c = calloc(1, sizeof *c);
    wt_gate_init(&c->g);
    free(wt_add(&t, "late", NULL, "{\"attempts\":3,\"backoff\":{\"type\":\"late\"}}"));
    ferry_backoff_strategy strategy = {"late", late_strategy, c};
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.backoff_strategies = &strategy;
    o.nbackoff_strategies = 1;
    ferry_worker *w = wt_start(&o, late_handler, c);
    WT_WAIT_GATE_ENTERED(&c->g, 1);
    assert_int_equal(ferry_worker_close(w, 200), FERRY_ETIMEDOUT);
    assert_int_equal(ferry_worker_close(w, 3000), FERRY_ETIMEDOUT); /* (one lane: the same) */
    wt_gate_open(&c->g);
    if (!th_wait_until(handler_returning, c, 10000)) fail_msg("handler never returned");
    /* give the abandoned handler thread its chance to plan the retry: a call comes within
     * microseconds when it is made at all */
    if (th_wait_until(strategy_called, c, 1000))
        fail_msg("backoff strategy called after ferry_worker_close returned");
    ferry_worker_free(w);
    wt_gate_destroy(&c->g);
    free(c);
    wt_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_return_over_limit_fails_attempt),
        cmocka_unit_test(test_reason_over_limit_is_cut),
        cmocka_unit_test(test_refused_append_leaves_connection_usable),
        cmocka_unit_test(test_strategy_not_called_after_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

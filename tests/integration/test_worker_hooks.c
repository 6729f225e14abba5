/* test_worker_hooks.c - the envelope accessors, ferry_worker_options.check and
 * .final_failure against real Redis: accessors on relay-shaped data and on plain data; a
 * refusing check fails the job for good with its reason, the handler never runs; the
 * final_failure hook fires exactly once for every way a job fails for good (permanent
 * outcome, attempts exhausted, a strategy's -1, a failed check, stalled too many times,
 * max_started_attempts) and never for a retry or a retry-later. */
#include "support/wt.h"

#define EV "0190b6a2-7c00-7abc-8def-0123456789ab"

typedef struct hk {
    wt t;
    pthread_mutex_t mu;
    int runs, finals, checks;
    char final_ids[32][64];
    char final_reasons[32][256];
    /* what the handler saw */
    char event_id[64], trace_id[200], payload[256];
    int event_null, trace_null;
    int outcome; /* what the handler returns */
    int refuse;  /* the check refuses */
} hk;

static void hk_init(hk *h) {
    memset(h, 0, sizeof *h);
    wt_init(&h->t);
    pthread_mutex_init(&h->mu, NULL);
    h->outcome = FERRY_COMPLETED;
}

static void hk_fini(hk *h) {
    pthread_mutex_destroy(&h->mu);
    wt_fini(&h->t);
}

static ferry_outcome handler(ferry_job *job, void *ud) {
    hk *h = ud;
    pthread_mutex_lock(&h->mu);
    h->runs++;
    const char *ev = ferry_job_event_id(job), *tr = ferry_job_trace_id(job);
    h->event_null = ev == NULL;
    h->trace_null = tr == NULL;
    snprintf(h->event_id, sizeof h->event_id, "%s", ev ? ev : "");
    snprintf(h->trace_id, sizeof h->trace_id, "%s", tr ? tr : "");
    snprintf(h->payload, sizeof h->payload, "%s", ferry_job_payload(job));
    int oc = h->outcome;
    pthread_mutex_unlock(&h->mu);
    if (oc != FERRY_COMPLETED) ferry_job_set_failure(job, "handler says no", NULL);
    return (ferry_outcome)oc;
}

static int check(const ferry_job *job, char *reason, size_t cap, void *ud) {
    hk *h = ud;
    pthread_mutex_lock(&h->mu);
    h->checks++;
    int refuse = h->refuse;
    pthread_mutex_unlock(&h->mu);
    /* the envelope is decoded before the check runs */
    if (!refuse) return 0;
    snprintf(reason, cap, "contract %s: /qty: minimum (event %s)", ferry_job_name(job),
             ferry_job_event_id(job) ? "known" : "none");
    return 1;
}

static void final_failure(const ferry_job *job, const char *reason, void *ud) {
    hk *h = ud;
    pthread_mutex_lock(&h->mu);
    if (h->finals < 32) {
        snprintf(h->final_ids[h->finals], 64, "%s", ferry_job_id(job));
        snprintf(h->final_reasons[h->finals], 256, "%s", reason);
    }
    h->finals++;
    pthread_mutex_unlock(&h->mu);
}

static int hk_get(hk *h, const int *field) {
    pthread_mutex_lock(&h->mu);
    int v = *field;
    pthread_mutex_unlock(&h->mu);
    return v;
}

static ferry_worker *hk_start(hk *h, ferry_worker_options *o, ferry_redis_options *ro,
                              int with_check) {
    wt_options(&h->t, o, ro);
    o->final_failure = final_failure;
    o->final_failure_userdata = h;
    if (with_check) {
        o->check = check;
        o->check_userdata = h;
    }
    return wt_start(o, handler, h);
}

/* ---- accessors ------------------------------------------------------------------------- */

static void test_accessors_on_envelope_and_plain_data(void **state) {
    (void)state;
    hk h;
    hk_init(&h);
    ferry_worker_options o;
    ferry_redis_options ro;
    ferry_worker *w = hk_start(&h, &o, &ro, 0);

    /* as the relay writes it, with blanks as jsonb prints them inside the payload */
    free(wt_add(&h.t, "order.placed",
                "{\"eventId\":\"" EV "\",\"traceId\":\"req-42\",\"payload\":"
                "{\"orderId\": 7, \"note\": \"a b\"}}",
                NULL));
    WT_WAIT_COUNT(&h.t, completed, 1);
    pthread_mutex_lock(&h.mu);
    assert_string_equal(h.event_id, EV);
    assert_string_equal(h.trace_id, "req-42");
    assert_string_equal(h.payload, "{\"orderId\":7,\"note\":\"a b\"}");
    pthread_mutex_unlock(&h.mu);

    /* plain data: no ids, the payload is the data */
    free(wt_add(&h.t, "plain", "{\"n\":1,\"payload\":2}", NULL));
    WT_WAIT_COUNT(&h.t, completed, 2);
    pthread_mutex_lock(&h.mu);
    assert_true(h.event_null);
    assert_true(h.trace_null);
    assert_string_equal(h.payload, "{\"n\":1,\"payload\":2}");
    pthread_mutex_unlock(&h.mu);

    /* an eventId that is not a UUID: still an envelope (the payload is taken), no event id */
    free(wt_add(&h.t, "odd", "{\"eventId\":\"42\",\"payload\":[1, 2]}", NULL));
    WT_WAIT_COUNT(&h.t, completed, 3);
    pthread_mutex_lock(&h.mu);
    assert_true(h.event_null);
    assert_string_equal(h.payload, "[1,2]");
    pthread_mutex_unlock(&h.mu);

    wt_stop(w);
    assert_int_equal(hk_get(&h, &h.finals), 0);
    hk_fini(&h);
}

/* ---- check ----------------------------------------------------------------------------- */

static void test_check_refusal_is_a_final_failure(void **state) {
    (void)state;
    hk h;
    hk_init(&h);
    h.refuse = 1;
    ferry_worker_options o;
    ferry_redis_options ro;
    ferry_worker *w = hk_start(&h, &o, &ro, 1);
    char *id = wt_add(&h.t, "task.assigned.v1", "{\"eventId\":\"" EV "\",\"payload\":{\"qty\":0}}",
                      "{\"attempts\":5}");
    WT_WAIT_ZCARD(&h.t, "failed", 1);
    WT_WAIT_COUNT(&h.t, failed_final, 1);
    wt_stop(w);
    assert_int_equal(hk_get(&h, &h.runs), 0);
    assert_int_equal(hk_get(&h, &h.checks), 1); /* no retry although attempts remain */
    wt_expect_field(&h.t, id, "failedReason",
                    "contract task.assigned.v1: /qty: minimum (event known)");
    wt_expect_field(&h.t, id, "atm", "1");
    assert_int_equal(hk_get(&h, &h.finals), 1);
    assert_string_equal(h.final_ids[0], id);
    assert_string_equal(h.final_reasons[0],
                        "contract task.assigned.v1: /qty: minimum (event known)");

    /* a check that passes lets the handler run */
    h.refuse = 0;
    w = hk_start(&h, &o, &ro, 1);
    free(
        wt_add(&h.t, "task.assigned.v1", "{\"eventId\":\"" EV "\",\"payload\":{\"qty\":1}}", NULL));
    WT_WAIT_COUNT(&h.t, completed, 1);
    wt_stop(w);
    assert_int_equal(hk_get(&h, &h.runs), 1);
    assert_int_equal(hk_get(&h, &h.finals), 1);
    free(id);
    hk_fini(&h);
}

/* ---- final_failure on every final path --------------------------------------------------- */

static long long never_again(long attempts_made, const char *type, const char *reason,
                             const ferry_job *job, void *ud) {
    (void)attempts_made, (void)type, (void)reason, (void)job, (void)ud;
    return -1;
}

static void test_final_failure_once_per_final_path(void **state) {
    (void)state;
    hk h;
    hk_init(&h);

    /* 1. permanent outcome; 2. attempts exhausted (2 attempts: one retry, not final) */
    h.outcome = FERRY_FAILED_PERMANENT;
    ferry_worker_options o;
    ferry_redis_options ro;
    ferry_worker *w = hk_start(&h, &o, &ro, 0);
    char *perm = wt_add(&h.t, "p", NULL, "{\"attempts\":3}");
    WT_WAIT_COUNT(&h.t, failed_final, 1);
    wt_stop(w);

    h.outcome = FERRY_FAILED;
    w = hk_start(&h, &o, &ro, 0);
    char *exhausted = wt_add(&h.t, "x", NULL, "{\"attempts\":2}");
    WT_WAIT_COUNT(&h.t, failed_final, 2);
    wt_stop(w);
    assert_int_equal(wt_count(&h.t, &h.t.failed_retry), 1); /* the retry: no hook */
    assert_int_equal(hk_get(&h, &h.finals), 2);

    /* 3. a backoff strategy's -1 */
    ferry_backoff_strategy st = {"never", never_again, NULL};
    wt_options(&h.t, &o, &ro);
    o.final_failure = final_failure;
    o.final_failure_userdata = &h;
    o.backoff_strategies = &st;
    o.nbackoff_strategies = 1;
    w = wt_start(&o, handler, &h);
    char *strat = wt_add(&h.t, "s", NULL, "{\"attempts\":5,\"backoff\":{\"type\":\"never\"}}");
    WT_WAIT_COUNT(&h.t, failed_final, 3);
    wt_stop(w);

    /* 4. max_started_attempts: retry-later spends no attempt but counts a start */
    h.outcome = FERRY_RETRY_LATER;
    int runs_before = hk_get(&h, &h.runs);
    wt_options(&h.t, &o, &ro);
    o.final_failure = final_failure;
    o.final_failure_userdata = &h;
    o.max_started_attempts = 2;
    w = wt_start(&o, handler, &h);
    char *started = wt_add(&h.t, "m", NULL, "{\"attempts\":5}");
    WT_WAIT_COUNT(&h.t, failed_final, 4);
    wt_stop(w);
    assert_int_equal(hk_get(&h, &h.runs) - runs_before, 2); /* two retry-laters: no hook */

    /* 5. stalled too many times: fails at fetch without running */
    int runs_now = hk_get(&h, &h.runs);
    char *stalled = wt_add(&h.t, "st", NULL, "{\"attempts\":3}");
    wt_dead_worker_fetch(h.t.c, h.t.base, stalled, 200);
    /* the earlier workers' stalled checks hold the once-per-interval key (30 s) */
    freeReplyObject(wt_cmd(&h.t, "DEL %sstalled-check", h.t.base));
    wt_options(&h.t, &o, &ro);
    o.final_failure = final_failure;
    o.final_failure_userdata = &h;
    o.stalled_interval_ms = 150;
    o.max_stalled_count = FERRY_STALLED_FAIL_FIRST;
    w = wt_start(&o, handler, &h);
    WT_WAIT_COUNT(&h.t, failed_final, 5);
    wt_stop(w);
    assert_int_equal(hk_get(&h, &h.runs), runs_now);

    /* 6. data over max_payload_bytes: fails at fetch without running */
    runs_now = hk_get(&h, &h.runs);
    char big[2100];
    memset(big, 'x', sizeof big);
    memcpy(big, "{\"s\":\"", 6);
    memcpy(big + sizeof big - 3, "\"}", 3); /* 2099 bytes of JSON and the NUL */
    char *toobig = wt_add(&h.t, "big", big, "{\"attempts\":3}");
    wt_options(&h.t, &o, &ro);
    o.final_failure = final_failure;
    o.final_failure_userdata = &h;
    o.max_payload_bytes = 1000;
    w = wt_start(&o, handler, &h);
    WT_WAIT_COUNT(&h.t, failed_final, 6);
    wt_stop(w);
    assert_int_equal(hk_get(&h, &h.runs), runs_now);
    o.max_payload_bytes = (size_t)FERRY_MAX_PAYLOAD_LIMIT + 1;
    ferry_worker *bad = NULL;
    ferry_error be = {0};
    assert_int_equal(ferry_worker_create(WT_QUEUE, &o, handler, &h, &bad, &be), FERRY_EINVAL);
    assert_non_null(strstr(be.message, "max_payload_bytes"));

    /* exactly once each, in this order, with the stored reasons */
    assert_int_equal(hk_get(&h, &h.finals), 6);
    const char *ids[] = {perm, exhausted, strat, started, stalled, toobig};
    for (int i = 0; i < 6; i++) {
        assert_string_equal(h.final_ids[i], ids[i]);
        char *stored = wt_hget(&h.t, ids[i], "failedReason");
        assert_non_null(stored);
        assert_string_equal(h.final_reasons[i], stored);
        free(stored);
    }
    assert_string_equal(h.final_reasons[4], "job stalled more than allowable limit");
    assert_string_equal(h.final_reasons[5], "job data is 2099 bytes, over this worker's limit of "
                                            "1000 bytes (max_payload_bytes)");
    for (int i = 0; i < 6; i++)
        free((char *)ids[i]);
    hk_fini(&h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accessors_on_envelope_and_plain_data),
        cmocka_unit_test(test_check_refusal_is_a_final_failure),
        cmocka_unit_test(test_final_failure_once_per_final_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

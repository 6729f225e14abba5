/* test_payments.c - the seed's own tests of the shop's processors (shop_processors, run in an
 * in-process ferry worker) against real PostgreSQL and Redis and the real shop-fakes:
 *   - capture run twice: one capture at the gateway, one payment.captured event;
 *   - the gateway captures and then the connection drops: the retry does not capture again
 *     (it asks the gateway first) and the payment ends captured;
 *   - a duplicate job delivered 10 times: one effect (points once through the inbox, one
 *     email, one shipment), the other nine absorbed and recorded as duplicates;
 *   - the relay crashes after publishing and before marking the rows (its fault hook exits a
 *     forked relay there): a second relay publishes the rows again, and every effect still
 *     happens once.
 * Orders are seeded as shop-api writes them (sw.h). */
#include "sw.h"

#include <ferry/outbox.h>
#include <ferry/worker.h>

#include <pthread.h>
#include <sys/wait.h>

#include "support/wt.h"

static PGconn *db;

/* Every shop job by name, for the tests' single queue ("wq"). */
static ferry_outcome any_handler(ferry_job *job, void *ctx) {
    const char *n = ferry_job_name(job);
    if (!strcmp(n, SHOP_JOB_CONFIRMATION)) return shop_notifications_handler(job, ctx);
    if (!strcmp(n, SHOP_JOB_SHIPMENT)) return shop_shipping_handler(job, ctx);
    if (!strcmp(n, SHOP_JOB_POINTS)) return shop_loyalty_handler(job, ctx);
    if (!strcmp(n, SHOP_JOB_OUTBOX_CLEANUP)) return shop_maintenance_handler(job, ctx);
    return shop_payments_handler(job, ctx);
}

static ferry_worker *start_wq(wt *t, sw_env *e, int concurrency) {
    ferry_worker_options wo;
    static ferry_redis_options ro;
    wt_options(t, &wo, &ro);
    wo.concurrency = concurrency;
    return wt_start(&wo, any_handler, &e->ctx);
}

static long long dups(sw_env *e, const char *consumer, const char *how, const char *id) {
    return ob_ll(e->db,
                 "SELECT count(*) FROM shop_duplicates WHERE consumer = '%s' AND how = '%s' AND "
                 "message_id = '%s'",
                 consumer, how, id);
}

static char *capture_return(wt *t, const char *job_id) {
    char *rv = wt_hget(t, job_id, "returnvalue");
    if (!rv) fail_msg("job %s has no return value", job_id);
    return rv;
}

/* ---- capture run twice --------------------------------------------------------------- */

static void test_capture_twice_captures_once(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    sw_order o;
    sw_place(&e, NULL, 250000, 2, &o);
    wt t;
    wt_init(&t);
    long long replays = sw_ledger_int("gateway", "replays");
    ferry_worker *w = start_wq(&t, &e, 2);
    char *env = sw_envelope(o.event_id, o.trace, o.payload);
    free(wt_add(&t, SHOP_JOB_CAPTURE, env, "{\"jobId\":\"first-run\"}"));
    WT_WAIT_COUNT(&t, completed, 1);
    free(wt_add(&t, SHOP_JOB_CAPTURE, env, "{\"jobId\":\"delivered-again\"}"));
    WT_WAIT_COUNT(&t, completed, 2);
    wt_stop(w);

    assert_int_equal(sw_ledger("gateway", "captures", o.id), 1);
    /* the second run did not even ask: the stored result answered */
    assert_int_equal(sw_ledger_int("gateway", "replays"), replays);
    assert_int_equal(sw_captured_count(db, o.id), 1);
    char *status = sw_text(db, "SELECT status FROM payments WHERE order_id = '%s'", o.id);
    assert_string_equal(status, "captured");
    free(status);
    char *cap = sw_text(db, "SELECT capture_id FROM payments WHERE order_id = '%s'", o.id);
    char want[256];
    snprintf(want, sizeof want, "{\"captureId\":\"%s\"}", cap);
    char *rv1 = capture_return(&t, "first-run"), *rv2 = capture_return(&t, "delivered-again");
    assert_string_equal(rv1, want);
    assert_string_equal(rv2, want); /* the stored result */
    assert_int_equal(dups(&e, SHOP_CONSUMER_CAPTURE, "stored-result", o.event_id), 1);

    /* the event carries what shipping and loyalty need, and the request's trace id */
    char ev_id[37];
    char *payload = sw_captured_event(&e, &o, ev_id);
    shop_payment_captured pc;
    char err[256];
    assert_int_equal(shop_parse_payment_captured(payload, &pc, err, sizeof err), 0);
    assert_string_equal(pc.capture_id, cap);
    assert_int_equal(pc.amount, 250000);
    assert_int_equal(pc.item_count, 2);
    assert_string_equal(pc.customer_id, o.customer);
    char *trace = sw_text(db, "SELECT trace_id FROM outbox_events WHERE id = '%s'", ev_id);
    assert_string_equal(trace, o.trace);
    free(trace);
    free(payload);
    free(rv1);
    free(rv2);
    free(cap);
    free(env);
    wt_fini(&t);
    sw_env_fini(&e);
}

/* ---- captured, then the connection dropped ------------------------------------------- */

static void test_capture_dropped_then_retried(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    sw_order o;
    sw_place(&e, NULL, 120000, 1, &o);
    sw_faults("{\"gateway.capture\":{\"drop_next\":1}}");
    long long replays = sw_ledger_int("gateway", "replays");
    wt t;
    wt_init(&t);
    ferry_worker *w = start_wq(&t, &e, 1);
    char *env = sw_envelope(o.event_id, o.trace, o.payload);
    free(
        wt_add(&t, SHOP_JOB_CAPTURE, env,
               "{\"jobId\":\"cap\",\"attempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":50}}"));
    WT_WAIT_COUNT(&t, completed, 1);
    wt_stop(w);
    sw_faults_clear();
    assert_int_equal(wt_count(&t, &t.failed_retry), 1); /* the dropped call: transient */
    assert_true(strstr(t.last_reason, "dropped") != NULL);
    assert_int_equal(sw_ledger("gateway", "captures", o.id), 1);
    /* the retry asked the gateway first and did not send the capture again */
    assert_int_equal(sw_ledger_int("gateway", "replays"), replays);
    char *status = sw_text(db, "SELECT status FROM payments WHERE order_id = '%s'", o.id);
    assert_string_equal(status, "captured");
    free(status);
    /* the retry took the gateway's capture: absorbed by the remote state */
    assert_int_equal(dups(&e, SHOP_CONSUMER_CAPTURE, "remote-state", o.event_id), 1);
    assert_int_equal(sw_captured_count(db, o.id), 1);
    free(env);
    wt_fini(&t);
    sw_env_fini(&e);
}

/* ---- a duplicate delivered 10 times -------------------------------------------------- */

static void test_duplicate_ten_times_one_effect(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    sw_order o;
    sw_place(&e, NULL, 257000, 3, &o);
    wt t;
    wt_init(&t);
    ferry_worker *w = start_wq(&t, &e, 10);
    char *placed = sw_envelope(o.event_id, o.trace, o.payload);
    free(wt_add(&t, SHOP_JOB_CAPTURE, placed, NULL));
    WT_WAIT_COUNT(&t, completed, 1);
    char ev_id[37];
    char *payload = sw_captured_event(&e, &o, ev_id);
    char *captured = sw_envelope(ev_id, o.trace, payload);
    /* the same events delivered ten times each (as ten jobs: a relay republishing, a
     * redrive), all at once on ten handler threads */
    for (int i = 0; i < 10; i++) {
        char opts[64];
        snprintf(opts, sizeof opts, "{\"jobId\":\"points-%d\"}", i);
        free(wt_add(&t, SHOP_JOB_POINTS, captured, opts));
        snprintf(opts, sizeof opts, "{\"jobId\":\"email-%d\"}", i);
        free(wt_add(&t, SHOP_JOB_CONFIRMATION, placed, opts));
        snprintf(opts, sizeof opts, "{\"jobId\":\"ship-%d\"}", i);
        free(wt_add(&t, SHOP_JOB_SHIPMENT, captured, opts));
    }
    WT_WAIT_COUNT(&t, completed, 31);
    wt_stop(w);
    assert_int_equal(wt_count(&t, &t.failed_final), 0);

    assert_int_equal(
        ob_ll(db, "SELECT points FROM loyalty_accounts WHERE customer_id = '%s'", o.customer), 25);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM processed_messages WHERE consumer = '%s' AND "
                           "message_id = '%s'",
                           SHOP_CONSUMER_POINTS, ev_id),
                     1);
    assert_int_equal(dups(&e, SHOP_CONSUMER_POINTS, "inbox", ev_id), 9);

    assert_int_equal(sw_ledger("mailer", "messages", o.id), 1);
    assert_int_equal(
        ob_ll(db, "SELECT count(*) FROM order_notifications WHERE order_id = '%s'", o.id), 1);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM shop_duplicates WHERE consumer = '%s' AND "
                           "message_id = '%s'",
                           SHOP_CONSUMER_CONFIRMATION, o.event_id),
                     9);

    assert_int_equal(sw_ledger("carrier", "shipments", o.id), 1);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM shipments WHERE order_id = '%s'", o.id), 1);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM shop_duplicates WHERE consumer = '%s' AND "
                           "message_id = '%s'",
                           SHOP_CONSUMER_SHIPMENT, ev_id),
                     9);
    free(placed);
    free(captured);
    free(payload);
    wt_fini(&t);
    sw_env_fini(&e);
}

/* ---- the relay crashes after publishing, before marking ------------------------------ */

static void crash_after_publish(const char *point, void *ud) {
    (void)ud;
    if (!strcmp(point, "relay_after_publish")) _exit(42);
}

/* Jobs the test relays add are removed when they complete, so that a republished event
 * really runs again (with BullMQ's retention a duplicate jobId would be dropped instead). */
#define TEST_RELAY_OPTS                                                                            \
    "{\"attempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":50},\"removeOnComplete\":true}"

static ferry_relay *make_relay(sw_env *e, const char *prefix, int crash) {
    static ferry_redis_options ro;
    ro = th_redis_options(0);
    ferry_routes *routes = NULL;
    ferry_error err = {0};
    if (ferry_routes_parse(SHOP_ROUTES, strlen(SHOP_ROUTES), "SHOP_ROUTES", &routes, &err))
        fail_msg("routes: %s", err.message);
    ferry_relay_options o;
    ferry_relay_options_init(&o);
    o.database_url = th_env_require("DATABASE_URL");
    o.schema = e->schema;
    o.routes = routes;
    o.redis = &ro;
    o.prefix = prefix;
    o.default_job_opts = TEST_RELAY_OPTS;
    o.poll_interval_ms = 50;
    o.retention_s = -1;
    o.fault = crash ? crash_after_publish : NULL;
    ferry_relay *r = NULL;
    if (ferry_relay_create(&o, &r, &err)) fail_msg("relay: %s", err.message);
    ferry_routes_free(routes);
    return r;
}

static void *relay_thread(void *arg) {
    ferry_error err = {0};
    if (ferry_relay_run(arg, &err)) fprintf(stderr, "relay: %s\n", err.message);
    return NULL;
}

static ferry_worker *start_queue(const char *prefix, const char *queue, ferry_handler_fn fn,
                                 sw_env *e) {
    ferry_redis_options ro = th_redis_options(0);
    ferry_worker_options wo;
    ferry_worker_options_init(&wo);
    wo.redis = &ro;
    wo.prefix = prefix;
    wo.concurrency = 2;
    ferry_worker *w = NULL;
    ferry_error err = {0};
    if (ferry_worker_create(queue, &wo, fn, &e->ctx, &w, &err) || ferry_worker_start(w, &err))
        fail_msg("worker %s: %s", queue, err.message);
    return w;
}

typedef struct key_arg {
    ferry_conn *c;
    char key[256];
} key_arg;

static int key_gone(void *arg) {
    key_arg *k = arg;
    return th_cmd_int(k->c, "EXISTS %s", k->key) == 0;
}

static void test_relay_crash_effects_once(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    sw_order o;
    sw_place(&e, NULL, 333000, 1, &o);

    /* a relay in a child process, killed by its fault hook between the add and the commit
     * (no worker threads run in this process yet, so fork is safe) */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ferry_relay *r = make_relay(&e, prefix, 1);
        ferry_error err = {0};
        ferry_relay_run(r, &err);
        _exit(1); /* it never returns normally: the hook exits first */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 42);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM outbox_events WHERE id = '%s' AND published_at "
                           "IS NULL",
                           o.event_id),
                     1);
    ferry_conn *rc = th_conn();
    assert_int_equal(th_cmd_int(rc, "EXISTS %s:payments:%s", prefix, o.event_id), 1);
    assert_int_equal(th_cmd_int(rc, "EXISTS %s:notifications:%s", prefix, o.event_id), 1);

    /* the published jobs run (and are removed when done) */
    ferry_worker *ws[4] = {
        start_queue(prefix, SHOP_Q_PAYMENTS, shop_payments_handler, &e),
        start_queue(prefix, SHOP_Q_NOTIFICATIONS, shop_notifications_handler, &e),
        start_queue(prefix, SHOP_Q_SHIPPING, shop_shipping_handler, &e),
        start_queue(prefix, SHOP_Q_LOYALTY, shop_loyalty_handler, &e),
    };
    SW_WAIT_COUNT(db, 1, 15000,
                  "SELECT count(*) FROM payments WHERE order_id = '%s' AND status = 'captured'",
                  o.id);
    SW_WAIT_COUNT(db, 1, 15000, "SELECT count(*) FROM order_notifications WHERE order_id = '%s'",
                  o.id);
    key_arg k1 = {.c = rc}, k2 = {.c = rc};
    snprintf(k1.key, sizeof k1.key, "%s:payments:%s", prefix, o.event_id);
    snprintf(k2.key, sizeof k2.key, "%s:notifications:%s", prefix, o.event_id);
    assert_true(th_wait_until(key_gone, &k1, 10000));
    assert_true(th_wait_until(key_gone, &k2, 10000));

    /* a second relay finds the row unpublished: order.placed goes out again (its jobs run
     * again), and payment.captured for the first time */
    ferry_relay *r2 = make_relay(&e, prefix, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, relay_thread, r2), 0);
    SW_WAIT_COUNT(db, 0, 15000, "SELECT count(*) FROM outbox_events WHERE published_at IS NULL");
    SW_WAIT_COUNT(db, 1, 15000, "SELECT count(*) FROM shipments WHERE order_id = '%s'", o.id);
    SW_WAIT_COUNT(db, 1, 15000, "SELECT count(*) FROM processed_messages WHERE consumer = '%s'",
                  SHOP_CONSUMER_POINTS);
    SW_WAIT_COUNT(db, 1, 15000,
                  "SELECT count(*) FROM shop_duplicates WHERE consumer = '%s' AND message_id = "
                  "'%s'",
                  SHOP_CONSUMER_CAPTURE, o.event_id);
    SW_WAIT_COUNT(db, 1, 15000,
                  "SELECT count(*) FROM shop_duplicates WHERE consumer = '%s' AND message_id = "
                  "'%s'",
                  SHOP_CONSUMER_CONFIRMATION, o.event_id);
    ferry_relay_stop(r2);
    pthread_join(th, NULL);
    ferry_relay_free(r2);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ferry_worker_close(ws[i], 10000), 0);
        ferry_worker_free(ws[i]);
    }

    assert_int_equal(sw_ledger("gateway", "captures", o.id), 1);
    assert_int_equal(sw_ledger("mailer", "messages", o.id), 1);
    assert_int_equal(sw_ledger("carrier", "shipments", o.id), 1);
    assert_int_equal(
        ob_ll(db, "SELECT points FROM loyalty_accounts WHERE customer_id = '%s'", o.customer), 33);
    assert_int_equal(sw_captured_count(db, o.id), 1);
    ferry__conn_close(rc);
    sw_env_fini(&e);
}

/* ---- cancellations, refusals, maintenance -------------------------------------------- */

/* Run one job on wq and wait for its end; returns 1 when it completed, 0 when it failed for
 * good (its failedReason in t->last_reason). */
static int run_one(wt *t, const char *name, const char *data, const char *job_id) {
    int done = wt_count(t, &t->completed), failed = wt_count(t, &t->failed_final);
    char opts[128];
    snprintf(opts, sizeof opts, "{\"jobId\":\"%s\"}", job_id);
    free(wt_add(t, name, data, opts));
    long long deadline = th_mono_ms() + 15000;
    while (th_mono_ms() < deadline) {
        if (wt_count(t, &t->completed) > done) return 1;
        if (wt_count(t, &t->failed_final) > failed) return 0;
        th_sleep_ms(5);
    }
    fail_msg("job %s did not finish", job_id);
    return -1;
}

static void test_void_cancelled_and_refusals(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    sw_order c, k, x;
    char void_id[37], void_payload[512];
    sw_place(&e, NULL, 70000, 1, &c);
    sw_cancel(&e, &c, void_id, void_payload);
    sw_place(&e, NULL, 80000, 1, &k);
    sw_place(&e, NULL, 90000, 1, &x);
    char path[256];
    snprintf(path, sizeof path, "/gateway/authorizations/%s/expire", x.auth);
    json_decref(sw_fakes_call("POST", path, NULL, NULL, 200));

    wt t;
    wt_init(&t);
    ferry_worker *w = start_wq(&t, &e, 1);
    /* the cancellation: voided at the gateway once, a second delivery absorbed */
    char *voids = sw_envelope(void_id, c.trace, void_payload);
    assert_int_equal(run_one(&t, SHOP_JOB_VOID, voids, "void-1"), 1);
    assert_int_equal(run_one(&t, SHOP_JOB_VOID, voids, "void-2"), 1);
    char st[32];
    char *s = sw_text(db,
                      "SELECT status || ',' || (voided_at IS NOT NULL) FROM payments WHERE "
                      "order_id = '%s'",
                      c.id);
    snprintf(st, sizeof st, "%s", s);
    free(s);
    assert_string_equal(st, "voided,true");
    assert_int_equal(sw_ledger("gateway", "voids", c.id), 1);
    assert_int_equal(dups(&e, SHOP_CONSUMER_VOID, "stored-result", void_id), 1);
    /* its capture job comes after: a no-op, not a failure, and nothing captured */
    char *placed = sw_envelope(c.event_id, c.trace, c.payload);
    assert_int_equal(run_one(&t, SHOP_JOB_CAPTURE, placed, "cap-cancelled"), 1);
    char *rv = wt_hget(&t, "cap-cancelled", "returnvalue");
    assert_string_equal(rv, "{\"skipped\":\"cancelled\"}");
    free(rv);
    assert_int_equal(sw_ledger("gateway", "captures", c.id), 0);

    /* a void for a captured payment: refused for good, saying why */
    char *kplaced = sw_envelope(k.event_id, k.trace, k.payload);
    assert_int_equal(run_one(&t, SHOP_JOB_CAPTURE, kplaced, "cap-k"), 1);
    char kvoid[512];
    snprintf(kvoid, sizeof kvoid,
             "{\"orderId\":\"%s\",\"customerId\":\"%s\",\"authorizationId\":\"%s\"}", k.id,
             k.customer, k.auth);
    char *kv = sw_envelope(k.event_id, k.trace, kvoid);
    assert_int_equal(run_one(&t, SHOP_JOB_VOID, kv, "void-k"), 0);
    if (!strstr(t.last_reason, "cannot be voided") || !strstr(t.last_reason, "refund"))
        fail_msg("reason: %s", t.last_reason);
    assert_int_equal(sw_ledger("gateway", "voids", k.id), 0);

    /* an authorization that expired at the gateway: the payment fails, for good */
    char *xplaced = sw_envelope(x.event_id, x.trace, x.payload);
    assert_int_equal(run_one(&t, SHOP_JOB_CAPTURE, xplaced, "cap-x"), 0);
    if (!strstr(t.last_reason, "is expired")) fail_msg("reason: %s", t.last_reason);
    s = sw_text(db, "SELECT status || ': ' || failure FROM payments WHERE order_id = '%s'", x.id);
    if (!s || strncmp(s, "failed: ", 8) || !strstr(s, "expired")) fail_msg("payment: %s", s);
    free(s);
    assert_int_equal(sw_ledger("gateway", "captures", x.id), 0);
    /* delivered again: still failed, without asking the gateway */
    assert_int_equal(run_one(&t, SHOP_JOB_CAPTURE, xplaced, "cap-x2"), 0);
    if (!strstr(t.last_reason, "failed earlier")) fail_msg("reason: %s", t.last_reason);

    /* a job name the payments queue does not serve */
    assert_int_equal(run_one(&t, "refund-payment", kplaced, "refund"), 0);
    assert_string_equal(t.last_reason, "unknown job name \"refund-payment\" on queue wq");
    wt_stop(w);
    free(voids);
    free(placed);
    free(kplaced);
    free(kv);
    free(xplaced);
    wt_fini(&t);
    sw_env_fini(&e);
}

static void test_outbox_cleanup_job(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    sw_order a, b, u;
    sw_place(&e, NULL, 10000, 1, &a);
    sw_place(&e, NULL, 10000, 1, &b);
    sw_place(&e, NULL, 10000, 1, &u);
    /* a published 10 days ago, b published today, u (10 days old) never published */
    PQclear(ob_sql(db,
                   "UPDATE outbox_events SET created_at = now() - interval '10 days', "
                   "published_at = now() - interval '10 days' WHERE id = '%s'",
                   a.event_id));
    PQclear(
        ob_sql(db, "UPDATE outbox_events SET published_at = now() WHERE id = '%s'", b.event_id));
    PQclear(ob_sql(db,
                   "UPDATE outbox_events SET created_at = now() - interval '10 days' WHERE id = "
                   "'%s'",
                   u.event_id));
    wt t;
    wt_init(&t);
    ferry_worker *w = start_wq(&t, &e, 1);
    assert_int_equal(run_one(&t, SHOP_JOB_OUTBOX_CLEANUP, "{\"olderThanDays\":7}", "clean-1"), 1);
    char *rv = wt_hget(&t, "clean-1", "returnvalue");
    assert_string_equal(rv, "{\"deleted\":1}");
    free(rv);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM outbox_events WHERE id = '%s'", a.event_id),
                     0);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM outbox_events WHERE id IN ('%s', '%s')",
                           b.event_id, u.event_id),
                     2);
    assert_int_equal(run_one(&t, SHOP_JOB_OUTBOX_CLEANUP, "{\"olderThanDays\":\"7\"}", "clean-2"),
                     0);
    if (!strstr(t.last_reason, "\"olderThanDays\" must be an integer"))
        fail_msg("reason: %s", t.last_reason);
    wt_stop(w);
    wt_fini(&t);
    sw_env_fini(&e);
}

static int group_setup(void **state) {
    (void)state;
    return sw_group_setup(&db);
}

static int group_teardown(void **state) {
    (void)state;
    return sw_group_teardown(db);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* first: it forks, and no worker thread may exist then */
        cmocka_unit_test(test_relay_crash_effects_once),
        cmocka_unit_test(test_capture_twice_captures_once),
        cmocka_unit_test(test_capture_dropped_then_retried),
        cmocka_unit_test(test_duplicate_ten_times_one_effect),
        cmocka_unit_test(test_void_cancelled_and_refusals),
        cmocka_unit_test(test_outbox_cleanup_job),
    };
    return th_exit(cmocka_run_group_tests(tests, group_setup, group_teardown));
}

/* test_shop_worker.c - the shop-worker program end to end, as real processes (shop-worker,
 * shop-fakes) against real PostgreSQL and Redis, with orders seeded as shop-api writes them:
 *   - two worker processes (each with its relay) take a few orders through: captured,
 *     shipped, points and one email each, a cancelled order voided and never captured or
 *     shipped; the relay's job options (payments' own: `capped`), the outbox-cleanup
 *     scheduler in Redis once; SIGTERM exits 0;
 *   - the carrier: a shipment already there is found by the lookup (no second create); a 429
 *     with Retry-After throttles the queue and the job still completes (not failed);
 *   - an unknown job name, a poison payload and an unknown order land in dead_letters, each
 *     with a reason naming the problem;
 *   - SIGTERM while a job runs: the job finishes, then exit 0;
 *   - kill -9 in the middle of a capture: another worker recovers the stalled job and every
 *     effect happens once;
 *   - Redis and PostgreSQL restarted under a running worker: it rides both out;
 *   - start-up: usage errors exit 2, an unmigrated schema and an unreachable database exit 1
 *     with a clear message that never shows the password. */
#include "sw.h"

#include <ferry/queue.h>
#include <ferry/scheduler.h>

static PGconn *db;

/* shop-worker on e's schema and `prefix`, with short locks and fast backoff, plus extra
 * arguments (NULL-terminated, may be NULL); waits for "ready". */
static void start_worker(sp_proc *p, sw_env *e, const char *prefix, const char *const *extra) {
    const char *args[64] = {"--database",
                            th_env_require("DATABASE_URL"),
                            "--redis",
                            th_env_require("REDIS_URL"),
                            "--schema",
                            e->schema,
                            "--prefix",
                            prefix,
                            "--gateway-url",
                            e->gateway,
                            "--carrier-url",
                            e->carrier,
                            "--mailer-url",
                            e->mailer,
                            "--lock-duration-ms",
                            "2000",
                            "--stalled-interval-ms",
                            "500",
                            "--capped-base-ms",
                            "100",
                            "--settle-ms",
                            "300",
                            "--drain-timeout-ms",
                            "10000",
                            "--verbose"};
    int n = 0;
    while (args[n])
        n++;
    for (int i = 0; extra && extra[i] && n < 62; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    sp_start(p, "shop-worker", args, NULL, SP_READY);
}

static void stop_worker(sp_proc *p) {
    int st = sp_stop(p, 20000);
    if (st != 0) {
        sp_dump(p);
        fail_msg("shop-worker exit status %d after SIGTERM", st);
    }
}

/* 1 when a line of the file holds both a and b. */
static int line_has(const char *path, const char *a, const char *b) {
    char *text = th_slurp(path);
    int found = 0;
    for (char *line = text, *next; line && *line && !found; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        found = strstr(line, a) && strstr(line, b);
    }
    free(text);
    return found;
}

static ferry_queue *open_queue(const char *prefix, const char *name) {
    return th_queue_open(prefix, name, NULL, 0);
}

static const char *payment_status(const sw_order *o, char *buf, size_t cap) {
    char *s = sw_text(db, "SELECT status FROM payments WHERE order_id = '%s'", o->id);
    snprintf(buf, cap, "%s", s ? s : "(none)");
    free(s);
    return buf;
}

/* ---- a few orders, two workers -------------------------------------------------------- */

static void test_orders_end_to_end(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    const char *prefix = th_prefix();
    char customer[37];
    assert_int_equal(ferry_uuid7(customer), 0);
    sw_order o[4];
    sw_place(&e, customer, 250000, 2, &o[0]);
    sw_place(&e, customer, 99999, 1, &o[1]);
    sw_place(&e, NULL, 1234567, 5, &o[2]);
    sw_place(&e, NULL, 500000, 1, &o[3]);
    sw_cancel(&e, &o[3], NULL, NULL); /* before any worker ran: the capture must not happen */

    sp_proc w1, w2;
    start_worker(&w1, &e, prefix, NULL);
    start_worker(&w2, &e, prefix, (const char *const[]){"--name", "second", NULL});
    SW_WAIT_COUNT(db, 3, 20000, "SELECT count(*) FROM payments WHERE status = 'captured'");
    SW_WAIT_COUNT(db, 1, 20000, "SELECT count(*) FROM payments WHERE status = 'voided'");
    SW_WAIT_COUNT(db, 3, 20000, "SELECT count(*) FROM shipments");
    SW_WAIT_COUNT(db, 3, 20000, "SELECT count(*) FROM processed_messages WHERE consumer = '%s'",
                  SHOP_CONSUMER_POINTS);
    SW_WAIT_COUNT(db, 4, 20000, "SELECT count(*) FROM order_notifications");
    SW_WAIT_COUNT(db, 0, 20000, "SELECT count(*) FROM outbox_events WHERE published_at IS NULL");

    char st[32];
    assert_string_equal(payment_status(&o[3], st, sizeof st), "voided");
    for (int i = 0; i < 3; i++) {
        assert_string_equal(payment_status(&o[i], st, sizeof st), "captured");
        assert_int_equal(sw_ledger("gateway", "captures", o[i].id), 1);
        assert_int_equal(sw_ledger("carrier", "shipments", o[i].id), 1);
    }
    assert_int_equal(sw_ledger("gateway", "captures", o[3].id), 0);
    assert_int_equal(sw_ledger("gateway", "voids", o[3].id), 1);
    assert_int_equal(sw_ledger("carrier", "shipments", o[3].id), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(sw_ledger("mailer", "messages", o[i].id), 1);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM shipments WHERE order_id = '%s'", o[3].id), 0);
    /* points: floor per captured amount, once each */
    assert_int_equal(
        ob_ll(db, "SELECT points FROM loyalty_accounts WHERE customer_id = '%s'", customer),
        25 + 9);
    assert_int_equal(
        ob_ll(db, "SELECT points FROM loyalty_accounts WHERE customer_id = '%s'", o[2].customer),
        123);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM dead_letters"), 0);

    /* the relay's job options: payments' own (attempts 12, capped), the others' defaults */
    ferry_conn *rc = th_conn();
    char key[256];
    snprintf(key, sizeof key, "%s:payments:%s", prefix, o[0].event_id);
    char *opts = th_hget(rc, key, "opts");
    assert_non_null(opts);
    if (!strstr(opts, "\"capped\"") || !strstr(opts, "\"attempts\":12"))
        fail_msg("capture job opts: %s", opts);
    free(opts);
    snprintf(key, sizeof key, "%s:notifications:%s", prefix, o[0].event_id);
    opts = th_hget(rc, key, "opts");
    assert_non_null(opts);
    if (!strstr(opts, "\"exponential\"") || !strstr(opts, "\"attempts\":8"))
        fail_msg("confirmation job opts: %s", opts);
    free(opts);
    ferry__conn_close(rc);

    /* the scheduler, upserted by both workers: one */
    ferry_queue *q = open_queue(prefix, SHOP_Q_MAINTENANCE);
    ferry_scheduler_info *info = NULL;
    ferry_error fe = {0};
    assert_int_equal(ferry_scheduler_get(q, SHOP_JOB_OUTBOX_CLEANUP, &info, &fe), 0);
    assert_string_equal(info->name, SHOP_JOB_OUTBOX_CLEANUP);
    assert_string_equal(info->pattern, "0 3 * * *");
    assert_string_equal(info->tz, "Asia/Ho_Chi_Minh");
    assert_non_null(strstr(info->data_json, "\"olderThanDays\":7"));
    ferry_scheduler_info_free(info);
    long long count = 0;
    assert_int_equal(ferry_scheduler_count(q, &count, &fe), 0);
    assert_int_equal(count, 1);
    ferry_queue_close(q);

    stop_worker(&w1);
    stop_worker(&w2);
    assert_true(th_file_contains(w1.err_path, "stopped"));
    sw_env_fini(&e);
}

/* ---- the carrier: lookup first, and 429 ----------------------------------------------- */

static void test_shipping_lookup_and_throttle(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    const char *prefix = th_prefix();
    sw_order a, b;
    sw_place(&e, NULL, 100000, 1, &a);
    sw_place(&e, NULL, 200000, 2, &b);
    /* an earlier run created a's shipment and died before recording it */
    char body[128];
    snprintf(body, sizeof body, "{\"reference\":\"%s\",\"items\":1}", a.id);
    json_t *made = sw_fakes_call("POST", "/carrier/shipments", body, NULL, 201);
    char tracking[64];
    snprintf(tracking, sizeof tracking, "%s",
             json_string_value(json_object_get(made, "trackingNumber")));
    json_decref(made);
    sw_faults("{\"carrier.lookup\":{\"throttle_next\":1,\"retry_after\":\"seconds\","
              "\"retry_after_s\":1}}");

    sp_proc w;
    start_worker(&w, &e, prefix, NULL);
    SW_WAIT_COUNT(db, 2, 20000, "SELECT count(*) FROM shipments");
    stop_worker(&w);
    sw_faults_clear();

    assert_int_equal(sw_ledger("carrier", "shipments", a.id), 1); /* found, not made again */
    assert_int_equal(sw_ledger("carrier", "shipments", b.id), 1);
    char *t = sw_text(db, "SELECT tracking_number FROM shipments WHERE order_id = '%s'", a.id);
    assert_string_equal(t, tracking);
    free(t);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM shop_duplicates WHERE consumer = '%s' AND how = "
                           "'lookup'",
                           SHOP_CONSUMER_SHIPMENT),
                     1);
    /* the 429: the queue throttled for Retry-After, the job back in wait, not failed */
    if (!line_has(w.err_path, "queue=shipping job=create-shipment", "outcome=throttled") ||
        !line_has(w.err_path, "outcome=throttled", "delay_ms=1000")) {
        sp_dump(&w);
        fail_msg("no throttled job in the worker's log");
    }
    assert_false(line_has(w.err_path, "queue=shipping", "outcome=retry "));
    assert_false(line_has(w.err_path, "queue=shipping", "outcome=failed"));
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM dead_letters"), 0);
    sw_env_fini(&e);
}

/* ---- dead letters ----------------------------------------------------------------------- */

static void test_dead_letters_with_reasons(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    const char *prefix = th_prefix();
    /* a job name no processor serves */
    ferry_queue *q = open_queue(prefix, SHOP_Q_PAYMENTS);
    ferry_job_spec js = {"refund-payment", "{\"orderId\":\"x\"}", "{\"jobId\":\"refund-1\"}"};
    ferry_error fe = {0};
    assert_int_equal(ferry_queue_add(q, &js, NULL, &fe), 0);
    ferry_queue_close(q);
    /* a poison event (no customerId) and an event for an order that does not exist */
    char unknown[37], poison_id[37], unknown_id[37], payload[512], trace[EX_TRACEPARENT_LEN + 1];
    assert_int_equal(ferry_uuid7(unknown), 0);
    ex_traceparent_new(trace);
    sw_exec(db, "BEGIN", 0, NULL);
    snprintf(payload, sizeof payload, "{\"orderId\":\"%s\",\"total\":5,\"secret\":\"s3cr3t\"}",
             unknown);
    sw_append(&e, SHOP_TOPIC_PLACED, unknown, payload, trace, poison_id);
    snprintf(payload, sizeof payload,
             "{\"orderId\":\"%s\",\"customerId\":\"%s\",\"total\":5,\"itemCount\":1,"
             "\"authorizationId\":\"auth_none\"}",
             unknown, unknown);
    sw_append(&e, SHOP_TOPIC_PLACED, unknown, payload, trace, unknown_id);
    sw_exec(db, "COMMIT", 0, NULL);

    sp_proc w;
    start_worker(&w, &e, prefix, NULL);
    SW_WAIT_COUNT(db, 5, 20000, "SELECT count(*) FROM dead_letters");
    stop_worker(&w);

    assert_int_equal(ob_ll(db, "SELECT count(*) FROM dead_letters WHERE queue = 'payments' AND "
                               "job_name = 'refund-payment' AND job_id = 'refund-1' AND error = "
                               "'unknown job name \"refund-payment\" on queue payments'"),
                     1);
    for (int i = 0; i < 2; i++) {
        const char *queue = i ? "notifications" : "payments";
        assert_int_equal(ob_ll(db,
                               "SELECT count(*) FROM dead_letters WHERE queue = '%s' AND job_id = "
                               "'%s' AND error LIKE '%%order.placed payload: \"customerId\" is "
                               "missing%%' AND error NOT LIKE '%%s3cr3t%%' AND attempts_made = 1",
                               queue, poison_id),
                         1);
    }
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM dead_letters WHERE queue = 'payments' AND job_id "
                           "= '%s' AND error = 'capture-payment: no payment for order %s "
                           "(unknown order)'",
                           unknown_id, unknown),
                     1);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM dead_letters WHERE queue = 'notifications' AND "
                           "job_id = '%s' AND error = 'order-confirmation: unknown order %s'",
                           unknown_id, unknown),
                     1);
    sw_env_fini(&e);
}

/* ---- SIGTERM drains ----------------------------------------------------------------------- */

typedef struct llen_arg {
    ferry_conn *c;
    char key[256];
    long long want;
} llen_arg;

static int llen_at_least(void *arg) {
    llen_arg *a = arg;
    return th_cmd_int(a->c, "LLEN %s", a->key) >= a->want;
}

static void test_sigterm_drains(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    const char *prefix = th_prefix();
    sw_faults("{\"mailer.send\":{\"slow_next\":1,\"slow_ms\":1500}}");
    sp_proc w;
    start_worker(&w, &e, prefix, (const char *const[]){"--provider-timeout-ms", "5000", NULL});
    sw_order o;
    sw_place(&e, NULL, 10000, 1, &o);
    ferry_conn *rc = th_conn();
    llen_arg a = {.c = rc, .want = 1};
    snprintf(a.key, sizeof a.key, "%s:notifications:active", prefix);
    assert_true(th_wait_until(llen_at_least, &a, 10000)); /* the email is being sent */
    long long t0 = th_mono_ms();
    stop_worker(&w);
    assert_true(th_mono_ms() - t0 < 10000);
    sw_faults_clear();
    /* the running job finished before the exit: sent once, recorded, not left active */
    assert_int_equal(sw_ledger("mailer", "messages", o.id), 1);
    assert_int_equal(
        ob_ll(db, "SELECT count(*) FROM order_notifications WHERE order_id = '%s'", o.id), 1);
    assert_int_equal(th_cmd_int(rc, "LLEN %s", a.key), 0);
    ferry__conn_close(rc);
    sw_env_fini(&e);
}

/* ---- kill -9 in the middle of a capture ----------------------------------------------- */

static void test_kill9_mid_capture_recovered(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    const char *prefix = th_prefix();
    static const char *const fast[] = {"--lock-duration-ms",
                                       "1000",
                                       "--stalled-interval-ms",
                                       "300",
                                       "--provider-timeout-ms",
                                       "4000",
                                       NULL};
    sw_faults("{\"gateway.capture\":{\"slow_next\":1,\"slow_ms\":1500}}");
    sp_proc w1;
    start_worker(&w1, &e, prefix, fast);
    sw_order o;
    sw_place(&e, NULL, 480000, 2, &o);
    /* the capture job claimed the payment and is waiting for the gateway */
    SW_WAIT_COUNT(db, 1, 10000,
                  "SELECT count(*) FROM payments WHERE order_id = '%s' AND status = 'capturing'",
                  o.id);
    sp_kill(&w1);
    sp_proc w2;
    start_worker(&w2, &e, prefix, fast);
    SW_WAIT_COUNT(db, 1, 20000,
                  "SELECT count(*) FROM payments WHERE order_id = '%s' AND status = 'captured'",
                  o.id);
    SW_WAIT_COUNT(db, 1, 20000, "SELECT count(*) FROM shipments WHERE order_id = '%s'", o.id);
    SW_WAIT_COUNT(db, 1, 20000, "SELECT count(*) FROM processed_messages WHERE consumer = '%s'",
                  SHOP_CONSUMER_POINTS);
    SW_WAIT_COUNT(db, 1, 20000, "SELECT count(*) FROM order_notifications WHERE order_id = '%s'",
                  o.id);
    stop_worker(&w2);
    sw_faults_clear();
    if (!th_file_contains(w2.err_path, "stalled")) {
        sp_dump(&w2);
        fail_msg("the second worker did not recover the capture as a stalled job");
    }
    assert_int_equal(sw_ledger("gateway", "captures", o.id), 1);
    assert_int_equal(sw_ledger("carrier", "shipments", o.id), 1);
    assert_int_equal(sw_ledger("mailer", "messages", o.id), 1);
    assert_int_equal(
        ob_ll(db, "SELECT points FROM loyalty_accounts WHERE customer_id = '%s'", o.customer), 48);
    assert_int_equal(sw_captured_count(db, o.id), 1);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM dead_letters"), 0);
    sw_env_fini(&e);
}

/* ---- outages of Redis and PostgreSQL ---------------------------------------------------- */

static void test_outages_ridden_out(void **state) {
    (void)state;
    sw_env e;
    sw_env_init(&e, db);
    const char *prefix = th_prefix();
    sp_proc w;
    start_worker(&w, &e, prefix, NULL);
    sw_order a;
    sw_place(&e, NULL, 10000, 1, &a);
    SW_WAIT_COUNT(db, 1, 20000, "SELECT count(*) FROM shipments WHERE order_id = '%s'", a.id);

    th_redis_ctl("restart");
    ob_pg_ctl("restart", "fast");
    PQreset(db);
    PQclear(ob_sql(db, "SET search_path TO %s", e.schema));
    /* an order placed after both came back goes all the way through the same process */
    sw_order b;
    sw_place(&e, NULL, 20000, 1, &b);
    SW_WAIT_COUNT(db, 1, 60000, "SELECT count(*) FROM shipments WHERE order_id = '%s'", b.id);
    SW_WAIT_COUNT(db, 1, 20000,
                  "SELECT count(*) FROM loyalty_accounts WHERE customer_id = '%s' AND points = 2",
                  b.customer);
    SW_WAIT_COUNT(db, 1, 20000, "SELECT count(*) FROM order_notifications WHERE order_id = '%s'",
                  b.id);
    int st;
    assert_int_equal(waitpid(w.pid, &st, WNOHANG), 0); /* it never exited */
    stop_worker(&w);
    assert_int_equal(sw_ledger("gateway", "captures", b.id), 1);
    assert_int_equal(sw_ledger("carrier", "shipments", b.id), 1);
    sw_env_fini(&e);
}

/* ---- start-up failures ------------------------------------------------------------------ */

static int run_to_exit(const char *const *args, sp_proc *p) {
    sp_start(p, "shop-worker", args, NULL, SP_NONE);
    return sp_wait_exit(p, 15000);
}

static void test_startup_failures(void **state) {
    (void)state;
    sp_proc p;
    const char *gw = "http://127.0.0.1:1/gateway";
    assert_int_equal(run_to_exit((const char *const[]){"--help", NULL}, &p), 0);
    assert_true(th_file_contains(p.out_path, "--shipping-rate"));
    assert_int_equal(
        run_to_exit((const char *const[]){"--gateway-url", gw, "--carrier-url", gw, "--mailer-url",
                                          gw, "--shipping-rate", "0", NULL},
                    &p),
        2);
    assert_true(th_file_contains(p.err_path, "--shipping-rate"));
    assert_int_equal(
        run_to_exit((const char *const[]){"--gateway-url", gw, "--mailer-url", gw, NULL}, &p), 2);
    assert_true(th_file_contains(p.err_path, "CARRIER_URL"));
    assert_int_equal(run_to_exit((const char *const[]){"--bogus", NULL}, &p), 2);

    /* a schema `ferry migrate` never touched */
    char schema[64];
    snprintf(schema, sizeof schema, "unmigrated_%d", (int)getpid());
    assert_int_equal(
        run_to_exit((const char *const[]){"--database", th_env_require("DATABASE_URL"), "--schema",
                                          schema, "--gateway-url", gw, "--carrier-url", gw,
                                          "--mailer-url", gw, NULL},
                    &p),
        1);
    assert_true(th_file_contains(p.err_path, "ferry migrate"));

    /* a database that does not answer, with a password in its URL */
    assert_int_equal(run_to_exit(
                         (const char *const[]){
                             "--database", "postgresql://shop:Pa55word-x9@127.0.0.1:1/shop",
                             "--gateway-url", gw, "--carrier-url", gw, "--mailer-url", gw, NULL},
                         &p),
                     1);
    assert_true(th_file_contains(p.err_path, "cannot connect"));
    assert_false(th_file_contains(p.err_path, "Pa55word-x9"));
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
        cmocka_unit_test(test_startup_failures),
        cmocka_unit_test(test_orders_end_to_end),
        cmocka_unit_test(test_shipping_lookup_and_throttle),
        cmocka_unit_test(test_dead_letters_with_reasons),
        cmocka_unit_test(test_sigterm_drains),
        cmocka_unit_test(test_kill9_mid_capture_recovered),
        cmocka_unit_test(test_outages_ridden_out),
    };
    return th_exit(cmocka_run_group_tests(tests, group_setup, group_teardown));
}

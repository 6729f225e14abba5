/* test_api.c - shop-api against real PostgreSQL and the real shop-fakes gateway: a placed
 * order writes its order, payment and order.placed event in one commit (payload and trace id
 * right, nothing more in the payload) and answers 201 with the view GET shows; cancelling
 * writes order.cancelled once, however often it is asked; a captured (or capturing, or
 * failed) payment refuses the cancel with 409 and nothing written; the view shows shipment
 * and points; 8 clients placing 25 orders each get 200 orders and 200 events; SIGTERM lets
 * a running request finish and exits 0; --help, bad flags and an unmigrated schema. */
#include "test_api.h"

#define CUSTOMER "6f9619ff-8b86-d011-b42d-00cf4fc964ff"
#define TRACE "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

/* Place an order, expect 201; its id into id. */
static void place(const sp_proc *api, const char *body, const char *trace, char id[37],
                  at_res *out) {
    char url[256], th[128];
    snprintf(th, sizeof th, "traceparent: %s", trace ? trace : "");
    at_http("POST", at_url(api, "/orders", url, sizeof url), body,
            trace ? (const char *const[]){th, NULL} : NULL, out);
    AT_EXPECT(*out, 201);
    snprintf(id, 37, "%s", at_str(out, "id"));
}

static void test_place_get_cancel(void **state) {
    (void)state;
    const char *s = at_schema();
    sp_proc api;
    at_api_start(&api, s);
    const char *body = "{\"customerId\":\"6F9619FF-8B86-D011-B42D-00CF4FC964FF\",\"items\":["
                       "{\"sku\":\"TSHIRT-RED-M\",\"qty\":2,\"unitPrice\":150000},"
                       "{\"unitPrice\":0,\"sku\":\"sticker pack\",\"qty\":1},"
                       "{\"sku\":\"MUG\",\"qty\":3,\"unitPrice\":45000}]}";
    at_res r;
    char id[37], h[256], url[256];
    place(&api, body, TRACE, id, &r);
    /* the answer: the order view with the trace */
    assert_non_null(at_header(&r, "traceparent", h, sizeof h));
    assert_string_equal(h, TRACE);
    assert_non_null(at_header(&r, "Location", h, sizeof h));
    char loc[64];
    snprintf(loc, sizeof loc, "/orders/%s", id);
    assert_string_equal(h, loc);
    assert_int_equal(strlen(id), 36);
    assert_int_equal(id[14], '7'); /* a UUIDv7 */
    assert_string_equal(at_str(&r, "customerId"), CUSTOMER);
    assert_string_equal(at_str(&r, "status"), "placed");
    assert_int_equal(json_integer_value(json_object_get(r.json, "total")), 435000);
    assert_int_equal(json_integer_value(json_object_get(r.json, "itemCount")), 6);
    assert_int_equal(json_integer_value(json_object_get(r.json, "points")), 0);
    assert_true(json_is_null(json_object_get(r.json, "shipment")));
    assert_true(json_is_null(json_object_get(r.json, "cancelledAt")));
    assert_string_equal(at_str(&r, "traceId"), TRACE);
    json_t *want_items = json_loads(
        "[{\"sku\":\"TSHIRT-RED-M\",\"qty\":2,\"unitPrice\":150000},"
        "{\"sku\":\"sticker pack\",\"qty\":1,\"unitPrice\":0},{\"sku\":\"MUG\",\"qty\":3,"
        "\"unitPrice\":45000}]",
        0, NULL);
    assert_true(json_equal(json_object_get(r.json, "items"), want_items));
    json_decref(want_items);
    json_t *pay = json_object_get(r.json, "payment");
    assert_string_equal(json_string_value(json_object_get(pay, "status")), "authorized");
    assert_true(json_is_null(json_object_get(pay, "captureId")));
    char auth[160];
    snprintf(auth, sizeof auth, "%s", json_string_value(json_object_get(pay, "authorizationId")));
    /* the gateway authorized the total for this order */
    json_t *a = at_authorization(id);
    assert_non_null(a);
    assert_string_equal(json_string_value(json_object_get(a, "authorizationId")), auth);
    assert_int_equal(json_integer_value(json_object_get(a, "amount")), 435000);
    json_decref(a);

    /* the rows: one transaction (same xmin), the payload exactly the five keys */
    AT_EXPECT_COUNTS(s, 1, 1, 1);
    char *items = json_dumps(json_object_get(r.json, "items"), JSON_COMPACT);
    assert_int_equal(
        ob_ll(at_db,
              "SELECT count(*) FROM %s.orders o JOIN %s.payments p ON p.order_id = o.id "
              "JOIN %s.outbox_events e ON e.aggregate_id = o.id "
              "WHERE o.id = '%s' AND o.xmin = p.xmin AND p.xmin = e.xmin "
              "AND o.status = 'placed' AND o.total = 435000 AND o.trace_id = '%s' "
              "AND o.customer_id = '" CUSTOMER "' AND o.items = '%s'::jsonb "
              "AND p.status = 'authorized' AND p.amount = 435000 AND p.authorization_id = '%s' "
              "AND p.capture_id IS NULL AND p.customer_id = o.customer_id "
              "AND e.topic = 'order.placed' AND e.trace_id = '%s' AND e.published_at IS NULL "
              "AND e.payload = jsonb_build_object('orderId', '%s', 'customerId', '" CUSTOMER
              "', 'total', 435000, 'itemCount', 6, 'authorizationId', '%s')",
              s, s, s, id, TRACE, items, auth, TRACE, id, auth),
        1);
    free(items);

    /* GET shows the same order (also for an upper-case id) */
    for (int upper = 0; upper < 2; upper++) {
        char path[64];
        snprintf(path, sizeof path, "/orders/%s", id);
        if (upper)
            for (char *c = path; *c; c++)
                *c = (char)toupper((unsigned char)*c);
        if (upper) memcpy(path, "/orders/", 8);
        at_res g;
        at_http("GET", at_url(&api, path, url, sizeof url), NULL, NULL, &g);
        AT_EXPECT(g, 200);
        assert_true(json_equal(g.json, r.json));
        at_res_free(&g);
    }

    /* cancel: 200, payment voiding, one order.cancelled in the same commit */
    char path[80];
    snprintf(path, sizeof path, "/orders/%s/cancel", id);
    at_res c;
    at_http("POST", at_url(&api, path, url, sizeof url), NULL, NULL, &c);
    AT_EXPECT(c, 200);
    assert_string_equal(at_str(&c, "status"), "cancelled");
    assert_true(json_is_string(json_object_get(c.json, "cancelledAt")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(c.json, "payment"), "status")),
        "voiding");
    char ctrace[128];
    assert_non_null(at_header(&c, "traceparent", ctrace, sizeof ctrace));
    assert_int_equal(strlen(ctrace), 55); /* none sent: a new one */
    assert_string_not_equal(ctrace, TRACE);
    AT_EXPECT_COUNTS(s, 1, 1, 2);
    assert_int_equal(
        ob_ll(at_db,
              "SELECT count(*) FROM %s.orders o JOIN %s.payments p ON p.order_id = o.id "
              "JOIN %s.outbox_events e ON e.aggregate_id = o.id AND e.topic = 'order.cancelled' "
              "WHERE o.id = '%s' AND o.xmin = p.xmin AND p.xmin = e.xmin "
              "AND o.status = 'cancelled' AND o.cancelled_at IS NOT NULL "
              "AND p.status = 'voiding' AND e.trace_id = '%s' "
              "AND e.payload = jsonb_build_object('orderId', '%s', 'customerId', '" CUSTOMER
              "', 'authorizationId', '%s')",
              s, s, s, id, ctrace, id, auth),
        1);

    /* again, and again once the void is done: 200, nothing written */
    for (int i = 0; i < 2; i++) {
        if (i == 1)
            PQclear(ob_sql(at_db,
                           "UPDATE %s.payments SET status = 'voided', voided_at = now() "
                           "WHERE order_id = '%s'",
                           s, id));
        at_res again;
        at_http("POST", at_url(&api, path, url, sizeof url), NULL,
                (const char *const[]){"traceparent: " TRACE, NULL}, &again);
        AT_EXPECT(again, 200);
        assert_string_equal(at_str(&again, "status"), "cancelled");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(again.json, "payment"), "status")),
            i ? "voided" : "voiding");
        at_res_free(&again);
    }
    AT_EXPECT_COUNTS(s, 1, 1, 2);
    assert_int_equal(
        ob_ll(at_db, "SELECT count(*) FROM %s.outbox_events WHERE topic = 'order.cancelled'", s),
        1);
    at_res_free(&c);
    at_res_free(&r);
    at_api_stop(&api);
}

/* A request without a usable traceparent gets a new one, stored with the event. */
static void test_trace_made_when_missing_or_bad(void **state) {
    (void)state;
    const char *s = at_schema();
    sp_proc api;
    at_api_start(&api, s);
    char body[512], id[37], h[128];
    at_order(body, sizeof body, CUSTOMER, "A", 1, 1000);
    const char *bad[] = {NULL, "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                         "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        at_res r;
        place(&api, body, bad[i], id, &r);
        assert_non_null(at_header(&r, "traceparent", h, sizeof h));
        assert_int_equal(strlen(h), 55);
        assert_memory_equal(h, "00-", 3);
        if (bad[i]) assert_string_not_equal(h, bad[i]);
        assert_int_equal(ob_ll(at_db,
                               "SELECT count(*) FROM %s.outbox_events WHERE aggregate_id = '%s' "
                               "AND trace_id = '%s'",
                               s, id, h),
                         1);
        at_res_free(&r);
    }
    at_api_stop(&api);
}

/* Cancelling once the capture job claimed or finished the payment: 409, nothing written. */
static void test_cancel_refused_after_capture(void **state) {
    (void)state;
    const char *s = at_schema();
    sp_proc api;
    at_api_start(&api, s);
    const char *statuses[] = {"capturing", "captured", "failed"};
    for (int i = 0; i < 3; i++) {
        char body[512], id[37], url[256], path[80];
        at_res r;
        at_order(body, sizeof body, CUSTOMER, "B", 1, 250000);
        place(&api, body, NULL, id, &r);
        at_res_free(&r);
        PQclear(ob_sql(at_db, "UPDATE %s.payments SET status = '%s' WHERE order_id = '%s'", s,
                       statuses[i], id));
        long long events = at_count(s).events;
        snprintf(path, sizeof path, "/orders/%s/cancel", id);
        at_http("POST", at_url(&api, path, url, sizeof url), NULL, NULL, &r);
        AT_EXPECT(r, 409);
        if (!strstr(at_str(&r, "error"), "payment already") ||
            !strstr(at_str(&r, "error"), "can no longer be cancelled"))
            fail_msg("error: %s", r.body);
        assert_string_equal(at_str(&r, "paymentStatus"), statuses[i]);
        at_res_free(&r);
        assert_int_equal(at_count(s).events, events);
        assert_int_equal(ob_ll(at_db,
                               "SELECT count(*) FROM %s.orders o JOIN %s.payments p ON "
                               "p.order_id = o.id WHERE o.id = '%s' AND o.status = 'placed' "
                               "AND o.cancelled_at IS NULL AND p.status = '%s'",
                               s, s, id, statuses[i]),
                         1);
    }
    AT_EXPECT_COUNTS(s, 3, 3, 3);
    at_api_stop(&api);
}

/* The view shows the shipment and the customer's points once they exist. */
static void test_view_shows_shipment_and_points(void **state) {
    (void)state;
    const char *s = at_schema();
    sp_proc api;
    at_api_start(&api, s);
    char body[512], id[37], url[256], path[64];
    at_res r;
    at_order(body, sizeof body, CUSTOMER, "C", 4, 50000);
    place(&api, body, NULL, id, &r);
    at_res_free(&r);
    PQclear(ob_sql(at_db,
                   "UPDATE %s.payments SET status = 'captured', capture_id = 'cap_1' "
                   "WHERE order_id = '%s';"
                   "INSERT INTO %s.shipments (order_id, tracking_number) VALUES ('%s', "
                   "'TRK000000000042');"
                   "INSERT INTO %s.loyalty_accounts (customer_id, points) VALUES ('" CUSTOMER
                   "', 20)",
                   s, id, s, id, s));
    snprintf(path, sizeof path, "/orders/%s", id);
    at_http("GET", at_url(&api, path, url, sizeof url), NULL, NULL, &r);
    AT_EXPECT(r, 200);
    json_t *p = json_object_get(r.json, "payment");
    assert_string_equal(json_string_value(json_object_get(p, "status")), "captured");
    assert_string_equal(json_string_value(json_object_get(p, "captureId")), "cap_1");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r.json, "shipment"), "trackingNumber")),
        "TRK000000000042");
    assert_int_equal(json_integer_value(json_object_get(r.json, "points")), 20);
    at_res_free(&r);
    at_api_stop(&api);
}

/* ---- concurrency ---------------------------------------------------------------------- */

#define THREADS 8
#define PER_THREAD 25

typedef struct placer {
    const sp_proc *api;
    int n, created, failures;
    char last[300];
} placer;

static void *place_many(void *arg) {
    placer *p = arg;
    char url[256], body[512], customer[40];
    sp_url(p->api, "/orders", url, sizeof url);
    for (int i = 0; i < PER_THREAD; i++) {
        snprintf(customer, sizeof customer, "00000000-0000-4000-8000-%012d", p->n * 1000 + i);
        at_order(body, sizeof body, customer, "SKU-1", 1 + i % 3, 10000 * (i + 1));
        at_res r;
        if (at_http_raw("POST", url, body, strlen(body), NULL, &r) == 0 && r.status == 201)
            p->created++;
        else {
            p->failures++;
            snprintf(p->last, sizeof p->last, "%ld %s", r.status, r.body);
        }
        at_res_free(&r);
    }
    return NULL;
}

static void test_concurrent_placing(void **state) {
    (void)state;
    const char *s = at_schema();
    sp_proc api;
    at_api_start_args(&api, s, CLI_ARGV("--provider-timeout-ms", "5000", "--pool", "4"));
    pthread_t t[THREADS];
    placer p[THREADS];
    for (int i = 0; i < THREADS; i++) {
        p[i] = (placer){.api = &api, .n = i};
        assert_int_equal(pthread_create(&t[i], NULL, place_many, &p[i]), 0);
    }
    int created = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        if (p[i].failures)
            fail_msg("thread %d: %d failures, last: %s", i, p[i].failures, p[i].last);
        created += p[i].created;
    }
    assert_int_equal(created, THREADS * PER_THREAD);
    AT_EXPECT_COUNTS(s, THREADS * PER_THREAD, THREADS * PER_THREAD, THREADS * PER_THREAD);
    assert_int_equal(ob_ll(at_db,
                           "SELECT count(DISTINCT e.aggregate_id) FROM %s.outbox_events e "
                           "JOIN %s.orders o ON o.id = e.aggregate_id JOIN %s.payments p ON "
                           "p.order_id = o.id WHERE e.topic = 'order.placed' AND p.amount = "
                           "o.total AND (e.payload->>'total')::bigint = o.total",
                           s, s, s),
                     THREADS * PER_THREAD);
    at_api_stop(&api);
}

/* ---- stopping ------------------------------------------------------------------------- */

typedef struct one_call {
    const char *url, *body;
    at_res r;
} one_call;

static void *call_once(void *arg) {
    one_call *c = arg;
    at_http_raw("POST", c->url, c->body, strlen(c->body), NULL, &c->r);
    return NULL;
}

static int gateway_slowed(void *arg) {
    json_t *l = at_ledger();
    json_int_t n = json_integer_value(json_object_get(json_object_get(l, "faults"), "slow"));
    json_decref(l);
    return n > *(json_int_t *)arg;
}

/* SIGTERM while a request waits on the gateway: it still gets its 201, then exit 0. */
static void test_sigterm_finishes_running_request(void **state) {
    (void)state;
    const char *s = at_schema();
    sp_proc api;
    at_api_start_args(&api, s, CLI_ARGV("--provider-timeout-ms", "5000"));
    json_t *l = at_ledger();
    json_int_t slow_before =
        json_integer_value(json_object_get(json_object_get(l, "faults"), "slow"));
    json_decref(l);
    at_faults("{\"gateway.authorize\":{\"slow_next\":1,\"slow_ms\":1500}}");
    char url[256], body[512];
    one_call c = {.url = at_url(&api, "/orders", url, sizeof url),
                  .body = at_order(body, sizeof body, CUSTOMER, "D", 1, 9000)};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, call_once, &c), 0);
    if (!th_wait_until(gateway_slowed, &slow_before, 10000))
        fail_msg("the request never reached the gateway");
    kill(api.pid, SIGTERM);
    pthread_join(t, NULL);
    AT_EXPECT(c.r, 201);
    at_res_free(&c.r);
    at_api_stop(&api); /* already stopping: waits for exit 0 */
    AT_EXPECT_COUNTS(s, 1, 1, 1);
}

/* ---- flags and start-up --------------------------------------------------------------- */

static int run_api(const char *const *args, const char *const *env, char **out, char **err) {
    sp_proc p;
    at_start(&p, "shop-api", args, env, SP_NONE);
    int st = cli_wait(p.pid, 20000);
    *out = th_slurp(p.out_path);
    *err = th_slurp(p.err_path);
    return st;
}

static void test_flags_and_start_up(void **state) {
    (void)state;
    char *out, *err;
    assert_int_equal(run_api(CLI_ARGV("--help"), NULL, &out, &err), 0);
    if (!strstr(out, "--gateway-url") || !strstr(out, "--provider-timeout-ms"))
        fail_msg("help: %s", out);
    free(out), free(err);
    const char *const bad[][4] = {{"--bogus", NULL},
                                  {"--pool", "0", NULL},
                                  {"--provider-timeout-ms", "x", NULL},
                                  {"--gateway-url", "ftp://x", NULL},
                                  {"stray", NULL},
                                  {"--listen", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int st = run_api(bad[i], CLI_ARGV("GATEWAY_URL=http://127.0.0.1:1"), &out, &err);
        if (st != 2 || !strstr(err, "shop-api:"))
            fail_msg("%s: exit %d, stderr %s", bad[i][0], st, err);
        free(out), free(err);
    }
    /* no gateway at all: usage error naming the flag and the variable */
    assert_int_equal(run_api(CLI_ARGV("--schema", "x"), CLI_ARGV("GATEWAY_URL="), &out, &err), 2);
    if (!strstr(err, "GATEWAY_URL")) fail_msg("stderr: %s", err);
    free(out), free(err);

    /* a schema `ferry migrate` never saw: exit 1 saying what to run, no password shown */
    const char *schema = "at_never_migrated";
    PQclear(ob_sql(at_db, "DROP SCHEMA IF EXISTS %s CASCADE", schema));
    int st = run_api(CLI_ARGV("--schema", schema, "--database", th_env_require("DATABASE_URL"),
                              "--gateway-url", at_gateway),
                     NULL, &out, &err);
    if (st != 1 || !strstr(err, "ferry migrate")) fail_msg("exit %d, stderr %s", st, err);
    assert_null(strstr(out, "listening"));
    free(out), free(err);
    /* an unreachable database: exit 1 with the password masked */
    st = run_api(CLI_ARGV("--database", "postgresql://shop:s3cr3t-pw@127.0.0.1:1/shop",
                          "--gateway-url", at_gateway),
                 NULL, &out, &err);
    if (st != 1 || strstr(err, "s3cr3t-pw") || !strstr(err, "PostgreSQL"))
        fail_msg("exit %d, stderr %s", st, err);
    free(out), free(err);
    /* the environment is used when no flag is given, a flag wins over it */
    const char *s = at_schema();
    char dbenv[600], gwenv[200];
    snprintf(dbenv, sizeof dbenv, "DATABASE_URL=%s", th_env_require("DATABASE_URL"));
    snprintf(gwenv, sizeof gwenv, "GATEWAY_URL=%s/", at_gateway); /* a trailing '/' is fine */
    sp_proc api;
    at_start(&api, "shop-api", CLI_ARGV("--listen", "127.0.0.1:0", "--schema", s),
             (const char *const[]){dbenv, gwenv, NULL}, SP_PORT);
    char url[256], body[512], id[37];
    at_res r;
    place(&api, at_order(body, sizeof body, CUSTOMER, "E", 1, 1), NULL, id, &r);
    at_res_free(&r);
    at_http("GET", at_url(&api, "/healthz", url, sizeof url), NULL, NULL, &r);
    AT_EXPECT(r, 200);
    assert_true(json_is_true(json_object_get(r.json, "ok")));
    at_res_free(&r);
    at_api_stop(&api);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_place_get_cancel, at_setup),
        cmocka_unit_test_setup(test_trace_made_when_missing_or_bad, at_setup),
        cmocka_unit_test_setup(test_cancel_refused_after_capture, at_setup),
        cmocka_unit_test_setup(test_view_shows_shipment_and_points, at_setup),
        cmocka_unit_test_setup(test_concurrent_placing, at_setup),
        cmocka_unit_test_setup(test_sigterm_finishes_running_request, at_setup),
        cmocka_unit_test_setup(test_flags_and_start_up, at_setup),
    };
    return th_exit(cmocka_run_group_tests(tests, at_group_setup, at_group_teardown));
}

/* sw.h - helpers of the shop-worker tests (test_payments.c, test_shop_worker.c), prefix sw_:
 * a fresh schema with ferry's and the shop's tables, a shop-fakes process per test file, a
 * pool and a shop_ctx for running the processors in-process, orders seeded as shop-api
 * writes them (authorized at the fake gateway, then orders + payments + order.placed in one
 * transaction; a cancellation as voiding + order.cancelled), outbox envelopes for jobs added
 * by hand, and counts from the fakes' ledger by reference (the order id), so that tests
 * sharing one fakes process never see each other's entries. Header-only (static). */
#ifndef SHOP_TEST_SW_H
#define SHOP_TEST_SW_H

#include "ex_http.h"
#include "shop_common.h"
#include "shop_messages.h"
#include "shop_processors.h"
#include "sp.h"
#include "support/ob.h"

#include <ferry/outbox.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sp_proc sw_fakes;
static char sw_fakes_base[64]; /* http://127.0.0.1:PORT */

/* Start the file's shop-fakes (fresh ledger) once, from a group setup. */
static inline void sw_fakes_start(void) {
    static const char *const args[] = {"--listen", "127.0.0.1:0", NULL};
    sp_start(&sw_fakes, "shop-fakes", args, NULL, SP_PORT);
    sp_url(&sw_fakes, "", sw_fakes_base, sizeof sw_fakes_base);
}

static inline void sw_fakes_stop(void) {
    sp_stop(&sw_fakes, 5000);
}

/* A call to the fakes that must answer `want`; the body parsed (caller decrefs). */
static inline json_t *sw_fakes_call(const char *method, const char *path, const char *body,
                                    const char *key, int want) {
    char url[1024];
    ex_http_request rq = {.method = method,
                          .url = sp_url(&sw_fakes, path, url, sizeof url),
                          .body = body,
                          .idempotency_key = key,
                          .timeout_ms = 5000};
    ex_http_response rs;
    ex_http_do(&rq, &rs);
    if (rs.transport != EX_HTTP_OK || rs.status != want) {
        print_message("%s %s -> %d (%s) %s, wanted %d\n", method, path, rs.status,
                      ex_http_transport_name(rs.transport), rs.body, want);
        ex_http_response_free(&rs);
        fail_msg("unexpected answer from shop-fakes");
    }
    json_t *j = json_loadb(rs.body, rs.body_len, 0, NULL);
    ex_http_response_free(&rs);
    if (!j) fail_msg("%s %s: the answer is not JSON", method, path);
    return j;
}

/* POST /faults with json (replacing the settings of the operations it names). */
static inline void sw_faults(const char *json) {
    json_decref(sw_fakes_call("POST", "/faults", json, NULL, 200));
}

static inline void sw_faults_clear(void) {
    json_decref(sw_fakes_call("DELETE", "/faults", NULL, NULL, 200));
}

/* Entries of ledger list section.list whose "reference" is ref. */
static inline long long sw_ledger(const char *section, const char *list, const char *ref) {
    json_t *l = sw_fakes_call("GET", "/ledger", NULL, NULL, 200);
    json_t *a = json_object_get(json_object_get(l, section), list);
    if (!json_is_array(a)) fail_msg("ledger has no %s.%s", section, list);
    long long n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        const char *r = json_string_value(json_object_get(e, "reference"));
        if (r && !strcmp(r, ref)) n++;
    }
    json_decref(l);
    return n;
}

/* The integer section.name of the ledger ("gateway", "replays"). */
static inline long long sw_ledger_int(const char *section, const char *name) {
    json_t *l = sw_fakes_call("GET", "/ledger", NULL, NULL, 200);
    json_t *v = json_object_get(json_object_get(l, section), name);
    if (!json_is_integer(v)) fail_msg("ledger has no integer %s.%s", section, name);
    long long n = json_integer_value(v);
    json_decref(l);
    return n;
}

/* ---- the file's fixtures ------------------------------------------------------------- */

/* A test file's group setup: libcurl, the file's PostgreSQL session into *db (ob_pg), its
 * shop-fakes. Returns 0, -1 when libcurl cannot be set up (cmocka then skips the group). */
static inline int sw_group_setup(PGconn **db) {
    if (ex_http_global_init() != 0) return -1;
    *db = ob_pg();
    sw_fakes_start();
    return 0;
}

/* The matching group teardown: stops the fakes, drops the file's schemas, closes db and
 * removes the temporary directory. Returns 0. */
static inline int sw_group_teardown(PGconn *db) {
    sw_fakes_stop();
    ob_drop_schemas(db);
    PQfinish(db);
    th_tmpdir_remove();
    return 0;
}

/* ---- the database -------------------------------------------------------------------- */

typedef struct sw_env {
    PGconn *db; /* the test's own session, search_path = schema */
    const char *schema;
    ex_pgpool *pool;
    shop_ctx ctx;
    char gateway[96], carrier[96], mailer[96];
} sw_env;

/* A fresh schema (migrated, shop tables made), a pool on it and a ctx for the processors
 * with the fakes' URLs. db is the file's PostgreSQL session (ob_pg). */
static inline void sw_env_init(sw_env *e, PGconn *db) {
    memset(e, 0, sizeof *e);
    e->db = db;
    if (PQtransactionStatus(db) != PQTRANS_IDLE) /* a failed test left one open */
        PQclear(PQexec(db, "ROLLBACK"));
    e->schema = ob_schema(db);
    PQclear(ob_sql(db, "SET search_path TO %s", e->schema)); /* the shop's SQL is unqualified */
    char err[1024];
    if (shop_schema_ensure(db, e->schema, err, sizeof err)) fail_msg("%s", err);
    e->pool = ex_pgpool_new(th_env_require("DATABASE_URL"), e->schema, 8, 10000);
    assert_non_null(e->pool);
    snprintf(e->gateway, sizeof e->gateway, "%s/gateway", sw_fakes_base);
    snprintf(e->carrier, sizeof e->carrier, "%s/carrier", sw_fakes_base);
    snprintf(e->mailer, sizeof e->mailer, "%s/mailer", sw_fakes_base);
    e->ctx = (shop_ctx){.pool = e->pool,
                        .schema = e->schema,
                        .gateway_url = e->gateway,
                        .carrier_url = e->carrier,
                        .mailer_url = e->mailer,
                        .provider_timeout_ms = 2000,
                        .settle_ms = 300};
}

static inline void sw_env_fini(sw_env *e) {
    ex_pgpool_free(e->pool);
    e->pool = NULL;
    PQclear(ob_sql(e->db, "SET search_path TO public"));
}

/* One order as shop-api writes it. */
typedef struct sw_order {
    char id[37], customer[37], event_id[37], auth[128], trace[EX_TRACEPARENT_LEN + 1];
    long long total, items;
    char payload[512]; /* the order.placed payload */
} sw_order;

static inline void sw_exec(PGconn *db, const char *sql, int n, const char *const *p) {
    char err[512];
    if (ex_pg_exec(db, sql, n, p, err, sizeof err) < 0) fail_msg("%s: %s", sql, err);
}

/* Append an event in the caller's transaction; id_out gets its id. */
static inline void sw_append(sw_env *e, const char *topic, const char *aggregate,
                             const char *payload, const char *trace, char id_out[37]) {
    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = e->schema;
    ferry_outbox_event ev = {
        .topic = topic, .aggregate_id = aggregate, .payload_json = payload, .trace_id = trace};
    ferry_error fe = {0};
    if (ferry_outbox_append(e->db, &oo, &ev, id_out, &fe)) fail_msg("append: %s", fe.message);
}

/* Place an order of `items` items for `total`: authorize at the gateway, then the order,
 * its authorized payment and order.placed in one transaction. customer NULL = a new one. */
static inline void sw_place(sw_env *e, const char *customer, long long total, long long items,
                            sw_order *o) {
    memset(o, 0, sizeof *o);
    if (ferry_uuid7(o->id)) fail_msg("uuid");
    if (customer)
        snprintf(o->customer, sizeof o->customer, "%s", customer);
    else if (ferry_uuid7(o->customer))
        fail_msg("uuid");
    o->total = total;
    o->items = items;
    ex_traceparent_new(o->trace);
    char body[256], key[64];
    snprintf(body, sizeof body, "{\"amount\":%lld,\"reference\":\"%s\"}", total, o->id);
    snprintf(key, sizeof key, "authorize-%s", o->id);
    json_t *a = sw_fakes_call("POST", "/gateway/authorizations", body, key, 201);
    snprintf(o->auth, sizeof o->auth, "%s",
             json_string_value(json_object_get(a, "authorizationId")));
    json_decref(a);
    snprintf(o->payload, sizeof o->payload,
             "{\"orderId\":\"%s\",\"customerId\":\"%s\",\"total\":%lld,\"itemCount\":%lld,"
             "\"authorizationId\":\"%s\"}",
             o->id, o->customer, total, items, o->auth);
    char tot[32], items_json[128];
    snprintf(tot, sizeof tot, "%lld", total);
    snprintf(items_json, sizeof items_json, "[{\"sku\":\"SKU-1\",\"qty\":%lld,\"unitPrice\":%lld}]",
             items, items ? total / items : 0);
    sw_exec(e->db, "BEGIN", 0, NULL);
    const char *p1[] = {o->id, o->customer, tot, items_json, o->trace};
    sw_exec(e->db,
            "INSERT INTO orders (id, customer_id, status, total, items, trace_id) "
            "VALUES ($1, $2, 'placed', $3, $4::jsonb, $5)",
            5, p1);
    const char *p2[] = {o->id, o->customer, tot, o->auth};
    sw_exec(e->db,
            "INSERT INTO payments (order_id, customer_id, amount, status, authorization_id) "
            "VALUES ($1, $2, $3, 'authorized', $4)",
            4, p2);
    sw_append(e, SHOP_TOPIC_PLACED, o->id, o->payload, o->trace, o->event_id);
    sw_exec(e->db, "COMMIT", 0, NULL);
}

/* Cancel as shop-api does (the payment must still be authorized): voiding, the order
 * cancelled and order.cancelled in one transaction. The event's id and payload go to
 * id_out[37] and payload_out[512] (each may be NULL). */
static inline void sw_cancel(sw_env *e, const sw_order *o, char *id_out, char *payload_out) {
    char payload[512], id[37];
    snprintf(payload, sizeof payload,
             "{\"orderId\":\"%s\",\"customerId\":\"%s\",\"authorizationId\":\"%s\"}", o->id,
             o->customer, o->auth);
    sw_exec(e->db, "BEGIN", 0, NULL);
    const char *p[] = {o->id};
    char err[512];
    long n = ex_pg_exec(e->db,
                        "UPDATE payments SET status = 'voiding' WHERE order_id = $1 AND "
                        "status = 'authorized'",
                        1, p, err, sizeof err);
    if (n != 1) fail_msg("cancel: payment not authorized (%ld) %s", n, err);
    sw_exec(e->db, "UPDATE orders SET status = 'cancelled', cancelled_at = now() WHERE id = $1", 1,
            p);
    sw_append(e, SHOP_TOPIC_CANCELLED, o->id, payload, o->trace, id);
    sw_exec(e->db, "COMMIT", 0, NULL);
    if (id_out) memcpy(id_out, id, 37);
    if (payload_out) memcpy(payload_out, payload, sizeof payload);
}

/* The relay's envelope for an event (malloc'd). */
static inline char *sw_envelope(const char *event_id, const char *trace, const char *payload) {
    size_t cap = strlen(payload) + 256;
    char *s = malloc(cap);
    assert_non_null(s);
    snprintf(s, cap, "{\"eventId\":\"%s\",\"traceId\":\"%s\",\"payload\":%s}", event_id, trace,
             payload);
    return s;
}

/* The payment.captured payload capture-payment writes for o (read back from the outbox). */
static inline char *sw_captured_event(sw_env *e, const sw_order *o, char id_out[37]) {
    PGresult *r = ob_sql(e->db,
                         "SELECT id, payload::text FROM outbox_events WHERE topic = "
                         "'payment.captured' AND aggregate_id = '%s'",
                         o->id);
    if (PQntuples(r) != 1) fail_msg("%d payment.captured events for %s", PQntuples(r), o->id);
    snprintf(id_out, 37, "%s", PQgetvalue(r, 0, 0));
    char *payload = strdup(PQgetvalue(r, 0, 1));
    PQclear(r);
    return payload;
}

/* How many payment.captured events the outbox holds for the order order_id. */
static inline long long sw_captured_count(PGconn *db, const char *order_id) {
    return ob_ll(db,
                 "SELECT count(*) FROM outbox_events WHERE topic = 'payment.captured' "
                 "AND aggregate_id = '%s'",
                 order_id);
}

/* SELECT text of the first column, first row (malloc'd; NULL when no row / NULL). */
static inline char *sw_text(PGconn *db, const char *fmt, ...) FERRY_PRINTF(2, 3);
static inline char *sw_text(PGconn *db, const char *fmt, ...) {
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = ob_sql(db, "%s", sql);
    char *v = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? strdup(PQgetvalue(r, 0, 0)) : NULL;
    PQclear(r);
    return v;
}

/* Wait until a count query returns exactly want (fails the test after timeout_ms). */
#define SW_WAIT_COUNT(db, want, timeout_ms, ...)                                                   \
    do {                                                                                           \
        char sql_[1000];                                                                           \
        snprintf(sql_, sizeof sql_, __VA_ARGS__);                                                  \
        long long last_ = -1;                                                                      \
        if (!ob_wait_count((db), sql_, (want), 1, (timeout_ms), &last_))                           \
            fail_msg("timed out: %s is %lld, wanted %lld", sql_, last_, (long long)(want));        \
    } while (0)

#endif

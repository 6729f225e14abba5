/* api_orders.c - the handlers of shop-api's order routes.
 *
 * Placing an order: validate the body (order_parse.c), authorize the total at the gateway
 * (no database connection is held during the call), then ONE transaction writes the order,
 * its payment (authorized, with the authorization id) and the order.placed outbox event;
 * nothing in the request path talks to Redis, so a commit never depends on it. When the
 * gateway gives no usable answer nothing is written (502); when the transaction surely did
 * not commit, the fresh authorization is voided, best effort (503).
 *
 * Cancelling: ONE transaction locks the order and its payment (SELECT ... FOR UPDATE) and
 * moves an 'authorized' payment to 'voiding' with the order 'cancelled' and an
 * order.cancelled event. The capture job claims a payment by moving it to 'capturing' under
 * the same row lock, so cancel and capture are linearized: whichever commits first wins,
 * and the other sees its status (409 here, a skipped capture there). */
#include "api.h"

#include "ex_text.h"
#include "order_parse.h"
#include "shop_common.h"

#include <ferry/outbox.h>
#include <jansson.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR_MAX 512

/* The request's traceparent when it is well-formed, else a new one: the trace id stored
 * with the rows and the event, and sent back in the answer's traceparent header. */
static void trace_for(const ex_httpd_req *req, char out[EX_TRACEPARENT_LEN + 1]) {
    const char *tp = ex_httpd_header(req, "traceparent");
    if (tp && ex_traceparent_valid(tp))
        snprintf(out, EX_TRACEPARENT_LEN + 1, "%s", tp);
    else
        ex_traceparent_new(out);
}

static void db_unavailable(ex_httpd_resp *resp, const char *what, const char *err) {
    ex_log("%s: database: %s", what, err);
    ex_httpd_error(resp, 503, NULL, "database unavailable");
}

/* A path id: 400 naming "id" unless it is a UUID; lower-cased into out. */
static int path_id(ex_httpd_resp *resp, const char *id, char out[37]) {
    if (!ex_uuid_valid(id)) {
        ex_httpd_error(resp, 400, "id",
                       "the order id in the path must be a UUID (8-4-4-4-12 hexadecimal digits)");
        return -1;
    }
    for (int i = 0; i < 36; i++)
        out[i] = (char)tolower((unsigned char)id[i]);
    out[36] = '\0';
    return 0;
}

/* Answer with `view` (taken over) and the trace header. */
static void reply_view(ex_httpd_resp *resp, int status, char *view, const char *trace) {
    resp->status = status;
    resp->body = view;
    if (trace) ex_httpd_add_header(resp, "traceparent", trace);
}

static int append_event(PGconn *c, shop_api *api, const char *topic, const char *order_id,
                        json_t *payload, const char *trace, char *err, size_t cap) {
    char *text = payload ? json_dumps(payload, JSON_COMPACT) : NULL;
    json_decref(payload);
    if (!text) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = api->schema;
    ferry_outbox_event ev = {
        .topic = topic, .aggregate_id = order_id, .payload_json = text, .trace_id = trace};
    ferry_error fe = {0};
    int rc = ferry_outbox_append(c, &oo, &ev, NULL, &fe);
    free(text);
    if (rc != 0) {
        snprintf(err, cap, "outbox: %.400s", fe.message);
        return -1;
    }
    return 0;
}

/* ---- POST /orders --------------------------------------------------------------------- */

enum { WRITE_OK = 0, WRITE_NOT_COMMITTED = -1, WRITE_UNKNOWN = -2 };

typedef struct placing {
    const shop_order_req *order;
    const char *order_id, *auth_id, *trace;
} placing;

/* The transaction of a placed order; *view gets the order view on WRITE_OK. */
static int write_order(shop_api *api, const placing *pl, char **view, char *err, size_t cap) {
    char *items = shop_order_items_json(pl->order);
    if (!items) {
        snprintf(err, cap, "out of memory");
        return WRITE_NOT_COMMITTED;
    }
    PGconn *c = ex_pgpool_get(api->pool, SHOP_API_POOL_WAIT_MS, err, cap);
    if (!c) {
        free(items);
        return WRITE_NOT_COMMITTED;
    }
    int rc = WRITE_NOT_COMMITTED;
    char total[24];
    snprintf(total, sizeof total, "%lld", pl->order->total);
    const char *order_row[] = {pl->order_id, pl->order->customer_id, total, items, pl->trace};
    const char *payment_row[] = {pl->order_id, pl->order->customer_id, total, pl->auth_id};
    json_t *payload =
        json_pack("{s:s,s:s,s:I,s:I,s:s}", "orderId", pl->order_id, "customerId",
                  pl->order->customer_id, "total", (json_int_t)pl->order->total, "itemCount",
                  (json_int_t)pl->order->item_count, "authorizationId", pl->auth_id);
    if (ex_pg_exec(c, "BEGIN", 0, NULL, err, cap) < 0 ||
        ex_pg_exec(c,
                   "INSERT INTO orders (id, customer_id, status, total, items, trace_id) "
                   "VALUES ($1, $2, 'placed', $3, $4::jsonb, $5)",
                   5, order_row, err, cap) != 1 ||
        ex_pg_exec(c,
                   "INSERT INTO payments (order_id, customer_id, amount, status, "
                   "authorization_id) VALUES ($1, $2, $3, 'authorized', $4)",
                   4, payment_row, err, cap) != 1) {
        json_decref(payload);
        goto done;
    }
    if (append_event(c, api, SHOP_TOPIC_PLACED, pl->order_id, payload, pl->trace, err, cap))
        goto done;
    if (shop_api_view(c, pl->order_id, view, err, cap) != 1) goto done;
    if (ex_pg_exec(c, "COMMIT", 0, NULL, err, cap) < 0) {
        /* an error result on a live session is a rollback; a lost session leaves it open */
        rc = PQstatus(c) == CONNECTION_OK ? WRITE_NOT_COMMITTED : WRITE_UNKNOWN;
        goto done;
    }
    rc = WRITE_OK;
done:
    if (rc != WRITE_OK) {
        free(*view);
        *view = NULL;
    }
    ex_pgpool_put(api->pool, c); /* rolls back what is left open */
    free(items);
    return rc;
}

void shop_api_place(shop_api *api, const ex_httpd_req *req, ex_httpd_resp *resp) {
    shop_order_req order;
    char field[SHOP_ORDER_FIELD_MAX + 80], msg[ERR_MAX];
    int prc =
        shop_order_parse(req->body, req->body_len, &order, field, sizeof field, msg, sizeof msg);
    if (prc == SHOP_ORDER_NOMEM) {
        ex_httpd_error(resp, 500, NULL, "out of memory");
        return;
    }
    if (prc != SHOP_ORDER_OK) {
        ex_httpd_error(resp, 400, field[0] ? field : NULL, "%s", msg);
        return;
    }
    char trace[EX_TRACEPARENT_LEN + 1], order_id[FERRY_UUID_STRLEN + 1];
    trace_for(req, trace);
    if (ferry_uuid7(order_id) != 0) {
        shop_order_req_free(&order);
        ex_httpd_error(resp, 500, NULL, "cannot make an order id (system random source)");
        return;
    }
    char auth_id[SHOP_AUTH_ID_MAX + 1], why[ERR_MAX];
    int g = shop_gateway_authorize(api->gateway_url, api->provider_timeout_ms, order.total,
                                   order_id, trace, auth_id, why, sizeof why);
    if (g != SHOP_GW_OK) {
        ex_log("POST /orders %s (trace %s): %s", order_id, trace, why);
        shop_order_req_free(&order);
        if (g == SHOP_GW_REFUSED)
            ex_httpd_error(resp, 402, NULL, "payment refused");
        else
            ex_httpd_error(resp, 502, NULL,
                           "payment gateway unavailable: the order was not placed (nothing was "
                           "written); try again");
        return;
    }
    placing pl = {&order, order_id, auth_id, trace};
    char *view = NULL, err[ERR_MAX] = "an INSERT wrote no row";
    int w = write_order(api, &pl, &view, err, sizeof err);
    shop_order_req_free(&order);
    if (w == WRITE_OK) {
        char location[64];
        snprintf(location, sizeof location, "/orders/%s", order_id);
        ex_httpd_add_header(resp, "Location", location);
        reply_view(resp, 201, view, trace);
        return;
    }
    if (w == WRITE_NOT_COMMITTED) {
        /* nobody will capture it: give the hold on the customer's money back now rather than
         * when it expires */
        char vwhy[ERR_MAX];
        if (shop_gateway_void(api->gateway_url, api->provider_timeout_ms, auth_id, order_id, trace,
                              vwhy, sizeof vwhy) != SHOP_GW_OK)
            ex_log("POST /orders %s: authorization %s not voided (it expires unused): %s", order_id,
                   auth_id, vwhy);
    } else {
        ex_log("POST /orders %s: COMMIT outcome unknown (authorization %s kept)", order_id,
               auth_id);
    }
    db_unavailable(resp, "POST /orders", err);
}

/* ---- POST /orders/{id}/cancel --------------------------------------------------------- */

void shop_api_cancel(shop_api *api, const ex_httpd_req *req, ex_httpd_resp *resp, const char *id) {
    char order_id[37];
    if (path_id(resp, id, order_id)) return;
    char trace[EX_TRACEPARENT_LEN + 1], err[ERR_MAX] = "a locked row did not change";
    trace_for(req, trace);
    PGconn *c = ex_pgpool_get(api->pool, SHOP_API_POOL_WAIT_MS, err, sizeof err);
    if (!c) {
        db_unavailable(resp, "POST /orders/{id}/cancel", err);
        return;
    }
    const char *params[] = {order_id};
    PGresult *r = NULL;
    char *view = NULL;
    if (ex_pg_exec(c, "BEGIN", 0, NULL, err, sizeof err) < 0) goto db_failed;
    r = ex_pg_exec_params(c,
                          "SELECT p.status, o.customer_id, p.authorization_id "
                          "FROM orders o JOIN payments p ON p.order_id = o.id "
                          "WHERE o.id = $1::uuid FOR UPDATE",
                          1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        snprintf(err, sizeof err, "%s: %s", ex_pg_sqlstate(r), m ? m : PQerrorMessage(c));
        goto db_failed;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        ex_pgpool_put(api->pool, c);
        ex_httpd_error(resp, 404, NULL, "order not found");
        return;
    }
    const char *status = PQgetvalue(r, 0, 0);
    if (!strcmp(status, "authorized")) {
        json_t *payload = json_pack("{s:s,s:s,s:s}", "orderId", order_id, "customerId",
                                    PQgetvalue(r, 0, 1), "authorizationId", PQgetvalue(r, 0, 2));
        if (ex_pg_exec(c,
                       "UPDATE payments SET status = 'voiding' "
                       "WHERE order_id = $1 AND status = 'authorized'",
                       1, params, err, sizeof err) != 1 ||
            ex_pg_exec(c,
                       "UPDATE orders SET status = 'cancelled', cancelled_at = now() "
                       "WHERE id = $1",
                       1, params, err, sizeof err) != 1) {
            json_decref(payload);
            goto db_failed;
        }
        if (append_event(c, api, SHOP_TOPIC_CANCELLED, order_id, payload, trace, err, sizeof err))
            goto db_failed;
    } else if (strcmp(status, "voiding") && strcmp(status, "voided")) {
        /* capturing (the capture job's claim), captured, failed */
        const char *why = !strcmp(status, "capturing")
                              ? "payment already being captured: the order can no longer be "
                                "cancelled"
                          : !strcmp(status, "captured")
                              ? "payment already captured: the order can no longer be cancelled"
                              : "payment already settled (its capture failed: the authorization "
                                "was voided or expired): the order can no longer be cancelled";
        json_t *j = json_pack("{s:s,s:s}", "error", why, "paymentStatus", status);
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        PQclear(r);
        ex_pgpool_put(api->pool, c);
        if (text)
            resp->status = 409, resp->body = text;
        else
            ex_httpd_error(resp, 500, NULL, "out of memory");
        return;
    }
    /* just cancelled above, or voiding / voided: cancelled before, nothing written again */
    PQclear(r);
    r = NULL;
    if (shop_api_view(c, order_id, &view, err, sizeof err) != 1 ||
        ex_pg_exec(c, "COMMIT", 0, NULL, err, sizeof err) < 0) {
        free(view);
        goto db_failed;
    }
    ex_pgpool_put(api->pool, c);
    reply_view(resp, 200, view, trace);
    return;
db_failed:
    PQclear(r);
    ex_pgpool_put(api->pool, c);
    db_unavailable(resp, "POST /orders/{id}/cancel", err);
}

/* ---- GET /orders/{id}, GET /healthz ---------------------------------------------------- */

void shop_api_get(shop_api *api, ex_httpd_resp *resp, const char *id) {
    char order_id[37], err[ERR_MAX];
    if (path_id(resp, id, order_id)) return;
    PGconn *c = ex_pgpool_get(api->pool, SHOP_API_POOL_WAIT_MS, err, sizeof err);
    if (!c) {
        db_unavailable(resp, "GET /orders/{id}", err);
        return;
    }
    char *view = NULL;
    int rc = shop_api_view(c, order_id, &view, err, sizeof err);
    ex_pgpool_put(api->pool, c);
    if (rc < 0)
        db_unavailable(resp, "GET /orders/{id}", err);
    else if (rc == 0)
        ex_httpd_error(resp, 404, NULL, "order not found");
    else
        reply_view(resp, 200, view, NULL);
}

void shop_api_healthz(shop_api *api, ex_httpd_resp *resp) {
    char err[ERR_MAX];
    PGconn *c = ex_pgpool_get(api->pool, 1000, err, sizeof err);
    if (c && ex_pg_exec(c, "SELECT 1", 0, NULL, err, sizeof err) >= 0) {
        ex_pgpool_put(api->pool, c);
        ex_httpd_reply(resp, 200, "{\"ok\":true}");
        return;
    }
    ex_pgpool_put(api->pool, c);
    ex_log("GET /healthz: database: %s", err);
    ex_httpd_reply(resp, 503, "{\"ok\":false,\"error\":\"database unavailable\"}");
}

/* api_view.c - the order as shop-api shows it (GET /orders/{id}, and the answers of placing
 * and cancelling): the order row with its payment, its shipment and the customer's loyalty
 * points, read in one statement and written as JSON:
 *   {"id", "customerId", "status": "placed"|"cancelled", "total", "itemCount",
 *    "items": [{"sku", "qty", "unitPrice"}], "createdAt", "cancelledAt": null|time,
 *    "traceId": null|traceparent,
 *    "payment": {"status", "authorizationId", "captureId": null|id} | null,
 *    "shipment": {"trackingNumber"} | null, "points": n}
 * Times are UTC, "2026-01-31T12:34:56.789Z". */
#include "api.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>

#define TIME_FMT "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'"

static const char view_sql[] =
    "SELECT o.id, o.customer_id, o.status, o.total, o.items::text, "
    "to_char(o.created_at AT TIME ZONE 'UTC', " TIME_FMT "), "
    "to_char(o.cancelled_at AT TIME ZONE 'UTC', " TIME_FMT "), "
    "o.trace_id, p.status, p.authorization_id, p.capture_id, s.tracking_number, "
    "COALESCE(l.points, 0) "
    "FROM orders o "
    "LEFT JOIN payments p ON p.order_id = o.id "
    "LEFT JOIN shipments s ON s.order_id = o.id "
    "LEFT JOIN loyalty_accounts l ON l.customer_id = o.customer_id "
    "WHERE o.id = $1::uuid";

/* Column c of row 0 as a JSON string, or null when SQL NULL. */
static json_t *text_or_null(const PGresult *r, int c) {
    return PQgetisnull(r, 0, c) ? json_null() : json_string(PQgetvalue(r, 0, c));
}

static json_t *integer_col(const PGresult *r, int c) {
    return json_integer((json_int_t)strtoll(PQgetvalue(r, 0, c), NULL, 10));
}

/* The items column (jsonb, which keeps keys in its own order) as sku, qty, unitPrice
 * objects again; their quantities summed into *count. NULL when unreadable or OOM. */
static json_t *items_of(const char *text, json_int_t *count) {
    json_t *stored = json_loads(text, 0, NULL), *items = json_array(), *it;
    size_t i;
    *count = 0;
    if (!json_is_array(stored) || !items) goto fail;
    json_array_foreach(stored, i, it) {
        json_t *o =
            json_pack("{s:O,s:O,s:O}", "sku", json_object_get(it, "sku"), "qty",
                      json_object_get(it, "qty"), "unitPrice", json_object_get(it, "unitPrice"));
        if (!o || json_array_append_new(items, o)) goto fail;
        *count += json_integer_value(json_object_get(it, "qty"));
    }
    json_decref(stored);
    return items;
fail:
    json_decref(stored);
    json_decref(items);
    return NULL;
}

static json_t *build(const PGresult *r) {
    json_int_t count;
    json_t *items = items_of(PQgetvalue(r, 0, 4), &count);
    if (!items) return NULL;
    json_t *payment = json_null();
    if (!PQgetisnull(r, 0, 8))
        payment = json_pack("{s:s,s:s,s:o}", "status", PQgetvalue(r, 0, 8), "authorizationId",
                            PQgetvalue(r, 0, 9), "captureId", text_or_null(r, 10));
    json_t *shipment = json_null();
    if (!PQgetisnull(r, 0, 11))
        shipment = json_pack("{s:s}", "trackingNumber", PQgetvalue(r, 0, 11));
    /* json_pack steals the "o" references, also on failure */
    return json_pack("{s:s,s:s,s:s,s:o,s:I,s:o,s:s,s:o,s:o,s:o,s:o,s:o}", "id", PQgetvalue(r, 0, 0),
                     "customerId", PQgetvalue(r, 0, 1), "status", PQgetvalue(r, 0, 2), "total",
                     integer_col(r, 3), "itemCount", count, "items", items, "createdAt",
                     PQgetvalue(r, 0, 5), "cancelledAt", text_or_null(r, 6), "traceId",
                     text_or_null(r, 7), "payment", payment, "shipment", shipment, "points",
                     integer_col(r, 12));
}

int shop_api_view(PGconn *c, const char *id, char **json, char *err, size_t cap) {
    *json = NULL;
    const char *params[1] = {id};
    PGresult *r = ex_pg_exec_params(c, view_sql, 1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        snprintf(err, cap, "%s: %s", ex_pg_sqlstate(r), m ? m : PQerrorMessage(c));
        PQclear(r);
        return -1;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        return 0;
    }
    json_t *v = build(r);
    PQclear(r);
    if (v) *json = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    if (!*json) {
        snprintf(err, cap, "out of memory (or an unreadable items column)");
        return -1;
    }
    return 1;
}

/* sp_shipping.c - the shipping queue: create-shipment, the seed's createForOrder. The
 * carrier takes no idempotency key but looks shipments up by our reference (the order id),
 * so a run looks first, then creates: an earlier run may have created the shipment and died
 * before our row. A create whose outcome is unknown (timed out, dropped) is looked up again
 * only after shop_ctx.settle_ms, postponed without spending an attempt, so that a slow
 * create the carrier is still making is found instead of made twice. Two deliveries of one
 * event running at once (which lookups alone cannot tell apart) are kept apart by a
 * per-order advisory lock held across the carrier calls.
 *
 * A 429 from the carrier throttles the whole queue for its Retry-After (FERRY_THROTTLED,
 * with the worker's limiter); the job goes back to wait without spending an attempt. */
#include "sp_internal.h"

#include "shop_common.h"

#include <stdio.h>
#include <string.h>

/* The lookup, the create and our row, on db (holding the order's lock). */
static ferry_outcome create_locked(const shop_ctx *c, ferry_job *job, PGconn *db,
                                   const shop_payment_captured *ev, const char **how) {
    char err[512];
    const char *prm[] = {ev->order_id};
    PGresult *r = sp_query(db, "SELECT tracking_number FROM shipments WHERE order_id = $1", 1, prm,
                           err, sizeof err);
    int known = r ? sp_order_exists(db, ev->order_id, err, sizeof err) : -1;
    if (!r || known < 0) {
        PQclear(r);
        return sp_transient(job, "create-shipment: database: %s", err);
    }
    if (PQntuples(r) > 0) { /* done by an earlier run */
        sp_return_str(job, "trackingNumber", PQgetvalue(r, 0, 0));
        PQclear(r);
        *how = "stored-result";
        return FERRY_COMPLETED;
    }
    PQclear(r);
    if (!known) return sp_permanent(job, "create-shipment: unknown order %s", ev->order_id);

    /* look it up first: an earlier run may have created it and died before our row */
    char url[SP_URL_MAX], tracking[SHOP_REF_MAX + 1];
    if (sp_url(url, c->carrier_url, "/shipments?reference=%s", ev->order_id))
        return sp_permanent(job, "create-shipment: carrier URL too long");
    ex_http_response res;
    int rc = sp_call(c, job, "GET", url, NULL, NULL, &res);
    if (rc || !sp_call_ok(&res)) {
        ferry_outcome o = sp_call_failed(job, "create-shipment: carrier: lookup", &res);
        ex_http_response_free(&res);
        return o;
    }
    int found = shop_parse_lookup(res.body, tracking, err, sizeof err);
    ex_http_response_free(&res);
    if (found < 0) return sp_transient(job, "create-shipment: %s", err);
    *how = found ? "lookup" : NULL;
    if (!found) {
        char body[128];
        snprintf(body, sizeof body, "{\"reference\":\"%s\",\"items\":%lld}", ev->order_id,
                 ev->item_count);
        if (sp_url(url, c->carrier_url, "/shipments"))
            return sp_permanent(job, "create-shipment: carrier URL too long");
        rc = sp_call(c, job, "POST", url, body, NULL, &res);
        if (rc && (res.transport == EX_HTTP_ETIMEDOUT || res.transport == EX_HTTP_EDROPPED)) {
            long long settle = c->settle_ms > 0 ? c->settle_ms : 5000;
            char reason[SP_REASON_MAX];
            snprintf(reason, sizeof reason,
                     "create-shipment: carrier: create: %s (%s): outcome unknown, looking the "
                     "shipment up again in %lld ms",
                     ex_http_transport_name(res.transport), res.error, settle);
            ex_http_response_free(&res);
            ferry_job_set_failure(job, reason, NULL);
            ferry_job_set_delay(job, settle);
            return FERRY_RETRY_LATER;
        }
        if (rc || !sp_call_ok(&res)) {
            ferry_outcome o = sp_call_failed(job, "create-shipment: carrier: create", &res);
            ex_http_response_free(&res);
            return o;
        }
        int bad = shop_parse_answer_id(res.body, "trackingNumber", tracking, err, sizeof err);
        ex_http_response_free(&res);
        /* created but unreadable: the next run's lookup finds it */
        if (bad) return sp_transient(job, "create-shipment: carrier: %s", err);
    }
    const char *ins[] = {ev->order_id, tracking};
    long n = ex_pg_exec(db,
                        "INSERT INTO shipments (order_id, tracking_number) VALUES ($1, $2) "
                        "ON CONFLICT (order_id) DO NOTHING",
                        2, ins, err, sizeof err);
    if (n < 0) return sp_transient(job, "create-shipment: database: %s", err);
    if (n == 0) *how = "stored-result"; /* recorded meanwhile */
    sp_return_str(job, "trackingNumber", tracking);
    return FERRY_COMPLETED;
}

static ferry_outcome create_shipment(const shop_ctx *c, ferry_job *job) {
    shop_payment_captured ev;
    char err[512];
    if (shop_parse_payment_captured(ferry_job_payload(job), &ev, err, sizeof err))
        return sp_permanent(job, "create-shipment: %s", err);
    ferry_outcome out;
    PGconn *db = sp_db(c, job, &out);
    if (!db) return out;
    /* One run per order at a time, across processes: two deliveries of the event running at
     * once (a redrive, a run whose lock expired while it was stuck) would both find nothing
     * and both create. A session lock on this connection, held across the carrier calls;
     * if its process dies the session ends and the lock with it. */
    const char *prm[] = {ev.order_id};
    PGresult *r = sp_query(db,
                           "SELECT pg_try_advisory_lock(hashtext('shop.create-shipment'), "
                           "hashtext($1))",
                           1, prm, err, sizeof err);
    if (!r) {
        sp_db_put(c, db);
        return sp_transient(job, "create-shipment: database: %s", err);
    }
    int locked = PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    if (!locked) {
        sp_db_put(c, db);
        ferry_job_set_failure(job,
                              "create-shipment: another run is creating this order's "
                              "shipment; looking again in 500 ms",
                              NULL);
        ferry_job_set_delay(job, 500);
        return FERRY_RETRY_LATER;
    }
    const char *how = NULL;
    out = create_locked(c, job, db, &ev, &how);
    if (ex_pg_exec(db, "SELECT pg_advisory_unlock(hashtext('shop.create-shipment'), hashtext($1))",
                   1, prm, err, sizeof err) < 0 &&
        ex_pg_exec(db, "SELECT pg_advisory_unlock_all()", 0, NULL, err, sizeof err) < 0)
        ex_log("create-shipment: cannot release the lock of order %s: %s", ev.order_id, err);
    sp_db_put(c, db); /* a broken connection (its lock gone with it) is closed there */
    if (out == FERRY_COMPLETED && how) sp_duplicate(c, job, SHOP_CONSUMER_SHIPMENT, how);
    return out;
}

ferry_outcome shop_shipping_handler(ferry_job *job, void *ctx) {
    const shop_ctx *c = ctx;
    if (!strcmp(ferry_job_name(job), SHOP_JOB_SHIPMENT)) return create_shipment(c, job);
    return sp_unknown_name(job);
}

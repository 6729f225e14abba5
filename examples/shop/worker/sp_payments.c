/* sp_payments.c - the payments queue: capture-payment and void-authorization, the seed's
 * PaymentsService.captureForOrder with the payments row's status machine (sql/shop.sql) as
 * the claim: authorized -> capturing (this job's claim; a cancellation is refused from
 * then on) -> captured, and authorized -> voiding -> voided for a cancellation.
 *
 * Capture, step by step, each step safe to repeat after a crash anywhere:
 *   1. the payment row: captured -> the stored result; voiding/voided -> a no-op (the
 *      order was cancelled first); failed -> permanent; authorized -> claim it (CAS to
 *      capturing); capturing -> an earlier run claimed it: go on;
 *   2. ask the gateway for the authorization first (an earlier run may have captured and
 *      died): captured -> take its captureId; voided/expired -> the payment fails;
 *   3. capture with the key of the intent, capture-<orderId>;
 *   4. one transaction: CAS capturing -> captured and the payment.captured event. */
#include "sp_internal.h"

#include "shop_common.h"

#include <ferry/outbox.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct payment {
    char status[16];
    char authorization_id[SHOP_REF_MAX + 1];
    char capture_id[SHOP_REF_MAX + 1];
    char customer_id[37];
    long long amount;
    char failure[256];
} payment;

/* 1 with *p, 0 when the order has no payment, -1 with err on a database failure. */
static int load_payment(PGconn *db, const char *order_id, payment *p, char *err, size_t cap) {
    const char *prm[] = {order_id};
    PGresult *r = sp_query(db,
                           "SELECT status, authorization_id, coalesce(capture_id, ''), "
                           "customer_id, amount, coalesce(failure, '') "
                           "FROM payments WHERE order_id = $1",
                           1, prm, err, cap);
    if (!r) return -1;
    int found = PQntuples(r) > 0;
    if (found) {
        snprintf(p->status, sizeof p->status, "%s", PQgetvalue(r, 0, 0));
        snprintf(p->authorization_id, sizeof p->authorization_id, "%s", PQgetvalue(r, 0, 1));
        snprintf(p->capture_id, sizeof p->capture_id, "%s", PQgetvalue(r, 0, 2));
        snprintf(p->customer_id, sizeof p->customer_id, "%s", PQgetvalue(r, 0, 3));
        p->amount = atoll(PQgetvalue(r, 0, 4));
        snprintf(p->failure, sizeof p->failure, "%s", PQgetvalue(r, 0, 5));
    }
    PQclear(r);
    return found;
}

/* Compare-and-set of the payment's status (failure text set when not NULL, voided_at when
 * the new status is voided). Returns the rows changed (0 or 1), -1 with err. */
static long cas_status(PGconn *db, const char *order_id, const char *from, const char *to,
                       const char *failure, char *err, size_t cap) {
    const char *prm[] = {order_id, from, to, failure};
    return ex_pg_exec(
        db,
        "UPDATE payments SET status = $3::text, failure = coalesce($4::text, failure), "
        "voided_at = CASE WHEN $3::text = 'voided' THEN now() ELSE voided_at END "
        "WHERE order_id = $1 AND status = $2",
        4, prm, err, cap);
}

static int is(const payment *p, const char *status) {
    return strcmp(p->status, status) == 0;
}

/* ---- capture ------------------------------------------------------------------------- */

/* The gateway says the authorization is voided or expired: the payment fails for good
 * (capturing -> failed, with the reason), for a person to decide. */
static ferry_outcome fail_payment(const shop_ctx *c, ferry_job *job, const char *order_id,
                                  const payment *p, const char *remote) {
    char failure[256], err[512];
    snprintf(failure, sizeof failure, "the gateway says authorization %s is %s",
             p->authorization_id, remote);
    ferry_outcome out;
    PGconn *db = sp_db(c, job, &out);
    if (!db) return out;
    long n = cas_status(db, order_id, "capturing", "failed", failure, err, sizeof err);
    sp_db_put(c, db);
    if (n < 0) return sp_transient(job, "capture-payment: database: %s", err);
    return sp_permanent(job, "capture-payment: order %s: %s; payment marked failed", order_id,
                        failure);
}

/* Steps 2 and 3. FERRY_COMPLETED with capture_id (and *how = "remote-state" when an
 * earlier run had captured), else the outcome to return. */
static ferry_outcome remote_capture(const shop_ctx *c, ferry_job *job, const char *order_id,
                                    const payment *p, char *capture_id, const char **how) {
    char url[SP_URL_MAX], err[512];
    *how = NULL;
    for (int tries = 0;; tries++) {
        ex_http_response res;
        if (sp_url(url, c->gateway_url, "/authorizations/%s", p->authorization_id))
            return sp_permanent(job, "capture-payment: gateway URL too long");
        int rc = sp_call(c, job, "GET", url, NULL, NULL, &res);
        if (rc || !sp_call_ok(&res)) {
            ferry_outcome o =
                rc == 0 && res.status == 404
                    ? sp_permanent(job,
                                   "capture-payment: the gateway does not know authorization %s "
                                   "of order %s (HTTP 404)",
                                   p->authorization_id, order_id)
                    : sp_call_failed(job, "capture-payment: gateway: get authorization", &res);
            ex_http_response_free(&res);
            return o;
        }
        shop_auth_status st = SHOP_AUTH_AUTHORIZED;
        int bad = shop_parse_authorization(res.body, &st, capture_id, err, sizeof err);
        ex_http_response_free(&res);
        if (bad) return sp_transient(job, "capture-payment: %s", err);
        if (st == SHOP_AUTH_CAPTURED) {
            *how = "remote-state";
            return FERRY_COMPLETED;
        }
        if (st == SHOP_AUTH_VOIDED || st == SHOP_AUTH_EXPIRED)
            return fail_payment(c, job, order_id, p, st == SHOP_AUTH_VOIDED ? "voided" : "expired");

        /* authorized: capture, keyed by the intent (not the job id, not the attempt) */
        char body[64], key[64];
        snprintf(body, sizeof body, "{\"amount\":%lld}", p->amount);
        snprintf(key, sizeof key, "capture-%s", order_id);
        if (sp_url(url, c->gateway_url, "/authorizations/%s/capture", p->authorization_id))
            return sp_permanent(job, "capture-payment: gateway URL too long");
        rc = sp_call(c, job, "POST", url, body, key, &res);
        if (rc == 0 && sp_call_ok(&res)) {
            bad = shop_parse_answer_id(res.body, "captureId", capture_id, err, sizeof err);
            ex_http_response_free(&res);
            /* captured but unreadable: the next run's GET finds it captured */
            if (bad) return sp_transient(job, "capture-payment: gateway capture: %s", err);
            return FERRY_COMPLETED;
        }
        if (rc == 0 && res.status == 409 && tries < 2) {
            /* voided, expired, or captured under another key meanwhile: look again */
            ex_http_response_free(&res);
            continue;
        }
        ferry_outcome o = sp_call_failed(job, "capture-payment: gateway: capture", &res);
        ex_http_response_free(&res);
        return o;
    }
}

/* Step 4: the payment captured and payment.captured in one transaction, by CAS from
 * capturing, so that only one run writes the event. */
static ferry_outcome mark_captured(const shop_ctx *c, ferry_job *job, const shop_order_placed *ev,
                                   const char *capture_id, const char *how) {
    char err[512];
    ferry_outcome out;
    PGconn *db = sp_db(c, job, &out);
    if (!db) return out;
    if (ex_pg_exec(db, "BEGIN", 0, NULL, err, sizeof err) < 0) {
        sp_db_put(c, db);
        return sp_transient(job, "capture-payment: database: %s", err);
    }
    const char *prm[] = {ev->order_id, capture_id};
    PGresult *r = sp_query(db,
                           "UPDATE payments SET status = 'captured', capture_id = $2, "
                           "captured_at = now() WHERE order_id = $1 AND status = 'capturing' "
                           "RETURNING customer_id, amount",
                           2, prm, err, sizeof err);
    if (!r) {
        sp_db_put(c, db); /* rolls back */
        return sp_transient(job, "capture-payment: database: %s", err);
    }
    if (PQntuples(r) == 0) { /* another run wrote it first: no second event */
        PQclear(r);
        ex_pg_exec(db, "ROLLBACK", 0, NULL, err, sizeof err);
        payment now;
        int found = load_payment(db, ev->order_id, &now, err, sizeof err);
        sp_db_put(c, db);
        if (found > 0 && is(&now, "captured")) {
            sp_duplicate(c, job, SHOP_CONSUMER_CAPTURE, "stored-result");
            sp_return_str(job, "captureId", now.capture_id);
            return FERRY_COMPLETED;
        }
        return sp_transient(job,
                            "capture-payment: the payment of order %s left 'capturing' "
                            "meanwhile (now %s)",
                            ev->order_id, found > 0 ? now.status : "gone");
    }
    json_t *payload =
        json_pack("{s:s, s:s, s:I, s:s, s:I}", "orderId", ev->order_id, "customerId",
                  PQgetvalue(r, 0, 0), "amount", (json_int_t)atoll(PQgetvalue(r, 0, 1)),
                  "captureId", capture_id, "itemCount", (json_int_t)ev->item_count);
    PQclear(r);
    char *text = payload ? json_dumps(payload, JSON_COMPACT) : NULL;
    json_decref(payload);
    if (!text) {
        sp_db_put(c, db);
        return sp_transient(job, "capture-payment: out of memory");
    }
    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = c->schema;
    ferry_outbox_event e = {.topic = SHOP_TOPIC_CAPTURED,
                            .aggregate_id = ev->order_id,
                            .payload_json = text,
                            .trace_id = ferry_job_trace_id(job)};
    ferry_error fe = {0};
    int rc = ferry_outbox_append(db, &oo, &e, NULL, &fe);
    free(text);
    if (rc) {
        sp_db_put(c, db);
        return sp_transient(job, "capture-payment: outbox: %s", fe.message);
    }
    if (ex_pg_exec(db, "COMMIT", 0, NULL, err, sizeof err) < 0) {
        sp_db_put(c, db);
        /* if it did commit, the next run finds the payment captured */
        return sp_transient(job, "capture-payment: commit: %s", err);
    }
    sp_db_put(c, db);
    if (how) sp_duplicate(c, job, SHOP_CONSUMER_CAPTURE, how);
    sp_return_str(job, "captureId", capture_id);
    return FERRY_COMPLETED;
}

static ferry_outcome capture(const shop_ctx *c, ferry_job *job) {
    shop_order_placed ev;
    char err[512];
    if (shop_parse_order_placed(ferry_job_payload(job), &ev, err, sizeof err))
        return sp_permanent(job, "capture-payment: %s", err);
    ferry_outcome out;
    PGconn *db = sp_db(c, job, &out);
    if (!db) return out;
    payment p;
    int claimed = 0;
    for (int round = 0; round < 3 && !claimed; round++) {
        int found = load_payment(db, ev.order_id, &p, err, sizeof err);
        if (found <= 0) {
            sp_db_put(c, db);
            if (found < 0) return sp_transient(job, "capture-payment: database: %s", err);
            return sp_permanent(job, "capture-payment: no payment for order %s (unknown order)",
                                ev.order_id);
        }
        if (is(&p, "captured")) {
            sp_db_put(c, db);
            sp_duplicate(c, job, SHOP_CONSUMER_CAPTURE, "stored-result");
            sp_return_str(job, "captureId", p.capture_id);
            return FERRY_COMPLETED;
        }
        if (is(&p, "voiding") || is(&p, "voided")) {
            sp_db_put(c, db);
            ex_log("capture-payment: order %s was cancelled before its capture: nothing to "
                   "capture (completed as a no-op)",
                   ev.order_id);
            sp_return_str(job, "skipped", "cancelled");
            return FERRY_COMPLETED;
        }
        if (is(&p, "failed")) {
            sp_db_put(c, db);
            return sp_permanent(job, "capture-payment: the payment of order %s failed earlier: %s",
                                ev.order_id, p.failure);
        }
        if (is(&p, "capturing")) {
            claimed = 1; /* an earlier run claimed it and stopped: go on from there */
        } else if (is(&p, "authorized")) {
            long n = cas_status(db, ev.order_id, "authorized", "capturing", NULL, err, sizeof err);
            if (n < 0) {
                sp_db_put(c, db);
                return sp_transient(job, "capture-payment: database: %s", err);
            }
            claimed = n == 1; /* 0: it changed meanwhile: read it again */
        } else {
            sp_db_put(c, db);
            return sp_permanent(job,
                                "capture-payment: the payment of order %s is in an unknown "
                                "status",
                                ev.order_id);
        }
    }
    sp_db_put(c, db);
    if (!claimed)
        return sp_transient(job, "capture-payment: the payment of order %s kept changing status",
                            ev.order_id);
    if (!shop_ref_valid(p.authorization_id))
        return sp_permanent(job,
                            "capture-payment: the payment of order %s has an authorization id "
                            "that is not a gateway id",
                            ev.order_id);
    char capture_id[SHOP_REF_MAX + 1];
    const char *how = NULL;
    out = remote_capture(c, job, ev.order_id, &p, capture_id, &how);
    if (out != FERRY_COMPLETED) return out;
    return mark_captured(c, job, &ev, capture_id, how);
}

/* ---- void ---------------------------------------------------------------------------- */

static ferry_outcome mark_voided(const shop_ctx *c, ferry_job *job, const char *order_id) {
    char err[512];
    ferry_outcome out;
    PGconn *db = sp_db(c, job, &out);
    if (!db) return out;
    long n = cas_status(db, order_id, "voiding", "voided", NULL, err, sizeof err);
    payment now;
    int found = n == 0 ? load_payment(db, order_id, &now, err, sizeof err) : 1;
    sp_db_put(c, db);
    if (n < 0 || found < 0) return sp_transient(job, "void-authorization: database: %s", err);
    if (n == 0) {
        if (found > 0 && is(&now, "voided")) {
            sp_duplicate(c, job, SHOP_CONSUMER_VOID, "stored-result");
        } else {
            return sp_transient(job,
                                "void-authorization: the payment of order %s left 'voiding' "
                                "meanwhile (now %s)",
                                order_id, found > 0 ? now.status : "gone");
        }
    }
    ferry_job_set_return(job, "{\"voided\":true}");
    return FERRY_COMPLETED;
}

static ferry_outcome void_authorization(const shop_ctx *c, ferry_job *job) {
    shop_order_cancelled ev;
    char err[512];
    if (shop_parse_order_cancelled(ferry_job_payload(job), &ev, err, sizeof err))
        return sp_permanent(job, "void-authorization: %s", err);
    ferry_outcome out;
    PGconn *db = sp_db(c, job, &out);
    if (!db) return out;
    payment p;
    int voiding = 0;
    for (int round = 0; round < 3 && !voiding; round++) {
        int found = load_payment(db, ev.order_id, &p, err, sizeof err);
        if (found <= 0) {
            sp_db_put(c, db);
            if (found < 0) return sp_transient(job, "void-authorization: database: %s", err);
            return sp_permanent(job, "void-authorization: no payment for order %s (unknown order)",
                                ev.order_id);
        }
        if (is(&p, "voided")) {
            sp_db_put(c, db);
            sp_duplicate(c, job, SHOP_CONSUMER_VOID, "stored-result");
            ferry_job_set_return(job, "{\"voided\":true}");
            return FERRY_COMPLETED;
        }
        if (is(&p, "captured") || is(&p, "capturing")) {
            sp_db_put(c, db);
            return sp_permanent(job,
                                "void-authorization: the payment of order %s is %s: a captured "
                                "payment cannot be voided (a refund flow is out of the shop's "
                                "scope)",
                                ev.order_id, p.status);
        }
        if (is(&p, "failed")) { /* voided or expired at the gateway already */
            sp_db_put(c, db);
            ex_log("void-authorization: the payment of order %s had failed (%s): nothing to void",
                   ev.order_id, p.failure);
            sp_return_str(job, "skipped", "failed");
            return FERRY_COMPLETED;
        }
        if (is(&p, "voiding")) {
            voiding = 1;
        } else if (is(&p, "authorized")) {
            /* shop-api sets voiding with the cancellation; take the claim if it did not */
            long n = cas_status(db, ev.order_id, "authorized", "voiding", NULL, err, sizeof err);
            if (n < 0) {
                sp_db_put(c, db);
                return sp_transient(job, "void-authorization: database: %s", err);
            }
            voiding = n == 1;
        } else {
            sp_db_put(c, db);
            return sp_permanent(job,
                                "void-authorization: the payment of order %s is in an unknown "
                                "status",
                                ev.order_id);
        }
    }
    sp_db_put(c, db);
    if (!voiding)
        return sp_transient(job, "void-authorization: the payment of order %s kept changing status",
                            ev.order_id);
    if (!shop_ref_valid(p.authorization_id))
        return sp_permanent(job,
                            "void-authorization: the payment of order %s has an authorization id "
                            "that is not a gateway id",
                            ev.order_id);
    char url[SP_URL_MAX], key[64];
    if (sp_url(url, c->gateway_url, "/authorizations/%s/void", p.authorization_id))
        return sp_permanent(job, "void-authorization: gateway URL too long");
    snprintf(key, sizeof key, "void-%s", ev.order_id);
    ex_http_response res;
    int rc = sp_call(c, job, "POST", url, NULL, key, &res);
    if (rc || !sp_call_ok(&res)) {
        ferry_outcome o =
            rc == 0 && res.status == 409
                ? sp_permanent(job,
                               "void-authorization: the gateway refuses to void authorization %s "
                               "of order %s (HTTP 409: captured there)",
                               p.authorization_id, ev.order_id)
            : rc == 0 && res.status == 404
                ? sp_permanent(job,
                               "void-authorization: the gateway does not know authorization %s "
                               "of order %s (HTTP 404)",
                               p.authorization_id, ev.order_id)
                : sp_call_failed(job, "void-authorization: gateway: void", &res);
        ex_http_response_free(&res);
        return o;
    }
    ex_http_response_free(&res);
    return mark_voided(c, job, ev.order_id);
}

ferry_outcome shop_payments_handler(ferry_job *job, void *ctx) {
    const shop_ctx *c = ctx;
    const char *name = ferry_job_name(job);
    if (!strcmp(name, SHOP_JOB_CAPTURE)) return capture(c, job);
    if (!strcmp(name, SHOP_JOB_VOID)) return void_authorization(c, job);
    return sp_unknown_name(job);
}

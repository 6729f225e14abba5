/* sp_notifications.c - the notifications queue: order-confirmation, one email per
 * order.placed event through the mailer, with the event id as the idempotency key (a
 * redelivery after a crash between the send and our row is a replay at the mailer, which
 * sends nothing) and one order_notifications row per event id. */
#include "sp_internal.h"

#include "shop_common.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ferry_outcome order_confirmation(const shop_ctx *c, ferry_job *job) {
    shop_order_placed ev;
    char err[512];
    if (shop_parse_order_placed(ferry_job_payload(job), &ev, err, sizeof err))
        return sp_permanent(job, "order-confirmation: %s", err);
    const char *message_id = ferry_job_event_id(job);
    if (!message_id)
        return sp_permanent(job, "order-confirmation: the job has no usable eventId (the "
                                 "mailer's idempotency key): not an outbox envelope");
    ferry_outcome out;
    PGconn *db = sp_db(c, job, &out);
    if (!db) return out;
    const char *prm[] = {message_id};
    PGresult *r = sp_query(db,
                           "SELECT provider_message_id FROM order_notifications "
                           "WHERE message_id = $1",
                           1, prm, err, sizeof err);
    int known = r ? sp_order_exists(db, ev.order_id, err, sizeof err) : -1;
    sp_db_put(c, db);
    if (!r || known < 0) {
        PQclear(r);
        return sp_transient(job, "order-confirmation: database: %s", err);
    }
    if (PQntuples(r) > 0) { /* sent by an earlier run */
        sp_duplicate(c, job, SHOP_CONSUMER_CONFIRMATION, "stored-result");
        sp_return_str(job, "messageId", PQgetvalue(r, 0, 0));
        PQclear(r);
        return FERRY_COMPLETED;
    }
    PQclear(r);
    if (!known) return sp_permanent(job, "order-confirmation: unknown order %s", ev.order_id);

    char to[128], url[SP_URL_MAX];
    snprintf(to, sizeof to, "customer-%s@shop.example", ev.customer_id);
    json_t *body = json_pack("{s:s, s:s, s:s, s:{s:I}}", "to", to, "template", "order-confirmation",
                             "reference", ev.order_id, "data", "total", (json_int_t)ev.total);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) return sp_transient(job, "order-confirmation: out of memory");
    if (sp_url(url, c->mailer_url, "/messages")) {
        free(text);
        return sp_permanent(job, "order-confirmation: mailer URL too long");
    }
    ex_http_response res;
    int rc = sp_call(c, job, "POST", url, text, message_id, &res);
    free(text);
    if (rc || !sp_call_ok(&res)) {
        ferry_outcome o = sp_call_failed(job, "order-confirmation: mailer: send", &res);
        ex_http_response_free(&res);
        return o;
    }
    char provider_id[SHOP_REF_MAX + 1];
    int bad = shop_parse_answer_id(res.body, "messageId", provider_id, err, sizeof err);
    ex_http_response_free(&res);
    /* sent but unreadable: the retry replays the key, sending nothing more */
    if (bad) return sp_transient(job, "order-confirmation: mailer: %s", err);

    db = sp_db(c, job, &out);
    if (!db) return out;
    const char *ins[] = {message_id, ev.order_id, provider_id};
    long n = ex_pg_exec(db,
                        "INSERT INTO order_notifications (message_id, order_id, "
                        "provider_message_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                        3, ins, err, sizeof err);
    sp_db_put(c, db);
    if (n < 0) return sp_transient(job, "order-confirmation: database: %s", err);
    if (n == 0) sp_duplicate(c, job, SHOP_CONSUMER_CONFIRMATION, "stored-result");
    sp_return_str(job, "messageId", provider_id);
    return FERRY_COMPLETED;
}

ferry_outcome shop_notifications_handler(ferry_job *job, void *ctx) {
    const shop_ctx *c = ctx;
    if (!strcmp(ferry_job_name(job), SHOP_JOB_CONFIRMATION)) return order_confirmation(c, job);
    return sp_unknown_name(job);
}

/* sp_loyalty.c - the loyalty queue (award-points: the seed's inbox, one point per 10,000
 * of the captured amount, marker and points in one transaction) and the maintenance queue
 * (outbox-cleanup: the seed's scheduled job deleting published outbox rows). */
#include "sp_internal.h"

#include "shop_common.h"

#include <ferry/inbox.h>
#include <ferry/outbox.h>

#include <stdio.h>
#include <string.h>

typedef struct points_effect {
    const shop_payment_captured *ev;
    int ran;       /* the effect ran: not a duplicate */
    char err[512]; /* its SQL failure, for the job's reason */
} points_effect;

static ferry_outcome add_points(PGconn *db, void *ud) {
    points_effect *pe = ud;
    char amount[32];
    snprintf(amount, sizeof amount, "%lld", pe->ev->amount);
    const char *prm[] = {pe->ev->customer_id, amount};
    long n = ex_pg_exec(db,
                        "INSERT INTO loyalty_accounts (customer_id, points, updated_at) "
                        "VALUES ($1, $2::bigint / 10000, now()) ON CONFLICT (customer_id) DO "
                        "UPDATE SET points = loyalty_accounts.points + EXCLUDED.points, "
                        "updated_at = now()",
                        2, prm, pe->err, sizeof pe->err);
    if (n < 0) return FERRY_FAILED; /* rolled back with the marker: retried */
    pe->ran = 1;
    return FERRY_COMPLETED;
}

static ferry_outcome award_points(const shop_ctx *c, ferry_job *job) {
    shop_payment_captured ev;
    char err[512];
    if (shop_parse_payment_captured(ferry_job_payload(job), &ev, err, sizeof err))
        return sp_permanent(job, "award-points: %s", err);
    ferry_outcome out;
    PGconn *db = sp_db(c, job, &out);
    if (!db) return out;
    int known = sp_order_exists(db, ev.order_id, err, sizeof err);
    if (known <= 0) {
        sp_db_put(c, db);
        return known < 0 ? sp_transient(job, "award-points: database: %s", err)
                         : sp_permanent(job, "award-points: unknown order %s", ev.order_id);
    }
    ferry_inbox_options io;
    ferry_inbox_options_init(&io);
    io.schema = c->schema;
    points_effect pe = {.ev = &ev};
    out = ferry_inbox_run_job(db, &io, SHOP_CONSUMER_POINTS, job, add_points, &pe);
    sp_db_put(c, db);
    if (out != FERRY_COMPLETED && pe.err[0]) /* the effect's own failure, rolled back */
        return sp_transient(job, "award-points: database: %s", pe.err);
    if (out != FERRY_COMPLETED) return out;
    if (!pe.ran) sp_duplicate(c, job, SHOP_CONSUMER_POINTS, "inbox");
    sp_return_int(job, "points", pe.ran ? ev.amount / 10000 : 0);
    return FERRY_COMPLETED;
}

ferry_outcome shop_loyalty_handler(ferry_job *job, void *ctx) {
    const shop_ctx *c = ctx;
    if (!strcmp(ferry_job_name(job), SHOP_JOB_POINTS)) return award_points(c, job);
    return sp_unknown_name(job);
}

/* ---- maintenance --------------------------------------------------------------------- */

static ferry_outcome outbox_cleanup(const shop_ctx *c, ferry_job *job) {
    long days = 0;
    char err[512];
    if (shop_parse_cleanup(ferry_job_payload(job), &days, err, sizeof err))
        return sp_permanent(job, "outbox-cleanup: %s", err);
    ferry_outcome out;
    PGconn *db = sp_db(c, job, &out);
    if (!db) return out;
    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = c->schema;
    long long deleted = 0;
    ferry_error fe = {0};
    int rc = ferry_outbox_cleanup(db, &oo, (long long)days * 86400, 0, 0, &deleted, &fe);
    sp_db_put(c, db);
    /* batches that committed stay deleted; the retry deletes the rest */
    if (rc)
        return sp_transient(job, "outbox-cleanup: %s (%lld row(s) deleted before)", fe.message,
                            deleted);
    ex_log("outbox-cleanup: deleted %lld published outbox row(s) older than %ld day(s)", deleted,
           days);
    sp_return_int(job, "deleted", deleted);
    return FERRY_COMPLETED;
}

ferry_outcome shop_maintenance_handler(ferry_job *job, void *ctx) {
    const shop_ctx *c = ctx;
    if (!strcmp(ferry_job_name(job), SHOP_JOB_OUTBOX_CLEANUP)) return outbox_cleanup(c, job);
    return sp_unknown_name(job);
}

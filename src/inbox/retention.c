/* retention.c - what an operator does with the inbox: delete old markers in bounded
 * batches (`ferry inbox cleanup`) and count them per consumer (`ferry inbox status`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/inbox.h"
#include "pg/pg.h"
#include "util/error.h"

int ferry_inbox_cleanup(PGconn *conn, const ferry_inbox_options *o, long long older_than_s,
                        long batch, long long *deleted, ferry_error *err) {
    if (deleted) *deleted = 0;
    if (!conn) return ferry__err(err, FERRY_EINVAL, "inbox cleanup: conn is NULL");
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(o ? o->schema : NULL, qs, err);
    if (rc) return rc;
    if (older_than_s < 0)
        return ferry__err(err, FERRY_EINVAL, "inbox cleanup: older-than must be >= 0 seconds");
    if (batch == 0) batch = FERRY_INBOX_BATCH_DEFAULT;
    if (batch < 1 || batch > FERRY_INBOX_BATCH_MAX)
        return ferry__err(err, FERRY_EINVAL, "inbox cleanup: batch must be 1..%d (got %ld)",
                          FERRY_INBOX_BATCH_MAX, batch);
    if (PQtransactionStatus(conn) != PQTRANS_IDLE)
        return ferry__err(err, FERRY_ESTATE,
                          "inbox cleanup: needs an idle connection (each batch is its own "
                          "transaction)");
    char sql[2 * FERRY__QSCHEMA_MAX + 300];
    snprintf(sql, sizeof sql,
             "DELETE FROM %s.processed_messages WHERE ctid IN (SELECT ctid FROM "
             "%s.processed_messages WHERE processed_at < now() - make_interval(secs => "
             "$1::float8) LIMIT $2::int)",
             qs, qs);
    char age[32], lim[32];
    snprintf(age, sizeof age, "%lld", older_than_s);
    snprintf(lim, sizeof lim, "%ld", batch);
    const char *params[] = {age, lim};
    long long total = 0;
    for (;;) {
        PGresult *r = NULL;
        rc = ferry__pg_run(conn, "inbox cleanup", sql, 2, params, &r, err);
        if (rc) break;
        long long n = atoll(PQcmdTuples(r));
        PQclear(r);
        total += n;
        if (n < batch) break;
    }
    if (deleted) *deleted = total;
    return rc;
}

void ferry_inbox_status_free(ferry_inbox_status *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n; i++)
        free(s->consumers[i].consumer);
    free(s->consumers);
    free(s);
}

static long long ll(const PGresult *r, int row, int col) {
    return PQgetisnull(r, row, col) ? 0 : atoll(PQgetvalue(r, row, col));
}

int ferry_inbox_status_get(PGconn *conn, const ferry_inbox_options *o, ferry_inbox_status **out,
                           ferry_error *err) {
    if (!out) return ferry__err(err, FERRY_EINVAL, "inbox status: out is NULL");
    *out = NULL;
    if (!conn) return ferry__err(err, FERRY_EINVAL, "inbox status: conn is NULL");
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(o ? o->schema : NULL, qs, err);
    if (rc) return rc;
    char sql[FERRY__QSCHEMA_MAX + 400];
    snprintf(sql, sizeof sql,
             "SELECT consumer, count(*), "
             "(extract(epoch FROM min(processed_at)) * 1000)::int8, "
             "(extract(epoch FROM max(processed_at)) * 1000)::int8, "
             "(extract(epoch FROM now()) * 1000)::int8 "
             "FROM %s.processed_messages GROUP BY consumer ORDER BY count(*) DESC, consumer",
             qs);
    PGresult *r = NULL;
    if ((rc = ferry__pg_run(conn, "inbox status", sql, 0, NULL, &r, err))) return rc;
    int n = PQntuples(r);
    ferry_inbox_status *s = calloc(1, sizeof *s);
    if (s && n > 0 && !(s->consumers = calloc((size_t)n, sizeof *s->consumers))) {
        free(s);
        s = NULL;
    }
    if (!s) {
        PQclear(r);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        ferry_inbox_consumer_status *c = &s->consumers[i];
        if (!(c->consumer = strdup(PQgetvalue(r, i, 0)))) {
            ferry_inbox_status_free(s);
            PQclear(r);
            return ferry__err(err, FERRY_ENOMEM, "out of memory");
        }
        s->n = (size_t)i + 1;
        c->rows = ll(r, i, 1);
        c->oldest_epoch_ms = ll(r, i, 2);
        c->newest_epoch_ms = ll(r, i, 3);
        s->total_rows += c->rows;
    }
    if (n == 0) {
        PQclear(r);
        if ((rc = ferry__pg_run(conn, "inbox status",
                                "SELECT (extract(epoch FROM now()) * 1000)::int8", 0, NULL, &r,
                                err))) {
            ferry_inbox_status_free(s);
            return rc;
        }
        s->now_epoch_ms = ll(r, 0, 0);
    } else {
        s->now_epoch_ms = ll(r, 0, 4);
    }
    PQclear(r);
    *out = s;
    return 0;
}

/* sync.c - `ferry dlq sync`: every job in a queue's failed set recorded in dead_letters,
 * whoever failed it. BullMQ only moves a job to `failed` when it failed for good, so each
 * member is a final failure; rows that exist already make the INSERT a no-op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter/dlq_internal.h"
#include "util/error.h"

#define SYNC_PAGE 1000

static int rollback(PGconn *conn, int rc) {
    PGresult *r = PQexec(conn, "ROLLBACK");
    PQclear(r);
    return rc;
}

/* Record the jobs of one page in one transaction. */
static int sync_page(PGconn *conn, const char *sql, ferry_queue *q, char **ids, size_t n,
                     ferry_dlq_sync_stats *st, ferry_error *err) {
    int rc = ferry__pg_run(conn, "dead letters sync", "BEGIN", 0, NULL, NULL, err);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) {
        ferry_job_info *info = NULL;
        rc = ferry_queue_get_job(q, ids[i], &info, err);
        if (rc == FERRY_ENOTFOUND || (rc == 0 && (!info->state || strcmp(info->state, "failed")))) {
            st->vanished++;
            ferry_job_info_free(info);
            rc = 0;
            continue;
        }
        if (rc) return rollback(conn, rc);
        ferry_dlq_failure f = {
            .prefix = ferry_queue_prefix(q),
            .queue = ferry_queue_name(q),
            .job_id = info->id ? info->id : ids[i],
            .job_name = info->name,
            .data = info->data,
            .opts = info->opts,
            .error = info->failed_reason,
            .stacktrace = info->stacktrace,
            .attempts_made = info->attempts_made < 0 ? 0 : (long)info->attempts_made,
            .job_timestamp_ms = info->timestamp > 0 ? info->timestamp : 0,
            .failed_at_ms = info->finished_on > 0 ? info->finished_on : 0,
        };
        ferry__dlq_params p;
        rc = ferry__dlq_params_fill(&p, &f, "sync", err);
        PGresult *r = NULL;
        if (rc == 0)
            rc = ferry__pg_run(conn, "dead letters sync", sql, FERRY__DLQ_NPARAMS, p.v, &r, err);
        ferry__dlq_params_free(&p);
        ferry_job_info_free(info);
        if (rc) return rollback(conn, rc);
        if (atoi(PQcmdTuples(r)) > 0)
            st->recorded++;
        else
            st->already++;
        PQclear(r);
    }
    return ferry__pg_run(conn, "dead letters sync", "COMMIT", 0, NULL, NULL, err);
}

int ferry_dlq_sync(PGconn *conn, const ferry_dlq_options *o, ferry_queue *q,
                   ferry_dlq_progress_fn progress, void *progress_userdata,
                   ferry_dlq_sync_stats *stats, ferry_error *err) {
    ferry_dlq_sync_stats st = {0};
    if (stats) *stats = st;
    if (!conn || !q) return ferry__err(err, FERRY_EINVAL, "dead letters sync: NULL argument");
    if (PQtransactionStatus(conn) != PQTRANS_IDLE)
        return ferry__err(err, FERRY_ESTATE,
                          "dead letters sync: needs an idle connection (each page is its own "
                          "transaction)");
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(o ? o->schema : NULL, qs, err);
    if (rc) return rc;
    char sql[FERRY__DLQ_INSERT_SQL_MAX];
    ferry__dlq_insert_sql(qs, sql, sizeof sql);
    ferry_job_counts counts;
    long long total = ferry_queue_counts(q, &counts, NULL) == 0 ? counts.failed : -1;
    for (long long start = 0;; start += SYNC_PAGE) {
        char **ids = NULL;
        size_t n = 0;
        rc = ferry_queue_job_ids(q, "failed", start, start + SYNC_PAGE - 1, 0, &ids, &n, err);
        if (rc) break;
        rc = sync_page(conn, sql, q, ids, n, &st, err);
        ferry_queue_job_ids_free(ids, n);
        st.scanned += (long long)n;
        if (stats) *stats = st;
        if (progress) progress(st.scanned, total, progress_userdata);
        if (rc || n < SYNC_PAGE) break;
    }
    if (stats) *stats = st;
    return rc;
}

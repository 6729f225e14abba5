/* status.c - what an operator asks about the outbox (`ferry outbox status`): backlog size
 * and age, per-topic counts, topics no route knows, rows with errors; and the retention
 * delete (`ferry outbox cleanup`, and the relay's singleton task). Read in one read-only
 * repeatable-read transaction so the totals and the per-topic rows agree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/outbox.h"
#include "pg/migrations.h"
#include "pg/pg.h"
#include "util/error.h"
#include "util/numtext.h"
#include "util/printable.h"
#include "util/range.h"

#define CLEANUP_BATCH_MAX FERRY_RELAY_RETENTION_BATCH_MAX

void ferry_outbox_status_free(ferry_outbox_status *s) {
    if (!s) return;
    for (size_t i = 0; i < s->ntopics; i++)
        free(s->topics[i].topic);
    free(s->topics);
    free(s);
}

/* The routes' topics as a text[] literal, or NULL (ENOMEM reported). */
static char *routes_array(const ferry_routes *routes, ferry_error *err) {
    size_t n = ferry_routes_topic_count(routes);
    const char **items = malloc((n ? n : 1) * sizeof *items);
    if (!items) {
        ferry__err(err, FERRY_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        items[i] = ferry_routes_topic(routes, i);
    char *a = ferry__pg_text_array(items, n);
    free(items);
    if (!a) ferry__err(err, FERRY_ENOMEM, "out of memory");
    return a;
}

static long long ll(const PGresult *r, int row, int col) {
    return PQgetisnull(r, row, col) ? 0 : atoll(PQgetvalue(r, row, col));
}

static double dbl(const PGresult *r, int row, int col) {
    return PQgetisnull(r, row, col) ? 0 : ferryx_strtod_c(PQgetvalue(r, row, col), NULL);
}

static int read_status(PGconn *conn, const char *qs, const ferry_routes *routes,
                       ferry_outbox_status *s, ferry_error *err) {
    char *topics = NULL;
    if (routes && !(topics = routes_array(routes, err))) return FERRY_ENOMEM;
    const char *params[] = {topics};
    char sql[FERRY__QSCHEMA_MAX + 640];
    snprintf(sql, sizeof sql,
             "SELECT count(*), count(*) FILTER (WHERE last_error IS NOT NULL), "
             "count(*) FILTER (WHERE quarantined_at IS NOT NULL), "
             "greatest(coalesce(extract(epoch FROM now() - min(created_at)), 0), 0)::float8, %s "
             "FROM %s.outbox_events WHERE published_at IS NULL",
             topics ? "count(*) FILTER (WHERE NOT (topic = ANY($1::text[])))" : "0", qs);
    PGresult *r = NULL;
    int rc = ferry__pg_run(conn, "outbox status", sql, topics ? 1 : 0, params, &r, err);
    if (rc == 0) {
        s->unpublished = ll(r, 0, 0);
        s->with_errors = ll(r, 0, 1);
        s->quarantined = ll(r, 0, 2);
        s->oldest_age_s = dbl(r, 0, 3);
        s->unknown_rows = ll(r, 0, 4);
        PQclear(r);
        snprintf(sql, sizeof sql,
                 "SELECT topic, count(*), count(*) FILTER (WHERE last_error IS NOT NULL), "
                 "count(*) FILTER (WHERE quarantined_at IS NOT NULL), "
                 "greatest(extract(epoch FROM now() - min(created_at)), 0)::float8, %s "
                 "FROM %s.outbox_events WHERE published_at IS NULL "
                 "GROUP BY topic ORDER BY count(*) DESC, topic LIMIT %d",
                 topics ? "bool_or(topic = ANY($1::text[]))" : "NULL::boolean", qs,
                 FERRY_OUTBOX_STATUS_TOPICS_MAX + 1);
        rc = ferry__pg_run(conn, "outbox status (topics)", sql, topics ? 1 : 0, params, &r, err);
    }
    free(topics);
    if (rc) return rc;
    size_t n = (size_t)PQntuples(r);
    if (n > FERRY_OUTBOX_STATUS_TOPICS_MAX) {
        n = FERRY_OUTBOX_STATUS_TOPICS_MAX;
        s->topics_truncated = 1;
    }
    s->topics = calloc(n ? n : 1, sizeof *s->topics);
    if (!s->topics) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        ferry_outbox_topic_status *t = &s->topics[i];
        if (!(t->topic = strdup(PQgetvalue(r, (int)i, 0)))) {
            rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
            break;
        }
        s->ntopics++;
        t->unpublished = ll(r, (int)i, 1);
        t->with_errors = ll(r, (int)i, 2);
        t->quarantined = ll(r, (int)i, 3);
        t->oldest_age_s = dbl(r, (int)i, 4);
        t->known = PQgetisnull(r, (int)i, 5) ? -1 : !strcmp(PQgetvalue(r, (int)i, 5), "t");
    }
    PQclear(r);
    return rc;
}

int ferry_outbox_status_get(PGconn *conn, const ferry_outbox_options *opts,
                            const ferry_routes *routes, ferry_outbox_status **out,
                            ferry_error *err) {
    const char *schema = opts ? opts->schema : NULL;
    if (out) *out = NULL;
    if (!conn || !out)
        return ferry__err(err, FERRY_EINVAL, "ferry_outbox_status_get: NULL argument");
    char qs[FERRY__QSCHEMA_MAX], shown[4 * FERRY__QSCHEMA_MAX + 8];
    int rc = ferry__pg_quote_schema(schema, qs, err);
    if (rc) return rc;
    if (PQtransactionStatus(conn) != PQTRANS_IDLE)
        return ferry__err(err, FERRY_ESTATE,
                          "outbox status: the connection has a transaction open");
    ferry_outbox_status *s = calloc(1, sizeof *s);
    if (!s) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    rc = ferry__pg_run(conn, "outbox status", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0,
                       NULL, NULL, err);
    if (rc == 0) rc = ferry__schema_version_get(conn, qs, &s->schema_version, err);
    if (rc == 0 && s->schema_version < 1)
        rc = ferry__err(err, FERRY_ESTATE, "schema %s has no ferry tables (run `ferry migrate`)",
                        ferryx_printable(qs, shown, sizeof shown));
    if (rc == 0) rc = read_status(conn, qs, routes, s, err);
    if (rc == 0) rc = ferry__pg_run(conn, "outbox status", "COMMIT", 0, NULL, NULL, err);
    if (rc) {
        if (PQtransactionStatus(conn) != PQTRANS_IDLE) PQclear(PQexec(conn, "ROLLBACK"));
        ferry_outbox_status_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int ferry__outbox_cleanup_sql(const char *qs, char *sql, size_t cap) {
    /* Normally created_at <= published_at, so the created_at bound only lets the BRIN index
     * skip the recent part of the table; published_at decides. A row whose created_at is in
     * the future (an application's clock ahead) breaks that: the second range, also one the
     * index answers, keeps such rows from outliving the retention. */
    int n = snprintf(sql, cap,
                     "DELETE FROM %s.outbox_events WHERE id IN (SELECT id FROM %s.outbox_events "
                     "WHERE (created_at < now() - make_interval(secs => $1::float8) "
                     "OR created_at > now()) "
                     "AND published_at < now() - make_interval(secs => $1::float8) LIMIT $2)",
                     qs, qs);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

int ferry_outbox_cleanup(PGconn *conn, const ferry_outbox_options *opts, long long older_than_s,
                         int batch, long long max_batches, long long *deleted, ferry_error *err) {
    const char *schema = opts ? opts->schema : NULL;
    if (deleted) *deleted = 0;
    if (!conn) return ferry__err(err, FERRY_EINVAL, "ferry_outbox_cleanup: NULL connection");
    if (older_than_s < 0) return ferry__err(err, FERRY_EINVAL, "cleanup: negative age");
    if (ferry__check_range(err, "cleanup", "batch", batch, 0, CLEANUP_BATCH_MAX))
        return FERRY_EINVAL;
    if (max_batches < 0) return ferry__err(err, FERRY_EINVAL, "cleanup: negative max_batches");
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(schema, qs, err);
    if (rc) return rc;
    if (PQtransactionStatus(conn) != PQTRANS_IDLE)
        return ferry__err(err, FERRY_ESTATE, "cleanup: the connection has a transaction open");
    char sql[2 * FERRY__QSCHEMA_MAX + 320], age[32], lim[16];
    ferry__outbox_cleanup_sql(qs, sql, sizeof sql);
    snprintf(age, sizeof age, "%lld", older_than_s);
    snprintf(lim, sizeof lim, "%d", batch ? batch : 1000);
    const char *params[] = {age, lim};
    for (long long b = 0; max_batches == 0 || b < max_batches; b++) {
        PGresult *r = NULL;
        rc = ferry__pg_run(conn, "outbox cleanup", sql, 2, params, &r, err);
        if (rc) return rc;
        long long n = atoll(PQcmdTuples(r));
        PQclear(r);
        if (deleted) *deleted += n;
        if (n < (batch ? batch : 1000)) break;
    }
    return 0;
}

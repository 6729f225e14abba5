/* query.c - reading dead letters: rows into ferry_dlq_entry, and the filtered list
 * (`ferry dlq list` / `show`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter/dlq_internal.h"
#include "util/error.h"

static char *col(const PGresult *r, int row, int c, int *oom) {
    if (PQgetisnull(r, row, c)) return NULL;
    char *s = strdup(PQgetvalue(r, row, c));
    if (!s) *oom = 1;
    return s;
}

int ferry__dlq_entry_read(const PGresult *r, int row, ferry_dlq_entry *e, ferry_error *err) {
    memset(e, 0, sizeof *e);
    int oom = 0;
    snprintf(e->id, sizeof e->id, "%s", PQgetvalue(r, row, 0));
    e->prefix = col(r, row, 1, &oom);
    e->queue = col(r, row, 2, &oom);
    e->job_id = col(r, row, 3, &oom);
    e->job_name = col(r, row, 4, &oom);
    e->data = col(r, row, 5, &oom);
    e->data_is_json = PQgetvalue(r, row, 6)[0] == 't';
    e->opts = col(r, row, 7, &oom);
    e->error = col(r, row, 8, &oom);
    e->stacktrace = col(r, row, 9, &oom);
    e->recorded_by = col(r, row, 10, &oom);
    e->redriven_by = col(r, row, 11, &oom);
    e->redrive_job_id = col(r, row, 12, &oom);
    e->attempts_made = atol(PQgetvalue(r, row, 13));
    e->redrive_count = atol(PQgetvalue(r, row, 14));
    e->job_timestamp_ms = atoll(PQgetvalue(r, row, 15));
    e->failed_at_ms = atoll(PQgetvalue(r, row, 16));
    e->redriven_at_ms = atoll(PQgetvalue(r, row, 17));
    if (oom) {
        ferry__dlq_entry_clear(e);
        return ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    }
    return 0;
}

void ferry__dlq_entry_clear(ferry_dlq_entry *e) {
    char **s[] = {&e->prefix,      &e->queue,       &e->job_id,        &e->job_name,
                  &e->data,        &e->opts,        &e->error,         &e->stacktrace,
                  &e->recorded_by, &e->redriven_by, &e->redrive_job_id};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        free(*s[i]);
        *s[i] = NULL;
    }
}

void ferry_dlq_list_free(ferry_dlq_list *l) {
    if (!l) return;
    for (size_t i = 0; i < l->n; i++)
        ferry__dlq_entry_clear(&l->entries[i]);
    free(l->entries);
    free(l);
}

int ferry_dlq_list_get(PGconn *conn, const ferry_dlq_options *o, const ferry_dlq_filter *f,
                       ferry_dlq_list **out, ferry_error *err) {
    if (out) *out = NULL;
    if (!conn || !out) return ferry__err(err, FERRY_EINVAL, "dead letters list: NULL argument");
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(o ? o->schema : NULL, qs, err);
    if (rc) return rc;
    ferry__dlq_where w;
    rc = ferry__dlq_where_build(f, 0, &w, err);
    if (rc) {
        ferry__dlq_where_free(&w);
        return rc;
    }
    long long limit = w.limit ? w.limit : FERRY_DLQ_LIMIT_DEFAULT;
    char sql[sizeof w.sql + 2 * FERRY__QSCHEMA_MAX + 400];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.dead_letters WHERE %s", qs, w.sql);
    PGresult *r = NULL;
    rc = ferry__pg_run(conn, "dead letters count", sql, w.n, w.v, &r, err);
    if (rc) {
        ferry__dlq_where_free(&w);
        return rc;
    }
    long long total = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    snprintf(sql, sizeof sql,
             "SELECT " FERRY__DLQ_COLUMNS " FROM %s.dead_letters WHERE %s ORDER BY failed_at, id "
             "LIMIT %lld",
             qs, w.sql, limit);
    rc = ferry__pg_run(conn, "dead letters list", sql, w.n, w.v, &r, err);
    ferry__dlq_where_free(&w);
    if (rc) return rc;
    ferry_dlq_list *l = calloc(1, sizeof *l);
    int rows = PQntuples(r);
    if (l && rows) l->entries = calloc((size_t)rows, sizeof *l->entries);
    if (!l || (rows && !l->entries)) {
        free(l);
        PQclear(r);
        return ferry__err(err, FERRY_ENOMEM, "dead letters list: out of memory");
    }
    l->total = total;
    for (int i = 0; i < rows && rc == 0; i++) {
        rc = ferry__dlq_entry_read(r, i, &l->entries[i], err);
        if (rc == 0) l->n++;
    }
    PQclear(r);
    if (rc) {
        ferry_dlq_list_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

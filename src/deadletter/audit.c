/* audit.c - reading the redrive / purge history (<schema>.dead_letter_redrives, written by
 * redrive.c for every row a redrive or purge handled, dry runs included): newest first,
 * for one dead letter or all, since an instant. `ferry serve` shows it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter/dlq_internal.h"
#include "util/error.h"
#include "util/uuid7.h"

static char *col(const PGresult *r, int row, int c, int *oom) {
    if (PQgetisnull(r, row, c)) return NULL;
    char *s = strdup(PQgetvalue(r, row, c));
    if (!s) *oom = 1;
    return s;
}

static void entry_clear(ferry_dlq_audit_entry *e) {
    char **s[] = {&e->action,     &e->prefix, &e->queue,  &e->job_id,
                  &e->new_job_id, &e->actor,  &e->filter, &e->note};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        free(*s[i]);
        *s[i] = NULL;
    }
}

void ferry_dlq_audit_rows_free(ferry_dlq_audit_rows *l) {
    if (!l) return;
    for (size_t i = 0; i < l->n; i++)
        entry_clear(&l->entries[i]);
    free(l->entries);
    free(l);
}

int ferry_dlq_audit_list(PGconn *conn, const ferry_dlq_options *o, const ferry_dlq_audit_filter *f,
                         ferry_dlq_audit_rows **out, ferry_error *err) {
    if (out) *out = NULL;
    if (!conn || !out) return ferry__err(err, FERRY_EINVAL, "dead letters audit: NULL argument");
    ferry_dlq_audit_filter none = {0};
    if (!f) f = &none;
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(o ? o->schema : NULL, qs, err);
    if (rc) return rc;
    if (f->dead_letter_id && !ferry__uuid_text_valid(f->dead_letter_id, strlen(f->dead_letter_id)))
        return ferry__err(err, FERRY_EINVAL,
                          "dead letters audit: dead letter id is not a UUID (as `ferry dlq list` "
                          "shows)");
    if (f->since_ms < 0)
        return ferry__err(err, FERRY_EINVAL, "dead letters audit: since must be >= 0");
    if (f->limit < 0 || f->limit > FERRY_DLQ_LIMIT_MAX)
        return ferry__err(err, FERRY_EINVAL, "dead letters audit: limit must be 1..%d (got %lld)",
                          FERRY_DLQ_LIMIT_MAX, f->limit);
    long long limit = f->limit ? f->limit : FERRY_DLQ_AUDIT_LIMIT_DEFAULT;
    const char *p[2];
    int np = 0;
    char where[200] = "true", since[32];
    if (f->dead_letter_id) {
        p[np++] = f->dead_letter_id;
        snprintf(where, sizeof where, "dead_letter_id = $1::uuid");
    }
    if (f->since_ms) {
        snprintf(since, sizeof since, "%lld", f->since_ms);
        p[np++] = since;
        size_t used = strlen(where);
        snprintf(where + (np == 1 ? 0 : used), sizeof where - (np == 1 ? 0 : used),
                 "%sredriven_at >= to_timestamp($%d::float8 / 1000)", np == 1 ? "" : " AND ", np);
    }
    char sql[FERRY__QSCHEMA_MAX + 700];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.dead_letter_redrives WHERE %s", qs, where);
    PGresult *r = NULL;
    rc = ferry__pg_run(conn, "dead letters audit", sql, np, p, &r, err);
    if (rc) return rc;
    long long total = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    snprintf(sql, sizeof sql,
             "SELECT id, dead_letter_id::text, action, prefix, queue, job_id, new_job_id, "
             "redriven_by, filter, note, dry_run, (extract(epoch FROM redriven_at) * "
             "1000)::bigint FROM %s.dead_letter_redrives WHERE %s ORDER BY id DESC LIMIT %lld",
             qs, where, limit);
    rc = ferry__pg_run(conn, "dead letters audit", sql, np, p, &r, err);
    if (rc) return rc;
    int rows = PQntuples(r);
    ferry_dlq_audit_rows *l = calloc(1, sizeof *l);
    if (l && rows) l->entries = calloc((size_t)rows, sizeof *l->entries);
    if (!l || (rows && !l->entries)) {
        free(l);
        PQclear(r);
        return ferry__err(err, FERRY_ENOMEM, "dead letters audit: out of memory");
    }
    l->total = total;
    int oom = 0;
    for (int i = 0; i < rows && !oom; i++) {
        ferry_dlq_audit_entry *e = &l->entries[i];
        e->id = atoll(PQgetvalue(r, i, 0));
        snprintf(e->dead_letter_id, sizeof e->dead_letter_id, "%s", PQgetvalue(r, i, 1));
        e->action = col(r, i, 2, &oom);
        e->prefix = col(r, i, 3, &oom);
        e->queue = col(r, i, 4, &oom);
        e->job_id = col(r, i, 5, &oom);
        e->new_job_id = col(r, i, 6, &oom);
        e->actor = col(r, i, 7, &oom);
        e->filter = col(r, i, 8, &oom);
        e->note = col(r, i, 9, &oom);
        e->dry_run = PQgetvalue(r, i, 10)[0] == 't';
        e->at_ms = atoll(PQgetvalue(r, i, 11));
        l->n++;
    }
    PQclear(r);
    if (oom) {
        ferry_dlq_audit_rows_free(l);
        return ferry__err(err, FERRY_ENOMEM, "dead letters audit: out of memory");
    }
    *out = l;
    return 0;
}

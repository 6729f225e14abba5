/* api_audit.c - GET /api/audit: the rows of <schema>.admin_audit (every action through the
 * API, and every task's finish), newest first, filtered by actor, a path substring and a
 * time range, paged by id (before). 503 without a database. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/api_json.h"
#include "pg/pg.h"

int ferry__api_audit_list(ferry__admin_req *r, ferry__admin_resp *out); /* api_tasks.c's table */

static json_t *col(PGresult *res, int row, int c) {
    return PQgetisnull(res, row, c) ? json_null() : ferry__api_str(PQgetvalue(res, row, c));
}

int ferry__api_audit_list(ferry__admin_req *r, ferry__admin_resp *out) {
    if (!r->cfg->has_database)
        return ferry__admin_fail(out, 503, "no database configured (ferry serve --database)");
    const char *actor = NULL, *path = NULL;
    long long since = 0, until = 0, limit = 100, before = 0;
    if (ferry__api_query_text(r, out, "actor", &actor) ||
        ferry__api_query_text(r, out, "pathContains", &path) ||
        ferry__api_query_time(r, out, "since", &since) ||
        ferry__api_query_time(r, out, "until", &until) ||
        ferry__api_query_ll(r, out, "limit", 1, FERRY__ADMIN_LIST_MAX, 100, &limit) ||
        ferry__api_query_ll(r, out, "before", 1, (long long)1 << 62, 0, &before))
        return -1;
    if (since && until && until <= since)
        return ferry__admin_fail(out, 400, "parameter until: must be later than since");
    ferry_error err = {0};
    char qs[FERRY__QSCHEMA_MAX];
    if (ferry__pg_quote_schema(r->cfg->schema ? r->cfg->schema : "public", qs, &err))
        return ferry__admin_fail_err(out, &err);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
             "actor, method, path, status, summary, request_id, remote, trace_id "
             "FROM %s.admin_audit WHERE ($1::text IS NULL OR actor = $1) "
             "AND ($2::text IS NULL OR strpos(path, $2) > 0) "
             "AND ($3::bigint IS NULL OR at >= to_timestamp($3::bigint / 1000.0)) "
             "AND ($4::bigint IS NULL OR at < to_timestamp($4::bigint / 1000.0)) "
             "AND ($5::bigint IS NULL OR id < $5::bigint) "
             "ORDER BY id DESC LIMIT $6::int",
             qs);
    char a_since[32], a_until[32], a_before[32], a_limit[32];
    snprintf(a_since, sizeof a_since, "%lld", since);
    snprintf(a_until, sizeof a_until, "%lld", until);
    snprintf(a_before, sizeof a_before, "%lld", before);
    snprintf(a_limit, sizeof a_limit, "%lld", limit + 1); /* one more: is there more? */
    const char *params[6] = {
        actor,  path, since ? a_since : NULL, until ? a_until : NULL, before ? a_before : NULL,
        a_limit};
    PGconn *conn = NULL;
    if (ferry__admin_pg(r, &conn, &err)) return ferry__admin_fail_err(out, &err);
    PGresult *res = PQexecParams(conn, sql, 6, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        int broken = PQstatus(conn) != CONNECTION_OK;
        char msg[256];
        snprintf(msg, sizeof msg, "%s",
                 state && !strcmp(state, "42P01") ? "the admin_audit table is missing (run ferry "
                                                    "outbox migrate)"
                                                  : "reading the audit failed");
        PQclear(res);
        ferry__admin_pg_release(r, conn, broken);
        return ferry__admin_fail(out, broken ? 503 : 500, "%s (SQLSTATE %s)", msg,
                                 state ? state : "none");
    }
    int n = PQntuples(res);
    int more = n > limit;
    if (more) n = (int)limit;
    json_t *rows = json_array();
    for (int i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "id", json_integer(strtoll(PQgetvalue(res, i, 0), NULL, 10)));
        json_object_set_new(o, "at", col(res, i, 1));
        json_object_set_new(o, "actor", col(res, i, 2));
        json_object_set_new(o, "method", col(res, i, 3));
        json_object_set_new(o, "path", col(res, i, 4));
        json_object_set_new(o, "status", json_integer(atoi(PQgetvalue(res, i, 5))));
        json_object_set_new(o, "summary", col(res, i, 6));
        json_object_set_new(o, "requestId", col(res, i, 7));
        json_object_set_new(o, "remote", col(res, i, 8));
        json_object_set_new(o, "traceId", col(res, i, 9));
        json_array_append_new(rows, o);
    }
    PQclear(res);
    ferry__admin_pg_release(r, conn, 0);
    out->json = json_pack("{s:o, s:b}", "audit", rows, "more", more);
    return 0;
}

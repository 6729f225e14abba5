/* audit.c - the audit of `ferry serve`'s actions: every request to a route of scope ACT or
 * REDRIVE, refused ones too, becomes a row of <schema>.admin_audit (migration 009) when a
 * database is configured, and always a log record of kind AUDIT with the same fields.
 *
 * Order: the row is written after the action, with its result, before the answer is sent
 * (so a client that has its answer finds the row). An action whose row cannot be written
 * (the database is down, the table missing) is not undone: its AUDIT log record carries
 * everything the row would have held and audit_error says why. A process that dies in the
 * middle of an action writes no row; the EVENT "action started" logged before the handler
 * runs is its trace. The finish of a server-side task (tasks.c), which no request makes,
 * is audited the same way by ferry__admin_audit_internal (method TASK, path /api/tasks/ID). */
#include <stdio.h>
#include <string.h>

#include "admin/framework.h"
#include "admin/tasks.h"
#include "util/clock.h"
#include "util/printable.h"

/* The row and the record of one audit, from a request or not (remote, trace_id NULL). */
static void audit_write(ferry_admin_server *s, const char *actor, const char *method,
                        const char *path, int status, const char *summary, const char *request_id,
                        const char *remote, const char *trace_id) {
    char shown[1024];
    const char *sum = summary ? ferryx_printable(summary, shown, sizeof shown) : NULL;
    ferry_error e = {0};
    const char *audit_error = NULL;
    if (s->database_url) {
        ferry__pgc c;
        int rc = ferry__admin_pgc_get(s, 0, &c, &e);
        if (!rc) {
            char sql[512];
            snprintf(sql, sizeof sql,
                     "INSERT INTO %s.admin_audit (actor, method, path, status, summary, "
                     "request_id, remote, trace_id) VALUES ($1, $2, $3, $4::int, $5, $6, $7, $8)",
                     s->qschema);
            char st[16];
            snprintf(st, sizeof st, "%d", status);
            const char *params[8] = {actor, method, path, st, sum, request_id, remote, trace_id};
            rc = ferry__pgc_exec(&c, ferry__mono_ms() + s->db_statement_ms, "audit row", NULL, sql,
                                 8, params, NULL, &e);
            ferry__admin_pgc_put(s, &c, c.broken);
        }
        if (rc) audit_error = e.message;
    }
    if (!s->log) return;
    ferry_admin_log_record rec = {
        .kind = FERRY_ADMIN_LOG_AUDIT,
        .level = audit_error ? FERRY_LOG_ERROR : FERRY_LOG_INFO,
        .request_id = request_id,
        .method = method,
        .path = path,
        .status = status,
        .actor = actor,
        .trace_id = trace_id,
        .remote = remote,
        .summary = sum,
        .audit_error = audit_error,
    };
    s->log(&rec, s->log_userdata);
}

void ferry__admin_audit(admin_request *ar, int status, const char *summary) {
    audit_write(ar->srv, ar->actor, ar->method, ar->path_shown, status, summary, ar->request_id,
                ar->remote, ar->trace_id[0] ? ar->trace_id : NULL);
}

void ferry__admin_audit_internal(ferry_admin_server *s, const char *actor, const char *method,
                                 const char *path, int status, const char *summary,
                                 const char *request_id) {
    audit_write(s, actor, method, path, status, summary, request_id, NULL, NULL);
}

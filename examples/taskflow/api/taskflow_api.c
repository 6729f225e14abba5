/* taskflow_api.c - taskflow-api: the seed's task API on libmicrohttpd and PostgreSQL.
 *
 *   POST /tasks              {"tenantId", "title"}  -> 201 the task
 *   POST /tasks/{id}/assign  {"assigneeId"}         -> 200 the task
 *   GET  /tasks/{id}                                -> 200 the task
 *   GET  /healthz                                   -> 200 {"ok":true}
 *
 * An assignment updates the task (assignee, version, updated_at, the event's messageId)
 * and appends its task.assigned.v1 event to ferry's outbox in ONE transaction: the request
 * never talks to Redis or to the mailer, so its commit depends on PostgreSQL alone, and an
 * event exists exactly when its assignment does (no dual write). Assigning the assignee a
 * task already has changes nothing and writes no event (a retried request sends no second
 * email). Errors are JSON: 400 naming the field, 404, 405 with Allow, 413. */
#include "ex_flags.h"
#include "ex_httpd.h"
#include "ex_util.h"
#include "taskflow_common.h"
#include "taskflow_event.h"
#include "taskflow_request.h"

#include <ferry/ferry.h>

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_BODY_MAX (16u * 1024u)    /* request bodies: larger ones get 413 */
#define API_POOL_SIZE 8               /* PostgreSQL sessions of the handlers */
#define API_POOL_WAIT_MS 5000         /* longest wait for a pooled session */
#define API_STATEMENT_TIMEOUT_MS 5000 /* statement_timeout of those sessions */

typedef struct api {
    ex_pgpool *pool;
    const char *schema;
} api;

/* ---- options: one table for parsing and --help ---------------------------------------- */

typedef struct config {
    const char *listen, *database, *schema;
} config;

enum { OPT_LISTEN, OPT_DATABASE, OPT_SCHEMA, OPT_HELP, NOPTS };

static const ex_flag opts[NOPTS] = {
    [OPT_LISTEN] = {"listen", "HOST:PORT",
                    "address to listen on (default 127.0.0.1:8081; port 0 = any)"},
    [OPT_DATABASE] = {"database", "URL",
                      "PostgreSQL URL or conninfo (default $DATABASE_URL, else libpq's)"},
    [OPT_SCHEMA] = {"schema", "NAME",
                    "schema of ferry's and taskflow's tables (default " TASKFLOW_SCHEMA ")"},
    [OPT_HELP] = {"help", NULL, "this text"},
};

static void usage(FILE *to) {
    fprintf(to, "usage: taskflow-api [options]\n"
                "  The task API: POST /tasks, POST /tasks/{id}/assign, GET /tasks/{id}.\n"
                "  Prints `listening on HOST:PORT` once it accepts connections; SIGTERM stops.\n");
    ex_flags_print(to, opts, NOPTS, 20);
}

static int parse_args(int argc, char **argv, config *c) {
    const char *v[NOPTS];
    int rc = ex_flags_scan("taskflow-api", opts, NOPTS, argc, argv, v, stderr);
    if (rc == 1) {
        usage(stdout);
        exit(0);
    }
    if (rc) return -1;
    c->listen = ex_opt(v[OPT_LISTEN], NULL, "127.0.0.1:8081");
    c->database = ex_opt(v[OPT_DATABASE], "DATABASE_URL", NULL);
    c->schema = ex_opt(v[OPT_SCHEMA], NULL, TASKFLOW_SCHEMA);
    return 0;
}

/* ---- SQL ------------------------------------------------------------------------------ */

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
#define TASK_COLS                                                                                  \
    "id, tenant_id, title, assignee_id, assignment_message_id, version, " TS(                      \
        "created_at") ", " TS("updated_at")

/* Run one statement; NULL with "SQLSTATE: message" in err when it did not succeed. */
static PGresult *query(PGconn *c, const char *sql, int n, const char *const *params, char *err,
                       size_t cap) {
    PGresult *r = ex_pg_exec_params(c, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return r;
    const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    snprintf(err, cap, "%s: %s", ex_pg_sqlstate(r), m ? m : PQerrorMessage(c));
    PQclear(r);
    return NULL;
}

/* The task of row 0 of r (TASK_COLS) as a JSON text (malloc'd), NULL on OOM. */
static char *task_json(const PGresult *r) {
    json_t *o = json_object();
    if (!o) return NULL;
    static const char *const names[] = {"id", "tenantId", "title", "assigneeId",
                                        "assignmentMessageId"};
    for (int i = 0; i < 5; i++)
        json_object_set_new(o, names[i],
                            PQgetisnull(r, 0, i) ? json_null() : json_string(PQgetvalue(r, 0, i)));
    json_object_set_new(o, "version", json_integer(atoll(PQgetvalue(r, 0, 5))));
    json_object_set_new(o, "createdAt", json_string(PQgetvalue(r, 0, 6)));
    json_object_set_new(o, "updatedAt", json_string(PQgetvalue(r, 0, 7)));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static void reply_task(ex_httpd_resp *resp, int status, const PGresult *r) {
    char *json = task_json(r);
    if (!json) {
        ex_httpd_error(resp, 500, NULL, "out of memory");
        return;
    }
    free(resp->body);
    resp->body = json; /* taken over by the server */
    resp->status = status;
}

static void db_failed(ex_httpd_resp *resp, const char *what, const char *err) {
    ex_log("%s: %s", what, err);
    ex_httpd_error(resp, 500, NULL, "database error (%s)", what);
}

/* ---- handlers ------------------------------------------------------------------------- */

static void create_task(PGconn *c, const ex_httpd_req *req, ex_httpd_resp *resp) {
    tf_create_task in;
    tf_problem p;
    if (tf_parse_create_task(req->body, req->body_len, &in, &p)) {
        ex_httpd_error(resp, 400, p.field[0] ? p.field : NULL, "%s", p.message);
        return;
    }
    char id[FERRY_UUID_STRLEN + 1], err[600];
    if (ferry_uuid7(id)) {
        ex_httpd_error(resp, 500, NULL, "cannot make an id");
        return;
    }
    const char *params[] = {id, in.tenant_id, in.title};
    PGresult *r = query(c,
                        "INSERT INTO tasks (id, tenant_id, title) VALUES ($1, $2, $3) "
                        "RETURNING " TASK_COLS,
                        3, params, err, sizeof err);
    if (!r) {
        db_failed(resp, "create task", err);
        return;
    }
    reply_task(resp, 201, r);
    PQclear(r);
}

static void get_task(PGconn *c, const char *id, ex_httpd_resp *resp) {
    char err[600];
    const char *params[] = {id};
    PGresult *r =
        query(c, "SELECT " TASK_COLS " FROM tasks WHERE id = $1", 1, params, err, sizeof err);
    if (!r) {
        db_failed(resp, "read task", err);
        return;
    }
    if (PQntuples(r) == 0)
        ex_httpd_error(resp, 404, NULL, "no such task");
    else
        reply_task(resp, 200, r);
    PQclear(r);
}

/* The task row and its event, in one transaction. */
static void assign_task(api *a, PGconn *c, const ex_httpd_req *req, const char *id,
                        ex_httpd_resp *resp) {
    tf_assign_task in;
    tf_problem p;
    if (tf_parse_assign_task(req->body, req->body_len, &in, &p)) {
        ex_httpd_error(resp, 400, p.field[0] ? p.field : NULL, "%s", p.message);
        return;
    }
    tf_event ev = {0};
    if (ferry_uuid7(ev.message_id)) {
        ex_httpd_error(resp, 500, NULL, "cannot make an id");
        return;
    }
    const char *tp = ex_httpd_header(req, "traceparent");
    if (tp && ex_traceparent_valid(tp) && strlen(tp) < sizeof ev.traceparent)
        snprintf(ev.traceparent, sizeof ev.traceparent, "%s", tp);
    else
        ex_traceparent_new(ev.traceparent);

    char err[600];
    if (ex_pg_exec(c, "BEGIN", 0, NULL, err, sizeof err) < 0) {
        db_failed(resp, "assign task", err);
        return;
    }
    /* The row lock of the UPDATE orders concurrent assignments of one task; an assignment
     * to the current assignee matches no row (READ COMMITTED re-reads it after the lock). */
    const char *params[] = {id, in.assignee_id, ev.message_id};
    PGresult *r = query(c,
                        "UPDATE tasks SET assignee_id = $2, assignment_message_id = $3, "
                        "version = version + 1, updated_at = now() "
                        "WHERE id = $1 AND assignee_id IS DISTINCT FROM $2::uuid "
                        "RETURNING " TASK_COLS,
                        3, params, err, sizeof err);
    if (!r) {
        ex_pg_exec(c, "ROLLBACK", 0, NULL, err, sizeof err);
        db_failed(resp, "assign task", err);
        return;
    }
    if (PQntuples(r) == 0) { /* no such task, or assigned to them already */
        PQclear(r);
        ex_pg_exec(c, "ROLLBACK", 0, NULL, err, sizeof err);
        get_task(c, id, resp);
        return;
    }
    snprintf(ev.task_id, sizeof ev.task_id, "%s", PQgetvalue(r, 0, 0));
    snprintf(ev.tenant_id, sizeof ev.tenant_id, "%s", PQgetvalue(r, 0, 1));
    snprintf(ev.assignee_id, sizeof ev.assignee_id, "%s", in.assignee_id);
    snprintf(ev.occurred_at, sizeof ev.occurred_at, "%s", PQgetvalue(r, 0, 7));
    char *payload = tf_event_payload(&ev);
    if (!payload) {
        PQclear(r);
        ex_pg_exec(c, "ROLLBACK", 0, NULL, err, sizeof err);
        ex_httpd_error(resp, 500, NULL, "cannot build the event");
        return;
    }
    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = a->schema;
    ferry_outbox_event oe = {.topic = TASKFLOW_TOPIC_ASSIGNED,
                             .aggregate_id = ev.task_id,
                             .payload_json = payload,
                             .trace_id = ev.traceparent};
    ferry_error fe = {0};
    int rc = ferry_outbox_append(c, &oo, &oe, NULL, &fe);
    free(payload);
    if (rc != 0) {
        PQclear(r);
        ex_pg_exec(c, "ROLLBACK", 0, NULL, err, sizeof err);
        db_failed(resp, "assign task: outbox", fe.message);
        return;
    }
    if (ex_pg_exec(c, "COMMIT", 0, NULL, err, sizeof err) < 0) {
        PQclear(r);
        db_failed(resp, "assign task: commit", err);
        return;
    }
    reply_task(resp, 200, r);
    PQclear(r);
}

static void handle(const ex_httpd_req *req, ex_httpd_resp *resp, void *userdata) {
    api *a = userdata;
    if (!strcmp(req->path, "/healthz") && !strcmp(req->method, "GET")) {
        ex_httpd_reply(resp, 200, "{\"ok\":true}");
        return;
    }
    tf_route rt;
    int m = tf_route_match(req->method, req->path, &rt);
    if (m == 404) {
        ex_httpd_error(resp, 404, NULL, "no such route");
        return;
    }
    if (m == 405) {
        ex_httpd_error(resp, 405, NULL, "method %s not allowed here (allowed: %s)", req->method,
                       rt.allow);
        ex_httpd_add_header(resp, "Allow", rt.allow);
        return;
    }
    if (rt.kind != TF_ROUTE_CREATE && !rt.id_valid) {
        ex_httpd_error(resp, 400, "id", "the task id in the path must be a UUID");
        return;
    }
    char err[600];
    PGconn *c = ex_pgpool_get(a->pool, API_POOL_WAIT_MS, err, sizeof err);
    if (!c) {
        ex_log("database unavailable: %s", err);
        ex_httpd_error(resp, 503, NULL, "database unavailable");
        return;
    }
    if (rt.kind == TF_ROUTE_CREATE)
        create_task(c, req, resp);
    else if (rt.kind == TF_ROUTE_GET)
        get_task(c, rt.id, resp);
    else
        assign_task(a, c, req, rt.id, resp);
    ex_pgpool_put(a->pool, c);
}

int main(int argc, char **argv) {
    config cfg = {0};
    if (parse_args(argc, argv, &cfg)) return 2;
    ex_log_init("taskflow-api");
    if (ex_signals_install()) {
        fprintf(stderr, "taskflow-api: cannot install signal handlers\n");
        return 1;
    }
    char err[1024];
    PGconn *c =
        ex_pg_connect(cfg.database, cfg.schema, 5000, API_STATEMENT_TIMEOUT_MS, err, sizeof err);
    if (!c) {
        ex_log("cannot connect to PostgreSQL: %s", err);
        return 1;
    }
    int rc = taskflow_schema_ensure(c, cfg.schema, err, sizeof err);
    PQfinish(c);
    if (rc) {
        ex_log("%s", err);
        return 1;
    }
    api a = {.schema = cfg.schema};
    a.pool = ex_pgpool_new(cfg.database, cfg.schema, API_POOL_SIZE, API_STATEMENT_TIMEOUT_MS);
    if (!a.pool) {
        ex_log("out of memory");
        return 1;
    }
    ex_httpd *srv = NULL;
    if (ex_httpd_start(cfg.listen, API_BODY_MAX, handle, &a, &srv, err, sizeof err)) {
        ex_log("cannot listen on %s: %s", cfg.listen, err);
        ex_pgpool_free(a.pool);
        return 1;
    }
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)strcspn(cfg.listen, ":"), cfg.listen);
    printf("listening on %s:%d\n", host, ex_httpd_port(srv));
    fflush(stdout);
    ex_log("listening on %s:%d (schema %s)", host, ex_httpd_port(srv), cfg.schema);
    ex_wait_stop(-1);
    ex_log("stopping");
    if (ex_httpd_stop(srv) != 0) return 1; /* handlers left running: nothing more is freed */
    ex_pgpool_free(a.pool);
    ex_log("stopped");
    return 0;
}

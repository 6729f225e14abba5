/* sp_common.c - the processors' shared plumbing: connections, outcomes with reasons,
 * provider calls, duplicates (sp_internal.h). */
#include "sp_internal.h"

#include <ferry/http_classify.h>

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PGconn *sp_db(const shop_ctx *c, ferry_job *job, ferry_outcome *out) {
    char err[512];
    PGconn *db =
        ex_pgpool_get(c->pool, c->pool_wait_ms > 0 ? c->pool_wait_ms : 10000, err, sizeof err);
    if (!db) *out = sp_transient(job, "database: %s", err);
    return db;
}

void sp_db_put(const shop_ctx *c, PGconn *db) {
    ex_pgpool_put(c->pool, db);
}

static ferry_outcome vfail(ferry_job *job, ferry_outcome o, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static ferry_outcome vfail(ferry_job *job, ferry_outcome o, const char *fmt, va_list ap) {
    char reason[SP_REASON_MAX];
    vsnprintf(reason, sizeof reason, fmt, ap);
    ferry_job_set_failure(job, reason, NULL);
    return o;
}

ferry_outcome sp_permanent(ferry_job *job, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ferry_outcome o = vfail(job, FERRY_FAILED_PERMANENT, fmt, ap);
    va_end(ap);
    return o;
}

ferry_outcome sp_transient(ferry_job *job, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ferry_outcome o = vfail(job, FERRY_FAILED, fmt, ap);
    va_end(ap);
    return o;
}

ferry_outcome sp_unknown_name(ferry_job *job) {
    char name[256], queue[256];
    return sp_permanent(job, "unknown job name \"%s\" on queue %s",
                        shop_printable(ferry_job_name(job), name, sizeof name),
                        shop_printable(ferry_job_queue(job), queue, sizeof queue));
}

const char *sp_message_id(const ferry_job *job) {
    const char *id = ferry_job_event_id(job);
    return id ? id : ferry_job_id(job);
}

void sp_duplicate(const shop_ctx *c, const ferry_job *job, const char *consumer, const char *how) {
    char err[512], shown[128];
    const char *id = sp_message_id(job);
    if (c->verbose)
        ex_log("%s: duplicate of %s absorbed (%s)", consumer,
               shop_printable(id, shown, sizeof shown), how);
    PGconn *db =
        ex_pgpool_get(c->pool, c->pool_wait_ms > 0 ? c->pool_wait_ms : 10000, err, sizeof err);
    if (!db) {
        ex_log("%s: duplicate of %s not recorded in shop_duplicates: %s", consumer,
               shop_printable(id, shown, sizeof shown), err);
        return;
    }
    const char *p[] = {consumer, id, how};
    if (ex_pg_exec(db,
                   "INSERT INTO shop_duplicates (consumer, message_id, how) VALUES ($1, $2, $3)", 3,
                   p, err, sizeof err) < 0)
        ex_log("%s: duplicate of %s not recorded in shop_duplicates: %s", consumer,
               shop_printable(id, shown, sizeof shown), err);
    ex_pgpool_put(c->pool, db);
}

PGresult *sp_query(PGconn *db, const char *sql, int n, const char *const *params, char *err,
                   size_t cap) {
    PGresult *r = ex_pg_exec_params(db, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return r;
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!msg) msg = PQerrorMessage(db);
    snprintf(err, cap, "%s%s%s", state ? state : "", state ? ": " : "",
             msg && *msg ? msg : "connection lost");
    for (char *p = err; *p; p++)
        if (*p == '\n') *p = ' ';
    PQclear(r);
    return NULL;
}

int sp_order_exists(PGconn *db, const char *order_id, char *err, size_t cap) {
    const char *p[] = {order_id};
    PGresult *r = sp_query(db, "SELECT 1 FROM orders WHERE id = $1", 1, p, err, cap);
    if (!r) return -1;
    int found = PQntuples(r) > 0;
    PQclear(r);
    return found;
}

int sp_url(char *out, const char *base, const char *fmt, ...) {
    size_t n = strlen(base);
    while (n && base[n - 1] == '/')
        n--; /* "http://h/gateway/" and "http://h/gateway" alike */
    if (n >= SP_URL_MAX) return -1;
    memcpy(out, base, n);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(out + n, SP_URL_MAX - n, fmt, ap);
    va_end(ap);
    return k < 0 || (size_t)k >= SP_URL_MAX - n ? -1 : 0;
}

int sp_call(const shop_ctx *c, const ferry_job *job, const char *method, const char *url,
            const char *body, const char *key, ex_http_response *res) {
    const char *trace = ferry_job_trace_id(job);
    ex_http_request rq = {
        .method = method,
        .url = url,
        .body = body,
        .idempotency_key = key,
        .traceparent = trace && ex_traceparent_valid(trace) ? trace : NULL,
        .timeout_ms = c->provider_timeout_ms > 0 ? c->provider_timeout_ms : 2000,
    };
    return ex_http_do(&rq, res);
}

int sp_call_ok(const ex_http_response *res) {
    return res->transport == EX_HTTP_OK && res->status >= 200 && res->status <= 299;
}

ferry_outcome sp_call_failed(ferry_job *job, const char *what, const ex_http_response *res) {
    char reason[SP_REASON_MAX];
    int status = res->transport == EX_HTTP_OK ? res->status : 0;
    if (status) {
        char text[200];
        shop_error_text(res->body, text, sizeof text);
        snprintf(reason, sizeof reason, "%s: HTTP %d%s%s%s", what, status, *text ? " (" : "", text,
                 *text ? ")" : "");
    } else {
        snprintf(reason, sizeof reason, "%s: %s (%s)", what, ex_http_transport_name(res->transport),
                 res->error);
    }
    ferry_http_verdict v = ferry_http_classify_now(status, res->retry_after);
    if (v.cls == FERRY_HTTP_OK) { /* a 2xx whose body did not parse: the caller's problem */
        v.cls = FERRY_HTTP_TRANSIENT;
    }
    return ferry_job_http_outcome(job, &v, reason);
}

static void set_return(ferry_job *job, json_t *v) {
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    if (text) ferry_job_set_return(job, text);
    free(text);
    json_decref(v);
}

void sp_return_str(ferry_job *job, const char *key, const char *value) {
    set_return(job, json_pack("{s:s}", key, value));
}

void sp_return_int(ferry_job *job, const char *key, long long n) {
    set_return(job, json_pack("{s:I}", key, (json_int_t)n));
}

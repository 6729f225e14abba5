/* notify.c - the task-assigned email, once per event messageId (see notify.h). */
#include "notify.h"

#include "ex_http.h"
#include "taskflow_common.h"
#include "taskflow_event.h"

#include <ferry/http_classify.h>

#include <jansson.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_WAIT_MS 5000
#define PROVIDER_ID_MAX 128 /* bytes of the mailer's messageId */

static ferry_outcome fail(ferry_job *job, ferry_outcome o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ferry_outcome fail(ferry_job *job, ferry_outcome o, const char *fmt, ...) {
    char reason[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    ferry_job_set_failure(job, reason, NULL);
    return o;
}

static void set_return(ferry_job *job, const char *provider_id, int duplicate) {
    json_t *o = json_pack("{s:s, s:b}", "providerMessageId", provider_id, "duplicate", duplicate);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (s) ferry_job_set_return(job, s);
    free(s);
    json_decref(o);
}

/* One statement; NULL with "SQLSTATE: message" in err when it did not succeed. */
static PGresult *query(PGconn *c, const char *sql, int n, const char *const *params, char *err,
                       size_t cap) {
    PGresult *r = ex_pg_exec_params(c, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return r;
    snprintf(err, cap, "%s", ex_pg_sqlstate(r)); /* the message can quote a value: not kept */
    PQclear(r);
    return NULL;
}

/* POST mailer/messages. Returns 0 with the provider's id, else the outcome to return. */
static int send_email(const tf_notifier *n, ferry_job *job, const tf_event *ev, const char *title,
                      char provider_id[PROVIDER_ID_MAX + 1], ferry_outcome *outcome) {
    char to[64], url[1024];
    snprintf(to, sizeof to, "user:%s", ev->assignee_id); /* the mailer's contact of the user */
    snprintf(url, sizeof url, "%s/messages", n->mailer_url);
    json_t *body = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "to", to, "template",
                             TASKFLOW_TEMPLATE_ASSIGNED, "reference", ev->task_id, "data", "taskId",
                             ev->task_id, "tenantId", ev->tenant_id, "assigneeId", ev->assignee_id,
                             "title", title, "occurredAt", ev->occurred_at);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        *outcome = fail(job, FERRY_FAILED, "mailer: out of memory");
        return -1;
    }
    ex_http_request rq = {.method = "POST",
                          .url = url,
                          .body = text,
                          .idempotency_key = ev->message_id,
                          .traceparent = ev->traceparent[0] ? ev->traceparent : NULL,
                          .timeout_ms = n->mailer_timeout_ms};
    ex_http_response rs;
    int rc = ex_http_do(&rq, &rs);
    free(text);
    if (rc != 0) {
        *outcome = fail(job, FERRY_FAILED,
                        "mailer: %s (%s); the email may have been sent: the retry's "
                        "Idempotency-Key makes the mailer answer without sending it again",
                        ex_http_transport_name(rs.transport), rs.error);
        ex_http_response_free(&rs);
        return -1;
    }
    ferry_http_verdict v = ferry_http_classify_now(rs.status, rs.retry_after);
    if (v.cls != FERRY_HTTP_OK) {
        char reason[200];
        snprintf(reason, sizeof reason, "mailer: HTTP %d (%s)", rs.status,
                 ferry_http_class_name(v.cls));
        *outcome = ferry_job_http_outcome(job, &v, reason);
        ex_http_response_free(&rs);
        return -1;
    }
    json_t *ans = json_loadb(rs.body, rs.body_len, 0, NULL);
    const char *id = json_string_value(json_object_get(ans, "messageId"));
    int ok = id && id[0] && strlen(id) <= PROVIDER_ID_MAX;
    if (ok) snprintf(provider_id, PROVIDER_ID_MAX + 1, "%s", id);
    json_decref(ans);
    ex_http_response_free(&rs);
    if (!ok) {
        *outcome = fail(job, FERRY_FAILED,
                        "mailer: HTTP %d without a usable messageId; retried with the same "
                        "Idempotency-Key",
                        rs.status);
        return -1;
    }
    return 0;
}

static ferry_outcome deliver(const tf_notifier *n, PGconn *c, ferry_job *job, const tf_event *ev) {
    char err[64];
    /* 1. sent before? (counted as a duplicate absorbed) */
    const char *p1[] = {ev->message_id};
    PGresult *r = query(c,
                        "UPDATE notification_deliveries SET duplicates = duplicates + 1 "
                        "WHERE message_id = $1 RETURNING provider_message_id",
                        1, p1, err, sizeof err);
    if (!r) return fail(job, FERRY_FAILED, "database: reading the delivery: SQLSTATE %s", err);
    if (PQntuples(r) == 1) {
        ex_log("message %s: the email went out before (%s): duplicate delivery absorbed",
               ev->message_id, PQgetvalue(r, 0, 0));
        set_return(job, PQgetvalue(r, 0, 0), 1);
        PQclear(r);
        return FERRY_COMPLETED;
    }
    PQclear(r);

    /* What the email says comes from the task as it is now; the event carries ids only. */
    const char *p2[] = {ev->task_id, ev->tenant_id};
    r = query(c, "SELECT title FROM tasks WHERE id = $1 AND tenant_id = $2", 2, p2, err,
              sizeof err);
    if (!r) return fail(job, FERRY_FAILED, "database: reading the task: SQLSTATE %s", err);
    if (PQntuples(r) == 0) {
        PQclear(r);
        return fail(job, FERRY_FAILED_PERMANENT,
                    "task %s not found in tenant %s: nothing to notify (not retried)", ev->task_id,
                    ev->tenant_id);
    }
    char title[1024];
    snprintf(title, sizeof title, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);

    /* 2. send, the messageId as the idempotency key */
    char provider_id[PROVIDER_ID_MAX + 1];
    ferry_outcome o;
    if (send_email(n, job, ev, title, provider_id, &o)) return o;

    /* 3. record it; a delivery racing us may have been first (its own send was answered
     * by the mailer from the key) */
    const char *p3[] = {ev->message_id,  ev->task_id, ev->tenant_id,
                        ev->assignee_id, provider_id, TASKFLOW_TEMPLATE_ASSIGNED};
    r = query(c,
              "INSERT INTO notification_deliveries (message_id, task_id, tenant_id, assignee_id, "
              "provider_message_id, template) VALUES ($1, $2, $3, $4, $5, $6) "
              "ON CONFLICT (message_id) DO UPDATE "
              "SET duplicates = notification_deliveries.duplicates + 1 "
              "RETURNING (xmax = 0)",
              6, p3, err, sizeof err);
    if (!r)
        return fail(job, FERRY_FAILED,
                    "database: recording the delivery: SQLSTATE %s (the email was sent as %s: "
                    "the retry's resend is absorbed by the mailer's Idempotency-Key)",
                    err, provider_id);
    int inserted = PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    if (inserted)
        ex_log("message %s: task-assigned email for task %s sent as %s", ev->message_id,
               ev->task_id, provider_id);
    else
        ex_log("message %s: a concurrent delivery recorded it first: duplicate absorbed",
               ev->message_id);
    set_return(job, provider_id, !inserted);
    return FERRY_COMPLETED;
}

ferry_outcome tf_notify_task_assigned(ferry_job *job, void *userdata) {
    const tf_notifier *n = userdata;
    if (strcmp(ferry_job_name(job), TASKFLOW_JOB_ASSIGNED)) /* the seed's UnrecoverableError */
        return fail(job, FERRY_FAILED_PERMANENT, "unsupported job name on queue %s",
                    ferry_job_queue(job));
    const char *payload = ferry_job_payload(job);
    tf_event ev;
    char why[200];
    if (tf_event_parse(payload, strlen(payload), &ev, why, sizeof why))
        return fail(job, FERRY_FAILED_PERMANENT, "%s", why);
    char err[600];
    PGconn *c = ex_pgpool_get(n->pool, POOL_WAIT_MS, err, sizeof err);
    if (!c) return fail(job, FERRY_FAILED, "database unavailable: %s", err);
    ferry_outcome o = deliver(n, c, job, &ev);
    ex_pgpool_put(n->pool, c);
    return o;
}

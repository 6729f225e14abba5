/* inbox.c - idempotent consumers (ferry/inbox.h): claiming a message id in the caller's
 * transaction, running an effect with its claim in one transaction, and mapping the SQL
 * failures of that transaction to job outcomes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/inbox.h"
#include "pg/pg.h"
#include "util/error.h"
#include "util/uuid7.h"

#define FERRY_INBOX_DUPLICATES_METRIC "ferry_inbox_duplicates_total"

void ferry_inbox_options_init(ferry_inbox_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

static int consumer_check(const char *consumer, ferry_error *err) {
    if (!consumer) return ferry__err(err, FERRY_EINVAL, "inbox: consumer is NULL");
    size_t n = strlen(consumer);
    if (n == 0 || n > FERRY_INBOX_CONSUMER_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "inbox: consumer must be 1..%d bytes of printable ASCII (got %zu bytes)",
                          FERRY_INBOX_CONSUMER_MAX, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)consumer[i];
        if (c < 0x20 || c > 0x7e)
            return ferry__err(err, FERRY_EINVAL,
                              "inbox: consumer must be printable ASCII (byte %zu is 0x%02x)", i, c);
    }
    return 0;
}

static int id_check(const char *id, ferry_error *err) {
    if (!id) return ferry__err(err, FERRY_EINVAL, "inbox: message id is NULL");
    size_t n = strlen(id);
    if (n != FERRY_UUID_STRLEN || !ferry__uuid_text_valid(id, n))
        return ferry__err(err, FERRY_EINVAL,
                          "inbox: message id is not a UUID (%zu bytes; want 8-4-4-4-12 hex)", n);
    return 0;
}

/* ferry_inbox_duplicates_total{consumer} += 1 in m (NULL: nothing). The family is found or
 * registered here, on the first duplicate, so a registry several inboxes share holds one
 * family; two threads registering at once: the loser finds the winner's. Duplicates are the
 * rare path, so the lookup (the registry's mutex) per duplicate costs nothing on the
 * common one. A failure to count is ignored: the claim's result does not depend on it. */
static void count_duplicate(ferry_metrics *m, const char *consumer) {
    if (!m) return;
    static const char *const labels[] = {"consumer"};
    ferry_metrics_family *f = ferry_metrics_family_find(m, FERRY_INBOX_DUPLICATES_METRIC);
    if (!f) {
        ferry_metrics_spec s;
        ferry_metrics_spec_init(&s);
        s.kind = FERRY_METRICS_COUNTER;
        s.name = FERRY_INBOX_DUPLICATES_METRIC;
        s.help = "Inbox claims that found the message already processed (a redelivery whose "
                 "effect was not run again), by consumer";
        s.label_names = labels;
        s.label_count = 1;
        if (ferry_metrics_register(m, &s, &f, NULL))
            f = ferry_metrics_family_find(m, FERRY_INBOX_DUPLICATES_METRIC);
        if (!f) return;
    }
    /* NULLs after the consumer: a family of that name with more labels refuses the lookup
     * (a NULL value) instead of reading past the array */
    const char *v[FERRY_METRICS_LABELS_MAX] = {consumer};
    ferry_metrics_counter *c = NULL;
    if (ferry_metrics_counter_with(f, v, &c, NULL) == 0) ferry_metrics_counter_add(c, 1);
}

/* Claim, keeping the SQLSTATE of a server error in state[6] (may be NULL). */
static int claim(PGconn *conn, const ferry_inbox_options *o, const char *consumer,
                 const char *message_id, int *claimed, char *state, ferry_error *err) {
    if (state) state[0] = '\0';
    if (claimed) *claimed = 0;
    if (!conn) return ferry__err(err, FERRY_EINVAL, "inbox claim: conn is NULL");
    if (!claimed) return ferry__err(err, FERRY_EINVAL, "inbox claim: claimed is NULL");
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(o ? o->schema : NULL, qs, err);
    if (rc) return rc;
    if ((rc = consumer_check(consumer, err)) || (rc = id_check(message_id, err))) return rc;
    PGTransactionStatusType ts = PQtransactionStatus(conn);
    if (ts != PQTRANS_INTRANS)
        return ferry__err(err, FERRY_ESTATE,
                          "inbox claim: needs an open transaction on the connection (%s)",
                          ts == PQTRANS_IDLE      ? "none is open"
                          : ts == PQTRANS_INERROR ? "it is aborted"
                          : ts == PQTRANS_ACTIVE  ? "a command is in progress"
                                                  : "the connection is not usable");
    char sql[FERRY__QSCHEMA_MAX + 160];
    snprintf(sql, sizeof sql,
             "INSERT INTO %s.processed_messages (consumer, message_id) VALUES ($1, $2::uuid) "
             "ON CONFLICT DO NOTHING",
             qs);
    const char *params[] = {consumer, message_id};
    PGresult *r = PQexecParams(conn, sql, 2, NULL, params, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
        if (state && st && strlen(st) == 5) memcpy(state, st, 6);
        rc = ferry__pg_error(conn, r, "inbox claim", err);
        PQclear(r);
        return rc;
    }
    *claimed = strcmp(PQcmdTuples(r), "1") == 0;
    PQclear(r);
    if (!*claimed && o) count_duplicate(o->metrics, consumer);
    return 0;
}

int ferry_inbox_claim(PGconn *conn, const ferry_inbox_options *o, const char *consumer,
                      const char *message_id, int *claimed, ferry_error *err) {
    return claim(conn, o, consumer, message_id, claimed, NULL, err);
}

/* SQLSTATEs after which the same delivery may well succeed later. */
static int transient_state(const char *st) {
    return !strcmp(st, "40001") || !strcmp(st, "40P01") || !strcmp(st, "57P01") ||
           !strcmp(st, "57P02") || !strcmp(st, "57P03") || !strcmp(st, "55P03") ||
           !strncmp(st, "08", 2);
}

static void rollback(PGconn *conn) {
    if (PQstatus(conn) != CONNECTION_OK) return;
    if (PQtransactionStatus(conn) == PQTRANS_IDLE) return;
    PQclear(PQexec(conn, "ROLLBACK"));
}

/* A failed statement of ours (BEGIN / COMMIT; `what` names it): fill res, roll back, pick
 * the outcome. commit = 1 for the COMMIT (class 23 is then permanent). */
static ferry_outcome sql_failure(PGconn *conn, PGresult *r, const char *what, int commit,
                                 ferry_inbox_result *res) {
    const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (st && strlen(st) == 5) memcpy(res->sqlstate, st, 6);
    ferry_error e = {0};
    ferry__pg_error(conn, r, what, &e);
    snprintf(res->reason, sizeof res->reason, "%s", e.message);
    PQclear(r);
    int gone = PQstatus(conn) != CONNECTION_OK;
    rollback(conn);
    if (gone || transient_state(res->sqlstate)) return FERRY_FAILED;
    if (commit && !strncmp(res->sqlstate, "23", 2)) return FERRY_FAILED_PERMANENT;
    return FERRY_FAILED;
}

static const char *outcome_name(ferry_outcome oc) {
    switch (oc) {
    case FERRY_COMPLETED:
        return "completed";
    case FERRY_FAILED:
        return "failed";
    case FERRY_FAILED_PERMANENT:
        return "failed permanently";
    case FERRY_RETRY_LATER:
        return "retry later";
    case FERRY_THROTTLED:
        return "throttled";
    }
    return "an unknown outcome";
}

ferry_outcome ferry_inbox_run(PGconn *conn, const ferry_inbox_options *o, const char *consumer,
                              const char *message_id, ferry_inbox_effect_fn effect, void *userdata,
                              ferry_inbox_result *res) {
    ferry_inbox_result local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    ferry_error e = {0};
    char qs[FERRY__QSCHEMA_MAX];
    if (!conn || !effect) {
        snprintf(res->reason, sizeof res->reason, "inbox: %s is NULL", conn ? "effect" : "conn");
        return FERRY_FAILED_PERMANENT;
    }
    if (ferry__pg_quote_schema(o ? o->schema : NULL, qs, &e) || consumer_check(consumer, &e) ||
        id_check(message_id, &e)) {
        snprintf(res->reason, sizeof res->reason, "%s", e.message);
        return FERRY_FAILED_PERMANENT;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        snprintf(res->reason, sizeof res->reason, "inbox: the connection is gone");
        return FERRY_FAILED;
    }
    if (PQtransactionStatus(conn) != PQTRANS_IDLE) {
        snprintf(res->reason, sizeof res->reason,
                 "inbox: needs an idle connection (a transaction is open on it)");
        return FERRY_FAILED_PERMANENT;
    }
    PGresult *r = PQexec(conn, "BEGIN");
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
        return sql_failure(conn, r, "inbox BEGIN", 0, res);
    PQclear(r);
    int claimed = 0;
    if (claim(conn, o, consumer, message_id, &claimed, res->sqlstate, &e)) {
        snprintf(res->reason, sizeof res->reason, "%s", e.message);
        rollback(conn);
        return FERRY_FAILED;
    }
    if (!claimed) {
        rollback(conn);
        res->duplicate = 1;
        return FERRY_COMPLETED;
    }
    ferry_outcome oc = effect(conn, userdata);
    if (oc != FERRY_COMPLETED) {
        snprintf(res->reason, sizeof res->reason, "inbox: effect returned %s", outcome_name(oc));
        rollback(conn);
        return oc;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        snprintf(res->reason, sizeof res->reason, "%s",
                 "inbox: the connection was lost during the effect");
        return FERRY_FAILED;
    }
    PGTransactionStatusType ts = PQtransactionStatus(conn);
    if (ts == PQTRANS_INERROR) {
        snprintf(res->reason, sizeof res->reason, "%s",
                 "inbox: effect left the transaction aborted (one of its statements "
                 "failed)");
        rollback(conn);
        return FERRY_FAILED;
    }
    if (ts != PQTRANS_INTRANS) {
        snprintf(res->reason, sizeof res->reason, "%s",
                 "inbox: effect ended the transaction itself");
        rollback(conn);
        return FERRY_FAILED_PERMANENT;
    }
    r = PQexec(conn, "COMMIT");
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
        return sql_failure(conn, r, "inbox COMMIT", 1, res);
    int committed = strcmp(PQcmdStatus(r), "COMMIT") == 0;
    PQclear(r);
    if (!committed) {
        snprintf(res->reason, sizeof res->reason, "%s", "inbox: COMMIT rolled back");
        return FERRY_FAILED;
    }
    return FERRY_COMPLETED;
}

ferry_outcome ferry_inbox_run_job(PGconn *conn, const ferry_inbox_options *o, const char *consumer,
                                  ferry_job *job, ferry_inbox_effect_fn effect, void *userdata) {
    char msg[FERRY_INBOX_CONSUMER_MAX + 600];
    char cname[FERRY_INBOX_CONSUMER_MAX + 1];
    ferry_error e = {0};
    snprintf(cname, sizeof cname, "%s", consumer_check(consumer, &e) ? "(bad consumer)" : consumer);
    const char *id = job ? ferry_job_event_id(job) : NULL;
    if (!id || id_check(id, &e)) {
        snprintf(msg, sizeof msg, "inbox %s: job has no usable eventId (%s)", cname,
                 !id ? "the data is not an envelope with an eventId" : "the eventId is not a UUID");
        if (job) ferry_job_set_failure(job, msg, NULL);
        return FERRY_FAILED_PERMANENT;
    }
    ferry_inbox_result res;
    ferry_outcome oc = ferry_inbox_run(conn, o, consumer, id, effect, userdata, &res);
    if (oc != FERRY_COMPLETED && res.reason[0]) {
        snprintf(msg, sizeof msg, "inbox %s: %s", cname, res.reason);
        ferry_job_set_failure(job, msg, NULL);
    }
    return oc;
}

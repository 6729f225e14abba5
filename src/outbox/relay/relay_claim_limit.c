/* relay_claim_limit.c - how many rows the relay's claim locks. The claim converts every row
 * it locks to JSON text (octet_length(payload::text), for the byte budget; relay_batch.c):
 *  - after a batch the byte budget cut short, it locks about what fitted (fewer rows
 *    converted in vain); full batches double it back to --batch;
 *  - after a claim that ran into statement_timeout it locks half as many rows, down to one.
 *    Rows inserted by SQL may be as large as jsonb allows, and a claim of many of them can
 *    take longer than the timeout; retried unchanged it would time out for ever, and every
 *    younger event would wait behind it. A row that cannot be claimed alone within the
 *    timeout twice in a row, and is large (SLOW_ROW_MIN_STORED), is set aside
 *    (quarantined_at, last_error), like any row that cannot become a job, so the events
 *    behind it move again; a small one only means the server is slow, and is retried. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outbox/relay/relay_internal.h"
#include "util/error.h"

/* Every row locked costs the server its conversion to text, wasted on the rows the budget
 * leaves behind (a claim of 1000 rows of 512 KiB keeps 32 of them). After a batch cut short,
 * lock about what fitted plus a quarter; back up to batch_size, doubling, while batches fill
 * up without being cut. After a timeout, half of what timed out. */
int ferry__relay_next_claim_limit(int current, int batch_size, int n, int limit, int left_behind,
                                  int timed_out) {
    long long next = current;
    if (timed_out) {
        int half = limit > 1 ? limit / 2 : 1;
        return half < current ? half : current > 1 ? current : 1;
    }
    if (left_behind)
        next = (long long)n + n / 4 + 1;
    else if (n >= limit)
        next = 2LL * current;
    return next < batch_size ? (int)next : batch_size;
}

/* The row a one-row claim would lock now (the oldest unpublished routed row not locked by
 * another relay), its id into id and its stored payload size into *stored. 1 found, 0 none,
 * <0 error (logged). */
static int first_in_line(ferry_relay *r, ferry__pgc *pg, char id[FERRY_UUID_STRLEN + 1],
                         long long *stored) {
    char sql[FERRY__QSCHEMA_MAX + 320];
    snprintf(sql, sizeof sql,
             "SELECT id, pg_column_size(payload) FROM %s.outbox_events WHERE published_at IS "
             "NULL AND quarantined_at IS NULL AND topic = ANY($1::text[]) ORDER BY created_at, "
             "id LIMIT 1 FOR UPDATE SKIP LOCKED",
             r->qs);
    const char *params[] = {r->topics_array};
    PGresult *res = NULL;
    ferry_error e = {0};
    if (ferry__pgc_exec(pg, ferry__relay_deadline(r), "claim timeout: first row", NULL, sql, 1,
                        params, &res, &e)) {
        ferry__relay_log(r, FERRY_LOG_WARN, "relay: %s", e.message);
        return -1;
    }
    int found = PQntuples(res) == 1 && PQgetlength(res, 0, 0) == FERRY_UUID_STRLEN;
    if (found) {
        memcpy(id, PQgetvalue(res, 0, 0), FERRY_UUID_STRLEN + 1);
        *stored = atoll(PQgetvalue(res, 0, 1));
    }
    PQclear(res);
    return found;
}

int ferry__relay_set_aside(ferry_relay *r, ferry__pgc *pg, const char *id, const char *reason) {
    char sql[2 * FERRY__QSCHEMA_MAX + 320];
    snprintf(sql, sizeof sql,
             "UPDATE %s.outbox_events SET quarantined_at = now(), attempts = attempts + 1, "
             "last_error = $2 WHERE id IN (SELECT id FROM %s.outbox_events WHERE id = $1::uuid "
             "AND published_at IS NULL AND quarantined_at IS NULL FOR UPDATE SKIP LOCKED)",
             r->qs, r->qs);
    const char *params[] = {id, reason};
    PGresult *res = NULL;
    ferry_error e = {0};
    if (ferry__pgc_exec(pg, ferry__relay_deadline(r), "set aside", NULL, sql, 2, params, &res,
                        &e)) {
        ferry__relay_log(r, FERRY_LOG_WARN, "relay: %s", e.message);
        return -1;
    }
    int done = atoi(PQcmdTuples(res)) == 1;
    PQclear(res);
    return done;
}

/* Stored size (pg_column_size, compressed) under which a row is never blamed for a claim
 * timeout: converting it to text cannot take seconds, so the server is slow (an I/O stall,
 * an overloaded host) and the row is only retried. Text of a timeout's worth of conversion
 * (tens of MB at ~25 MB/s) compresses to well over this. */
#define SLOW_ROW_MIN_STORED (64 * 1024)

/* A one-row claim timed out: the first time for the row first in line, note it; the second
 * time in a row, set it aside, unless the row is small. */
static relay_batch_rc single_row(ferry_relay *r, ferry__pgc *pg, ferry_error *err) {
    char id[FERRY_UUID_STRLEN + 1];
    long long stored = 0;
    if (first_in_line(r, pg, id, &stored) <= 0) return RELAY_BATCH_DB_FAILED;
    if (stored < SLOW_ROW_MIN_STORED) {
        r->slow_row[0] = '\0';
        if (err) {
            char was[FERRY_ERROR_MESSAGE_MAX];
            snprintf(was, sizeof was, "%s", err->message);
            ferry__err(err, err->code,
                       "%s (a claim of event %s alone, %lld bytes stored: the server is slow, "
                       "not the row; retrying)",
                       was, id, stored);
        }
        return RELAY_BATCH_DB_FAILED;
    }
    if (strcmp(id, r->slow_row)) {
        memcpy(r->slow_row, id, sizeof id);
        if (err) {
            char was[FERRY_ERROR_MESSAGE_MAX];
            snprintf(was, sizeof was, "%s", err->message);
            ferry__err(err, err->code,
                       "%s (a claim of event %s alone; set aside if that happens again)", was, id);
        }
        return RELAY_BATCH_DB_FAILED;
    }
    r->slow_row[0] = '\0';
    char reason[320];
    snprintf(reason, sizeof reason,
             "a claim of this row alone ran past the statement timeout (%d ms) twice, "
             "converting its payload (%lld bytes stored) to text; raise the relay's statement "
             "timeout (--db-timeout) and clear quarantined_at to publish it",
             r->statement_timeout_ms, stored);
    int done = ferry__relay_set_aside(r, pg, id, reason);
    if (done < 0) return RELAY_BATCH_DB_FAILED;
    if (done) {
        ferry__relay_log(r, FERRY_LOG_ERROR,
                         "relay: event %s set aside (quarantined_at), not published: %s", id,
                         reason);
        pthread_mutex_lock(&r->mu);
        r->stats.quarantined++;
        pthread_mutex_unlock(&r->mu);
    }
    return RELAY_BATCH_NARROWED;
}

relay_batch_rc ferry__relay_claim_timed_out(ferry_relay *r, ferry_error *err) {
    int limit = r->claim_timeout;
    r->claim_timeout = 0;
    if (limit > 1) {
        /* r->slow_row stays: a wider claim timing out says nothing for the row that timed
         * out alone before, and forgetting it let the limit swing 1 -> 2 -> 1 with the row
         * never set aside (only a claim that gets through clears it, relay_batch.c) */
        r->claim_limit =
            ferry__relay_next_claim_limit(r->claim_limit, r->batch_size, 0, limit, 0, 1);
        ferry__relay_log(r, FERRY_LOG_WARN,
                         "relay: a claim of %d rows ran past the statement timeout (%d ms) "
                         "(converting their payloads to text, or stepping over a backlog of "
                         "unknown topics' rows); claiming %d at a time now",
                         limit, r->statement_timeout_ms, r->claim_limit);
        return RELAY_BATCH_NARROWED;
    }
    /* One row alone took too long. Once may be a slow moment of the server: note the row
     * and retry after the usual backoff; the same row again is the row's own size. The
     * main connection, or a connection of its own when that one is gone (a claim that
     * took the client's deadline too). */
    ferry__pgc own = {0}, *pg = &r->pg;
    if (!pg->conn || pg->broken) {
        ferry__pg_session s;
        ferry__relay_session(r, &s, "ferry relay");
        ferry_error e = {0};
        if (ferry__pgc_connect(&own, &s, &e)) return RELAY_BATCH_DB_FAILED;
        pg = &own;
    }
    relay_batch_rc brc = single_row(r, pg, err);
    ferry__pgc_close(&own);
    return brc;
}

/* conn.c - the relay's database connections and what every other part of the relay needs
 * of them: the log line, the statement deadline, session settings, waiting on a socket or
 * a stop request, connecting (schema version check, LISTEN, the shared "a relay runs here"
 * lock, the prepared batch statements) and the second connection ("lane") of a relay that
 * is alone on its schema. It calls nothing else of the relay: relay.c (life cycle, main
 * loop), relay_batch.c (publishing), relay_claim_limit.c and relay_retention.c build on it. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outbox/relay/relay_internal.h"
#include "util/clock.h"
#include "util/error.h"

#define CLIENT_SLACK_MS 2000 /* client deadline beyond the server's statement_timeout */
#define LANE2_RETRY_MS 30000 /* a second connection that failed is tried again this late */

void ferry__relay_log(ferry_relay *r, int level, const char *fmt, ...) {
    if (!r->log) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&r->log_mu);
    r->log(level, line, r->log_userdata);
    pthread_mutex_unlock(&r->log_mu);
}

void ferry__relay_event(ferry_relay *r, ferry_relay_event *ev, const char *fmt, ...) {
    if (!r->log && !r->event) return;
    char line[1024];
    ev->message = NULL;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof line, fmt, ap);
        va_end(ap);
        ev->message = line;
    }
    pthread_mutex_lock(&r->log_mu);
    if (r->event)
        r->event(ev, r->log_userdata);
    else if (ev->message && r->log)
        r->log(ev->level, line, r->log_userdata);
    pthread_mutex_unlock(&r->log_mu);
}

int64_t ferry__relay_deadline(const ferry_relay *r) {
    return ferry__mono_ms() + r->statement_timeout_ms + CLIENT_SLACK_MS;
}

void ferry__relay_session(const ferry_relay *r, ferry__pg_session *s, const char *app) {
    s->url = r->database_url;
    s->application_name = app;
    s->connect_timeout_ms = r->connect_timeout_ms;
    s->statement_timeout_ms = r->statement_timeout_ms;
    /* A batch holds its transaction open across the Redis adds, and a batch claimed ahead
     * (relay_batch.c) across the adds of the batch before it too: allow two adds their full
     * budget (connect + command, twice for a reconnect) before the server gives up on us. */
    int rc_ms = r->redis.connect_timeout_ms + r->redis.command_timeout_ms;
    s->idle_in_tx_timeout_ms = r->statement_timeout_ms + 4 * rc_ms + 5000;
}

/* ---- waiting ------------------------------------------------------------------------- */

int ferry__relay_wait(ferry_relay *r, int fd, int64_t deadline) {
    for (;;) {
        if (atomic_load(&r->stopping)) return 1;
        int64_t left = deadline - ferry__mono_ms();
        if (left <= 0) return 0;
        struct pollfd p[2] = {{.fd = r->stop_pipe[0], .events = POLLIN},
                              {.fd = fd, .events = POLLIN}};
        int n = poll(p, fd >= 0 ? 2 : 1, left > 60000 ? 60000 : (int)left);
        if (n < 0 && errno != EINTR) return 0;
        if (n > 0 && (p[0].revents & POLLIN)) return 1;
        if (n > 0 && fd >= 0 && p[1].revents) return 2;
    }
}

/* ---- prepared statements ------------------------------------------------------------ */

/* The claim picks (oldest first, FOR UPDATE SKIP LOCKED), measures and marks in one
 * statement: one index scan and two TID scans per batch (one reads the locked rows back,
 * one updates the kept ones), cheaper in server CPU than a SELECT and an UPDATE (a join
 * on ctid instead would rescan the TID per row). The locking subquery reads the
 * partial index outbox_unpublished (created_at, id) in order (migration 006): no sort,
 * however many events of one transaction share created_at; it carries ctids alone, narrow
 * if a plan ever sorts (a schema before 006). The picked rows are locked, so their ctids
 * cannot change under us. A row picked after a concurrent update of it has a version the
 * statement's snapshot does not see: it is neither read back nor updated, and stays for
 * the next batch. RETURNING has no order: sort by age again. Events of one transaction
 * share created_at (now() is the transaction's start): the id breaks the tie, and
 * ferry_outbox_append's UUIDv7 ids sort in append order (rows in physical order would
 * not: a row can land in an earlier page than one added before it).
 *
 * The byte budget ($3): of the $2 rows locked, only the oldest whose payloads add up to
 * at most $3 are marked, and always the first (a row over the budget moves alone). The
 * rest stay unpublished, locked until this transaction ends, and go to a later batch;
 * the last column (rows locked) tells the relay that rows were left behind, so the
 * batch counts as full. The size is the payload's JSON text, octet_length(payload::text),
 * because that text is what the relay holds (libpq's result, the envelopes, the Redis
 * commands). pg_column_size would cost nothing but measures the stored form, which
 * TOAST compresses (100 KiB of repetitive JSON can take 2 KiB) and which is smaller or
 * larger than the text depending on the content: no bound on the relay's memory. The
 * conversion (detoast and print: a few hundred MB/s) runs again when the kept rows are
 * sent; returning the text computed here instead was no cheaper (measured: the window's
 * sort and the CTEs then copy every payload, spilling to disk), and adapt_claim_limit
 * keeps the rows converted in vain (locked, then left behind) few. */
int ferry__relay_claim_sql(char *out, size_t cap, const char *qs) {
    int n = snprintf(
        out, cap,
        "WITH locked AS (SELECT ctid, created_at, id, octet_length(payload::text) AS bytes "
        "FROM %s.outbox_events WHERE ctid = ANY(ARRAY(SELECT ctid FROM %s.outbox_events "
        "WHERE published_at IS NULL AND quarantined_at IS NULL AND topic = ANY($1::text[]) "
        "ORDER BY created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED))), "
        "kept AS (SELECT ctid FROM (SELECT ctid, sum(bytes) OVER w AS total, "
        "row_number() OVER w AS n FROM locked WINDOW w AS (ORDER BY created_at, id)) k "
        "WHERE total <= $3::bigint OR n = 1), "
        "claimed AS (UPDATE %s.outbox_events AS o SET published_at = now() "
        "WHERE o.ctid = ANY(ARRAY(SELECT ctid FROM kept)) AND o.published_at IS NULL "
        "RETURNING o.id, o.topic, o.payload, o.trace_id, o.created_at) "
        "SELECT id, topic, payload, trace_id, (SELECT count(*) FROM locked), "
        "extract(epoch FROM created_at)::float8 FROM claimed "
        "ORDER BY created_at, id",
        qs, qs, qs);
    return n >= 0 && (size_t)n < cap ? 0 : -1;
}

int ferry__relay_prepare(ferry_relay *r, ferry__pgc *pg, ferry_error *err) {
    char sql[3 * FERRY__QSCHEMA_MAX + 1200];
    const char *qs = r->qs;
    /* Every batch runs these: prepared, the server parses them once per connection. */
    int rc = ferry__pgc_prepare(pg, ferry__relay_deadline(r), RELAY_ST_BEGIN, "BEGIN", 0, err);
    if (!rc)
        rc = ferry__pgc_prepare(pg, ferry__relay_deadline(r), RELAY_ST_ASYNC,
                                "SET LOCAL synchronous_commit = off", 0, err);
    if (!rc)
        rc = ferry__pgc_prepare(pg, ferry__relay_deadline(r), RELAY_ST_COMMIT, "COMMIT", 0, err);
    /* Are we the only relay? Every relay holds FERRY__LOCK_RELAYS_STR shared
     * (ferry__relay_db_connect); the exclusive lock is granted only when no other session
     * holds it, and given back at once. (Our own shared lock does not conflict with our own
     * request.) */
    if (!rc)
        rc = ferry__pgc_prepare(pg, ferry__relay_deadline(r), RELAY_ST_ALONE,
                                "SELECT CASE WHEN pg_try_advisory_lock(" FERRY__LOCK_RELAYS_STR
                                ", hashtext($1)) THEN pg_advisory_unlock(" FERRY__LOCK_RELAYS_STR
                                ", hashtext($1)) ELSE false END",
                                1, err);
    /* Run right after every claim, in its segment. A claim whose statement_timeout expires
     * while its last rows are being sent completes, and the cancel stays pending on the
     * server: it then fails the next statement, or hits the session idle (an error the
     * pipeline does not expect). This statement takes it, before any job is added: the
     * claim's transaction fails, and the relay knows its claim timed out. */
    if (!rc)
        rc = ferry__pgc_prepare(pg, ferry__relay_deadline(r), RELAY_ST_AFTER_CLAIM, "SELECT 1", 0,
                                err);
    if (rc) return rc;
    ferry__relay_claim_sql(sql, sizeof sql, qs);
    rc = ferry__pgc_prepare(pg, ferry__relay_deadline(r), RELAY_ST_CLAIM, sql, 3, err);
    if (rc) return rc;
    /* Claimed rows that do not become jobs: unpublished again, and set aside when they have
     * a reason (a NULL reason only puts the row back). */
    snprintf(sql, sizeof sql,
             "UPDATE %s.outbox_events AS o SET published_at = NULL, "
             "quarantined_at = CASE WHEN q.reason IS NULL THEN o.quarantined_at ELSE now() END, "
             "attempts = o.attempts + CASE WHEN q.reason IS NULL THEN 0 ELSE 1 END, "
             "last_error = coalesce(q.reason, o.last_error) "
             "FROM unnest($1::uuid[], $2::text[]) AS q(id, reason) WHERE o.id = q.id",
             qs);
    rc = ferry__pgc_prepare(pg, ferry__relay_deadline(r), RELAY_ST_PUT_BACK, sql, 2, err);
    if (rc) return rc;
    /* After the rollback another relay may hold (and publish) some of these rows: skip
     * them rather than wait, and never touch a row already published. */
    snprintf(sql, sizeof sql,
             "UPDATE %s.outbox_events SET attempts = attempts + 1, last_error = $2 "
             "WHERE id IN (SELECT id FROM %s.outbox_events WHERE id = ANY($1::uuid[]) "
             "AND published_at IS NULL FOR UPDATE SKIP LOCKED)",
             qs, qs);
    return ferry__pgc_prepare(pg, ferry__relay_deadline(r), RELAY_ST_FAILED, sql, 2, err);
}

/* ---- connecting ---------------------------------------------------------------------- */

static int check_schema(ferry_relay *r, ferry_error *err) {
    char table[FERRY__QSCHEMA_MAX + 40], sql[FERRY__QSCHEMA_MAX + 96];
    snprintf(table, sizeof table, "%s.ferry_schema_migrations", r->qs);
    const char *params[] = {table};
    PGresult *res = NULL;
    int rc = ferry__pgc_exec(&r->pg, ferry__relay_deadline(r), "schema check", NULL,
                             "SELECT to_regclass($1) IS NOT NULL", 1, params, &res, err);
    if (rc) return rc;
    int exists = !strcmp(PQgetvalue(res, 0, 0), "t");
    PQclear(res);
    int version = 0;
    if (exists) {
        snprintf(sql, sizeof sql, "SELECT coalesce(max(version), 0) FROM %s", table);
        rc = ferry__pgc_exec(&r->pg, ferry__relay_deadline(r), "schema check", NULL, sql, 0, NULL,
                             &res, err);
        if (rc) return rc;
        version = atoi(PQgetvalue(res, 0, 0));
        PQclear(res);
    }
    if (version < FERRY__RELAY_SCHEMA_VERSION)
        return ferry__err(err, FERRY_ESTATE,
                          "schema %s is at version %d, the relay needs %d: run `ferry migrate`",
                          r->schema_shown, version, FERRY__RELAY_SCHEMA_VERSION);
    if (version > ferry_outbox_schema_version())
        ferry__relay_log(r, FERRY_LOG_WARN,
                         "relay: schema %s is at version %d, newer than this ferry's %d: a newer "
                         "ferry migrated it; upgrade this relay",
                         r->schema_shown, version, ferry_outbox_schema_version());
    else if (version < ferry_outbox_schema_version())
        ferry__relay_log(r, FERRY_LOG_WARN,
                         "relay: schema %s is at version %d of %d; it works, but run `ferry "
                         "migrate` for the later ones (006: the claim's index)",
                         r->schema_shown, version, ferry_outbox_schema_version());
    return 0;
}

int ferry__relay_db_connect(ferry_relay *r, ferry_error *err) {
    ferry__pg_session s;
    ferry__relay_session(r, &s, "ferry relay");
    int rc = ferry__pgc_connect(&r->pg, &s, err);
    if (!rc) rc = check_schema(r, err);
    if (!rc)
        rc = ferry__pgc_exec(&r->pg, ferry__relay_deadline(r), "listen", NULL,
                             "LISTEN " FERRY__NOTIFY_CHANNEL, 0, NULL, NULL, err);
    /* "a relay runs on this schema", for the others' probes (relay_batch.c); released when
     * the session ends */
    const char *params[] = {r->schema};
    if (!rc)
        rc = ferry__pgc_exec(&r->pg, ferry__relay_deadline(r), "relay lock", NULL,
                             "SELECT pg_advisory_lock_shared(" FERRY__LOCK_RELAYS_STR
                             ", hashtext($1))",
                             1, params, NULL, err);
    if (!rc) rc = ferry__relay_prepare(r, &r->pg, err);
    r->alone_at = 0;
    if (rc) ferry__pgc_close(&r->pg);
    /* the second connection is made afresh with the first, at the next drain */
    ferry__pgc_close(&r->pg2);
    r->pg2_retry_at = 0;
    return rc;
}

int ferry__relay_lane2(ferry_relay *r) {
    if (r->pg2.conn && !r->pg2.broken) return 1;
    ferry__pgc_close(&r->pg2);
    if (ferry__mono_ms() < r->pg2_retry_at) return 0;
    ferry__pg_session s;
    ferry__relay_session(r, &s, "ferry relay");
    ferry_error e = {0};
    int rc = ferry__pgc_connect(&r->pg2, &s, &e);
    if (!rc) rc = ferry__relay_prepare(r, &r->pg2, &e);
    if (!rc) return 1;
    ferry__pgc_close(&r->pg2);
    r->pg2_retry_at = ferry__mono_ms() + LANE2_RETRY_MS;
    ferry__relay_log(r, FERRY_LOG_WARN,
                     "relay: second database connection: %s (publishing on one connection, "
                     "more slowly; retrying in %d s)",
                     e.message, LANE2_RETRY_MS / 1000);
    return 0;
}

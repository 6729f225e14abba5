/* ferry/inbox.h - idempotent consumers: an inbox of processed message ids in PostgreSQL.
 *
 * Delivery is at least once (outbox.h): a consumer that must apply a message's effect once
 * claims the message id in the same transaction as the effect. The claim is a row in
 * <schema>.processed_messages (created by `ferry migrate`); a redelivered message finds the
 * row and the effect is not run again. The marker and the effect commit together or not at
 * all: there is never a marker without its effect, nor an effect without its marker.
 *
 * For every function below unless it says otherwise:
 * Threads: libpq's rule (one thread at a time on a connection, separate connections in
 *   parallel).
 * Errors: PostgreSQL failures come back as FERRY_EDB (an error the server reported, with
 *   "SQLSTATE xxxxx" in the message) or FERRY_EIO (connection lost).
 * Ownership: strings passed in are borrowed for the call.
 * Schema: o->schema as in outbox.h ("Naming the schema"); NULL options or schema = "public". */
#ifndef FERRY_INBOX_H
#define FERRY_INBOX_H

#include "common.h"
#include "metrics.h"
#include "worker.h"

#include <libpq-fe.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A consumer name: 1..FERRY_INBOX_CONSUMER_MAX bytes of printable ASCII (0x20..0x7e). It
 * names the code that applies effects (e.g. "billing.charge"); each consumer has its own
 * set of processed ids. */
#define FERRY_INBOX_CONSUMER_MAX 200
#define FERRY_INBOX_BATCH_DEFAULT 1000
#define FERRY_INBOX_BATCH_MAX 100000

typedef struct ferry_inbox_options {
    const char *schema; /* NULL = "public" */
    /* When set, every claim that finds the message already processed (a duplicate:
     * ferry_inbox_claim's *claimed = 0, ferry_inbox_run's res->duplicate = 1) adds one to
     * ferry_inbox_duplicates_total{consumer} in this registry, registered by the first
     * claim that needs it, or found there when another inbox user (or a worker of the same
     * process) registered it: several users share one registry and their counts add up.
     * NULL = counted nowhere. A registry holding that name with other labels or another
     * kind counts nothing (the claim itself is not affected). The registry must outlive
     * the calls. */
    ferry_metrics *metrics;
} ferry_inbox_options;

/* Zero the options (schema "public"). Blocks: no. Threads: any. */
FERRY_API void ferry_inbox_options_init(ferry_inbox_options *o);

/* Claim message_id for consumer inside the caller's open transaction (INSERT ... ON
 * CONFLICT DO NOTHING).
 * Returns: 0 with *claimed = 1 the first time, 0 when the id was already processed
 *   (committed by someone): then the caller rolls back and reports success.
 * Errors: FERRY_ESTATE when conn is not inside an open, healthy transaction
 *   (PQTRANS_INTRANS); FERRY_EINVAL for a bad consumer or a message_id that is not a
 *   canonical UUID text (8-4-4-4-12 hex; the value is not echoed); FERRY_EDB / FERRY_EIO
 *   for a SQL failure, the SQLSTATE in the message and the transaction left aborted for
 *   the caller to roll back.
 * Blocks: one round trip, without a deadline of its own (the session's statement_timeout
 *   applies). A concurrent claimer of the same id whose transaction has not ended yet makes
 *   this call wait (unique index) until it commits (then *claimed = 0) or rolls back (then
 *   *claimed = 1). */
FERRY_API int ferry_inbox_claim(PGconn *conn, const ferry_inbox_options *o, const char *consumer,
                                const char *message_id, int *claimed, ferry_error *err);

/* The effect ferry_inbox_run applies, on the same connection inside its transaction.
 * Returns FERRY_COMPLETED to commit; anything else rolls back and is returned as is. It
 * must not end the transaction itself. */
typedef ferry_outcome (*ferry_inbox_effect_fn)(PGconn *conn, void *userdata);

typedef struct ferry_inbox_result {
    int duplicate;    /* 1: the id was already processed, the effect was not run */
    char sqlstate[6]; /* SQLSTATE of the SQL failure that decided the outcome, else "" */
    char reason[512]; /* what happened when the outcome is not FERRY_COMPLETED, else "" */
} ferry_inbox_result;

/* BEGIN; claim; effect; COMMIT, on an idle connection (PQTRANS_IDLE). A duplicate rolls
 * back and returns FERRY_COMPLETED with res->duplicate = 1 (effect not run). Any failure
 * rolls back: no marker without the effect, no effect without the marker.
 * Returns the outcome:
 *   - the effect's own outcome when it returns anything but FERRY_COMPLETED (reason
 *     "effect returned ...");
 *   - FERRY_FAILED (transient) when BEGIN, the claim or the COMMIT fails with SQLSTATE
 *     40001 (serialization_failure), 40P01 (deadlock_detected), 57P01/57P02/57P03
 *     (shutdown, cannot connect now), class 08 (connection exception) or 55P03
 *     (lock_not_available), or the connection is gone (PQstatus CONNECTION_BAD);
 *   - FERRY_FAILED_PERMANENT when the COMMIT fails with a class 23 SQLSTATE (a deferred
 *     constraint of the effect's rows: another delivery would fail the same way);
 *   - FERRY_FAILED for every other SQL failure of BEGIN/claim/COMMIT (e.g. 42P01, the
 *     schema not migrated: retried with backoff while an operator fixes it), and when the
 *     effect returned FERRY_COMPLETED but left the transaction aborted (one of its
 *     statements failed): reason "effect left the transaction aborted";
 *   - FERRY_FAILED_PERMANENT for a bad consumer or message id, or a connection not idle.
 *   A COMMIT whose outcome is unknown (the connection was lost during it) is FERRY_FAILED:
 *   if it did commit, the redelivery finds the marker and is a duplicate, so retrying is
 *   safe.
 *   res (may be NULL) gets the details. reason holds the SQLSTATE and PostgreSQL's primary
 *   message (never its DETAIL); the primary message can quote a value from a statement
 *   (e.g. `invalid input syntax for type integer: "x"`), so a caller that stores reasons
 *   where payload values must not go should log only res->sqlstate.
 * Blocks: on the server for BEGIN, the claim (see ferry_inbox_claim: a concurrent
 *   delivery of the same id waits here), the effect and the COMMIT; no deadline of its
 *   own. */
FERRY_API ferry_outcome ferry_inbox_run(PGconn *conn, const ferry_inbox_options *o,
                                        const char *consumer, const char *message_id,
                                        ferry_inbox_effect_fn effect, void *userdata,
                                        ferry_inbox_result *res);

/* ferry_inbox_run for a worker handler, with the job's event id (ferry_job_event_id) as
 * the message id. A job without a usable id (not an envelope, or an eventId that is not a
 * UUID) is FERRY_FAILED_PERMANENT with the failure reason "inbox CONSUMER: job has no
 * usable eventId (...)". Other failures set the job's failure reason
 * (ferry_job_set_failure) to "inbox CONSUMER: " + res.reason (which may quote a value, see
 * ferry_inbox_run). Duplicates return FERRY_COMPLETED.
 * Threads: only from inside the handler, on its job. Blocks: as ferry_inbox_run. */
FERRY_API ferry_outcome ferry_inbox_run_job(PGconn *conn, const ferry_inbox_options *o,
                                            const char *consumer, ferry_job *job,
                                            ferry_inbox_effect_fn effect, void *userdata);

/* Retention: delete the markers processed more than older_than_s seconds ago, in batches
 * of `batch` rows (0 = FERRY_INBOX_BATCH_DEFAULT, at most FERRY_INBOX_BATCH_MAX), each its
 * own statement (and, on an idle connection, its own transaction), until none is left.
 * Returns: 0 with *deleted = the total (also set to the rows deleted so far on failure).
 * Errors: FERRY_EINVAL for older_than_s < 0 or a batch out of range; FERRY_ESTATE when conn
 *   is not idle (PQTRANS_IDLE); FERRY_EDB / FERRY_EIO.
 * Blocks: one round trip per batch, no deadline of its own. */
FERRY_API int ferry_inbox_cleanup(PGconn *conn, const ferry_inbox_options *o,
                                  long long older_than_s, long batch, long long *deleted,
                                  ferry_error *err);

typedef struct ferry_inbox_consumer_status {
    char *consumer;
    long long rows;
    long long oldest_epoch_ms; /* processed_at of its oldest marker, Unix ms */
    long long newest_epoch_ms; /* of its newest */
} ferry_inbox_consumer_status;

typedef struct ferry_inbox_status {
    size_t n;                               /* consumers, most rows first */
    ferry_inbox_consumer_status *consumers; /* n entries */
    long long total_rows;
    long long now_epoch_ms; /* the server's clock when read, for ages */
} ferry_inbox_status;

/* Markers per consumer, read in one statement.
 * Returns: 0 with *out (free with ferry_inbox_status_free).
 * Errors: FERRY_EINVAL (bad schema, out NULL), FERRY_ENOMEM, FERRY_EDB (e.g. 42P01 when
 *   the schema is not migrated), FERRY_EIO.
 * Blocks: one round trip, no deadline of its own. */
FERRY_API int ferry_inbox_status_get(PGconn *conn, const ferry_inbox_options *o,
                                     ferry_inbox_status **out, ferry_error *err);

/* Free a status (NULL is fine). Blocks: no. */
FERRY_API void ferry_inbox_status_free(ferry_inbox_status *s);

#ifdef __cplusplus
}
#endif

#endif

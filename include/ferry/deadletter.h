/* ferry/deadletter.h - dead letters: every final job failure recorded in PostgreSQL, where
 * an operator can list it, see why it failed, and redrive it (re-enqueue it) or purge it.
 *
 * Rows live in <schema>.dead_letters, created by `ferry migrate` (docs/dead-letters.md has
 * the columns). A row is one final failure of one job, told apart by (prefix, queue, job
 * id, job creation time, attempts made): recording the same failure twice, by a worker's
 * recorder and by a sync of the failed set, writes one row. Every redrive and purge, dry
 * runs included, leaves audit rows in <schema>.dead_letter_redrives.
 *
 * Three ways rows are written:
 *   - a worker's recorder (ferry_dlq_recorder_*): its own thread and connection and a
 *     bounded queue, plugged into ferry_worker_options.final_failure, so recording never
 *     holds up a handler and a database outage only delays it;
 *   - ferry_dlq_sync: every job in a queue's failed set that has no row yet, whoever failed
 *     it (a Node worker, a worker without a recorder, a failure the recorder missed);
 *   - ferry_dlq_record: one failure, in the caller's own code.
 *
 * For every function taking a PGconn unless it says otherwise:
 * Threads: libpq's rule (one thread at a time on a connection).
 * Blocks: its round trips, without a deadline of their own (the session's
 *   statement_timeout applies).
 * Errors: FERRY_EINVAL naming a bad argument; PostgreSQL failures as FERRY_EDB (with
 *   "SQLSTATE xxxxx" in the message) or FERRY_EIO (connection lost).
 * Ownership: strings passed in are borrowed for the call.
 * Schema: o->schema as in outbox.h ("Naming the schema"); NULL options = "public". */
#ifndef FERRY_DEADLETTER_H
#define FERRY_DEADLETTER_H

#include "common.h"
#include "metrics.h"
#include "queue.h"
#include "worker.h"

#include <libpq-fe.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FERRY_DLQ_ID_STRLEN 36            /* a row id: a UUID in text form */
#define FERRY_DLQ_ACTOR_MAX 200           /* who redrives or purges: printable ASCII */
#define FERRY_DLQ_LIMIT_DEFAULT 100       /* rows ferry_dlq_list returns by default */
#define FERRY_DLQ_LIMIT_MAX 1000000       /* rows one list, redrive or purge call handles */
#define FERRY_DLQ_FILTER_TEXT_MAX 1024    /* a filter's queue, name or error text */
#define FERRY_DLQ_RECORDER_CAPACITY 10000 /* failures a recorder holds by default */
#define FERRY_DLQ_IDS_MAX 1000            /* row ids one filter's id list may hold */

typedef struct ferry_dlq_options {
    const char *schema; /* NULL = "public" */
} ferry_dlq_options;

/* Zero the options (schema "public"). Threads: any. Blocks: no. */
FERRY_API void ferry_dlq_options_init(ferry_dlq_options *o);

/* One final failure to record. Text that is not valid UTF-8 is stored with each bad byte
 * replaced by U+FFFD; data that is not JSON PostgreSQL's jsonb takes is kept as text
 * (data_text) instead of being refused. */
typedef struct ferry_dlq_failure {
    const char *prefix;         /* the queue's key prefix; NULL = "bull" */
    const char *queue;          /* required, 1..FERRY_QUEUE_NAME_MAX bytes */
    const char *job_id;         /* required, 1..FERRY_JOB_FOREIGN_ID_MAX bytes */
    const char *job_name;       /* NULL = "" */
    const char *data;           /* the job's data text; NULL = "{}" */
    const char *opts;           /* the job's stored options text; NULL = none */
    const char *error;          /* failedReason; NULL = "" */
    const char *stacktrace;     /* the stored stacktrace JSON; NULL = none */
    long attempts_made;         /* BullMQ attemptsMade after the failure (>= 0) */
    long long job_timestamp_ms; /* the job's creation time (its hash's timestamp); 0 = none */
    long long failed_at_ms;     /* when it failed (finishedOn); 0 = now */
} ferry_dlq_failure;

/* Record one failure (INSERT ... ON CONFLICT DO NOTHING), in its own statement.
 * Returns: 0 with *inserted (may be NULL) 1 when a row was written, 0 when that failure
 *   was already recorded.
 * Errors: FERRY_EINVAL (missing queue or job id, over a limit); FERRY_EDB / FERRY_EIO. */
FERRY_API int ferry_dlq_record(PGconn *conn, const ferry_dlq_options *o, const ferry_dlq_failure *f,
                               int *inserted, ferry_error *err);

/* ---- the recorder ------------------------------------------------------------------ */

typedef struct ferry_dlq_recorder ferry_dlq_recorder;

typedef struct ferry_dlq_recorder_options {
    const char *database_url; /* URL or conninfo; NULL or "" = libpq's defaults (PG* env) */
    const char *schema;       /* NULL = "public" */
    const char *prefix;       /* prefix of the queues whose failures it records; NULL = "bull" */
    size_t capacity;          /* failures held while not yet written; 0 = the default */
    int connect_timeout_ms;   /* per connection attempt; 0 = 5000 */
    int statement_timeout_ms; /* per batch written; 0 = 5000 */
    int retry_min_ms;         /* first pause after a failed connection; 0 = 200 */
    int retry_max_ms;         /* the pause doubles up to this; 0 = 10000 */
    ferry_log_fn log;         /* what it has to say (outages, misses); NULL = silent */
    void *log_userdata;
    /* When set, counts ferry_dead_letters_total{queue} (rows this recorder wrote; a
     * duplicate is not counted). The family is found or registered at start, so several
     * recorders (and workers) may share one registry; it must outlive the recorder. */
    ferry_metrics *metrics;
} ferry_dlq_recorder_options;

/* Zero the options (every default). Threads: any. Blocks: no. */
FERRY_API void ferry_dlq_recorder_options_init(ferry_dlq_recorder_options *o);

/* Start a recorder: validates the options and starts its thread, which connects on its own
 * (an unreachable database is retried with backoff, never an error here).
 * Returns: 0 and *out, ended with ferry_dlq_recorder_close.
 * Errors: FERRY_EINVAL (bad schema, prefix, database URL syntax, a negative or inverted
 *   timeout), the registry's error when the metrics family cannot be registered,
 *   FERRY_ENOMEM, FERRY_EIO when the thread cannot start.
 * Blocks: no. Threads: any. Ownership: options and their strings are copied; the log
 *   callback's userdata is not owned and must outlive close. */
FERRY_API int ferry_dlq_recorder_start(const ferry_dlq_recorder_options *o,
                                       ferry_dlq_recorder **out, ferry_error *err);

/* Hand one failure to the recorder (copied), to be written by its thread.
 * Returns: 0; FERRY_ETOOBIG when the recorder already holds `capacity` failures (the miss
 *   is counted and logged; the job stays in the queue's failed set for ferry_dlq_sync);
 *   FERRY_EINVAL for a failure without queue or job id; FERRY_ENOMEM; FERRY_ECLOSED after
 *   close began.
 * Blocks: no (a mutex held for a copy). Threads: any; several at once. */
FERRY_API int ferry_dlq_recorder_push(ferry_dlq_recorder *r, const ferry_dlq_failure *f);

/* A ferry_worker_options.final_failure for a recorder: set final_failure_userdata to the
 * recorder. Records the job (queue, id, name, data, opts, timestamp), the reason it was
 * failed with, the stack trace it stored and its attempts made after the failure, under
 * the recorder's prefix (which must be the worker's). Never blocks, never fails the
 * worker: a miss is counted and logged (see ferry_dlq_recorder_push). */
FERRY_API void ferry_dlq_recorder_final_failure(const ferry_job *job, const char *reason,
                                                void *recorder);

typedef struct ferry_dlq_recorder_stats {
    long long recorded;   /* rows written */
    long long duplicates; /* failures found already recorded */
    long long missed;     /* failures not recorded: queue full, refused by the database, or
                             still pending at close; each also logged */
    long long pending;    /* held, not yet written */
    long long outages;    /* times the connection was lost or could not be made */
    int connected;        /* 1 while it has a working connection */
} ferry_dlq_recorder_stats;

/* A snapshot of the counters. Threads: any. Blocks: no. */
FERRY_API void ferry_dlq_recorder_get_stats(ferry_dlq_recorder *r, ferry_dlq_recorder_stats *out);

/* Wait until every failure handed over so far is written (or missed), or timeout_ms passes.
 * Returns: 0 when none is pending; FERRY_ETIMEDOUT otherwise. Blocks: up to timeout_ms.
 * Threads: any. */
FERRY_API int ferry_dlq_recorder_flush(ferry_dlq_recorder *r, int timeout_ms);

/* Stop: write what is pending for up to deadline_ms (0 = stop at once), count and log the
 * rest as missed (their jobs stay in the failed sets, for ferry_dlq_sync), stop the thread,
 * free everything. NULL accepted. Call it after the workers using it have closed.
 * Blocks: up to deadline_ms plus one connect or statement timeout (the attempt under way). */
FERRY_API void ferry_dlq_recorder_close(ferry_dlq_recorder *r, int deadline_ms);

/* ---- sync from a failed set ------------------------------------------------------------ */

typedef struct ferry_dlq_sync_stats {
    long long scanned;  /* job ids read from the failed set */
    long long recorded; /* rows written */
    long long already;  /* failures that had a row */
    long long vanished; /* ids whose job was gone when read (removed meanwhile) */
} ferry_dlq_sync_stats;

/* Progress of a long call (sync, redrive, purge): done of total (total -1 when unknown). */
typedef void (*ferry_dlq_progress_fn)(long long done, long long total, void *userdata);

/* Record every job in q's failed set that has no row yet, reading the set newest first in
 * pages of 1000 (a job failing during the sync may be seen twice, which records nothing
 * twice; one failing after the sync started may be left for the next). Rows are written
 * under q's prefix and marked recorded_by "sync". Each page is one transaction.
 * Returns: 0 with *stats (may be NULL) filled; on failure *stats says how far it got.
 * Errors: Redis transport errors from q; FERRY_EDB / FERRY_EIO.
 * Blocks: a round trip per page and per job on Redis, one transaction per page.
 * Threads: q may be shared (its own lock); conn as above. */
FERRY_API int ferry_dlq_sync(PGconn *conn, const ferry_dlq_options *o, ferry_queue *q,
                             ferry_dlq_progress_fn progress, void *progress_userdata,
                             ferry_dlq_sync_stats *stats, ferry_error *err);

/* ---- list, show -------------------------------------------------------------------- */

/* Which rows a list, redrive or purge takes. Every member set narrows the choice. */
typedef struct ferry_dlq_filter {
    const char *id;             /* one row by id (UUID text); NULL = any */
    const char *prefix;         /* NULL = any */
    const char *queue;          /* NULL = any */
    const char *name;           /* job name, exact; NULL = any */
    const char *error_contains; /* text in the error, case-insensitive; NULL = any */
    long long since_ms;         /* failed at or after (ms since the epoch); 0 = no bound */
    long long until_ms;         /* failed before; 0 = no bound */
    long long limit;            /* at most this many rows, oldest failure first; 0 = list:
                                   FERRY_DLQ_LIMIT_DEFAULT, redrive / purge: all (up to
                                   FERRY_DLQ_LIMIT_MAX) */
    /* Only rows redriven fewer than this many times; 0 = any. With a redrive's `again`,
     * this is what makes it resumable: `again` with redriven_fewer_than 2 takes the rows
     * redriven once, and run again after a crash takes only those still at one. */
    long redriven_fewer_than;
    /* Only rows redriven at least this many times (1 = rows redriven before); 0 = any. */
    long redriven_at_least;
    /* Only these rows: ids[0..nids), each a row id (UUID text, either case), 1..
     * FERRY_DLQ_IDS_MAX of them (a repeat counts once), and only while they still match the
     * rest of the filter: "execute the plan a dry run showed". ids NULL (nids 0) = any. A
     * redrive or purge reports every listed id it does not take as FERRY_DLQ_SKIPPED with
     * only entry->id set, and counts it in stats->skipped (not in matched). Its reason:
     * "no longer matches the filter (...)" for a row still there (redriven meanwhile, say);
     * "deleted since it was chosen (purged)" when an executed purge deleted it; "deleted
     * since it was chosen" when the audit saw the row but no purge did; "not found (never
     * existed or deleted since)" when the audit never saw the id (no row can tell more). */
    const char *const *ids;
    size_t nids;
} ferry_dlq_filter;

/* One row. Strings owned by the list (NULL when absent). */
typedef struct ferry_dlq_entry {
    char id[FERRY_DLQ_ID_STRLEN + 1];
    char *prefix, *queue, *job_id, *job_name;
    char *data; /* the JSON data as PostgreSQL prints jsonb, or the text kept */
    int data_is_json;
    char *opts, *error, *stacktrace;
    char *recorded_by, *redriven_by, *redrive_job_id;
    long attempts_made;
    long redrive_count;
    long long job_timestamp_ms, failed_at_ms, redriven_at_ms; /* redriven_at 0 = never */
} ferry_dlq_entry;

typedef struct ferry_dlq_list {
    ferry_dlq_entry *entries;
    size_t n;
    long long total; /* rows matching the filter, ignoring the limit */
} ferry_dlq_list;

/* The rows matching f (NULL = all), oldest failure first.
 * Returns: 0 with *out. Errors: FERRY_EINVAL for a bad filter (an id that is not a UUID,
 *   an id list that is empty, over FERRY_DLQ_IDS_MAX or holds a non-UUID, since after
 *   until, a text over FERRY_DLQ_FILTER_TEXT_MAX, a limit out of range); FERRY_EDB /
 *   FERRY_EIO. Blocks: two statements.
 * Ownership: free *out with ferry_dlq_list_free. */
FERRY_API int ferry_dlq_list_get(PGconn *conn, const ferry_dlq_options *o,
                                 const ferry_dlq_filter *f, ferry_dlq_list **out, ferry_error *err);
FERRY_API void ferry_dlq_list_free(ferry_dlq_list *l);

/* ---- redrive, purge ---------------------------------------------------------------- */

typedef enum ferry_dlq_item_status {
    FERRY_DLQ_WOULD = 0,   /* dry run: what would be done */
    FERRY_DLQ_DONE = 1,    /* re-enqueued (redrive) or deleted (purge) */
    FERRY_DLQ_SKIPPED = 2, /* redriven before (without again), or taken by a concurrent
                              redrive, or gone meanwhile: `reason` says which */
    FERRY_DLQ_REFUSED = 3, /* cannot be redriven as stored (`reason` says why): the row is
                              left as it was and the run goes on */
} ferry_dlq_item_status;

/* What happened to one row. Valid only during the callback. For a row SKIPPED because it
 * was deleted or locked meanwhile, only entry->id is set (the other strings are NULL). */
typedef struct ferry_dlq_item {
    const ferry_dlq_entry *entry;
    const char *new_job_id; /* redrive: the job id it gets (or would get); purge: NULL */
    int status;             /* ferry_dlq_item_status */
    const char *reason;     /* for SKIPPED / REFUSED, and DONE when the job was already in
                               the queue (an earlier run stopped before recording it); else
                               NULL */
} ferry_dlq_item;

typedef void (*ferry_dlq_item_fn)(const ferry_dlq_item *item, void *userdata);

typedef struct ferry_dlq_action_options {
    int execute;             /* 0 = dry run (the default): change nothing but the audit */
    int again;               /* redrive: take rows redriven before too */
    const char *actor;       /* who, for the audit: 1..FERRY_DLQ_ACTOR_MAX printable ASCII */
    const char *filter_text; /* how the operator chose the rows, for the audit; NULL = built
                                from the filter */
    const ferry_redis_options *redis; /* redrive: where the queues are; NULL = defaults */
    ferry_dlq_item_fn item;           /* each row's result, in order; NULL = none */
    ferry_dlq_progress_fn progress;   /* every 100 rows and at the end; NULL = none */
    void *userdata;                   /* for item and progress */
    /* Redrive only: when set, counts every row's result in
     * ferry_redrives_total{mode="dry_run"|"execute",result="done"|"would"|"skipped"|
     * "refused"} (found or registered on first use; must outlive the call). Purges are not
     * counted there. */
    ferry_metrics *metrics;
} ferry_dlq_action_options;

typedef struct ferry_dlq_action_stats {
    long long matched, done, would, skipped, refused;
} ferry_dlq_action_stats;

/* Zero the options (dry run, actor unset). Threads: any. Blocks: no. */
FERRY_API void ferry_dlq_action_options_init(ferry_dlq_action_options *o);

/* Redrive the rows matching f (NULL = all) that were not redriven before (all of them with
 * a->again): each becomes a new job in its queue (same prefix, name and data; its stored
 * options without jobId, delay, repeat, parent and deduplication) with the id
 * "dlq-<row id>-<redrive count + 1>". The id depends only on the row and its count, so a
 * run that stops half-way (crash, Redis or PostgreSQL lost) and is run again creates no
 * second job: BullMQ keeps the first job of a custom id. One transaction per row: the row
 * is locked (FOR UPDATE SKIP LOCKED: rows a concurrent redrive holds are skipped), the job
 * added, then the row's redrive count, time, actor and new job id updated and an audit row
 * written. A dry run (a->execute 0) adds nothing, changes no row, and writes one audit row
 * per row it would redrive (dry_run true).
 * Returns: 0 with *stats (may be NULL) filled, also on failure as far as it got.
 * Errors: FERRY_EINVAL for a bad filter or actor; Redis errors stop the run (the row being
 *   redriven is left unchanged); FERRY_EDB / FERRY_EIO.
 * Blocks: per row a transaction and, executing, two Redis round trips.
 * Threads: conn as above; callbacks on the calling thread. */
FERRY_API int ferry_dlq_redrive(PGconn *conn, const ferry_dlq_options *o, const ferry_dlq_filter *f,
                                const ferry_dlq_action_options *a, ferry_dlq_action_stats *stats,
                                ferry_error *err);

/* Delete the rows matching f (NULL = all), in transactions of up to 1000 rows, each
 * writing an audit row per deleted row (action "purge") first. A dry run deletes nothing
 * and audits each row it would delete (dry_run true). Redis is not touched.
 * Returns, Errors, Blocks, Threads: as ferry_dlq_redrive (without Redis). */
FERRY_API int ferry_dlq_purge(PGconn *conn, const ferry_dlq_options *o, const ferry_dlq_filter *f,
                              const ferry_dlq_action_options *a, ferry_dlq_action_stats *stats,
                              ferry_error *err);

/* ---- the audit history --------------------------------------------------------------- */

#define FERRY_DLQ_AUDIT_LIMIT_DEFAULT 100 /* audit rows ferry_dlq_audit_list returns by default */

/* Which audit rows to read. A zeroed struct takes the newest FERRY_DLQ_AUDIT_LIMIT_DEFAULT. */
typedef struct ferry_dlq_audit_filter {
    const char *dead_letter_id; /* only the history of this row (UUID text); NULL = any */
    long long since_ms;         /* only actions at or after this instant; 0 = no bound */
    long long limit;            /* at most this many, newest first; 0 = the default, at most
                                   FERRY_DLQ_LIMIT_MAX */
} ferry_dlq_audit_filter;

/* One audit row: one redrive or purge of one dead letter (dry runs included). Strings
 * owned by the list; NULL when absent. */
typedef struct ferry_dlq_audit_entry {
    long long id; /* the audit row's own id, increasing */
    char dead_letter_id[FERRY_DLQ_ID_STRLEN + 1];
    char *action; /* "redrive" or "purge" */
    char *prefix, *queue, *job_id;
    char *new_job_id; /* redrive: the job id given (or that would be given) */
    char *actor;      /* who */
    char *filter;     /* how the rows were chosen (the action's filter text) */
    char *note;
    int dry_run;
    long long at_ms; /* when */
} ferry_dlq_audit_entry;

typedef struct ferry_dlq_audit_rows {
    ferry_dlq_audit_entry *entries;
    size_t n;
    long long total; /* rows matching the filter, ignoring the limit */
} ferry_dlq_audit_rows;

/* Read the redrive / purge history (<schema>.dead_letter_redrives) matching f (NULL = a
 * zeroed filter), newest first. Rows stay after their dead letter is purged.
 * Returns: 0 with *out.
 * Errors: FERRY_EINVAL for an id that is not a UUID, a negative since_ms, a limit out of
 *   range; FERRY_EDB / FERRY_EIO.
 * Blocks: two statements. Threads: conn as above.
 * Ownership: free *out with ferry_dlq_audit_rows_free (NULL accepted; any thread, no
 *   blocking). */
FERRY_API int ferry_dlq_audit_list(PGconn *conn, const ferry_dlq_options *o,
                                   const ferry_dlq_audit_filter *f, ferry_dlq_audit_rows **out,
                                   ferry_error *err);
FERRY_API void ferry_dlq_audit_rows_free(ferry_dlq_audit_rows *l);

#ifdef __cplusplus
}
#endif

#endif

/* ferry/outbox.h - the transactional outbox on PostgreSQL and the relay that moves its
 * events into queues.
 *
 * An application never writes to PostgreSQL and Redis separately: it writes its own rows
 * and an event row (ferry_outbox_append) in one transaction. A relay (ferry_relay, run by
 * `ferry relay`) adds one job per route target for each committed event (jobId = event id,
 * data = the envelope {eventId, traceId, payload}) and then marks the rows published.
 * Delivery is at least once: a crash between adding jobs and committing republishes the
 * rows: duplicates (absorbed by jobId while the job exists, by inboxes after), never
 * losses. docs/outbox.md has how rows are claimed, woken and set aside.
 *
 * Tables (created and upgraded by ferry_outbox_migrate / `ferry migrate`, column names
 * that applications commonly use): outbox_events, processed_messages, dead_letters
 * (+ dead_letter_redrives), ferry_tasks and the version table ferry_schema_migrations, all
 * in one schema (default "public"). Needs PostgreSQL 13 or later.
 *
 * For every function below unless it says otherwise:
 * Threads: the functions taking a PGconn follow libpq's rule (one thread at a time on a
 *   connection, separate connections in parallel); the rest say so where they are declared.
 * Errors: PostgreSQL failures come back as FERRY_EDB (an error the server reported),
 *   FERRY_EIO (connection refused or lost) or FERRY_ETIMEDOUT (a deadline passed); the
 *   message carries the server's text and, when the server sent one, "SQLSTATE xxxxx"
 *   verbatim.
 * Ownership: strings passed in are borrowed for the call. */
#ifndef FERRY_OUTBOX_H
#define FERRY_OUTBOX_H

#include "common.h"
#include "metrics.h"
#include "redis.h"

/* libpq's PGconn, from libpq's own header: a second typedef of it here would be an error in
 * C99 (-Wpedantic) when a program includes <libpq-fe.h> too. Programs including ferry.h
 * therefore need libpq's include directory; `pkg-config --cflags ferry` (Requires: libpq)
 * and the CMake package's ferry::ferry target carry it. */
#include <libpq-fe.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FERRY_OUTBOX_DEFAULT_SCHEMA "public"
#define FERRY_OUTBOX_SCHEMA_MAX 63                      /* bytes (PostgreSQL NAMEDATALEN - 1) */
#define FERRY_OUTBOX_TOPIC_MAX 255                      /* bytes */
#define FERRY_OUTBOX_TRACE_ID_MAX 128                   /* bytes of an opaque trace id */
#define FERRY_OUTBOX_DEFAULT_MAX_PAYLOAD (512u * 1024u) /* bytes of payload JSON text */
#define FERRY_OUTBOX_MAX_PAYLOAD_LIMIT (64u << 20)      /* largest max_payload_bytes accepted */
#define FERRY_UUID_STRLEN 36                            /* "xxxxxxxx-xxxx-7xxx-yxxx-xxxxxxxxxxxx" */

/* ---- ids ---------------------------------------------------------------------------- */

/* Write a new UUIDv7 (RFC 9562: 48-bit Unix milliseconds, a 12-bit counter that keeps ids
 * made by this process in the same millisecond increasing, 62 random bits) as 36
 * lower-case characters plus NUL into out. Ids sort by creation time.
 * Returns: 0. Errors: FERRY_EIO when the system random source fails.
 * Threads: any. Blocks: no. */
FERRY_API int ferry_uuid7(char out[FERRY_UUID_STRLEN + 1]);

/* ---- schema ------------------------------------------------------------------------- */

/* Naming the schema. Every call names the outbox's schema one way: the `schema` member of
 * its options struct (ferry_migrate_options, ferry_outbox_options, ferry_relay_options),
 * the name as PostgreSQL stores it, unquoted: 1..FERRY_OUTBOX_SCHEMA_MAX bytes of UTF-8
 * without NUL, which ferry quotes itself in every statement (so "Shop" and "we\"ird" are
 * used exactly as written, case kept). NULL schema, or NULL options, =
 * FERRY_OUTBOX_DEFAULT_SCHEMA. */

/* Called once per migration: before it is applied (ferry_outbox_migrate), or instead of
 * applying it (dry run, ferry_outbox_migrations_sql). `sql` is the migration's text with
 * the schema substituted.
 * Threads: on the calling thread. Ownership: all strings are valid only during the call. */
typedef void (*ferry_migration_fn)(int version, const char *name, const char *sql, void *userdata);

#define FERRY_MIGRATE_TIMEOUT_MAX_MS 86400000 /* a day */

typedef struct ferry_migrate_options {
    const char *schema; /* NULL = "public"; created when missing */
    int dry_run;        /* 1 = report the pending migrations through `fn`, change nothing */
    int timeout_ms;     /* lock_timeout and statement_timeout of the migration
                           transaction (waiting for another replica's migration included);
                           0 = 60000; at most FERRY_MIGRATE_TIMEOUT_MAX_MS */
    ferry_migration_fn fn;
    void *userdata;
} ferry_migrate_options;

/* Fill *o with defaults (all zero / NULL: schema "public", no dry run, timeout 60000 ms,
 * no fn; NULL accepted). Threads: any. Blocks: no; no allocation. */
FERRY_API void ferry_migrate_options_init(ferry_migrate_options *o);

/* Bring the schema to the version built into this library. All pending migrations run in
 * one READ COMMITTED transaction (whatever default_transaction_isolation says) under a
 * per-schema lock, so any number of replicas may call this at once: one applies, the
 * others wait and then find nothing to do. Each applied version is recorded in
 * <schema>.ferry_schema_migrations. Idempotent; the SQL adopts tables an application
 * created itself with these columns (CREATE ... IF NOT EXISTS, ADD COLUMN IF NOT EXISTS).
 * `conn` must be connected and idle (no open transaction); it is left idle.
 * Returns: 0; *applied (may be NULL) receives the number of migrations applied (or
 *   pending, for a dry run).
 * Errors: FERRY_EINVAL (bad schema, timeout, NULL conn), FERRY_ESTATE (conn not idle), the
 *   PostgreSQL errors above.
 * Blocks: bounded by timeout_ms on the server (waiting for another replica included). */
FERRY_API int ferry_outbox_migrate(PGconn *conn, const ferry_migrate_options *opts, int *applied,
                                   ferry_error *err);

/* Report every built-in migration (with opts->schema substituted) through opts->fn (with
 * opts->userdata), in order, without a database; dry_run and timeout_ms do not apply.
 * opts may be NULL (schema "public", nothing reported).
 * Returns: 0. Errors: FERRY_EINVAL for a bad schema name; FERRY_ENOMEM.
 * Threads: any. Blocks: no (pure). */
FERRY_API int ferry_outbox_migrations_sql(const ferry_migrate_options *opts, ferry_error *err);

/* Returns: the newest schema version this library knows (a constant). Cannot fail.
 * Threads: any. Blocks: no. */
FERRY_API int ferry_outbox_schema_version(void);

/* ---- appending events --------------------------------------------------------------- */

typedef struct ferry_outbox_event {
    const char *topic;        /* required: 1..255 bytes of UTF-8 without whitespace, control
                                 characters or '#' (what a routes file can name) */
    const char *aggregate_id; /* required: UUID text (the column is uuid NOT NULL) */
    /* required: one JSON value (an object, usually) that PostgreSQL's jsonb
     * accepts, which is stricter than JSON: no \u0000 escape, no lone UTF-16 surrogate
     * escape (\uD800-\uDBFF must be followed by \uDC00-\uDFFF), numbers within
     * numeric's range (below 10^131072, at most 16383 digits after the decimal point
     * counting an exponent's shift, exponent below 2^30 - 1 in magnitude); checked
     * before anything is sent */
    const char *payload_json;
    /* optional: a W3C traceparent ("00-<32 hex>-<16 hex>-<2 hex>", validated), or an
     * opaque id of 1..128 printable ASCII characters; stored as given and copied into
     * the job envelope's traceId. NULL = none. */
    const char *trace_id;
} ferry_outbox_event;

typedef struct ferry_outbox_options {
    const char *schema;       /* NULL = "public" */
    size_t max_payload_bytes; /* 0 = FERRY_OUTBOX_DEFAULT_MAX_PAYLOAD; at most
                                 FERRY_OUTBOX_MAX_PAYLOAD_LIMIT */
} ferry_outbox_options;

/* Fill *o with defaults (all zero / NULL: schema "public",
 * FERRY_OUTBOX_DEFAULT_MAX_PAYLOAD; NULL accepted). Threads: any. Blocks: no; no
 * allocation. */
FERRY_API void ferry_outbox_options_init(ferry_outbox_options *o);

/* Insert one event into <schema>.outbox_events inside the caller's open transaction
 * (PQtransactionStatus must be PQTRANS_INTRANS, so an event can never be committed apart
 * from the application's rows). The event is published only if the caller commits. One
 * parameterised INSERT; the id is a new UUIDv7. `opts` may be NULL.
 * Returns: 0; the id (36 chars + NUL) is written to id_out when it is non-NULL.
 * Errors: FERRY_EINVAL naming the bad field, FERRY_ETOOBIG for a payload over the limit
 *   (nothing sent to the server in both cases); FERRY_ESTATE outside a transaction or in a
 *   failed one; FERRY_EDB for a server error (message with SQLSTATE): the caller's
 *   transaction is then aborted, as with any failed statement.
 * Blocks: one round trip, without its own deadline: the caller's statement_timeout
 *   applies. Threads: libpq's rule on conn. */
FERRY_API int ferry_outbox_append(PGconn *conn, const ferry_outbox_options *opts,
                                  const ferry_outbox_event *ev, char id_out[FERRY_UUID_STRLEN + 1],
                                  ferry_error *err);

/* ---- routes ------------------------------------------------------------------------- */

/* A routes file: one topic per line followed by one or more queue:job-name targets
 * (fan-out), separated by blanks; `#` starts a comment to the end of the line.
 *     order.placed      payments:capture-payment  notifications:order-confirmation
 *     order.cancelled   payments:void-authorization
 * Limits: 1 MiB per file, 4096 bytes per line, 10000 topics, 64 targets per topic;
 * names as ferry_outbox_event.topic; queue names without ':' (at most
 * FERRY_QUEUE_NAME_MAX bytes, as every queue), job names at most FERRY_JOB_NAME_MAX bytes. A topic
 * may appear once, and a queue at most once per topic (its jobs share the event id as jobId, so a
 * second job in the same queue would be dropped as a duplicate). */
typedef struct ferry_routes ferry_routes;

/* Check a database URL before connecting: NULL or "" (libpq defaults), a postgresql:// or
 * postgres:// URI, or key=value conninfo, as libpq parses them.
 * Returns: 0 when libpq would read it as meant.
 * Errors: FERRY_EINVAL for anything else: libpq would take it as a database name on the
 *   default server, so a typo like "postgress://db/x" would quietly try the local one. So
 *   is a URL libpq would misread (an '@' after a '/' or a second '@': '/', '@' and '%' in
 *   the user name or password must be percent-encoded) and a port that is not a number.
 *   Error texts never quote the value (it may hold a password).
 * Threads: any. Blocks: no (pure). */
FERRY_API int ferry_outbox_database_url_check(const char *url, ferry_error *err);

#define FERRY_ROUTES_FILE_MAX (1u << 20)
#define FERRY_ROUTES_LINE_MAX 4096
#define FERRY_ROUTES_TOPICS_MAX 10000
#define FERRY_ROUTES_TARGETS_MAX 64

/* Parse a routes file's text[0..len). `filename` (may be NULL) names the source in errors.
 * Returns: 0 and *out, freed with ferry_routes_free.
 * Errors: FERRY_EINVAL reading "<filename>:<line>: <problem>"; FERRY_ETOOBIG over a limit
 *   above; FERRY_ENOMEM.
 * Threads: any. Blocks: no (pure). */
FERRY_API int ferry_routes_parse(const char *text, size_t len, const char *filename,
                                 ferry_routes **out, ferry_error *err);
/* Read and parse a routes file.
 * Returns, Errors: as ferry_routes_parse, and FERRY_EIO when it cannot be read,
 *   FERRY_ETOOBIG over FERRY_ROUTES_FILE_MAX.
 * Threads: any. Blocks: reads the file. */
FERRY_API int ferry_routes_load(const char *path, ferry_routes **out, ferry_error *err);
/* Free parsed routes. NULL accepted.
 * Threads: no other thread may still be using r. */
FERRY_API void ferry_routes_free(ferry_routes *r);

/* Topics in file order, and the targets of each. A parsed ferry_routes is immutable, so
 * these may be called from any thread. Blocks: no.
 * Ownership: returned strings are borrowed from r, valid until ferry_routes_free. */
FERRY_API size_t ferry_routes_topic_count(const ferry_routes *r);
FERRY_API const char *ferry_routes_topic(const ferry_routes *r, size_t i);
/* Predicate. Returns: 1 when the topic has a route, else 0. Cannot fail. */
FERRY_API int ferry_routes_has_topic(const ferry_routes *r, const char *topic);
FERRY_API size_t ferry_routes_target_count(const ferry_routes *r, size_t topic_index);
/* Target j of topic i.
 * Returns: 0, *queue and *job_name (borrowed). Errors: FERRY_EINVAL for an index out of
 *   range. */
FERRY_API int ferry_routes_target(const ferry_routes *r, size_t topic_index, size_t j,
                                  const char **queue, const char **job_name);

/* ---- status ------------------------------------------------------------------------- */

#define FERRY_OUTBOX_STATUS_TOPICS_MAX 1000 /* topics listed; the totals count them all */

typedef struct ferry_outbox_topic_status {
    char *topic;
    long long unpublished; /* rows waiting */
    long long with_errors; /* of those, rows with a last_error */
    long long quarantined; /* of those, rows set aside as unpublishable */
    double oldest_age_s; /* age of its oldest unpublished row (0 for a created_at in the future) */
    int known;           /* 1 when the routes given have the topic (-1: no routes given) */
} ferry_outbox_topic_status;

typedef struct ferry_outbox_status {
    int schema_version;    /* applied version (0 = not migrated) */
    long long unpublished; /* all unpublished rows */
    double oldest_age_s; /* age of the oldest unpublished row; 0 when none (or created_at is in the
                            future) */
    long long with_errors;  /* unpublished rows with a last_error */
    long long quarantined;  /* unpublished rows the relay set aside (quarantined_at) */
    long long unknown_rows; /* unpublished rows whose topic has no route (routes given) */
    size_t ntopics;         /* entries in topics[] (unpublished rows, by topic) */
    int topics_truncated;   /* 1 when more topics existed than were listed */
    ferry_outbox_topic_status *topics;
} ferry_outbox_status;

/* Read the outbox's state (schema: opts->schema; max_payload_bytes does not apply): a few
 * aggregate queries, run in one read-only transaction. `routes` may be NULL (then
 * unknown_rows = 0 and every topic has known = -1). `conn` must be idle.
 * Returns: 0 and *out.
 * Errors: FERRY_EINVAL for a bad schema name; FERRY_ESTATE when conn has a transaction
 *   open or the schema has no ferry tables; the PostgreSQL errors above.
 * Blocks: a few statements, under the session's statement_timeout.
 * Ownership: *out is freed with ferry_outbox_status_free (NULL accepted). */
FERRY_API int ferry_outbox_status_get(PGconn *conn, const ferry_outbox_options *opts,
                                      const ferry_routes *routes, ferry_outbox_status **out,
                                      ferry_error *err);
FERRY_API void ferry_outbox_status_free(ferry_outbox_status *s);

/* Delete published rows of opts->schema (max_payload_bytes does not apply) older than
 * older_than_s seconds, at most `batch` rows per statement (0 = 1000, at most
 * FERRY_RELAY_RETENTION_BATCH_MAX), until none are left or max_batches statements ran
 * (0 = no limit). Each batch is its own transaction. `conn` must be idle. The relay runs
 * this as a singleton task (see ferry_relay_options.retention_s); it is public for
 * `ferry outbox cleanup`.
 * Returns: 0; *deleted (may be NULL) receives the count, also after a failure midway.
 * Errors: FERRY_EINVAL for a bad argument; the PostgreSQL errors above.
 * Blocks: one statement per batch. */
FERRY_API int ferry_outbox_cleanup(PGconn *conn, const ferry_outbox_options *opts,
                                   long long older_than_s, int batch, long long max_batches,
                                   long long *deleted, ferry_error *err);

/* ---- the relay ---------------------------------------------------------------------- */

typedef struct ferry_relay ferry_relay;

/* The relay's log callback is a ferry_log_fn (ferry/common.h: levels, what goes where);
 * this name is kept for source compatibility. */
typedef ferry_log_fn ferry_relay_log_fn;

/* What a relay event is about (ferry_relay_event.kind). */
typedef enum ferry_relay_event_kind {
    /* A batch committed with rows: `published` rows became `jobs` jobs, `quarantined` were
     * set aside in it (each also gets a QUARANTINED event); rows[] are the published ones.
     * New with the event callback: never a log line (one per batch). */
    FERRY_RELAY_EVENT_PUBLISHED = 1,
    /* One row set aside (quarantined_at), never to be retried: rows[0], `reason`. */
    FERRY_RELAY_EVENT_QUARANTINED = 2,
    /* A batch of `batch_rows` rows was not published (Redis or the database failed; rolled
     * back, attempts/last_error recorded when possible): `code`, `reason` (the error text),
     * retried after about `retry_in_ms`. rows is empty. */
    FERRY_RELAY_EVENT_BATCH_FAILED = 3,
    /* Unpublished rows of a topic no route names (once per topic per unknown_report_ms):
     * `topic`, `count` rows. */
    FERRY_RELAY_EVENT_UNKNOWN_TOPIC = 4,
    /* A retention run deleted `count` published rows older than `older_than_s` (`code` != 0
     * when it failed midway, `reason` then says why). Only runs that deleted rows or
     * failed. */
    FERRY_RELAY_EVENT_RETENTION = 5,
} ferry_relay_event_kind;

/* One outbox row of an event. Strings borrowed for the call; never the payload. */
typedef struct ferry_relay_event_row {
    const char *id;       /* the event id (canonical uuid text) = the jobs' jobId */
    const char *topic;    /* as stored (may hold any character: escape before printing) */
    const char *trace_id; /* the row's trace_id (a traceparent or an opaque id), NULL = none */
    size_t jobs;          /* jobs added for it (its route targets); 0 when set aside */
} ferry_relay_event_row;

/* A typed relay event (ferry_relay_options.event). Ownership: everything is borrowed for
 * the duration of the call. */
typedef struct ferry_relay_event {
    ferry_relay_event_kind kind;
    int level; /* a ferry_log_level */
    /* The event as one line of text, as the log callback gets it when `event` is NULL
     * ("relay: ..."); NULL for PUBLISHED (which has no line). */
    const char *message;
    const ferry_relay_event_row *rows;
    size_t nrows;
    size_t published, jobs, quarantined; /* PUBLISHED */
    long long duration_ms;               /* PUBLISHED: from the claim sent to the commit */
    size_t batch_rows;                   /* BATCH_FAILED */
    long long retry_in_ms;               /* BATCH_FAILED */
    int code;                            /* BATCH_FAILED, RETENTION: the ferry_err, else 0 */
    const char *reason;                  /* QUARANTINED, BATCH_FAILED, RETENTION; else NULL */
    const char *topic;                   /* UNKNOWN_TOPIC */
    long long count;                     /* UNKNOWN_TOPIC: rows; RETENTION: rows deleted */
    long long older_than_s;              /* RETENTION */
} ferry_relay_event;

/* Typed relay events: `userdata` is ferry_relay_options.log_userdata. Called under the same
 * rules as the log callback (the relay's threads, one call at a time, with log calls too). */
typedef void (*ferry_relay_event_fn)(const ferry_relay_event *ev, void *userdata);

/* Test-only fault injection: called at named points ("relay_after_publish": the jobs of a
 * batch were added to Redis and its rows are not yet committed as published). A test hook
 * may kill the process there. NULL in production. Threads: the relay's run thread. */
typedef void (*ferry_relay_fault_fn)(const char *point, void *userdata);

#define FERRY_RELAY_BATCH_BYTES_DEFAULT ((size_t)16 << 20)
#define FERRY_RELAY_BATCH_BYTES_MIN ((size_t)64 << 10)
#define FERRY_RELAY_BATCH_BYTES_MAX ((size_t)1 << 30)
/* Ranges of the other ferry_relay_options (0 = the default each field names). */
/* batch_size, rows */
#define FERRY_RELAY_BATCH_SIZE_MAX 10000
/* poll_interval_ms, max_backoff_ms, unknown_report_ms: a day */
#define FERRY_RELAY_INTERVAL_MAX_MS 86400000
/* statement_timeout_ms, connect_timeout_ms: an hour */
#define FERRY_RELAY_TIMEOUT_MAX_MS 3600000
/* retention_s: 100 years */
#define FERRY_RELAY_RETENTION_MAX_S (100LL * 365 * 24 * 3600)
/* retention_interval_ms: a week */
#define FERRY_RELAY_RETENTION_INTERVAL_MAX_MS (7LL * 86400000)
/* retention_batch, and ferry_outbox_cleanup's batch */
#define FERRY_RELAY_RETENTION_BATCH_MAX 100000
#define FERRY_RELAY_DEFAULT_MAX_ENVELOPE ((size_t)2 << 20) /* max_envelope_bytes = 0 */
#define FERRY_RELAY_MAX_ENVELOPE_LIMIT ((size_t)512 << 20) /* largest max_envelope_bytes */
#define FERRY_RELAY_QUEUE_DEFAULTS_MAX 1024 /* entries of ferry_relay_options.queue_defaults */

/* One queue's own default JobsOptions (ferry_relay_options.queue_defaults): for the jobs the
 * relay adds to `queue`, `job_opts` replaces default_job_opts as a whole, as a per-queue
 * defaultJobOptions replaces the module-wide one in BullMQ's NestJS module. */
typedef struct ferry_relay_queue_defaults {
    const char *queue;    /* a queue the routes target (another name is refused) */
    const char *job_opts; /* a JobsOptions JSON object, checked as default_job_opts is */
} ferry_relay_queue_defaults;

typedef struct ferry_relay_options {
    const char *database_url; /* libpq URL or conninfo; NULL/"" = libpq defaults (PG* env) */
    const char *schema;       /* NULL = "public" */
    /* Routes: a parsed set (copied at create) or a file to load (errors name its line).
     * Exactly one must be given. */
    const ferry_routes *routes;
    const char *routes_file;
    const ferry_redis_options *redis; /* NULL = defaults */
    const char *prefix;               /* queue key prefix; NULL = "bull" */
    /* Default JobsOptions JSON object for the jobs the relay adds (the queue default
     * options; NULL = BullMQ defaults). jobId is always the event id. */
    const char *default_job_opts;
    int batch_size; /* rows per batch transaction; 0 = 100; 1..FERRY_RELAY_BATCH_SIZE_MAX */
    /* Payload bytes per batch (the payloads' JSON text, which the relay holds in memory
     * while the batch is in flight): a batch takes rows, oldest first, while their total
     * stays within this, but always at least one row (a larger row moves alone).
     * 0 = 16 MiB; 65536..1073741824 (FERRY_RELAY_BATCH_BYTES_MIN/MAX). */
    size_t batch_bytes;
    int poll_interval_ms;     /* fallback poll when no NOTIFY arrives; 0 = 500 */
    int max_backoff_ms;       /* cap of the retry backoff after failures; 0 = 30000 */
    int statement_timeout_ms; /* per database statement (server statement_timeout, and the
                                 client deadline + 2 s; lock_timeout a quarter, at most 1 s,
                                 shorter); 0 = 10000, at most FERRY_RELAY_TIMEOUT_MAX_MS.
                                 Claims that run into it take fewer rows next time; a row
                                 that cannot be read in time on its own, twice in a row, is
                                 quarantined (docs/outbox.md). The relay's sessions use READ
                                 COMMITTED. */
    int connect_timeout_ms;   /* PostgreSQL connect; 0 = 5000 */
    /* Retention: published rows older than retention_s seconds are deleted in batches of
     * retention_batch by whichever relay holds the advisory lock, at most once per
     * retention_interval_ms across all relays. 0 = 7 days; -1 = never. */
    long long retention_s;
    int retention_interval_ms; /* 0 = 3600000 */
    int retention_batch;       /* 0 = 1000 */
    int unknown_report_ms;     /* how often unknown topics are counted and warned about
                                  (once per topic per interval); 0 = 60000 */
    size_t max_envelope_bytes; /* largest job data the relay writes; rows over it are
                                  quarantined; 0 = FERRY_RELAY_DEFAULT_MAX_ENVELOPE (2 MiB:
                                  jsonb output may be larger than the payload appended); at
                                  most FERRY_RELAY_MAX_ENVELOPE_LIMIT */
    /* Log lines (ferry/common.h "diagnostics"): reconnects, quarantined rows, unknown topics,
     * start and stop. Text from rows, such as topics, has control characters and
     * backslashes escaped. Called from the relay's threads (the one in ferry_relay_run and
     * the retention thread), one call at a time. NULL = none. */
    ferry_log_fn log;
    void *log_userdata;
    ferry_relay_fault_fn fault;
    void *fault_userdata;
    /* Per-queue default JobsOptions, each replacing default_job_opts for its queue (see
     * ferry_relay_queue_defaults): at most FERRY_RELAY_QUEUE_DEFAULTS_MAX entries, each
     * queue once. Copied at create. NULL/0 = every queue uses default_job_opts. */
    const ferry_relay_queue_defaults *queue_defaults;
    size_t nqueue_defaults;
    /* Prometheus metrics (ferry/metrics.h; docs/metrics.md "The relay's metrics"): the relay
     * registers its families here (or uses them when another relay of the process did) at
     * ferry_relay_create and updates them as batches commit. NULL = none. Not owned: it must
     * outlive the relay (ferry_relay_free). */
    ferry_metrics *metrics;
    /* Typed events (ferry_relay_event: batches published with their rows' ids and trace ids,
     * rows set aside, failed batches, unknown topics, retention runs), with
     * log_userdata. When set, the events that are log lines (all but PUBLISHED) come here
     * instead of to `log`, their line in ev->message, so a program that prints both sees
     * each once; every other line still goes to `log`. NULL = none (those lines go to
     * `log`). */
    ferry_relay_event_fn event;
} ferry_relay_options;

/* Fill *o with defaults (all zero / NULL; NULL accepted). Threads: any. Blocks: no; no
 * allocation. */
FERRY_API void ferry_relay_options_init(ferry_relay_options *o);

/* Validate options and load the routes. Does not connect.
 * Returns: 0 and a new relay in *out, freed with ferry_relay_free.
 * Errors: FERRY_EINVAL naming the bad option (file errors name file and line), the errors
 *   of ferry_routes_load, FERRY_ENOMEM.
 * Blocks: reads routes_file, if given. Threads: any; relays share no state.
 * Ownership: every string, the Redis options and the routes are copied; `log_userdata`
 *   and `fault_userdata` are not owned and must stay valid until ferry_relay_free. */
FERRY_API int ferry_relay_create(const ferry_relay_options *opts, ferry_relay **out,
                                 ferry_error *err);

/* Run until ferry_relay_stop (once per relay object): connect to PostgreSQL (checks the
 * schema version) and open the queues, then publish batches as events are committed (woken
 * by NOTIFY, with poll_interval_ms as fallback). After start-up, lost connections are
 * retried with capped backoff and never end the run; what happens goes to the log
 * callback. On stop the batch in progress is finished (committed or rolled back).
 * Returns: 0 after ferry_relay_stop.
 * Errors: start-up failures return at once: FERRY_EDB / FERRY_EIO / FERRY_ETIMEDOUT from
 *   PostgreSQL, FERRY_ESTATE when the schema is not migrated to this library's version,
 *   Redis connect errors; FERRY_ESTATE when the relay is already running.
 * Blocks: until stopped. Threads: call from one thread, once. */
FERRY_API int ferry_relay_run(ferry_relay *r, ferry_error *err);

/* Ask a running relay to stop after its current batch.
 * Threads: any, and safe from a signal handler (sets a flag and writes to a pipe).
 * Blocks: no, returns at once. */
FERRY_API void ferry_relay_stop(ferry_relay *r);

/* Free a relay that is not running. NULL accepted.
 * Threads: nothing may call ferry_relay_stop on it any more: remove the signal handler that
 *   does before freeing. */
FERRY_API void ferry_relay_free(ferry_relay *r);

typedef struct ferry_relay_stats {
    unsigned long long published;         /* rows committed as published by this relay */
    unsigned long long jobs_added;        /* jobs sent (one per row and target) */
    unsigned long long batches;           /* committed batches that had rows */
    unsigned long long failed_batches;    /* batches rolled back (Redis or database error) */
    unsigned long long quarantined;       /* rows set aside as unpublishable */
    unsigned long long unknown_rows;      /* unknown-topic rows at the last check */
    unsigned long long unknown_topics;    /* distinct unknown topics at the last check */
    unsigned long long retention_deleted; /* rows deleted by retention runs of this relay */
    unsigned long long reconnects;        /* database reconnections */
    int backing_off;                      /* 1 while waiting after a failure */
} ferry_relay_stats;

/* Copy the totals since ferry_relay_run started into *out (a consistent snapshot).
 * Threads: any, while the relay lives. Blocks: no. */
FERRY_API void ferry_relay_get_stats(ferry_relay *r, ferry_relay_stats *out);

/* ---- for tools that connect for a person (`ferry migrate`, `ferry outbox ...`) --------- */

/* The highest migration version applied in opts->schema (NULL opts or schema = "public";
 * max_payload_bytes does not apply), read from <schema>.ferry_schema_migrations, to compare
 * with ferry_outbox_schema_version().
 * Returns: 0 with *version set (0 when the table does not exist: nothing applied).
 * Errors: FERRY_EINVAL (a bad schema name, or version NULL), FERRY_EDB (the server refused the
 * query; SQLSTATE in the message), FERRY_EIO (the connection is gone). Blocks: yes, one query on
 * `conn` (connected and idle; it is left idle), without a deadline of its own (libpq's blocking
 * call). Threads: not thread-safe on one conn. Ownership: conn and opts stay the caller's. */
FERRY_API int ferry_outbox_schema_applied(PGconn *conn, const ferry_outbox_options *opts,
                                          int *version, ferry_error *err);

/* The part of a database URL or conninfo (url: NULL or "" = libpq defaults) that is safe to
 * show, built from what libpq parses: "[user@]host[:port][/dbname]", each part made
 * printable, "(default host)" without a host, "(libpq defaults)" for "", "(not parsable)"
 * when libpq cannot parse it. Never the password, whatever its characters.
 * Returns: out, holding the text cut to fit out[cap] (cap >= 16 shows something; out NULL
 * or cap 0: nothing is written). Errors: none.
 * Blocks: no (pure). Threads: any. Ownership: writes only out[0..cap). */
FERRY_API const char *ferry_outbox_database_url_display(const char *url, char *out, size_t cap);

/* Replace in msg (NUL-terminated, changed in place, never made longer) by "***" every
 * occurrence of a password `url` holds or libpq would use for it: password= and
 * sslpassword= as libpq parses them, every such key of a conninfo or URL query, a URL's
 * password as written (percent-encoded) and decoded, and the PGPASSWORD environment
 * variable's value, each also with line breaks and tabs flattened to spaces and as it is
 * shown escaped. url may be NULL (PGPASSWORD still masked). Passwords of fewer than 3 bytes
 * are left alone. For texts from libpq or the server about a connection to url.
 * Returns: nothing. Errors: none. Blocks: no (reads the environment).
 * Threads: any, while nothing changes the environment. Ownership: msg stays the caller's. */
FERRY_API void ferry_outbox_database_url_mask(const char *url, char *msg);

#ifdef __cplusplus
}
#endif
#endif

/* ferry/outbox.h - the transactional outbox on PostgreSQL and the relay that moves its
 * events into queues.
 *
 * An application never writes to PostgreSQL and Redis separately: it writes its own rows
 * and an event row (ferry_outbox_append) in one transaction. A relay (ferry_relay, run by
 * `ferry relay`) locks unpublished rows with FOR UPDATE SKIP LOCKED, adds one job per route
 * target (jobId = event id, data = the envelope {eventId, traceId, payload}), marks the rows
 * published and commits. A crash between adding jobs and committing republishes the rows:
 * duplicates (absorbed by jobId while the job exists, by inboxes after), never losses.
 *
 * Tables (created and upgraded by ferry_outbox_migrate / `ferry migrate`, column names
 * that applications commonly use): outbox_events, processed_messages, dead_letters
 * (+ dead_letter_redrives), ferry_tasks and the version table ferry_schema_migrations, all
 * in one schema (default "public"). Needs PostgreSQL 13 or later.
 *
 * Threads: the functions taking a PGconn follow libpq's rule (one thread at a time on a
 * connection, separate connections in parallel); the rest say so where they are declared.
 *
 * Error codes: PostgreSQL failures come back as FERRY_EDB (an error the server reported),
 * FERRY_EIO (connection refused or lost) or FERRY_ETIMEDOUT (a deadline passed); the
 * message carries the server's text and, when the server sent one, "SQLSTATE xxxxx"
 * verbatim. */
#ifndef FERRY_OUTBOX_H
#define FERRY_OUTBOX_H

#include "common.h"
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
 * lower-case characters plus NUL into out. Ids sort by creation time. Returns 0, or
 * FERRY_EIO when the system random source fails. Thread-safe. */
FERRY_API int ferry_uuid7(char out[FERRY_UUID_STRLEN + 1]);

/* ---- schema ------------------------------------------------------------------------- */

/* Called once per migration: before it is applied (ferry_outbox_migrate), or instead of
 * applying it (dry run, ferry_outbox_migrations_sql). `sql` is the migration's text with
 * the schema substituted; all strings are valid only during the call. */
typedef void (*ferry_migration_fn)(int version, const char *name, const char *sql, void *userdata);

typedef struct ferry_migrate_options {
    const char *schema; /* NULL = "public"; created when missing */
    int dry_run;        /* 1 = report the pending migrations through `fn`, change nothing */
    int timeout_ms;     /* lock_timeout and statement_timeout of the migration
                           transaction (waiting for another replica's migration included);
                           0 = 60000 */
    ferry_migration_fn fn;
    void *userdata;
} ferry_migrate_options;

/* Bring the schema to the version built into this library. All pending migrations run in
 * one READ COMMITTED transaction (whatever default_transaction_isolation says) that first
 * takes a transaction-level advisory lock (per schema), so any
 * number of replicas may call this at once: one applies, the others wait and then find
 * nothing to do. Each applied version is recorded in <schema>.ferry_schema_migrations.
 * Idempotent; the SQL adopts tables an application created itself with these columns
 * (CREATE ... IF NOT EXISTS, ADD COLUMN IF NOT EXISTS).
 * `conn` must be connected and idle (no open transaction); it is left idle. *applied (may
 * be NULL) receives the number of migrations applied (or pending, for a dry run).
 * Blocking (bounded by timeout_ms on the server). Not thread-safe on one conn. */
FERRY_API int ferry_outbox_migrate(PGconn *conn, const ferry_migrate_options *opts, int *applied,
                                   ferry_error *err);

/* Report every built-in migration (with `schema` substituted) through fn, in order, without
 * a database. Pure, thread-safe. */
FERRY_API int ferry_outbox_migrations_sql(const char *schema, ferry_migration_fn fn, void *userdata,
                                          ferry_error *err);

/* The newest schema version this library knows. */
FERRY_API int ferry_outbox_schema_version(void); /* a constant; thread-safe */

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

/* Insert one event into <schema>.outbox_events inside the caller's open transaction
 * (PQtransactionStatus must be PQTRANS_INTRANS: a call outside a transaction, or in a
 * failed one, is FERRY_ESTATE, so an event can never be committed apart from the
 * application's rows). The event is published only if the caller commits.
 * One parameterised INSERT; the id is a new UUIDv7, written (36 chars + NUL) to id_out
 * when it is non-NULL. Errors: FERRY_EINVAL naming the bad field, FERRY_ETOOBIG for a
 * payload over the limit (nothing sent to the server in both cases), FERRY_ESTATE, or
 * FERRY_EDB for a server error (message with SQLSTATE); after a server error the caller's
 * transaction is aborted, as with any failed statement. `opts` may be NULL. Blocking, without its
 * own deadline: the caller's statement_timeout applies. Not thread-safe on one conn (libpq rule).
 */
FERRY_API int ferry_outbox_append(PGconn *conn, const ferry_outbox_options *opts,
                                  const ferry_outbox_event *ev, char id_out[FERRY_UUID_STRLEN + 1],
                                  ferry_error *err);

/* ---- routes ------------------------------------------------------------------------- */

/* A routes file: one topic per line followed by one or more queue:job-name targets
 * (fan-out), separated by blanks; `#` starts a comment to the end of the line.
 *     order.placed      payments:capture-payment  notifications:order-confirmation
 *     order.cancelled   payments:void-authorization
 * Limits: 1 MiB per file, 4096 bytes per line, 10000 topics, 64 targets per topic;
 * names as ferry_outbox_event.topic; queue names without ':' (at most 255 bytes), job
 * names at most 1024 bytes. A topic may appear once, and a queue at most once per topic
 * (its jobs share the event id as jobId, so a second job in the same queue would be
 * dropped as a duplicate). */
typedef struct ferry_routes ferry_routes;

/* Check a database URL before connecting: NULL or "" (libpq defaults), a postgresql:// or
 * postgres:// URI, or key=value conninfo, as libpq parses them. Anything else is
 * FERRY_EINVAL: libpq would take it as a database name on the default server, so a typo
 * like "postgress://db/x" would quietly try the local one. So is a URL libpq would misread
 * (an '@' after a '/' or a second '@': '/', '@' and '%' in the user name or password must
 * be percent-encoded) and a port that is not a number. Error texts never quote the value
 * (it may hold a password). Pure, thread-safe. */
FERRY_API int ferry_outbox_database_url_check(const char *url, ferry_error *err);

#define FERRY_ROUTES_FILE_MAX (1u << 20)
#define FERRY_ROUTES_LINE_MAX 4096
#define FERRY_ROUTES_TOPICS_MAX 10000
#define FERRY_ROUTES_TARGETS_MAX 64

/* Parse text[0..len). `filename` (may be NULL) names the source in errors, which read
 * "<filename>:<line>: <problem>". *out is freed with ferry_routes_free. Pure, thread-safe. */
FERRY_API int ferry_routes_parse(const char *text, size_t len, const char *filename,
                                 ferry_routes **out, ferry_error *err);
/* Read and parse a file (FERRY_EIO when it cannot be read, FERRY_ETOOBIG over 1 MiB).
 * Thread-safe. */
FERRY_API int ferry_routes_load(const char *path, ferry_routes **out, ferry_error *err);
/* NULL accepted; no other thread may still be using r. */
FERRY_API void ferry_routes_free(ferry_routes *r);

/* Topics in file order. Strings are borrowed from r. A parsed ferry_routes is immutable,
 * so these may be called from any thread. */
FERRY_API size_t ferry_routes_topic_count(const ferry_routes *r);
FERRY_API const char *ferry_routes_topic(const ferry_routes *r, size_t i);
/* 1 when the topic has a route. */
FERRY_API int ferry_routes_has_topic(const ferry_routes *r, const char *topic);
FERRY_API size_t ferry_routes_target_count(const ferry_routes *r, size_t topic_index);
/* Target j of topic i: queue and job name (borrowed). Returns 0 or FERRY_EINVAL. */
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

/* Read the outbox's state. `routes` may be NULL (then unknown_rows = 0 and every topic has
 * known = -1). *out is freed with ferry_outbox_status_free. Blocking; `conn` must be idle.
 * A few aggregate queries, run in one read-only transaction. */
FERRY_API int ferry_outbox_status_get(PGconn *conn, const char *schema, const ferry_routes *routes,
                                      ferry_outbox_status **out, ferry_error *err);
FERRY_API void ferry_outbox_status_free(ferry_outbox_status *s); /* NULL accepted */

/* Delete published rows older than older_than_s seconds, at most `batch` rows per
 * statement (0 = 1000), until none are left or max_batches statements ran (0 = no limit).
 * Each batch is its own transaction. *deleted (may be NULL) receives the count. `conn`
 * must be idle. Blocking. The relay runs this as a singleton task (see
 * ferry_relay_options.retention_s); it is public for `ferry outbox cleanup`. */
FERRY_API int ferry_outbox_cleanup(PGconn *conn, const char *schema, long long older_than_s,
                                   int batch, long long max_batches, long long *deleted,
                                   ferry_error *err);

/* ---- the relay ---------------------------------------------------------------------- */

typedef struct ferry_relay ferry_relay;

enum { FERRY_LOG_DEBUG = 0, FERRY_LOG_INFO = 1, FERRY_LOG_WARN = 2, FERRY_LOG_ERROR = 3 };

/* Diagnostics: one line of text (no payloads, no passwords; text from rows, such as topics,
 * with control characters and backslashes escaped), valid during the call. Called
 * from the relay's threads (the one in ferry_relay_run and the retention thread), one call
 * at a time. */
typedef void (*ferry_relay_log_fn)(int level, const char *message, void *userdata);

/* Test-only fault injection: called at named points ("relay_after_publish": the jobs of a
 * batch were added to Redis and its rows are not yet committed as published). A test hook
 * may kill the process there. NULL in production. */
typedef void (*ferry_relay_fault_fn)(const char *point, void *userdata);

#define FERRY_RELAY_BATCH_BYTES_DEFAULT ((size_t)16 << 20)
#define FERRY_RELAY_BATCH_BYTES_MIN ((size_t)64 << 10)
#define FERRY_RELAY_BATCH_BYTES_MAX ((size_t)1 << 30)

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
    int batch_size; /* rows per batch transaction; 0 = 100; 1..10000 */
    /* Payload bytes per batch (the payloads' JSON text, which the relay holds in memory
     * while the batch is in flight): a batch takes rows, oldest first, while their total
     * stays within this, but always at least one row (a larger row moves alone).
     * 0 = 16 MiB; 65536..1073741824 (FERRY_RELAY_BATCH_BYTES_MIN/MAX). */
    size_t batch_bytes;
    int poll_interval_ms;     /* fallback poll when no NOTIFY arrives; 0 = 500 */
    int max_backoff_ms;       /* cap of the retry backoff after failures; 0 = 30000 */
    int statement_timeout_ms; /* per database statement (server statement_timeout, and the
                                 client deadline + 2 s; lock_timeout a quarter, at most 1 s,
                                 shorter); 0 = 10000. A claim that runs into it locks half
                                 as many rows next time, down to one; a row that one-row
                                 claims cannot convert to text in time, twice in a row, is
                                 quarantined. The relay's sessions use READ COMMITTED. */
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
                                  quarantined; 0 = 2 MiB (jsonb output may be larger than
                                  the payload appended) */
    ferry_relay_log_fn log;
    void *log_userdata;
    ferry_relay_fault_fn fault;
    void *fault_userdata;
} ferry_relay_options;

/* Fill *o with defaults. No allocation. Thread-safe. */
FERRY_API void ferry_relay_options_init(ferry_relay_options *o);

/* Validate options and load the routes (file errors name file and line). Does not
 * connect. Copies every string, the Redis options and the routes; `log_userdata` and
 * `fault_userdata` are not owned and must stay valid until ferry_relay_free. *out is
 * freed with ferry_relay_free. Any thread; relays share no state. */
FERRY_API int ferry_relay_create(const ferry_relay_options *opts, ferry_relay **out,
                                 ferry_error *err);

/* Run until ferry_relay_stop (once per relay object): connect to PostgreSQL (checks the schema
 * version) and open the queues — a failure here returns at once (start-up error) — then publish
 * batches, woken by NOTIFY with the poll interval as fallback, and draining while batches come back
 * full. After start-up, lost connections are retried with capped backoff and never end the run. On
 * stop the batch in progress is finished (committed or rolled back), and 0 is returned. Blocking;
 * call from one thread, once. */
FERRY_API int ferry_relay_run(ferry_relay *r, ferry_error *err);

/* Ask a running relay to stop after its current batch. Returns at once; safe from any
 * thread and from a signal handler (sets a flag and writes to a pipe). */
FERRY_API void ferry_relay_stop(ferry_relay *r);

/* Free a relay that is not running. NULL accepted. Nothing may call ferry_relay_stop on
 * it any more: remove the signal handler that does before freeing. */
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

/* Totals since ferry_relay_run started. Thread-safe snapshot. */
FERRY_API void ferry_relay_get_stats(ferry_relay *r, ferry_relay_stats *out);

/* ---- for tools that connect for a person (`ferry migrate`, `ferry outbox ...`) --------- */

/* The highest migration version applied in `schema` (NULL = "public"), read from
 * <schema>.ferry_schema_migrations, to compare with ferry_outbox_schema_version().
 * Returns: 0 with *version set (0 when the table does not exist: nothing applied).
 * Errors: FERRY_EINVAL (a bad schema name), FERRY_EDB (the server refused the query;
 * SQLSTATE in the message), FERRY_EIO (the connection is gone).
 * Blocks: yes, one query on `conn` (connected and idle; it is left idle), without a
 * deadline of its own (libpq's blocking call). Threads: not thread-safe on one conn.
 * Ownership: conn and schema stay the caller's. */
FERRY_API int ferry_outbox_schema_applied(PGconn *conn, const char *schema, int *version,
                                          ferry_error *err);

/* The part of a database URL or conninfo (url: NULL or "" = libpq defaults) that is safe to
 * show, built from what libpq parses: "[user@]host[:port][/dbname]", each part made
 * printable, "(default host)" without a host, "(libpq defaults)" for "", "(not parsable)"
 * when libpq cannot parse it. Never the password, whatever its characters.
 * Returns: out, holding the text cut to fit out[cap] (cap >= 16). Errors: none.
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

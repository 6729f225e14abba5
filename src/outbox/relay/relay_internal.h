/* relay_internal.h - the ferry_relay object shared by relay.c (life cycle, the wait/wake
 * loop, backoff, reconnects, unknown-topic reports), relay_batch.c (publishing batches),
 * relay_claim_limit.c (rows per claim, claims that time out), relay_retention.c (the
 * retention thread) and relay_metrics.c (the Prometheus series). */
#ifndef FERRY_OUTBOX_RELAY_INTERNAL_H
#define FERRY_OUTBOX_RELAY_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ferry/outbox.h"
#include "ferry/queue.h"
#include "pg/migrations.h" /* FERRY__LOCK_RELAYS_STR */
#include "pg/pg.h"

/* Schema version the relay needs (it uses quarantined_at, the NOTIFY trigger, ferry_tasks). */
#define FERRY__RELAY_SCHEMA_VERSION 5
#define FERRY__NOTIFY_CHANNEL "ferry_outbox"

typedef struct relay_target {
    size_t queue;         /* index into ferry_relay.queues */
    const char *job_name; /* borrowed from routes */
} relay_target;

typedef struct relay_topic {
    size_t ntargets;
    relay_target *targets;
} relay_topic;

struct ferry_relay {
    /* configuration (deep copies) */
    char *database_url, *schema, *prefix, *default_job_opts;
    char qs[FERRY__QSCHEMA_MAX]; /* quoted schema */
    /* the schema as log lines show it (escaped: a schema name may hold any character) */
    char schema_shown[4 * FERRY_OUTBOX_SCHEMA_MAX + 8];
    ferry_redis_options redis;
    ferry_routes *routes;
    char *topics_array;  /* text[] literal of the routed topics */
    relay_topic *topics; /* per routes topic index */
    size_t nqueues;
    char **queue_names;
    char **queue_opts; /* per queue: its own default job options (owned), NULL = the relay's */
    ferry_queue **queues;
    int batch_size, poll_interval_ms, max_backoff_ms, statement_timeout_ms, connect_timeout_ms;
    size_t batch_bytes; /* payload text per batch (at least one row whatever its size) */
    long long retention_s;
    int retention_interval_ms, retention_batch, unknown_report_ms;
    size_t max_envelope;
    /* largest job data the queues accept: max_envelope, or the default job options'
     * sizeLimit when smaller (the smallest over the queues' default options) */
    size_t data_limit;
    ferry_relay_log_fn log;
    void *log_userdata;
    ferry_relay_event_fn event; /* typed events (ferry__relay_event); with log_userdata */
    ferry_relay_fault_fn fault;
    void *fault_userdata;

    /* run state (main thread) */
    ferry__pgc pg;           /* LISTEN, batches, unknown-topic reports */
    ferry__pgc pg2;          /* batches only: claims the next batch while one is added */
    int64_t pg2_retry_at;    /* mono ms; when pg2 may be connected again after a failure */
    struct relay_pool *pool; /* threads adding to the other queues of a fan-out batch */
    int claim_limit;         /* rows a claim locks: batch_size, less after batches cut by
                                batch_bytes or claims that timed out
                                (relay_claim_limit.c) */
    int claim_timeout;       /* LIMIT of a claim that ran into statement_timeout in this
                                drain, 0 = none (set by lane_recv, handled by the drain) */
    /* the first row in line when a one-row claim last timed out; "" = none since */
    char slow_row[FERRY_UUID_STRLEN + 1];
    /* a large row Redis refused alone, and how many times in a row (relay_batch.c) */
    char refused_row[FERRY_UUID_STRLEN + 1];
    int refused_times;
    int64_t refused_since; /* mono ms of its first refusal in the run */
    int refusing;          /* Redis refused the last add: the claim limit does not grow meanwhile */
    int alone;             /* the last probe found no other relay on the schema */
    int64_t alone_at;      /* mono ms of that probe; 0 = none since (re)connecting */
    int running;

    /* shared between threads */
    atomic_int stopping;
    int stop_pipe[2];   /* ferry_relay_stop writes one byte; never drained, so it stays readable */
    pthread_mutex_t mu; /* stats */
    pthread_mutex_t log_mu; /* one log callback at a time (separate: a callback may read stats) */
    ferry_relay_stats stats;

    /* Prometheus series (relay_metrics.c); all NULL without ferry_relay_options.metrics
     * (every update is then a no-op). Updated on the run thread only. */
    ferry_metrics_counter *m_published;
    ferry_metrics_histogram *m_batch_duration, *m_commit_to_enqueue;
    ferry_metrics_gauge *m_last_success;
};

/* ---- relay_metrics.c ------------------------------------------------------------------ */

/* Register (or find, when another relay of the process did) the relay's families in reg
 * and look up their series into r->m_*; reg NULL leaves them NULL. 0, or FERRY_EINVAL /
 * FERRY_ENOMEM. */
int ferry__relay_metrics_init(ferry_relay *r, ferry_metrics *reg, ferry_error *err);
/* Monotonic µs, for batch durations. */
int64_t ferry__relay_mono_us(void);
/* A batch with rows committed: `published` rows, its claim sent at claim_sent_us. */
void ferry__relay_metrics_committed(ferry_relay *r, size_t published, int64_t claim_sent_us);
/* A published row's jobs are in Redis at now_ms (wall): its age since created_s (the row's
 * created_at, epoch seconds; the relay's clock against PostgreSQL's, 0 when negative). */
void ferry__relay_metrics_enqueued(ferry_relay *r, int64_t now_ms, double created_s);

/* ---- conn.c: connections, statements, waiting (calls nothing else of the relay) ------- */

/* The prepared statements every relay connection has (ferry__relay_prepare). */
#define RELAY_ST_CLAIM "ferry_relay_claim"
#define RELAY_ST_PUT_BACK "ferry_relay_put_back"
#define RELAY_ST_FAILED "ferry_relay_failed"
#define RELAY_ST_BEGIN "ferry_relay_begin"
#define RELAY_ST_ASYNC "ferry_relay_async"
#define RELAY_ST_COMMIT "ferry_relay_commit"
#define RELAY_ST_ALONE "ferry_relay_alone"
#define RELAY_ST_AFTER_CLAIM "ferry_relay_after_claim"

/* Prepare the batch statements on a fresh connection of the relay. */
int ferry__relay_prepare(ferry_relay *r, ferry__pgc *pg, ferry_error *err);

/* The claim statement for quoted schema `qs` ($1 routed topics text[], $2 row limit, $3 byte
 * budget; see conn.c), written into out[cap]. 0, or -1 when cap is too small (the
 * relay's buffer never is). Pure; thread-safe. The relay and its tests use it. */
int ferry__relay_claim_sql(char *out, size_t cap, const char *qs);

/* Log one line through opts.log (serialised; no-op without a callback). */
void ferry__relay_log(ferry_relay *r, int level, const char *fmt, ...) FERRY_PRINTF(3, 4);

/* Report a typed event (serialised with the log lines): its line is formatted from fmt into
 * ev->message (fmt NULL: no line, ev->message NULL) and the event goes to opts.event when
 * set, else the line (if any) to opts.log at ev->level. */
void ferry__relay_event(ferry_relay *r, ferry_relay_event *ev, const char *fmt, ...)
    FERRY_PRINTF(3, 4);

/* Session settings for the relay's connections. */
void ferry__relay_session(const ferry_relay *r, ferry__pg_session *s, const char *app);

/* Deadline for one database statement from now. */
int64_t ferry__relay_deadline(const ferry_relay *r);

/* Wait until deadline (mono ms) or a stop request; also wakes when fd (if >= 0) is
 * readable. Returns 1 stop requested, 2 fd readable, 0 deadline. */
int ferry__relay_wait(ferry_relay *r, int fd, int64_t deadline);

/* Connect r->pg: check the schema's version (refusing one too old, warning about one newer
 * or older than this ferry's), LISTEN, take the shared relay lock, prepare the statements.
 * Also closes pg2, made afresh at the next drain. On failure r->pg is closed. */
int ferry__relay_db_connect(ferry_relay *r, ferry_error *err);

/* pg2, connected (and prepared) when missing and not failed in the last while; 1 when it
 * can be used. A failure is logged; the relay then publishes on pg alone. */
int ferry__relay_lane2(ferry_relay *r);

/* ---- relay_batch.c, relay_claim_limit.c, relay_retention.c -------------------------- */

/* Outcome of a drain. */
typedef enum relay_batch_rc {
    RELAY_BATCH_OK = 0,
    RELAY_BATCH_REDIS_FAILED, /* rolled back; attempts/last_error recorded when possible */
    RELAY_BATCH_DB_FAILED,    /* the database failed; r->pg.broken says whether to reconnect */
    RELAY_BATCH_NARROWED,     /* a claim timed out and the relay changed something (fewer rows
                                 per claim, or the row in the way set aside): call again at
                                 once, no backoff (it cannot repeat forever: each time the
                                 claim shrinks or a row leaves the line) */
} relay_batch_rc;

/* The claim limit after a batch that kept n rows of a claim locking up to `limit`, given the
 * current claim limit and --batch (relay_claim_limit.c): after a batch the byte
 * budget cut short (left_behind), what fitted plus a quarter, plus one; after a full batch,
 * double; otherwise unchanged; never above batch_size. After a claim of `limit` rows that
 * ran into statement_timeout (timed_out; n and left_behind are then ignored): half of
 * limit, at least 1, and not above current. Pure; thread-safe. */
int ferry__relay_next_claim_limit(int current, int batch_size, int n, int limit, int left_behind,
                                  int timed_out);

/* After a drain failed because a claim of r->claim_timeout rows ran into statement_timeout
 * (relay_claim_limit.c): halve the claim limit (RELAY_BATCH_NARROWED); at one row, note
 * the row first in line, and set it aside when a one-row claim timed out on it before
 * (NARROWED), else RELAY_BATCH_DB_FAILED (the usual backoff; *err says which row). Uses
 * r->pg, idle after the drain's failure, or a connection of its own when r->pg is broken
 * (the claim took the client's deadline). Resets r->claim_timeout. */
relay_batch_rc ferry__relay_claim_timed_out(ferry_relay *r, ferry_error *err);

/* Set unpublished row `id` aside (quarantined_at = now(), attempts + 1, last_error =
 * reason) in a transaction of its own on idle connection pg; 1 when it was, 0 when it was
 * published, set aside or locked by another relay meanwhile, <0 on error (logged). */
int ferry__relay_set_aside(ferry_relay *r, ferry__pgc *pg, const char *id, const char *reason);

/* Publish batches while they come back full: each locks up to claim_limit unpublished
 * rows of routed topics (oldest first, SKIP LOCKED), marks the oldest of them whose payloads
 * fit in batch_bytes (at least one), adds their jobs (one add_bulk round trip per queue)
 * and commits. A batch is full when it locked as many rows as it could or left locked rows
 * behind for the budget: rows may be waiting either way. Returns after a batch that was not
 * full, a stop request, a failure, or about a second (*more = 1: the last batch was full,
 * call again); every transaction is committed or rolled back by then. *rows = rows of the
 * last batch (the failed one on failure). */
relay_batch_rc ferry__relay_drain(ferry_relay *r, int *rows, int *more, ferry_error *err);

/* The add threads for fan-out batches: started by ferry_relay_run after the queues opened
 * (none when there is one queue, fewer if threads cannot start: the adds then take turns),
 * stopped before they close. */
void ferry__relay_pool_start(ferry_relay *r);
void ferry__relay_pool_stop(ferry_relay *r);

/* Retention thread: start (when retention is on) and join. */
int ferry__relay_retention_start(ferry_relay *r, pthread_t *thread, ferry_error *err);

/* The retention DELETE for quoted schema qs (params: $1 age in seconds, $2 batch). */
int ferry__outbox_cleanup_sql(const char *qs, char *sql, size_t cap);

#endif

/* ferry/trace.h - everything known about one outbox event, hop by hop: its outbox row, the
 * route targets it was published to, the jobs it became (the relay adds them with jobId =
 * the event id), the inbox markers consumers wrote for it, the dead letters its jobs left
 * and their redrives, and the jobs those redrives created. For "where is message X?"
 * (`ferry trace`, GET /api/trace/{eventId}).
 *
 * Reads only: nothing is written to PostgreSQL or Redis (queues are opened with
 * skip_meta_update). Payloads and job data are never copied into messages.
 *
 * Bounds: at most FERRY_TRACE_ROWS_MAX rows of each PostgreSQL section, dead letters
 * followed through at most FERRY_TRACE_DEPTH_MAX redrive generations, jobs looked for in
 * at most max_queues queues (the `queues_complete` member says when a bound stopped it). */
#ifndef FERRY_TRACE_H
#define FERRY_TRACE_H

#include "common.h"
#include "deadletter.h"
#include "outbox.h"
#include "queue.h"
#include "redis.h"

#include <libpq-fe.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FERRY_TRACE_ROWS_MAX 1000       /* rows of each section read at most */
#define FERRY_TRACE_DEPTH_MAX 16        /* redrive generations of dead letters followed */
#define FERRY_TRACE_QUEUES_DEFAULT 1000 /* queues looked in without routes, by default */
#define FERRY_TRACE_QUEUES_MAX 100000   /* ... at most (FERRY_QUEUE_NAMES_MAX) */

typedef struct ferry_trace_options {
    const char *schema;               /* of the ferry tables; NULL = "public" */
    const ferry_redis_options *redis; /* where the queues are; NULL = defaults */
    const char *prefix;               /* the queues' key prefix; NULL = "bull" */
    /* The relay's routes, when known (not copied; must outlive the call): jobs are then
     * looked for only in the queues the event's topic routes to (and those of its dead
     * letters). NULL, or an outbox row that is gone: in every queue under the prefix. */
    const ferry_routes *routes;
    size_t max_queues; /* queues listed and looked in without routes; 0 = the default,
                          1..FERRY_TRACE_QUEUES_MAX */
} ferry_trace_options;

/* Zero the options (every default). Threads: any. Blocks: no. */
FERRY_API void ferry_trace_options_init(ferry_trace_options *o);

/* The outbox row (times in ms since the epoch, 0 = none). */
typedef struct ferry_trace_outbox {
    char *id, *topic, *aggregate_id;
    char *trace_id;   /* NULL when none */
    char *last_error; /* NULL when none */
    long long created_at_ms, published_at_ms, quarantined_at_ms;
    long attempts;
} ferry_trace_outbox;

/* One route target of the event's topic (from options.routes). */
typedef struct ferry_trace_route {
    char *queue, *name;
} ferry_trace_route;

/* One job found: in `queue`, read with ferry_queue_get_job. */
typedef struct ferry_trace_job {
    char *queue;
    ferry_job_info *job;
    char *redrive_of; /* the dead letter whose redrive created it, or NULL */
} ferry_trace_job;

/* One inbox marker (processed_messages): consumer and when. */
typedef struct ferry_trace_inbox {
    char *consumer;
    long long processed_at_ms;
} ferry_trace_inbox;

/* One dead letter of the event's jobs (or of a job a redrive of one created). */
typedef struct ferry_trace_dead_letter {
    char id[FERRY_DLQ_ID_STRLEN + 1];
    char *queue, *job_id, *name, *error; /* error: as recorded (the job's failedReason) */
    char *redriven_by, *redrive_job_id;  /* NULL when never redriven */
    long attempts_made, redrive_count;
    long long failed_at_ms, redriven_at_ms; /* redriven_at 0 = never */
} ferry_trace_dead_letter;

/* One audit row of a redrive or purge of those dead letters (dry runs included). */
typedef struct ferry_trace_redrive {
    char dead_letter_id[FERRY_DLQ_ID_STRLEN + 1];
    char *queue, *job_id, *new_job_id, *action, *redriven_by; /* new_job_id NULL for purges */
    long long redriven_at_ms;
    int dry_run;
} ferry_trace_redrive;

/* The trace. Arrays in the order: routes as the routes file lists them, jobs by queue name
 * then id, inbox by time, dead letters and redrives oldest first. */
typedef struct ferry_trace {
    char event_id[FERRY_UUID_STRLEN + 1]; /* canonical (lower-case) */
    ferry_trace_outbox *outbox;           /* NULL when no row has the id (never appended, or
                                             deleted by retention) */
    int routes_known;                     /* 1 when options.routes was given */
    ferry_trace_route *routes;
    size_t nroutes;
    ferry_trace_job *jobs;
    size_t njobs;
    int queues_complete; /* 0 when the queue listing or max_queues stopped the search */
    ferry_trace_inbox *inbox;
    size_t ninbox;
    ferry_trace_dead_letter *dead_letters;
    size_t ndead_letters;
    ferry_trace_redrive *redrives;
    size_t nredrives;
} ferry_trace;

/* Trace event_id (UUID text, either case) through the outbox, the queues, the inbox and
 * the dead letters. conn is an idle connection to the database with the ferry tables.
 * Returns: 0 and *out.
 * Errors: FERRY_EINVAL for an id that is not a UUID (the message says so, without quoting
 *   it) or bad options; FERRY_ENOTFOUND when nothing knows the id (no outbox row, job,
 *   marker or dead letter); FERRY_ETIMEDOUT when PostgreSQL did not answer in time (the
 *   snapshot's statements share 30 s, the ROLLBACK that ends it has 5 s): conn then has a
 *   statement in flight and must be closed (PQfinish); FERRY_EDB / FERRY_EIO from
 *   PostgreSQL; Redis connect and transport errors; FERRY_ENOMEM.
 * Blocks: about six statements on conn, each ending by its deadline whatever the server
 *   does (the session's statement_timeout still ends slow ones first on the server), one
 *   queue listing (a bounded SCAN, on a connection of its own) when no routes narrow the
 *   search, one pipelined EXISTS round trip, and a queue open plus one round trip per job
 *   found.
 * Threads: conn follows libpq's rule; options may be shared (read only).
 * Ownership: free *out with ferry_trace_free. */
FERRY_API int ferry_trace_get(PGconn *conn, const ferry_trace_options *o, const char *event_id,
                              ferry_trace **out, ferry_error *err);

/* Free a trace. NULL accepted. Threads: any. Blocks: no. */
FERRY_API void ferry_trace_free(ferry_trace *t);

/* The trace as one line of JSON text, the shape GET /api/trace/{eventId} answers
 * (docs/operations.md, "Trace a message"): times in ms with an ISO-8601 twin, text that is
 * not UTF-8 in its escaped printable form.
 * Returns: the text (malloc'd: the caller frees it), or NULL for t NULL or out of memory.
 * Blocks: no. Threads: any (t is only read). */
FERRY_API char *ferry_trace_json(const ferry_trace *t);

#ifdef __cplusplus
}
#endif

#endif

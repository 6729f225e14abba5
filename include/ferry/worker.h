/* ferry/worker.h - a BullMQ-compatible worker running a plain blocking handler.
 *
 * A worker fetches jobs from one queue (the same Lua transitions as BullMQ 6.7.0: lock
 * token per job, `ats`/`atm` counters, events, markers) and runs `handler` on up to
 * `concurrency` threads. Connections per worker: exactly two — one command connection
 * (fetch, finish, lock renewal, stalled checks, all batched; used by one thread at a time:
 * the dispatcher, or a handler thread that writes results for the others) and one blocking
 * connection for BZPOPMIN on the queue marker.
 *
 * Thread-safety: ferry_worker_start/close/free must be called from one controlling
 * thread; ferry_worker_stop may be called from any thread (not from a signal handler:
 * use a self-pipe or sigwait thread, as the CLI does). Callbacks run one at a time on
 * whichever worker thread writes the result (the dispatcher, a handler thread, or the
 * waiter acting for it), never after ferry_worker_close returned; they must not block for
 * long. */
#ifndef FERRY_WORKER_H
#define FERRY_WORKER_H

#include "common.h"
#include "redis.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ferry_worker ferry_worker;

/* A fetched job as the handler sees it. Valid only during the handler call (or the
 * callback it is passed to); every string is borrowed from the worker. */
typedef struct ferry_job ferry_job;

FERRY_API const char *ferry_job_queue(const ferry_job *j);
FERRY_API const char *ferry_job_id(const ferry_job *j);
FERRY_API const char *ferry_job_name(const ferry_job *j);
FERRY_API const char *ferry_job_data(const ferry_job *j); /* JSON text, "{}" if absent */
FERRY_API const char *ferry_job_opts(const ferry_job *j); /* stored opts JSON */
/* Attempts made before this one (BullMQ attemptsMade); 0 on the first attempt. */
FERRY_API long ferry_job_attempts_made(const ferry_job *j);
/* Attempts started including this one (BullMQ attemptsStarted / `ats`). */
FERRY_API long ferry_job_attempts_started(const ferry_job *j);
FERRY_API long long ferry_job_timestamp(const ferry_job *j); /* enqueue ms */
/* Any field of the job hash by name, or NULL. Borrowed. */
FERRY_API const char *ferry_job_field(const ferry_job *j, const char *field);

/* What a handler returns. */
typedef enum ferry_outcome {
    FERRY_COMPLETED = 0,        /* success; return value set with ferry_job_set_return */
    FERRY_FAILED = 1,           /* transient: retried with the job's backoff while attempts remain */
    FERRY_FAILED_PERMANENT = 2, /* no retry (BullMQ UnrecoverableError) */
} ferry_outcome;

/* Set the completed job's return value (JSON text; non-JSON is stored as a JSON string).
 * Copied. Only from inside the handler, on the job it was given. 0 or FERRY_ENOMEM. */
FERRY_API int ferry_job_set_return(ferry_job *j, const char *json);
/* Set the failure reason (plain text, stored as failedReason) and an optional stack-like
 * trace appended to the job's stacktrace array (NULL = "Error: <reason>\n    at ferry
 * handler (queue Q, job ID)"). Copied. Only from inside the handler. */
FERRY_API int ferry_job_set_failure(ferry_job *j, const char *reason, const char *stack);

/* The handler: runs on a worker thread, may block (libpq, curl, ...). */
typedef ferry_outcome (*ferry_handler_fn)(ferry_job *job, void *userdata);

/* Callbacks (all optional), called one at a time on a worker thread (see the top of this
 * file). `job` is valid only during the call. */
typedef struct ferry_worker_callbacks {
    void (*completed)(const ferry_job *job, const char *returnvalue, void *userdata);
    /* final = 1 when the job moved to failed (no more retries). */
    void (*failed)(const ferry_job *job, const char *reason, int final, void *userdata);
    void (*stalled)(const char *job_id, void *userdata);
    /* Connection loss, script errors, lost locks... The worker keeps going. */
    void (*error)(const ferry_error *err, void *userdata);
} ferry_worker_callbacks;

typedef struct ferry_worker_options {
    const ferry_redis_options *redis; /* NULL = defaults */
    const char *prefix;               /* NULL = "bull" */
    const char *name;                 /* stored as processedBy (`pb`); NULL = none */
    int concurrency;                  /* handler threads; 0 = 1; max 1024 */
    int lock_duration_ms;             /* 0 = 30000 */
    int stalled_interval_ms;          /* 0 = 30000 */
    int max_stalled_count;            /* 0 = 1; use -1 for "never fail stalled jobs" */
    int max_started_attempts;         /* 0 = unlimited */
    int drain_delay_ms;               /* longest BZPOPMIN wait; 0 = 5000 */
    int fetch_batch;                  /* most jobs taken per fetch call; 0 = concurrency */
    /* Worker-level removeOnComplete / removeOnFail (BullMQ JSON: true, false, n,
     * {"age":s,"count":n}) used when a job has none. NULL = keep. */
    const char *remove_on_complete;
    const char *remove_on_fail;
    ferry_worker_callbacks callbacks;
    void *userdata; /* passed to callbacks */
} ferry_worker_options;

/* Fill *o with defaults. No allocation. */
FERRY_API void ferry_worker_options_init(ferry_worker_options *o);

/* Create a worker for queue `queue`. Validates options and copies them; does not connect.
 * *out is freed with ferry_worker_free(). */
FERRY_API int ferry_worker_create(const char *queue, const ferry_worker_options *opts,
                                  ferry_handler_fn handler, void *handler_userdata,
                                  ferry_worker **out, ferry_error *err);

/* Connect and start the dispatcher and handler threads; returns once running. Fails
 * (connect errors) within the connect timeout. After a successful start, connection loss
 * is handled by reconnecting with capped backoff (reported through callbacks.error). */
FERRY_API int ferry_worker_start(ferry_worker *w, ferry_error *err);

/* Ask the worker to stop fetching. Returns at once. Any thread. */
FERRY_API void ferry_worker_stop(ferry_worker *w);

/* Graceful close: stop fetching, wait up to deadline_ms for running handlers to finish and
 * their results to be written, then release connections and join threads. Handlers still
 * running at the deadline are abandoned: their jobs keep their locks until they expire and
 * are recovered as stalled by any worker. Returns 0, or FERRY_ETIMEDOUT when the deadline
 * passed with handlers still running (threads of those handlers are detached) or with
 * finished results not yet written (Redis unreachable; those jobs are recovered as stalled
 * once their locks expire). */
FERRY_API int ferry_worker_close(ferry_worker *w, int deadline_ms);

/* Free a closed (or never started) worker. NULL accepted. */
FERRY_API void ferry_worker_free(ferry_worker *w);

/* Totals since start (thread-safe snapshot). */
typedef struct ferry_worker_stats {
    unsigned long long completed, failed, retried, stalled, lock_lost;
    int busy; /* handlers running now */
} ferry_worker_stats;
FERRY_API void ferry_worker_get_stats(ferry_worker *w, ferry_worker_stats *out);

#ifdef __cplusplus
}
#endif
#endif

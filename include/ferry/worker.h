/* ferry/worker.h - a BullMQ-compatible worker running a plain blocking handler.
 *
 * A worker takes jobs from one queue and runs `handler` on up to `concurrency` threads; Node
 * BullMQ 6.7.0 workers and producers share the queue with it (docs/worker.md has how each
 * step maps onto BullMQ's). It keeps exactly two Redis connections per lane (count them for
 * Redis' maxclients): one lane, or two from concurrency 8 up (`lanes`).
 *
 * Threads (every function below unless it says otherwise): ferry_worker_start, _close and
 * _free from one controlling thread; ferry_worker_stop from any thread (not from a signal
 * handler: use a self-pipe or sigwait thread, as the CLI does). Callbacks (and backoff
 * strategies) run one at a time on some worker thread, never after ferry_worker_close has
 * returned, and must not block for long. Job accessors and setters: see ferry_job. */
#ifndef FERRY_WORKER_H
#define FERRY_WORKER_H

#include "common.h"
#include "metrics.h"
#include "redis.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ferry_worker ferry_worker;

/* From ferry/http_classify.h (include it to build one), for ferry_job_http_outcome. */
struct ferry_http_verdict;

/* A fetched job as the handler sees it. Valid only during the handler call (or the
 * callback it is passed to).
 * Ownership: every string the accessors below return is borrowed from the worker, valid as
 *   long as the job.
 * Threads: the accessors only read, so other threads of the handler may call them on its
 *   job while the handler call lasts; the setters only from the handler's own thread.
 * The job passed to the accessors and setters must not be NULL. Blocks: no. */
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
/* In the failed and final_failure callbacks (after the failure was written): the stacktrace
 * JSON array stored with it (earlier attempts' entries and this one's, as BullMQ keeps
 * them); NULL when none was written or outside those callbacks. */
FERRY_API const char *ferry_job_failure_stacktrace(const ferry_job *j);
/* Any field of the job hash by name (BullMQ's names: "data", "opts", "ats", ...).
 * Returns: the field's text (borrowed), or NULL when the job has no such field. */
FERRY_API const char *ferry_job_field(const ferry_job *j, const char *field);

/* The outbox envelope the relay writes as job data, {"eventId":..., "traceId":...,
 * "payload":...} (ferry/outbox.h), decoded once per job on the handler thread before the
 * worker's check and the handler run (docs/worker.md "The envelope, checks and final
 * failures").
 * ferry_job_event_id: the envelope's eventId when the data is a JSON object whose "eventId"
 *   is a UUID string (36 characters, 8-4-4-4-12 hex digits, any version); else NULL.
 * ferry_job_trace_id: the data object's "traceId" (envelope or not) when it is a string the
 *   outbox accepts as a trace id (1..FERRY_OUTBOX_TRACE_ID_MAX printable ASCII characters);
 *   else NULL.
 * ferry_job_payload: the JSON text of the "payload" member when the data is an object with
 *   a string "eventId" and a "payload" member (as written, without the blanks outside its
 *   strings); else the whole data, as ferry_job_data.
 * Returns: borrowed text, valid as long as the job. Cannot fail. Threads, Blocks: as the
 *   accessors above. */
FERRY_API const char *ferry_job_event_id(const ferry_job *j);
FERRY_API const char *ferry_job_trace_id(const ferry_job *j);
FERRY_API const char *ferry_job_payload(const ferry_job *j);

/* What a handler returns. */
typedef enum ferry_outcome {
    FERRY_COMPLETED = 0, /* success; return value set with ferry_job_set_return */
    FERRY_FAILED = 1,    /* transient: retried with the job's backoff while attempts remain */
    FERRY_FAILED_PERMANENT = 2, /* failed now, no retry (BullMQ UnrecoverableError) */
    /* Back to `delayed` for the delay set with ferry_job_set_delay (0 when unset), without
     * spending an attempt (attemptsMade unchanged); the start still counts in
     * attemptsStarted, so max_started_attempts bounds endless postponing. The reason of
     * ferry_job_set_failure, when given, is stored as failedReason; the stacktrace is
     * left alone. (BullMQ's DelayedError.) */
    FERRY_RETRY_LATER = 3,
    /* The service behind the job is rate limiting us. With a worker limiter
     * (limiter_max > 0): the whole queue stops handing out jobs for the delay (as
     * ferry_queue_rate_limit does) and the job goes back to the front of `wait` without
     * spending an attempt; this worker then fetches nothing until the limit expires.
     * Without a limiter: exactly FERRY_RETRY_LATER. As in BullMQ, the limit only stops
     * workers that have a limiter (theirs or the queue's global rate limit), Node or
     * ferry. Delay from ferry_job_set_delay; 0/unset means FERRY_THROTTLE_DEFAULT_MS
     * (ferry/http_classify.h, 10 s). (BullMQ's RateLimitError.) */
    FERRY_THROTTLED = 4,
} ferry_outcome;

/* Set the delay in ms for FERRY_RETRY_LATER / FERRY_THROTTLED; clamped to
 * [0, FERRY_RETRY_AFTER_MAX_MS] (ferry/http_classify.h: one day).
 * Threads: only from inside the handler, on its job. Blocks: no; no allocation. */
FERRY_API void ferry_job_set_delay(ferry_job *j, long long delay_ms);

/* Limits of a worker's options. */
#define FERRY_CONCURRENCY_MAX 1024      /* jobs one worker runs at once */
#define FERRY_WORKER_NAME_MAX 256       /* bytes of a worker name (client name suffix) */
#define FERRY_WORKER_LANES_MAX 4        /* ferry_worker_options.lanes */
#define FERRY_BACKOFF_STRATEGIES_MAX 64 /* custom strategies per worker */
#define FERRY_BACKOFF_NAME_MAX 63 /* bytes of a strategy name: the longest backoff.type stored */
/* Most per-minute data points ferry_worker_options.bullmq_metrics_max_points may keep:
 * 100000 minutes (69 days; BullMQ's largest MetricsTime, ONE_MONTH, is 80640). */
#define FERRY_BULLMQ_METRICS_POINTS_MAX 100000L
/* Longest delay any backoff strategy may give (2^40 ms, about 34 years); larger results are
 * clamped. */
#define FERRY_BACKOFF_MAX_MS (1LL << 40)

/* The most bytes a job's return value may have as stored (16 MiB), and a failure reason or
 * stack trace given with ferry_job_set_failure (64 KiB each). Both are also written into the
 * events stream, so each costs Redis several copies. */
#define FERRY_RETURN_MAX_BYTES (16u * 1024 * 1024)
#define FERRY_REASON_MAX_BYTES (64u * 1024)

/* Set the completed job's return value (JSON text; non-JSON is stored as a JSON string).
 * Returns: 0.
 * Errors: FERRY_ENOMEM; FERRY_ETOOBIG when the value (as stored) is over
 *   FERRY_RETURN_MAX_BYTES: then no value is kept, and returning FERRY_COMPLETED fails the
 *   attempt instead (retried while attempts remain) with a failedReason giving the size.
 * Threads: only from inside the handler, on the job it was given. Blocks: no.
 * Ownership: `json` is copied. */
FERRY_API int ferry_job_set_return(ferry_job *j, const char *json);
/* Set the failure reason (plain text, stored as failedReason) and an optional stack-like
 * trace appended to the job's stacktrace array (NULL = "Error: <reason>\n    at ferry
 * handler (queue Q, job ID)"). A reason or trace over FERRY_REASON_MAX_BYTES is cut to that
 * size, ending with "... [cut: N bytes]".
 * Returns: 0. Errors: FERRY_ENOMEM.
 * Threads: only from inside the handler, on its job. Blocks: no.
 * Ownership: both strings are copied. */
FERRY_API int ferry_job_set_failure(ferry_job *j, const char *reason, const char *stack);

/* Map an HTTP verdict (ferry/http_classify.h) onto the outcome to return: OK ->
 * FERRY_COMPLETED; TRANSIENT -> FERRY_FAILED; RETRY_LATER -> FERRY_RETRY_LATER and
 * THROTTLED -> FERRY_THROTTLED, both with ferry_job_set_delay(v->delay_ms); PERMANENT ->
 * FERRY_FAILED_PERMANENT. For every class but OK, `reason` (NULL = "HTTP <class>") is set
 * as with ferry_job_set_failure. Typical use:
 *     return ferry_job_http_outcome(job, &verdict, "payments: HTTP 503");
 * Returns: the outcome. Cannot fail: on ENOMEM the reason is dropped, the outcome stays
 *   right.
 * Threads: only from inside the handler, on its job. Blocks: no.
 * Ownership: `v` and `reason` are borrowed for the call (the reason is copied). */
FERRY_API ferry_outcome ferry_job_http_outcome(ferry_job *j, const struct ferry_http_verdict *v,
                                               const char *reason);

/* The handler: runs a job and says how it went.
 * Returns: the job's outcome.
 * Threads: on one of the worker's handler threads; up to `concurrency` run at once, each on
 *   its own job.
 * Blocks: may (libpq, curl, ...): the job's lock is renewed meanwhile.
 * Ownership: `job` is valid only during the call; `userdata` is handler_userdata. */
typedef ferry_outcome (*ferry_handler_fn)(ferry_job *job, void *userdata);

/* A custom backoff strategy, chosen by the job's `backoff.type` (BullMQ
 * settings.backoffStrategy). attempts_made counts the attempt that just failed (1 at the
 * first retry, BullMQ's attemptsMade + 1); `reason` is the failure reason.
 * Returns: the delay in ms (0 = retry at once), or -1 for "do not retry" (the job fails
 *   now). Other negative values count as -1; delays over FERRY_BACKOFF_MAX_MS are clamped.
 * Threads: on the handler thread that ran the job (or the worker's dispatcher thread, for a
 *   completion Redis refused because the job has pending children), under the worker's
 *   callback lock: never at the same time as a callback or another strategy call of the
 *   same worker, and never once ferry_worker_close has returned.
 * Blocks: must not (it holds up callbacks).
 * Ownership: `type`, `reason` and `job` are valid only during the call. */
typedef long long (*ferry_backoff_fn)(long attempts_made, const char *type, const char *reason,
                                      const ferry_job *job, void *userdata);

typedef struct ferry_backoff_strategy {
    const char *name; /* the backoff.type it serves (1..FERRY_BACKOFF_NAME_MAX bytes); not
                         "fixed" or "exponential" */
    ferry_backoff_fn fn;
    void *userdata; /* passed to fn; not owned */
} ferry_backoff_strategy;

/* ferry's `capped` strategy (a ferry_backoff_fn): exponential with a cap, jitter in the
 * upper half:
 *   ceiling = min(cap_ms, base_ms * 2^(attempts_made - 1));
 *   delay   = round(ceiling / 2 + random * ceiling / 2).
 * userdata: a `const ferry_backoff_capped_config *`, or NULL for base 2000 ms (or the
 * job's backoff.delay when > 0) and cap 15 min. It is also built in: a job with
 * backoff {type: "capped"} uses it with those defaults unless the worker registers its own
 * "capped".
 * Returns: the delay in ms, >= 0. Threads: any (OpenSSL CSPRNG). Blocks: no. */
typedef struct ferry_backoff_capped_config {
    long long base_ms, cap_ms; /* both > 0 */
} ferry_backoff_capped_config;
FERRY_API long long ferry_backoff_capped(long attempts_made, const char *type, const char *reason,
                                         const ferry_job *job, void *userdata);

/* One record per job outcome, for the worker's structured log (callbacks.job_log). Never
 * contains job data.
 * Ownership: every string is borrowed for the duration of the call. */
typedef struct ferry_job_log {
    const char *queue, *name, *id;
    long attempt;         /* 1-based: attemptsMade + 1 of the run that ended */
    const char *trace_id; /* the job data's "traceId" (outbox envelope) when it is a
                             string the outbox accepts as a trace id: 1..128
                             (FERRY_OUTBOX_TRACE_ID_MAX) printable ASCII characters, else
                             "job-<queue>-<id>" */
    /* What was written to Redis: "completed", "retry" (transient, backoff), "failed"
     * (transient, attempts exhausted or the strategy returned -1), "permanent" (also jobs
     * failed without running: defa, max_started_attempts), "retry-later", "throttled"
     * (the queue was rate limited; FERRY_THROTTLED without a limiter is "retry-later"),
     * "lock-lost" (the finish was refused: another worker owns the job now, or it is
     * gone; also a finish given up after repeated script errors). */
    const char *outcome;
    const char *reason;    /* failure reason, NULL for completed */
    long long duration_ms; /* handler run time (0 for jobs failed without running) */
    long long age_ms;      /* now - the job's enqueue timestamp */
    long long delay_ms;    /* retry / retry-later / throttle delay, else 0 */
} ferry_job_log;

/* Format a record as one line without a newline: text (`json` = 0), e.g.
 *   queue=payments job=capture-payment id=42 attempt=2 trace=4bf9... outcome=retry-later
 *   duration_ms=12 age_ms=3400 delay_ms=5000 reason="gateway: HTTP 503"
 * or one JSON object (`json` = 1). Writes at most `cap` bytes into buf, including the NUL.
 * Returns: the length it needed (as snprintf: >= cap means truncated). Cannot fail.
 * Threads: any. Blocks: no. Ownership: `rec` is only read. */
FERRY_API size_t ferry_job_log_format(const ferry_job_log *rec, int json, char *buf, size_t cap);

/* What a worker-wide notice is about (ferry_worker_notice.kind). */
typedef enum ferry_worker_notice_kind {
    /* The worker lost Redis: one of its connections broke, or a connection it had to renew
     * could not be opened, while no other was known lost. One per outage for the whole
     * worker, however many lanes, connections and failed reconnect attempts it has; the
     * detail of each connection and attempt still goes to callbacks.error. */
    FERRY_NOTICE_REDIS_LOST = 1,
    /* Every connection known lost is open again: the outage begun by the last REDIS_LOST
     * is over (down_ms). Follows each REDIS_LOST once, unless the worker is closed before
     * Redis comes back. */
    FERRY_NOTICE_REDIS_RESTORED = 2,
    /* At start (on the thread in ferry_worker_start, before it returns): the server's
     * maxmemory-policy is not `noeviction`, so a full Redis may evict job keys and lose
     * jobs (BullMQ warns the same way). Not sent when the server does not say (INFO
     * refused by an ACL). */
    FERRY_NOTICE_EVICTION_POLICY = 3,
} ferry_worker_notice_kind;

/* A worker-wide notice (callbacks.notice; also a line to callbacks.log).
 * Ownership: every string is borrowed for the call. */
typedef struct ferry_worker_notice {
    ferry_worker_notice_kind kind;
    /* One line of English text for a log, without a trailing newline; the queue name and
     * any text from the server in it are escaped as by ferry_job_log_format's rules for
     * control characters (\n, \xNN...), so it cannot forge a second line. Never holds a
     * password. */
    const char *message;
    int code;           /* REDIS_LOST: the ferry_err of the failure that began it; else 0 */
    long long down_ms;  /* REDIS_RESTORED: ms since the REDIS_LOST; else 0 */
    const char *policy; /* EVICTION_POLICY: the policy as the server names it; else NULL */
} ferry_worker_notice;

/* Callbacks (all optional, NULL = not called), called one at a time on a worker thread (see
 * the top of this file). Which kind of event goes where: ferry/common.h "diagnostics".
 * Ownership: `job` and every string are valid only during the call; `userdata` is
 * ferry_worker_options.userdata. */
typedef struct ferry_worker_callbacks {
    void (*completed)(const ferry_job *job, const char *returnvalue, void *userdata);
    /* final = 1 when the job moved to failed (no more retries). */
    void (*failed)(const ferry_job *job, const char *reason, int final, void *userdata);
    void (*stalled)(const char *job_id, void *userdata);
    /* Connection loss, script errors, lost locks... with their code. The worker keeps
     * going. */
    void (*error)(const ferry_error *err, void *userdata);
    /* One call per job outcome once it is written to Redis (or refused): see
     * ferry_job_log. The CLI prints ferry_job_log_format lines to stderr. */
    void (*job_log)(const ferry_job_log *rec, void *userdata);
    /* Worker-wide notices: Redis lost / back (one pair per outage), and at start a
     * maxmemory-policy that may evict jobs (see ferry_worker_notice). Under the same rules
     * as the other callbacks; the EVICTION_POLICY one runs on the thread calling
     * ferry_worker_start. `n` is valid only during the call. */
    void (*notice)(const ferry_worker_notice *n, void *userdata);
    /* Log lines (ferry/common.h "diagnostics"): every report to `error` (at FERRY_LOG_WARN)
     * and every notice (REDIS_RESTORED at FERRY_LOG_INFO, the others at FERRY_LOG_WARN),
     * as its message, whether or not `error` / `notice` are set; called right after them,
     * under the same rules. */
    ferry_log_fn log;
} ferry_worker_callbacks;

/* Special values of ferry_worker_options.max_stalled_count. */
#define FERRY_STALLED_NEVER_FAIL (-1)
#define FERRY_STALLED_FAIL_FIRST (-2)

typedef struct ferry_worker_options {
    const ferry_redis_options *redis; /* NULL = defaults */
    const char *prefix;               /* NULL = "bull" */
    const char *name;        /* stored as processedBy (`pb`) and in the Redis client name: 1..256
                                bytes of printable ASCII without spaces; NULL = none */
    int concurrency;         /* handler threads; 0 = 1; max 1024 */
    int lock_duration_ms;    /* 0 = 30000 */
    int stalled_interval_ms; /* 0 = 30000 */
    /* Stalls (the job's worker died or lost its lock) recovered before the job fails:
     * n >= 1; 0 = 1 (BullMQ's default); FERRY_STALLED_NEVER_FAIL recovers it forever;
     * FERRY_STALLED_FAIL_FIRST is BullMQ's maxStalledCount 0: the first stall fails the
     * job (at most one start that ended unseen, for handlers that must not run twice). */
    int max_stalled_count;
    int max_started_attempts; /* 0 = unlimited */
    int drain_delay_ms;       /* longest wait for a job on an idle queue before looking
                                 again; 0 = 5000 */
    /* Most jobs taken per fetch call: 0 = the lane's concurrency (a larger value is capped
     * at it, so with two lanes fetch_batch = concurrency means half per call). */
    int fetch_batch;
    /* Worker-level removeOnComplete / removeOnFail (BullMQ JSON: true, false, n,
     * {"age":s,"count":n}; s may carry a fraction) used when a job has none. NULL = keep. */
    const char *remove_on_complete;
    const char *remove_on_fail;
    /* BullMQ worker limiter {max, duration}: at most limiter_max jobs are handed out per
     * limiter_duration_ms window across every worker of the queue that has a limiter
     * (Node workers included: they share the queue's `limiter` key). Both > 0, or both 0
     * for none. A queue-level meta max (ferry_queue_set_global_rate_limit) overrides
     * limiter_max, and limiter_duration_ms overrides the meta duration, as in BullMQ. */
    int limiter_max;
    int limiter_duration_ms;
    /* Custom backoff strategies by name, copied at create (at most
     * FERRY_BACKOFF_STRATEGIES_MAX, names unique, 1..FERRY_BACKOFF_NAME_MAX bytes, not
     * "fixed"/"exponential"; "capped" replaces the built-in one). NULL/0 = none. */
    const ferry_backoff_strategy *backoff_strategies;
    size_t nbackoff_strategies;
    ferry_worker_callbacks callbacks;
    void *userdata; /* passed to callbacks */
    /* Lanes: 1..FERRY_WORKER_LANES_MAX, or 0 = automatic (2 from concurrency 8 up, else 1);
     * never more than concurrency. Each lane takes concurrency / lanes of the handler
     * threads (the first ones one more when it does not divide) with its own two Redis
     * connections, and fetches and finishes on its own; callbacks, stats, stop and close
     * cover them all. Two lanes keep Redis busy between one lane's round trips
     * (docs/worker.md "Threads and connections" has the measurements). Node's
     * Queue.getWorkers() lists a worker once, whatever its lanes. */
    int lanes;
    /* A check run before the handler, for payload contracts (ferry/contract.h has one:
     * ferry_contracts_job_check). Returns 0 to run the handler; anything else fails the job
     * at once and for good (as FERRY_FAILED_PERMANENT, no retry) with the NUL-terminated
     * text it wrote into reason (cap bytes, at least 256) as failedReason ("check failed"
     * when it wrote none). NULL = no check.
     * Threads: on the handler thread that would run the job, outside the callback lock:
     *   several run at once on different jobs. Blocks: must not for long (it takes a
     *   handler slot). Ownership: job and reason only during the call; check_userdata is
     *   not owned and must outlive ferry_worker_close, as handler_userdata. */
    int (*check)(const ferry_job *job, char *reason, size_t cap, void *userdata);
    void *check_userdata;
    /* Called once for each job this worker moved to failed for good (FERRY_FAILED_PERMANENT,
     * attempts exhausted, a backoff strategy's -1, a failed check, stalled too many times,
     * max_started_attempts, data over max_payload_bytes), right after that was written to Redis,
     * with the stored failedReason; for a dead-letter recorder (ferry/deadletter.h:
     * ferry_dlq_recorder_final_failure). NULL = none.
     * Threads: under the same rules as the callbacks (one at a time, never after close has
     *   returned). Blocks: must not (it holds up the worker's finishing). Ownership: job and
     *   reason only during the call; final_failure_userdata as check_userdata. */
    void (*final_failure)(const ferry_job *job, const char *reason, void *userdata);
    void *final_failure_userdata;
    /* Largest job data (bytes of its JSON text) this worker runs: a job over it fails at
     * once and for good, without running, with the reason "job data is N bytes, over this
     * worker's limit of M bytes (max_payload_bytes)" (so it reaches final_failure and the
     * dead letters). The producer's own limit is ferry_queue_options.max_payload_bytes;
     * this one also holds for jobs other producers wrote. 0 = no limit; at most
     * FERRY_MAX_PAYLOAD_LIMIT. */
    size_t max_payload_bytes;
    /* Prometheus metrics (ferry/metrics.h; docs/metrics.md "The worker's metrics" lists
     * them): the worker registers its families in this registry, or uses them when another
     * worker of the process registered them already (several workers share one registry;
     * their series add up), and updates them as jobs finish. NULL = no metrics: nothing is
     * registered or looked up, nothing is updated. Not owned: it must outlive the worker
     * (ferry_worker_free), and abandoned handlers after a timed-out close. */
    ferry_metrics *metrics;
    /* 1 = the `name` label of the per-job-name families is "" for every job (the label is
     * kept, so a family's label set is the same whatever each worker says: for queues
     * whose job names are not a small fixed set). 0 = the job's name. */
    int metrics_no_job_name;
    /* BullMQ's own per-minute metrics, as Node's Worker option metrics: {maxDataPoints}
     * writes them (so Node's Queue.getMetrics('completed' | 'failed'), bull-board and
     * Taskforce charts show this worker's jobs): every completion and every final failure
     * this worker writes counts in the hash <prefix>:<queue>:metrics:completed / :failed
     * (fields count, prevTS, prevCount), and once a minute has passed since the last data
     * point the finish pushes the jobs of the minute (and a 0 per empty minute) onto its
     * :data list, which keeps the newest N points. Retries, retry-later and throttles do not
     * count, nor jobs failed by the stalled check (as in Node). 0 = off (the default: the
     * finish sends nothing more and touches no metrics key); 1..FERRY_BULLMQ_METRICS_POINTS_MAX
     * = on, keeping that many points (BullMQ's MetricsTime.ONE_WEEK is 10080). Independent
     * of `metrics` above (ferry's Prometheus series). */
    long bullmq_metrics_max_points;
} ferry_worker_options;

/* Fill *o (not NULL) with defaults (all zero / NULL).
 * Threads: any. Blocks: no; no allocation. */
FERRY_API void ferry_worker_options_init(ferry_worker_options *o);

/* Create a worker for queue `queue`. Validates options; does not connect.
 * Returns: 0 and a new worker in *out, freed with ferry_worker_free().
 * Errors: FERRY_EINVAL naming the bad option (the ranges above, queue name, prefix, remove
 *   options, strategy table); FERRY_ENOMEM.
 * Blocks: no. Threads: any; workers share no state.
 * Ownership: options are copied (every string, the Redis options and the backoff strategy
 *   table). Not owned, and not copied: `handler_userdata`, `opts->userdata` and each
 *   strategy's userdata. They must stay valid until ferry_worker_close has returned 0;
 *   after FERRY_ETIMEDOUT, abandoned handlers may still run and call the handler's and the
 *   strategies' code with them, so keep them alive (treat them as leaked) until the
 *   process exits. */
FERRY_API int ferry_worker_create(const char *queue, const ferry_worker_options *opts,
                                  ferry_handler_fn handler, void *handler_userdata,
                                  ferry_worker **out, ferry_error *err);

/* Connect and start the worker's threads. Once connected, a server whose maxmemory-policy
 * is not noeviction gets a FERRY_NOTICE_EVICTION_POLICY notice, on the calling thread,
 * before the threads start. After a successful start, connection loss is handled by
 * reconnecting with capped backoff (reported through callbacks.error, and once per outage
 * through callbacks.notice: REDIS_LOST, then REDIS_RESTORED; each also to callbacks.log).
 * Returns: 0 once running.
 * Errors: connect errors (FERRY_EIO, FERRY_ETIMEDOUT, FERRY_ETLS, FERRY_EAUTH, FERRY_EREDIS:
 *   see ferry_worker_start_retryable). Every lane connects before any lane starts a thread,
 *   so a start that failed to connect took no job and may be tried again. After any other
 *   failure (no thread could be made), or once ferry_worker_close was called: FERRY_ESTATE,
 *   and the worker may only be freed.
 * Blocks: up to the connect timeout per connection (each lane's two are opened in turn),
 *   plus a command timeout for the server checks. Threads: the controlling thread. */
FERRY_API int ferry_worker_start(ferry_worker *w, ferry_error *err);

/* ferry_worker_start, giving up connecting `timeout_ms` after the call (0 = no bound but
 * each connection's connect timeout): every connection of this start, and the reads made
 * on it before the threads start, get at most the time left. For a caller that retries
 * the start until a deadline of its own. Reconnects after the start are not affected.
 * Returns, Threads: as ferry_worker_start.
 * Errors: as ferry_worker_start; FERRY_ETIMEDOUT (or a connect timeout) when the time
 *   passes; FERRY_EINVAL for timeout_ms < 0.
 * Blocks: at most timeout_ms (when > 0). */
FERRY_API int ferry_worker_start_within(ferry_worker *w, int timeout_ms, ferry_error *err);

/* Predicate: whether a failed ferry_worker_start is worth trying again later, for a
 * program that waits for its Redis to come up.
 * Returns: 1 for what passes by itself (connection refused or reset, a timeout, an unknown
 *   host - FERRY_EIO, FERRY_ETIMEDOUT - and a server still loading its data or busy:
 *   FERRY_EREDIS with LOADING, BUSY, MASTERDOWN or TRYAGAIN; a server answering "ERR max
 *   number of clients reached" counts as passing); 0 for what needs a change of
 *   configuration (FERRY_EAUTH: wrong password or user, SELECT refused; FERRY_ETLS:
 *   certificate or handshake failure; FERRY_EINVAL; any other Redis error, such as an ACL
 *   refusing a command, also when the server closed the connection right after answering
 *   with it (an FERRY_EIO whose message quotes the answer); FERRY_ESTATE: the worker may not
 *   be started again) and for NULL. Cannot fail.
 * Threads: any. Blocks: no (pure). */
FERRY_API int ferry_worker_start_retryable(const ferry_error *err);

/* Ask the worker to stop fetching (ferry_worker_close then finishes what runs).
 * Threads: any (not a signal handler). Blocks: no, returns at once. */
FERRY_API void ferry_worker_stop(ferry_worker *w);

/* Graceful close: stop fetching, wait up to deadline_ms for running handlers to finish and
 * their results to be written, then release connections and join threads. Jobs already
 * fetched but not started yet are run too. Handlers still running at the deadline are
 * abandoned, and fetched jobs not started by then are never started: both keep their locks
 * until they expire and are recovered as stalled by any worker (counting a stall, as for a
 * worker that died).
 * Returns: 0 when everything finished and was written in time. Calling it again returns
 *   what the first call returned, at once.
 * Errors: FERRY_ETIMEDOUT when the deadline passed with handlers still running (threads of
 *   those handlers are detached) or with finished results not yet written (Redis
 *   unreachable, or a fetch in flight that Redis does not answer; those jobs are recovered
 *   as stalled once their locks expire).
 * Blocks: up to deadline_ms. Threads: the controlling thread.
 * Ownership: after FERRY_ETIMEDOUT, abandoned handlers may still use the userdata, which
 *   must therefore be kept. */
FERRY_API int ferry_worker_close(ferry_worker *w, int deadline_ms);

/* How many lanes worker `w` (not NULL) runs: the `lanes` option, or the automatic choice,
 * capped at concurrency. Fixed at create.
 * Returns: 1..FERRY_WORKER_LANES_MAX. Cannot fail. Threads: any. Blocks: no. */
FERRY_API int ferry_worker_lanes(const ferry_worker *w);

/* Free a closed (or never started) worker. NULL accepted.
 * Threads: the controlling thread, after ferry_worker_close returned. */
FERRY_API void ferry_worker_free(ferry_worker *w);

/* Totals since start. */
typedef struct ferry_worker_stats {
    unsigned long long completed, failed, retried, stalled, lock_lost;
    /* moves to delayed without an attempt (FERRY_RETRY_LATER, and FERRY_THROTTLED without
     * a limiter) / queue throttles (FERRY_THROTTLED with a limiter) */
    unsigned long long retried_later, throttled;
    int busy; /* handlers running now */
} ferry_worker_stats;
/* Copy the worker's totals since start into *out (a consistent snapshot, all lanes summed).
 * Threads: any, while the worker lives. Blocks: no. */
FERRY_API void ferry_worker_get_stats(ferry_worker *w, ferry_worker_stats *out);

/* ---- for a program that drives a worker from the command line (the `ferry worker` CLI) -- */

/* Check a worker-level removeOnComplete / removeOnFail value (the JSON text that
 * ferry_worker_options.remove_on_complete and remove_on_fail take: true, false, n,
 * {"age":s,"count":n,"limit":n}) without creating a worker, so that a bad value can be
 * refused as a usage error before anything connects.
 * Returns: 0 when ferry_worker_create would accept the value; NULL and "" are accepted
 * (keep every job).
 * Errors: FERRY_EINVAL (not such a value) or FERRY_ETOOBIG (longer than
 * FERRY_JOB_OPTS_MAX), with err->message saying what is wrong ("keepJobs: ..."), not
 * naming the option; err may be NULL.
 * Blocks: no (pure). Threads: any. Ownership: `json` is only read, nothing is kept. */
FERRY_API int ferry_keep_jobs_check(const char *json, ferry_error *err);

/* For a program stopping (a signal arrived) while ferry_worker_start may still be
 * connecting, which can take the whole command timeout: make that start launch no thread,
 * so the program can exit at once.
 * Returns: 1 when no lane thread was launched and start will now launch none (it fails,
 * having taken no job: with FERRY_ESTATE, or with its own connect error when connecting
 * failed first; the worker may then only be freed); 0 when the
 * lanes are launched already (stop and close as usual) or `w` is NULL.
 * Errors: none. Blocks: no (takes the worker's mutex briefly). Threads: any thread, but not
 * from a signal handler (it locks a mutex). Ownership: `w` stays the caller's. */
FERRY_API int ferry_worker_abort_start(ferry_worker *w);

#ifdef __cplusplus
}
#endif
#endif

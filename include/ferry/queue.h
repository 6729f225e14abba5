/* ferry/queue.h - the producer side of a BullMQ-compatible queue.
 *
 * A ferry_queue adds jobs to a queue and administers it. It writes exactly what Node BullMQ
 * 6.7.0 writes, so Node workers run ferry's jobs and ferry reads Node's (docs/queue.md has
 * what each call writes).
 *
 * For every function taking a ferry_queue (unless it says otherwise):
 * Threads: a handle serialises its calls with an internal mutex, so it may be shared by
 *   threads; calls on it then run one at a time.
 * Blocks: one connection per handle; a call ends within connect_timeout_ms +
 *   command_timeout_ms when Redis is unreachable or frozen (a broken connection is reopened
 *   first). Reads, pause / resume and the queue-level settings are retried once on a fresh
 *   connection within that budget; adds and removes are not (after a lost reply nobody
 *   knows whether they ran).
 * Errors: transport errors (FERRY_EIO, FERRY_ETIMEDOUT, FERRY_EREDIS, ...) with the detail
 *   in *err, besides those each call names.
 * Ownership: strings passed in are borrowed for the call; nothing is allocated for the
 *   caller unless the call says so. */
#ifndef FERRY_QUEUE_H
#define FERRY_QUEUE_H

#include "common.h"
#include "redis.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FERRY_DEFAULT_PREFIX "bull"
#define FERRY_DEFAULT_MAX_PAYLOAD (512u * 1024u)

/* Limits of what a queue accepts, in bytes unless said. Input over a limit is refused with
 * FERRY_EINVAL or FERRY_ETOOBIG naming it, never cut. */
#define FERRY_QUEUE_NAME_MAX 512                         /* a queue name, and a key prefix */
#define FERRY_JOB_NAME_MAX 1024                          /* a job name */
#define FERRY_JOB_ID_MAX 1024                            /* a custom job id (opts jobId) */
#define FERRY_JOB_OPTS_MAX (64 * 1024)                   /* job options JSON text, per job */
#define FERRY_JOB_OPTS_DEPTH_MAX 32                      /* nesting of job options JSON */
#define FERRY_JOB_DATA_DEPTH_MAX 512                     /* nesting of job data JSON */
#define FERRY_JOB_PRIORITY_MAX 2097151                   /* opts priority, 0..this */
#define FERRY_MAX_PAYLOAD_LIMIT ((size_t)512 << 20)      /* largest max_payload_bytes accepted */
/* A job id that ferry_queue_get_job / ferry_queue_remove_job accept: other producers' ids may
 * be longer than FERRY_JOB_ID_MAX (a scheduler iteration "repeat:<id>:<ms>" with an id of
 * FERRY_SCHEDULER_FOREIGN_ID_MAX bytes, plus 32). */
#define FERRY_JOB_FOREIGN_ID_MAX 65568
#define FERRY_QUEUE_BULK_MAX 1000000 /* jobs per ferry_queue_add_bulk / _check_jobs call */

typedef struct ferry_queue ferry_queue;

typedef struct ferry_queue_options {
    const ferry_redis_options *redis; /* NULL = defaults (FERRY_DEFAULT_REDIS_URL) */
    const char *prefix;               /* NULL = "bull"; may contain {hash tags};
                                         1..FERRY_QUEUE_NAME_MAX bytes (a worker also needs
                                         printable ASCII without spaces: it names its Redis
                                         connection after it) */
    /* Default JobsOptions (BullMQ JSON). `default_job_opts`, when set, replaces
     * `global_default_job_opts` as a whole (as a per-queue defaultJobOptions replaces a
     * global one in Node applications); a job's own options are then merged over it key by
     * key (shallow). */
    const char *global_default_job_opts;
    const char *default_job_opts;
    size_t max_payload_bytes; /* limit on a job's data JSON; 0 = 512 KiB */
    /* BullMQ's skipMetasUpdate: open without writing the queue's meta, so that looking at a
     * queue that does not exist creates no key. For read-only tools; 0 = write it. */
    int skip_meta_update;
    /* Job options (a job's own and the defaults above) may hold keys BullMQ 6.7.0's
     * JobsOptions does not know: they are stored as given, for options of a later BullMQ.
     * 0 = refuse them (FERRY_EINVAL "unknown job option "atempts" (did you mean
     * "attempts"?)"), also in backoff, removeOnComplete/removeOnFail, deduplication, parent
     * and telemetry. `repeat` is refused either way (see ferry_scheduler_upsert). */
    int allow_unknown_opts;
} ferry_queue_options;

/* Fill *o with defaults (all zero / NULL; NULL accepted). Threads: any. Blocks: no; no
 * allocation. */
FERRY_API void ferry_queue_options_init(ferry_queue_options *o);

/* Open queue `name` (1..FERRY_QUEUE_NAME_MAX bytes, no ':'): validates options, connects,
 * loads scripts and writes the queue's meta (unless skip_meta_update). A queue jobs are
 * added to also needs a name of valid UTF-8 without control characters (C0, DEL, C1: such
 * a name could forge log lines), unless skip_meta_update (a read-only look at a queue
 * another producer made, e.g. to count or remove its jobs); such a handle then refuses
 * every add. Messages show names escaped.
 * Returns: 0 and a new handle in *out, freed with ferry_queue_close().
 * Errors: FERRY_EINVAL naming the bad name or option; connect errors (FERRY_EIO,
 *   FERRY_ETIMEDOUT, FERRY_ETLS, FERRY_EAUTH, FERRY_EREDIS).
 * Blocks: up to the connect timeout plus one command timeout.
 * Threads: any; handles share no state.
 * Ownership: options (and their strings, the Redis options) are copied. */
FERRY_API int ferry_queue_open(const char *name, const ferry_queue_options *opts, ferry_queue **out,
                               ferry_error *err);

/* Close the connection and free the handle. NULL is accepted.
 * Threads: not concurrently with any other call on the same handle (the other functions
 *   may be called from several threads at once; close must come after all of them
 *   returned). */
FERRY_API void ferry_queue_close(ferry_queue *q);

/* One job to add.
 * Ownership: all strings are borrowed for the duration of the call. */
typedef struct ferry_job_spec {
    const char *name;      /* job name, required, at most FERRY_JOB_NAME_MAX bytes */
    const char *data_json; /* JSON text, nested at most FERRY_JOB_DATA_DEPTH_MAX levels;
                              NULL = "{}" */
    const char *opts_json; /* BullMQ JobsOptions JSON (jobId, attempts, backoff, delay,
                              priority, lifo, removeOnComplete, removeOnFail, ...); NULL = {}.
                              A custom jobId: at most FERRY_JOB_ID_MAX bytes, not an
                              integer, no ':' (but the legacy a:b:c), not the name of one of
                              the queue's own keys ("meta", "wait", "id", ...) */
} ferry_job_spec;

/* Check n jobs exactly as ferry_queue_add_bulk on a handle opened with (name, opts) would,
 * without connecting: the queue name and options, the default job options and every job's
 * name, data and options (custom id included). Lets a caller refuse bad input before
 * ferry_queue_open writes anything to Redis. Redis is not asked, so an add that passes can
 * still fail there.
 * Returns: 0 when every job would be accepted.
 * Errors: FERRY_EINVAL / FERRY_ETOOBIG with the same message the add would give (naming the
 *   job's index when n > 1; FERRY_ETOOBIG for n over FERRY_QUEUE_BULK_MAX).
 * Blocks: no (no I/O). Threads: any. Ownership: nothing is allocated for the caller. */
FERRY_API int ferry_queue_check_jobs(const char *name, const ferry_queue_options *opts,
                                     const ferry_job_spec *jobs, size_t n, ferry_error *err);

/* Add one job.
 * Returns: 0; *job_id (if non-NULL) receives the job's id. For a duplicate custom jobId it
 *   is the existing job's id and nothing is written (BullMQ semantics).
 * Errors: FERRY_EINVAL (bad name/JSON/options, naming the field), FERRY_ETOOBIG (data over
 *   max_payload_bytes), transport errors. Not retried after a lost reply: retry it
 *   yourself, ideally with a custom jobId so that a retry cannot duplicate the job.
 * Blocks: one round trip.
 * Ownership: *job_id is malloc'd; the caller frees it with free(). */
FERRY_API int ferry_queue_add(ferry_queue *q, const ferry_job_spec *job, char **job_id,
                              ferry_error *err);

/* Add n jobs (at most FERRY_QUEUE_BULK_MAX) in pipelined round trips (one per ~64 MiB).
 * Every spec is validated before anything is sent.
 * Returns: 0; if ids is non-NULL, ids[i] receives the id of jobs[i].
 * Errors: as ferry_queue_add; FERRY_ETOOBIG for n over FERRY_QUEUE_BULK_MAX; if one job is
 *   invalid nothing is added and *err names its index; if Redis fails while sending, the message
 * says how many jobs were confirmed added. Blocks: the queue's budget per round trip. Ownership:
 * each ids[i] is malloc'd; the caller frees each. */
FERRY_API int ferry_queue_add_bulk(ferry_queue *q, const ferry_job_spec *jobs, size_t n, char **ids,
                                   ferry_error *err);

/* Job counts as BullMQ 6.7.0 getJobCounts() reports them (waiting excludes prioritized
 * and the legacy paused list, which is reported separately). */
typedef struct ferry_job_counts {
    long long waiting, active, completed, failed, delayed, prioritized, waiting_children, paused;
} ferry_job_counts;

/* Count the queue's jobs by state into *out. Returns: 0. Blocks: one round trip. */
FERRY_API int ferry_queue_counts(ferry_queue *q, ferry_job_counts *out, ferry_error *err);

/* How long the queue's oldest ready job has waited and its oldest active job has run, for
 * a backlog-age alert that a delayed or backed-off job does not set off (BullMQ keeps no
 * "ready since" field; docs/metrics.md "The oldest ready age" has the rule and its
 * approximations).
 * oldest_ready_s: the largest now - ready over the jobs in wait, paused and prioritized,
 *   and over delayed jobs already due that no worker has promoted yet, where a job's ready
 *   time is
 *     max(timestamp + opts.delay,                    -- first due (delay as added)
 *         processedOn [+ the smallest backoff of attempt atm when ats == atm >= 1])
 *   and an overdue delayed job's is its due time (score / 4096). So a delayed job that has
 *   just become due is not old, and a job retried after a backoff counts from when the
 *   backoff ended (to within its last run time and the jitter share, both counted as age).
 *   Approximations: a job postponed without spending an attempt (retry later, throttled
 *   without a limiter, DelayedError) counts from its last start; one retried by hand from
 *   failed / completed (BullMQ clears processedOn), and a flow parent released by its
 *   children, count from their creation; a custom backoff strategy's delay is not known
 *   (counted as age).
 *   Bounded: the first and last FERRY_QUEUE_AGES_SAMPLE members of wait, paused and
 *   prioritized are read. wait's right end holds the oldest plain job and, beyond it, the
 *   LIFO (RPUSHed) ones; its left end the newest adds, promoted and retried jobs; so an
 *   older job is missed only deep inside (behind over FERRY_QUEUE_AGES_SAMPLE LIFO jobs,
 *   or a long-overdue promoted job behind as many newer ones). prioritized gives the
 *   oldest of its most and least urgent priority levels; a middle level's is not seen.
 * oldest_active_s: now - processedOn (its latest start) of the oldest job in active (both
 *   ends of the list, FERRY_QUEUE_AGES_SAMPLE each).
 * Ages in seconds from this host's clock (BullMQ's times are its writers' clocks), never
 *   negative; ready_found / active_found = 0 (and the age 0) when the queue has no such job.
 * Returns: 0 and *out.
 * Errors: FERRY_EINVAL for NULL; transport errors; FERRY_EPROTO for an unexpected reply.
 * Blocks: one round trip (one read-only script, at most 8 * FERRY_QUEUE_AGES_SAMPLE + 1
 *   job hashes read; retried once on a fresh connection). Threads: as every call on q. */
#define FERRY_QUEUE_AGES_SAMPLE 10
/* (The type is ferry_job_ages, as ferry_job_counts beside ferry_queue_counts: C does not
 * allow a typedef and a function of the same name.) */
typedef struct ferry_job_ages {
    double oldest_ready_s;
    double oldest_active_s;
    int ready_found, active_found;
} ferry_job_ages;
FERRY_API int ferry_queue_ages(ferry_queue *q, ferry_job_ages *out, ferry_error *err);

/* Whether the queue exists: a misspelled name looks like an empty queue to counts.
 * Returns: 0, and *exists = 1 when any of the queue's own keys (meta, id, events, marker,
 *   the job lists and sets, repeat, stalled-check, limiter) exists in Redis, else 0.
 * Blocks: one round trip. */
FERRY_API int ferry_queue_exists(ferry_queue *q, int *exists, ferry_error *err);

/* Pause / resume the queue for every worker, Node or ferry (BullMQ v6 semantics: jobs
 * stay in `wait`; resume also moves the jobs of a legacy v5 paused list back).
 * Returns: 0. Blocks: one round trip. */
FERRY_API int ferry_queue_pause(ferry_queue *q, ferry_error *err);
FERRY_API int ferry_queue_resume(ferry_queue *q, ferry_error *err);
/* Returns: 0, and *paused = 1 when the queue is paused, else 0. Blocks: one round trip. */
FERRY_API int ferry_queue_is_paused(ferry_queue *q, int *paused, ferry_error *err);

/* Everything stored about one job.
 * Ownership: strings are NUL-terminated and owned by the struct; NULL when the field is
 *   absent. Free with ferry_job_info_free(). */
typedef struct ferry_job_info {
    char *id, *name, *data, *opts, *state; /* state: waiting, active, delayed, prioritized,
                                               completed, failed, waiting-children, unknown */
    char *returnvalue, *failed_reason, *stacktrace, *progress, *processed_by;
    long long timestamp, delay, priority, processed_on, finished_on; /* -1 when absent */
    long long attempts_made, attempts_started, stalled_count;        /* 0 when absent */
} ferry_job_info;

/* Read a job: its hash fields and its state.
 * Ids (here and in ferry_queue_remove_job) up to FERRY_JOB_FOREIGN_ID_MAX bytes: other
 * producers' ids may be longer than the FERRY_JOB_ID_MAX bytes ferry_queue_add takes.
 * Returns: 0 and *out. Errors: FERRY_ENOTFOUND when no such job; FERRY_EINVAL for a bad id.
 * Blocks: one round trip.
 * Ownership: *out is freed with ferry_job_info_free (NULL accepted). */
FERRY_API int ferry_queue_get_job(ferry_queue *q, const char *job_id, ferry_job_info **out,
                                  ferry_error *err);
FERRY_API void ferry_job_info_free(ferry_job_info *info);

/* Most ids one ferry_queue_job_ids call returns. */
#define FERRY_QUEUE_IDS_MAX 10000

/* The ids of the queue's jobs in one state, positions start..end (0-based, inclusive; end
 * -1 = to the last, at most FERRY_QUEUE_IDS_MAX of them), as BullMQ 6.7.0's
 * Queue.getJobs([state], start, end, asc) orders them: by default newest first (lists
 * wait / paused / active from the head; sorted sets by descending score: completed and
 * failed by finish time, delayed by due time, prioritized by priority), ascending = 1 for
 * oldest first. state: "wait" (or Node's "waiting"), "paused", "active", "delayed",
 * "prioritized", "completed", "failed" or "waiting-children". To page through a state that
 * changes meanwhile, read newest first: jobs added during the walk only make it see some ids
 * twice.
 * Returns: 0 with *ids (NULL when none) and *n.
 * Errors: FERRY_EINVAL for an unknown state or a bad range (naming it); transport errors.
 * Blocks: one round trip (read: retried once on a fresh connection).
 * Ownership: free *ids with ferry_queue_job_ids_free(*ids, *n). */
FERRY_API int ferry_queue_job_ids(ferry_queue *q, const char *state, long long start,
                                  long long end, int ascending, char ***ids, size_t *n,
                                  ferry_error *err);
/* Free what ferry_queue_job_ids returned (NULL accepted). Threads: any. Blocks: no. */
FERRY_API void ferry_queue_job_ids_free(char **ids, size_t n);

/* Remove a job in any state (children of a flow parent are not removed).
 * Returns: 0.
 * Errors: FERRY_ENOTFOUND if it does not exist; FERRY_ESTATE if it is locked by a worker
 *   (active), or is the pending iteration of a job scheduler (remove the scheduler
 *   instead). Not retried after a lost reply.
 * Blocks: one round trip. */
FERRY_API int ferry_queue_remove_job(ferry_queue *q, const char *job_id, ferry_error *err);

/* Delete the whole queue, as BullMQ 6.7.0's queue.obliterate({force}) does: every job in
 * every state, the job schedulers, and the queue's own keys (docs/queue.md lists them).
 * Only keys derived from this queue's name and its jobs' ids are touched, never a pattern,
 * so other queues under the same prefix are safe. The queue is paused first (so no worker
 * takes a job meanwhile). Stop the queue's workers first: running ones recreate their
 * bookkeeping keys. The handle stays open: jobs added with it later start a new queue (ids
 * from 1; only ferry_queue_open writes meta.version again).
 * Returns: 0; *deleted_keys (may be NULL) receives how many keys were deleted, also after
 *   a failure midway.
 * Errors: FERRY_ESTATE, changing nothing, while jobs are active, unless `force` is
 *   non-zero: then active jobs are deleted too and their workers fail to finish them (lock
 *   lost); FERRY_ESTATE if someone resumes the queue midway (run it again).
 * Blocks: one round trip per chunk of jobs (a few ms of Redis time each) within the queue's
 *   timeouts, a chunk retried once after a transport failure; the handle's mutex is held
 *   throughout, so other calls on the handle wait. */
FERRY_API int ferry_queue_obliterate(ferry_queue *q, int force, long long *deleted_keys,
                                     ferry_error *err);

/* ---- rate limits and global concurrency (BullMQ 6.7.0 queue-level settings) ----------
 * All of these write what Node's Queue methods write, so Node and ferry workers obey them
 * alike (docs/queue.md "Rate limits and concurrency"). For each:
 * Returns: 0. Blocks: one round trip (idempotent, retried once on a fresh connection).
 * A change does not wake idle workers (BullMQ does not either): a worker waiting for jobs
 * sees it at its next fetch, at the latest after its drain delay (5 s by default). */

#define FERRY_LIMIT_MS_MAX (1LL << 40)    /* longest rate limit / window, ms (~34 years) */
#define FERRY_LIMIT_COUNT_MAX 2147483647L /* largest global concurrency / rate limit max */

/* Rate-limit the queue for `ms` (BullMQ queue.rateLimit). Every worker that has a limiter
 * (its own, or the queue's global rate limit) hands out no job until it expires; workers
 * without any limiter are NOT stopped (BullMQ behaviour).
 * Errors: FERRY_EINVAL unless ms is in [1, FERRY_LIMIT_MS_MAX]. */
FERRY_API int ferry_queue_rate_limit(ferry_queue *q, long long ms, ferry_error *err);
/* Returns: 0 and in *ttl_ms what BullMQ's queue.getRateLimitTtl() (no maxJobs) returns,
 * read atomically:
 * - when the queue has a global rate limit: the ms until limited workers may fetch again
 *   (0 while the window's count is below its max);
 * - otherwise the limiter's remaining time: -2 when there is none, -1 when it has no
 *   expiry (a worker limiter's window counts here even when it is not full).
 * Unlike BullMQ it never deletes the limiter. */
FERRY_API int ferry_queue_rate_limit_ttl(ferry_queue *q, long long *ttl_ms, ferry_error *err);
/* End any rate limit (BullMQ removeRateLimitKey): limited workers resume at once (after
 * their own wait for the old TTL ends).
 * Returns: 0, and *removed (may be NULL) = 1 when a limit existed, else 0. */
FERRY_API int ferry_queue_clear_rate_limit(ferry_queue *q, int *removed, ferry_error *err);

/* Global concurrency: workers fetch nothing while n or more of the queue's jobs are
 * active, so at most n run at once across all workers, Node or ferry. set takes n in
 * [1, FERRY_LIMIT_COUNT_MAX] (else FERRY_EINVAL); remove deletes the setting; get writes
 * 0 to *n when unset.
 * Errors (get): FERRY_EPROTO (naming the stored text) when the stored value is not an
 *   integer in [1, FERRY_LIMIT_COUNT_MAX] (e.g. Node's setGlobalConcurrency(0), which
 *   stops every worker). */
FERRY_API int ferry_queue_set_global_concurrency(ferry_queue *q, long n, ferry_error *err);
FERRY_API int ferry_queue_remove_global_concurrency(ferry_queue *q, ferry_error *err);
FERRY_API int ferry_queue_get_global_concurrency(ferry_queue *q, long *n, ferry_error *err);

/* Global rate limit: at most max jobs per duration_ms window across all workers,
 * including those without a limiter of their own. A worker's own limiter duration
 * overrides duration_ms (BullMQ). set takes max in [1, FERRY_LIMIT_COUNT_MAX] and
 * duration_ms in [1, FERRY_LIMIT_MS_MAX] (else FERRY_EINVAL), written at once; get writes
 * 0/0 when neither is set.
 * Errors (get): FERRY_EPROTO when only one of the two is set or a value is not an integer
 *   in those ranges (Node's getGlobalRateLimit() reports null for a half-set pair, but
 *   workers still obey the max). */
FERRY_API int ferry_queue_set_global_rate_limit(ferry_queue *q, long max, long long duration_ms,
                                                ferry_error *err);
FERRY_API int ferry_queue_remove_global_rate_limit(ferry_queue *q, ferry_error *err);
FERRY_API int ferry_queue_get_global_rate_limit(ferry_queue *q, long *max, long long *duration_ms,
                                                ferry_error *err);

/* The queue's name and prefix.
 * Returns: borrowed strings, valid while the handle lives (NULL for a NULL handle).
 * Blocks: no. Threads: any. */
FERRY_API const char *ferry_queue_name(const ferry_queue *q);
FERRY_API const char *ferry_queue_prefix(const ferry_queue *q);

/* ---- putting jobs back in line (BullMQ 6.7.0 Job.retry / Queue.retryJobs / Job.promote /
 * Queue.promoteJobs) -------------------------------------------------------------------
 * Each writes what Node's method writes on the same state (docs/queue.md "Retry, promote,
 * clean, drain, list, logs"): the same lists and sets, hash fields, marker and `waiting`
 * events, so Node and ferry workers pick the jobs up alike. Single-job calls are one script;
 * they are not retried after a lost reply (a second run would report the wrong state). */

/* ferry_queue_retry_job flags: also forget the attempts made (atm) / started (ats), as
 * Node's job.retry(state, {resetAttemptsMade, resetAttemptsStarted}). Without them the
 * counts stay, so a job with no attempts left fails for good at its next error. */
#define FERRY_RETRY_RESET_ATTEMPTS 1u
#define FERRY_RETRY_RESET_STARTED 2u

/* Most jobs one ferry_queue_retry_jobs / ferry_queue_promote_jobs call moves (its limit). */
#define FERRY_QUEUE_MOVE_MAX 1000000000LL

/* Retry one finished job (Job.retry): out of the failed (or completed) set, finishedOn,
 * processedOn and failedReason (or returnvalue) deleted (the stacktrace and, without flags,
 * the attempt counts stay), then to the head of wait (its tail when the job's opts say
 * lifo) or to prioritized when it has a priority, marker unless the queue is paused or at
 * its global concurrency, event `waiting {jobId, prev: <state>}`. A flow child becomes a
 * pending dependency of its parent again.
 * state: "failed", "completed", or NULL for whichever of the two the job is in.
 * flags: FERRY_RETRY_RESET_* or 0.
 * Returns: 0; *from (may be NULL) = "failed" or "completed" (static strings), the state it
 *   left.
 * Errors: FERRY_ENOTFOUND when no such job; FERRY_ESTATE (nothing changed) when it is not in
 *   that state (NULL: in neither); FERRY_EINVAL for a bad id (as ferry_queue_get_job),
 *   state or flags.
 * Blocks: one round trip. */
FERRY_API int ferry_queue_retry_job(ferry_queue *q, const char *job_id, const char *state,
                                    unsigned flags, const char **from, ferry_error *err);

/* Retry the queue's finished jobs (Queue.retryJobs({state})): every job of the failed (or
 * completed) set that finished before the call started, oldest first, at most `limit`
 * (0 = all, up to FERRY_QUEUE_MOVE_MAX), goes to the head of wait (so the oldest runs
 * first) - whatever its priority or lifo, as BullMQ does - with the fields and events of
 * ferry_queue_retry_job and the attempt counts kept. Runs in chunks of 1000 jobs (BullMQ's
 * count), one script call each.
 * state: "failed" or "completed"; NULL = "failed".
 * Returns: 0; *moved (may be NULL) = how many jobs went back, also after a failure midway
 *   (a chunk whose reply was lost is retried once and is then missing from the count).
 * Errors: FERRY_EINVAL for a bad state or limit.
 * Blocks: one round trip per chunk, each within the queue's budget; the handle's mutex is
 *   held throughout. */
FERRY_API int ferry_queue_retry_jobs(ferry_queue *q, const char *state, long long limit,
                                     long long *moved, ferry_error *err);

/* Promote one delayed job to run now (Job.promote): out of delayed, to the head of wait
 * (lifo does not apply) or to prioritized when it has a priority, its `delay` set to 0,
 * marker unless paused or at the global concurrency, event `waiting {prev: delayed}`.
 * Returns: 0.
 * Errors: FERRY_ENOTFOUND when no such job; FERRY_ESTATE (nothing changed) when it is not
 *   delayed; FERRY_EINVAL for a bad id.
 * Blocks: one round trip. */
FERRY_API int ferry_queue_promote_job(ferry_queue *q, const char *job_id, ferry_error *err);

/* Promote the delayed jobs (Queue.promoteJobs()): soonest due first, at most `limit` (0 =
 * all, up to FERRY_QUEUE_MOVE_MAX), each to the head of wait - whatever its priority, and
 * keeping its `delay` field, as BullMQ's bulk promotion does (unlike
 * ferry_queue_promote_job) - with events `waiting {prev: delayed}` and the marker. Chunks
 * of 1000 as ferry_queue_retry_jobs.
 * Returns: 0; *moved (may be NULL) = how many were promoted, also after a failure midway.
 * Errors: FERRY_EINVAL for a bad limit; FERRY_ETOOBIG after 10^6 chunks (something adds
 *   delayed jobs as fast as they are promoted).
 * Blocks: as ferry_queue_retry_jobs. */
FERRY_API int ferry_queue_promote_jobs(ferry_queue *q, long long limit, long long *moved,
                                       ferry_error *err);

/* ---- deleting jobs in bulk (BullMQ 6.7.0 Queue.clean / Queue.drain) ------------------
 * Jobs are deleted as Node deletes them there: hash and sub-keys, the deduplication key
 * they own, and their flow-parent link (a parent in the same queue left without pending
 * children is deleted too; one in another queue goes to wait); no `removed` events. The
 * pending iteration of a live job scheduler is never deleted. */

/* Delete the jobs of one state older than grace_ms (Queue.clean(grace, limit, state)):
 * completed / failed jobs finished at least grace_ms ago; wait / paused jobs (from the
 * oldest end) whose finishedOn, else processedOn, else timestamp is that old; delayed by
 * processedOn, else timestamp; prioritized by timestamp. At most `limit` jobs (0 = all, up
 * to FERRY_QUEUE_MOVE_MAX), in calls of at most 10000 jobs (BullMQ's), each writing event
 * `cleaned {count}` (also for 0, as Node). As in BullMQ, each call looks only at the
 * 10000 (or `limit`) jobs of its end of the state: for delayed and prioritized, older jobs
 * beyond younger ones there stay. Unlike Node, a limit over 10000 is kept exactly.
 * state: "completed", "failed", "delayed", "wait" (or "waiting"), "paused" (the legacy
 *   list) or "prioritized". grace_ms: 0..FERRY_LIMIT_MS_MAX.
 * Returns: 0; *n = how many were deleted, also after a failure midway; when ids is not
 *   NULL, *ids = their ids (NULL when none), in the order deleted.
 * Errors: FERRY_EINVAL for a bad state, grace or limit.
 * Blocks: one round trip per call, within the queue's budget each; not retried after a
 *   lost reply; the handle's mutex is held throughout.
 * Ownership: free *ids with ferry_queue_job_ids_free(*ids, *n). */
FERRY_API int ferry_queue_clean(ferry_queue *q, const char *state, long long grace_ms,
                                long long limit, char ***ids, size_t *n, ferry_error *err);

/* Delete every waiting job (Queue.drain(delayed)): the wait list, the legacy paused list,
 * prioritized, and with delayed != 0 the delayed set; active, completed and failed jobs
 * stay. No event, marker untouched (as Node). Node does it in one script; ferry runs 1000
 * jobs per script call, so jobs added meanwhile may or may not be deleted. Unlike Node,
 * the scheduler iterations it keeps in wait keep their place (Node can lose one there).
 * Returns: 0; *removed (may be NULL) = how many jobs were deleted, also after a failure
 *   midway.
 * Blocks: one round trip per chunk (a chunk retried once after a transport failure); the
 *   handle's mutex is held throughout. */
FERRY_API int ferry_queue_drain(ferry_queue *q, int delayed, long long *removed, ferry_error *err);

/* A page of the jobs of one state as BullMQ 6.7.0's Queue.getJobs([state], start, end, asc)
 * returns it: positions start..end (0-based, inclusive; end -1 = FERRY_QUEUE_IDS_MAX from
 * start) in the order of ferry_queue_job_ids (newest first; ascending = 1 oldest first), but
 * only ids whose job exists: an id whose hash is gone is skipped and the page is filled up
 * from the positions after it (at most 5 reads of the state, as Node). Read atomically, so
 * every id was a job at that moment (it may be gone by the time it is read again).
 * state: as ferry_queue_job_ids, or "waiting" for "wait". start: 0..FERRY_QUEUE_MOVE_MAX.
 * Returns: 0 with *ids (NULL when none) and *n.
 * Errors: FERRY_EINVAL for an unknown state or a bad range (naming it).
 * Blocks: one round trip (read: retried once on a fresh connection).
 * Ownership: free *ids with ferry_queue_job_ids_free(*ids, *n). */
FERRY_API int ferry_queue_job_page(ferry_queue *q, const char *state, long long start,
                                   long long end, int ascending, char ***ids, size_t *n,
                                   ferry_error *err);

/* Most queue names one ferry_queue_names call returns. */
#define FERRY_QUEUE_NAMES_MAX 100000

/* The names of the queues under `prefix` (NULL = "bull"): every <prefix>:<name>:meta key,
 * the key each BullMQ queue, Node's or ferry's, writes when opened (a queue that was only
 * ever read with skip_meta_update has none). Redis has no index of queues, so this is a
 * bounded SCAN: pages of about 1000 keys, at most 10^4 pages (10^7 keys) and `max` names
 * (1..FERRY_QUEUE_NAMES_MAX); a queue added or deleted meanwhile may or may not be seen.
 * Opens its own connection with `redis` (NULL = defaults) and closes it.
 * Returns: 0 with *names sorted and without repeats (NULL when none), *n, and *complete
 *   (may be NULL) = 1 when the whole keyspace was scanned, 0 when a bound stopped it.
 * Errors: FERRY_EINVAL for a bad prefix or max; connect errors; transport errors.
 * Blocks: the connect, then one command timeout per page. Threads: any.
 * Ownership: free *names with ferry_queue_job_ids_free(*names, *n). */
FERRY_API int ferry_queue_names(const ferry_redis_options *redis, const char *prefix, size_t max,
                                char ***names, size_t *n, int *complete, ferry_error *err);

/* ---- job logs (BullMQ 6.7.0 Job.log / Queue.addJobLog / Queue.getJobLogs) ------------ */

#define FERRY_JOB_LOG_LINE_MAX (1024 * 1024) /* bytes of one log line */
#define FERRY_LOG_KEEP_JOB (-1LL)            /* keep: the job's own keepLogs option */

/* Append `line` to job job_id's log (the list <job>:logs), as Node's job.log(line) (keep =
 * FERRY_LOG_KEEP_JOB: the job's keepLogs option, none = every line) or
 * queue.addJobLog(id, line, keep) (keep 0 = every line, N = only the newest N stay, up to
 * FERRY_LIMIT_COUNT_MAX). Node's Job.getLogs / bull-board show it.
 * Returns: 0; *count (may be NULL) = the lines the log holds now.
 * Errors: FERRY_ENOTFOUND when no such job; FERRY_ETOOBIG for a line over
 *   FERRY_JOB_LOG_LINE_MAX; FERRY_EINVAL for a bad id or keep. Not retried after a lost
 *   reply (the line could be added twice).
 * Blocks: one round trip. */
FERRY_API int ferry_queue_add_log(ferry_queue *q, const char *job_id, const char *line,
                                  long long keep, long long *count, ferry_error *err);

/* Read lines of job job_id's log with their total, as Node's queue.getJobLogs(id, start,
 * end, asc): ascending = 1 oldest first, positions start..end; 0 newest first, positions
 * counted from the newest. end -1 = FERRY_QUEUE_IDS_MAX lines from start; at most that many
 * per call. A job without a log (or without a hash: Node does not check either) gives none.
 * A NUL byte in a stored line ends that line here (C strings).
 * Returns: 0 with *lines (NULL when none), *n, and *count (may be NULL) = every line the log
 *   holds, read in the same script.
 * Errors: FERRY_EINVAL for a bad id or range.
 * Blocks: one round trip (read: retried once on a fresh connection).
 * Ownership: free *lines with ferry_queue_job_ids_free(*lines, *n). */
FERRY_API int ferry_queue_job_logs(ferry_queue *q, const char *job_id, long long start,
                                   long long end, int ascending, char ***lines, size_t *n,
                                   long long *count, ferry_error *err);

/* ---- workers (BullMQ 6.7.0 Queue.getWorkers) ------------------------------------------ */

#define FERRY_QUEUE_WORKERS_MAX 10000 /* workers one ferry_queue_workers call reports */

/* One worker of a queue: a Redis client named as BullMQ workers name their blocking
 * connection. Strings are NUL-terminated and owned by the array. */
typedef struct ferry_queue_worker {
    char *id;          /* Redis client id */
    char *addr;        /* client address "ip:port" (NULL when Redis did not say) */
    char *rawname;     /* the client name, "<prefix>:<base64(queue)>[:w:<name>]" */
    char *worker_name; /* the part after ":w:", NULL for an unnamed worker */
    long long age_s;   /* seconds connected (-1 when Redis did not say) */
    long long idle_s;  /* seconds since its last command (-1 likewise) */
} ferry_queue_worker;

/* The queue's workers, Node's and ferry's, as Queue.getWorkers() finds them: every client in
 * CLIENT LIST whose name is "<prefix>:<base64(queue)>" or starts with that and ":w:". A
 * worker has one such connection (its blocking one) while it runs. Redis without CLIENT
 * LIST (some hosted services refuse it) gives FERRY_EREDIS.
 * Returns: 0 with *out (NULL when none) and *n, in CLIENT LIST order.
 * Errors: FERRY_ETOOBIG over FERRY_QUEUE_WORKERS_MAX workers; FERRY_EREDIS when refused.
 * Blocks: one round trip (read: retried once on a fresh connection).
 * Ownership: free *out with ferry_queue_workers_free(*out, *n). */
FERRY_API int ferry_queue_workers(ferry_queue *q, ferry_queue_worker **out, size_t *n,
                                  ferry_error *err);
/* Free what ferry_queue_workers returned (NULL accepted). Threads: any. Blocks: no. */
FERRY_API void ferry_queue_workers_free(ferry_queue_worker *w, size_t n);

/* ---- events (BullMQ 6.7.0's <prefix>:<queue>:events stream, as QueueEvents reads it) -- */

#define FERRY_QUEUE_EVENTS_MAX 10000       /* events one ferry_queue_events_read returns */
#define FERRY_QUEUE_EVENTS_BLOCK_MAX 60000 /* ms one blocking read may wait */
#define FERRY_QUEUE_EVENT_ID_MAX 64        /* bytes of a stream entry id, NUL included */
#define FERRY_QUEUE_EVENT_FIELDS_MAX 64    /* fields of one event, "event" not counted */

/* One entry of the events stream: its id ("<ms>-<seq>"), its event name (the "event"
 * field: added, waiting, active, completed, failed, delayed, progress, removed, ...; "" when
 * the entry has none) and its other fields in stream order (jobId, returnvalue,
 * failedReason, prev, delay, data, attemptsMade, ...), every value as stored (a string;
 * returnvalue and data are JSON text). Strings are NUL-terminated and owned by the array;
 * a NUL byte in a stored value ends it here. */
typedef struct ferry_queue_event {
    char *id;
    char *event;
    size_t nfields;
    char **names;
    char **values;
} ferry_queue_event;

/* Read the queue's events stream, oldest first.
 * from_id NULL: the newest `count` entries (XREVRANGE, returned oldest first); block_ms is
 *   not used. from_id "<ms>[-<seq>]" (or "0" = from the start, "$" = only entries added
 *   from now on): up to `count` entries with an id after from_id (XREAD, exclusive, as
 *   QueueEvents); with block_ms > 0 and none there yet, waits up to block_ms (XREAD BLOCK)
 *   for one. count: 1..FERRY_QUEUE_EVENTS_MAX; block_ms: 0..FERRY_QUEUE_EVENTS_BLOCK_MAX.
 * last_id (may be NULL; FERRY_QUEUE_EVENT_ID_MAX bytes): the id of the last entry returned;
 *   when none, from_id as given ("0" when from_id was NULL or "$"), so a loop can pass it
 *   back as the next from_id (after "$" with nothing, keep passing "$").
 * Returns: 0 with *out (NULL when none) and *n. A stream that does not exist gives none.
 * Errors: FERRY_EINVAL for a bad id, count or block (naming it); FERRY_EPROTO for an entry
 *   that is not a stream entry or has over FERRY_QUEUE_EVENT_FIELDS_MAX fields.
 * Blocks: one round trip within the queue's command timeout plus block_ms (read: retried
 *   once on a fresh connection); the handle's mutex is held throughout, so other calls on
 *   the same handle wait for a blocking read to end.
 * Ownership: free *out with ferry_queue_events_free(*out, *n). */
FERRY_API int ferry_queue_events_read(ferry_queue *q, const char *from_id, size_t count,
                                      int block_ms, ferry_queue_event **out, size_t *n,
                                      char *last_id, ferry_error *err);
/* Free what ferry_queue_events_read returned (NULL accepted). Threads: any. Blocks: no. */
FERRY_API void ferry_queue_events_free(ferry_queue_event *ev, size_t n);

/* ---- finding jobs (a bounded scan: BullMQ keeps no index by name or data) ------------- */

#define FERRY_QUEUE_FIND_SCAN_DEFAULT 100000  /* jobs a find looks at by default */
#define FERRY_QUEUE_FIND_SCAN_MAX 100000000LL /* most jobs a find may look at */
#define FERRY_QUEUE_FIND_PAGE 1000            /* jobs read per page */
#define FERRY_QUEUE_FIND_LIMIT_MAX 100000     /* matches one find returns at most */
#define FERRY_QUEUE_FIND_DATA_TEXT_MAX 4096   /* bytes of data_contains */

/* What ferry_queue_find_jobs looks for; a zeroed struct finds every job. */
typedef struct ferry_queue_find_options {
    const char *state;         /* one state as ferry_queue_job_page takes, NULL = all */
    const char *name;          /* the job's name equals this; NULL = any */
    const char *data_contains; /* the job's data JSON text contains this; NULL = any */
    long long limit;           /* stop after this many matches (0 = FERRY_QUEUE_FIND_LIMIT_MAX) */
    long long scan_max;        /* stop after looking at this many jobs (0 = the default) */
    /* Called after every page (may be NULL), on the calling thread: the state being read, jobs
     * looked at and matches so far. */
    void (*progress)(void *ctx, const char *state, long long scanned, long long matched);
    void *progress_ctx;
} ferry_queue_find_options;

/* One job a find matched. Strings owned by the array; state is static text. */
typedef struct ferry_queue_found_job {
    char *id;
    char *name; /* NULL when the hash has none */
    const char *state;
} ferry_queue_found_job;

/* Find jobs by name and/or a substring of their data JSON. BullMQ has no index for this, so
 * it is a scan, bounded: the state's ids a page (FERRY_QUEUE_FIND_PAGE) at a time in
 * ferry_queue_job_ids order (newest first), and per page one pipelined HMGET name data of
 * every job; with state NULL the states wait, prioritized, delayed, active, waiting-children,
 * paused, failed, completed in turn. It stops after scan_max jobs looked at (*complete = 0)
 * or limit matches. Jobs that move or are added while it runs may be missed or seen twice
 * (each page is read atomically, the walk is not); an id whose hash is gone is skipped
 *   (but counts as looked at).
 * Returns: 0 with *out (NULL when none), *n, and *complete (may be NULL) = 1 when every job
 *   of the state(s) was looked at, 0 when scan_max or limit stopped it.
 * Errors: FERRY_EINVAL for a bad state, limit, scan_max or data_contains over
 *   FERRY_QUEUE_FIND_DATA_TEXT_MAX bytes; transport errors (what was found before is freed).
 * Blocks: two round trips per page, each within the queue's budget (reads: retried once).
 * Ownership: free *out with ferry_queue_found_jobs_free(*out, *n). */
FERRY_API int ferry_queue_find_jobs(ferry_queue *q, const ferry_queue_find_options *opts,
                                    ferry_queue_found_job **out, size_t *n, int *complete,
                                    ferry_error *err);
/* Free what ferry_queue_find_jobs returned (NULL accepted). Threads: any. Blocks: no. */
FERRY_API void ferry_queue_found_jobs_free(ferry_queue_found_job *jobs, size_t n);

/* ---- throughput (finishes per time bucket, for ferry serve's dashboard) -------------- */

#define FERRY_QUEUE_THROUGHPUT_BUCKETS_MAX 1000       /* buckets one call counts */
#define FERRY_QUEUE_THROUGHPUT_BUCKET_MS_MAX 86400000 /* ms of one bucket (a day) */

/* How many jobs finished per time bucket lately: ZCOUNT of the completed and of the failed
 * set (their scores are the jobs' finishedOn) over nbuckets consecutive buckets of bucket_ms
 * each, ending at Redis' clock (TIME), in one read-only script. Bucket i (0 = the oldest)
 * counts finishedOn in (now - (nbuckets - i) * bucket_ms, now - (nbuckets - 1 - i) *
 * bucket_ms]; the newest bucket also counts finishes stamped after now (a worker whose clock
 * is ahead). What it does not see: jobs removed on completion or failure
 * (removeOnComplete / removeOnFail, or a keep count that trimmed them), and earlier finishes
 * of a job that was retried: a set holds each job once, at its latest finishedOn, so each
 * job is counted once, for its last finish.
 * bucket_ms: 1..FERRY_QUEUE_THROUGHPUT_BUCKET_MS_MAX; nbuckets: 1..FERRY_QUEUE_THROUGHPUT_
 * BUCKETS_MAX. completed, failed: arrays of nbuckets the caller owns (either may be NULL
 * when not wanted), oldest bucket first.
 * Returns: 0 with the arrays filled and *now_ms (may be NULL) = Redis' clock in ms, the end
 *   of the newest bucket. On an error the arrays are zeroed.
 * Errors: FERRY_EINVAL for a NULL queue, a bad bucket_ms or nbuckets (naming it);
 *   FERRY_EPROTO for a reply of the wrong shape.
 * Blocks: one round trip (read: retried once on a fresh connection); the script does
 *   2 * nbuckets ZCOUNTs (O(log n) each). Threads: as every call on q. */
FERRY_API int ferry_queue_throughput(ferry_queue *q, long long bucket_ms, size_t nbuckets,
                                     long long *completed, long long *failed, long long *now_ms,
                                     ferry_error *err);

/* ---- retrying a selection of finished jobs ------------------------------------------- */

#define FERRY_RETRY_SELECT_PAGE 200      /* jobs one page (chunk) looks at, at most */
#define FERRY_RETRY_SELECT_TEXT_MAX 4096 /* bytes of reason_contains / data_contains */
/* Bytes of job fields one page reads inside Redis, at most: past them the page ends early
 * (after at least one job) and the next page continues. */
#define FERRY_RETRY_SELECT_PAGE_BYTES (4 * 1024 * 1024)

/* What ferry_queue_retry_selected has done so far (and in the end). */
typedef struct ferry_queue_retry_counts {
    long long total;   /* jobs in the state that had finished when the call started */
    long long scanned; /* jobs looked at */
    long long matched; /* of those, jobs the selector matched */
    long long retried; /* of those, jobs put back in line */
    long long skipped; /* matched, but moved or gone by the time of their retry */
} ferry_queue_retry_counts;

/* How a ferry_queue_retry_selected call ended (*ended). */
#define FERRY_RETRY_SELECT_DONE 0      /* every job of the state up to the start was seen */
#define FERRY_RETRY_SELECT_SCAN_MAX 1  /* scan_max jobs looked at first; the rest were not */
#define FERRY_RETRY_SELECT_CANCELLED 2 /* the progress callback asked to stop */

/* Which finished jobs ferry_queue_retry_selected retries; a zeroed struct retries every
 * failed job. The three tests are ANDed; NULL or "" (name: NULL only) = any. */
typedef struct ferry_queue_retry_select {
    const char *state;           /* "failed" (NULL = this) or "completed" */
    const char *name;            /* the job's name equals this (up to FERRY_JOB_NAME_MAX) */
    const char *reason_contains; /* its failedReason contains this text (state failed only) */
    const char *data_contains;   /* its data JSON text contains this text */
    long long scan_max;          /* look at most at this many jobs (0 =
                                    FERRY_QUEUE_FIND_SCAN_DEFAULT, up to
                                    FERRY_QUEUE_FIND_SCAN_MAX) */
    unsigned flags;              /* FERRY_RETRY_RESET_* or 0, as ferry_queue_retry_job */
    /* Called after every page on the calling thread (may be NULL) with the counts so far;
     * a non-zero return stops the call after that page (*ended =
     * FERRY_RETRY_SELECT_CANCELLED). The counts are valid during the call only. */
    int (*progress)(void *ctx, const ferry_queue_retry_counts *so_far);
    void *progress_ctx;
} ferry_queue_retry_select;

/* Retry the finished jobs of one state that a selector matches, oldest first (by
 * finishedOn, their score; equal scores by id, bytewise): a page of up to
 * FERRY_RETRY_SELECT_PAGE jobs of the set at a time, matched inside Redis by one read-only
 * script (job data is never read out; a job's data is read inside Redis only when
 * data_contains is given, its failedReason only with reason_contains, and a page stops
 * early after FERRY_RETRY_SELECT_PAGE_BYTES bytes of fields read), then each match retried
 * exactly as ferry_queue_retry_job(q, id, state, flags) retries it (same script: priority,
 * lifo, marker, `waiting` event, flow parent), so a match that moved meanwhile (retried,
 * removed, cleaned by someone else) is skipped, not forced. Only jobs whose finishedOn is
 * at most the time the call started are considered: jobs failing again while it runs are
 * not chased, so it ends. Unlike ferry_queue_retry_jobs it is not one bulk move: between
 * pages other clients run. Each page starts after the (finishedOn, id) the previous one
 * stopped at, so jobs removed from the set meanwhile (removeOnFail trims, Queue.clean,
 * ferry queue clean, another retry) never make it skip a job still there, and no job is
 * looked at twice; a job added meanwhile with a finishedOn before that point (not
 * something BullMQ does) is not looked at.
 * out (may be NULL): the counts, also after a failure midway. ended (may be NULL): how it
 *   ended (FERRY_RETRY_SELECT_*).
 * Returns: 0 (also when cancelled or stopped by scan_max).
 * Errors: FERRY_EINVAL for a NULL queue, a bad state, scan_max, flags, reason_contains
 *   with state completed, a name over FERRY_JOB_NAME_MAX or a text over
 *   FERRY_RETRY_SELECT_TEXT_MAX bytes (naming it); transport errors (a page or a retry
 *   that failed ends the call; the counts say what was done).
 * Blocks: one round trip per page plus one per match, each within the queue's budget (the
 *   page read is retried once; a retry is not); the handle's mutex is taken per round
 *   trip, not held throughout. Each page's script does O(log n) work to find its start
 *   (however many jobs share a finishedOn) plus one HMGET per job looked at. Threads: as
 *   every call on q; the callback runs on the calling thread. */
FERRY_API int ferry_queue_retry_selected(ferry_queue *q, const ferry_queue_retry_select *sel,
                                         ferry_queue_retry_counts *out, int *ended,
                                         ferry_error *err);

#ifdef __cplusplus
}
#endif
#endif

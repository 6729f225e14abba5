/* ferry/queue.h - the producer side of a BullMQ-compatible queue.
 *
 * A ferry_queue holds one Redis connection and writes jobs exactly as BullMQ 6.7.0 does
 * (keys <prefix>:<queue>:..., job hash, events, markers), so Node BullMQ workers can
 * consume them and ferry workers can consume Node's.
 *
 * Thread-safety: a ferry_queue serialises its calls with an internal mutex, so one handle
 * may be shared by threads; calls on it then run one at a time. */
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

typedef struct ferry_queue ferry_queue;

typedef struct ferry_queue_options {
    const ferry_redis_options *redis; /* NULL = defaults (FERRY_DEFAULT_REDIS_URL) */
    const char *prefix;               /* NULL = "bull"; may contain {hash tags}; 1..512 bytes
                                         (a worker also needs printable ASCII without
                                         spaces: it names its Redis connection after it) */
    /* Default JobsOptions (BullMQ JSON). `default_job_opts`, when set, replaces
     * `global_default_job_opts` as a whole (as a per-queue defaultJobOptions replaces a
     * global one in Node applications); a job's own options are then merged over it key by
     * key (shallow). */
    const char *global_default_job_opts;
    const char *default_job_opts;
    size_t max_payload_bytes; /* limit on a job's data JSON; 0 = 512 KiB */
    /* BullMQ's skipMetasUpdate: open without writing the queue's meta (version and events
     * length, as Node's Queue constructor does), so that looking at a queue that does not
     * exist creates no key. For read-only tools; 0 = write it. */
    int skip_meta_update;
    /* Job options (a job's own and the defaults above) may hold keys BullMQ 6.7.0's
     * JobsOptions does not know: they are stored as given, for options of a later BullMQ.
     * 0 = refuse them (FERRY_EINVAL "unknown job option "atempts" (did you mean
     * "attempts"?)"), also in backoff, removeOnComplete/removeOnFail, deduplication, parent
     * and telemetry. `repeat` is refused either way (see ferry_scheduler_upsert). */
    int allow_unknown_opts;
} ferry_queue_options;

/* Fill *o with defaults. Thread-safe; no allocation. */
FERRY_API void ferry_queue_options_init(ferry_queue_options *o);

/* Open queue `name` (1..512 bytes, no ':'): validates options, connects, loads scripts.
 * A queue jobs are added to also needs a name of valid UTF-8 without control characters
 * (C0, DEL, C1: such a name could forge log lines): FERRY_EINVAL at open for it, unless
 * skip_meta_update (a read-only look at a queue another producer made, e.g. to count or
 * remove its jobs); such a handle then refuses every add. Messages show names escaped.
 * On success *out is a new handle the caller frees with ferry_queue_close().
 * Blocks up to the connect timeout plus one command timeout (it writes the queue's meta,
 * unless skip_meta_update).
 * Returns 0 or a ferry_err (detail in *err). */
FERRY_API int ferry_queue_open(const char *name, const ferry_queue_options *opts, ferry_queue **out,
                               ferry_error *err);

/* Close the connection and free the handle. NULL is accepted. Not concurrently with any
 * other call on the same handle (the other functions may be called from several threads
 * at once; close must come after all of them returned). */
FERRY_API void ferry_queue_close(ferry_queue *q);

/* One job to add. All strings are borrowed for the duration of the call. */
typedef struct ferry_job_spec {
    const char *name;      /* job name, required, at most 1024 bytes */
    const char *data_json; /* JSON text, nested at most 512 levels; NULL = "{}" */
    const char *opts_json; /* BullMQ JobsOptions JSON (jobId, attempts, backoff, delay,
                              priority, lifo, removeOnComplete, removeOnFail, ...); NULL = {}.
                              A custom jobId: at most 1024 bytes, not an integer, no ':'
                              (but the legacy a:b:c), not the name of one of the queue's own
                              keys ("meta", "wait", "id", ...) */
} ferry_job_spec;

/* Check n jobs exactly as ferry_queue_add_bulk on a handle opened with (name, opts) would,
 * without connecting: the queue name and options, the default job options and every job's
 * name, data and options (custom id included). Lets a caller refuse bad input before
 * ferry_queue_open writes anything to Redis. Returns 0, or FERRY_EINVAL / FERRY_ETOOBIG with
 * the same message the add would give (naming the job's index when n > 1). Redis is not
 * asked, so an add that passes can still fail there. No I/O, does not block, thread-safe;
 * nothing is allocated for the caller. */
FERRY_API int ferry_queue_check_jobs(const char *name, const ferry_queue_options *opts,
                                     const ferry_job_spec *jobs, size_t n, ferry_error *err);

/* Add one job. On success *job_id (if non-NULL) receives a malloc'd id the caller frees
 * with free(); for a duplicate custom jobId it is the existing job's id and nothing is
 * written (BullMQ semantics). Errors: FERRY_EINVAL (bad name/JSON/options, naming the
 * field), FERRY_ETOOBIG (data over max_payload_bytes), transport errors within the
 * command timeout. */
FERRY_API int ferry_queue_add(ferry_queue *q, const ferry_job_spec *job, char **job_id,
                              ferry_error *err);

/* Add n jobs in one pipelined round trip. Every spec is validated before anything is
 * sent; if one is invalid nothing is added and *err names its index. On success, if ids
 * is non-NULL, ids[i] receives a malloc'd id for jobs[i] (caller frees each). */
FERRY_API int ferry_queue_add_bulk(ferry_queue *q, const ferry_job_spec *jobs, size_t n, char **ids,
                                   ferry_error *err);

/* Job counts as BullMQ 6.7.0 getJobCounts() reports them (waiting excludes prioritized
 * and the legacy paused list, which is reported separately). */
typedef struct ferry_job_counts {
    long long waiting, active, completed, failed, delayed, prioritized, waiting_children, paused;
} ferry_job_counts;

FERRY_API int ferry_queue_counts(ferry_queue *q, ferry_job_counts *out, ferry_error *err);

/* *exists = 1 when any of the queue's own keys (meta, id, events, marker, the job lists and
 * sets, repeat, stalled-check, limiter) exists in Redis, else 0: a misspelled name looks
 * like an empty queue to counts. One round trip (EXISTS), same deadline and threading as
 * ferry_queue_counts; nothing allocated. */
FERRY_API int ferry_queue_exists(ferry_queue *q, int *exists, ferry_error *err);

/* Pause / resume the queue for every worker (meta.paused + marker, BullMQ v6 semantics;
 * resume also migrates a legacy v5 `paused` list). */
FERRY_API int ferry_queue_pause(ferry_queue *q, ferry_error *err);
FERRY_API int ferry_queue_resume(ferry_queue *q, ferry_error *err);
/* *paused = 1 when paused. */
FERRY_API int ferry_queue_is_paused(ferry_queue *q, int *paused, ferry_error *err);

/* Everything stored about one job. Strings are NUL-terminated and owned by the struct;
 * NULL when the field is absent. Free with ferry_job_info_free(). */
typedef struct ferry_job_info {
    char *id, *name, *data, *opts, *state; /* state: waiting, active, delayed, prioritized,
                                               completed, failed, waiting-children, unknown */
    char *returnvalue, *failed_reason, *stacktrace, *progress, *processed_by;
    long long timestamp, delay, priority, processed_on, finished_on; /* -1 when absent */
    long long attempts_made, attempts_started, stalled_count;        /* 0 when absent */
} ferry_job_info;

/* Fetch a job. FERRY_ENOTFOUND when no such job. *out is freed with ferry_job_info_free.
 * Ids (here and in ferry_queue_remove_job) up to FERRY_JOB_FOREIGN_ID_MAX bytes: other
 * producers' ids may be longer than the FERRY_JOB_ID_MAX bytes ferry_queue_add takes. */
FERRY_API int ferry_queue_get_job(ferry_queue *q, const char *job_id, ferry_job_info **out,
                                  ferry_error *err);
FERRY_API void ferry_job_info_free(ferry_job_info *info);

/* Remove a job in any state. FERRY_ENOTFOUND if it does not exist; FERRY_ESTATE if it is
 * locked by a worker (active), or is the pending iteration of a job scheduler (remove the
 * scheduler instead). */
FERRY_API int ferry_queue_remove_job(ferry_queue *q, const char *job_id, ferry_error *err);

/* Delete the whole queue, as BullMQ 6.7.0's queue.obliterate({force}) does: every job in
 * every state (hash, logs, lock, flow sub-keys, owned deduplication key), the job
 * schedulers, and the queue's own keys (meta, events, id counter, marker, limiter, metrics,
 * ...). Only keys derived from this queue's name and its jobs' ids are touched, never a
 * pattern, so other queues under the same prefix are safe.
 * While jobs are active it fails with FERRY_ESTATE and changes nothing, unless `force` is
 * non-zero: then active jobs are deleted too and their workers fail to finish them (lock
 * lost). It first pauses the queue (so no worker takes a job meanwhile), then deletes in
 * chunks of 1000 jobs per script call, each a few ms of Redis time, until nothing is left;
 * FERRY_ESTATE if someone resumes the queue midway (run it again). Stop the queue's workers
 * first: running ones recreate their bookkeeping keys (stalled-check, ...).
 * *deleted_keys (may be NULL) receives how many keys were deleted, also after a failure
 * midway. Blocking: one round trip per chunk within the queue's timeouts (a chunk is retried
 * once after a transport failure); the handle's mutex is held throughout, so other calls on
 * the handle wait. The handle stays open: jobs added with it later start a new queue (ids
 * from 1; only ferry_queue_open writes meta.version again). Nothing is allocated. */
FERRY_API int ferry_queue_obliterate(ferry_queue *q, int force, long long *deleted_keys,
                                     ferry_error *err);

/* ---- rate limits and global concurrency (BullMQ 6.7.0 queue-level settings) ----------
 * All of these write the same keys as Node's Queue methods, so Node and ferry workers obey
 * them alike. See docs/queue.md "Rate limits and concurrency". Each call is one round trip
 * on the handle's connection (same deadline and threading rules as the calls above; all are
 * idempotent and retried once on a fresh connection after a transport failure). Nothing is
 * allocated for the caller. Changing a setting does not wake idle workers (BullMQ does not
 * either): a worker blocked waiting for jobs sees it at its next fetch, at the latest after
 * its drain delay (5 s by default). */

#define FERRY_LIMIT_MS_MAX (1LL << 40)    /* longest rate limit / window, ms (~34 years) */
#define FERRY_LIMIT_COUNT_MAX 2147483647L /* largest global concurrency / rate limit max */

/* queue.rateLimit(ms): `SET <queue>:limiter 9007199254740991 PX ms`. Every worker whose
 * fetch has a limiter max (its own limiter, or the queue's global rate limit) hands out no
 * job until it expires; workers without any limiter are NOT stopped (BullMQ behaviour).
 * ms in [1, FERRY_LIMIT_MS_MAX]; FERRY_EINVAL otherwise. */
FERRY_API int ferry_queue_rate_limit(ferry_queue *q, long long ms, ferry_error *err);
/* What BullMQ's queue.getRateLimitTtl() (no maxJobs) returns, read atomically:
 * - when the queue has a global rate limit (meta.max): the ms until limited workers may
 *   fetch again, i.e. the limiter's PTTL when its count has reached meta.max, else 0;
 * - otherwise the limiter key's PTTL: -2 when there is none, -1 when it has no expiry
 *   (a worker limiter's window counts here even when it is not full).
 * Unlike BullMQ it never deletes the key (BullMQ deletes a key whose PTTL reads 0). */
FERRY_API int ferry_queue_rate_limit_ttl(ferry_queue *q, long long *ttl_ms, ferry_error *err);
/* Delete the limiter key (BullMQ removeRateLimitKey): limited workers resume at once
 * (after their own wait for the old TTL ends). *removed = 1 when it existed (may be NULL). */
FERRY_API int ferry_queue_clear_rate_limit(ferry_queue *q, int *removed, ferry_error *err);

/* Global concurrency (meta.concurrency): workers fetch nothing while the queue's `active`
 * list holds n or more jobs, so at most n run at once across all workers, Node or ferry.
 * n in [1, FERRY_LIMIT_COUNT_MAX]; ferry_queue_remove_global_concurrency deletes the
 * setting. get writes 0 when unset, and fails with FERRY_EPROTO (naming the stored text)
 * when the stored value is not an integer in [1, FERRY_LIMIT_COUNT_MAX] (e.g. Node's
 * setGlobalConcurrency(0), which stops every worker). */
FERRY_API int ferry_queue_set_global_concurrency(ferry_queue *q, long n, ferry_error *err);
FERRY_API int ferry_queue_remove_global_concurrency(ferry_queue *q, ferry_error *err);
FERRY_API int ferry_queue_get_global_concurrency(ferry_queue *q, long *n, ferry_error *err);

/* Global rate limit (meta.max / meta.duration, one HSET): at most max jobs per duration_ms
 * window across all workers, including those without a limiter of their own. A worker's
 * own limiter duration overrides duration_ms (BullMQ). max in [1, FERRY_LIMIT_COUNT_MAX],
 * duration_ms in [1, FERRY_LIMIT_MS_MAX]. get writes 0/0 when neither field is set, and
 * fails with FERRY_EPROTO when only one is set or a value is not an integer in those
 * ranges (Node's getGlobalRateLimit() reports null for a half-set pair, but workers still
 * obey meta.max). */
FERRY_API int ferry_queue_set_global_rate_limit(ferry_queue *q, long max, long long duration_ms,
                                                ferry_error *err);
FERRY_API int ferry_queue_remove_global_rate_limit(ferry_queue *q, ferry_error *err);
FERRY_API int ferry_queue_get_global_rate_limit(ferry_queue *q, long *max, long long *duration_ms,
                                                ferry_error *err);

/* The queue's name and prefix (borrowed, valid while the handle lives). */
FERRY_API const char *ferry_queue_name(const ferry_queue *q);
FERRY_API const char *ferry_queue_prefix(const ferry_queue *q);

#ifdef __cplusplus
}
#endif
#endif

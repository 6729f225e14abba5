/* sched_module.h - what src/sched offers the worker beyond ferry/scheduler.h: the hook that
 * produces a scheduler's next iteration when a worker fetches the current one (BullMQ 6.7.0
 * protocol §8.3), in scheduler_next.c. */
#ifndef FERRY_SCHED_SCHED_MODULE_H
#define FERRY_SCHED_SCHED_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/common.h"
#include "ferry/scheduler.h"
#include "redis/conn.h"

/* Longest `rjk` (scheduler id) the hook accepts from a fetched job; Node itself sets no limit,
 * ferry's upsert stops at FERRY_SCHEDULER_ID_MAX. Longer is reported as FERRY__SCHED_ERROR.
 * get / remove accept the same (FERRY_SCHEDULER_FOREIGN_ID_MAX). */
#define FERRY__SCHED_RJK_MAX FERRY_SCHEDULER_FOREIGN_ID_MAX
/* Most jobs per ferry__scheduler_on_fetch call. */
#define FERRY__SCHED_BATCH_MAX 4096

/* What a worker knows about a job it just fetched (all borrowed for the call). */
typedef struct ferry__sched_fetched {
    const char *job_id;
    const char *rjk;  /* the hash's `rjk` field; NULL or "" = not a scheduler iteration */
    const char *opts; /* the hash's `opts` field (JSON); NULL = {} */
} ferry__sched_fetched;

typedef enum ferry__sched_outcome {
    FERRY__SCHED_NONE = 0,    /* no rjk: not a scheduler iteration, nothing done */
    FERRY__SCHED_PRODUCED,    /* next iteration added (next_ms, delay_ms) */
    FERRY__SCHED_NOT_CURRENT, /* not the scheduler's current iteration (an earlier call, another
                                 worker or a stalled copy produced it already), or the
                                 scheduler was removed: nothing to do */
    FERRY__SCHED_DUPLICATED,  /* the next iteration already existed: event `duplicated` */
    FERRY__SCHED_ENDED,       /* limit reached, end date passed or the cron pattern has no
                                 further time: the schedule ends with this iteration */
    FERRY__SCHED_LEGACY,      /* rjk is a legacy v5 repeatable-job key without a scheduler: not
                                 supported by BullMQ 6 either; `error` says so (report it) */
    FERRY__SCHED_ERROR,       /* unusable repeat options, bad cron/zone, no usable `every`, a
                                 broken scheduler hash (no hash or no name for the `repeat`
                                 entry: corrupted or half-removed; `ic` not an integer), script
                                 error: `error` says what (report it); no next iteration was
                                 added (the script checks the hash before any write) */
} ferry__sched_outcome;

typedef struct ferry__sched_result {
    ferry__sched_outcome outcome;
    long long next_ms;  /* PRODUCED / DUPLICATED: millis of the next iteration (its id is
                           "repeat:<rjk>:<next_ms>") */
    long long delay_ms; /* PRODUCED: ms until it runs (0 = now) */
    ferry_error error;  /* LEGACY / ERROR */
} ferry__sched_result;

/* Produce the next iteration of every scheduler job among jobs[0..n) (n <= FERRY__SCHED_BATCH_MAX),
 * exactly as a Node worker does before it runs the processor: limit / endDate checks, the next
 * cron time from max(now, prevMillis) in the job's zone (for `every` the script does the math),
 * then one script call per such job, all pipelined in ONE round trip on `c` (none when no job has
 * `rjk`; jobs without it cost one pointer test). `base` is "<prefix>:<queue>:". `now_ms` is
 * wall-clock ms (ferry__now_ms()).
 *
 * Call it on the worker's command connection right after a fetch returned these jobs and before
 * their handlers start (Node orders it the same way: the next tick exists while the current one
 * runs, so a slow or crashing handler cannot stop the schedule).
 *
 * Returns 0 with results[i] filled for every job (outcome NONE for jobs without rjk), or a
 * transport error (FERRY_EIO / FERRY_ETIMEDOUT / FERRY_EPROTO: the connection is broken, nothing
 * is known about what ran; call again with the same jobs after reconnecting - the call is
 * idempotent: an iteration produced by the lost call makes the retry NOT_CURRENT), FERRY_EINVAL
 * (n too large, NULL arguments) or FERRY_ENOMEM. The caller decides what to do with
 * LEGACY / ERROR results (report them, run the job anyway). NOSCRIPT replies are handled here
 * (scripts reloaded, those calls sent again).
 *
 * Thread-safety: `c` must not be used by another thread during the call; otherwise pure.
 * Cost: per scheduler job, one small JSON parse + serialise of its opts, one cron search for
 * patterns (zones are cached), and one EVALSHA in the shared round trip. */
int ferry__scheduler_on_fetch(ferry_conn *c, const char *base, const ferry__sched_fetched *jobs,
                              size_t n, int64_t now_ms, ferry__sched_result *results,
                              ferry_error *err);

#endif

/* ferry/scheduler.h - BullMQ 6.7.0 job schedulers on a ferry_queue: upsert, remove, get,
 * list.
 *
 * A job scheduler is a job factory kept in Redis: a fixed interval (`every` ms) or a cron
 * pattern in an IANA time zone, plus a job template (name, data, options). There is always
 * exactly one pending iteration, a job with id "repeat:<id>:<millis>"; the worker that
 * fetches it adds the next one (ferry's worker and Node's both do), so one job runs per
 * tick however many workers or replicas share the queue. Schedulers are stored exactly as
 * Node BullMQ 6.7.0's queue.upsertJobScheduler() stores them, so Node's getJobSchedulers()
 * lists ferry's and the other way round (docs/schedulers.md: the layout and the few
 * deliberate differences).
 *
 * Upserting is idempotent: calling it again with the same id (on every deploy, from several
 * replicas) replaces the scheduler and its pending iteration instead of adding one, and an
 * unchanged `every` keeps its timing.
 *
 * For every function taking a ferry_queue:
 * Threads: the calls use the queue's connection under its mutex, so they may be made from
 *   any thread that may use the ferry_queue.
 * Blocks: one or two round trips, each bounded by the queue's connect + command timeouts.
 * Errors: transport errors within those timeouts, besides those each call names. */
#ifndef FERRY_SCHEDULER_H
#define FERRY_SCHEDULER_H

#include "common.h"
#include "queue.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FERRY_SCHEDULER_ID_MAX 1024 /* scheduler id that ferry_scheduler_upsert takes, bytes */
/* Longest id ferry_scheduler_get / _remove accept: Node sets no limit on the ids it writes, and
 * a ferry worker continues a scheduler whose id is up to this long, so it can be read and
 * removed too. */
#define FERRY_SCHEDULER_FOREIGN_ID_MAX 65536
/* Largest limit and end_date_ms: JavaScript's Number.MAX_SAFE_INTEGER (2^53 - 1), the largest
 * integer Node reads back exactly. */
#define FERRY_SCHEDULER_NUM_MAX 9007199254740991LL
/* Longest interval: ten years. The first run must also fall before 2039-09 (where delayed
 * scores stop being exact doubles), so start dates are bounded the same way. */
#define FERRY_SCHEDULER_EVERY_MAX 315360000000LL
#define FERRY_SCHEDULER_LIST_MAX 1000 /* schedulers per ferry_scheduler_list call */

/* What a scheduler does. Exactly one of every_ms / pattern. Zero / NULL means "not given"
 * for every field.
 * Ownership: all strings are borrowed for the duration of the call. */
typedef struct ferry_scheduler_spec {
    long long every_ms;      /* fixed interval in ms, 1..FERRY_SCHEDULER_EVERY_MAX */
    const char *pattern;     /* cron expression, 5 fields or 6 with seconds first, or @daily etc.
                                (docs/cron.md) */
    const char *tz;          /* IANA zone for `pattern` ("Asia/Ho_Chi_Minh"); NULL = UTC (Node
                                would use its process's zone). Stored as given. */
    long long limit;         /* stop after this many iterations, 0..FERRY_SCHEDULER_NUM_MAX;
                                0 = no limit */
    long long start_date_ms; /* no iteration before this instant (epoch ms); 0 = none */
    long long end_date_ms;   /* no iteration after this instant, 0..FERRY_SCHEDULER_NUM_MAX;
                                0 = none; must be future */
    long long offset_ms;     /* every only: align runs to floor(t/every)*every + offset */
    int immediately;         /* pattern only: first iteration now, then on the pattern
                                (with every, the first run is immediate anyway) */
    const char *name;        /* job name of the iterations; NULL = the scheduler id */
    const char *data_json;   /* job data (JSON); NULL = {} */
    const char *opts_json;   /* job options (BullMQ JobsOptions JSON), merged over the queue's
                                default job options as Node does; NULL = {}. jobId, delay,
                                repeat, timestamp, deduplication and parent are refused: the
                                scheduler sets or does not support them. */
} ferry_scheduler_spec;

/* Fill *s with "nothing given" (all zero / NULL; NULL accepted). Threads: any. Blocks: no;
 * no allocation. */
FERRY_API void ferry_scheduler_spec_init(ferry_scheduler_spec *s);

/* Create or replace scheduler `id` (1..FERRY_SCHEDULER_ID_MAX bytes of UTF-8, no NUL) and
 * its pending iteration, in one script. The pending iteration of an existing scheduler is
 * replaced if it has not started (waiting, delayed or prioritized); for an unchanged `every`
 * it keeps its time slot, so repeated upserts neither duplicate nor shift the schedule.
 * Returns: 0; if non-NULL, *job_id receives the pending iteration's id and *delay_ms the
 *   time until it runs (0 = now).
 * Errors: FERRY_EINVAL naming the bad field (both or neither of every/pattern, a bad cron
 *   pattern or time zone, negative values, limit or end_date_ms over
 *   FERRY_SCHEDULER_NUM_MAX, end date in the past, start_date with immediately, offset
 *   with a pattern, a pattern with no run time before end_date, bad data/opts JSON);
 *   FERRY_ETOOBIG (data over the queue's payload limit, id or name too long); FERRY_ESTATE
 *   when the next slot is held by a job that cannot be replaced.
 * Ownership: *job_id is malloc'd; the caller frees it. */
FERRY_API int ferry_scheduler_upsert(ferry_queue *q, const char *id,
                                     const ferry_scheduler_spec *spec, char **job_id,
                                     long long *delay_ms, ferry_error *err);

/* Remove scheduler `id` (1..FERRY_SCHEDULER_FOREIGN_ID_MAX bytes of UTF-8: Node may have
 * written longer ids than upsert takes): its pending iteration is deleted if it has not
 * started (event `removed`), then the scheduler itself. An iteration already running
 * finishes normally and produces no successor.
 * Returns: 0. Errors: FERRY_ENOTFOUND when no such scheduler existed. */
FERRY_API int ferry_scheduler_remove(ferry_queue *q, const char *id, ferry_error *err);

/* One scheduler as stored (Node's getJobSchedulers() entry).
 * Ownership: strings are owned by the struct (NULL when absent); free with
 *   ferry_scheduler_info_free / _list_free. */
typedef struct ferry_scheduler_info {
    char *id;
    char *name;                /* job name; NULL for a `repeat` entry without a scheduler hash
                                  (a legacy v5 repeatable job, or a half-removed scheduler) */
    long long next_ms;         /* millis of the pending iteration */
    long long iteration_count; /* iterations produced so far (`ic`), 0 if absent */
    long long every_ms;        /* 0 when a pattern */
    char *pattern;
    char *tz;
    long long limit;         /* 0 = none */
    long long start_date_ms; /* 0 = none */
    long long end_date_ms;   /* 0 = none */
    long long offset_ms;     /* -1 when absent (every scheduler stores one, cron ones 0) */
    char *data_json;         /* template data, NULL = {} */
    char *opts_json;         /* template options, NULL = {} */
} ferry_scheduler_info;

/* Read one scheduler (id: 1..FERRY_SCHEDULER_FOREIGN_ID_MAX bytes of UTF-8).
 * Returns: 0 and *out.
 * Errors: FERRY_ENOTFOUND if none; FERRY_EREDIS with Redis's message (WRONGTYPE...) when a
 *   key is not of its type.
 * Ownership: *out is freed with ferry_scheduler_info_free (NULL accepted). */
FERRY_API int ferry_scheduler_get(ferry_queue *q, const char *id, ferry_scheduler_info **out,
                                  ferry_error *err);
FERRY_API void ferry_scheduler_info_free(ferry_scheduler_info *info);

/* Read up to `max` (1..FERRY_SCHEDULER_LIST_MAX) schedulers starting at position `start`
 * (>= 0) in the order of their next run: ascending when `ascending`, else descending (Node's
 * getJobSchedulers() default). Not a snapshot: schedulers changed between calls may be seen
 * twice or not at all when paging.
 * Returns: 0, *items and *n (n < max means the end was reached).
 * Errors: FERRY_EINVAL for max or start out of range.
 * Ownership: *items is a malloc'd array freed with ferry_scheduler_list_free(*items, *n). */
FERRY_API int ferry_scheduler_list(ferry_queue *q, long long start, size_t max, int ascending,
                                   ferry_scheduler_info **items, size_t *n, ferry_error *err);
FERRY_API void ferry_scheduler_list_free(ferry_scheduler_info *items, size_t n);

/* Count the schedulers (legacy v5 repeatable entries included).
 * Returns: 0 and *count. Blocks: one round trip. */
FERRY_API int ferry_scheduler_count(ferry_queue *q, long long *count, ferry_error *err);

#ifdef __cplusplus
}
#endif
#endif

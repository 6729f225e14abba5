/* scheduler_internal.h - pure helpers private to src/sched (scheduler.c, scheduler_list.c,
 * scheduler_next.c): the cron step with BullMQ's start/end/clamp rules, the legacy-key
 * test, scheduler id checks. Included only inside src/sched (and white-box tests); the
 * worker's hook is in sched_module.h. */
#ifndef FERRY_SCHED_SCHEDULER_INTERNAL_H
#define FERRY_SCHED_SCHEDULER_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "ferry/common.h"
#include "ferry/scheduler.h"
#include "sched/sched_module.h"

/* ---- pure helpers (scheduler.c and scheduler_next.c) --------------------------------- */

/* BullMQ's cron step: search from max(from_ms, start_ms) (start 0 = none), fail with
 * FERRY_ENOTFOUND when that is past end_ms, when cron-parser would find no time, or when the
 * result is past end_ms (end 0 = none); clamp the result to at least clamp_ms. tz NULL/"" =
 * UTC. FERRY_EINVAL for a bad pattern or zone (message from the cron/tz parser). Thread-safe. */
int ferry__sched_cron_next(const char *pattern, const char *tz, long long from_ms,
                           long long start_ms, long long end_ms, long long clamp_ms,
                           long long *next_ms, ferry_error *err);

/* 1 when `key` has the shape of a legacy (v5) repeatable-job key "name:id:endDate:tz:cron|every"
 * (BullMQ's hasLegacyRepeatableKeyShape), else 0. Pure. */
int ferry__sched_legacy_shape(const char *key);

/* Check a scheduler id: 1..max bytes of UTF-8 (max: FERRY_SCHEDULER_ID_MAX to create one,
 * FERRY_SCHEDULER_FOREIGN_ID_MAX to read or remove one). 0 or FERRY_EINVAL / FERRY_ETOOBIG
 * with a message. Pure. */
int ferry__sched_check_id(const char *id, size_t max, ferry_error *err);

/* A JSON number as JavaScript sees it: 1 and *out when v is an integer or real, else 0. */
int ferry__sched_json_num(const json_t *v, double *out);

#endif

/* job_opts.h - BullMQ JobsOptions: parse, validate, merge and encode (pure, no I/O).
 *
 * Two entry points: `parse` is strict (user input: CLI --opts, API) and names the bad
 * field; `from_stored` is lenient (opts read back from a job hash, possibly written by
 * Node through cjson: `\/`, 14-digit numbers, `{}` for empty arrays). */
#ifndef FERRY_QUEUE_JOB_OPTS_H
#define FERRY_QUEUE_JOB_OPTS_H

#include <stdint.h>

#include "ferry/common.h"

/* removeOnComplete / removeOnFail, resolved: count 0 = delete at once, -1 = keep all. */
typedef struct ferry__keep_jobs {
    int set;         /* option present */
    long long count; /* -1 keep all, 0 delete now, n keep newest n */
    /* age_set: an age was given; age_s: BullMQ's age in seconds, fraction kept (0 trims
     * everything finished up to now, this job included; a Node-written negative age even
     * later ones). The finish script computes Node's bound `now - age * 1000` itself, in
     * Redis Lua doubles as BullMQ's removeJobsByMaxAge does (no integer ms equals it at
     * every clock: near 1.7e12 a fraction of a ms below 2^-13 is rounded away). */
    int age_set;
    double age_s;
    long long limit; /* max deletions per call for age trimming; 0 = 1000 */
} ferry__keep_jobs;

typedef struct ferry__backoff {
    int set;
    char type[64]; /* "fixed", "exponential", or a custom strategy name */
    long long delay_ms;
    double jitter; /* 0..1 */
} ferry__backoff;

typedef struct ferry__job_opts {
    char *job_id;       /* custom id (malloc'd) or NULL */
    long long attempts; /* 0 when absent (BullMQ default) */
    ferry__backoff backoff;
    long long delay_ms; /* >= 0 */
    long long priority; /* 0..2097151 */
    int lifo;
    long long timestamp;         /* -1 = absent (use now) */
    long long stack_trace_limit; /* -1 = absent (ferry's worker then keeps the last 10;
                                    Node 6.7.0 keeps all) */
    ferry__keep_jobs remove_on_complete;
    ferry__keep_jobs remove_on_fail;
    char *stored_json; /* canonical opts JSON to store in the job hash (malloc'd) */
} ferry__job_opts;

/* Strict parse of a JobsOptions JSON object (NULL/"" = {}). Rejects keys BullMQ 6.7.0 does
 * not know (see FERRY__OPTS_ALLOW_UNKNOWN in job_opts_ext.h), `repeat`, unknown types,
 * negative delays, priorities outside 0..2^21-1, ids Node would refuse ("0", "0:..",
 * integer-looking, ':' unless exactly 3 parts), malformed backoff/removeOn*. On success
 * fills *out (free with ferry__job_opts_free). Thread-safe. */
int ferry__job_opts_parse(const char *json, ferry__job_opts *out, ferry_error *err);

/* Lenient parse of stored opts (never fails on odd but valid JSON; garbage -> defaults). */
void ferry__job_opts_from_stored(const char *json, ferry__job_opts *out);

/* Reset *o to no options (BullMQ's defaults; timestamp and stackTraceLimit unset = -1).
 * Frees nothing: for an uninitialised or already freed struct. */
void ferry__job_opts_init(ferry__job_opts *o);

void ferry__job_opts_free(ferry__job_opts *o);

/* Shallow merge: keys of `over` replace keys of `base` (both JSON objects, NULL = {}).
 * Returns malloc'd JSON or NULL with *err set (FERRY_EINVAL if either is not an object). */
char *ferry__json_merge_shallow(const char *base, const char *over, ferry_error *err);

/* Parse a removeOnComplete/removeOnFail value given as JSON text (true, false, n,
 * {"age":..,"count":..,"limit":..}). Used for worker-level defaults. */
int ferry__keep_jobs_parse(const char *json, ferry__keep_jobs *out, ferry_error *err);

#endif

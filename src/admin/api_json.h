/* api_json.h - what the endpoint files of `ferry serve`'s admin API (api_*.c) share: JSON
 * builders for the things they answer with (a job, a time, a stored JSON text), the checks
 * of query parameters and body members (every one refused with a 400 naming it), and the
 * handlers of api_jobs.c that api_queues.c's route table lists.
 *
 * Every function here runs on a handler's thread and touches only what it is given; the
 * builders allocate (the caller owns the json_t they return, NULL only when out of memory).
 * The check functions fill the answer with ferry__admin_fail and return -1 on a bad value,
 * so a handler writes `if (ferry__api_... (...)) return -1;`. */
#ifndef FERRY_ADMIN_API_JSON_H
#define FERRY_ADMIN_API_JSON_H

#include <jansson.h>

#include "ferry/trace.h"

#include "admin/admin_internal.h"
#include "ferry/queue.h"

/* Longest value a text query parameter or body member may have (queue and job names, error
 * text, ...), bytes; past it the request is refused naming the parameter. */
#define FERRY__API_TEXT_MAX 4096

/* ---- JSON builders -------------------------------------------------------------------- */

/* A JSON string of s (NULL: null). Text that is not valid UTF-8 has each bad byte replaced by
 * U+FFFD, so data written by another client still shows. */
json_t *ferry__api_str(const char *s);

/* A stored JSON text (job data, options, return value, a stack trace) as a JSON value; text
 * that does not parse as JSON comes back as a string (ferry__api_str); NULL: null. */
json_t *ferry__api_stored_json(const char *text);

/* Stored job options (BullMQ's short names: kl, de, fpof, ...) as JSON with the public names
 * (keepLogs, deduplication, failParentOnFailure, ...), as Node's Job.optsFromJSON gives them. */
json_t *ferry__api_stored_opts(const char *text);

/* ms since the epoch as ISO-8601 UTC with milliseconds ("2026-12-03T11:43:44.123Z") into
 * buf (at least 32 bytes); returns buf. */
const char *ferry__api_iso(long long ms, char *buf, size_t cap);

/* Set o[key] = ms and o[key "Iso"] = its ISO text (both null when ms < 0 or, with
 * zero_is_none, ms == 0). */
void ferry__api_set_time(json_t *o, const char *key, long long ms, int zero_is_none);

/* A job as BullMQ's Job.asJSON names its fields (id, name, data, opts, progress,
 * attemptsMade, attemptsStarted, stalledCounter, timestamp, delay, priority, processedOn,
 * finishedOn, failedReason, stacktrace, returnvalue, processedBy) plus its state and the
 * ISO forms of its times. */
json_t *ferry__api_job_json(const ferry_job_info *j);

/* The counts by state, keys as BullMQ's getJobCounts() (waiting, active, completed, failed,
 * delayed, prioritized, waiting-children, paused). */
json_t *ferry__api_counts_json(const ferry_job_counts *c);

/* ---- request checks ------------------------------------------------------------------- */

/* A text value for the error message: printable, cut at 80 bytes (never the raw text). */
const char *ferry__api_shown(const char *s, char *buf, size_t cap);

/* Query parameter `key` as a decimal integer in [min, max]; absent: *v = def. Non-numeric,
 * negative (when min >= 0), out of range: 400 naming the parameter. */
int ferry__api_query_ll(ferry__admin_req *r, ferry__admin_resp *out, const char *key, long long min,
                        long long max, long long def, long long *v);

/* Query parameter `key` as text of 1..FERRY__API_TEXT_MAX bytes, or NULL when absent (an
 * empty value is refused). */
int ferry__api_query_text(ferry__admin_req *r, ferry__admin_resp *out, const char *key,
                          const char **v);

/* Query parameter `key` as true/false (also 1/0); absent: def. */
int ferry__api_query_bool(ferry__admin_req *r, ferry__admin_resp *out, const char *key, int def,
                          int *v);

/* The body must be absent or a JSON object whose members are all in `allowed` (NULL-ended):
 * anything else is a 400 naming the unknown member, so a typo never changes what an action
 * does. */
int ferry__api_body_check(ferry__admin_req *r, ferry__admin_resp *out, const char *const *allowed);

/* Body member `key` (after ferry__api_body_check): absent or null keeps the default. Wrong
 * type or range: 400 naming it. */
int ferry__api_body_ll(ferry__admin_req *r, ferry__admin_resp *out, const char *key, long long min,
                       long long max, long long def, long long *v);
int ferry__api_body_bool(ferry__admin_req *r, ferry__admin_resp *out, const char *key, int def,
                         int *v);
int ferry__api_body_text(ferry__admin_req *r, ferry__admin_resp *out, const char *key,
                         const char **v);

/* An instant: ISO-8601 / RFC 3339 with a zone ("2026-12-01T10:00:00Z", "...+07:00",
 * fractions allowed), a date (midnight UTC), or milliseconds since the epoch. Returns 0 and
 * *ms, -1 when it is none of these. Pure. */
int ferry__api_parse_time(const char *s, long long *ms);

/* A duration: milliseconds as a number, or a number with a unit ms, s, m, h, d ("1h",
 * "90s"). Returns 0 and *ms, -1 otherwise. Pure. */
int ferry__api_parse_duration(const char *s, long long *ms);

/* Time-valued query parameter / body member (a JSON string as ferry__api_parse_time, or a
 * number of ms); absent: *ms = 0. */
int ferry__api_query_time(ferry__admin_req *r, ferry__admin_resp *out, const char *key,
                          long long *ms);
int ferry__api_body_time(ferry__admin_req *r, ferry__admin_resp *out, const char *key,
                         long long *ms);

/* Open the queue named by path parameter 0 and check it exists (404 when it does not, so a
 * misspelt name is not taken for an empty queue and nothing is created). Returns 0 and *q
 * (release with ferry__admin_queue_release), or -1 with out filled. */
int ferry__api_queue(ferry__admin_req *r, ferry__admin_resp *out, ferry_queue **q);

/* A malloc'd audit summary (printf-style), or NULL when out of memory. */
char *ferry__api_summary(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- handlers of api_jobs.c (listed in api_queues.c's route table) ------------------ */

int ferry__api_jobs_list(ferry__admin_req *r, ferry__admin_resp *out);
int ferry__api_job_get(ferry__admin_req *r, ferry__admin_resp *out);
int ferry__api_job_remove(ferry__admin_req *r, ferry__admin_resp *out);
int ferry__api_job_retry(ferry__admin_req *r, ferry__admin_resp *out);
int ferry__api_job_promote(ferry__admin_req *r, ferry__admin_resp *out);
int ferry__api_job_logs(ferry__admin_req *r, ferry__admin_resp *out);
int ferry__api_job_add_log(ferry__admin_req *r, ferry__admin_resp *out);
int ferry__api_jobs_find(ferry__admin_req *r, ferry__admin_resp *out);

/* A trace as the API answers it (trace_json.c; ferry_trace_json is its text). NULL when out
 * of memory. */
json_t *ferry__trace_json(const ferry_trace *t);

#endif

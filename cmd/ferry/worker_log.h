/* worker_log.h - the lines `ferry worker` writes about jobs and about itself: job outcomes
 * (from the library's ferry_job_log record), library errors and notices, in the format of
 * logline.h (text with a timestamp, or one JSON object per line). docs/logging.md lists
 * the events. The short commands keep cli_report's untimed lines.
 *
 * Thread-safe (each line is written under stderr's stdio lock; every writer of this
 * process's stderr goes through stdio, so no other line lands inside one). Never a job's
 * data or return value: the record carries neither. */
#ifndef FERRY_CLI_WORKER_LOG_H
#define FERRY_CLI_WORKER_LOG_H

#include <jansson.h>

#include "cli.h"

/* cli_report (same text, same password masking, same return value: the exit code for the
 * failure) with the logline timestamp in front; in JSON one "worker.error" object at level
 * error with "code" (the ferry_err name) and "msg". */
int worker_log_report(const cmd_spec *spec, const cli_conn *c, const char *what,
                      const ferry_error *err);

/* worker_log_report with the level (a ferry_log_level) and event name of the JSON line
 * given, and `fields` (a JSON object, stolen; NULL = none) added to it; the text line is
 * the same as worker_log_report's. Returns the exit code for the failure. */
int worker_log_error(const cmd_spec *spec, const cli_conn *c, int level, const char *event,
                     json_t *fields, const char *what, const ferry_error *err);

/* One line for a library notice (callbacks.notice): its message, "warning: " in front of
 * one about the maxmemory policy (text); "worker.redis_lost" (warn, "code"),
 * "worker.redis_restored" (info, "down_ms") or "worker.eviction_policy" (warn, "policy")
 * in JSON. */
void worker_log_notice(const ferry_worker_notice *n);

/* One job outcome line: the record as ferry_job_log_format renders it in text, then
 * " status=<status>" when status is not NULL (how the command ended, as this worker saw
 * it); in JSON a "worker.job" event with the record's members, the trace split as
 * logline_set_trace does, and "status". */
void worker_log_job(const ferry_job_log *rec, const char *status);

#endif

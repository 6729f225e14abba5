/* worker_log.h - the lines `ferry worker` writes besides job outcomes: library errors and
 * notices, each with the timestamp of logline.h, so that every line of the worker's log
 * can be placed in time. The short commands keep cli_report's untimed lines.
 *
 * Thread-safe (each line is written under stderr's stdio lock; every writer of this
 * process's stderr goes through stdio, so no other line lands inside one). */
#ifndef FERRY_CLI_WORKER_LOG_H
#define FERRY_CLI_WORKER_LOG_H

#include "cli.h"

/* cli_report (same text, same password masking, same return value: the exit code for the
 * failure) with the logline timestamp in front. */
int worker_log_report(const cmd_spec *spec, const cli_conn *c, const char *what,
                      const ferry_error *err);

/* One line for a library notice (callbacks.notice): its message, "warning: " in front of
 * one about the maxmemory policy. */
void worker_log_notice(const ferry_worker_notice *n);

#endif

/* job_outcome.h - `ferry worker`: the outcome of one job from how its command ended (exit
 * 0 completed with stdout as the return value, 65 failed for good, 118 / 119 postponed for
 * the delay the command printed, a signal, --timeout or --max-output failed, a stop by the
 * worker's shutdown back to the queue). Sets the job's return value, failure or delay;
 * no I/O. Called from the handler threads; thread-safe (nothing shared). */
#ifndef FERRY_CLI_JOB_OUTCOME_H
#define FERRY_CLI_JOB_OUTCOME_H

#include <stddef.h>

#include "exec_job.h"
#include "ferry/worker.h"

/* What the reasons quote and what a postponed job waits without a hint. */
typedef struct job_outcome_rules {
    const char *cmd;               /* the command's name */
    long long job_timeout;         /* --timeout, ms */
    long long max_output;          /* --max-output, bytes */
    long long retry_later_default; /* exit 118 without a delay hint, ms */
} job_outcome_rules;

/* The outcome of the run `res` (spawn_rc: exec_run's return). Writes the status word of the
 * outcome line ("exit:N", "signal:N", "timeout", "output-limit", "bad-output",
 * "spawn-error") into status[scap]. */
ferry_outcome job_outcome(const job_outcome_rules *rules, ferry_job *job, exec_result *res,
                          int spawn_rc, char *status, size_t scap);

#endif

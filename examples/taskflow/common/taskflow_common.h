/* taskflow_common.h - what taskflow-api, taskflow-worker and their tests share: the names
 * (schema, prefix, topic, queue, job, template), the relay's route and job options, and
 * taskflow's own tables (examples/taskflow/sql/taskflow.sql, embedded).
 *
 * The names follow the seed (001): the event task.assigned.v1, the queue notifications
 * under the prefix taskflow, the job task-assigned.v1 with the seed's job options. */
#ifndef TASKFLOW_COMMON_H
#define TASKFLOW_COMMON_H

#include <libpq-fe.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TASKFLOW_SCHEMA "taskflow" /* default PostgreSQL schema (ferry's tables and ours) */
#define TASKFLOW_PREFIX "taskflow" /* default Redis key prefix of the queues */

#define TASKFLOW_TOPIC_ASSIGNED "task.assigned.v1" /* outbox topic: the event, past tense */
#define TASKFLOW_Q_NOTIFICATIONS "notifications"   /* the queue the worker takes */
#define TASKFLOW_JOB_ASSIGNED "task-assigned.v1"   /* job name: the contract's name too */
#define TASKFLOW_TEMPLATE_ASSIGNED "task-assigned" /* the mailer template of that email */

/* The relay's routes (a ferry routes file's text): one job per event, jobId = event id. */
#define TASKFLOW_ROUTES "task.assigned.v1  notifications:task-assigned.v1\n"

/* The seed's job options: 5 attempts, exponential backoff from 1 s (with jitter, which
 * the seed asks for in prose), completed jobs kept a day (at most 10,000), failed ones 7
 * days (at most 50,000). */
#define TASKFLOW_JOB_OPTS                                                                          \
    "{\"attempts\":5,\"backoff\":{\"type\":\"exponential\",\"delay\":1000,\"jitter\":0.5},"        \
    "\"removeOnComplete\":{\"age\":86400,\"count\":10000},"                                        \
    "\"removeOnFail\":{\"age\":604800,\"count\":50000}}"

/* taskflow's SQL (sql/taskflow.sql), embedded at build time. */
extern const char taskflow_sql_text[];

/* Make sure the schema is ready for taskflow: ferry's tables migrated to this library's
 * version (`ferry migrate` does that, this call does not) and taskflow's own tables
 * created (idempotent, under a transaction-scoped advisory lock). schema NULL = "taskflow".
 * Returns: 0, or -1 with a message in err[cap]: ferry's tables missing or older (naming
 *   the `ferry migrate` to run), or the SQL failing (SQLSTATE and PostgreSQL's message).
 * Blocks: a few statements under the session's statement_timeout. Threads: libpq's rule on
 *   c, which must be idle; it is left idle. */
int taskflow_schema_ensure(PGconn *c, const char *schema, char *err, size_t cap);

#ifdef __cplusplus
}
#endif

#endif

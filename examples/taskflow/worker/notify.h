/* notify.h - taskflow-worker's handler of task-assigned.v1 jobs: the task-assigned email
 * through the mailer, once per event messageId, and its notification_deliveries row.
 *
 * The worker's contract check (contracts/task-assigned.v1@1.json) has run before the
 * handler: an unknown schemaVersion or a payload that breaks the schema never gets here.
 *
 * The email is an external effect: it cannot commit with a database row, so there is no
 * marker taken in the effect's transaction (ferry's inbox) here. Instead:
 *   1. a delivery row for the messageId means the email went out: done (a duplicate,
 *      counted in the row's `duplicates`);
 *   2. otherwise send it with Idempotency-Key = messageId;
 *   3. then insert the row (ON CONFLICT: a racing delivery inserted it first; counted).
 * A crash between 2 and 3, or an answer lost on the way back (timeout, dropped connection),
 * sends again on the retry with the same key, and the mailer answers with the first
 * message instead of sending a second: at-least-once delivery, one email. */
#ifndef TASKFLOW_NOTIFY_H
#define TASKFLOW_NOTIFY_H

#include "ex_util.h"

#include <ferry/worker.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_notifier {
    ex_pgpool *pool;        /* sessions on taskflow's schema, at least one per handler */
    const char *mailer_url; /* the mailer's base URL (".../mailer"), no trailing '/' */
    int mailer_timeout_ms;  /* whole-call deadline of one mailer request */
} tf_notifier;

/* The ferry_handler_fn of the notifications queue (userdata = tf_notifier *, which must
 * outlive the worker).
 * Returns: FERRY_COMPLETED when the email was sent now or before (return value
 *   {"providerMessageId": ..., "duplicate": bool}); FERRY_FAILED for what a retry can fix
 *   (the database or the mailer unreachable, a 5xx, a timeout); FERRY_RETRY_LATER /
 *   FERRY_THROTTLED for a 5xx with Retry-After / a 429; FERRY_FAILED_PERMANENT for a job
 *   name other than task-assigned.v1, a task not found in the event's tenant, a 4xx.
 *   Failure reasons name the cause, never a payload value other than ids.
 * Blocks: a few statements and one mailer call (up to mailer_timeout_ms).
 * Threads: the worker's handler threads, several at once. */
ferry_outcome tf_notify_task_assigned(ferry_job *job, void *userdata);

#ifdef __cplusplus
}
#endif

#endif

/* tasks.h - `ferry serve`'s server-side tasks (tasks.c) as the endpoint file api_tasks.c
 * and the audit (audit.c) see them: start a retry-all, list, get, cancel, and the audit of
 * a task's finish. Private to src/admin. */
#ifndef FERRY_ADMIN_TASKS_H
#define FERRY_ADMIN_TASKS_H

#include <jansson.h>

#include "admin/admin_internal.h"
#include "ferry/queue.h"

#define FERRY__ADMIN_TASKS_FINISHED_KEPT 32 /* finished tasks GET /api/tasks still shows */

/* Start a retry-all task of queue `queue` (an existing queue; the caller checked) with the
 * selector sel (its strings are copied; progress fields ignored), created by r->actor.
 * Runs on a thread of its own with its own queue handle and looks at most at the server's
 * scan limit of jobs (FERRY_SERVE_TASK_SCAN_MAX, read at the server's start; else
 * FERRY_QUEUE_FIND_SCAN_MAX); its state ends "done", "stopped" (at that limit; "message"
 * says so and how to go on), "cancelled" or "failed" ("error"). Drops the finished tasks
 * past FERRY__ADMIN_TASKS_FINISHED_KEPT whose thread has exited (one still writing its
 * audit row stays until a later start), joining them outside the registry's lock.
 * Returns: 0 and *task (the TASK JSON, caller decrefs).
 * Errors: FERRY_ETOOBIG when FERRY__ADMIN_TASKS_RUNNING_MAX tasks run (429);
 *   FERRY_ECLOSED when the server is stopping (503); FERRY_ENOMEM; thread creation
 *   failure (FERRY_EIO). Threads: any handler thread. Blocks: no (the thread does). */
int ferry__admin_task_start_retry(ferry__admin_req *r, const char *queue,
                                  const ferry_queue_retry_select *sel, json_t **task,
                                  ferry_error *err);

/* {"tasks": [TASK, ...]}: running and the last finished ones, newest first (caller
 * decrefs; NULL when out of memory). Threads: any. Blocks: no. */
json_t *ferry__admin_tasks_json(ferry__admin_req *r);

/* The TASK JSON of task `id` (caller decrefs), NULL when unknown. Threads: any. Blocks:
 * no. */
json_t *ferry__admin_task_json(ferry__admin_req *r, const char *id);

/* Ask task `id` to stop after its current chunk. Returns 0 and *task (the TASK JSON now,
 * caller decrefs), FERRY_ENOTFOUND when unknown, FERRY_ESTATE when it already finished
 * (*task set too). Threads: any. Blocks: no. */
int ferry__admin_task_cancel(ferry__admin_req *r, const char *id, json_t **task);

/* ---- audit.c ---- */

typedef struct ferry_admin_server ferry_admin_server;

/* Record an audit that no request makes (a task's finish): a row of admin_audit when a
 * database is configured, and a log record of kind AUDIT always, with the given fields
 * (remote and trace id none). summary is printable-escaped here. Blocks: one statement
 * within the server's statement timeout. Threads: any. */
void ferry__admin_audit_internal(ferry_admin_server *s, const char *actor, const char *method,
                                 const char *path, int status, const char *summary,
                                 const char *request_id);

#endif

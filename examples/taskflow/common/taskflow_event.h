/* taskflow_event.h - the task.assigned.v1 payload (contracts/task-assigned.v1@1.json),
 * written by taskflow-api into the outbox and read by taskflow-worker after the contract
 * check. Pure: no I/O.
 *
 * The payload is the seed's TaskAssignedV1: schemaVersion 1, messageId (new per event),
 * occurredAt (RFC 3339 UTC), tenantId, taskId, assigneeId and the optional traceparent.
 * Ids and the time only: never the task row, a title, an email address or a secret. */
#ifndef TASKFLOW_EVENT_H
#define TASKFLOW_EVENT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TF_EVENT_SCHEMA_VERSION 1
#define TF_OCCURRED_AT_MAX 40 /* bytes of occurredAt (the contract's maxLength) */

typedef struct tf_event {
    char message_id[37];
    char occurred_at[TF_OCCURRED_AT_MAX + 1];
    char tenant_id[37];
    char task_id[37];
    char assignee_id[37];
    char traceparent[56]; /* "" = none */
} tf_event;

/* The payload's JSON text (compact, members in the contract's order).
 * Returns: a malloc'd string the caller frees, or NULL when a field is missing or too long,
 *   or on OOM. Pure; threads: any. */
char *tf_event_payload(const tf_event *ev);

/* Read a payload (JSON text json[0..len)) that passed the contract check into *ev.
 * Returns: 0, or -1 with why[cap] saying which member is missing or malformed (names only,
 *   never a value). Pure; threads: any. */
int tf_event_parse(const char *json, size_t len, tf_event *ev, char *why, size_t cap);

#ifdef __cplusplus
}
#endif

#endif

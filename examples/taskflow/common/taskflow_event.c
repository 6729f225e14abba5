/* taskflow_event.c - the task.assigned.v1 payload, built and read (pure: no I/O). */
#include "taskflow_event.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *tf_event_payload(const tf_event *ev) {
    if (strlen(ev->message_id) != 36 || strlen(ev->tenant_id) != 36 || strlen(ev->task_id) != 36 ||
        strlen(ev->assignee_id) != 36 || !ev->occurred_at[0])
        return NULL;
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = json_object_set_new(o, "schemaVersion", json_integer(TF_EVENT_SCHEMA_VERSION));
    bad |= json_object_set_new(o, "messageId", json_string(ev->message_id));
    bad |= json_object_set_new(o, "occurredAt", json_string(ev->occurred_at));
    bad |= json_object_set_new(o, "tenantId", json_string(ev->tenant_id));
    bad |= json_object_set_new(o, "taskId", json_string(ev->task_id));
    bad |= json_object_set_new(o, "assigneeId", json_string(ev->assignee_id));
    if (ev->traceparent[0])
        bad |= json_object_set_new(o, "traceparent", json_string(ev->traceparent));
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

static int copy_member(json_t *root, const char *name, char *out, size_t cap, int required,
                       char *why, size_t whycap) {
    json_t *v = json_object_get(root, name);
    if (!v && !required) {
        out[0] = '\0';
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) >= cap || json_string_length(v) == 0) {
        snprintf(why, whycap, "payload member %s is missing or malformed", name);
        return -1;
    }
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

int tf_event_parse(const char *json, size_t len, tf_event *ev, char *why, size_t cap) {
    memset(ev, 0, sizeof *ev);
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(root)) {
        snprintf(why, cap, "payload is not a JSON object");
        json_decref(root);
        return -1;
    }
    int rc = copy_member(root, "messageId", ev->message_id, sizeof ev->message_id, 1, why, cap);
    if (!rc)
        rc = copy_member(root, "occurredAt", ev->occurred_at, sizeof ev->occurred_at, 1, why, cap);
    if (!rc) rc = copy_member(root, "tenantId", ev->tenant_id, sizeof ev->tenant_id, 1, why, cap);
    if (!rc) rc = copy_member(root, "taskId", ev->task_id, sizeof ev->task_id, 1, why, cap);
    if (!rc)
        rc = copy_member(root, "assigneeId", ev->assignee_id, sizeof ev->assignee_id, 1, why, cap);
    if (!rc)
        rc = copy_member(root, "traceparent", ev->traceparent, sizeof ev->traceparent, 0, why, cap);
    json_decref(root);
    return rc;
}

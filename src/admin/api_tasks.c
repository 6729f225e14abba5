/* api_tasks.c - the server-side task endpoints: POST /api/queues/{queue}/retry-all (start a
 * retry of the finished jobs a selector matches; 202 with the task), GET /api/tasks, GET
 * /api/tasks/{id}, POST /api/tasks/{id}/cancel (tasks.c runs them), and GET /api/audit
 * (api_audit.c). */
#include <string.h>

#include "admin/api_json.h"
#include "admin/tasks.h"

int ferry__api_audit_list(ferry__admin_req *r, ferry__admin_resp *out); /* api_audit.c */

/* A selector member given as null: refused, since taking it for "any" would widen the
 * selection to every job of the state (leave the member out for that). */
static int refuse_null(ferry__admin_req *r, ferry__admin_resp *out, const char *key) {
    json_t *v = r->body ? json_object_get(r->body, key) : NULL;
    if (v && json_is_null(v))
        return ferry__admin_fail(out, 400,
                                 "body member %s: must be a string (null is not \"any\"; leave "
                                 "the member out to match every job)",
                                 key);
    return 0;
}

/* POST /api/queues/{queue}/retry-all {"state", "name", "reasonContains", "dataContains"} */
static int retry_all(ferry__admin_req *r, ferry__admin_resp *out) {
    static const char *const allowed[] = {"state", "name", "reasonContains", "dataContains", NULL};
    ferry_queue_retry_select sel = {0};
    if (ferry__api_body_check(r, out, allowed) || refuse_null(r, out, "name") ||
        refuse_null(r, out, "reasonContains") || refuse_null(r, out, "dataContains") ||
        ferry__api_body_text(r, out, "state", &sel.state) ||
        ferry__api_body_text(r, out, "name", &sel.name) ||
        ferry__api_body_text(r, out, "reasonContains", &sel.reason_contains) ||
        ferry__api_body_text(r, out, "dataContains", &sel.data_contains))
        return -1;
    if (!sel.state) sel.state = "failed";
    if (strcmp(sel.state, "failed") != 0 && strcmp(sel.state, "completed") != 0)
        return ferry__admin_fail(out, 400, "body member state: expected failed or completed");
    if (sel.reason_contains && strcmp(sel.state, "completed") == 0)
        return ferry__admin_fail(out, 400,
                                 "body member reasonContains: needs state failed (completed "
                                 "jobs have no failedReason)");
    if (sel.name && strlen(sel.name) > FERRY_JOB_NAME_MAX)
        return ferry__admin_fail(out, 400, "body member name: at most %d bytes",
                                 FERRY_JOB_NAME_MAX);
    ferry_queue *q = NULL;
    if (ferry__api_queue(r, out, &q)) return -1; /* 404 for a queue that does not exist */
    ferry__admin_queue_release(r, q);
    json_t *task = NULL;
    ferry_error err = {0};
    int rc = ferry__admin_task_start_retry(r, r->params[0], &sel, &task, &err);
    if (rc == FERRY_ETOOBIG) return ferry__admin_fail(out, 429, "%s", err.message);
    if (rc == FERRY_ECLOSED) return ferry__admin_fail(out, 503, "%s", err.message);
    if (rc) return ferry__admin_fail_err(out, &err);
    char shown[128];
    out->status = 202;
    out->audit_summary =
        ferry__api_summary("started task %s: retry-all of %s jobs of %s",
                           json_string_value(json_object_get(task, "id")), sel.state,
                           ferry__api_shown(r->params[0], shown, sizeof shown));
    out->json = json_pack("{s:o}", "task", task);
    return 0;
}

static int tasks_list(ferry__admin_req *r, ferry__admin_resp *out) {
    out->json = ferry__admin_tasks_json(r);
    if (!out->json) return ferry__admin_fail(out, 500, "out of memory");
    return 0;
}

static int task_get(ferry__admin_req *r, ferry__admin_resp *out) {
    json_t *t = ferry__admin_task_json(r, r->params[0]);
    char shown[128];
    if (!t)
        return ferry__admin_fail(out, 404, "no task \"%s\"",
                                 ferry__api_shown(r->params[0], shown, sizeof shown));
    out->json = json_pack("{s:o}", "task", t);
    return 0;
}

/* POST /api/tasks/{id}/cancel: no body, or an empty object ({} is what the dashboard sends) */
static int task_cancel(ferry__admin_req *r, ferry__admin_resp *out) {
    static const char *const allowed[] = {NULL};
    if (ferry__api_body_check(r, out, allowed)) return -1;
    json_t *t = NULL;
    char shown[128];
    const char *id = ferry__api_shown(r->params[0], shown, sizeof shown);
    int rc = ferry__admin_task_cancel(r, r->params[0], &t);
    if (rc == FERRY_ENOTFOUND) return ferry__admin_fail(out, 404, "no task \"%s\"", id);
    if (rc == FERRY_ESTATE) {
        const char *state = json_string_value(json_object_get(t, "state"));
        ferry__admin_fail(out, 409, "task %s has finished already (%s)", id, state ? state : "?");
        json_decref(t);
        return -1;
    }
    out->audit_summary = ferry__api_summary("cancel asked for task %s", id);
    out->json = json_pack("{s:o}", "task", t);
    return 0;
}

const ferry__admin_route ferry__admin_routes_tasks[] = {
    {"POST", "/api/queues/{}/retry-all", FERRY__ADMIN_SCOPE_ACT, retry_all},
    {"GET", "/api/tasks", FERRY__ADMIN_SCOPE_READ, tasks_list},
    {"GET", "/api/tasks/{}", FERRY__ADMIN_SCOPE_READ, task_get},
    {"POST", "/api/tasks/{}/cancel", FERRY__ADMIN_SCOPE_ACT, task_cancel},
    {"GET", "/api/audit", FERRY__ADMIN_SCOPE_READ, ferry__api_audit_list},
    {NULL, NULL, 0, NULL},
};

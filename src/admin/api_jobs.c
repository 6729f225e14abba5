/* api_jobs.c - the job endpoints of the admin API: list a state's jobs (a page, as BullMQ's
 * getJobs), find by name / data (a bounded scan), one job, its removal, retry, promotion and
 * its log. Each action is the C API's call (ferry/queue.h), so it leaves exactly the keys
 * `ferry job ...` and Node's Job methods leave. Routes: api_queues.c's table. */
#include <stdlib.h>
#include <string.h>

#include "admin/api_json.h"

#define PAGE_DEFAULT 100

static const char *const states[] = {
    "wait",   "waiting",   "active", "delayed",          "prioritized",
    "paused", "completed", "failed", "waiting-children", NULL};

/* The state parameter checked (required); its count in *total. */
static int state_param(ferry__admin_req *r, ferry__admin_resp *out, const char **state) {
    const char *s = ferry__admin_query(r, "state");
    char shown[128];
    if (!s)
        return ferry__admin_fail(out, 400,
                                 "parameter state: required (wait, active, delayed, prioritized, "
                                 "paused, waiting-children, completed or failed)");
    for (size_t i = 0; states[i]; i++)
        if (!strcmp(states[i], s)) {
            *state = states[i];
            return 0;
        }
    return ferry__admin_fail(out, 400,
                             "parameter state: unknown state \"%s\" (wait, active, delayed, "
                             "prioritized, paused, waiting-children, completed or failed)",
                             ferry__api_shown(s, shown, sizeof shown));
}

static long long state_total(const ferry_job_counts *c, const char *state) {
    if (!strcmp(state, "wait") || !strcmp(state, "waiting")) return c->waiting;
    if (!strcmp(state, "active")) return c->active;
    if (!strcmp(state, "delayed")) return c->delayed;
    if (!strcmp(state, "prioritized")) return c->prioritized;
    if (!strcmp(state, "paused")) return c->paused;
    if (!strcmp(state, "completed")) return c->completed;
    if (!strcmp(state, "failed")) return c->failed;
    return c->waiting_children;
}

/* Every handler of one job starts here: the queue, and the job id (path parameter 1). */
static int job_begin(ferry__admin_req *r, ferry__admin_resp *out, ferry_queue **q) {
    if (r->nparams < 2) return ferry__admin_fail(out, 500, "route without a job id");
    return ferry__api_queue(r, out, q);
}

static int done(ferry__admin_req *r, ferry_queue *q, int rc) {
    ferry__admin_queue_release(r, q);
    return rc;
}

int ferry__api_jobs_list(ferry__admin_req *r, ferry__admin_resp *out) {
    const char *state = NULL, *name = NULL;
    long long start, end, limit;
    int asc;
    if (state_param(r, out, &state) ||
        ferry__api_query_ll(r, out, "start", 0, FERRY_QUEUE_MOVE_MAX, 0, &start) ||
        ferry__api_query_ll(r, out, "end", 0, FERRY_QUEUE_MOVE_MAX + FERRY__ADMIN_LIST_MAX, -1,
                            &end) ||
        ferry__api_query_ll(r, out, "limit", 1, FERRY__ADMIN_LIST_MAX, PAGE_DEFAULT, &limit) ||
        ferry__api_query_text(r, out, "name", &name) ||
        ferry__api_query_bool(r, out, "asc", 0, &asc))
        return -1;
    if (end >= 0 && ferry__admin_query(r, "limit"))
        return ferry__admin_fail(out, 400, "parameters end and limit: give one of them");
    if (end >= 0 && end < start)
        return ferry__admin_fail(out, 400, "parameter end: must be >= start (%lld)", start);
    if (end >= 0 && end - start + 1 > FERRY__ADMIN_LIST_MAX)
        return ferry__admin_fail(out, 400, "parameters start..end: at most %d jobs per page",
                                 FERRY__ADMIN_LIST_MAX);
    if (end < 0) end = start + limit - 1;
    ferry_queue *q;
    if (ferry__api_queue(r, out, &q)) return -1;
    ferry_error err = {0};
    ferry_job_counts c;
    char **ids = NULL;
    size_t n = 0;
    if (ferry_queue_counts(q, &c, &err) ||
        ferry_queue_job_page(q, state, start, end, asc, &ids, &n, &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    json_t *jobs = json_array();
    for (size_t i = 0; i < n; i++) {
        ferry_job_info *j = NULL;
        int rc = ferry_queue_get_job(q, ids[i], &j, &err);
        if (rc == FERRY_ENOTFOUND) continue; /* gone since the page was read */
        if (rc) {
            json_decref(jobs);
            ferry_queue_job_ids_free(ids, n);
            return done(r, q, ferry__admin_fail_err(out, &err));
        }
        if (!name || (j->name && !strcmp(j->name, name)))
            json_array_append_new(jobs, ferry__api_job_json(j));
        ferry_job_info_free(j);
    }
    ferry_queue_job_ids_free(ids, n);
    ferry__admin_queue_release(r, q);
    out->json = json_object();
    json_object_set_new(out->json, "queue", ferry__api_str(r->params[0]));
    json_object_set_new(out->json, "state", json_string(state));
    json_object_set_new(out->json, "start", json_integer(start));
    json_object_set_new(out->json, "end", json_integer(end));
    json_object_set_new(out->json, "total", json_integer(state_total(&c, state)));
    json_object_set_new(out->json, "jobs", jobs);
    return 0;
}

int ferry__api_job_get(ferry__admin_req *r, ferry__admin_resp *out) {
    ferry_queue *q;
    if (job_begin(r, out, &q)) return -1;
    ferry_error err = {0};
    ferry_job_info *j = NULL;
    if (ferry_queue_get_job(q, r->params[1], &j, &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    ferry__admin_queue_release(r, q);
    out->json = ferry__api_job_json(j);
    ferry_job_info_free(j);
    return 0;
}

int ferry__api_job_remove(ferry__admin_req *r, ferry__admin_resp *out) {
    ferry_queue *q;
    if (ferry__api_body_check(r, out, NULL) || job_begin(r, out, &q)) return -1;
    ferry_error err = {0};
    if (ferry_queue_remove_job(q, r->params[1], &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    ferry__admin_queue_release(r, q);
    out->json = json_pack("{s:s, s:b}", "id", r->params[1], "removed", 1);
    out->audit_summary = ferry__api_summary("removed 1 job");
    return 0;
}

int ferry__api_job_retry(ferry__admin_req *r, ferry__admin_resp *out) {
    static const char *const allowed[] = {"state", "resetAttemptsMade", "resetAttemptsStarted",
                                          NULL};
    const char *state = NULL;
    int reset_made, reset_started;
    if (ferry__api_body_check(r, out, allowed) || ferry__api_body_text(r, out, "state", &state) ||
        ferry__api_body_bool(r, out, "resetAttemptsMade", 0, &reset_made) ||
        ferry__api_body_bool(r, out, "resetAttemptsStarted", 0, &reset_started))
        return -1;
    if (state && strcmp(state, "failed") && strcmp(state, "completed"))
        return ferry__admin_fail(out, 400,
                                 "body member state: must be \"failed\" or \"completed\"");
    ferry_queue *q;
    if (job_begin(r, out, &q)) return -1;
    ferry_error err = {0};
    const char *from = NULL;
    unsigned flags = (reset_made ? FERRY_RETRY_RESET_ATTEMPTS : 0u) |
                     (reset_started ? FERRY_RETRY_RESET_STARTED : 0u);
    if (ferry_queue_retry_job(q, r->params[1], state, flags, &from, &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    ferry__admin_queue_release(r, q);
    out->json = json_object();
    json_object_set_new(out->json, "id", ferry__api_str(r->params[1]));
    json_object_set_new(out->json, "retried", json_true());
    json_object_set_new(out->json, "from", json_string(from ? from : ""));
    out->audit_summary = ferry__api_summary("retried 1 job (from %s)", from ? from : "?");
    return 0;
}

int ferry__api_job_promote(ferry__admin_req *r, ferry__admin_resp *out) {
    ferry_queue *q;
    if (ferry__api_body_check(r, out, NULL) || job_begin(r, out, &q)) return -1;
    ferry_error err = {0};
    if (ferry_queue_promote_job(q, r->params[1], &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    ferry__admin_queue_release(r, q);
    out->json = json_object();
    json_object_set_new(out->json, "id", ferry__api_str(r->params[1]));
    json_object_set_new(out->json, "promoted", json_true());
    out->audit_summary = ferry__api_summary("promoted 1 job");
    return 0;
}

int ferry__api_job_logs(ferry__admin_req *r, ferry__admin_resp *out) {
    long long start, end;
    int asc;
    if (ferry__api_query_ll(r, out, "start", 0, FERRY_QUEUE_MOVE_MAX, 0, &start) ||
        ferry__api_query_ll(r, out, "end", 0, FERRY_QUEUE_MOVE_MAX + FERRY__ADMIN_LIST_MAX,
                            start + FERRY__ADMIN_LIST_MAX - 1, &end) ||
        ferry__api_query_bool(r, out, "asc", 1, &asc))
        return -1;
    if (end < start) return ferry__admin_fail(out, 400, "parameter end: must be >= start");
    if (end - start + 1 > FERRY__ADMIN_LIST_MAX)
        return ferry__admin_fail(out, 400, "parameters start..end: at most %d lines per page",
                                 FERRY__ADMIN_LIST_MAX);
    ferry_queue *q;
    if (job_begin(r, out, &q)) return -1;
    ferry_error err = {0};
    ferry_job_info *j = NULL;
    if (ferry_queue_get_job(q, r->params[1], &j, &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    ferry_job_info_free(j);
    char **lines = NULL;
    size_t n = 0;
    long long count = 0;
    if (ferry_queue_job_logs(q, r->params[1], start, end, asc, &lines, &n, &count, &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    ferry__admin_queue_release(r, q);
    json_t *logs = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(logs, ferry__api_str(lines[i]));
    ferry_queue_job_ids_free(lines, n);
    out->json = json_object();
    json_object_set_new(out->json, "id", ferry__api_str(r->params[1]));
    json_object_set_new(out->json, "logs", logs);
    json_object_set_new(out->json, "count", json_integer(count));
    return 0;
}

int ferry__api_job_add_log(ferry__admin_req *r, ferry__admin_resp *out) {
    static const char *const allowed[] = {"line", "keep", NULL};
    long long keep;
    if (ferry__api_body_check(r, out, allowed) ||
        ferry__api_body_ll(r, out, "keep", 0, FERRY_LIMIT_COUNT_MAX, FERRY_LOG_KEEP_JOB, &keep))
        return -1;
    json_t *line = r->body ? json_object_get(r->body, "line") : NULL;
    if (!json_is_string(line))
        return ferry__admin_fail(out, 400, "body member line: required, a string");
    if (strlen(json_string_value(line)) != json_string_length(line))
        return ferry__admin_fail(out, 400, "body member line: contains a NUL character");
    ferry_queue *q;
    if (job_begin(r, out, &q)) return -1;
    ferry_error err = {0};
    long long count = 0;
    if (ferry_queue_add_log(q, r->params[1], json_string_value(line), keep, &count, &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    ferry__admin_queue_release(r, q);
    out->json = json_object();
    json_object_set_new(out->json, "id", ferry__api_str(r->params[1]));
    json_object_set_new(out->json, "count", json_integer(count));
    out->audit_summary =
        ferry__api_summary("added a log line (%zu bytes)", json_string_length(line));
    return 0;
}

/* ---- find ----------------------------------------------------------------------------- */

static void find_progress(void *ctx, const char *state, long long scanned, long long matched) {
    (void)state;
    (void)matched;
    *(long long *)ctx = scanned;
}

int ferry__api_jobs_find(ferry__admin_req *r, ferry__admin_resp *out) {
    const char *name = NULL, *data = NULL, *state = NULL;
    long long scan_max, limit;
    if (ferry__api_query_text(r, out, "name", &name) ||
        ferry__api_query_text(r, out, "dataContains", &data) ||
        ferry__api_query_ll(r, out, "maxScan", 1, FERRY_QUEUE_FIND_SCAN_MAX,
                            FERRY_QUEUE_FIND_SCAN_DEFAULT, &scan_max) ||
        ferry__api_query_ll(r, out, "limit", 1, FERRY__ADMIN_LIST_MAX, FERRY__ADMIN_LIST_MAX,
                            &limit))
        return -1;
    if (ferry__admin_query(r, "state") && state_param(r, out, &state)) return -1;
    if (data && strlen(data) > FERRY_QUEUE_FIND_DATA_TEXT_MAX)
        return ferry__admin_fail(out, 400, "parameter dataContains: over %d bytes",
                                 FERRY_QUEUE_FIND_DATA_TEXT_MAX);
    ferry_queue *q;
    if (ferry__api_queue(r, out, &q)) return -1;
    long long scanned = 0;
    ferry_queue_find_options fo = {.state = state,
                                   .name = name,
                                   .data_contains = data,
                                   .limit = limit,
                                   .scan_max = scan_max,
                                   .progress = find_progress,
                                   .progress_ctx = &scanned};
    ferry_queue_found_job *found = NULL;
    size_t n = 0;
    int complete = 0;
    ferry_error err = {0};
    if (ferry_queue_find_jobs(q, &fo, &found, &n, &complete, &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    ferry__admin_queue_release(r, q);
    json_t *jobs = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(jobs, json_pack("{s:o, s:o, s:s}", "id", ferry__api_str(found[i].id),
                                              "name", ferry__api_str(found[i].name), "state",
                                              found[i].state));
    ferry_queue_found_jobs_free(found, n);
    out->json = json_object();
    json_object_set_new(out->json, "jobs", jobs);
    json_object_set_new(out->json, "scanned", json_integer(scanned));
    json_object_set_new(out->json, "complete", json_boolean(complete));
    json_object_set_new(out->json, "maxScan", json_integer(scan_max));
    return 0;
}

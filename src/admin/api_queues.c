/* api_queues.c - the queue endpoints of the admin API and the route table of the queue and
 * job endpoints (the job handlers are in api_jobs.c): every queue with its counts, one
 * queue's counts and settings, pause / resume, retry / promote / clean / drain in bulk, its
 * workers and its events stream. Each action is the C API's call (ferry/queue.h), so it
 * leaves exactly the keys `ferry queue ...` and Node's Queue methods leave.
 * docs/operations.md lists every endpoint. */
#include <stdlib.h>
#include <string.h>

#include "admin/api_json.h"
#include "ferry/scheduler.h"

#define EVENTS_DEFAULT 100

static int done(ferry__admin_req *r, ferry_queue *q, int rc) {
    ferry__admin_queue_release(r, q);
    return rc;
}

/* GET /api/queues */
static int queues_list(ferry__admin_req *r, ferry__admin_resp *out) {
    ferry_error err = {0};
    char **names = NULL;
    size_t n = 0;
    int complete = 0;
    if (ferry_queue_names(r->cfg->redis, r->cfg->prefix, FERRY__ADMIN_LIST_MAX, &names, &n,
                          &complete, &err))
        return ferry__admin_fail_err(out, &err);
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        ferry_queue *q = NULL;
        ferry_job_counts c;
        int paused = 0;
        int rc = ferry__admin_queue(r, names[i], &q, &err);
        if (rc == FERRY_EINVAL) continue; /* a meta key whose name no queue API takes */
        if (!rc) rc = ferry_queue_counts(q, &c, &err);
        if (!rc) rc = ferry_queue_is_paused(q, &paused, &err);
        if (q) ferry__admin_queue_release(r, q);
        if (rc) {
            json_decref(list);
            ferry_queue_job_ids_free(names, n);
            return ferry__admin_fail_err(out, &err);
        }
        json_array_append_new(list,
                              json_pack("{s:o, s:o, s:b}", "name", ferry__api_str(names[i]),
                                        "counts", ferry__api_counts_json(&c), "paused", paused));
    }
    ferry_queue_job_ids_free(names, n);
    out->json = json_object();
    json_object_set_new(out->json, "prefix",
                        ferry__api_str(r->cfg->prefix ? r->cfg->prefix : FERRY_DEFAULT_PREFIX));
    json_object_set_new(out->json, "queues", list);
    /* 0: a bound stopped the scan (FERRY__ADMIN_LIST_MAX names, or the SCAN's) */
    json_object_set_new(out->json, "complete", json_boolean(complete));
    return 0;
}

/* GET /api/queues/{queue} */
static int queue_get(ferry__admin_req *r, ferry__admin_resp *out) {
    ferry_queue *q;
    if (ferry__api_queue(r, out, &q)) return -1;
    ferry_error err = {0};
    ferry_job_counts c;
    int paused = 0;
    long conc = 0, rl_max = 0;
    long long rl_dur = 0, nsched = 0;
    if (ferry_queue_counts(q, &c, &err) || ferry_queue_is_paused(q, &paused, &err) ||
        ferry_scheduler_count(q, &nsched, &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    json_t *o = json_object();
    json_object_set_new(o, "name", ferry__api_str(r->params[0]));
    json_object_set_new(o, "prefix", ferry__api_str(ferry_queue_prefix(q)));
    json_object_set_new(o, "counts", ferry__api_counts_json(&c));
    json_object_set_new(o, "paused", json_boolean(paused));
    json_object_set_new(o, "schedulers", json_integer(nsched));
    /* settings a foreign client stored in a form ferry cannot read show as null + a note */
    if (ferry_queue_get_global_concurrency(q, &conc, &err) == 0)
        json_object_set_new(o, "globalConcurrency", conc ? json_integer(conc) : json_null());
    else
        json_object_set_new(o, "globalConcurrencyError", ferry__api_str(err.message));
    if (ferry_queue_get_global_rate_limit(q, &rl_max, &rl_dur, &err) == 0)
        json_object_set_new(o, "globalRateLimit",
                            rl_max ? json_pack("{s:I, s:I}", "max", (json_int_t)rl_max, "duration",
                                               (json_int_t)rl_dur)
                                   : json_null());
    else
        json_object_set_new(o, "globalRateLimitError", ferry__api_str(err.message));
    ferry_queue_worker *w = NULL;
    size_t nw = 0;
    if (ferry_queue_workers(q, &w, &nw, &err) == 0) {
        json_object_set_new(o, "workers", json_integer((json_int_t)nw));
        ferry_queue_workers_free(w, nw);
    } else {
        json_object_set_new(o, "workers", json_null()); /* CLIENT LIST refused (hosted Redis) */
        json_object_set_new(o, "workersError", ferry__api_str(err.message));
    }
    ferry__admin_queue_release(r, q);
    out->json = o;
    return 0;
}

static int pause_resume(ferry__admin_req *r, ferry__admin_resp *out, int pause) {
    ferry_queue *q;
    if (ferry__api_body_check(r, out, NULL) || ferry__api_queue(r, out, &q)) return -1;
    ferry_error err = {0};
    if ((pause ? ferry_queue_pause : ferry_queue_resume)(q, &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    ferry__admin_queue_release(r, q);
    out->json = json_pack("{s:b}", "paused", pause);
    out->audit_summary = ferry__api_summary(pause ? "paused the queue" : "resumed the queue");
    return 0;
}

static int queue_pause(ferry__admin_req *r, ferry__admin_resp *out) {
    return pause_resume(r, out, 1);
}

static int queue_resume(ferry__admin_req *r, ferry__admin_resp *out) {
    return pause_resume(r, out, 0);
}

/* POST /api/queues/{queue}/retry {"state": "failed"|"completed", "limit": N} */
static int queue_retry(ferry__admin_req *r, ferry__admin_resp *out) {
    static const char *const allowed[] = {"state", "limit", NULL};
    const char *state = NULL;
    long long limit;
    if (ferry__api_body_check(r, out, allowed) || ferry__api_body_text(r, out, "state", &state) ||
        ferry__api_body_ll(r, out, "limit", 1, FERRY_QUEUE_MOVE_MAX, 0, &limit))
        return -1;
    if (state && strcmp(state, "failed") && strcmp(state, "completed"))
        return ferry__admin_fail(out, 400,
                                 "body member state: must be \"failed\" or \"completed\"");
    ferry_queue *q;
    if (ferry__api_queue(r, out, &q)) return -1;
    ferry_error err = {0};
    long long moved = 0;
    int rc = ferry_queue_retry_jobs(q, state ? state : "failed", limit, &moved, &err);
    ferry__admin_queue_release(r, q);
    out->audit_summary = ferry__api_summary("retried %lld %s jobs%s", moved,
                                            state ? state : "failed", rc ? " (then failed)" : "");
    if (rc) return ferry__admin_fail_err(out, &err);
    out->json =
        json_pack("{s:s, s:I}", "state", state ? state : "failed", "moved", (json_int_t)moved);
    return 0;
}

/* POST /api/queues/{queue}/promote {"limit": N} */
static int queue_promote(ferry__admin_req *r, ferry__admin_resp *out) {
    static const char *const allowed[] = {"limit", NULL};
    long long limit;
    if (ferry__api_body_check(r, out, allowed) ||
        ferry__api_body_ll(r, out, "limit", 1, FERRY_QUEUE_MOVE_MAX, 0, &limit))
        return -1;
    ferry_queue *q;
    if (ferry__api_queue(r, out, &q)) return -1;
    ferry_error err = {0};
    long long moved = 0;
    int rc = ferry_queue_promote_jobs(q, limit, &moved, &err);
    ferry__admin_queue_release(r, q);
    out->audit_summary =
        ferry__api_summary("promoted %lld delayed jobs%s", moved, rc ? " (then failed)" : "");
    if (rc) return ferry__admin_fail_err(out, &err);
    out->json = json_pack("{s:I}", "moved", (json_int_t)moved);
    return 0;
}

/* POST /api/queues/{queue}/clean {"state": S, "grace": "1h"|ms, "limit": N} */
static int queue_clean(ferry__admin_req *r, ferry__admin_resp *out) {
    static const char *const allowed[] = {"state", "grace", "limit", NULL};
    static const char *const states[] = {"completed", "failed", "delayed",     "wait",
                                         "waiting",   "paused", "prioritized", NULL};
    const char *state = NULL;
    long long limit, grace = -1;
    if (ferry__api_body_check(r, out, allowed) || ferry__api_body_text(r, out, "state", &state) ||
        ferry__api_body_ll(r, out, "limit", 1, FERRY_QUEUE_MOVE_MAX, 0, &limit))
        return -1;
    int known = 0;
    for (size_t i = 0; state && states[i] && !known; i++)
        known = !strcmp(states[i], state);
    if (!known)
        return ferry__admin_fail(out, 400,
                                 "body member state: required, one of completed, failed, delayed, "
                                 "wait, paused, prioritized");
    json_t *g = r->body ? json_object_get(r->body, "grace") : NULL;
    if (json_is_integer(g) && json_integer_value(g) >= 0 &&
        json_integer_value(g) <= FERRY_LIMIT_MS_MAX)
        grace = (long long)json_integer_value(g);
    else if (json_is_string(g))
        (void)ferry__api_parse_duration(json_string_value(g), &grace);
    if (grace < 0)
        return ferry__admin_fail(out, 400,
                                 "body member grace: required, milliseconds or a duration such "
                                 "as \"90s\", \"30m\", \"1h\", \"7d\"");
    ferry_queue *q;
    if (ferry__api_queue(r, out, &q)) return -1;
    ferry_error err = {0};
    char **ids = NULL;
    size_t n = 0;
    int rc = ferry_queue_clean(q, state, grace, limit, &ids, &n, &err);
    ferry__admin_queue_release(r, q);
    out->audit_summary = ferry__api_summary("cleaned %zu %s jobs older than %lld ms%s", n, state,
                                            grace, rc ? " (then failed)" : "");
    json_t *list = json_array();
    for (size_t i = 0; i < n && i < FERRY__ADMIN_LIST_MAX; i++)
        json_array_append_new(list, ferry__api_str(ids[i]));
    ferry_queue_job_ids_free(ids, n);
    if (rc) {
        json_decref(list);
        return ferry__admin_fail_err(out, &err);
    }
    out->json = json_object();
    json_object_set_new(out->json, "state", json_string(state));
    json_object_set_new(out->json, "graceMs", json_integer(grace));
    json_object_set_new(out->json, "deleted", json_integer((json_int_t)n));
    json_object_set_new(out->json, "ids", list); /* the first FERRY__ADMIN_LIST_MAX */
    json_object_set_new(out->json, "idsTruncated", json_boolean(n > FERRY__ADMIN_LIST_MAX));
    return 0;
}

/* POST /api/queues/{queue}/drain {"delayed": bool} */
static int queue_drain(ferry__admin_req *r, ferry__admin_resp *out) {
    static const char *const allowed[] = {"delayed", NULL};
    int delayed;
    if (ferry__api_body_check(r, out, allowed) ||
        ferry__api_body_bool(r, out, "delayed", 0, &delayed))
        return -1;
    ferry_queue *q;
    if (ferry__api_queue(r, out, &q)) return -1;
    ferry_error err = {0};
    long long removed = 0;
    int rc = ferry_queue_drain(q, delayed, &removed, &err);
    ferry__admin_queue_release(r, q);
    out->audit_summary =
        ferry__api_summary("drained %lld jobs%s%s", removed, delayed ? " (delayed too)" : "",
                           rc ? " (then failed)" : "");
    if (rc) return ferry__admin_fail_err(out, &err);
    out->json = json_pack("{s:I, s:b}", "removed", (json_int_t)removed, "delayed", delayed);
    return 0;
}

/* GET /api/queues/{queue}/workers */
static int queue_workers(ferry__admin_req *r, ferry__admin_resp *out) {
    ferry_queue *q;
    if (ferry__api_queue(r, out, &q)) return -1;
    ferry_error err = {0};
    ferry_queue_worker *w = NULL;
    size_t n = 0;
    if (ferry_queue_workers(q, &w, &n, &err)) return done(r, q, ferry__admin_fail_err(out, &err));
    ferry__admin_queue_release(r, q);
    json_t *list = json_array();
    for (size_t i = 0; i < n && i < FERRY__ADMIN_LIST_MAX; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "id", ferry__api_str(w[i].id));
        json_object_set_new(o, "addr", ferry__api_str(w[i].addr));
        json_object_set_new(o, "name", ferry__api_str(w[i].worker_name));
        json_object_set_new(o, "rawname", ferry__api_str(w[i].rawname));
        json_object_set_new(o, "age", w[i].age_s >= 0 ? json_integer(w[i].age_s) : json_null());
        json_object_set_new(o, "idle", w[i].idle_s >= 0 ? json_integer(w[i].idle_s) : json_null());
        json_array_append_new(list, o);
    }
    ferry_queue_workers_free(w, n);
    out->json = json_pack("{s:o, s:I}", "workers", list, "total", (json_int_t)n);
    return 0;
}

/* GET /api/queues/{queue}/events?from=ID&count=N */
static int queue_events(ferry__admin_req *r, ferry__admin_resp *out) {
    long long count;
    const char *from = NULL;
    if (ferry__api_query_ll(r, out, "count", 1, FERRY__ADMIN_LIST_MAX, EVENTS_DEFAULT, &count) ||
        ferry__api_query_text(r, out, "from", &from))
        return -1;
    if (from && (!strcmp(from, "$") || strlen(from) >= FERRY_QUEUE_EVENT_ID_MAX))
        return ferry__admin_fail(out, 400,
                                 "parameter from: an event id (\"<ms>-<seq>\") or 0 for the "
                                 "start");
    ferry_queue *q;
    if (ferry__api_queue(r, out, &q)) return -1;
    ferry_error err = {0};
    ferry_queue_event *ev = NULL;
    size_t n = 0;
    char last[FERRY_QUEUE_EVENT_ID_MAX] = "";
    if (ferry_queue_events_read(q, from, (size_t)count, 0, &ev, &n, last, &err))
        return done(r, q, ferry__admin_fail_err(out, &err));
    ferry__admin_queue_release(r, q);
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *fields = json_object();
        for (size_t k = 0; k < ev[i].nfields; k++)
            json_object_set_new(fields, ev[i].names[k], ferry__api_str(ev[i].values[k]));
        json_array_append_new(list, json_pack("{s:s, s:o, s:o}", "id", ev[i].id, "event",
                                              ferry__api_str(ev[i].event), "fields", fields));
    }
    ferry_queue_events_free(ev, n);
    out->json = json_pack("{s:o, s:s}", "events", list, "lastId", last);
    return 0;
}

const ferry__admin_route ferry__admin_routes_queues[] = {
    {"GET", "/api/queues", FERRY__ADMIN_SCOPE_READ, queues_list},
    {"GET", "/api/queues/{}", FERRY__ADMIN_SCOPE_READ, queue_get},
    {"POST", "/api/queues/{}/pause", FERRY__ADMIN_SCOPE_ACT, queue_pause},
    {"POST", "/api/queues/{}/resume", FERRY__ADMIN_SCOPE_ACT, queue_resume},
    {"POST", "/api/queues/{}/retry", FERRY__ADMIN_SCOPE_ACT, queue_retry},
    {"POST", "/api/queues/{}/promote", FERRY__ADMIN_SCOPE_ACT, queue_promote},
    {"POST", "/api/queues/{}/clean", FERRY__ADMIN_SCOPE_ACT, queue_clean},
    {"POST", "/api/queues/{}/drain", FERRY__ADMIN_SCOPE_ACT, queue_drain},
    {"GET", "/api/queues/{}/workers", FERRY__ADMIN_SCOPE_READ, queue_workers},
    {"GET", "/api/queues/{}/events", FERRY__ADMIN_SCOPE_READ, queue_events},
    {"GET", "/api/queues/{}/find", FERRY__ADMIN_SCOPE_READ, ferry__api_jobs_find},
    {"GET", "/api/queues/{}/jobs", FERRY__ADMIN_SCOPE_READ, ferry__api_jobs_list},
    {"GET", "/api/queues/{}/jobs/{}", FERRY__ADMIN_SCOPE_READ, ferry__api_job_get},
    {"DELETE", "/api/queues/{}/jobs/{}", FERRY__ADMIN_SCOPE_ACT, ferry__api_job_remove},
    {"POST", "/api/queues/{}/jobs/{}/retry", FERRY__ADMIN_SCOPE_ACT, ferry__api_job_retry},
    {"POST", "/api/queues/{}/jobs/{}/promote", FERRY__ADMIN_SCOPE_ACT, ferry__api_job_promote},
    {"GET", "/api/queues/{}/jobs/{}/logs", FERRY__ADMIN_SCOPE_READ, ferry__api_job_logs},
    {"POST", "/api/queues/{}/jobs/{}/logs", FERRY__ADMIN_SCOPE_ACT, ferry__api_job_add_log},
    {NULL, NULL, 0, NULL},
};

/* trace_json.c - a trace (ferry/trace.h) as JSON: what GET /api/trace/{eventId} answers
 * and `ferry trace --json` prints (ferry_trace_json), one shape for both. Times are ms with
 * their ISO text beside them (api_json.c's rule), BullMQ job times ms or null. */
#include <stdlib.h>

#include "admin/api_json.h"
#include "ferry/trace.h"

static json_t *outbox_json(const ferry_trace_outbox *ob) {
    json_t *o = json_object();
    json_object_set_new(o, "id", ferry__api_str(ob->id));
    json_object_set_new(o, "topic", ferry__api_str(ob->topic));
    json_object_set_new(o, "aggregateId", ferry__api_str(ob->aggregate_id));
    json_object_set_new(o, "traceId", ferry__api_str(ob->trace_id));
    ferry__api_set_time(o, "createdAt", ob->created_at_ms, 1);
    ferry__api_set_time(o, "publishedAt", ob->published_at_ms, 1);
    json_object_set_new(o, "attempts", json_integer(ob->attempts));
    json_object_set_new(o, "lastError", ferry__api_str(ob->last_error));
    ferry__api_set_time(o, "quarantinedAt", ob->quarantined_at_ms, 1);
    return o;
}

/* A BullMQ time field: null when the job has none (-1). */
static json_t *job_time(long long ms) {
    return ms < 0 ? json_null() : json_integer(ms);
}

static json_t *job_json(const ferry_trace_job *tj) {
    const ferry_job_info *j = tj->job;
    json_t *o = json_object();
    json_object_set_new(o, "queue", ferry__api_str(tj->queue));
    json_object_set_new(o, "id", ferry__api_str(j->id));
    json_object_set_new(o, "state", ferry__api_str(j->state));
    json_object_set_new(o, "name", ferry__api_str(j->name));
    json_object_set_new(o, "attemptsMade", json_integer(j->attempts_made));
    json_object_set_new(o, "attemptsStarted", json_integer(j->attempts_started));
    json_object_set_new(o, "timestamp", job_time(j->timestamp));
    json_object_set_new(o, "processedOn", job_time(j->processed_on));
    json_object_set_new(o, "finishedOn", job_time(j->finished_on));
    json_object_set_new(o, "failedReason", ferry__api_str(j->failed_reason));
    json_object_set_new(o, "redriveOf", ferry__api_str(tj->redrive_of));
    return o;
}

static json_t *dead_letter_json(const ferry_trace_dead_letter *d) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(d->id));
    json_object_set_new(o, "queue", ferry__api_str(d->queue));
    json_object_set_new(o, "jobId", ferry__api_str(d->job_id));
    json_object_set_new(o, "name", ferry__api_str(d->name));
    json_object_set_new(o, "error", ferry__api_str(d->error));
    json_object_set_new(o, "attemptsMade", json_integer(d->attempts_made));
    ferry__api_set_time(o, "failedAt", d->failed_at_ms, 0);
    ferry__api_set_time(o, "redrivenAt", d->redriven_at_ms, 1);
    json_object_set_new(o, "redrivenBy", ferry__api_str(d->redriven_by));
    json_object_set_new(o, "redriveJobId", ferry__api_str(d->redrive_job_id));
    json_object_set_new(o, "redriveCount", json_integer(d->redrive_count));
    return o;
}

static json_t *redrive_json(const ferry_trace_redrive *r) {
    json_t *o = json_object();
    json_object_set_new(o, "deadLetterId", json_string(r->dead_letter_id));
    json_object_set_new(o, "queue", ferry__api_str(r->queue));
    json_object_set_new(o, "jobId", ferry__api_str(r->job_id));
    json_object_set_new(o, "newJobId", ferry__api_str(r->new_job_id));
    json_object_set_new(o, "action", ferry__api_str(r->action));
    json_object_set_new(o, "redrivenBy", ferry__api_str(r->redriven_by));
    ferry__api_set_time(o, "redrivenAt", r->redriven_at_ms, 0);
    json_object_set_new(o, "dryRun", json_boolean(r->dry_run));
    return o;
}

json_t *ferry__trace_json(const ferry_trace *t) {
    json_t *o = json_object();
    json_object_set_new(o, "eventId", json_string(t->event_id));
    json_object_set_new(o, "outbox", t->outbox ? outbox_json(t->outbox) : json_null());
    json_t *a = json_array();
    for (size_t i = 0; i < t->nroutes; i++)
        json_array_append_new(a,
                              json_pack("{s:o, s:o}", "queue", ferry__api_str(t->routes[i].queue),
                                        "name", ferry__api_str(t->routes[i].name)));
    json_object_set_new(o, "routes", a);
    json_object_set_new(o, "routesKnown", json_boolean(t->routes_known));
    a = json_array();
    for (size_t i = 0; i < t->njobs; i++)
        json_array_append_new(a, job_json(&t->jobs[i]));
    json_object_set_new(o, "jobs", a);
    json_object_set_new(o, "queuesComplete", json_boolean(t->queues_complete));
    a = json_array();
    for (size_t i = 0; i < t->ninbox; i++) {
        char iso[40];
        json_t *m = json_object();
        json_object_set_new(m, "consumer", ferry__api_str(t->inbox[i].consumer));
        json_object_set_new(
            m, "processedAt",
            json_string(ferry__api_iso(t->inbox[i].processed_at_ms, iso, sizeof iso)));
        json_object_set_new(m, "processedAtMs", json_integer(t->inbox[i].processed_at_ms));
        json_array_append_new(a, m);
    }
    json_object_set_new(o, "inbox", a);
    a = json_array();
    for (size_t i = 0; i < t->ndead_letters; i++)
        json_array_append_new(a, dead_letter_json(&t->dead_letters[i]));
    json_object_set_new(o, "deadLetters", a);
    a = json_array();
    for (size_t i = 0; i < t->nredrives; i++)
        json_array_append_new(a, redrive_json(&t->redrives[i]));
    json_object_set_new(o, "redrives", a);
    json_object_set_new(o, "found", json_true());
    return o;
}

char *ferry_trace_json(const ferry_trace *t) {
    if (!t) return NULL;
    json_t *j = ferry__trace_json(t);
    char *text = j ? json_dumps(j, FERRY__ADMIN_JSON_FLAGS) : NULL;
    json_decref(j);
    return text;
}

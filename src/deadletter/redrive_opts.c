/* redrive_opts.c - the options a redriven job is added with, from the failed job's stored
 * options: what shapes how it runs (attempts, backoff, priority, lifo, retention, limits,
 * keepLogs) is kept; what belonged to the failed job alone (its id, delay and timestamp,
 * scheduler, flow parent and deduplication keys, telemetry) is not, since the redriven job
 * is a new, standalone job. Pure. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter/dlq_internal.h"
#include "util/json_text.h"

/* stored key -> the public option name ferry_queue_add takes */
static const struct {
    const char *stored, *public_name;
} KEEP[] = {
    {"attempts", "attempts"},
    {"backoff", "backoff"},
    {"priority", "priority"},
    {"lifo", "lifo"},
    {"removeOnComplete", "removeOnComplete"},
    {"removeOnFail", "removeOnFail"},
    {"stackTraceLimit", "stackTraceLimit"},
    {"sizeLimit", "sizeLimit"},
    {"kl", "keepLogs"},
    {"keepLogs", "keepLogs"},
};

char *ferry__dlq_redrive_opts(const char *stored, const char *new_id) {
    json_t *out = json_object();
    if (!out) return NULL;
    json_t *in = NULL;
    if (stored && ferryx_json_depth(stored, strlen(stored), FERRY_JOB_OPTS_DEPTH_MAX) <=
                      FERRY_JOB_OPTS_DEPTH_MAX)
        in = json_loads(stored, JSON_DECODE_ANY, NULL);
    if (json_is_object(in)) {
        for (size_t i = 0; i < sizeof KEEP / sizeof KEEP[0]; i++) {
            json_t *v = json_object_get(in, KEEP[i].stored);
            if (v && !json_is_null(v)) json_object_set(out, KEEP[i].public_name, v);
        }
    }
    json_decref(in);
    json_object_set_new(out, "jobId", json_string(new_id));
    char *s = ferryx_json_serialize(out, 1, FERRY_JOB_OPTS_MAX);
    json_decref(out);
    return s;
}

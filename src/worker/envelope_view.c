/* envelope_view.c - the job's outbox envelope as the handler sees it (ferry_job_event_id,
 * _trace_id, _payload), decoded once by the envelope module's one decoder. */
#include <stdlib.h>
#include <string.h>

#include "envelope/envelope.h"
#include "ferry/queue.h"
#include "worker/worker_internal.h"

int ferry__job_envelope(ferry_job *j) {
    if (j->env_done) return 0;
    const char *data = j->data;
    size_t n = data ? strlen(data) : 0;
    ferry__envelope_parse(data, n, FERRY_JOB_DATA_DEPTH_MAX, &j->env);
    if (j->env.is_envelope) {
        j->payload = malloc(j->env.payload_len + 1);
        if (!j->payload) return FERRY_ENOMEM;
        ferry__json_compact_copy(data + j->env.payload_off, j->env.payload_len, j->payload);
    }
    j->env_done = 1;
    return 0;
}

const char *ferry_job_event_id(const ferry_job *j) {
    return j->env_done && j->env.event_id[0] ? j->env.event_id : NULL;
}
const char *ferry_job_trace_id(const ferry_job *j) {
    return j->env_done && j->env.trace_id[0] ? j->env.trace_id : NULL;
}
const char *ferry_job_payload(const ferry_job *j) {
    return j->payload ? j->payload : j->data;
}

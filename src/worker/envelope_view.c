/* envelope_view.c - the job's outbox envelope as the handler sees it (ferry_job_event_id,
 * _trace_id, _payload). PLACEHOLDER: parsed with jansson at first use; to be replaced by
 * the one envelope decoder in src/envelope. */
#include <ferry/worker.h>

#include <jansson.h>
#include <string.h>

#include "worker_internal.h"

const char *ferry_job_event_id(const ferry_job *j) {
    (void)j;
    return NULL;
}
const char *ferry_job_trace_id(const ferry_job *j) {
    (void)j;
    return NULL;
}
const char *ferry_job_payload(const ferry_job *j) {
    return j->data;
}

/* worker_log.c - the job outcome, error and notice lines of `ferry worker`, text or JSON
 * (see worker_log.h). */
#include "worker_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logline.h"

int worker_log_error(const cmd_spec *spec, const cli_conn *c, int level, const char *event,
                     json_t *fields, const char *what, const ferry_error *err) {
    int rc =
        err->code == FERRY_EINVAL || err->code == FERRY_ETOOBIG ? CLI_EXIT_USAGE : CLI_EXIT_RUNTIME;
    if (logline_get_format() == LOGLINE_JSON) {
        char text[FERRY_ERROR_MESSAGE_MAX * 2 + 1024];
        cli_report_text(c, what, err, text, sizeof text);
        if (!fields) fields = json_object();
        logline_set_str(fields, "code", ferry_err_name(err->code));
        logline_event(spec->name, level, event, fields, "%s", text);
        return rc;
    }
    json_decref(fields);
    /* cli_report owns the masking and wording; the timestamp goes in front of its line
     * under the stdio lock (recursive), so the two writes stay one line */
    char t[LOGLINE_TIME_MAX];
    flockfile(stderr);
    fprintf(stderr, "%s ", logline_time(t, sizeof t));
    rc = cli_report(spec, c, what, err);
    funlockfile(stderr);
    return rc;
}

int worker_log_report(const cmd_spec *spec, const cli_conn *c, const char *what,
                      const ferry_error *err) {
    return worker_log_error(spec, c, FERRY_LOG_ERROR, "worker.error", NULL, what, err);
}

void worker_log_notice(const ferry_worker_notice *n) {
    json_t *f = json_object();
    const char *event = "worker.notice";
    int level = FERRY_LOG_WARN;
    switch (n->kind) {
    case FERRY_NOTICE_REDIS_LOST:
        event = "worker.redis_lost";
        logline_set_str(f, "code", ferry_err_name(n->code));
        break;
    case FERRY_NOTICE_REDIS_RESTORED:
        event = "worker.redis_restored";
        level = FERRY_LOG_INFO;
        logline_set_int(f, "down_ms", n->down_ms);
        break;
    case FERRY_NOTICE_EVICTION_POLICY:
        event = "worker.eviction_policy";
        logline_set_str(f, "policy", n->policy);
        break;
    }
    logline_event("worker", level, event, f, "%s%s",
                  n->kind == FERRY_NOTICE_EVICTION_POLICY ? "warning: " : "", n->message);
}

/* A job outcome's level: what an operator filters on. */
static int outcome_level(const char *outcome) {
    if (!outcome) return FERRY_LOG_INFO;
    if (!strcmp(outcome, "failed") || !strcmp(outcome, "permanent")) return FERRY_LOG_ERROR;
    if (!strcmp(outcome, "retry") || !strcmp(outcome, "lock-lost")) return FERRY_LOG_WARN;
    return FERRY_LOG_INFO; /* completed, retry-later, throttled */
}

static void job_text(const ferry_job_log *rec, const char *status) {
    char buf[2048], *heap = NULL;
    const char *line = buf;
    size_t need = ferry_job_log_format(rec, 0, buf, sizeof buf);
    if (need >= sizeof buf && (heap = malloc(need + 1)) != NULL) {
        ferry_job_log_format(rec, 0, heap, need + 1);
        line = heap;
    } /* else (no memory) print the truncated line: losing a log line is worse */
    logline("worker", "%s%s%s", line, status ? " status=" : "", status ? status : "");
    free(heap);
}

void worker_log_job(const ferry_job_log *rec, const char *status) {
    if (logline_get_format() != LOGLINE_JSON) {
        job_text(rec, status);
        return;
    }
    json_t *f = json_object();
    logline_set_str(f, "queue", rec->queue ? rec->queue : "");
    logline_set_str(f, "job", rec->name ? rec->name : "");
    logline_set_str(f, "id", rec->id ? rec->id : "");
    logline_set_int(f, "attempt", rec->attempt);
    logline_set_trace(f, rec->trace_id);
    logline_set_str(f, "outcome", rec->outcome ? rec->outcome : "");
    logline_set_int(f, "duration_ms", rec->duration_ms);
    logline_set_int(f, "age_ms", rec->age_ms);
    logline_set_int(f, "delay_ms", rec->delay_ms);
    if (rec->reason)
        logline_set_str(f, "reason", rec->reason);
    else
        json_object_set_new(f, "reason", json_null());
    logline_set_str(f, "status", status);
    logline_event("worker", outcome_level(rec->outcome), "worker.job", f, "job %s",
                  rec->outcome ? rec->outcome : "");
}

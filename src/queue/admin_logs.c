/* admin_logs.c - a job's log lines, BullMQ 6.7.0's `<job>:logs` list: adding one
 * (ferry_queue_add_log: lua/addLog.lua, as Job.log / Queue.addJobLog) and reading a page
 * with the total (ferry_queue_job_logs: lua/getJobLogs.lua, as Queue.getJobLogs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/job_opts_ext.h"
#include "queue/queue_internal.h"
#include "util/error.h"
#include "util/printable.h"

#define SHOWN_ID_MAX 256 /* a job id as messages show it (escaped, cut) */

/* The job's key and its logs key (malloc'd into *key, *logs) after checking the id as get
 * and remove do. */
static int log_keys(const ferry_queue *q, const char *what, const char *job_id, char **key,
                    char **logs, ferry_error *err) {
    *logs = NULL;
    int rc = ferry__queue_job_key(q, what, job_id, NULL, key, err);
    if (!rc && (rc = ferry__queue_job_key(q, what, job_id, ":logs", logs, err)) != 0) {
        free(*key);
        *key = NULL;
    }
    return rc;
}

int ferry_queue_add_log(ferry_queue *q, const char *job_id, const char *line, long long keep,
                        long long *count, ferry_error *err) {
    if (count) *count = 0;
    if (!q || !line) return ferry__err(err, FERRY_EINVAL, "ferry_queue_add_log: NULL argument");
    size_t len = strlen(line);
    if (len > FERRY_JOB_LOG_LINE_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "add log: line of %zu bytes is over the limit of %d",
                          len, FERRY_JOB_LOG_LINE_MAX);
    if (keep < FERRY_LOG_KEEP_JOB || keep > FERRY_LIMIT_COUNT_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "add log: keep %lld out of range (-1 = the job's keepLogs, 0 = all, "
                          "up to %ld)",
                          keep, FERRY_LIMIT_COUNT_MAX);
    char *key = NULL, *logs = NULL;
    int rc = log_keys(q, "add log", job_id, &key, &logs, err);
    if (rc) return rc;
    char keep_text[32] = "";
    if (keep == FERRY_LOG_KEEP_JOB)
        snprintf(keep_text, sizeof keep_text, "job");
    else if (keep > 0)
        snprintf(keep_text, sizeof keep_text, "%lld", keep);
    const char *keys[] = {key, logs};
    const char *args[] = {line, keep_text};
    const size_t arglens[] = {len, strlen(keep_text)};
    redisReply *r = NULL;
    pthread_mutex_lock(&q->mu);
    /* Not retried after a transport failure: the line could be added twice. */
    rc = ferry__queue_eval(q, "addLog", 2, keys, 2, args, arglens, 0, &r, err);
    pthread_mutex_unlock(&q->mu);
    free(key);
    free(logs);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "addLog", err);
    char sid[SHOWN_ID_MAX];
    if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: addLog: unexpected reply", q->shown);
    else if (rc == 0 && r->integer == -1)
        rc = ferry__err(err, FERRY_ENOTFOUND, "job %s not found in queue %s",
                        ferryx_printable(job_id, sid, sizeof sid), q->shown);
    else if (rc == 0 && count)
        *count = r->integer;
    if (r) freeReplyObject(r);
    return rc;
}

int ferry_queue_job_logs(ferry_queue *q, const char *job_id, long long start, long long end,
                         int ascending, char ***lines, size_t *n, long long *count,
                         ferry_error *err) {
    if (lines) *lines = NULL;
    if (n) *n = 0;
    if (count) *count = 0;
    if (!q || !lines || !n)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_job_logs: NULL argument");
    if (start < 0 || end < -1 || (end >= 0 && end < start) || start > FERRY_QUEUE_MOVE_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "job logs: range %lld..%lld: start must be 0..%lld and end >= start "
                          "(or -1 for the last)",
                          start, end, (long long)FERRY_QUEUE_MOVE_MAX);
    if (end >= 0 && end - start >= FERRY_QUEUE_IDS_MAX)
        return ferry__err(err, FERRY_EINVAL, "job logs: at most %d lines per call (asked %lld)",
                          FERRY_QUEUE_IDS_MAX, end - start + 1);
    if (end < 0) end = start + FERRY_QUEUE_IDS_MAX - 1;
    char *key = NULL, *logs = NULL;
    int rc = log_keys(q, "job logs", job_id, &key, &logs, err);
    if (rc) return rc;
    free(key);
    char a_start[32], a_end[32];
    snprintf(a_start, sizeof a_start, "%lld", start);
    snprintf(a_end, sizeof a_end, "%lld", end);
    const char *keys[] = {logs};
    const char *args[] = {a_start, a_end, ascending ? "1" : "0"};
    redisReply *r = NULL;
    pthread_mutex_lock(&q->mu);
    rc = ferry__queue_eval(q, "getJobLogs", 1, keys, 3, args, NULL, 1, &r, err);
    pthread_mutex_unlock(&q->mu);
    free(logs);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "getJobLogs", err);
    if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                    r->element[0]->type != REDIS_REPLY_ARRAY ||
                    r->element[0]->elements > FERRY_QUEUE_IDS_MAX ||
                    r->element[1]->type != REDIS_REPLY_INTEGER))
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: getJobLogs: unexpected reply", q->shown);
    const redisReply *got = rc == 0 ? r->element[0] : NULL;
    for (size_t i = 0; rc == 0 && i < got->elements; i++)
        if (got->element[i]->type != REDIS_REPLY_STRING)
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: getJobLogs: unexpected line", q->shown);
    if (rc == 0 && got->elements) {
        char **out = calloc(got->elements, sizeof *out);
        if (!out) rc = ferry__err(err, FERRY_ENOMEM, "job logs: out of memory");
        for (size_t i = 0; rc == 0 && i < got->elements; i++)
            if (!(out[i] = strndup(got->element[i]->str, got->element[i]->len)))
                rc = ferry__err(err, FERRY_ENOMEM, "job logs: out of memory");
        if (rc) {
            ferry_queue_job_ids_free(out, got->elements);
        } else {
            *lines = out;
            *n = got->elements;
        }
    }
    if (rc == 0 && count) *count = r->element[1]->integer;
    if (r) freeReplyObject(r);
    return rc;
}

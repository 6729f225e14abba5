/* admin_list.c - a page of a state's jobs as BullMQ 6.7.0's Queue.getJobs returns it
 * (ferry_queue_job_page: lua/getJobs.lua): the positions asked for, ids whose job is gone
 * skipped and the page filled up from the positions after it. ferry_queue_job_ids
 * (queue_list.c) gives the raw ids of a range instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "util/error.h"

/* BullMQ's GET_JOBS_MAX_BACKFILL_ITERATIONS: reads of the state per page at most. */
#define PAGE_ROUNDS "5"

int ferry_queue_job_page(ferry_queue *q, const char *state, long long start, long long end,
                         int ascending, char ***ids, size_t *n, ferry_error *err) {
    if (ids) *ids = NULL;
    if (n) *n = 0;
    if (!q || !state || !ids || !n)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_job_page: NULL argument");
    if (start > FERRY_QUEUE_MOVE_MAX)
        return ferry__err(err, FERRY_EINVAL, "job page: start %lld over %lld", start,
                          (long long)FERRY_QUEUE_MOVE_MAX);
    enum ferry__qkey qk;
    int list;
    int rc0 = ferry__queue_state_range("job page", state, start, &end, &qk, &list, err);
    if (rc0) return rc0;
    char a_start[32], a_end[32];
    snprintf(a_start, sizeof a_start, "%lld", start);
    snprintf(a_end, sizeof a_end, "%lld", end);
    const char *keys[] = {q->key[qk]};
    const char *args[] = {q->keys.base, list ? "list" : "zset", a_start,
                          a_end,        ascending ? "1" : "0",  PAGE_ROUNDS};
    redisReply *r = NULL;
    pthread_mutex_lock(&q->mu);
    int rc = ferry__queue_eval(q, "getJobs", 1, keys, 6, args, NULL, 1, &r, err);
    pthread_mutex_unlock(&q->mu);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "getJobs", err);
    if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements > FERRY_QUEUE_IDS_MAX))
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: getJobs: unexpected reply", q->shown);
    for (size_t i = 0; rc == 0 && i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING)
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: getJobs: unexpected element", q->shown);
    if (rc == 0 && r->elements) {
        char **out = calloc(r->elements, sizeof *out);
        if (!out) rc = ferry__err(err, FERRY_ENOMEM, "job page: out of memory");
        for (size_t i = 0; rc == 0 && i < r->elements; i++)
            if (!(out[i] = strndup(r->element[i]->str, r->element[i]->len)))
                rc = ferry__err(err, FERRY_ENOMEM, "job page: out of memory");
        if (rc) {
            ferry_queue_job_ids_free(out, r->elements);
        } else {
            *ids = out;
            *n = r->elements;
        }
    }
    if (r) freeReplyObject(r);
    return rc;
}

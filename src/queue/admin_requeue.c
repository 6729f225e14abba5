/* admin_requeue.c - putting jobs back in line, with the effects of BullMQ 6.7.0's Job.retry
 * (ferry_queue_retry_job: lua/reprocessJob.lua), Queue.retryJobs (ferry_queue_retry_jobs),
 * Job.promote (ferry_queue_promote_job: lua/promote.lua) and Queue.promoteJobs
 * (ferry_queue_promote_jobs); the two queue-wide calls run lua/moveJobsToWait.lua a chunk
 * at a time, as Node does, so a large set never blocks Redis for long. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/job_opts_ext.h"
#include "queue/queue_internal.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/printable.h"

#define SHOWN_ID_MAX 256 /* a job id as messages show it (escaped, cut) */
/* Jobs per moveJobsToWait call: BullMQ's default count, about a millisecond of Redis time. */
#define REQUEUE_CHUNK 1000
/* Calls before giving up (10^9 jobs): only a producer adding delayed jobs as fast as they
 * are promoted could get there, and the loop must end then. */
#define REQUEUE_CALLS_MAX 1000000L

/* Run one single-job script (not retried after a transport failure: a second run would
 * report the wrong state). *reply owned by the caller on success. */
static int job_script(ferry_queue *q, const char *script, const char *job_id, int nargs,
                      const char **args, redisReply **reply, ferry_error *err) {
    char *key = NULL;
    int rc = ferry__queue_job_key(q, script, job_id, NULL, &key, err);
    if (rc) return rc;
    const char *keys[] = {key, q->key[QK_META]};
    pthread_mutex_lock(&q->mu);
    rc = ferry__queue_eval(q, script, 2, keys, nargs, args, NULL, 0, reply, err);
    pthread_mutex_unlock(&q->mu);
    free(key);
    if (rc == 0) rc = ferry__queue_reply_error(q, *reply, script, err);
    if (rc && *reply) {
        freeReplyObject(*reply);
        *reply = NULL;
    }
    return rc;
}

int ferry_queue_retry_job(ferry_queue *q, const char *job_id, const char *state, unsigned flags,
                          const char **from, ferry_error *err) {
    if (from) *from = NULL;
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_retry_job: queue is NULL");
    if (state && strcmp(state, "failed") != 0 && strcmp(state, "completed") != 0)
        return ferry__err(err, FERRY_EINVAL,
                          "retry job: state must be failed or completed (or NULL for either)");
    if (flags & ~(unsigned)(FERRY_RETRY_RESET_ATTEMPTS | FERRY_RETRY_RESET_STARTED))
        return ferry__err(err, FERRY_EINVAL, "retry job: unknown flags 0x%x", flags);
    const char *args[] = {q->keys.base, job_id, state ? state : "",
                          flags & FERRY_RETRY_RESET_ATTEMPTS ? "1" : "0",
                          flags & FERRY_RETRY_RESET_STARTED ? "1" : "0"};
    redisReply *r = NULL;
    int rc = job_script(q, "reprocessJob", job_id, 5, args, &r, err);
    if (rc) return rc;
    char sid[SHOWN_ID_MAX];
    if (r->type == REDIS_REPLY_STRING && !strcmp(r->str, "failed")) {
        if (from) *from = "failed";
    } else if (r->type == REDIS_REPLY_STRING && !strcmp(r->str, "completed")) {
        if (from) *from = "completed";
    } else if (r->type == REDIS_REPLY_INTEGER && r->integer == -1) {
        rc = ferry__err(err, FERRY_ENOTFOUND, "job %s not found in queue %s",
                        ferryx_printable(job_id, sid, sizeof sid), q->shown);
    } else if (r->type == REDIS_REPLY_INTEGER && r->integer == -3) {
        rc = ferry__err(err, FERRY_ESTATE,
                        "job %s of queue %s is not %s; only finished jobs "
                        "are retried",
                        ferryx_printable(job_id, sid, sizeof sid), q->shown,
                        state ? state : "failed or completed");
    } else {
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: reprocessJob: unexpected reply", q->shown);
    }
    freeReplyObject(r);
    return rc;
}

int ferry_queue_promote_job(ferry_queue *q, const char *job_id, ferry_error *err) {
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_promote_job: queue is NULL");
    const char *args[] = {q->keys.base, job_id};
    redisReply *r = NULL;
    int rc = job_script(q, "promote", job_id, 2, args, &r, err);
    if (rc) return rc;
    char sid[SHOWN_ID_MAX];
    if (r->type != REDIS_REPLY_INTEGER)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: promote: unexpected reply", q->shown);
    else if (r->integer == -1)
        rc = ferry__err(err, FERRY_ENOTFOUND, "job %s not found in queue %s",
                        ferryx_printable(job_id, sid, sizeof sid), q->shown);
    else if (r->integer == -3)
        rc = ferry__err(err, FERRY_ESTATE, "job %s of queue %s is not delayed",
                        ferryx_printable(job_id, sid, sizeof sid), q->shown);
    else if (r->integer != 0)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: promote returned %lld", q->shown, r->integer);
    freeReplyObject(r);
    return rc;
}

/* moveJobsToWait in chunks until a chunk comes back short or `limit` jobs moved (0 = no
 * limit). The count is kept in *moved also after a failure midway. */
static int move_all(ferry_queue *q, const char *state, const char *max_score, long long limit,
                    long long *moved, ferry_error *err) {
    const char *keys[] = {q->key[QK_META]};
    int rc = 0;
    pthread_mutex_lock(&q->mu);
    for (long call = 0;; call++) {
        if (call == REQUEUE_CALLS_MAX) {
            rc = ferry__err(err, FERRY_ETOOBIG,
                            "queue %s: %s jobs still left after %ld calls (%lld moved); is "
                            "something adding them as fast?",
                            q->shown, state, REQUEUE_CALLS_MAX, *moved);
            break;
        }
        long long want = REQUEUE_CHUNK;
        if (limit > 0 && limit - *moved < want) want = limit - *moved;
        if (want <= 0) break;
        char count[32];
        snprintf(count, sizeof count, "%lld", want);
        const char *args[] = {q->keys.base, state, max_score, count};
        redisReply *r = NULL;
        /* Retried after a transport failure: a chunk run twice only moves the next jobs
         * (those of a lost reply are then missing from the count). */
        rc = ferry__queue_eval(q, "moveJobsToWait", 1, keys, 4, args, NULL, 1, &r, err);
        if (rc == 0) rc = ferry__queue_reply_error(q, r, "moveJobsToWait", err);
        if (rc == 0 && (r->type != REDIS_REPLY_INTEGER || r->integer < 0 || r->integer > want))
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: moveJobsToWait: unexpected reply",
                            q->shown);
        long long n = rc == 0 ? r->integer : 0;
        if (r) freeReplyObject(r);
        if (rc) break;
        *moved += n;
        if (n < want) break;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

static int check_limit(const char *what, long long limit, ferry_error *err) {
    if (limit < 0 || limit > FERRY_QUEUE_MOVE_MAX)
        return ferry__err(err, FERRY_EINVAL, "%s: limit %lld out of range (0 = all, at most %lld)",
                          what, limit, (long long)FERRY_QUEUE_MOVE_MAX);
    return 0;
}

int ferry_queue_retry_jobs(ferry_queue *q, const char *state, long long limit, long long *moved,
                           ferry_error *err) {
    long long local = 0;
    if (!moved) moved = &local;
    *moved = 0;
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_retry_jobs: queue is NULL");
    if (!state) state = "failed";
    if (strcmp(state, "failed") != 0 && strcmp(state, "completed") != 0)
        return ferry__err(err, FERRY_EINVAL, "retry jobs: state must be failed or completed");
    int rc = check_limit("retry jobs", limit, err);
    if (rc) return rc;
    /* Jobs finished by now: a job that fails again while the chunks run is not taken a
     * second time (Node takes a new "now" per chunk; on a still state the effect is equal). */
    char now[32];
    snprintf(now, sizeof now, "%lld", (long long)ferry__now_ms());
    return move_all(q, state, now, limit, moved, err);
}

int ferry_queue_promote_jobs(ferry_queue *q, long long limit, long long *moved, ferry_error *err) {
    long long local = 0;
    if (!moved) moved = &local;
    *moved = 0;
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_promote_jobs: queue is NULL");
    int rc = check_limit("promote jobs", limit, err);
    if (rc) return rc;
    return move_all(q, "delayed", "+inf", limit, moved, err);
}

/* admin_clean.c - deleting jobs in bulk with the effects of BullMQ 6.7.0's Queue.clean
 * (ferry_queue_clean: lua/cleanJobsInSet.lua) and Queue.drain (ferry_queue_drain:
 * lua/drain.lua), a chunk of jobs per script call so that a large queue never blocks Redis
 * for long. How jobs are chosen and deleted is written at the top of the two scripts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "util/clock.h"
#include "util/error.h"

/* Jobs per cleanJobsInSet call: BullMQ's largest count per call. */
#define CLEAN_CHUNK 10000
/* Jobs per drain call (BullMQ drains in one call; this keeps each call short). */
#define DRAIN_CHUNK "1000"
/* Calls before giving up: only a producer adding jobs as fast as they are deleted could
 * get there, and the loop must end then. */
#define CLEAN_CALLS_MAX 1000000L

/* Node's state names, "waiting" read as "wait" (as Queue.clean does); NULL when unknown. */
static const char *clean_state(const char *state) {
    static const char *const known[] = {"wait",        "paused",    "delayed",
                                        "prioritized", "completed", "failed"};
    if (!state) return NULL;
    if (!strcmp(state, "waiting")) return "wait";
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(state, known[i])) return known[i];
    return NULL;
}

/* Append the ids of reply r (an array of strings) to *ids (capacity *cap, *n used). */
static int keep_ids(const redisReply *r, char ***ids, size_t *n, size_t *cap, ferry_error *err) {
    if (*n + r->elements > *cap) {
        size_t ncap = *cap ? *cap : 64;
        while (ncap < *n + r->elements)
            ncap *= 2;
        char **grown = realloc(*ids, ncap * sizeof *grown);
        if (!grown) return ferry__err(err, FERRY_ENOMEM, "clean: out of memory");
        *ids = grown;
        *cap = ncap;
    }
    for (size_t i = 0; i < r->elements; i++) {
        char *id = strndup(r->element[i]->str, r->element[i]->len);
        if (!id) return ferry__err(err, FERRY_ENOMEM, "clean: out of memory");
        (*ids)[(*n)++] = id;
    }
    return 0;
}

int ferry_queue_clean(ferry_queue *q, const char *state, long long grace_ms, long long limit,
                      char ***ids, size_t *n, ferry_error *err) {
    if (ids) *ids = NULL;
    if (n) *n = 0;
    if (!q || !n) return ferry__err(err, FERRY_EINVAL, "ferry_queue_clean: NULL argument");
    const char *set = clean_state(state);
    if (!set)
        return ferry__err(err, FERRY_EINVAL,
                          "clean: unknown state (expected completed, failed, delayed, wait, "
                          "paused or prioritized)");
    if (grace_ms < 0 || grace_ms > FERRY_LIMIT_MS_MAX)
        return ferry__err(err, FERRY_EINVAL, "clean: grace %lld ms out of range (0 to %lld)",
                          grace_ms, (long long)FERRY_LIMIT_MS_MAX);
    if (limit < 0 || limit > FERRY_QUEUE_MOVE_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "clean: limit %lld out of range (0 = all, at most %lld)", limit,
                          (long long)FERRY_QUEUE_MOVE_MAX);
    char cutoff[32];
    snprintf(cutoff, sizeof cutoff, "%lld", (long long)ferry__now_ms() - grace_ms);
    const char *keys[] = {q->key[QK_EVENTS], q->key[QK_REPEAT]};
    char **out = NULL;
    size_t got = 0, cap = 0;
    int rc = 0;
    pthread_mutex_lock(&q->mu);
    for (long call = 0;; call++) {
        if (call == CLEAN_CALLS_MAX) {
            rc = ferry__err(err, FERRY_ETOOBIG,
                            "queue %s: %s jobs still left after %ld clean calls (%zu deleted); "
                            "is something adding them as fast?",
                            q->shown, set, CLEAN_CALLS_MAX, got);
            break;
        }
        long long want = CLEAN_CHUNK;
        if (limit > 0 && limit - (long long)got < want) want = limit - (long long)got;
        if (want <= 0) break;
        char count[32];
        snprintf(count, sizeof count, "%lld", want);
        const char *args[] = {q->keys.base, set, cutoff, count};
        redisReply *r = NULL;
        /* Not retried after a transport failure: the ids of a lost reply would be missing
         * from the answer (the caller sees the failure and may run it again). */
        rc = ferry__queue_eval(q, "cleanJobsInSet", 2, keys, 4, args, NULL, 0, &r, err);
        if (rc == 0) rc = ferry__queue_reply_error(q, r, "cleanJobsInSet", err);
        if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements > (size_t)want))
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: cleanJobsInSet: unexpected reply",
                            q->shown);
        for (size_t i = 0; rc == 0 && i < r->elements; i++)
            if (r->element[i]->type != REDIS_REPLY_STRING)
                rc = ferry__err(err, FERRY_EPROTO, "queue %s: cleanJobsInSet: unexpected element",
                                q->shown);
        size_t deleted = rc == 0 ? r->elements : 0;
        if (rc == 0 && ids)
            rc = keep_ids(r, &out, &got, &cap, err);
        else if (rc == 0)
            got += deleted;
        if (r) freeReplyObject(r);
        if (rc || deleted < (size_t)want) break;
    }
    pthread_mutex_unlock(&q->mu);
    *n = got;
    if (ids) *ids = out;
    return rc;
}

int ferry_queue_drain(ferry_queue *q, int delayed, long long *removed, ferry_error *err) {
    long long local = 0;
    if (!removed) removed = &local;
    *removed = 0;
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_drain: queue is NULL");
    /* Node's order: wait, the legacy paused list, delayed (when asked), prioritized. */
    const char *states[4];
    size_t nstates = 0;
    states[nstates++] = "wait";
    states[nstates++] = "paused";
    if (delayed) states[nstates++] = "delayed";
    states[nstates++] = "prioritized";
    const char *keys[] = {q->key[QK_REPEAT]};
    int rc = 0;
    long calls = 0;
    pthread_mutex_lock(&q->mu);
    for (size_t s = 0; rc == 0 && s < nstates; s++) {
        for (;;) {
            if (++calls > CLEAN_CALLS_MAX) {
                rc = ferry__err(err, FERRY_ETOOBIG,
                                "queue %s: not drained after %ld calls (%lld jobs deleted); is "
                                "something adding jobs as fast?",
                                q->shown, CLEAN_CALLS_MAX, *removed);
                break;
            }
            const char *args[] = {q->keys.base, states[s], DRAIN_CHUNK};
            redisReply *r = NULL;
            /* Retried after a transport failure: a chunk run again only deletes the next
             * jobs (those of a lost reply are then missing from the count). */
            rc = ferry__queue_eval(q, "drain", 1, keys, 3, args, NULL, 1, &r, err);
            if (rc == 0) rc = ferry__queue_reply_error(q, r, "drain", err);
            if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                            r->element[0]->type != REDIS_REPLY_INTEGER ||
                            r->element[1]->type != REDIS_REPLY_INTEGER))
                rc = ferry__err(err, FERRY_EPROTO, "queue %s: drain: unexpected reply", q->shown);
            int more = 0;
            if (rc == 0) {
                *removed += r->element[0]->integer;
                more = r->element[1]->integer == 1;
            }
            if (r) freeReplyObject(r);
            if (rc || !more) break;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

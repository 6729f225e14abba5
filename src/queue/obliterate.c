/* obliterate.c - ferry_queue_obliterate: delete a queue and all its jobs (BullMQ 6.7.0's
 * Queue.obliterate) by running the obliterate script in chunks until it reports done, so a
 * large queue never blocks Redis for long. What is deleted, and where ferry differs from
 * Node on purpose, is written at the top of lua/obliterate.lua. */
#include <stdio.h>
#include <stdlib.h>

#include "queue/queue_internal.h"
#include "util/error.h"

/* Jobs (or schedulers) deleted per script call: about a millisecond of Redis time, the
 * chunk Node uses too. */
#define OBLITERATE_CHUNK "1000"
/* Calls before giving up: 10^9 jobs. Only a producer adding jobs as fast as they are deleted
 * could get there; the loop must not run forever then. */
#define OBLITERATE_CALLS_MAX 1000000L

/* One script call. Fills *status, *deleted, *n from the reply {status, deleted, n}. */
static int obliterate_call(ferry_queue *q, int force, int first, long long *status,
                           long long *deleted, long long *n, ferry_error *err) {
    const char *keys[] = {q->key[QK_META]};
    const char *args[] = {q->keys.base, OBLITERATE_CHUNK, force ? "1" : "0", first ? "1" : "0"};
    redisReply *r = NULL;
    /* Retried after a transport failure: running a chunk again only continues the work
     * (the keys a lost reply reported are then missing from the total). */
    int rc = ferry__queue_eval(q, "obliterate", 1, keys, 4, args, NULL, 1, &r, err);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "obliterate", err);
    if (rc == 0 &&
        (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
         r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER ||
         r->element[2]->type != REDIS_REPLY_INTEGER))
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: obliterate: unexpected reply", q->shown);
    if (rc == 0) {
        *status = r->element[0]->integer;
        *deleted = r->element[1]->integer;
        *n = r->element[2]->integer;
    }
    if (r) freeReplyObject(r);
    return rc;
}

int ferry_queue_obliterate(ferry_queue *q, int force, long long *deleted_keys, ferry_error *err) {
    if (deleted_keys) *deleted_keys = 0;
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_obliterate: queue is NULL");
    long long total = 0, created = 0;
    int rc = 0;
    pthread_mutex_lock(&q->mu);
    for (long call = 0;; call++) {
        if (call == OBLITERATE_CALLS_MAX) {
            rc = ferry__err(err, FERRY_ETOOBIG,
                            "queue %s: not empty after %ld obliterate calls (%lld keys "
                            "deleted); is something still adding jobs?",
                            q->shown, OBLITERATE_CALLS_MAX, total);
            break;
        }
        long long status = 0, deleted = 0, n = 0;
        rc = obliterate_call(q, force, call == 0, &status, &deleted, &n, err);
        if (rc) break;
        total += deleted;
        if (status == 0 || status == 1) {
            created += n; /* a resent last call pauses (and so creates) again */
            if (status == 0) break;
            continue;
        }
        if (status == -2 && call == 0)
            rc = ferry__err(err, FERRY_ESTATE,
                            "queue %s has %lld active job%s; stop its workers, or force it "
                            "(--force in the CLI) to delete them too (nothing was deleted)",
                            q->shown, n, n == 1 ? "" : "s");
        else if (status == -2)
            rc = ferry__err(err, FERRY_ESTATE,
                            "queue %s: %lld job%s became active while it was being obliterated "
                            "(%lld keys deleted so far); stop its workers, or force it (--force "
                            "in the CLI)",
                            q->shown, n, n == 1 ? "" : "s", total);
        else if (status == -1)
            rc = ferry__err(err, FERRY_ESTATE,
                            "queue %s was resumed while it was being obliterated (%lld keys "
                            "deleted so far); run the obliterate again",
                            q->shown, total);
        else
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: obliterate returned %lld", q->shown,
                            status);
        break;
    }
    pthread_mutex_unlock(&q->mu);
    /* The pause that starts the work may have created meta and events only to delete them
     * again: they are not part of what was deleted. */
    if (rc == 0) total = total > created ? total - created : 0;
    if (deleted_keys) *deleted_keys = total;
    return rc;
}

/* throughput.c - ferry_queue_throughput: finishes per time bucket of a queue, counted from
 * the scores (finishedOn) of its completed and failed sets in one read-only script
 * (lua/queueThroughput.lua), for ferry serve's overview sparklines. */
#include <stdio.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "util/error.h"

/* One bucket array of the reply into out (NULL = not wanted). */
static int take_counts(const ferry_queue *q, const redisReply *r, size_t nbuckets, long long *out,
                       ferry_error *err) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements != nbuckets)
        return ferry__err(err, FERRY_EPROTO, "queue %s: queueThroughput: unexpected reply",
                          q->shown);
    for (size_t i = 0; i < nbuckets; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < 0)
            return ferry__err(err, FERRY_EPROTO, "queue %s: queueThroughput: unexpected reply",
                              q->shown);
        if (out) out[i] = r->element[i]->integer;
    }
    return 0;
}

int ferry_queue_throughput(ferry_queue *q, long long bucket_ms, size_t nbuckets,
                           long long *completed, long long *failed, long long *now_ms,
                           ferry_error *err) {
    if (now_ms) *now_ms = 0;
    size_t clear = nbuckets <= FERRY_QUEUE_THROUGHPUT_BUCKETS_MAX ? nbuckets : 0;
    if (completed) memset(completed, 0, clear * sizeof *completed);
    if (failed) memset(failed, 0, clear * sizeof *failed);
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_throughput: queue is NULL");
    if (bucket_ms < 1 || bucket_ms > FERRY_QUEUE_THROUGHPUT_BUCKET_MS_MAX)
        return ferry__err(err, FERRY_EINVAL, "queue throughput: bucket_ms %lld out of range 1..%d",
                          bucket_ms, FERRY_QUEUE_THROUGHPUT_BUCKET_MS_MAX);
    if (nbuckets < 1 || nbuckets > FERRY_QUEUE_THROUGHPUT_BUCKETS_MAX)
        return ferry__err(err, FERRY_EINVAL, "queue throughput: nbuckets %zu out of range 1..%d",
                          nbuckets, FERRY_QUEUE_THROUGHPUT_BUCKETS_MAX);
    char a_ms[32], a_n[32];
    snprintf(a_ms, sizeof a_ms, "%lld", bucket_ms);
    snprintf(a_n, sizeof a_n, "%zu", nbuckets);
    const char *keys[] = {q->key[QK_COMPLETED], q->key[QK_FAILED]};
    const char *args[] = {a_ms, a_n};
    redisReply *r = NULL;
    pthread_mutex_lock(&q->mu);
    int rc = ferry__queue_eval(q, "queueThroughput", 2, keys, 2, args, NULL, 1, &r, err);
    pthread_mutex_unlock(&q->mu);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "queueThroughput", err);
    if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
                    r->element[0]->type != REDIS_REPLY_INTEGER))
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: queueThroughput: unexpected reply", q->shown);
    if (rc == 0) rc = take_counts(q, r->element[1], nbuckets, completed, err);
    if (rc == 0) rc = take_counts(q, r->element[2], nbuckets, failed, err);
    if (rc == 0 && now_ms) *now_ms = r->element[0]->integer;
    if (rc) {
        if (completed) memset(completed, 0, nbuckets * sizeof *completed);
        if (failed) memset(failed, 0, nbuckets * sizeof *failed);
    }
    if (r) freeReplyObject(r);
    return rc;
}

/* admin_ages.c - ferry_queue_ages: how long the oldest ready job of a queue has waited
 * (from when it became ready) and how long its oldest active job has run, read in one
 * read-only script (lua/queueAges.lua) for ferry serve's backlog-age gauges. */
#include <stdio.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "util/clock.h"
#include "util/error.h"

/* Seconds from ms to now_ms, never negative (writers' clocks may be ahead of ours). */
static double age_s(long long now_ms, long long ms) {
    return ms < now_ms ? (double)(now_ms - ms) / 1000.0 : 0.0;
}

int ferry_queue_ages(ferry_queue *q, ferry_job_ages *out, ferry_error *err) {
    if (out) memset(out, 0, sizeof *out);
    if (!q || !out) return ferry__err(err, FERRY_EINVAL, "ferry_queue_ages: NULL argument");
    long long now = (long long)ferry__now_ms();
    char a_now[32], a_sample[16];
    snprintf(a_now, sizeof a_now, "%lld", now);
    snprintf(a_sample, sizeof a_sample, "%d", FERRY_QUEUE_AGES_SAMPLE);
    const char *keys[] = {q->key[QK_WAIT], q->key[QK_PAUSED], q->key[QK_PRIORITIZED],
                          q->key[QK_ACTIVE], q->key[QK_DELAYED]};
    const char *args[] = {q->keys.base, a_now, a_sample};
    redisReply *r = NULL;
    pthread_mutex_lock(&q->mu);
    int rc = ferry__queue_eval(q, "queueAges", 5, keys, 3, args, NULL, 1, &r, err);
    pthread_mutex_unlock(&q->mu);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "queueAges", err);
    if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != 4))
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: queueAges: unexpected reply", q->shown);
    for (size_t i = 0; rc == 0 && i < 4; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: queueAges: unexpected reply", q->shown);
    if (rc == 0) {
        out->ready_found = r->element[0]->integer != 0;
        out->active_found = r->element[2]->integer != 0;
        if (out->ready_found) out->oldest_ready_s = age_s(now, r->element[1]->integer);
        if (out->active_found) out->oldest_active_s = age_s(now, r->element[3]->integer);
    }
    if (r) freeReplyObject(r);
    return rc;
}

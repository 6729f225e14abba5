/* timers.c - the dispatcher's periodic work on a lane: lock renewal of every owned job
 * (every lock_duration / 2, extendLocks) and the stalled check (every stalled_interval,
 * moveStalledJobsToWait). The script calls themselves are batch.c's. Dispatcher thread
 * only. */
#include <stdint.h>
#include <stdlib.h>

#include "util/clock.h"
#include "util/error.h"
#include "worker/worker_internal.h"

void ferry__timers_renew_locks(ferry__lane *lane) {
    ferry__disp *d = &lane->d;
    if (d->nowned == 0) return;
    size_t *lost = NULL, nlost = 0;
    ferry_error e = {0};
    int64_t sent_ms = ferry__mono_ms();
    int rc = ferry__batch_extend_locks(lane, d->owned, (size_t)d->nowned, &lost, &nlost, &e);
    if (rc != 0) {
        if (d->conn && ferry__conn_broken(d->conn))
            ferry__cmd_lost(lane, &e);
        else
            ferry__lane_report(lane, rc, "worker %s: lock renewal: %s", lane->queue, e.message);
        return;
    }
    int64_t now = ferry__mono_ms();
    unsigned long long newly = 0;
    for (size_t k = 0; k < nlost; k++) {
        ferry_job *j = d->owned[lost[k]];
        int64_t was = j->lock_ms;
        j->lock_ms = INT64_MIN; /* not renewed (see the loop below) */
        if (j->lock_lost) continue;
        /* a finish sent with an unknown outcome released it: its resend settles it */
        if (j->resent && now < was + lane->lock_duration_ms) {
            j->lock_ms = was;
            continue;
        }
        j->lock_lost = 1;
        newly++;
        ferry__lane_report(
            lane, FERRY_ELOCK,
            "worker %s: job %s: lock lost (renewal refused); its handler keeps running but "
            "its result will be refused",
            lane->queue, j->id);
    }
    free(lost);
    for (int k = 0; k < d->nowned; k++)
        if (d->owned[k]->lock_ms != INT64_MIN) d->owned[k]->lock_ms = sent_ms;
    if (newly) {
        pthread_mutex_lock(&lane->mu);
        lane->stats.lock_lost += newly;
        pthread_mutex_unlock(&lane->mu);
    }
}

void ferry__timers_check_stalled(ferry__lane *lane) {
    redisReply *r = NULL;
    ferry_error e = {0};
    int rc = ferry__batch_stalled_check(lane, &r, &e);
    if (rc != 0) {
        if (lane->d.conn && ferry__conn_broken(lane->d.conn))
            ferry__cmd_lost(lane, &e);
        else
            ferry__lane_report(lane, rc, "worker %s: %s", lane->queue, e.message);
        return;
    }
    if (r->elements) {
        pthread_mutex_lock(&lane->mu);
        lane->stats.stalled += r->elements;
        pthread_mutex_unlock(&lane->mu);
        for (size_t i = 0; i < r->elements; i++)
            if (lane->cb.stalled && r->element[i]->type == REDIS_REPLY_STRING &&
                ferry__cb_enter(lane) == 0) {
                lane->cb.stalled(r->element[i]->str, lane->cb_ud);
                ferry__cb_leave(lane);
            }
    }
    freeReplyObject(r);
}

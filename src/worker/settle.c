/* settle.c - settling written results, on the thread holding the dispatcher role: each
 * job's answer to its finish call decides its callbacks (completed / failed), stats, job
 * log record, and whether it is done with or sent again (script error, refused for its
 * children, a resend that may have landed already). A call that failed as a whole keeps
 * every result for the next one. Planning a finish is job.c's; sending it is batch.c's. */
#include <stdint.h>
#include <string.h>

#include "util/clock.h"
#include "util/error.h"
#include "worker/worker_internal.h"

#define SCRIPT_ERROR_RETRIES 3 /* a result refused by a failing script is tried 3x */

/* Stats deltas of one batch, applied under the lock once. */
typedef struct deltas {
    unsigned long long completed, failed, retried, lock_lost, retried_later, throttled;
} deltas;

/* Whether job j is in `active`: 1 yes, 0 no, -1 unknown (no connection, call failed). */
static int in_active(ferry__lane *lane, const ferry_job *j) {
    if (!ferry__cmd_ok(&lane->d)) return -1;
    const char *argv[] = {"LPOS", lane->key.active, j->id};
    size_t lens[] = {4, strlen(lane->key.active), strlen(j->id)};
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_command_argv(lane->d.conn, 3, argv, lens, &r, &e) != 0) return -1;
    int v = r->type == REDIS_REPLY_INTEGER ? 1 : r->type == REDIS_REPLY_NIL ? 0 : -1;
    freeReplyObject(r);
    return v;
}

/* The code to settle a finish by. A finish sent again after an unknown outcome (broken
 * connection, script error) may be refused because the first send was written: the lock is
 * gone (-2), or the job too when the finish deletes it (-1). That is taken as written (0)
 * only when the answer came before the lock could expire (lock_ms + lock_duration, our own
 * clock) and the job has left `active` (one LPOS): nothing else moves a job out of active
 * without its lock gone first. A lock lost any other way (eviction, DEL) leaves the job in
 * active: the refusal stands. -6 (another token) stands too: a job put back and taken again
 * is in active as well. A job whose lock was reported lost keeps its refusal. */
static int landed_before(ferry__lane *lane, const ferry_job *j, int code, int64_t answered_ms) {
    if (!j->resent || j->lock_lost || answered_ms >= j->lock_ms + lane->lock_duration_ms)
        return code;
    int deletes = (j->kind == FERRY__FIN_COMPLETE || j->kind == FERRY__FIN_FAIL) && j->keep.set &&
                  j->keep.count == 0;
    if (code != -2 && !(code == -1 && deletes)) return code;
    return in_active(lane, j) == 0 ? 0 : code;
}

enum { SETTLE_RESEND_LATER = 0, SETTLE_DONE = 1, SETTLE_RESEND_NOW = 2 };

/* A finish that was written: stats, callbacks.completed / failed, the job log record. */
static void settle_written_ok(ferry__lane *lane, ferry_job *j, deltas *dl) {
    switch (j->kind) {
    case FERRY__FIN_COMPLETE:
        dl->completed++;
        ferry__wm_settled(lane, j, FERRY__WM_COMPLETED);
        if (lane->cb.completed && ferry__cb_enter(lane) == 0) {
            lane->cb.completed(j, j->value, lane->cb_ud);
            ferry__cb_leave(lane);
        }
        break;
    case FERRY__FIN_RETRY_LATER:
        /* BullMQ's DelayedError / RateLimitError: no failed event */
        dl->retried_later++;
        ferry__wm_settled(lane, j, FERRY__WM_RETRIED_LATER);
        break;
    case FERRY__FIN_THROTTLE:
        dl->throttled++;
        ferry__wm_settled(lane, j, FERRY__WM_THROTTLED);
        break;
    case FERRY__FIN_FAIL:
    default: {
        int final = j->kind == FERRY__FIN_FAIL;
        if (final)
            dl->failed++;
        else
            dl->retried++;
        ferry__wm_settled(lane, j, final ? FERRY__WM_FAILED : FERRY__WM_RETRIED);
        if (lane->cb.failed && ferry__cb_enter(lane) == 0) {
            lane->cb.failed(j, j->value ? j->value : "", final, lane->cb_ud);
            ferry__cb_leave(lane);
        }
        if (final && lane->final_failure && ferry__cb_enter(lane) == 0) {
            lane->final_failure(j, j->value ? j->value : "", lane->final_ud);
            ferry__cb_leave(lane);
        }
        break;
    }
    }
    ferry__job_log_emit(lane, j, ferry__fin_log_outcome(j));
}

/* One job's answer: callbacks, stats, and whether the job is done with, or is sent again
 * after a pause or at once (SETTLE_*). */
static int settle_answer(ferry__lane *lane, ferry_job *j, int code, const ferry__batch_result *res,
                         deltas *dl) {
    if ((code == -4 || code == -9) && ferry__job_plan_refused(j, code)) {
        /* refused for its children, lock still held (checked after): Node's worker emits
         * the error and fails the job with it rather than leave it active till it stalls */
        ferry__lane_report(lane, FERRY_ESTATE, "worker %s: job %s: completion refused (%d: %s): %s",
                           lane->queue, j->id, code, ferry__fin_code_text(code),
                           j->value ? j->value : "");
        return SETTLE_RESEND_NOW;
    }
    if (code == 0) {
        settle_written_ok(lane, j, dl);
        return SETTLE_DONE;
    }
    if (code == FERRY__CODE_SCRIPT_ERROR) {
        /* a failing script keeps what it wrote before the error: part of it may be done */
        j->resent = 1;
        if (++j->send_tries < SCRIPT_ERROR_RETRIES) return SETTLE_RESEND_LATER;
        /* not written: its lock expires and it runs again elsewhere, as after a lost lock */
        ferry__job_log_emit(lane, j, "lock-lost");
        ferry__wm_settled(lane, j, FERRY__WM_LOCK_LOST);
        ferry__lane_report(
            lane, FERRY_EREDIS,
            "worker %s: job %s: %s given up after %d script errors (%s); its lock expires and "
            "it is recovered as stalled",
            lane->queue, j->id, ferry__fin_kind_text(j->kind), SCRIPT_ERROR_RETRIES,
            res->has_script_error ? res->script_error.message : "");
        return SETTLE_DONE;
    }
    if ((code == -2 || code == -6) && !j->lock_lost) dl->lock_lost++;
    ferry__job_log_emit(lane, j, "lock-lost");
    ferry__wm_settled(lane, j, FERRY__WM_LOCK_LOST);
    ferry__lane_report(
        lane, code == -2 || code == -6 ? FERRY_ELOCK : FERRY_ESTATE,
        "worker %s: job %s: %s refused (%d: %s)%s", lane->queue, j->id,
        ferry__fin_kind_text(j->kind), code, ferry__fin_code_text(code),
        j->resent ? "; sent again (after a broken connection or a script error), so it may "
                    "have been written already"
                  : "");
    return SETTLE_DONE;
}

void ferry__settle_written(ferry__lane *lane, ferry_job **jobs, size_t n, const int *codes,
                           const ferry__batch_result *res) {
    ferry__disp *d = &lane->d;
    if (res->has_script_error) {
        ferry_error se = res->script_error;
        ferry__lane_report(lane, se.code, "worker %s: %s", lane->queue, se.message);
    }
    deltas dl = {0};
    int again = 0;
    for (size_t i = 0; i < n; i++) {
        ferry_job *j = jobs[i];
        int st = settle_answer(lane, j, landed_before(lane, j, codes[i], d->last_io), res, &dl);
        if (st == SETTLE_DONE) {
            ferry__own_remove(d, j);
            ferry__job_free(j);
        } else {
            if (!d->pending) d->pending_since_us = ferry__now_us();
            ferry__pending_append(d, j);
            if (st == SETTLE_RESEND_LATER) again = 1;
        }
    }
    if (again) d->retry_at = ferry__mono_ms() + FERRY__SCRIPT_ERROR_DELAY_MS;
    if (dl.completed || dl.failed || dl.retried || dl.lock_lost || dl.retried_later ||
        dl.throttled) {
        pthread_mutex_lock(&lane->mu);
        lane->stats.completed += dl.completed;
        lane->stats.failed += dl.failed;
        lane->stats.retried += dl.retried;
        lane->stats.lock_lost += dl.lock_lost;
        lane->stats.retried_later += dl.retried_later;
        lane->stats.throttled += dl.throttled;
        pthread_mutex_unlock(&lane->mu);
    }
}

void ferry__settle_unsent(ferry__lane *lane, ferry_job **jobs, size_t n, int rc,
                          const ferry_error *e, int64_t sent_at_ms) {
    ferry__disp *d = &lane->d;
    /* Nothing is known about this call: keep every result and send it again. */
    for (size_t i = 0; i < n; i++) {
        jobs[i]->resent = 1;
        ferry__pending_append(d, jobs[i]);
    }
    if (d->conn && ferry__conn_broken(d->conn)) {
        ferry__cmd_lost(lane, e);
    } else {
        ferry__lane_report(lane, rc, "worker %s: %s", lane->queue, e->message);
        d->retry_at = sent_at_ms + FERRY__SCRIPT_ERROR_DELAY_MS;
    }
}

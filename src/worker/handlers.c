/* handlers.c - the worker's handler threads (one lane's share of the concurrency) and the
 * ready queue of fetched jobs they take from (see worker.c for the overall picture).
 *
 * A handler thread takes a job, runs the user's handler, decides the finish
 * (ferry__job_plan) and pushes the job on the lock-free `done` stack. When no other fetched
 * job is waiting, the same thread then writes the results and fetches the next jobs itself
 * (ferry__lead, dispatch.c) and runs one of them at once. Sleeping handler threads are woken
 * only when the queued jobs need them (handler_wanted), so fast handlers cost few thread
 * switches. */
#include <stdlib.h>

#include "worker/worker_internal.h"

/* For fast handlers: wake another thread when the queue would take the awake ones longer
 * than this to drain (per-job cost = average handler time + this worker's own overhead). */
#define DRAIN_BUDGET_US 200
#define PER_JOB_OVERHEAD_US 3
#define STALE_READY_US 1000 /* = dispatch.c WATCH_MS */

void ferry__handlers_release(ferry__lane *lane) {
    pthread_mutex_lock(&lane->rq_mu);
    lane->rq_exit = 1;
    pthread_cond_broadcast(&lane->rq_cv);
    pthread_mutex_unlock(&lane->rq_mu);
}

/* Should one more sleeping handler be woken for the jobs queued now? [rq_mu] */
static int handler_wanted(ferry__lane *lane, int64_t now_us) {
    if (!lane->rq_head || lane->rq_sleepers == 0) return 0;
    int64_t per_job = atomic_load_explicit(&lane->handler_ns, memory_order_relaxed) / 1000;
    if (per_job >= FERRY__EAGER_HANDLER_US) return 1;
    /* threads not asleep here are running a handler or about to take a job */
    int awake = lane->concurrency - lane->rq_sleepers;
    per_job += PER_JOB_OVERHEAD_US;
    if ((int64_t)atomic_load(&lane->rq_len) * per_job >
        (int64_t)DRAIN_BUDGET_US * (awake > 0 ? awake : 1))
        return 1;
    return now_us - lane->rq_head->ready_us >= STALE_READY_US;
}

void ferry__ready_push(ferry__lane *lane, ferry_job *head, ferry_job *tail, int n,
                       int pusher_runs) {
    int64_t now = ferry__now_us();
    for (ferry_job *j = head; j; j = j->next)
        j->ready_us = now;
    pthread_mutex_lock(&lane->rq_mu);
    if (lane->rq_tail)
        lane->rq_tail->next = head;
    else
        lane->rq_head = head;
    lane->rq_tail = tail;
    atomic_fetch_add(&lane->rq_len, n);
    int wake = lane->rq_sleepers > 0 && (!pusher_runs || handler_wanted(lane, now));
    pthread_mutex_unlock(&lane->rq_mu);
    /* one sleeper; the rest follow in a chain while handler_wanted says so. Signalled after
     * unlocking (the sleeper is registered in the condvar already) so it does not wake into
     * a held mutex. */
    if (wake) pthread_cond_signal(&lane->rq_cv);
    /* jobs left for the threads already awake: if those turn out slow, the dispatcher
     * wakes more (ferry__ready_kick_stale) */
    if (!wake) ferry__watch(lane);
}

void ferry__ready_help(ferry__lane *lane) {
    pthread_mutex_lock(&lane->rq_mu);
    int wake = lane->rq_head && lane->rq_sleepers > 0;
    pthread_mutex_unlock(&lane->rq_mu);
    if (wake) pthread_cond_signal(&lane->rq_cv);
}

void ferry__ready_kick_stale(ferry__lane *lane) {
    pthread_mutex_lock(&lane->rq_mu);
    int wake = lane->rq_head && lane->rq_sleepers > 0 &&
               ferry__now_us() - lane->rq_head->ready_us >= STALE_READY_US;
    pthread_mutex_unlock(&lane->rq_mu);
    if (wake) pthread_cond_signal(&lane->rq_cv);
}

/* Next job from the ready queue, sleeping while it is empty. NULL = leave. */
static ferry_job *ready_take(ferry__lane *lane) {
    pthread_mutex_lock(&lane->rq_mu);
    while (!lane->rq_head && !lane->rq_exit && !atomic_load(&lane->abandon)) {
        lane->rq_sleepers++;
        pthread_cond_wait(&lane->rq_cv, &lane->rq_mu);
        lane->rq_sleepers--;
    }
    if (atomic_load(&lane->abandon) || !lane->rq_head) { /* queued jobs are freed by destroy */
        pthread_mutex_unlock(&lane->rq_mu);
        return NULL;
    }
    ferry_job *j = lane->rq_head;
    lane->rq_head = j->next;
    if (!lane->rq_head) lane->rq_tail = NULL;
    j->next = NULL;
    atomic_fetch_sub(&lane->rq_len, 1);
    int wake = handler_wanted(lane, ferry__now_us());
    int left = !wake && lane->rq_head;
    pthread_mutex_unlock(&lane->rq_mu);
    if (wake) pthread_cond_signal(&lane->rq_cv);
    /* jobs left for this thread to run after j: if j turns out slow, the dispatcher wakes
     * another thread for them (ferry__ready_kick_stale) */
    if (left) ferry__watch(lane);
    return j;
}

static void push_done(ferry__lane *lane, ferry_job *j) {
    ferry_job *head = atomic_load(&lane->done);
    do {
        j->next = head;
    } while (!atomic_compare_exchange_weak(&lane->done, &head, j));
    atomic_fetch_add(&lane->ndone, 1);
}

/* The envelope (parsed here, not on the thread that settles results for everybody), the
 * worker's check, then the handler. */
static ferry_outcome run_one(ferry__lane *lane, ferry_job *j) {
    if (ferry__job_envelope(j) != 0) {
        ferry_job_set_failure(j, "out of memory reading the job's envelope", NULL);
        return FERRY_FAILED; /* transient: retried with the job's backoff */
    }
    if (lane->check) {
        char reason[FERRY__CHECK_REASON_MAX];
        reason[0] = '\0';
        if (lane->check(j, reason, sizeof reason, lane->check_ud) != 0) {
            reason[sizeof reason - 1] = '\0';
            ferry_job_set_failure(j, reason[0] ? reason : "check failed", NULL);
            j->fail_class = FERRY__FC_CHECK;
            return FERRY_FAILED_PERMANENT;
        }
    }
    return lane->handler(j, lane->handler_ud);
}

void *ferry__handler_main(void *arg) {
    ferry__thread *t = arg;
    ferry__lane *lane = t->lane;
    ferry_job *j = NULL;
    ferry__opts_cache cache = {0};
    for (;;) {
        if (!j && !(j = ready_take(lane))) break;
        atomic_fetch_add(&lane->busy, 1);
        if (lane->m.on) ferry_metrics_gauge_add(lane->m.busy, 1);
        int64_t t0 = ferry__now_us();
        ferry_outcome oc = run_one(lane, j);
        int64_t took = ferry__now_us() - t0;
        /* moving average over ~8 jobs; concurrent updates may lose one, which is fine */
        int64_t avg = atomic_load_explicit(&lane->handler_ns, memory_order_relaxed);
        int64_t sample = took < 1000000 ? took * 1000 : 1000000000;
        atomic_store_explicit(&lane->handler_ns, (int)(avg + (sample - avg) / 8),
                              memory_order_relaxed);
        if (oc != FERRY_COMPLETED && oc != FERRY_FAILED && oc != FERRY_FAILED_PERMANENT &&
            oc != FERRY_RETRY_LATER && oc != FERRY_THROTTLED) {
            if (!j->reason) ferry_job_set_failure(j, "handler returned an invalid outcome", NULL);
            oc = FERRY_FAILED_PERMANENT;
        }
        j->outcome = oc;
        j->ran = 1;
        j->run_us = took;
        ferry__job_plan(j, oc, &cache);
        atomic_fetch_sub(&lane->busy, 1);
        if (lane->m.on) ferry_metrics_gauge_add(lane->m.busy, -1);
        push_done(lane, j);
        j = NULL;
        /* More fetched jobs waiting means more completions are imminent: leave this result
         * to be written with theirs (the last one to finish writes them all; at high
         * concurrency, also the one completing half a batch). Otherwise write now, from
         * this thread, and run the next fetched job here too. */
        if (atomic_load(&lane->rq_len) == 0 ||
            (lane->split_at && atomic_load(&lane->ndone) >= lane->split_at))
            j = ferry__lead(lane, 1);
        else
            ferry__watch(lane);
        if (j && atomic_load(&lane->abandon)) {
            ferry__ready_push(lane, j, j, 1, 1); /* freed with the queue by destroy */
            j = NULL;
        }
    }
    ferry__opts_cache_free(&cache);
    ferry__thread_exit(t);
    return NULL;
}

/* fetch.c - what happens to jobs a call fetched, on the thread holding the dispatcher
 * role: the fetch's size (free slots, fetch_batch, the owned-jobs bound), the lane's fetch
 * state after it (drained, rate limited), scheduler iterations produced before any
 * handler runs, and handing the jobs out (unrunnable ones failed at once, one kept by a
 * leading handler, the rest to the ready queue). The call itself is batch.c's; parsing a
 * fetched job is job.c's; waiting for the marker when the queue is drained is waiter.c's. */
#include <stdio.h>
#include <stdlib.h>

#include "sched/sched_module.h"
#include "util/clock.h"
#include "util/error.h"
#include "worker/worker_internal.h"

#define MAX_RATE_LIMIT_DELAY_MS 30000 /* BullMQ maximumRateLimitDelay */

/* Jobs fetched: own them, fail the unrunnable at once, keep one for the caller when
 * `mine` is given, queue the rest for handlers. */
static void take_jobs(ferry__lane *lane, ferry_job *list, ferry_job **mine) {
    ferry__disp *d = &lane->d;
    ferry_job *rh = NULL, *rt = NULL;
    int n = 0;
    while (list) {
        ferry_job *j = list;
        list = j->next;
        j->next = NULL;
        ferry__own_add(lane, j);
        const char *why = ferry__job_unrunnable(j);
        if (why) {
            /* BullMQ fails these as UnrecoverableError without running the processor */
            char stack[FERRY_ERROR_MESSAGE_MAX];
            snprintf(stack, sizeof stack, "UnrecoverableError: %s", why);
            ferry_job_set_failure(j, why, stack);
            j->outcome = FERRY_FAILED_PERMANENT;
            (void)ferry__job_envelope(j); /* for the log's trace id; ENOMEM: none */
            ferry__job_plan(j, FERRY_FAILED_PERMANENT, NULL);
            if (!d->pending) d->pending_since_us = ferry__now_us();
            ferry__pending_append(d, j);
            continue;
        }
        if (mine && !*mine) {
            *mine = j;
            d->free_slots--;
            continue;
        }
        if (rt)
            rt->next = j;
        else
            rh = j;
        rt = j;
        n++;
    }
    if (!rh) return;
    d->free_slots -= n;
    ferry__ready_push(lane, rh, rt, n, mine != NULL);
}

/* Fetched jobs that are scheduler iterations (`rjk`): produce each schedule's next iteration
 * before any handler runs, as a Node worker does (protocol §8.3; otherwise a schedule dies
 * after one run). One pipelined round trip for the whole fetch, none when no job has `rjk`.
 * The call is idempotent, so after a transport error it is repeated once on a fresh
 * connection; if that fails too the error is reported and the jobs still run. */
static void produce_next_iterations(ferry__lane *lane, ferry_job *list) {
    size_t n = 0;
    for (ferry_job *j = list; j; j = j->next) {
        const char *rjk = ferry_job_field(j, "rjk");
        if (rjk && *rjk) n++;
    }
    if (n == 0) return;
    ferry__sched_fetched *f = calloc(n, sizeof *f);
    ferry__sched_result *r = calloc(n, sizeof *r);
    if (!f || !r) {
        ferry__lane_report(lane, FERRY_ENOMEM,
                           "worker %s: no memory to produce scheduler iterations", lane->queue);
        goto out;
    }
    size_t i = 0;
    for (ferry_job *j = list; j; j = j->next) {
        const char *rjk = ferry_job_field(j, "rjk");
        if (rjk && *rjk) f[i++] = (ferry__sched_fetched){j->id, rjk, j->opts};
    }
    ferry_error e = {0};
    int rc = ferry__scheduler_on_fetch(lane->d.conn, lane->keys.base, f, n, ferry__now_ms(), r, &e);
    if (ferry__cmd_transport_error(lane->d.conn, rc)) {
        ferry__cmd_lost(lane, &e);
        if (ferry__cmd_reconnect(lane) == 0)
            rc = ferry__scheduler_on_fetch(lane->d.conn, lane->keys.base, f, n, ferry__now_ms(), r,
                                           &e);
        if (ferry__cmd_transport_error(lane->d.conn, rc) && lane->d.conn) ferry__cmd_lost(lane, &e);
    }
    if (rc != 0) {
        ferry__lane_report(lane, rc, "worker %s: scheduler next iteration not produced: %s",
                           lane->queue, e.message);
        goto out;
    }
    for (i = 0; i < n; i++)
        if (r[i].outcome == FERRY__SCHED_ERROR || r[i].outcome == FERRY__SCHED_LEGACY)
            ferry__lane_report(lane, r[i].error.code, "worker %s: scheduler job %s: %s",
                               lane->queue, f[i].job_id, r[i].error.message);
out:
    free(f);
    free(r);
}

int ferry__fetch_size(const ferry__lane *lane) {
    const ferry__disp *d = &lane->d;
    int fetch_n = d->free_slots < lane->fetch_batch ? d->free_slots : lane->fetch_batch;
    /* Results kept after a script error (and jobs failed without running) still hold a
     * place in `owned` though their slot is free: never own more than its capacity, which
     * also bounds the results held in memory to 2 * concurrency. */
    int room = 2 * lane->concurrency - d->nowned;
    if (fetch_n > room) fetch_n = room;
    return fetch_n < 0 ? 0 : fetch_n;
}

void ferry__fetch_after_call(ferry__lane *lane, const ferry__batch_result *res, int fetch_n,
                             int64_t sent_ms, ferry_job **mine) {
    ferry__disp *d = &lane->d;
    /* Rate limited (our own throttle, or the fetch met an exhausted limiter): no fetch
     * until the limit ends; the dispatcher thread sleeps until then (BullMQ clamps the
     * wait to maximumRateLimitDelay and asks again). */
    long long limit_ttl = res->throttle_ttl;
    if (res->fetch_sent && res->rate_limit_ttl > limit_ttl) limit_ttl = res->rate_limit_ttl;
    if (limit_ttl > 0) {
        if (limit_ttl > MAX_RATE_LIMIT_DELAY_MS) limit_ttl = MAX_RATE_LIMIT_DELAY_MS;
        d->limit_until = ferry__mono_ms() + limit_ttl;
        d->drained = 0;
    }
    if (!res->fetch_sent) return;
    int got = 0;
    for (ferry_job *j = res->fetched; j; j = j->next)
        got++;
    if (got > 0) {
        /* a partial fetch means the queue ran dry (unless the limiter capped it): wait
         * for the marker rather than asking again at once */
        d->drained = got < fetch_n && limit_ttl <= 0;
        d->block_until = 0;
    } else if (limit_ttl <= 0) {
        d->drained = 1;
        d->block_until = res->next_delayed;
    }
    for (ferry_job *j = res->fetched; j; j = j->next)
        j->lock_ms = sent_ms;
    if (res->fetched && ferry__cmd_ok(d)) produce_next_iterations(lane, res->fetched);
    take_jobs(lane, res->fetched, mine);
}

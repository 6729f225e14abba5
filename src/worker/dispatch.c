/* dispatch.c - the dispatcher role: the only user of the worker's command connection.
 *
 * The role is held by one thread at a time (`role`, under mu). Its work: collect results
 * that handler threads finished (the lock-free `done` stack), write them all plus a fetch
 * for the slots they free in one round trip (batch.c), and hand fetched jobs to the
 * handler threads (ready queue). Thread switches cost more than a fast job, so whoever is
 * already awake does that work:
 *   - a handler thread that just pushed a result while no other fetched job waits takes
 *     the role, writes the batch, keeps one fetched job to run itself (ferry__lead);
 *   - the waiter thread takes it to fetch after a marker;
 *   - the dispatcher thread takes it for everything else: timers (lock renewal every
 *     lock_duration/2, stalled check every stalled_interval), reconnecting with capped,
 *     jittered backoff, retrying results refused by a script error, close, and watching
 *     (every WATCH_MS while results or queued jobs were left for later) so nothing waits
 *     long behind a handler that turned out slow.
 * Results are held back only while fetched jobs still wait in the ready queue (their
 * completions are imminent and go in the same call); a lone completion is written at once.
 * When a fetch finds nothing the waiter blocks on the marker meanwhile. Results that could
 * not be written stay in memory and are sent again once the connection is back. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/scheduler_internal.h"
#include "util/retry_delay.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/printable.h"
#include "worker/worker_internal.h"

#define MAX_RATE_LIMIT_DELAY_MS 30000 /* BullMQ maximumRateLimitDelay */
#define SCRIPT_ERROR_RETRIES 3        /* a result refused by a failing script is tried 3x */
#define SCRIPT_ERROR_DELAY_MS 1000
/* A command connection unused for this long is checked (one non-blocking poll) before the
 * next call: a server restarted meanwhile has closed it, and finding that out before
 * sending keeps results from being treated as "sent, outcome unknown". */
#define IDLE_CHECK_MS 1000
#define UNBLOCK_EVERY_MS 100
/* The dispatcher thread looks this often while results or queued jobs wait for handlers
 * that may have turned slow (= handlers.c STALE_READY_US). */
#define WATCH_MS 1
/* Results held back for imminent completions are written anyway past this many. */
#define COALESCE_MAX 128
/* A leading handler writes at most this many batches in a row before going back to its
 * own job (more results keep arriving at high concurrency; the next completion leads). */
#define LEAD_ROUNDS_MAX 4

static void report(ferry_worker *w, int code, const char *fmt, ...) FERRY_PRINTF(3, 4);
static void report(ferry_worker *w, int code, const char *fmt, ...) {
    if (!ferry__wants_errors(w)) return;
    ferry_error e;
    e.code = code;
    /* queue names, job ids and server replies may hold any bytes: escaped, so that a
     * message is one line of text a log cannot be forged with */
    char raw[FERRY_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    ferryx_printable(raw, e.message, sizeof e.message);
    if (ferry__cb_enter(w) != 0) return;
    ferry__deliver_error(w, &e);
    ferry__cb_leave(w);
}

/* ---- owned jobs ------------------------------------------------------------------- */

static void own_add(ferry_worker *w, ferry_job *j) {
    ferry__disp *d = &w->d;
    if (d->nowned >= 2 * w->concurrency) { /* prevented by run_batch's fetch bound */
        j->own_idx = -1;
        return;
    }
    j->own_idx = d->nowned;
    d->owned[d->nowned++] = j;
}

static void own_remove(ferry__disp *d, ferry_job *j) {
    int i = j->own_idx;
    if (i < 0 || i >= d->nowned || d->owned[i] != j) return;
    ferry_job *last = d->owned[--d->nowned];
    d->owned[i] = last;
    last->own_idx = i;
    j->own_idx = -1;
}

static void pending_append(ferry__disp *d, ferry_job *j) {
    j->next = NULL;
    if (d->pending_tail)
        d->pending_tail->next = j;
    else
        d->pending = j;
    d->pending_tail = j;
    d->npending++;
}

/* Results pushed by handler threads: their slots are free again, the results pending. */
static void collect_done(ferry_worker *w) {
    ferry__disp *d = &w->d;
    ferry_job *list = atomic_exchange(&w->done, NULL);
    ferry_job *fifo = NULL;
    int taken = 0;
    while (list) { /* the stack is newest first: reverse it */
        ferry_job *n = list->next;
        list->next = fifo;
        fifo = list;
        list = n;
        taken++;
    }
    if (taken) atomic_fetch_sub(&w->ndone, taken);
    if (fifo && !d->pending) d->pending_since_us = ferry__now_us();
    while (fifo) {
        ferry_job *j = fifo;
        fifo = j->next;
        d->free_slots++;
        pending_append(d, j);
    }
}

/* Write now? Not while fetched jobs still wait for a handler: their completions are
 * imminent and are better written in the same call, unless results piled up, waited
 * WATCH_MS already, or the worker is closing. */
static int write_now(ferry_worker *w, int stopping) {
    const ferry__disp *d = &w->d;
    if (atomic_load(&w->rq_len) == 0 || stopping || d->npending >= COALESCE_MAX) return 1;
    if (w->split_at && d->npending >= (size_t)w->split_at) return 1;
    return d->pending && ferry__now_us() - d->pending_since_us >= WATCH_MS * 1000;
}

/* ---- connection ------------------------------------------------------------------- */

static void conn_lost(ferry_worker *w, const ferry_error *e) {
    ferry__disp *d = &w->d;
    if (!d->reported_broken)
        report(w, e->code, "worker %s: command connection lost: %s", w->queue, e->message);
    d->reported_broken = 1;
    ferry__conn_close(d->conn);
    d->conn = NULL;
    d->reconnect_at = ferry__mono_ms(); /* first attempt at once */
    d->reconnect_failures = 0;
    ferry__link_lost(w, &d->link_counted, e);
}

/* At the start of a turn: a connection that predates an outage (link.c) and that the
 * server closed meanwhile is replaced before anything is sent on it, without counting
 * as a loss; one still open is kept. */
static void check_suspect(ferry_worker *w) {
    ferry__disp *d = &w->d;
    if (!d->conn || !ferry__link_suspect(w, d->conn_epoch)) return;
    unsigned epoch = ferry__link_epoch(w);
    if (!ferry__conn_check_idle_peer(d->conn)) {
        d->conn_epoch = epoch;
        return;
    }
    ferry__conn_close(d->conn);
    d->conn = NULL;
    d->reconnect_at = ferry__mono_ms();
    d->reconnect_failures = 0;
}

static int reconnect(ferry_worker *w) {
    ferry__disp *d = &w->d;
    ferry_error e = {0};
    unsigned epoch = ferry__link_epoch(w);
    int rc = ferry__conn_open(&w->redis, NULL, &d->conn, &e);
    if (rc != 0) {
        d->conn = NULL;
        int n = ++d->reconnect_failures;
        d->reconnect_at = ferry__mono_ms() + ferryx_reconnect_delay_ms(n);
        if ((n & (n - 1)) == 0 || n % 16 == 0)
            report(w, rc, "worker %s: reconnect attempt %d failed: %s", w->queue, n, e.message);
        /* a connection replaced quietly (check_suspect) that cannot be renewed is lost */
        ferry__link_lost(w, &d->link_counted, &e);
        return rc;
    }
    ferry__link_back(w, &d->link_counted, &d->conn_epoch, epoch);
    d->reconnect_failures = 0;
    d->reported_broken = 0;
    d->drained = 0; /* jobs may have arrived while we were away */
    d->block_until = 0;
    return 0;
}

static int conn_ok(const ferry__disp *d) {
    return d->conn && !ferry__conn_broken(d->conn);
}

/* ---- results ------------------------------------------------------------------------ */

/* Stats deltas of one batch, applied under the lock once. */
typedef struct deltas {
    unsigned long long completed, failed, retried, lock_lost, retried_later, throttled;
} deltas;

/* Whether job j is in `active`: 1 yes, 0 no, -1 unknown (no connection, call failed). */
static int in_active(ferry_worker *w, const ferry_job *j) {
    if (!conn_ok(&w->d)) return -1;
    const char *argv[] = {"LPOS", w->k_active, j->id};
    size_t lens[] = {4, strlen(w->k_active), strlen(j->id)};
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_command_argv(w->d.conn, 3, argv, lens, &r, &e) != 0) return -1;
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
static int landed_before(ferry_worker *w, const ferry_job *j, int code, int64_t answered_ms) {
    if (!j->resent || j->lock_lost || answered_ms >= j->lock_ms + w->lock_duration_ms) return code;
    int deletes = (j->kind == FERRY__FIN_COMPLETE || j->kind == FERRY__FIN_FAIL) && j->keep.set &&
                  j->keep.count == 0;
    if (code != -2 && !(code == -1 && deletes)) return code;
    return in_active(w, j) == 0 ? 0 : code;
}

enum { SETTLE_RESEND_LATER = 0, SETTLE_DONE = 1, SETTLE_RESEND_NOW = 2 };

/* One job's answer: callbacks, stats, and whether the job is done with, or is sent again
 * after a pause or at once (SETTLE_*). */
static int settle(ferry_worker *w, ferry_job *j, int code, const ferry__batch_result *res,
                  deltas *dl) {
    if ((code == -4 || code == -9) && ferry__job_plan_refused(j, code)) {
        /* refused for its children, lock still held (checked after): Node's worker emits
         * the error and fails the job with it rather than leave it active till it stalls */
        report(w, FERRY_ESTATE, "worker %s: job %s: completion refused (%d: %s): %s", w->queue,
               j->id, code, ferry__fin_code_text(code), j->value ? j->value : "");
        return SETTLE_RESEND_NOW;
    }
    if (code == 0) {
        switch (j->kind) {
        case FERRY__FIN_COMPLETE:
            dl->completed++;
            if (w->cb.completed && ferry__cb_enter(w) == 0) {
                w->cb.completed(j, j->value, w->cb_ud);
                ferry__cb_leave(w);
            }
            break;
        case FERRY__FIN_RETRY_LATER:
            /* BullMQ's DelayedError / RateLimitError: no failed event */
            dl->retried_later++;
            break;
        case FERRY__FIN_THROTTLE:
            dl->throttled++;
            break;
        case FERRY__FIN_FAIL:
        default: {
            int final = j->kind == FERRY__FIN_FAIL;
            if (final)
                dl->failed++;
            else
                dl->retried++;
            if (w->cb.failed && ferry__cb_enter(w) == 0) {
                w->cb.failed(j, j->value ? j->value : "", final, w->cb_ud);
                ferry__cb_leave(w);
            }
            break;
        }
        }
        ferry__job_log_emit(w, j, ferry__fin_log_outcome(j));
        return SETTLE_DONE;
    }
    if (code == FERRY__CODE_SCRIPT_ERROR) {
        /* a failing script keeps what it wrote before the error: part of it may be done */
        j->resent = 1;
        if (++j->send_tries < SCRIPT_ERROR_RETRIES) return SETTLE_RESEND_LATER;
        /* not written: its lock expires and it runs again elsewhere, as after a lost lock */
        ferry__job_log_emit(w, j, "lock-lost");
        report(w, FERRY_EREDIS,
               "worker %s: job %s: %s given up after %d script errors (%s); its lock expires and "
               "it is recovered as stalled",
               w->queue, j->id, ferry__fin_kind_text(j->kind), SCRIPT_ERROR_RETRIES,
               res->has_script_error ? res->script_error.message : "");
        return SETTLE_DONE;
    }
    if ((code == -2 || code == -6) && !j->lock_lost) dl->lock_lost++;
    ferry__job_log_emit(w, j, "lock-lost");
    report(w, code == -2 || code == -6 ? FERRY_ELOCK : FERRY_ESTATE,
           "worker %s: job %s: %s refused (%d: %s)%s", w->queue, j->id,
           ferry__fin_kind_text(j->kind), code, ferry__fin_code_text(code),
           j->resent ? "; sent again (after a broken connection or a script error), so it may "
                       "have been written already"
                     : "");
    return SETTLE_DONE;
}

/* Jobs fetched: own them, fail the unrunnable at once, keep one for the caller when
 * `mine` is given, queue the rest for handlers. */
static void take_jobs(ferry_worker *w, ferry_job *list, ferry_job **mine) {
    ferry__disp *d = &w->d;
    ferry_job *rh = NULL, *rt = NULL;
    int n = 0;
    while (list) {
        ferry_job *j = list;
        list = j->next;
        j->next = NULL;
        own_add(w, j);
        const char *why = ferry__job_unrunnable(j);
        if (why) {
            /* BullMQ fails these as UnrecoverableError without running the processor */
            char stack[FERRY_ERROR_MESSAGE_MAX];
            snprintf(stack, sizeof stack, "UnrecoverableError: %s", why);
            ferry_job_set_failure(j, why, stack);
            j->outcome = FERRY_FAILED_PERMANENT;
            if (w->cb.job_log) j->trace_id = ferry__job_trace_id(j);
            ferry__job_plan(j, FERRY_FAILED_PERMANENT, NULL);
            if (!d->pending) d->pending_since_us = ferry__now_us();
            pending_append(d, j);
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
    ferry__ready_push(w, rh, rt, n, mine != NULL);
}

/* ---- scheduler iterations ------------------------------------------------------------ */

/* The connection failed under the call (a TLS alert mid-connection counts too: it leaves
 * the connection broken like a reset does). */
static int transport_error(const ferry_conn *c, int rc) {
    return rc == FERRY_EIO || rc == FERRY_ETIMEDOUT || rc == FERRY_EPROTO ||
           (rc == FERRY_ETLS && c && ferry__conn_broken(c));
}

/* Fetched jobs that are scheduler iterations (`rjk`): produce each schedule's next iteration
 * before any handler runs, as a Node worker does (protocol §8.3; otherwise a schedule dies
 * after one run). One pipelined round trip for the whole fetch, none when no job has `rjk`.
 * The call is idempotent, so after a transport error it is repeated once on a fresh
 * connection; if that fails too the error is reported and the jobs still run. */
static void produce_next_iterations(ferry_worker *w, ferry_job *list) {
    size_t n = 0;
    for (ferry_job *j = list; j; j = j->next) {
        const char *rjk = ferry_job_field(j, "rjk");
        if (rjk && *rjk) n++;
    }
    if (n == 0) return;
    ferry__sched_fetched *f = calloc(n, sizeof *f);
    ferry__sched_result *r = calloc(n, sizeof *r);
    if (!f || !r) {
        report(w, FERRY_ENOMEM, "worker %s: no memory to produce scheduler iterations", w->queue);
        goto out;
    }
    size_t i = 0;
    for (ferry_job *j = list; j; j = j->next) {
        const char *rjk = ferry_job_field(j, "rjk");
        if (rjk && *rjk) f[i++] = (ferry__sched_fetched){j->id, rjk, j->opts};
    }
    ferry_error e = {0};
    int rc = ferry__scheduler_on_fetch(w->d.conn, w->keys.base, f, n, ferry__now_ms(), r, &e);
    if (transport_error(w->d.conn, rc)) {
        conn_lost(w, &e);
        if (reconnect(w) == 0)
            rc = ferry__scheduler_on_fetch(w->d.conn, w->keys.base, f, n, ferry__now_ms(), r, &e);
        if (transport_error(w->d.conn, rc) && w->d.conn) conn_lost(w, &e);
    }
    if (rc != 0) {
        report(w, rc, "worker %s: scheduler next iteration not produced: %s", w->queue, e.message);
        goto out;
    }
    for (i = 0; i < n; i++)
        if (r[i].outcome == FERRY__SCHED_ERROR || r[i].outcome == FERRY__SCHED_LEGACY)
            report(w, r[i].error.code, "worker %s: scheduler job %s: %s", w->queue, f[i].job_id,
                   r[i].error.message);
out:
    free(f);
    free(r);
}

/* Write every pending result and fetch for the free slots, in one round trip. With
 * `mine`, one fetched job is handed to the caller (see take_jobs). */
static void run_batch(ferry_worker *w, int fetch_allowed, ferry_job **mine) {
    ferry__disp *d = &w->d;
    int64_t now = ferry__mono_ms();
    size_t n = now >= d->retry_at ? ferry__batch_take(d) : 0;
    int fetch_n =
        fetch_allowed ? (d->free_slots < w->fetch_batch ? d->free_slots : w->fetch_batch) : 0;
    /* Results kept after a script error (and jobs failed without running) still hold a
     * place in `owned` though their slot is free: never own more than its capacity, which
     * also bounds the results held in memory to 2 * concurrency. */
    int room = 2 * w->concurrency - d->nowned;
    if (fetch_n > room) fetch_n = room;
    if (fetch_n < 0) fetch_n = 0;
    if (n == 0 && fetch_n == 0) return;
    if (now - d->last_io >= IDLE_CHECK_MS && ferry__conn_check_idle_peer(d->conn)) {
        ferry_error ce = {0};
        ferry__err(&ce, FERRY_EIO, "the server closed it while it was idle");
        conn_lost(w, &ce);
        return;
    }

    ferry_job *stack_jobs[64];
    int stack_codes[64];
    ferry_job **jobs = n <= 64 ? stack_jobs : malloc(n * sizeof *jobs);
    int *codes = n <= 64 ? stack_codes : malloc(n * sizeof *codes);
    if (!jobs || !codes) {
        if (jobs != stack_jobs) free(jobs);
        if (codes != stack_codes) free(codes);
        report(w, FERRY_ENOMEM, "worker %s: out of memory writing results", w->queue);
        d->retry_at = now + SCRIPT_ERROR_DELAY_MS;
        return;
    }
    size_t i = 0;
    if (n) {
        ferry_job *j = d->pending;
        for (; i < n; i++, j = j->next)
            jobs[i] = j;
        d->pending = j; /* the rest (over the byte bound) go in the next call */
        if (!j) d->pending_tail = NULL;
        d->npending -= n;
    }

    ferry__batch_result res;
    ferry_error e = {0};
    /* this thread may have been the one draining the ready queue: keep it moving while we
     * wait for Redis */
    if (atomic_load(&w->rq_len) > 0) ferry__ready_help(w);
    int64_t sent_ms = ferry__mono_ms();
    int rc = ferry__batch_run(w, jobs, n, fetch_n, codes, &res, &e);
    d->last_io = ferry__mono_ms();
    /* Refused unsent as over the request limit: one result per call from now on; a single
     * result that cannot be sent fails its job, leaving the stored stacktrace alone. */
    if (rc == FERRY_ETOOBIG && !ferry__conn_broken(d->conn) && n == 1)
        ferry__job_plan_unsendable(jobs[0], e.message);
    d->one_result = rc == FERRY_ETOOBIG && !ferry__conn_broken(d->conn) && n > 1;
    if (rc != 0) {
        /* Nothing is known about this call: keep every result and send it again. */
        for (i = 0; i < n; i++) {
            jobs[i]->resent = 1;
            pending_append(d, jobs[i]);
        }
        if (d->conn && ferry__conn_broken(d->conn)) {
            conn_lost(w, &e);
        } else {
            report(w, rc, "worker %s: %s", w->queue, e.message);
            d->retry_at = now + SCRIPT_ERROR_DELAY_MS;
        }
        goto out;
    }
    if (res.has_script_error) {
        ferry_error se = res.script_error;
        report(w, se.code, "worker %s: %s", w->queue, se.message);
    }

    deltas dl = {0};
    int again = 0;
    for (i = 0; i < n; i++) {
        ferry_job *j = jobs[i];
        int st = settle(w, j, landed_before(w, j, codes[i], d->last_io), &res, &dl);
        if (st == SETTLE_DONE) {
            own_remove(d, j);
            ferry__job_free(j);
        } else {
            if (!d->pending) d->pending_since_us = ferry__now_us();
            pending_append(d, j);
            if (st == SETTLE_RESEND_LATER) again = 1;
        }
    }
    if (again) d->retry_at = ferry__mono_ms() + SCRIPT_ERROR_DELAY_MS;
    if (dl.completed || dl.failed || dl.retried || dl.lock_lost || dl.retried_later ||
        dl.throttled) {
        pthread_mutex_lock(&w->mu);
        w->stats.completed += dl.completed;
        w->stats.failed += dl.failed;
        w->stats.retried += dl.retried;
        w->stats.lock_lost += dl.lock_lost;
        w->stats.retried_later += dl.retried_later;
        w->stats.throttled += dl.throttled;
        pthread_mutex_unlock(&w->mu);
    }

    /* Rate limited (our own throttle, or the fetch met an exhausted limiter): no fetch
     * until the limit ends; the dispatcher thread sleeps until then (BullMQ clamps the
     * wait to maximumRateLimitDelay and asks again). */
    long long limit_ttl = res.throttle_ttl;
    if (res.fetch_sent && res.rate_limit_ttl > limit_ttl) limit_ttl = res.rate_limit_ttl;
    if (limit_ttl > 0) {
        if (limit_ttl > MAX_RATE_LIMIT_DELAY_MS) limit_ttl = MAX_RATE_LIMIT_DELAY_MS;
        d->limit_until = ferry__mono_ms() + limit_ttl;
        d->drained = 0;
    }

    if (res.fetch_sent) {
        int got = 0;
        for (ferry_job *j = res.fetched; j; j = j->next)
            got++;
        if (got > 0) {
            /* a partial fetch means the queue ran dry (unless the limiter capped it): wait
             * for the marker rather than asking again at once */
            d->drained = got < fetch_n && limit_ttl <= 0;
            d->block_until = 0;
        } else if (limit_ttl <= 0) {
            d->drained = 1;
            d->block_until = res.next_delayed;
        }
        for (ferry_job *j = res.fetched; j; j = j->next)
            j->lock_ms = sent_ms;
        if (res.fetched && conn_ok(d)) produce_next_iterations(w, res.fetched);
        take_jobs(w, res.fetched, mine);
    }
out:
    if (jobs != stack_jobs) free(jobs);
    if (codes != stack_codes) free(codes);
}

/* ---- timers ------------------------------------------------------------------------- */

static void renew_locks(ferry_worker *w) {
    ferry__disp *d = &w->d;
    if (d->nowned == 0) return;
    size_t *lost = NULL, nlost = 0;
    ferry_error e = {0};
    int64_t sent_ms = ferry__mono_ms();
    int rc = ferry__batch_extend_locks(w, d->owned, (size_t)d->nowned, &lost, &nlost, &e);
    if (rc != 0) {
        if (d->conn && ferry__conn_broken(d->conn))
            conn_lost(w, &e);
        else
            report(w, rc, "worker %s: lock renewal: %s", w->queue, e.message);
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
        if (j->resent && now < was + w->lock_duration_ms) {
            j->lock_ms = was;
            continue;
        }
        j->lock_lost = 1;
        newly++;
        report(w, FERRY_ELOCK,
               "worker %s: job %s: lock lost (renewal refused); its handler keeps running but "
               "its result will be refused",
               w->queue, j->id);
    }
    free(lost);
    for (int k = 0; k < d->nowned; k++)
        if (d->owned[k]->lock_ms != INT64_MIN) d->owned[k]->lock_ms = sent_ms;
    if (newly) {
        pthread_mutex_lock(&w->mu);
        w->stats.lock_lost += newly;
        pthread_mutex_unlock(&w->mu);
    }
}

static void check_stalled(ferry_worker *w) {
    redisReply *r = NULL;
    ferry_error e = {0};
    int rc = ferry__batch_stalled_check(w, &r, &e);
    if (rc != 0) {
        if (w->d.conn && ferry__conn_broken(w->d.conn))
            conn_lost(w, &e);
        else
            report(w, rc, "worker %s: %s", w->queue, e.message);
        return;
    }
    if (r->elements) {
        pthread_mutex_lock(&w->mu);
        w->stats.stalled += r->elements;
        pthread_mutex_unlock(&w->mu);
        for (size_t i = 0; i < r->elements; i++)
            if (w->cb.stalled && r->element[i]->type == REDIS_REPLY_STRING &&
                ferry__cb_enter(w) == 0) {
                w->cb.stalled(r->element[i]->str, w->cb_ud);
                ferry__cb_leave(w);
            }
    }
    freeReplyObject(r);
}

static void unblock_waiter(ferry_worker *w, long long client_id) {
    char id[24];
    snprintf(id, sizeof id, "%lld", client_id);
    const char *argv[] = {"CLIENT", "UNBLOCK", id};
    redisReply *r = NULL;
    ferry_error e = {0};
    /* refused by an ACL or unknown: the waiter's own timeout ends its wait */
    if (ferry__conn_command_argv(w->d.conn, 3, argv, NULL, &r, &e) != 0) {
        if (ferry__conn_broken(w->d.conn)) conn_lost(w, &e);
        return;
    }
    freeReplyObject(r);
}

/* ---- the loop ----------------------------------------------------------------------- */

static void deliver_posted(ferry_worker *w) {
    /* called with mu held; drops it while calling back */
    ferry_error posted[FERRY__POSTED_MAX];
    int n = w->nposted;
    unsigned long dropped = w->nposted_dropped;
    memcpy(posted, w->posted, (size_t)n * sizeof posted[0]);
    w->nposted = 0;
    w->nposted_dropped = 0;
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < n; i++)
        if (ferry__wants_errors(w) && ferry__cb_enter(w) == 0) {
            ferry__deliver_error(w, &posted[i]);
            ferry__cb_leave(w);
        }
    if (dropped)
        report(w, FERRY_EIO, "worker %s: %lu more blocking-connection errors not shown", w->queue,
               dropped);
    pthread_mutex_lock(&w->mu);
}

static int64_t min_deadline(int64_t a, int64_t b) {
    if (a <= 0) return b;
    if (b <= 0) return a;
    return a < b ? a : b;
}

/* ---- the role ------------------------------------------------------------------------ */

/* End of a turn of whoever holds the role (mu held): if the last fetch found nothing, let
 * the waiter watch the marker; give the role up; wake the dispatcher thread when what is
 * left is its business (timers it waits for, a broken connection, results refused for
 * now, a rate limit, a fetch the waiter asked for, close). */
static void role_release_locked(ferry_worker *w, int by_dispatcher) {
    ferry__disp *d = &w->d;
    int64_t now = ferry__mono_ms();
    int ok = conn_ok(d);
    int stopping = atomic_load(&w->stopping);
    if (ok && !stopping && d->drained && d->free_slots > 0 && now >= d->limit_until &&
        !w->wait_req && !w->waiter_busy) {
        w->wait_req = 1;
        w->wait_block_until = d->block_until;
        pthread_cond_signal(&w->waiter_cv);
    }
    w->role = 0;
    if (!by_dispatcher &&
        (w->role_wanted || !ok || stopping || w->wake_fetch || w->nposted || w->nposted_dropped ||
         (d->pending && now < d->retry_at) || d->limit_until > now))
        pthread_cond_signal(&w->disp_cv);
}

void ferry__watch(ferry_worker *w) {
    /* the dispatcher sets both flags under mu before its last look at `done` and rq_len,
     * and sleeps holding mu until the wait: taking mu here orders this signal after it */
    if (atomic_load(&w->disp_sleeping) && !atomic_load(&w->disp_watching)) {
        pthread_mutex_lock(&w->mu);
        pthread_mutex_unlock(&w->mu);
        pthread_cond_signal(&w->disp_cv);
    }
}

ferry_job *ferry__lead(ferry_worker *w, int keep_one) {
    ferry__disp *d = &w->d;
    ferry_job *mine = NULL;
    int left = 0;
    for (int round = 0; round < LEAD_ROUNDS_MAX; round++) {
        pthread_mutex_lock(&w->mu);
        if (w->role || atomic_load(&w->abandon)) {
            /* the holder looks at `done` again after it lets go */
            pthread_mutex_unlock(&w->mu);
            return mine;
        }
        w->role = 1;
        if (w->wake_fetch) {
            w->wake_fetch = 0;
            d->drained = 0;
            d->block_until = 0;
        }
        int stopping = atomic_load(&w->stopping);
        pthread_mutex_unlock(&w->mu);

        collect_done(w);
        check_suspect(w);
        int64_t now = ferry__mono_ms();
        int ok = conn_ok(d), go = write_now(w, stopping);
        int send = ok && d->pending && now >= d->retry_at && go;
        /* a finish always asks for the next jobs too, drained or not (as Node's
         * moveToFinished fetchNext does): a queue that was maxed by its global concurrency
         * gets no marker when a slot frees up, so a drained worker would otherwise wait
         * for its drain delay with jobs waiting */
        int fetch = ok && !stopping && d->free_slots > 0 && (!d->drained || send) &&
                    now >= d->limit_until && go;
        if (send || fetch) run_batch(w, fetch, keep_one && !mine ? &mine : NULL);
        left = d->pending != NULL;

        pthread_mutex_lock(&w->mu);
        role_release_locked(w, 0);
        pthread_mutex_unlock(&w->mu);
        /* results pushed meanwhile by threads that found the role taken are ours to write,
         * unless fetched jobs wait (the next completion writes them) */
        if (!atomic_load(&w->done) || atomic_load(&w->rq_len) > 0) break;
    }
    if (left || atomic_load(&w->done)) ferry__watch(w);
    return mine;
}

/* ---- the dispatcher thread ----------------------------------------------------------- */

typedef struct turn {
    int send, fetch, renew, stalled, reconnect;
    long long unblock_id;
} turn;

void *ferry__dispatcher_main(void *arg) {
    ferry__thread *t = arg;
    ferry_worker *w = t->w;
    ferry__disp *d = &w->d;
    int64_t renew_every = w->lock_duration_ms / 2 > 0 ? w->lock_duration_ms / 2 : 1;
    int64_t now = ferry__mono_ms();
    d->next_stalled = now; /* once at start */
    d->next_renew = now + renew_every;
    int have_role = 0;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (w->nposted || w->nposted_dropped) {
            deliver_posted(w);
            continue;
        }
        if (atomic_load(&w->abandon)) break;
        int stopping = atomic_load(&w->stopping);
        now = ferry__mono_ms();
        if (w->role) {
            /* a handler or the waiter is writing results or fetching. Only this thread
             * writes next_renew / next_stalled, so they can be read without the role. */
            int due = stopping || now >= d->next_renew || now >= d->next_stalled;
            w->role_wanted = due;
            ferry__cond_wait_until(&w->disp_cv, &w->mu, due ? 0 : now + WATCH_MS);
            w->role_wanted = 0;
            continue;
        }
        w->role = have_role = 1;
        collect_done(w);
        if (w->wake_fetch) {
            w->wake_fetch = 0;
            d->drained = 0;
            d->block_until = 0;
        }
        check_suspect(w);
        int ok = conn_ok(d);
        if (stopping && d->nowned == 0 && (!w->waiter_busy || !ok || !w->bclient_id)) break;

        int go = write_now(w, stopping);
        turn tn = {0};
        tn.send = ok && d->pending && now >= d->retry_at && go;
        tn.fetch = ok && !stopping && d->free_slots > 0 && (!d->drained || tn.send) &&
                   now >= d->limit_until && go; /* see ferry__lead */
        tn.renew = ok && d->nowned > 0 && now >= d->next_renew;
        tn.stalled = ok && !stopping && now >= d->next_stalled;
        tn.reconnect = !ok && now >= d->reconnect_at;
        if (ok && stopping && w->waiter_busy && w->bclient_id &&
            now - d->last_unblock >= UNBLOCK_EVERY_MS)
            tn.unblock_id = w->bclient_id;
        if (tn.send || tn.fetch || tn.renew || tn.stalled || tn.reconnect || tn.unblock_id) {
            pthread_mutex_unlock(&w->mu);
            if (tn.reconnect) {
                reconnect(w);
            } else {
                if (tn.unblock_id) {
                    d->last_unblock = now;
                    unblock_waiter(w, tn.unblock_id);
                }
                if (tn.stalled && conn_ok(d)) {
                    d->next_stalled = now + w->stalled_interval_ms;
                    check_stalled(w);
                }
                if (tn.renew && conn_ok(d)) {
                    d->next_renew = now + renew_every;
                    renew_locks(w);
                }
                if ((tn.send || tn.fetch) && conn_ok(d)) run_batch(w, tn.fetch, NULL);
            }
            pthread_mutex_lock(&w->mu);
            role_release_locked(w, 1);
            have_role = 0;
            continue;
        }

        /* Nothing to do now: sleep until a timer, a result that must go now, or - while
         * results or queued jobs were left for imminent completions - WATCH_MS. */
        ferry__ready_kick_stale(w);
        int watch = (d->pending && now >= d->retry_at) || atomic_load(&w->rq_len) > 0 ||
                    atomic_load(&w->done);
        int64_t dl = 0;
        if (d->pending) dl = min_deadline(dl, d->retry_at);
        if (!ok) dl = min_deadline(dl, d->reconnect_at);
        if (d->nowned > 0) dl = min_deadline(dl, d->next_renew);
        if (!stopping) dl = min_deadline(dl, d->next_stalled);
        if (!stopping && !d->drained && d->limit_until > now) dl = min_deadline(dl, d->limit_until);
        if (stopping && w->waiter_busy) dl = min_deadline(dl, d->last_unblock + UNBLOCK_EVERY_MS);
        if (watch) dl = min_deadline(dl, now + WATCH_MS);
        role_release_locked(w, 1);
        have_role = 0;
        atomic_store(&w->disp_watching, watch);
        atomic_store(&w->disp_sleeping, 1);
        /* last look (see ferry__watch): a result nobody could write (its thread found the
         * role taken by us), or things left for later while we were not watching */
        int run_now = atomic_load(&w->done) && atomic_load(&w->rq_len) == 0;
        int need_watch = !watch && (atomic_load(&w->done) || atomic_load(&w->rq_len) > 0);
        if (!run_now && !need_watch) ferry__cond_wait_until(&w->disp_cv, &w->mu, dl);
        atomic_store(&w->disp_sleeping, 0);
        atomic_store(&w->disp_watching, 0);
    }
    /* Leaving: hold the role for good, so nobody uses the connection closed below. */
    while (!have_role && w->role) {
        w->role_wanted = 1;
        ferry__cond_wait_until(&w->disp_cv, &w->mu, ferry__mono_ms() + WATCH_MS);
    }
    w->role = 1;
    w->role_wanted = 0;
    w->disp_exited_clean = d->nowned == 0;
    pthread_cond_broadcast(&w->waiter_cv);
    pthread_mutex_unlock(&w->mu);
    ferry__handlers_release(w);

    ferry__conn_close(d->conn);
    d->conn = NULL;
    ferry__thread_exit(t);
    return NULL;
}

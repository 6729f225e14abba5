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
 * not be written stay in memory and are sent again once the connection is back.
 * Call graph: this file decides when; settle.c (answers), fetch.c (fetched jobs),
 * timers.c (renewal, stalled check) and command.c (the connection) do the work, over
 * batch.c's script calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/error.h"
#include "worker/worker_internal.h"

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

/* ---- results in --------------------------------------------------------------------- */

/* Results pushed by handler threads: their slots are free again, the results pending. */
static void collect_done(ferry__lane *lane) {
    ferry__disp *d = &lane->d;
    ferry_job *list = atomic_exchange(&lane->done, NULL);
    ferry_job *fifo = NULL;
    int taken = 0;
    while (list) { /* the stack is newest first: reverse it */
        ferry_job *n = list->next;
        list->next = fifo;
        fifo = list;
        list = n;
        taken++;
    }
    if (taken) atomic_fetch_sub(&lane->ndone, taken);
    if (fifo && !d->pending) d->pending_since_us = ferry__now_us();
    while (fifo) {
        ferry_job *j = fifo;
        fifo = j->next;
        d->free_slots++;
        ferry__pending_append(d, j);
    }
}

/* Write now? Not while fetched jobs still wait for a handler: their completions are
 * imminent and are better written in the same call, unless results piled up, waited
 * WATCH_MS already, or the worker is closing. */
static int write_now(ferry__lane *lane, int stopping) {
    const ferry__disp *d = &lane->d;
    if (atomic_load(&lane->rq_len) == 0 || stopping || d->npending >= COALESCE_MAX) return 1;
    if (lane->split_at && d->npending >= (size_t)lane->split_at) return 1;
    return d->pending && ferry__now_us() - d->pending_since_us >= WATCH_MS * 1000;
}

/* ---- one round trip ------------------------------------------------------------------ */

/* Before a call on a connection idle for IDLE_CHECK_MS: 1 (and the connection given up)
 * when the server closed it meanwhile. */
static int idle_peer_closed(ferry__lane *lane, int64_t now) {
    ferry__disp *d = &lane->d;
    if (now - d->last_io < IDLE_CHECK_MS || !ferry__conn_check_idle_peer(d->conn)) return 0;
    ferry_error ce = {0};
    ferry__err(&ce, FERRY_EIO, "the server closed it while it was idle");
    ferry__cmd_lost(lane, &ce);
    return 1;
}

/* Move the first n pending results into jobs[]; the rest (over the byte bound) go in the
 * next call. */
static void take_pending(ferry__disp *d, ferry_job **jobs, size_t n) {
    if (!n) return;
    ferry_job *j = d->pending;
    for (size_t i = 0; i < n; i++, j = j->next)
        jobs[i] = j;
    d->pending = j;
    if (!j) d->pending_tail = NULL;
    d->npending -= n;
}

/* Refused unsent as over the request limit: one result per call from now on; a single
 * result that cannot be sent fails its job, leaving the stored stacktrace alone. */
static void note_too_big(ferry__disp *d, ferry_job **jobs, size_t n, int rc, const ferry_error *e) {
    if (rc == FERRY_ETOOBIG && !ferry__conn_broken(d->conn) && n == 1)
        ferry__job_plan_unsendable(jobs[0], e->message);
    d->one_result = rc == FERRY_ETOOBIG && !ferry__conn_broken(d->conn) && n > 1;
}

/* Write every pending result and fetch for the free slots, in one round trip. With
 * `mine`, one fetched job is handed to the caller (see fetch.c). */
static void write_and_fetch(ferry__lane *lane, int fetch_allowed, ferry_job **mine) {
    ferry__disp *d = &lane->d;
    int64_t now = ferry__mono_ms();
    size_t n = now >= d->retry_at ? ferry__batch_take(d) : 0;
    int fetch_n = fetch_allowed ? ferry__fetch_size(lane) : 0;
    if (n == 0 && fetch_n == 0) return;
    if (idle_peer_closed(lane, now)) return;

    ferry_job *stack_jobs[64];
    int stack_codes[64];
    ferry_job **jobs = n <= 64 ? stack_jobs : malloc(n * sizeof *jobs);
    int *codes = n <= 64 ? stack_codes : malloc(n * sizeof *codes);
    if (!jobs || !codes) {
        if (jobs != stack_jobs) free(jobs);
        if (codes != stack_codes) free(codes);
        ferry__lane_report(lane, FERRY_ENOMEM, "worker %s: out of memory writing results",
                           lane->queue);
        d->retry_at = now + FERRY__SCRIPT_ERROR_DELAY_MS;
        return;
    }
    take_pending(d, jobs, n);

    ferry__batch_result res;
    ferry_error e = {0};
    /* this thread may have been the one draining the ready queue: keep it moving while we
     * wait for Redis */
    if (atomic_load(&lane->rq_len) > 0) ferry__ready_help(lane);
    int64_t sent_ms = ferry__mono_ms();
    int rc = ferry__batch_run(lane, jobs, n, fetch_n, codes, &res, &e);
    d->last_io = ferry__mono_ms();
    note_too_big(d, jobs, n, rc, &e);
    if (rc != 0) {
        ferry__settle_unsent(lane, jobs, n, rc, &e, now);
    } else {
        ferry__settle_written(lane, jobs, n, codes, &res);
        ferry__fetch_after_call(lane, &res, fetch_n, sent_ms, mine);
    }
    if (jobs != stack_jobs) free(jobs);
    if (codes != stack_codes) free(codes);
}

/* ---- close --------------------------------------------------------------------------- */

static void unblock_waiter(ferry__lane *lane, long long client_id) {
    char id[24];
    snprintf(id, sizeof id, "%lld", client_id);
    const char *argv[] = {"CLIENT", "UNBLOCK", id};
    redisReply *r = NULL;
    ferry_error e = {0};
    /* refused by an ACL or unknown: the waiter's own timeout ends its wait */
    if (ferry__conn_command_argv(lane->d.conn, 3, argv, NULL, &r, &e) != 0) {
        if (ferry__conn_broken(lane->d.conn)) ferry__cmd_lost(lane, &e);
        return;
    }
    freeReplyObject(r);
}

/* ---- the loop ----------------------------------------------------------------------- */

static void deliver_posted(ferry__lane *lane) {
    /* called with mu held; drops it while calling back */
    ferry_error posted[FERRY__POSTED_MAX];
    int n = lane->nposted;
    unsigned long dropped = lane->nposted_dropped;
    memcpy(posted, lane->posted, (size_t)n * sizeof posted[0]);
    lane->nposted = 0;
    lane->nposted_dropped = 0;
    pthread_mutex_unlock(&lane->mu);
    for (int i = 0; i < n; i++)
        if (ferry__wants_errors(lane) && ferry__cb_enter(lane) == 0) {
            ferry__deliver_error(lane, &posted[i]);
            ferry__cb_leave(lane);
        }
    if (dropped)
        ferry__lane_report(lane, FERRY_EIO,
                           "worker %s: %lu more blocking-connection errors not shown", lane->queue,
                           dropped);
    pthread_mutex_lock(&lane->mu);
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
static void role_release_locked(ferry__lane *lane, int by_dispatcher) {
    ferry__disp *d = &lane->d;
    int64_t now = ferry__mono_ms();
    int ok = ferry__cmd_ok(d);
    int stopping = atomic_load(&lane->stopping);
    if (ok && !stopping && d->drained && d->free_slots > 0 && now >= d->limit_until &&
        !lane->wait_req && !lane->waiter_busy) {
        lane->wait_req = 1;
        lane->wait_block_until = d->block_until;
        pthread_cond_signal(&lane->waiter_cv);
    }
    lane->role = 0;
    if (!by_dispatcher &&
        (lane->role_wanted || !ok || stopping || lane->wake_fetch || lane->nposted ||
         lane->nposted_dropped || (d->pending && now < d->retry_at) || d->limit_until > now))
        pthread_cond_signal(&lane->disp_cv);
}

void ferry__watch(ferry__lane *lane) {
    /* the dispatcher sets both flags under mu before its last look at `done` and rq_len,
     * and sleeps holding mu until the wait: taking mu here orders this signal after it */
    if (atomic_load(&lane->disp_sleeping) && !atomic_load(&lane->disp_watching)) {
        pthread_mutex_lock(&lane->mu);
        pthread_mutex_unlock(&lane->mu);
        pthread_cond_signal(&lane->disp_cv);
    }
}

ferry_job *ferry__lead(ferry__lane *lane, int keep_one) {
    ferry__disp *d = &lane->d;
    ferry_job *mine = NULL;
    int left = 0;
    for (int round = 0; round < LEAD_ROUNDS_MAX; round++) {
        pthread_mutex_lock(&lane->mu);
        if (lane->role || atomic_load(&lane->abandon)) {
            /* the holder looks at `done` again after it lets go */
            pthread_mutex_unlock(&lane->mu);
            return mine;
        }
        lane->role = 1;
        if (lane->wake_fetch) {
            lane->wake_fetch = 0;
            d->drained = 0;
            d->block_until = 0;
        }
        int stopping = atomic_load(&lane->stopping);
        pthread_mutex_unlock(&lane->mu);

        collect_done(lane);
        ferry__cmd_check_suspect(lane);
        int64_t now = ferry__mono_ms();
        int ok = ferry__cmd_ok(d), go = write_now(lane, stopping);
        int send = ok && d->pending && now >= d->retry_at && go;
        /* a finish always asks for the next jobs too, drained or not (as Node's
         * moveToFinished fetchNext does): a queue that was maxed by its global concurrency
         * gets no marker when a slot frees up, so a drained worker would otherwise wait
         * for its drain delay with jobs waiting */
        int fetch = ok && !stopping && d->free_slots > 0 && (!d->drained || send) &&
                    now >= d->limit_until && go;
        if (send || fetch) write_and_fetch(lane, fetch, keep_one && !mine ? &mine : NULL);
        left = d->pending != NULL;

        pthread_mutex_lock(&lane->mu);
        role_release_locked(lane, 0);
        pthread_mutex_unlock(&lane->mu);
        /* results pushed meanwhile by threads that found the role taken are ours to write,
         * unless fetched jobs wait (the next completion writes them) */
        if (!atomic_load(&lane->done) || atomic_load(&lane->rq_len) > 0) break;
    }
    if (left || atomic_load(&lane->done)) ferry__watch(lane);
    return mine;
}

/* ---- the dispatcher thread ----------------------------------------------------------- */

/* What one turn of the dispatcher thread does. */
typedef struct turn {
    int send, fetch, renew, stalled, reconnect;
    long long unblock_id;
} turn;

/* Decide the turn (mu and the role held). Returns whether there is anything to do. */
static int plan_turn(ferry__lane *lane, int64_t now, int stopping, int ok, turn *tn) {
    ferry__disp *d = &lane->d;
    int go = write_now(lane, stopping);
    *tn = (turn){0};
    tn->send = ok && d->pending && now >= d->retry_at && go;
    tn->fetch = ok && !stopping && d->free_slots > 0 && (!d->drained || tn->send) &&
                now >= d->limit_until && go; /* see ferry__lead */
    tn->renew = ok && d->nowned > 0 && now >= d->next_renew;
    tn->stalled = ok && !stopping && now >= d->next_stalled;
    tn->reconnect = !ok && now >= d->reconnect_at;
    if (ok && stopping && lane->waiter_busy && lane->bclient_id &&
        now - d->last_unblock >= UNBLOCK_EVERY_MS)
        tn->unblock_id = lane->bclient_id;
    return tn->send || tn->fetch || tn->renew || tn->stalled || tn->reconnect || tn->unblock_id;
}

/* Do the turn (the role held, mu not). */
static void run_turn(ferry__lane *lane, const turn *tn, int64_t now, int64_t renew_every) {
    ferry__disp *d = &lane->d;
    if (tn->reconnect) {
        ferry__cmd_reconnect(lane);
        return;
    }
    if (tn->unblock_id) {
        d->last_unblock = now;
        unblock_waiter(lane, tn->unblock_id);
    }
    if (tn->stalled && ferry__cmd_ok(d)) {
        d->next_stalled = now + lane->stalled_interval_ms;
        ferry__timers_check_stalled(lane);
    }
    if (tn->renew && ferry__cmd_ok(d)) {
        d->next_renew = now + renew_every;
        ferry__timers_renew_locks(lane);
    }
    if ((tn->send || tn->fetch) && ferry__cmd_ok(d)) write_and_fetch(lane, tn->fetch, NULL);
}

/* Nothing to do now: the deadline to sleep until (a timer, a result that must go now, or
 * - while results or queued jobs were left for imminent completions - WATCH_MS); *watch
 * says whether the WATCH_MS look is part of it. mu held. */
static int64_t idle_deadline(ferry__lane *lane, int64_t now, int stopping, int ok, int *watch) {
    const ferry__disp *d = &lane->d;
    *watch = (d->pending && now >= d->retry_at) || atomic_load(&lane->rq_len) > 0 ||
             atomic_load(&lane->done);
    int64_t dl = 0;
    if (d->pending) dl = min_deadline(dl, d->retry_at);
    if (!ok) dl = min_deadline(dl, d->reconnect_at);
    if (d->nowned > 0) dl = min_deadline(dl, d->next_renew);
    if (!stopping) dl = min_deadline(dl, d->next_stalled);
    if (!stopping && !d->drained && d->limit_until > now) dl = min_deadline(dl, d->limit_until);
    if (stopping && lane->waiter_busy) dl = min_deadline(dl, d->last_unblock + UNBLOCK_EVERY_MS);
    if (*watch) dl = min_deadline(dl, now + WATCH_MS);
    return dl;
}

/* Give the role up and sleep until `dl` (mu held throughout, released by the wait). */
static void sleep_until(ferry__lane *lane, int64_t dl, int watch) {
    role_release_locked(lane, 1);
    atomic_store(&lane->disp_watching, watch);
    atomic_store(&lane->disp_sleeping, 1);
    /* last look (see ferry__watch): a result nobody could write (its thread found the
     * role taken by us), or things left for later while we were not watching */
    int run_now = atomic_load(&lane->done) && atomic_load(&lane->rq_len) == 0;
    int need_watch = !watch && (atomic_load(&lane->done) || atomic_load(&lane->rq_len) > 0);
    if (!run_now && !need_watch) ferry__cond_wait_until(&lane->disp_cv, &lane->mu, dl);
    atomic_store(&lane->disp_sleeping, 0);
    atomic_store(&lane->disp_watching, 0);
}

/* Leaving: hold the role for good, so nobody uses the connection closed below; then let
 * the handlers go and close the connection. mu held on entry, released. */
static void dispatcher_leave(ferry__lane *lane, int have_role) {
    ferry__disp *d = &lane->d;
    while (!have_role && lane->role) {
        lane->role_wanted = 1;
        ferry__cond_wait_until(&lane->disp_cv, &lane->mu, ferry__mono_ms() + WATCH_MS);
    }
    lane->role = 1;
    lane->role_wanted = 0;
    lane->disp_exited_clean = d->nowned == 0;
    pthread_cond_broadcast(&lane->waiter_cv);
    pthread_mutex_unlock(&lane->mu);
    ferry__handlers_release(lane);

    ferry__conn_close(d->conn);
    d->conn = NULL;
}

void *ferry__dispatcher_main(void *arg) {
    ferry__thread *t = arg;
    ferry__lane *lane = t->lane;
    ferry__disp *d = &lane->d;
    int64_t renew_every = lane->lock_duration_ms / 2 > 0 ? lane->lock_duration_ms / 2 : 1;
    int64_t now = ferry__mono_ms();
    d->next_stalled = now; /* once at start */
    d->next_renew = now + renew_every;
    int have_role = 0;

    pthread_mutex_lock(&lane->mu);
    for (;;) {
        if (lane->nposted || lane->nposted_dropped) {
            deliver_posted(lane);
            continue;
        }
        if (atomic_load(&lane->abandon)) break;
        int stopping = atomic_load(&lane->stopping);
        now = ferry__mono_ms();
        if (lane->role) {
            /* a handler or the waiter is writing results or fetching. Only this thread
             * writes next_renew / next_stalled, so they can be read without the role. */
            int due = stopping || now >= d->next_renew || now >= d->next_stalled;
            lane->role_wanted = due;
            ferry__cond_wait_until(&lane->disp_cv, &lane->mu, due ? 0 : now + WATCH_MS);
            lane->role_wanted = 0;
            continue;
        }
        lane->role = have_role = 1;
        collect_done(lane);
        if (lane->wake_fetch) {
            lane->wake_fetch = 0;
            d->drained = 0;
            d->block_until = 0;
        }
        ferry__cmd_check_suspect(lane);
        int ok = ferry__cmd_ok(d);
        if (stopping && d->nowned == 0 && (!lane->waiter_busy || !ok || !lane->bclient_id)) break;

        turn tn;
        if (plan_turn(lane, now, stopping, ok, &tn)) {
            pthread_mutex_unlock(&lane->mu);
            run_turn(lane, &tn, now, renew_every);
            pthread_mutex_lock(&lane->mu);
            role_release_locked(lane, 1);
            have_role = 0;
            continue;
        }
        ferry__ready_kick_stale(lane);
        int watch;
        int64_t dl = idle_deadline(lane, now, stopping, ok, &watch);
        have_role = 0;
        sleep_until(lane, dl, watch);
    }
    dispatcher_leave(lane, have_role);
    ferry__thread_exit(t);
    return NULL;
}

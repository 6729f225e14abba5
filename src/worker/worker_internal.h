/* worker_internal.h - state shared by the worker's files:
 *   worker.c    the public handle (a shell around 1..FERRY__MAX_LANES lanes): create,
 *               start, stop, close, free, stats
 *   lane.c      one lane: create, connect, launch its threads, stop, close, free
 *   gate.c      the callback gate shared by the lanes, the monotonic condition wait
 *   diag.c      error reports and notices to their callbacks and to callbacks.log
 *   handlers.c  the handler threads and the ready queue of fetched jobs
 *   dispatch.c  the dispatcher role and its thread loop (owns the command connection):
 *               collects results, one turn = write results and fetch, then timers
 *   command.c   the command connection as a resource: loss, suspicion, reconnect delay
 *   fetch.c     jobs a call fetched: handed to handlers, scheduler iterations produced
 *   settle.c    the answers to written results: done, retried, or given up
 *   timers.c    lock renewal of owned jobs, the stalled-jobs check
 *   batch.c     building and sending the script calls, parsing their replies
 *   waiter.c    the waiter thread (owns the blocking connection): BZPOPMIN on the marker
 *   job.c       ferry_job: accessors, parsing a fetched job, planning its finish
 *   joblog.c    callbacks.job_log records and ferry_job_log_format
 *   wmetrics.c  the worker's Prometheus series (ferry_worker_options.metrics)
 *   link.c      the worker's view of its Redis link (REDIS_LOST / REDIS_RESTORED)
 *   backoff.c   retry delays (built-in and registered strategies)
 *   keep_check.c  ferry_keep_jobs_check (a removeOnComplete/removeOnFail value, checked)
 *   http_classify.c  HTTP status + Retry-After -> outcome (ferry/http_classify.h)
 *
 * Locking: a lane's `mu` guards every field marked [mu] (and its sections so labelled).
 * Fields marked [disp] belong to whichever thread holds the lane's dispatcher role
 * (`role`, see dispatch.c: the dispatcher thread, a handler thread writing results it just
 * produced, or the waiter fetching after a marker), [wait] to the waiter thread, [rq_mu]
 * to the ready queue's lock. The shell's own `mu` guards its start/close state only. */
#ifndef FERRY_WORKER_INTERNAL_H
#define FERRY_WORKER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "envelope/envelope.h"
#include "ferry/metrics.h"
#include "ferry/worker.h"
#include "queue/job_opts.h"
#include "queue/keys.h"
#include "redis/conn.h"
#include "worker/backoff.h"

#define FERRY__POSTED_MAX 8
#define FERRY__MAX_LANES FERRY_WORKER_LANES_MAX
/* lanes = 0: two lanes from this concurrency up, else one (bench/run.sh measurements in
 * docs/worker.md: two lanes gain from concurrency 8, cost at 2 and 4). */
#define FERRY__AUTO_LANES_MIN_CONCURRENCY 8
/* Handlers slower than this on average get a thread each at once (a wake-up is cheap next
 * to them); faster ones are drained by the threads already awake (handlers.c). */
#define FERRY__EAGER_HANDLER_US 50

/* The callback lock of one ferry_worker, shared by its lanes so that their callbacks run
 * one at a time too, and the worker's view of its Redis link as a whole (link.c), which
 * the lanes share for the same reason: one REDIS_LOST / REDIS_RESTORED pair per outage.
 * Reference counted: each lane holds one and drops it when it is destroyed (a lane may
 * outlive the public handle while abandoned threads finish). */
typedef struct ferry__lane ferry__lane;

typedef struct ferry__cbgate {
    pthread_mutex_t mu;
    atomic_int refs;
    /* [mu] connections (of every lane) known lost and not open again yet; an outage is
     * reported (REDIS_LOST sent, REDIS_RESTORED not yet) since down_since (mono ms) */
    int link_nlost;
    int link_down;
    int64_t link_down_since;
    /* Bumped when an outage begins. A connection opened (or checked) at an older epoch is
     * suspect: the server may have closed it meanwhile without its owner noticing, so it
     * is checked before its next use and, if closed, replaced without counting as a loss
     * (else a connection that sat idle through the outage would start a second one). */
    atomic_uint link_epoch;
} ferry__cbgate;

/* What the finish of a job does (decided by ferry__job_plan on the handler thread). */
typedef enum ferry__fin_kind {
    FERRY__FIN_COMPLETE,    /* moveToFinished completed */
    FERRY__FIN_FAIL,        /* moveToFinished failed (final) */
    FERRY__FIN_RETRY_DELAY, /* moveToDelayed (backoff) */
    FERRY__FIN_RETRY_NOW,   /* retryJob */
    FERRY__FIN_RETRY_LATER, /* moveToDelayed without spending an attempt (skipAttempt) */
    FERRY__FIN_THROTTLE,    /* throttleJob: queue limiter + back to the front of wait */
} ferry__fin_kind;

/* Why a job failed, for ferry_jobs_failed_total's reason_class (wmetrics.c): set where the
 * cause is known; FERRY__FC_OUTCOME = from the outcome (FERRY_FAILED: transient, else
 * permanent). */
typedef enum ferry__fail_class {
    FERRY__FC_OUTCOME = 0,
    FERRY__FC_CHECK,          /* ferry_worker_options.check refused the job */
    FERRY__FC_STALLED,        /* stalled more than max_stalled_count times */
    FERRY__FC_MAX_STARTED,    /* started more than max_started_attempts times */
    FERRY__FC_PAYLOAD,        /* data over max_payload_bytes */
    FERRY__FC_DEFERRED,       /* another deferred failure (`defa`) */
    FERRY__FC_RETURN_TOO_BIG, /* return value over FERRY_RETURN_MAX_BYTES */
    FERRY__FC_CHILDREN,       /* completion refused: pending or failed children */
    FERRY__FC_UNSENDABLE,     /* the result could not be sent to Redis */
    FERRY__FC_TRANSIENT,      /* (derived) FERRY_FAILED */
    FERRY__FC_PERMANENT,      /* (derived) FERRY_FAILED_PERMANENT */
    FERRY__FC_COUNT
} ferry__fail_class;

/* ferry_jobs_processed_total's outcome label values. */
typedef enum ferry__wm_outcome {
    FERRY__WM_COMPLETED,
    FERRY__WM_FAILED,
    FERRY__WM_RETRIED,
    FERRY__WM_RETRIED_LATER,
    FERRY__WM_THROTTLED,
    FERRY__WM_LOCK_LOST,
    FERRY__WM_OUTCOMES
} ferry__wm_outcome;

/* Job names whose series a lane keeps at hand (a direct-mapped cache: a name meeting
 * another in its slot takes the slot; the registry still has both). */
#define FERRY__WM_NAMES 64

/* The series of one job name (wmetrics.c). failed[][] is looked up on first use. */
typedef struct ferry__wm_name {
    char *name; /* NULL = empty slot */
    ferry_metrics_counter *processed[FERRY__WM_OUTCOMES];
    ferry_metrics_counter *failed[FERRY__FC_COUNT][2]; /* [class][final] */
    ferry_metrics_histogram *duration;
} ferry__wm_name;

/* A lane's metrics: on = 0 when ferry_worker_options.metrics is NULL (nothing else is
 * set then). Families and per-queue series are set at create and read-only after; the
 * name cache is [disp]. */
typedef struct ferry__wmetrics {
    int on, no_name;
    ferry_metrics_family *processed, *failed, *duration;
    ferry_metrics_histogram *wait, *attempts;
    ferry_metrics_gauge *slots, *busy;
    ferry__wm_name names[FERRY__WM_NAMES];
} ferry__wmetrics;

struct ferry_job {
    struct ferry_job *next; /* link in done / pending / fetched lists */
    ferry__lane *lane;
    /* From the fetch; immutable afterwards (the dispatcher reads id/token for lock
     * renewal while the handler runs). Strings live in the same allocation. */
    const char *id;
    const char *token;
    size_t nfields;
    const char **fname, **fval;
    const char *name, *data, *opts;
    const char *deid, *defa, *stacktrace_prev; /* those fields, or NULL */
    long attempts_made, attempts_started;
    long long timestamp;
    int own_idx;      /* [disp] index in the dispatcher's owned-jobs array */
    int64_t ready_us; /* when it entered the ready queue (ferry__now_us) */

    /* Written by the handler (ferry_job_set_*), then by ferry__job_plan. */
    char *ret;              /* JSON text, owned */
    size_t ret_over;        /* length of a refused return value (> FERRY_RETURN_MAX_BYTES) */
    char *reason;           /* owned */
    char *stack;            /* owned */
    long long req_delay_ms; /* ferry_job_set_delay, clamped */
    int req_delay_set;

    /* Written by the handler thread after the run (read when the result is settled). */
    ferry_outcome outcome;    /* as returned (an invalid value became FAILED_PERMANENT) */
    int ran;                  /* the handler ran (0: failed at fetch without running) */
    unsigned char fail_class; /* a ferry__fail_class (metrics only) */
    int64_t run_us;           /* handler run time */
    /* The envelope of the data (ferry__job_envelope, on the thread about to run or fail the
     * job, before anything reads it): env_done set once parsed; payload owned, NULL when
     * the data is not an envelope (ferry_job_payload returns data then). */
    int env_done;
    ferry__envelope_view env;
    char *payload;
    /* The job's parsed backoff option while ferry__job_plan calls a strategy, else NULL
     * (ferry_backoff_capped reads its delay). */
    const ferry__backoff *cur_backoff;

    /* The finish plan. */
    ferry__fin_kind kind;
    char *value;      /* returnvalue JSON or failedReason, owned */
    char *stacktrace; /* JSON array, owned; NULL = leave the field alone */
    char *too_big;    /* the reason a job over max_payload_bytes fails with, owned */
    long long delay_ms;
    long long attempts; /* opts.attempts */
    ferry__keep_jobs keep;
    int lifo;

    /* [disp] bookkeeping */
    int lock_lost;  /* already reported as lost */
    int send_tries; /* finish calls answered with a script error */
    int resent;     /* finish sent again (broken connection, script error) */
    /* Monotonic ms taken before sending the call that last wrote its lock (the fetch or a
     * renewal): until lock_ms + lock_duration the lock cannot have expired, so a refusal of a
     * resent finish for a missing or foreign lock means the first send was written. */
    int64_t lock_ms;
};

typedef struct ferry__thread {
    ferry__lane *lane;
    pthread_t tid;
    int started;
    int exited; /* [mu] */
} ferry__thread;

/* Dispatcher-private state. */
typedef struct ferry__disp {
    ferry_conn *conn;
    ferry_job **owned; /* jobs fetched and not yet finished (capacity 2 * concurrency) */
    int nowned;
    ferry_job *pending, *pending_tail; /* results waiting to be written */
    size_t npending;
    int64_t pending_since_us; /* when `pending` last became non-empty */
    int free_slots;           /* concurrency - jobs queued or running in handlers */
    unsigned long long token_counter;
    int drained;           /* last fetch found nothing */
    long long block_until; /* next delayed due time (wall ms) or 0 */
    int64_t limit_until;   /* mono ms: no fetch before (rate limited) */
    int64_t next_renew, next_stalled, reconnect_at, retry_at, last_unblock;
    int one_result;  /* the last call was refused as too big: one result per call */
    int64_t last_io; /* mono ms of the last batch call (idle connections are checked) */
    int reconnect_failures;
    int reported_broken;
    int link_counted;    /* this connection is counted in cbg->link_nlost (link.c) */
    unsigned conn_epoch; /* cbg->link_epoch when the connection was opened or checked */
} ferry__disp;

/* The Redis keys a lane uses, "<prefix>:<queue>:<suffix>": built once at create in a
 * single allocation (`block`, which every pointer points into), read-only afterwards. */
typedef struct ferry__lane_keys {
    const char *wait, *active, *prioritized, *events, *limiter, *delayed, *meta, *pc, *marker,
        *stalled, *completed, *failed, *stalled_check, *repeat, *metrics_completed, *metrics_failed;
    char *block;
} ferry__lane_keys;

/* The scripts a lane calls (the embedded registry's, not owned). */
typedef struct ferry__lane_scripts {
    const ferry_script *fetch, *finish, *delay, *retry, *extend, *stalled, *throttle;
} ferry__lane_scripts;

/* One lane: a complete worker of the queue with its own two connections, dispatcher,
 * waiter and share of the handler threads (lane.c). Every internal function of the worker
 * takes a lane. The configuration is each lane's own copy (not a pointer into the shell):
 * a lane abandoned by a timed-out close outlives the public handle until its last thread
 * leaves. */
struct ferry__lane {
    /* ---- set at create, read-only after start ------------------------------------- */
    ferry__keys keys;
    char *queue;
    ferry_redis_options redis; /* deep copy (its connect timeout is cut while connecting,
                                  before any thread of the lane runs) */
    char *name;                /* NULL = none */
    int concurrency, lock_duration_ms, stalled_interval_ms, max_stalled_count;
    int max_started_attempts, drain_delay_ms, fetch_batch;
    size_t max_payload_bytes;             /* 0 = none */
    int limiter_max, limiter_duration_ms; /* 0 = no worker limiter */
    long bullmq_metrics_max_points;       /* 0 = BullMQ metrics keys not written */
    ferry__backoff_custom *backoffs;      /* registered strategies, owned */
    size_t nbackoffs;
    ferry__keep_jobs keep_complete, keep_fail;
    ferry_worker_callbacks cb;
    void *cb_ud;
    ferry_handler_fn handler;
    void *handler_ud;
    /* ferry_worker_options.check / .final_failure and their userdata */
    int (*check)(const ferry_job *, char *, size_t, void *);
    void *check_ud;
    void (*final_failure)(const ferry_job *, const char *, void *);
    void *final_ud;
    char token_prefix[48]; /* "<uuid>:" */
    char *client_name;     /* blocking connection name */
    /* lanes after the first leave their blocking connection unnamed, so Node's
     * Queue.getWorkers() lists a worker once, as it lists a Node Worker (one blocking
     * connection each): NULL = unnamed, else client_name */
    const char *bconn_name;
    ferry__lane_keys key;
    ferry__lane_scripts script;
    /* write this many results without waiting for the rest of a batch (0 = never): at
     * high concurrency the handlers then run one half while Redis works on the other */
    int split_at;
    /* server features, probed at start before the threads run */
    double min_block_s; /* smallest BZPOPMIN timeout the server accepts usefully */
    int pop_many;       /* server has RPOP with a count (>= 6.2): fetch pops in one call */
    int whole_second_block;

    /* Held while a user callback runs; close takes it to set `abandon`, so no callback runs
     * after ferry_worker_close returns (see ferry__cb_enter, gate.c). Shared by the lanes
     * of one worker. */
    ferry__cbgate *cbg;
    ferry__wmetrics m; /* Prometheus series (wmetrics.c) */

    /* ---- guarded by mu ------------------------------------------------------------- */
    pthread_mutex_t mu;
    pthread_cond_t disp_cv, waiter_cv, exit_cv;
    int role;              /* a thread acts as dispatcher (owns `d` and the command connection) */
    int role_wanted;       /* the dispatcher thread waits for the role */
    int disp_exited_clean; /* every owned job was written or given up before leaving */
    int wait_req;          /* dispatcher asks the waiter to block */
    long long wait_block_until;
    int waiter_busy;                       /* waiter is between a request and its answer */
    int wake_fetch;                        /* waiter says: try a fetch */
    long long bclient_id;                  /* CLIENT ID of the blocking connection, 0 unknown */
    ferry_error posted[FERRY__POSTED_MAX]; /* error reports from the waiter */
    int nposted;
    unsigned long nposted_dropped;
    ferry_worker_stats stats;
    int refs; /* the handle + live threads; the last one frees */

    /* ---- set at launch, before the lane's threads run (their `exited` is [mu]) ------ */
    ferry__thread *threads; /* [0] dispatcher, [1] waiter, [2..] handlers */
    int nthreads;

    /* ---- atomics, any thread ------------------------------------------------------- */
    atomic_int stopping;       /* stop fetching (ferry_worker_stop / close) */
    atomic_int abandon;        /* close deadline passed: every thread leaves at once */
    atomic_int ndone;          /* results pushed on `done` and not collected yet */
    atomic_int handler_ns;     /* moving average of handler run time, ns (<= 1 s) */
    _Atomic(ferry_job *) done; /* handled jobs (lock-free stack, newest first) */
    atomic_int busy;           /* handlers running now */
    atomic_int disp_sleeping;  /* dispatcher waits on disp_cv (set/cleared under mu) */
    atomic_int disp_watching;  /* ... with a deadline of at most WATCH_MS (dispatch.c) */

    /* ---- guarded by rq_mu: the ready queue of fetched jobs waiting for a handler ---- */
    /* Waking a thread costs more than a fast handler, so sleepers are woken only when the
     * jobs need them (see handlers.c: handler_wanted): always for slow handlers, for fast
     * ones only when the queue is longer than the awake threads drain quickly or a job has
     * waited a while. */
    pthread_mutex_t rq_mu;
    pthread_cond_t rq_cv;
    ferry_job *rq_head, *rq_tail; /* [rq_mu] */
    int rq_sleepers;              /* [rq_mu] */
    int rq_exit;                  /* [rq_mu] handlers leave once the queue is empty */
    atomic_int rq_len;            /* jobs in the ready queue (written under rq_mu) */

    /* ---- owned by the thread holding the dispatcher role --------------------------- */
    ferry__disp d; /* [disp] */

    /* ---- owned by the waiter thread ------------------------------------------------ */
    ferry_conn *bconn;    /* [wait] blocking connection */
    int bconn_counted;    /* [wait] counted in cbg->link_nlost, as d.link_counted */
    unsigned bconn_epoch; /* [wait] as d.conn_epoch */
};

/* The public handle: a shell around 1..FERRY__MAX_LANES lanes (worker.c). The public
 * functions act on every lane; start connects every lane before any lane starts a thread,
 * close gives all lanes one deadline. */
struct ferry_worker {
    /* ---- set at create, read-only after -------------------------------------------- */
    int nlanes; /* >= 1 */
    ferry__lane *lanes[FERRY__MAX_LANES];

    /* ---- guarded by mu ------------------------------------------------------------- */
    pthread_mutex_t mu;
    int started, closed;
    int close_rc; /* what the first ferry_worker_close returned: later calls repeat it
                     (a timed-out close left handlers running that may still use userdata) */
    /* start got past connecting and launches threads / start was called off before that
     * (ferry_worker_abort_start) */
    int launching, start_aborted;
    /* the lanes' concurrency is counted in ferry_worker_slots (from a successful start to
     * close) */
    int slots_counted;
};

/* ---- job.c ---------------------------------------------------------------------- */

/* Build a job from a fetched id + HGETALL reply, with its lock token. NULL on ENOMEM or
 * a malformed reply. Free with ferry__job_free. */
ferry_job *ferry__job_from_reply(ferry__lane *lane, const redisReply *id, const redisReply *hash,
                                 const char *token);
void ferry__job_free(ferry_job *j);

/* Reason to fail a freshly fetched job without running it (deferred failure `defa`,
 * maxStartedAttempts exceeded, data over max_payload_bytes), or NULL. Borrowed from the job
 * or static. */
const char *ferry__job_unrunnable(ferry_job *j);

/* The last job opts text a thread parsed and its parse (one per handler thread). */
typedef struct ferry__opts_cache {
    char *text;           /* malloc'd; NULL = empty */
    ferry__job_opts opts; /* owned */
} ferry__opts_cache;
void ferry__opts_cache_free(ferry__opts_cache *c); /* empties it; NULL accepted */

/* Decide the finish of a handled job from its outcome: completed -> returnvalue; failed ->
 * failedReason + stacktrace, retry with backoff while attempts remain (FERRY_FAILED only).
 * Fills kind/value/stacktrace/delay/keep/attempts/lifo. Never fails: on ENOMEM it degrades
 * to a final failure with an empty reason. `cache` (the calling thread's own, or NULL)
 * spares parsing the same opts text again. */
void ferry__job_plan(ferry_job *j, ferry_outcome outcome, ferry__opts_cache *cache);
/* Re-plan a job whose finish call could not be sent at all (request too big, `why`): a
 * final failure saying so, leaving the stored stacktrace alone. Never fails (ENOMEM: an
 * empty reason). Dispatcher only. */
void ferry__job_plan_unsendable(ferry_job *j, const char *why);
/* A completion refused because the job has pending (-4) or failed (-9) children: re-plan
 * it as Node's worker does, a failure with BullMQ's error text (-4: "Job <id> has pending
 * dependencies. moveToFinished", retried by its backoff while attempts remain; -9: "Cannot
 * complete job <id> because it has at least one failed child. moveToFinished", an
 * UnrecoverableError, final). Returns 1 when re-planned, 0 for any other job or code.
 * Never fails (ENOMEM: reason "failed"). Dispatcher only; may call a custom backoff
 * strategy (under the callback lock). */
int ferry__job_plan_refused(ferry_job *j, int code);

/* The job's backoff.delay (ms, 0 when none): from the option being planned when called
 * from a strategy, else parsed from the stored opts. */
long long ferry__job_backoff_delay(const ferry_job *j);

/* JSON string literal for s[0..n) (quotes added; invalid UTF-8 bytes become U+FFFD).
 * malloc'd, NULL on ENOMEM (job.c). */
char *ferry__json_quote(const char *s, size_t n);

/* ---- joblog.c ------------------------------------------------------------------- */

/* ---- envelope_view.c -------------------------------------------------------------- */

/* Parse the job's data as an envelope once (envelope/envelope.h), for the accessors
 * ferry_job_event_id / _trace_id / _payload and the job log's trace id. Called on the
 * thread about to run (or fail without running) the job, before anything reads j->env.
 * Returns 0, or FERRY_ENOMEM when the payload could not be copied (env_done stays 0). */
int ferry__job_envelope(ferry_job *j);

/* Room for the reason a check writes (ferry_worker_options.check: at least 256). */
#define FERRY__CHECK_REASON_MAX 1024

/* Call callbacks.job_log (if set) for a settled job: `outcome` is one of the names in
 * ferry_job_log. Runs the callback under ferry__cb_enter. */
void ferry__job_log_emit(ferry__lane *lane, const ferry_job *j, const char *outcome);

/* ---- wmetrics.c ------------------------------------------------------------------ */

/* Register (or find) the worker's families in reg and look up the per-queue series of
 * `queue` into *m; reg NULL leaves m off. 0, or FERRY_EINVAL / FERRY_ENOMEM (a family
 * registered by someone else with another kind; out of memory). */
int ferry__wm_init(ferry__wmetrics *m, ferry_metrics *reg, const char *queue, int no_name,
                   ferry_error *err);
void ferry__wm_free(ferry__wmetrics *m);
/* A settled job (its finish written, or given up as lock-lost): the counters and
 * histograms of its outcome. [disp] */
void ferry__wm_settled(ferry__lane *lane, const ferry_job *j, ferry__wm_outcome oc);

/* ---- batch.c -------------------------------------------------------------------- */

typedef struct ferry__batch_result {
    ferry_job *fetched, *fetched_tail; /* new jobs, in fetch order */
    long long rate_limit_ttl;          /* the fetch met an exhausted limiter (also with jobs) */
    long long throttle_ttl;            /* limiter TTL answered by throttleJob calls (max) */
    long long next_delayed;
    int fetch_sent; /* a fetch was part of the call */
    int has_script_error;
    ferry_error script_error; /* first script error of the call (text for callbacks.error) */
} ferry__batch_result;

/* How many pending results, from the head of d->pending, the next call carries: at most
 * 64 MiB of them (always at least one), or one after a call was refused as too big
 * (d->one_result). Dispatcher only. */
size_t ferry__batch_take(const ferry__disp *d);

#define FERRY__CODE_SCRIPT_ERROR (-1000)
/* One round trip on the command connection: retries for the RETRY_* jobs, then
 * moveToFinished for the COMPLETE/FAIL jobs (chunked) fetching up to `fetch_n` jobs, or
 * moveToActive when there is nothing to finish. codes[i] receives the script answer for
 * jobs[i] (0 or negative; FERRY__CODE_SCRIPT_ERROR when its script failed). Returns 0, or a
 * transport error (connection broken: nothing is known about the jobs). */
int ferry__batch_run(ferry__lane *lane, ferry_job **jobs, size_t njobs, int fetch_n, int *codes,
                     ferry__batch_result *res, ferry_error *err);

/* extendLocks for the given jobs; *lost receives a malloc'd array of indexes (into jobs)
 * whose lock was lost, *nlost its length. 0 or a ferry_err (script error = FERRY_EREDIS). */
int ferry__batch_extend_locks(ferry__lane *lane, ferry_job **jobs, size_t n, size_t **lost,
                              size_t *nlost, ferry_error *err);

/* moveStalledJobsToWait. *reply receives the hiredis reply (array of ids), caller frees. */
int ferry__batch_stalled_check(ferry__lane *lane, redisReply **reply, ferry_error *err);

/* ---- owned jobs and pending results (the role's bookkeeping, inline: per job) ------- */

/* A fetched job now owned by the lane (renewed, settled later). [disp] */
static inline void ferry__own_add(ferry__lane *lane, ferry_job *j) {
    ferry__disp *d = &lane->d;
    if (d->nowned >= 2 * lane->concurrency) { /* prevented by ferry__fetch_size's bound */
        j->own_idx = -1;
        return;
    }
    j->own_idx = d->nowned;
    d->owned[d->nowned++] = j;
}

static inline void ferry__own_remove(ferry__disp *d, ferry_job *j) {
    int i = j->own_idx;
    if (i < 0 || i >= d->nowned || d->owned[i] != j) return;
    ferry_job *last = d->owned[--d->nowned];
    d->owned[i] = last;
    last->own_idx = i;
    j->own_idx = -1;
}

/* A result to write with the next call. [disp] */
static inline void ferry__pending_append(ferry__disp *d, ferry_job *j) {
    j->next = NULL;
    if (d->pending_tail)
        d->pending_tail->next = j;
    else
        d->pending = j;
    d->pending_tail = j;
    d->npending++;
}

/* Results refused for now (script error, out of memory) are sent again after this. */
#define FERRY__SCRIPT_ERROR_DELAY_MS 1000

/* ---- command.c: the lane's command connection ([disp]) ----------------------------- */

/* Usable: open and not known broken. */
static inline int ferry__cmd_ok(const ferry__disp *d) {
    return d->conn && !ferry__conn_broken(d->conn);
}
/* Lost (e: why): reported once per outage of this connection, closed, counted in the
 * link state, a reconnect due at once. */
void ferry__cmd_lost(ferry__lane *lane, const ferry_error *e);
/* At the start of a turn: a connection that predates an outage (link.c) and that the
 * server closed meanwhile is replaced before anything is sent on it, without counting as
 * a loss; one still open is kept. */
void ferry__cmd_check_suspect(ferry__lane *lane);
/* One reconnect attempt; on failure the next is scheduled with backoff. 0 or the error. */
int ferry__cmd_reconnect(ferry__lane *lane);
/* Whether rc (from a call over c) means the connection failed under the call. */
int ferry__cmd_transport_error(const ferry_conn *c, int rc);

/* ---- fetch.c / settle.c / timers.c (the role's work; [disp]) ----------------------- */

/* How many jobs a fetch may ask for now: free slots, at most fetch_batch, never more than
 * the owned-jobs array holds. */
int ferry__fetch_size(const ferry__lane *lane);
/* After a call that went through: the rate limit it met, the drained state, scheduler
 * iterations for the fetched jobs, and the jobs handed out (one kept in *mine when mine
 * is given, see ferry__lead). */
void ferry__fetch_after_call(ferry__lane *lane, const ferry__batch_result *res, int fetch_n,
                             int64_t sent_ms, ferry_job **mine);
/* Settle the answers (codes[i] for jobs[i]) of a call that went through: callbacks,
 * stats, job log; jobs done with are freed, the others pending again. */
void ferry__settle_written(ferry__lane *lane, ferry_job **jobs, size_t n, const int *codes,
                           const ferry__batch_result *res);
/* A call that failed as a whole (rc, e): every result pending again (as possibly written),
 * the connection given up if broken, else a retry after FERRY__SCRIPT_ERROR_DELAY_MS from
 * sent_at_ms. */
void ferry__settle_unsent(ferry__lane *lane, ferry_job **jobs, size_t n, int rc,
                          const ferry_error *e, int64_t sent_at_ms);
/* Renew every owned job's lock (jobs whose renewal was refused are reported lost). */
void ferry__timers_renew_locks(ferry__lane *lane);
/* moveStalledJobsToWait; callbacks.stalled per job moved. */
void ferry__timers_check_stalled(ferry__lane *lane);

/* callbacks.error with a message built from fmt and escaped (ferryx_printable) so it is
 * one line of text; under the callback gate. Any thread that may run callbacks (gate.c). */
void ferry__lane_report(ferry__lane *lane, int code, const char *fmt, ...) FERRY_PRINTF(3, 4);

/* ---- gate.c / lane.c -------------------------------------------------------------- */

/* A callback gate with one reference (the caller's); drop accepts NULL, the last drop
 * frees. */
ferry__cbgate *ferry__cbgate_new(void);
void ferry__cbgate_drop(ferry__cbgate *g);

/* One lane: the options already validated by ferry_worker_create, `concurrency` its share
 * of the handler threads, `cbg` the worker's callback gate (a reference is taken). The
 * lane holds one reference for the handle: ferry__lane_release drops it. */
int ferry__lane_create(const char *queue, const ferry_worker_options *opts, int concurrency,
                       ferry__cbgate *cbg, ferry_handler_fn handler, void *handler_userdata,
                       ferry__lane **out, ferry_error *err);
/* Open a lane's two connections and probe the server, all cut to `deadline` (mono ms; 0 =
 * none). Nothing stays open on failure. No thread of the lane runs yet. */
int ferry__lane_connect(ferry__lane *lane, long long deadline, ferry_error *err);
void ferry__lane_disconnect(ferry__lane *lane);
/* Start a connected lane's threads. On failure the lane is closed again and may only be
 * freed. */
int ferry__lane_launch(ferry__lane *lane, ferry_error *err);
/* Stop fetching (the threads finish what they hold). Any thread. */
void ferry__lane_stop(ferry__lane *lane);
/* Stop, then wait for the lane's threads until deadline_ms from now; threads still
 * running then are abandoned (no callback runs after the return) and detached. 0 when
 * every thread left cleanly, else FERRY_ETIMEDOUT. 0 at once for a lane never launched. */
int ferry__lane_close(ferry__lane *lane, int deadline_ms);
/* Drop the handle's reference (the last reference frees the lane). NULL accepted. */
void ferry__lane_release(ferry__lane *lane);
void ferry__lane_get_stats(ferry__lane *lane, ferry_worker_stats *out);

/* ---- dispatch.c / waiter.c / handlers.c -------------------------------------------- */

/* Thread entry points (dispatch.c, waiter.c, handlers.c). `arg` is the thread's
 * ferry__thread, which holds a reference on its worker (lane); each drops it with
 * ferry__thread_exit when it leaves. */
void *ferry__dispatcher_main(void *arg);
void *ferry__waiter_main(void *arg);
void *ferry__handler_main(void *arg);

/* Static texts for messages and job logs about finishes (job.c); never NULL, not freed.
 * code_text: a finish script's negative code; kind_text: "completion", "failure", ...;
 * log_outcome: the callbacks.job_log outcome of a job whose finish was written. */
const char *ferry__fin_code_text(int code);
const char *ferry__fin_kind_text(ferry__fin_kind k);
const char *ferry__fin_log_outcome(const ferry_job *j);

/* Monotonic clock in microseconds (vDSO; cheap enough to call per job). */
static inline int64_t ferry__now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Called by a handler thread right after it pushed a result, and by the waiter after a
 * marker: if nobody holds the dispatcher role, take it and write the pending results and
 * fetch for the free slots in one round trip (what the dispatcher thread would do, without
 * waking it). With keep_one, one fetched job is returned for the caller to run itself
 * instead of going through the ready queue; NULL when none. Never blocks on the role. */
ferry_job *ferry__lead(ferry__lane *lane, int keep_one);

/* Make sure the dispatcher thread looks again within WATCH_MS: called when a result or a
 * queued job was left for later (more completions were imminent), so neither can be held
 * longer than that if the handlers turn out slow. Cheap when it already watches. */
void ferry__watch(ferry__lane *lane);

/* Wake one sleeping handler if the oldest queued job waited WATCH_MS or more. */
void ferry__ready_kick_stale(ferry__lane *lane);
/* Wake one sleeping handler if jobs are queued: called before a thread that may be the
 * only one draining the queue blocks on Redis. */
void ferry__ready_help(ferry__lane *lane);

/* Queue an error report for callbacks.error from a thread other than the dispatcher
 * (callbacks run on the dispatcher thread only; it delivers queued reports on its next
 * turn). At most FERRY__POSTED_MAX are kept; later ones are counted and summarised. */
void ferry__lane_post_error(ferry__lane *lane, const ferry_error *e);

/* diag.c - deliver an error report (callbacks.error, then callbacks.log) or a notice
 * (callbacks.notice, then callbacks.log). Called under ferry__cb_enter. The wants_ tests
 * say whether anyone listens, before a message is built. */
int ferry__wants_errors(const ferry__lane *lane);
int ferry__wants_notices(const ferry__lane *lane);
void ferry__deliver_error(ferry__lane *lane, const ferry_error *e);
void ferry__deliver_notice(ferry__lane *lane, const ferry_worker_notice *n);

/* Tell the handler threads to leave once the ready queue is empty (or at once when the
 * worker is abandoned). */
void ferry__handlers_release(ferry__lane *lane);
/* Append jobs (a NULL-terminated list linked by next) to the ready queue. `pusher_runs`:
 * the caller is a handler thread that takes jobs from the queue after its own (so for fast
 * handlers no other thread needs waking); otherwise at least one sleeper is woken. */
void ferry__ready_push(ferry__lane *lane, ferry_job *head, ferry_job *tail, int n, int pusher_runs);

/* Thread bookkeeping: mark *t exited, drop its reference, free the lane if last. */
void ferry__thread_exit(ferry__thread *t);

/* Bracket every user callback: enter returns 0 (and holds cbg->mu) when callbacks may still
 * run, -1 once the worker was abandoned by close (nothing held). */
int ferry__cb_enter(ferry__lane *lane);
void ferry__cb_leave(ferry__lane *lane);

/* Timed wait on cv (CLOCK_MONOTONIC deadline in ms; <= 0 = wait without timeout). */
void ferry__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_mono_ms);

/* ---- link.c ---------------------------------------------------------------------- */

/* A connection of `lane`, not counted yet (*counted = 0), was found lost (e: why) or could
 * not be renewed: count it (*counted = 1) and, if it is the first of an outage, bump the
 * epoch and send REDIS_LOST. Any worker thread, holding no worker lock. */
void ferry__link_lost(ferry__lane *lane, int *counted, const ferry_error *e);
/* A connection is open: record the epoch it belongs to in *epoch and, if it was counted,
 * uncount it; the last one back ends the outage (REDIS_RESTORED). `epoch_at_open` is
 * ferry__link_epoch() read before the connection was opened. */
void ferry__link_back(ferry__lane *lane, int *counted, unsigned *epoch, unsigned epoch_at_open);
/* The current outage epoch. */
unsigned ferry__link_epoch(const ferry__lane *lane);
/* Whether a connection opened at `epoch` must be checked before use (an outage began
 * since). */
int ferry__link_suspect(const ferry__lane *lane, unsigned epoch);
/* At start, on the calling thread: read the maxmemory policy over c (the lane's command
 * connection) and send FERRY_NOTICE_EVICTION_POLICY if it may evict jobs. */
void ferry__link_check_eviction(ferry__lane *lane, ferry_conn *c);
/* ferryx_printable copy of the queue name for messages (cut to fit out[cap]). */
const char *ferry__lane_queue_shown(const ferry__lane *lane, char *out, size_t cap);

#endif

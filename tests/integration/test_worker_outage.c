/* test_worker_outage.c - workers against a Redis that crashes or goes away, with the
 * fixture's real server (append-only file on, see scripts/testenv.sh):
 *  - kill -9 of redis-server mid-run (appendfsync always) and a restart: the worker
 *    reconnects by itself, every job ends completed, none is lost, an acknowledged
 *    completion is never run again, and only jobs the worker held at the crash may run twice;
 *  - Redis stopped for 30 s mid-run: the worker keeps retrying (capped backoff), fetches
 *    nothing it does not hold, and resumes within seconds of the restart; no job is lost;
 *  - graceful close while Redis is down stays bounded (busy and idle worker) and leaves no
 *    thread behind; a producer fails fast naming host:port, and recovers afterwards;
 *  - the CLI exec worker exits promptly on SIGTERM while Redis is down.
 * The crash is set off by the run of one job (so it lands mid-run on any machine) and sent
 * by a separate thread a random 0-1.5 ms later: it may hit Redis between two calls of the
 * worker or in the middle of one (a reply lost after the write was done).
 * Every test leaves Redis running (teardown starts it again even after a failure). */
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include "support/cli.h"
#include "support/wt.h"

#define N_JOBS 300
#define CONC 4
#define BATCH 4
#define HANDLER_MS 2    /* the work of one job */
#define CRASH_AT_JOB 60 /* the run of this job sets off the crash / stop of Redis */
/* Short locks so that jobs whose fetch reply was lost in the crash are recovered as stalled
 * within seconds (BullMQ semantics: lock expiry + stalled check), not after 30 s. */
#define LOCK_MS 5000
#define STALLED_MS 1000
#define OUTAGE_MS 30000
#define RESUME_MAX_MS 15000 /* generous; the reconnect backoff is capped at 5 s */
#define CLOSE_DEADLINE_MS 2000
#define CLOSE_MARGIN_MS 3000

/* ---- state shared with worker threads (file scope: a failed test longjmps away) ------- */

static wt T;
static int t_live;
static ferry_worker *W;
static wt_hctx H;
static pid_t cli_pid;

typedef struct runlog {
    pthread_mutex_t mu;
    int runs[N_JOBS + 1];      /* handler runs per job id */
    int acked[N_JOBS + 1];     /* completed callbacks (Redis acknowledged the completion) */
    int ack_epoch[N_JOBS + 1]; /* epoch of the first acknowledgement */
    int epoch;                 /* 0 before Redis died, 1 after */
    int total, bad;            /* all runs; runs of ids outside 1..N_JOBS */
    int crash_sig;             /* signal the killer sends to Redis at CRASH_AT_JOB (0 = none) */
    int crash_delay_us;
    pid_t redis_pid;
    int crashed;       /* CRASH_AT_JOB has started: the killer goes */
    pthread_cond_t cv; /* signals `crashed` (and teardown) to the killer */
    pthread_t killer;
    int killer_live;
} runlog;
static runlog R = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* What the worker reported through its error callback. */
typedef struct errlog {
    pthread_mutex_t mu;
    int lost; /* "connection lost" (command or blocking connection) */
    int reconnect_failed;
    int max_attempt; /* highest "reconnect attempt N failed" seen */
    char first_lost[FERRY_ERROR_MESSAGE_MAX];
} errlog;
static errlog E = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int64_t mono(void) {
    return ferry__mono_ms();
}

static int locked_int(pthread_mutex_t *mu, const int *v) {
    pthread_mutex_lock(mu);
    int x = *v;
    pthread_mutex_unlock(mu);
    return x;
}

/* ---- the fixture's Redis ------------------------------------------------------------- */

static const char *endpoint(void) {
    static char ep[64];
    snprintf(ep, sizeof ep, "127.0.0.1:%s", th_env_require("REDIS_PORT"));
    return ep;
}

/* The test's own connection does not survive a restart. */
static void reopen_conn(void) {
    ferry__conn_close(T.c);
    T.c = NULL; /* teardown closes it: never twice if the connect fails */
    T.c = th_conn();
}

static void require_aof(void) {
    redisReply *r = wt_cmd(&T, "CONFIG GET appendonly");
    int on = r->elements == 2 && !strcmp(r->element[1]->str, "yes");
    freeReplyObject(r);
    if (!on) fail_msg("the fixture's Redis runs without appendonly (scripts/testenv.sh)");
}

/* Threads of this process (/proc/self/status), to prove a close left none behind. */
static int thread_count(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) fail_msg("cannot read /proc/self/status");
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1) break;
    fclose(f);
    return n;
}

static int threads_back_to(void *arg) {
    return thread_count() <= *(int *)arg;
}

/* ---- callbacks and handlers ---------------------------------------------------------- */

static void on_error(const ferry_error *e, void *ud) {
    wt_cb_error(e, ud);
    pthread_mutex_lock(&E.mu);
    if (strstr(e->message, "connection lost") || strstr(e->message, "blocking connection: lost")) {
        if (!E.lost++) snprintf(E.first_lost, sizeof E.first_lost, "%s", e->message);
    }
    const char *a = strstr(e->message, "reconnect attempt ");
    if (a) {
        E.reconnect_failed++;
        int n = atoi(a + strlen("reconnect attempt "));
        if (n > E.max_attempt) E.max_attempt = n;
    }
    pthread_mutex_unlock(&E.mu);
}

static long job_num(const ferry_job *job) {
    char *end = NULL;
    long id = strtol(ferry_job_id(job), &end, 10);
    return *end == 0 && id >= 1 && id <= N_JOBS ? id : 0;
}

static void on_completed(const ferry_job *job, const char *rv, void *ud) {
    wt_cb_completed(job, rv, ud);
    long id = job_num(job);
    pthread_mutex_lock(&R.mu);
    if (id && R.acked[id]++ == 0) R.ack_epoch[id] = R.epoch;
    pthread_mutex_unlock(&R.mu);
}

/* The killer: waits for CRASH_AT_JOB to start, then signals Redis after the delay, while
 * the worker goes on (asynchronous to its calls). Ends without a signal when disarmed. */
static void *killer_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&R.mu);
    while (!R.crashed && R.crash_sig)
        pthread_cond_wait(&R.cv, &R.mu);
    int sig = R.crash_sig, delay = R.crash_delay_us;
    pid_t pid = R.redis_pid;
    pthread_mutex_unlock(&R.mu);
    if (!sig) return NULL;
    struct timespec ts = {0, delay * 1000L};
    nanosleep(&ts, NULL);
    kill(pid, sig);
    return NULL;
}

/* Arm the crash: Redis gets `sig` shortly after CRASH_AT_JOB starts. */
static void arm_crash(int sig) {
    pthread_mutex_lock(&R.mu);
    R.redis_pid = th_redis_pid();
    R.crash_sig = sig;
    R.crash_delay_us = rand() % 1500;
    pthread_mutex_unlock(&R.mu);
    if (pthread_create(&R.killer, NULL, killer_main, NULL) != 0) fail_msg("cannot start killer");
    R.killer_live = 1;
}

static void disarm_crash(void) {
    pthread_mutex_lock(&R.mu);
    if (!R.crashed) R.crash_sig = 0;
    pthread_cond_broadcast(&R.cv);
    pthread_mutex_unlock(&R.mu);
    if (R.killer_live) pthread_join(R.killer, NULL);
    R.killer_live = 0;
}

/* Records the run, sets off the crash at CRASH_AT_JOB, works HANDLER_MS, returns
 * "ok-<id>". */
static ferry_outcome work(ferry_job *job, void *ud) {
    (void)ud;
    long id = job_num(job);
    pthread_mutex_lock(&R.mu);
    R.total++;
    if (id)
        R.runs[id]++;
    else
        R.bad++;
    if (id == CRASH_AT_JOB && R.crash_sig && !R.crashed) {
        R.crashed = 1;
        pthread_cond_signal(&R.cv);
    }
    pthread_mutex_unlock(&R.mu);
    th_sleep_ms(HANDLER_MS);
    char rv[32];
    snprintf(rv, sizeof rv, "\"ok-%ld\"", id);
    ferry_job_set_return(job, rv);
    return FERRY_COMPLETED;
}

static ferry_outcome gate_handler(ferry_job *job, void *ud) {
    wt_hctx *h = ud;
    wt_hctx_count_run(h);
    if (!strcmp(ferry_job_name(job), "gate")) wt_gate_pass(&h->g);
    ferry_job_set_return(job, "\"done\"");
    return FERRY_COMPLETED;
}

/* lock_ms / stalled_ms 0 = the defaults (30 s). */
static ferry_worker *start_worker(ferry_handler_fn fn, void *ud, int lock_ms, int stalled_ms) {
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&T, &o, &ro);
    o.concurrency = CONC;
    o.fetch_batch = BATCH;
    o.lock_duration_ms = lock_ms;
    o.stalled_interval_ms = stalled_ms;
    o.callbacks.error = on_error;
    o.callbacks.completed = on_completed;
    return wt_start(&o, fn, ud);
}

/* ---- wait conditions ----------------------------------------------------------------- */

static int redis_crashed(void *arg) {
    (void)arg;
    return locked_int(&R.mu, &R.crashed);
}

static int lost_seen(void *arg) {
    (void)arg;
    return locked_int(&E.mu, &E.lost) > 0;
}

static int runs_above(void *arg) {
    return locked_int(&R.mu, &R.total) > *(int *)arg;
}

static void wait_or_fail(int (*cond)(void *), void *arg, int ms, const char *what) {
    if (!th_wait_until(cond, arg, ms)) fail_msg("timed out (%d ms) waiting for %s", ms, what);
}

/* ---- setup / teardown ---------------------------------------------------------------- */

static int setup(void **state) {
    (void)state;
    pthread_mutex_lock(&R.mu);
    memset(R.runs, 0, sizeof R.runs);
    memset(R.acked, 0, sizeof R.acked);
    memset(R.ack_epoch, 0, sizeof R.ack_epoch);
    R.epoch = R.total = R.bad = R.crash_sig = R.crash_delay_us = R.crashed = 0;
    R.redis_pid = 0;
    pthread_mutex_unlock(&R.mu);
    pthread_mutex_lock(&E.mu);
    E.lost = E.reconnect_failed = E.max_attempt = 0;
    E.first_lost[0] = 0;
    pthread_mutex_unlock(&E.mu);
    wt_hctx_init(&H);
    t_live = 1; /* wt_init zeroes T first: teardown may finish what it started */
    wt_init(&T);
    return 0;
}

/* Whatever happened, leave no worker or child behind and Redis running (later tests and
 * test files need it), with the configured fsync policy. */
static int teardown(void **state) {
    (void)state;
    disarm_crash();
    wt_gate_open(&H.g);
    if (cli_pid > 0) {
        kill(cli_pid, SIGKILL);
        waitpid(cli_pid, NULL, 0);
        cli_pid = 0;
    }
    int up = th_redis_ctl_rc("start") == 0;
    if (W) {
        ferry_worker_close(W, 10000);
        ferry_worker_free(W);
        W = NULL;
    }
    if (t_live) {
        ferry_conn *c = NULL;
        ferry_redis_options o;
        ferry_redis_options_init(&o);
        o.url = th_env_require("REDIS_URL");
        ferry_error e = {0};
        if (ferry__conn_open(&o, NULL, &c, &e) == 0) {
            redisReply *r = NULL;
            if (ferry__conn_command(c, &r, &e, "CONFIG SET appendfsync everysec") == 0)
                freeReplyObject(r);
            if (ferry__conn_command(c, &r, &e, "CONFIG SET maxmemory-policy noeviction") == 0)
                freeReplyObject(r);
            ferry__conn_close(c);
        }
        wt_fini(&T);
        t_live = 0;
    }
    return up ? 0 : -1;
}

/* ---- the N-job runs ------------------------------------------------------------------ */

static void add_jobs(void) {
    static ferry_job_spec specs[N_JOBS];
    char *ids[N_JOBS];
    for (int i = 0; i < N_JOBS; i++)
        specs[i] = (ferry_job_spec){"work", NULL, NULL};
    ferry_error e = {0};
    if (ferry_queue_add_bulk(T.q, specs, N_JOBS, ids, &e) != 0) fail_msg("add: %s", e.message);
    for (int i = 0; i < N_JOBS; i++) {
        char want[16];
        snprintf(want, sizeof want, "%d", i + 1);
        if (strcmp(ids[i], want) != 0)
            fail_msg("job %d got id %s (fresh prefix expected)", i, ids[i]);
        free(ids[i]);
    }
}

typedef struct outcome {
    int dups;    /* jobs run more than once */
    int unacked; /* completed in Redis without a completed callback (reply lost) */
    char dup_ids[256];
} outcome;

/* Every job is completed with its own return value, none failed or left anywhere; an
 * acknowledged completion from before the crash was never run again. */
static void verify_all(outcome *out) {
    memset(out, 0, sizeof *out);
    assert_int_equal(WT_ZCARD(&T, "completed"), N_JOBS);
    assert_int_equal(WT_ZCARD(&T, "failed"), 0);
    assert_int_equal(WT_LLEN(&T, "wait"), 0);
    assert_int_equal(WT_LLEN(&T, "active"), 0);
    assert_int_equal(WT_ZCARD(&T, "delayed"), 0);
    pthread_mutex_lock(&R.mu);
    int bad = R.bad;
    pthread_mutex_unlock(&R.mu);
    assert_int_equal(bad, 0);
    for (int id = 1; id <= N_JOBS; id++) {
        char sid[16], want[32];
        snprintf(sid, sizeof sid, "%d", id);
        snprintf(want, sizeof want, "\"ok-%d\"", id);
        char *score = wt_zscore(&T, "completed", sid);
        if (!score) fail_msg("job %d is not in completed", id);
        free(score);
        wt_expect_field(&T, sid, "returnvalue", want);
        char *fin = wt_hget(&T, sid, "finishedOn");
        if (!fin) fail_msg("job %d has no finishedOn", id);
        free(fin);
        pthread_mutex_lock(&R.mu);
        int runs = R.runs[id], acked = R.acked[id], epoch = R.ack_epoch[id];
        pthread_mutex_unlock(&R.mu);
        if (runs < 1) fail_msg("job %d is completed but never ran here", id);
        if (acked > 1) fail_msg("job %d: %d completed callbacks", id, acked);
        if (acked && epoch == 0 && runs != 1)
            fail_msg("job %d: its completion was acknowledged before the crash, yet it ran %d "
                     "times (an acknowledged write was lost)",
                     id, runs);
        if (!acked) out->unacked++;
        if (runs > 1) {
            size_t l = strlen(out->dup_ids);
            snprintf(out->dup_ids + l, sizeof out->dup_ids - l, "%s%d(x%d)", l ? " " : "", id,
                     runs);
            out->dups++;
        }
    }
}

static int completed_all(void *arg) {
    (void)arg;
    return WT_ZCARD(&T, "completed") >= N_JOBS;
}

/* After Redis is back (`runs_before` counted before it was started): wait for a new job to
 * start (the worker resumed; ms since t_up returned, 0 if it was even quicker) and for all
 * jobs to complete. */
static int64_t resume_and_finish(int runs_before, int64_t t_up) {
    wait_or_fail(runs_above, &runs_before, RESUME_MAX_MS, "the worker to resume after the restart");
    int64_t resumed = mono() - t_up;
    if (!th_wait_until(completed_all, NULL, 60000))
        fail_msg("only %lld of %d jobs completed 60 s after the restart (runs %d)",
                 WT_ZCARD(&T, "completed"), N_JOBS, locked_int(&R.mu, &R.total));
    return resumed;
}

/* ---- 1. kill -9 with AOF --------------------------------------------------------------- */

static void test_kill9_loses_no_job(void **state) {
    (void)state;
    require_aof();
    /* every acknowledged write is on disk before its reply leaves */
    freeReplyObject(wt_cmd(&T, "CONFIG SET appendfsync always"));
    add_jobs();
    arm_crash(SIGKILL);
    W = start_worker(work, NULL, LOCK_MS, STALLED_MS);
    wait_or_fail(redis_crashed, NULL, 30000, "the crash job to run");
    disarm_crash();     /* the killer has sent its signal */
    th_redis_ctl("kill9"); /* the process is gone once this returns */
    pthread_mutex_lock(&R.mu);
    R.epoch = 1;
    pthread_mutex_unlock(&R.mu);
    wait_or_fail(lost_seen, NULL, 15000, "the worker to report the lost connection");
    int runs_before = locked_int(&R.mu, &R.total);
    int64_t t0 = mono();
    th_redis_ctl("start");
    int64_t t_up = mono();
    reopen_conn();
    int64_t resumed = resume_and_finish(runs_before, t_up);
    wt_stop(W);
    W = NULL;
    outcome oc;
    verify_all(&oc);
    fprintf(stderr,
            "# kill -9 (%d us after job %d started): %d of %d jobs had run before the restart "
            "(redis start took %lld ms); "
            "worker resumed %lld ms after it; duplicates %d [%s]; completions without "
            "callback %d; first error: %s\n",
            R.crash_delay_us, CRASH_AT_JOB, runs_before, N_JOBS, (long long)(t_up - t0),
            (long long)resumed, oc.dups, oc.dup_ids, oc.unacked, E.first_lost);
    /* only jobs the worker held at the crash (running, queued, or finished but not yet
     * written) may run again */
    assert_true(oc.dups <= CONC * BATCH);
    assert_true(oc.unacked <= CONC * BATCH);
    assert_true(locked_int(&E.mu, &E.lost) >= 1);
}

/* ---- 2. Redis down for 30 s ------------------------------------------------------------ */

static void test_down_30s_loses_no_job(void **state) {
    (void)state;
    require_aof();
    add_jobs();
    arm_crash(SIGTERM); /* what `redis-ctl stop` sends */
    W = start_worker(work, NULL, LOCK_MS, STALLED_MS);
    wait_or_fail(redis_crashed, NULL, 30000, "the stop job to run");
    disarm_crash();
    th_redis_ctl("stop"); /* waits until the server has exited */
    int64_t t_down = mono();
    pthread_mutex_lock(&R.mu);
    R.epoch = 1;
    int runs_at_down = R.total;
    pthread_mutex_unlock(&R.mu);
    wait_or_fail(lost_seen, NULL, 15000, "the worker to report the lost connection");

    /* The outage itself: Redis stays down for OUTAGE_MS. */
    for (int64_t left; (left = t_down + OUTAGE_MS - mono()) > 0;)
        th_sleep_ms(left < 200 ? left : 200);

    int runs_in_outage = locked_int(&R.mu, &R.total) - runs_at_down;
    pthread_mutex_lock(&E.mu);
    int reconnect_failed = E.reconnect_failed, max_attempt = E.max_attempt;
    pthread_mutex_unlock(&E.mu);
    /* only jobs the worker already held ran meanwhile; and it kept trying to reconnect */
    assert_true(runs_in_outage <= 2 * CONC);
    assert_true(reconnect_failed >= 2);
    int runs_before = locked_int(&R.mu, &R.total);
    int64_t t0 = mono();
    th_redis_ctl("start");
    int64_t t_up = mono();
    reopen_conn();
    int64_t resumed = resume_and_finish(runs_before, t_up);
    wt_stop(W);
    W = NULL;
    outcome oc;
    verify_all(&oc);
    fprintf(stderr,
            "# down %d s: %d of %d jobs had run before the restart (redis start took %lld ms); %d "
            "runs during the outage; reconnect failures reported %d (highest attempt %d); "
            "worker resumed %lld ms after the restart; duplicates %d [%s]; completions without "
            "callback %d\n",
            OUTAGE_MS / 1000, runs_before, N_JOBS, (long long)(t_up - t0), runs_in_outage,
            reconnect_failed, max_attempt, (long long)resumed, oc.dups, oc.dup_ids, oc.unacked);
    assert_true(oc.dups <= CONC * BATCH);
    assert_true(oc.unacked <= CONC * BATCH);
}

/* ---- 3. close and produce while Redis is down ----------------------------------------- */

/* Is the worker of this test idle in BZPOPMIN on its blocking connection? */
static int worker_blocked(void *arg) {
    (void)arg;
    redisReply *r = wt_cmd(&T, "CLIENT LIST");
    char name[96];
    snprintf(name, sizeof name, "name=%s:", T.prefix);
    int found = 0;
    for (char *line = r->str; line && *line && !found;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        found = strstr(buf, name) && strstr(buf, "cmd=bzpopmin");
        line = nl ? nl + 1 : NULL;
    }
    freeReplyObject(r);
    return found;
}

/* An idle worker (blocked on the marker) whose Redis is killed and restarted picks up a job
 * added afterwards, within seconds. */
static void test_idle_worker_after_kill9(void **state) {
    (void)state;
    W = start_worker(work, NULL, LOCK_MS, STALLED_MS);
    wait_or_fail(worker_blocked, NULL, 15000, "the idle worker to block on the marker");
    th_redis_ctl("kill9");
    wait_or_fail(lost_seen, NULL, 15000, "the worker to report the lost connection");
    th_redis_ctl("start");
    reopen_conn();
    /* a fresh producer: the old handle's connection died with the server */
    ferry_queue_close(T.q);
    T.q = NULL;
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = th_env_require("REDIS_URL");
    qo.redis = &ro;
    qo.prefix = T.prefix;
    ferry_error e = {0};
    if (ferry_queue_open(WT_QUEUE, &qo, &T.q, &e) != 0) fail_msg("queue open: %s", e.message);
    int64_t t_add = mono();
    char *id = wt_add(&T, "work", NULL, NULL);
    WT_WAIT_ZCARD(&T, "completed", 1);
    int64_t took = mono() - t_add;
    fprintf(stderr, "# idle worker, kill -9 + restart: a job added after it completed in %lld ms\n",
            (long long)took);
    assert_true(took <= RESUME_MAX_MS);
    wt_expect_field(&T, id, "returnvalue", "\"ok-1\"");
    wt_stop(W);
    W = NULL;
    free(id);
}

static void test_close_bounded_while_down_busy(void **state) {
    (void)state;
    int threads0 = thread_count();
    char *id = wt_add(&T, "gate", NULL, NULL);
    W = start_worker(gate_handler, &H, 0, 0);
    WT_WAIT_GATE_ENTERED(&H.g, 1);
    th_redis_ctl("stop");
    wt_gate_open(&H.g); /* the result arrives while Redis is down: it cannot be written */
    WT_WAIT_COUNT(&T, errors, 1);
    wait_or_fail(lost_seen, NULL, 15000, "the worker to report the lost connection");
    int64_t t0 = mono();
    int rc = ferry_worker_close(W, CLOSE_DEADLINE_MS);
    int64_t took = mono() - t0;
    ferry_worker_free(W);
    W = NULL;
    fprintf(stderr, "# close(%d ms) with a result pending, Redis down: rc %d after %lld ms\n",
            CLOSE_DEADLINE_MS, rc, (long long)took);
    assert_int_equal(rc, FERRY_ETIMEDOUT); /* documented: results not written */
    assert_true(took >= CLOSE_DEADLINE_MS - 50);
    assert_true(took <= CLOSE_DEADLINE_MS + CLOSE_MARGIN_MS);
    /* the threads close detached (dispatcher retrying the write) end by themselves */
    if (!th_wait_until(threads_back_to, &threads0, 10000))
        fail_msg("%d threads still alive 10 s after close (had %d before the worker)",
                 thread_count(), threads0);

    /* A producer with Redis down: fails at once, naming the server; twice (on the handle's
     * old connection, which the server closed, then on a fresh connect). */
    for (int i = 0; i < 2; i++) {
        ferry_job_spec s = {"late", NULL, NULL};
        char *nid = NULL;
        ferry_error e = {0};
        t0 = mono();
        rc = ferry_queue_add(T.q, &s, &nid, &e);
        took = mono() - t0;
        fprintf(stderr, "# add with Redis down: rc %d after %lld ms: %s\n", rc, (long long)took,
                e.message);
        assert_true(rc == FERRY_EIO || rc == FERRY_ETIMEDOUT);
        assert_null(nid);
        if (!strstr(e.message, endpoint()))
            fail_msg("error does not name %s: %s", endpoint(), e.message);
        assert_true(took <= 5000 + 5000 + CLOSE_MARGIN_MS); /* connect + command timeouts */
    }
    ferry_queue *q2 = NULL;
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = th_env_require("REDIS_URL");
    qo.redis = &ro;
    qo.prefix = T.prefix;
    ferry_error e = {0};
    assert_int_not_equal(ferry_queue_open(WT_QUEUE, &qo, &q2, &e), 0);
    if (!strstr(e.message, endpoint()))
        fail_msg("open error does not name %s: %s", endpoint(), e.message);

    th_redis_ctl("start");
    reopen_conn();
    /* the abandoned job survived the stop (AOF), still active until its lock expires */
    assert_int_equal(WT_LLEN(&T, "active"), 1);
    wt_expect_field(&T, id, "atm", NULL);
    /* the producer reconnects by itself */
    char *id2 = wt_add(&T, "after", NULL, NULL);
    assert_non_null(id2);
    assert_int_equal(WT_LLEN(&T, "wait"), 1);
    free(id), free(id2);
}

/* Graceful close that starts during an outage still writes the finished result once Redis
 * is back before the deadline, and returns 0. */
typedef struct closer {
    pthread_mutex_t mu;
    int started, done, rc;
    int64_t took;
} closer;

static void *closer_main(void *arg) {
    closer *c = arg;
    pthread_mutex_lock(&c->mu);
    c->started = 1;
    pthread_mutex_unlock(&c->mu);
    int64_t t0 = mono();
    int rc = ferry_worker_close(W, 20000);
    pthread_mutex_lock(&c->mu);
    c->rc = rc;
    c->took = mono() - t0;
    c->done = 1;
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static int closer_started(void *arg) {
    closer *c = arg;
    return locked_int(&c->mu, &c->started);
}

static void test_close_during_outage_flushes_when_back(void **state) {
    (void)state;
    char *id = wt_add(&T, "gate", NULL, NULL);
    /* the default 30 s lock outlives the outage, so the result is accepted (after an
     * expired lock it would be refused and reported, and close would still return 0) */
    W = start_worker(gate_handler, &H, 0, 0);
    WT_WAIT_GATE_ENTERED(&H.g, 1);
    th_redis_ctl("stop");
    wt_gate_open(&H.g);
    wait_or_fail(lost_seen, NULL, 15000, "the worker to report the lost connection");
    closer c = {.mu = PTHREAD_MUTEX_INITIALIZER};
    pthread_t th;
    if (pthread_create(&th, NULL, closer_main, &c) != 0) fail_msg("cannot start closer");
    if (!th_wait_until(closer_started, &c, 15000)) {
        pthread_join(th, NULL);
        fail_msg("the closing thread did not start");
    }
    int64_t t0 = mono();
    int start_rc = th_redis_ctl_rc("start");
    int64_t t_up = mono();
    pthread_join(th, NULL);
    ferry_worker_free(W);
    W = NULL;
    if (start_rc != 0) fail_msg("redis-ctl start failed");
    fprintf(stderr,
            "# close(20000 ms) begun during an outage, Redis back after %lld ms: rc %d after "
            "%lld ms\n",
            (long long)(t_up - t0), c.rc, (long long)c.took);
    assert_int_equal(c.rc, 0);
    reopen_conn();
    wt_expect_field(&T, id, "returnvalue", "\"done\"");
    assert_int_equal(WT_ZCARD(&T, "completed"), 1);
    assert_int_equal(H.runs, 1);
    free(id);
}

static void test_close_bounded_while_down_idle(void **state) {
    (void)state;
    int threads0 = thread_count();
    W = start_worker(gate_handler, &H, 0, 0);
    wait_or_fail(worker_blocked, NULL, 15000, "the idle worker to block on the marker");
    th_redis_ctl("stop");
    wait_or_fail(lost_seen, NULL, 15000, "the worker to report the lost connection");
    int64_t t0 = mono();
    int rc = ferry_worker_close(W, CLOSE_DEADLINE_MS);
    int64_t took = mono() - t0;
    ferry_worker_free(W);
    W = NULL;
    fprintf(stderr, "# close(%d ms) of an idle worker, Redis down: rc %d after %lld ms\n",
            CLOSE_DEADLINE_MS, rc, (long long)took);
    assert_int_equal(rc, 0); /* nothing held: a clean close */
    assert_true(took <= CLOSE_DEADLINE_MS + CLOSE_MARGIN_MS);
    assert_int_equal(thread_count(), threads0); /* all joined */
    th_redis_ctl("start");
}

/* A producer whose connection sat idle across a Redis restart adds at its first try: the
 * dead connection is replaced before anything is sent on it (nothing of unknown outcome). */
static void test_producer_first_add_after_restart(void **state) {
    (void)state;
    const char *actions[] = {"kill9", "stop"};
    for (int i = 0; i < 2; i++) {
        char *id1 = wt_add(&T, "before", NULL, NULL);
        th_redis_ctl(actions[i]);
        th_redis_ctl("start");
        reopen_conn();
        ferry_job_spec s = {"after", NULL, NULL};
        char *id2 = NULL;
        ferry_error e = {0};
        if (ferry_queue_add(T.q, &s, &id2, &e) != 0)
            fail_msg("first add after %s + start: %s", actions[i], e.message);
        assert_int_equal(WT_LLEN(&T, "wait"), 2 * (i + 1));
        free(id1), free(id2);
    }
}

/* ---- 4. notices: one lost / back pair per outage, the eviction policy at start ---------- */

typedef struct noticelog {
    pthread_mutex_t mu;
    int lost, restored, eviction;
    int order_bad; /* a RESTORED without a LOST before it, or two LOSTs in a row */
    int down;
    long long down_ms;
    char policy[64], last[FERRY_ERROR_MESSAGE_MAX];
} noticelog;
static noticelog N = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void on_notice(const ferry_worker_notice *n, void *ud) {
    (void)ud;
    pthread_mutex_lock(&N.mu);
    snprintf(N.last, sizeof N.last, "%s", n->message);
    if (strchr(n->message, '\n')) N.order_bad = 1;
    if (n->kind == FERRY_NOTICE_REDIS_LOST) {
        N.lost++;
        N.order_bad |= N.down;
        N.down = 1;
    } else if (n->kind == FERRY_NOTICE_REDIS_RESTORED) {
        N.restored++;
        N.order_bad |= !N.down;
        N.down = 0;
        N.down_ms = n->down_ms;
    } else if (n->kind == FERRY_NOTICE_EVICTION_POLICY) {
        N.eviction++;
        snprintf(N.policy, sizeof N.policy, "%s", n->policy ? n->policy : "");
    }
    pthread_mutex_unlock(&N.mu);
}

static void notices_reset(void) {
    pthread_mutex_lock(&N.mu);
    N.lost = N.restored = N.eviction = N.order_bad = N.down = 0;
    N.down_ms = 0;
    N.policy[0] = N.last[0] = 0;
    pthread_mutex_unlock(&N.mu);
}

static int notices_restored(void *arg) {
    return locked_int(&N.mu, &N.restored) >= *(int *)arg;
}

static int notices_lost(void *arg) {
    return locked_int(&N.mu, &N.lost) >= *(int *)arg;
}

static int workers_blocked(void *arg) {
    /* every lane's waiter in BZPOPMIN (only the first lane's is named: count them all) */
    redisReply *r = wt_cmd(&T, "CLIENT LIST");
    int n = 0;
    for (char *p = r->str; (p = strstr(p, "cmd=bzpopmin")) != NULL; p++)
        n++;
    freeReplyObject(r);
    return n >= *(int *)arg;
}

static ferry_worker *start_notice_worker(int lanes) {
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&T, &o, &ro);
    o.concurrency = 2 * lanes;
    o.lanes = lanes;
    /* the waiters time out and fetch every 300 ms; the stalled check (30 s) does not use
     * the command connections during the outage, so they sit idle through it and are
     * found closed only after Redis is back */
    o.drain_delay_ms = 300;
    o.callbacks.error = on_error;
    o.callbacks.completed = on_completed;
    o.callbacks.notice = on_notice;
    return wt_start(&o, gate_handler, &H);
}

/* An idle two-lane worker across a Redis stop and start: one REDIS_LOST, then one
 * REDIS_RESTORED, whatever its four connections and their retries do, and no second pair
 * afterwards (the connections that sat idle through the outage are replaced quietly). */
static void test_notice_one_pair_per_outage(void **state) {
    (void)state;
    notices_reset();
    W = start_notice_worker(2);
    int two = 2, one = 1;
    wait_or_fail(workers_blocked, &two, 15000, "both lanes to block on the marker");
    th_redis_ctl("stop");
    wait_or_fail(notices_lost, &one, 15000, "the REDIS_LOST notice");
    th_sleep_ms(1500); /* several failed reconnect attempts of every connection */
    th_redis_ctl("start");
    reopen_conn();
    wait_or_fail(notices_restored, &one, 15000, "the REDIS_RESTORED notice");
    char *id = wt_add(&T, "after", NULL, NULL);
    WT_WAIT_ZCARD(&T, "completed", 1);
    /* let every lane make calls on each of its connections again (drain delay 300 ms): a
     * connection closed by the restart found only now must not start a second pair */
    wait_or_fail(workers_blocked, &two, 15000, "both lanes to block on the marker again");
    th_sleep_ms(2500);
    pthread_mutex_lock(&N.mu);
    int lost = N.lost, restored = N.restored, bad = N.order_bad;
    long long down_ms = N.down_ms;
    char last[FERRY_ERROR_MESSAGE_MAX];
    snprintf(last, sizeof last, "%s", N.last);
    pthread_mutex_unlock(&N.mu);
    fprintf(stderr, "# notices: %d lost, %d restored (down %lld ms); last: %s\n", lost, restored,
            down_ms, last);
    assert_int_equal(lost, 1);
    assert_int_equal(restored, 1);
    assert_int_equal(bad, 0);
    assert_true(down_ms >= 1500);
    assert_non_null(strstr(last, "restored"));
    free(id);
}

static void config_set_policy(const char *policy) {
    redisReply *r = wt_cmd(&T, "CONFIG SET maxmemory-policy %s", policy);
    if (r->type == REDIS_REPLY_ERROR) fail_msg("CONFIG SET maxmemory-policy: %s", r->str);
    freeReplyObject(r);
}

/* A server that may evict keys gets one notice at start, before ferry_worker_start
 * returns, naming the policy; noeviction none. */
static void test_notice_eviction_policy(void **state) {
    (void)state;
    notices_reset();
    config_set_policy("allkeys-lru");
    ferry_worker *w = start_notice_worker(2);
    pthread_mutex_lock(&N.mu);
    int ev = N.eviction;
    char policy[64], last[FERRY_ERROR_MESSAGE_MAX];
    snprintf(policy, sizeof policy, "%s", N.policy);
    snprintf(last, sizeof last, "%s", N.last);
    pthread_mutex_unlock(&N.mu);
    wt_stop(w);
    config_set_policy("noeviction");
    assert_int_equal(ev, 1); /* once, not once per lane */
    assert_string_equal(policy, "allkeys-lru");
    assert_non_null(strstr(last, "maxmemory-policy is allkeys-lru"));

    notices_reset();
    w = start_notice_worker(1);
    wt_stop(w);
    assert_int_equal(locked_int(&N.mu, &N.eviction), 0);
}

/* Which start failures a program waiting for Redis should retry. */
static void test_start_retryable(void **state) {
    (void)state;
    const struct {
        int code;
        const char *msg;
        int want;
    } cases[] = {
        {FERRY_EIO, "redis 127.0.0.1:1: connect: Connection refused", 1},
        {FERRY_ETIMEDOUT, "redis 10.0.0.1:6379: connect: timed out", 1},
        {FERRY_EREDIS, "redis h:1: SCRIPT LOAD addJob: LOADING Redis is loading the dataset", 1},
        {FERRY_EREDIS, "redis h:1: PING: BUSY Redis is busy running a script", 1},
        {FERRY_EREDIS, "redis h:1: PING: BUSYGROUP Consumer Group name already exists", 0},
        {FERRY_EREDIS, "redis h:1: CLIENT SETNAME: NOPERM this user has no permissions", 0},
        {FERRY_EAUTH, "redis h:1: AUTH refused: WRONGPASS invalid username-password pair", 0},
        {FERRY_EIO,
         "redis h:1: read: Connection reset by peer (after the server answered: WRONGPASS "
         "invalid username-password pair or user is disabled.)",
         0},
        {FERRY_EIO,
         "redis h:1: read: Connection reset by peer (after the server answered: LOADING Redis "
         "is loading the dataset in memory)",
         1},
        {FERRY_EIO,
         "redis h:1: read: end of stream (after the server answered: ERR max number of clients "
         "reached)",
         1},
        {FERRY_ETLS, "redis h:1: TLS handshake: certificate verify failed: x", 0},
        {FERRY_EINVAL, "worker: bad url", 0},
        {FERRY_ESTATE, "worker: closed", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ferry_error e = {cases[i].code, ""};
        snprintf(e.message, sizeof e.message, "%s", cases[i].msg);
        if (ferry_worker_start_retryable(&e) != cases[i].want)
            fail_msg("%s: expected %d", cases[i].msg, cases[i].want);
    }
    assert_int_equal(ferry_worker_start_retryable(NULL), 0);
}

/* ---- 5. the CLI exec worker ------------------------------------------------------------ */

static void test_cli_worker_sigterm_while_down(void **state) {
    (void)state;
    char *id = wt_add(&T, "one", NULL, NULL);
    char errp[160], outp[160];
    snprintf(errp, sizeof errp, "%s/outage-worker.err", th_tmpdir());
    snprintf(outp, sizeof outp, "%s/outage-worker.out", th_tmpdir());
    cli_pid = cli_start(CLI_ARGV("worker", WT_QUEUE, "--redis", th_env_require("REDIS_URL"),
                                 "--prefix", T.prefix, "--shutdown-timeout", "2000", "--", "true"),
                        NULL, NULL, outp, errp);
    WT_WAIT_ZCARD(&T, "completed", 1); /* it works */
    char *fin = wt_hget(&T, id, "finishedOn");
    assert_non_null(fin);
    free(fin);
    wait_or_fail(worker_blocked, NULL, 15000, "the CLI worker to block on the marker");
    th_redis_ctl("stop");
    th_log_arg la = {errp, "lost"};
    if (!th_wait_until(th_log_has, &la, 15000)) {
        char *log = th_slurp(errp);
        fail_msg("the CLI worker did not report the lost connection; log:\n%s", log);
    }
    int64_t t0 = mono();
    kill(cli_pid, SIGTERM);
    int code = cli_wait(cli_pid, 20000);
    int64_t took = mono() - t0;
    cli_pid = 0;
    char *log = th_slurp(errp);
    fprintf(stderr, "# CLI worker, SIGTERM with Redis down: exit %d after %lld ms\n", code,
            (long long)took);
    if (code != 0) fail_msg("exit %d; log:\n%s", code, log);
    if (took > 2000 + CLOSE_MARGIN_MS) fail_msg("took %lld ms; log:\n%s", (long long)took, log);
    assert_non_null(strstr(log, "stopped"));
    free(log);
    free(id);
    th_redis_ctl("start");
}

int main(void) {
    srand((unsigned)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill9_loses_no_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_down_30s_loses_no_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_worker_after_kill9, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_bounded_while_down_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_bounded_while_down_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_during_outage_flushes_when_back, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_producer_first_add_after_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_worker_sigterm_while_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notice_one_pair_per_outage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notice_eviction_policy, setup, teardown),
        cmocka_unit_test(test_start_retryable),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}

/* worker_main.c - shop-worker: the seed's worker process. It runs the outbox relay (the
 * shop's routes, prefix and job options: shop_common.h) on its own thread, one ferry worker
 * per queue with the seed's settings (payments: concurrency 10, the `capped` backoff,
 * maxStartedAttempts 50; shipping: concurrency 4 and a limiter of --shipping-rate jobs per
 * second that a carrier 429 throttles; notifications, loyalty, maintenance), a dead-letter
 * recorder every worker's final failures go to, and upserts the `outbox-cleanup`
 * scheduler (03:00 Asia/Ho_Chi_Minh, 7 days) on the maintenance queue.
 *
 * Start: flags, PostgreSQL + shop_schema_ensure (`ferry migrate` must have run), the
 * recorder, the workers, the scheduler, the relay; then one stdout line "ready". Outages of
 * Redis or PostgreSQL after that are ridden out (the library reconnects; jobs failing
 * meanwhile are retried). SIGTERM/SIGINT: stop the relay and the workers, let running jobs
 * finish within --drain-timeout-ms, write the pending dead letters, exit 0 (1 when the
 * deadline passed with jobs still running: they are recovered as stalled). Exit 2 on a
 * usage error, 1 when it cannot start. Several shop-worker processes may run at once. */
#include "shop_common.h"
#include "shop_messages.h"
#include "shop_processors.h"

#include "ex_flags.h"
#include "ex_http.h"
#include "ex_util.h"

#include <ferry/deadletter.h>
#include <ferry/outbox.h>
#include <ferry/queue.h>
#include <ferry/scheduler.h>
#include <ferry/worker.h>

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define PROG "shop-worker"

/* ---- flags: parsing and --help come from this one table ------------------------------ */

enum {
    FL_DATABASE,
    FL_REDIS,
    FL_SCHEMA,
    FL_PREFIX,
    FL_GATEWAY,
    FL_CARRIER,
    FL_MAILER,
    FL_TIMEOUT,
    FL_SHIP_RATE,
    FL_NO_RELAY,
    FL_NAME,
    FL_LOCK,
    FL_STALLED,
    FL_MAX_STALLED,
    FL_DRAIN,
    FL_CAPPED_BASE,
    FL_CAPPED_CAP,
    FL_SETTLE,
    FL_POOL,
    FL_VERBOSE,
    FL_CRASH_RATE,
    FL_HELP,
    NFLAGS
};

static const ex_flag flags[NFLAGS] = {
    [FL_DATABASE] = {"database", "URL", "PostgreSQL URL (default $DATABASE_URL, else libpq's)"},
    [FL_REDIS] = {"redis", "URL", "Redis URL (default $REDIS_URL, else redis://127.0.0.1:6379)"},
    [FL_SCHEMA] = {"schema", "NAME", "schema of ferry's and the shop's tables (default public)"},
    [FL_PREFIX] = {"prefix", "NAME", "Redis key prefix of the queues (default shop)"},
    [FL_GATEWAY] = {"gateway-url", "URL", "payment gateway base URL (default $GATEWAY_URL)"},
    [FL_CARRIER] = {"carrier-url", "URL", "carrier base URL (default $CARRIER_URL)"},
    [FL_MAILER] = {"mailer-url", "URL", "mailer base URL (default $MAILER_URL)"},
    [FL_TIMEOUT] = {"provider-timeout-ms", "N", "deadline of a provider call, 1..600000 (2000)"},
    [FL_SHIP_RATE] = {"shipping-rate", "N", "shipping jobs per second, all workers, 1..100000 (4)"},
    [FL_NO_RELAY] = {"no-relay", NULL, "do not run the outbox relay in this process"},
    [FL_NAME] = {"name", "NAME", "worker name stored with each job (default shop-worker-PID)"},
    [FL_LOCK] = {"lock-duration-ms", "N", "job lock duration, 100..3600000 (30000)"},
    [FL_STALLED] = {"stalled-interval-ms", "N", "stalled-job check interval, 100..3600000 (30000)"},
    [FL_MAX_STALLED] = {"max-stalled-count", "N",
                        "stalls a job survives before it fails, 1..1000 (5; BullMQ's is 1)"},
    [FL_DRAIN] = {"drain-timeout-ms", "N", "how long running jobs may finish at stop (30000)"},
    [FL_CAPPED_BASE] = {"capped-base-ms", "N", "payments' `capped` backoff: base (2000)"},
    [FL_CAPPED_CAP] = {"capped-cap-ms", "N", "payments' `capped` backoff: cap (900000)"},
    [FL_SETTLE] = {"settle-ms", "N",
                   "wait after a carrier create of unknown outcome before looking again (5000)"},
    [FL_POOL] = {"pool", "N", "PostgreSQL connections of the handlers, 1..256 (10)"},
    [FL_VERBOSE] = {"verbose", NULL, "log every job outcome and absorbed duplicate"},
    [FL_CRASH_RATE] = {"crash-after-publish", "P",
                       "for chaos runs: exit at once (status 86, as a crash) with probability P "
                       "after the relay added a batch's jobs and before it marked them (0)"},
    [FL_HELP] = {"help", NULL, "show this help and exit"},
};

static void usage(FILE *to) {
    fprintf(to, "usage: " PROG " [options]\n"
                "The shop's worker process: the outbox relay, the payments, notifications,\n"
                "shipping, loyalty and maintenance workers, dead letters, the outbox-cleanup\n"
                "scheduler. Prints \"ready\" once all run. Run `ferry migrate --schema NAME`\n"
                "first.\n\noptions:\n");
    ex_flags_print(to, flags, NFLAGS, 28);
    fprintf(to, "\nenvironment: DATABASE_URL, REDIS_URL, GATEWAY_URL, CARRIER_URL, MAILER_URL\n"
                "(flags override them)\n");
}

typedef struct config {
    const char *database, *redis, *schema, *prefix, *gateway, *carrier, *mailer, *name;
    long timeout_ms, ship_rate, lock_ms, stalled_ms, max_stalled, drain_ms;
    long capped_base_ms, capped_cap_ms, settle_ms, pool;
    int relay, verbose;
    double crash_rate;
} config;

static int word_ok(const char *s, size_t max) {
    size_t n = strlen(s);
    if (n == 0 || n > max) return 0;
    for (const char *p = s; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f) return 0;
    return 1;
}

static int check_url(const char *v, const char *what) {
    if (!v)
        return ex_usage_error(PROG, "no %s URL: set --%s-url or %s", what, what,
                              !strcmp(what, "gateway")   ? "GATEWAY_URL"
                              : !strcmp(what, "carrier") ? "CARRIER_URL"
                                                         : "MAILER_URL");
    if ((strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) || strlen(v) > 512)
        return ex_usage_error(
            PROG, "the %s URL must be an http:// or https:// URL of at most 512 bytes", what);
    return 0;
}

/* Parse argv into cfg. Returns -1 to go on, else the exit code (0 after --help). */
static int parse_flags(int argc, char **argv, config *cfg, char *name_buf, size_t name_cap) {
    struct option longopts[NFLAGS + 1];
    ex_flags_longopts(flags, NFLAGS, longopts);
    const char *f[NFLAGS] = {0};
    int set[NFLAGS] = {0};
    opterr = 0;
    int ch, idx;
    while ((ch = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
        if (ch == '?' || ch == ':' || ch < 0 || ch >= NFLAGS)
            return ex_usage_error(PROG, "%s: unknown option, or its value is missing",
                                  argv[optind - 1]);
        if (ch == FL_HELP) {
            usage(stdout);
            return 0;
        }
        f[ch] = optarg;
        set[ch] = 1;
    }
    if (optind < argc) return ex_usage_error(PROG, "unexpected argument '%s'", argv[optind]);
    cfg->database = ex_opt(f[FL_DATABASE], "DATABASE_URL", "");
    cfg->redis = ex_opt(f[FL_REDIS], "REDIS_URL", FERRY_DEFAULT_REDIS_URL);
    cfg->schema = ex_opt(f[FL_SCHEMA], NULL, FERRY_OUTBOX_DEFAULT_SCHEMA);
    cfg->prefix = ex_opt(f[FL_PREFIX], NULL, SHOP_PREFIX);
    cfg->gateway = ex_opt(f[FL_GATEWAY], "GATEWAY_URL", NULL);
    cfg->carrier = ex_opt(f[FL_CARRIER], "CARRIER_URL", NULL);
    cfg->mailer = ex_opt(f[FL_MAILER], "MAILER_URL", NULL);
    cfg->relay = !set[FL_NO_RELAY];
    cfg->verbose = set[FL_VERBOSE];
    snprintf(name_buf, name_cap, PROG "-%ld", (long)getpid());
    cfg->name = ex_opt(f[FL_NAME], NULL, name_buf);
    const ex_flag_number nums[] = {
        {FL_TIMEOUT, "2000", 1, 600000, &cfg->timeout_ms},
        {FL_SHIP_RATE, "4", 1, 100000, &cfg->ship_rate},
        {FL_LOCK, "30000", 100, 3600000, &cfg->lock_ms},
        {FL_STALLED, "30000", 100, 3600000, &cfg->stalled_ms},
        {FL_MAX_STALLED, "5", 1, 1000, &cfg->max_stalled},
        {FL_DRAIN, "30000", 0, 3600000, &cfg->drain_ms},
        {FL_CAPPED_BASE, "2000", 1, 86400000, &cfg->capped_base_ms},
        {FL_CAPPED_CAP, "900000", 1, 86400000, &cfg->capped_cap_ms},
        {FL_SETTLE, "5000", 1, 3600000, &cfg->settle_ms},
        {FL_POOL, "10", 1, 256, &cfg->pool},
    };
    char err[256];
    if (ex_flags_numbers(flags, f, nums, sizeof nums / sizeof nums[0], err, sizeof err))
        return ex_usage_error(PROG, "%s", err);
    cfg->crash_rate = 0;
    if (f[FL_CRASH_RATE] &&
        ex_parse_rate(f[FL_CRASH_RATE], "--crash-after-publish", &cfg->crash_rate, err, sizeof err))
        return ex_usage_error(PROG, "%s", err);
    int rc;
    if ((rc = check_url(cfg->gateway, "gateway")) || (rc = check_url(cfg->carrier, "carrier")) ||
        (rc = check_url(cfg->mailer, "mailer")))
        return rc;
    if (!cfg->schema[0] || strlen(cfg->schema) > FERRY_OUTBOX_SCHEMA_MAX)
        return ex_usage_error(PROG, "--schema: a schema name is 1 to %d bytes",
                              FERRY_OUTBOX_SCHEMA_MAX);
    if (!word_ok(cfg->prefix, 200))
        return ex_usage_error(PROG, "--prefix: 1 to 200 printable ASCII characters without spaces");
    if (!word_ok(cfg->name, 200))
        return ex_usage_error(PROG, "--name: 1 to 200 printable ASCII characters without spaces");
    ferry_error fe = {0};
    if (ferry_outbox_database_url_check(cfg->database, &fe))
        return ex_usage_error(PROG, "--database / DATABASE_URL: %s", fe.message);
    if (ferry_redis_url_check(cfg->redis, &fe))
        return ex_usage_error(PROG, "--redis / REDIS_URL: %s", fe.message);
    return -1;
}

/* ---- the process --------------------------------------------------------------------- */

/* The queues and their handlers (the seed's @Processor settings). */
static const struct queue_def {
    const char *queue;
    ferry_handler_fn handler;
    int concurrency;
} queue_defs[] = {
    {SHOP_Q_PAYMENTS, shop_payments_handler, 10},
    {SHOP_Q_NOTIFICATIONS, shop_notifications_handler, 5},
    {SHOP_Q_SHIPPING, shop_shipping_handler, 4},
    {SHOP_Q_LOYALTY, shop_loyalty_handler, 5},
    {SHOP_Q_MAINTENANCE, shop_maintenance_handler, 1},
};
#define NQUEUES (sizeof queue_defs / sizeof queue_defs[0])

typedef struct app {
    config cfg;
    shop_ctx ctx;
    ex_pgpool *pool;
    ferry_redis_options redis;
    ferry_backoff_capped_config capped;
    ferry_dlq_recorder *recorder;
    ferry_worker *workers[NQUEUES];
    ferry_relay *relay;
    pthread_t relay_thread;
    int relay_thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int relay_state; /* 0 starting, 1 started, 2 ended */
    int relay_rc;
    ferry_error relay_err;
} app;

static int g_verbose;

static void on_job_log(const ferry_job_log *rec, void *ud) {
    (void)ud;
    if (!g_verbose && !strcmp(rec->outcome, "completed")) return;
    char line[2048];
    ferry_job_log_format(rec, 0, line, sizeof line);
    ex_log("%s", line);
}

static void on_stalled(const char *job_id, void *ud) {
    char shown[128];
    ex_log("WARN [%s] job %s stalled (its worker died or lost the lock): it runs again",
           (const char *)ud, shop_printable(job_id, shown, sizeof shown));
}

static void relay_log(int level, const char *message, void *ud) {
    app *a = ud;
    ex_ferry_log(level, message, NULL);
    if (!strncmp(message, "relay: started", 14)) {
        pthread_mutex_lock(&a->mu);
        if (a->relay_state == 0) a->relay_state = 1;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
    }
}

static void *relay_main(void *arg) {
    app *a = arg;
    ferry_error e = {0};
    int rc = ferry_relay_run(a->relay, &e);
    pthread_mutex_lock(&a->mu);
    int started = a->relay_state == 1;
    a->relay_rc = rc;
    a->relay_err = e;
    a->relay_state = 2;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (rc && started) { /* after start-up it only returns when stopped: a bug, then */
        ex_log("ERROR relay ended: %s", e.message);
        ex_request_stop();
    }
    return NULL;
}

/* Take SIGTERM/SIGINT here (blocked in every other thread) and ask the process to stop. */
static void *signal_main(void *arg) {
    const sigset_t *set = arg;
    for (;;) {
        int sig = 0;
        if (sigwait(set, &sig) != 0) continue;
        if (!ex_stopping())
            ex_log("%s received: stopping (running jobs may finish)",
                   sig == SIGTERM ? "SIGTERM" : "SIGINT");
        ex_request_stop();
    }
    return NULL;
}

static int start_recorder(app *a) {
    ferry_dlq_recorder_options ro;
    ferry_dlq_recorder_options_init(&ro);
    ro.database_url = a->cfg.database;
    ro.schema = a->cfg.schema;
    ro.prefix = a->cfg.prefix;
    ro.log = ex_ferry_log;
    ro.log_userdata = (void *)"dead-letters";
    ferry_error e = {0};
    if (ferry_dlq_recorder_start(&ro, &a->recorder, &e)) {
        ex_log("cannot start the dead-letter recorder: %s", e.message);
        return -1;
    }
    return 0;
}

/* The recorder writes dead letters in the background, so a worker killed between a job's
 * final failure (in Redis) and that write leaves the job only in BullMQ's failed set. At
 * every start, record what such a crash left behind (ferry_dlq_sync: a failure that has its
 * row already is not written twice). A failure here is logged; the worker still starts. */
static void sync_dead_letters(app *a) {
    char err[512];
    PGconn *db = ex_pgpool_get(a->pool, 10000, err, sizeof err);
    if (!db) {
        ex_log("WARN dead letters not synced at start: %s", err);
        return;
    }
    ferry_dlq_options dopt;
    ferry_dlq_options_init(&dopt);
    dopt.schema = a->cfg.schema;
    for (size_t i = 0; i < NQUEUES; i++) {
        ferry_queue_options qo;
        ferry_queue_options_init(&qo);
        qo.redis = &a->redis;
        qo.prefix = a->cfg.prefix;
        qo.skip_meta_update = 1;
        ferry_queue *q = NULL;
        ferry_error e = {0};
        ferry_dlq_sync_stats st = {0};
        if (ferry_queue_open(queue_defs[i].queue, &qo, &q, &e) ||
            ferry_dlq_sync(db, &dopt, q, NULL, NULL, &st, &e))
            ex_log("WARN dead letters of %s not synced at start: %s", queue_defs[i].queue,
                   e.message);
        else if (st.recorded)
            ex_log("dead letters: %lld failed job(s) of %s had no row yet (a crash between the "
                   "failure and its record): recorded",
                   st.recorded, queue_defs[i].queue);
        ferry_queue_close(q);
    }
    ex_pgpool_put(a->pool, db);
}

static int start_workers(app *a) {
    ferry_backoff_strategy capped = {"capped", ferry_backoff_capped, &a->capped};
    for (size_t i = 0; i < NQUEUES; i++) {
        const struct queue_def *q = &queue_defs[i];
        ferry_worker_options wo;
        ferry_worker_options_init(&wo);
        wo.redis = &a->redis;
        wo.prefix = a->cfg.prefix;
        wo.name = a->cfg.name;
        wo.concurrency = q->concurrency;
        wo.lock_duration_ms = (int)a->cfg.lock_ms;
        wo.stalled_interval_ms = (int)a->cfg.stalled_ms;
        wo.max_stalled_count = (int)a->cfg.max_stalled;
        /* bounds endless retry-later / throttle loops (the seed's payments setting, for all) */
        wo.max_started_attempts = 50;
        wo.max_payload_bytes = SHOP_MSG_BYTES_MAX;
        if (!strcmp(q->queue, SHOP_Q_PAYMENTS)) {
            wo.backoff_strategies = &capped;
            wo.nbackoff_strategies = 1;
        }
        if (!strcmp(q->queue, SHOP_Q_SHIPPING)) {
            wo.limiter_max = (int)a->cfg.ship_rate;
            wo.limiter_duration_ms = 1000;
        }
        wo.callbacks.job_log = on_job_log;
        wo.callbacks.stalled = on_stalled;
        wo.callbacks.log = ex_ferry_log;
        wo.userdata = (void *)q->queue;
        wo.final_failure = ferry_dlq_recorder_final_failure;
        wo.final_failure_userdata = a->recorder;
        ferry_error e = {0};
        if (ferry_worker_create(q->queue, &wo, q->handler, &a->ctx, &a->workers[i], &e)) {
            ex_log("cannot create the %s worker: %s", q->queue, e.message);
            return -1;
        }
        if (ferry_worker_start(a->workers[i], &e)) {
            ex_log("cannot start the %s worker: %s", q->queue, e.message);
            ferry_worker_free(a->workers[i]); /* it took no job: nothing to close */
            a->workers[i] = NULL;
            return -1;
        }
    }
    return 0;
}

static int upsert_scheduler(app *a) {
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = &a->redis;
    qo.prefix = a->cfg.prefix;
    qo.default_job_opts = SHOP_DEFAULT_JOB_OPTS; /* what the iterations' options merge over */
    ferry_queue *q = NULL;
    ferry_error e = {0};
    if (ferry_queue_open(SHOP_Q_MAINTENANCE, &qo, &q, &e)) {
        ex_log("cannot open the maintenance queue for the outbox-cleanup scheduler: %s", e.message);
        return -1;
    }
    ferry_scheduler_spec spec;
    ferry_scheduler_spec_init(&spec);
    spec.pattern = "0 3 * * *"; /* 3 in the morning, every day */
    spec.tz = "Asia/Ho_Chi_Minh";
    spec.name = SHOP_JOB_OUTBOX_CLEANUP;
    spec.data_json = "{\"olderThanDays\":7}";
    char *job_id = NULL;
    long long delay_ms = 0;
    int rc = ferry_scheduler_upsert(q, SHOP_JOB_OUTBOX_CLEANUP, &spec, &job_id, &delay_ms, &e);
    ferry_queue_close(q);
    if (rc) {
        ex_log("cannot upsert the outbox-cleanup scheduler: %s", e.message);
        return -1;
    }
    ex_log("scheduler outbox-cleanup (0 3 * * * Asia/Ho_Chi_Minh): next run in %lld s",
           delay_ms / 1000);
    free(job_id);
    return 0;
}

/* --crash-after-publish: the relay's test hook, called between adding a batch's jobs to Redis
 * and committing its rows as published. Exiting there is the crash the relay's jobIds exist
 * for: the next relay publishes the rows again and BullMQ absorbs the repeats. */
static void crash_after_publish(const char *point, void *ud) {
    const app *a = ud;
    if (strcmp(point, "relay_after_publish") != 0) return;
    unsigned char b[4];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) return;
    double draw =
        (double)((unsigned)b[0] << 24 | (unsigned)b[1] << 16 | (unsigned)b[2] << 8 | b[3]) /
        4294967296.0;
    if (draw < a->cfg.crash_rate) {
        static const char msg[] = "shop-worker: --crash-after-publish: exiting after a batch was "
                                  "published and before it was marked\n";
        ssize_t n = write(2, msg, sizeof msg - 1);
        (void)n;
        _exit(86);
    }
}

static int start_relay(app *a) {
    ferry_routes *routes = NULL;
    ferry_error e = {0};
    if (ferry_routes_parse(SHOP_ROUTES, strlen(SHOP_ROUTES), "SHOP_ROUTES", &routes, &e)) {
        ex_log("the shop's routes: %s", e.message);
        return -1;
    }
    ferry_relay_queue_defaults qd[] = {{SHOP_Q_PAYMENTS, SHOP_PAYMENTS_JOB_OPTS}};
    ferry_relay_options ro;
    ferry_relay_options_init(&ro);
    ro.database_url = a->cfg.database;
    ro.schema = a->cfg.schema;
    ro.routes = routes;
    ro.redis = &a->redis;
    ro.prefix = a->cfg.prefix;
    ro.default_job_opts = SHOP_DEFAULT_JOB_OPTS;
    ro.queue_defaults = qd;
    ro.nqueue_defaults = 1;
    ro.retention_s = -1; /* the outbox-cleanup scheduler deletes published rows (the seed's) */
    ro.log = relay_log;
    ro.log_userdata = a;
    if (a->cfg.crash_rate > 0) {
        ro.fault = crash_after_publish;
        ro.fault_userdata = a;
    }
    int rc = ferry_relay_create(&ro, &a->relay, &e);
    ferry_routes_free(routes);
    if (rc) {
        ex_log("cannot create the relay: %s", e.message);
        return -1;
    }
    if (pthread_create(&a->relay_thread, NULL, relay_main, a)) {
        ex_log("cannot start the relay's thread");
        return -1;
    }
    a->relay_thread_started = 1;
    /* wait for "relay: started" or its start-up failure (each bounded by its timeouts) */
    pthread_mutex_lock(&a->mu);
    while (a->relay_state == 0 && !ex_stopping()) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 200 * 1000000L;
        if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&a->cv, &a->mu, &dl);
    }
    int failed = a->relay_state == 2 && a->relay_rc != 0;
    pthread_mutex_unlock(&a->mu);
    if (failed) {
        ex_log("the relay cannot start: %s", a->relay_err.message);
        return -1;
    }
    return 0;
}

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Stop everything started, in order: relay and workers stop taking work, running jobs
 * finish within the drain deadline, dead letters are written. Returns 0 when all of it
 * finished in time, -1 when jobs were left running (their resources are then kept). */
static int stop_all(app *a) {
    long long deadline = mono_ms() + a->cfg.drain_ms;
    if (a->relay_thread_started) ferry_relay_stop(a->relay);
    for (size_t i = 0; i < NQUEUES; i++)
        if (a->workers[i]) ferry_worker_stop(a->workers[i]);
    if (a->relay_thread_started) pthread_join(a->relay_thread, NULL);
    ferry_relay_free(a->relay);
    a->relay = NULL;
    int late = 0;
    for (size_t i = 0; i < NQUEUES; i++) {
        if (!a->workers[i]) continue;
        long long left = deadline - mono_ms();
        if (ferry_worker_close(a->workers[i], left > 0 ? (int)left : 0) != 0) {
            ex_log("WARN [%s] drain deadline passed with jobs still running: they will be "
                   "recovered as stalled",
                   queue_defs[i].queue);
            late = 1; /* its abandoned handlers may still use the worker and the pool */
        } else {
            ferry_worker_free(a->workers[i]);
        }
        a->workers[i] = NULL;
    }
    if (a->recorder) {
        long long left = deadline - mono_ms();
        if (ferry_dlq_recorder_flush(a->recorder, left > 1000 ? (int)left : 1000))
            ex_log("WARN dead letters still pending at stop: the jobs stay in their failed sets "
                   "(`ferry dlq sync` records them)");
        ferry_dlq_recorder_close(a->recorder, 1000);
        a->recorder = NULL;
    }
    if (!late) ex_pgpool_free(a->pool);
    a->pool = NULL;
    return late ? -1 : 0;
}

/* Connect once and make sure the tables are there. */
static int check_schema(const config *cfg) {
    char err[1024];
    PGconn *c = ex_pg_connect(cfg->database, cfg->schema, 5000, 60000, err, sizeof err);
    if (!c) {
        ex_log("%s", err);
        return -1;
    }
    PQclear(PQexec(c, "SET client_min_messages = warning")); /* no "already exists" notices */
    int rc = shop_schema_ensure(c, cfg->schema, err, sizeof err);
    PQfinish(c);
    if (rc) ex_log("%s", err);
    return rc;
}

int main(int argc, char **argv) {
    static app a; /* static: abandoned handlers may outlive main's frame at a late stop */
    char name_buf[64];
    int rc = parse_flags(argc, argv, &a.cfg, name_buf, sizeof name_buf);
    if (rc >= 0) return rc;
    ex_log_init(PROG);
    g_verbose = a.cfg.verbose;

    /* SIGTERM/SIGINT go to signal_main only: blocked here before any thread starts, so
     * every thread inherits the mask and no handler call is interrupted. */
    static sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    pthread_t sig_thread;
    if (ex_signals_install() || ex_http_global_init() ||
        pthread_create(&sig_thread, NULL, signal_main, &stop_signals)) {
        ex_log("cannot set up signal handling or libcurl");
        return 1;
    }
    pthread_detach(sig_thread);
    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);

    if (check_schema(&a.cfg)) return 1;
    ferry_redis_options_init(&a.redis);
    a.redis.url = a.cfg.redis;
    a.capped = (ferry_backoff_capped_config){a.cfg.capped_base_ms, a.cfg.capped_cap_ms};
    a.pool = ex_pgpool_new(a.cfg.database, a.cfg.schema, (int)a.cfg.pool, 10000);
    if (!a.pool) {
        ex_log("out of memory");
        return 1;
    }
    a.ctx = (shop_ctx){.pool = a.pool,
                       .schema = a.cfg.schema,
                       .gateway_url = a.cfg.gateway,
                       .carrier_url = a.cfg.carrier,
                       .mailer_url = a.cfg.mailer,
                       .provider_timeout_ms = (int)a.cfg.timeout_ms,
                       .settle_ms = (int)a.cfg.settle_ms,
                       .verbose = a.cfg.verbose};

    int failed = start_recorder(&a) || start_workers(&a) || upsert_scheduler(&a) ||
                 (a.cfg.relay && start_relay(&a));
    if (!failed && !ex_stopping()) sync_dead_letters(&a);
    if (failed) {
        stop_all(&a);
        return 1;
    }
    if (!ex_stopping()) {
        char shown[256];
        ex_log("running: relay %s, queues payments(10) notifications(5) shipping(4, %ld/s) "
               "loyalty(5) maintenance(1), prefix %s, schema %s, database %s, name %s",
               a.cfg.relay ? "on" : "off", a.cfg.ship_rate, a.cfg.prefix, a.cfg.schema,
               ferry_outbox_database_url_display(a.cfg.database, shown, sizeof shown), a.cfg.name);
        printf("ready\n");
        fflush(stdout);
        ex_wait_stop(-1);
    }
    int late = stop_all(&a);
    ex_log(late ? "stopped; jobs left running go back to the queues as stalled" : "stopped");
    return late ? 1 : 0;
}

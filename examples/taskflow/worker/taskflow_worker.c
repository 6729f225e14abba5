/* taskflow_worker.c - taskflow-worker: the seed's separate notification process.
 *
 * One process runs
 *   - the relay (its own thread): committed task.assigned.v1 outbox rows become
 *     task-assigned.v1 jobs on the notifications queue (jobId = the event id, the seed's
 *     job options), then are marked published; `--no-relay` leaves that to another process
 *     (`ferry relay`, or another taskflow-worker);
 *   - the notifications worker: each job's payload is checked against the contract
 *     (contracts/task-assigned.v1@1.json) before the handler runs, so an unknown
 *     schemaVersion or a payload breaking the schema fails for good without an email; every
 *     final failure is recorded in dead_letters by a recorder; the handler is notify.c.
 * It prints `ready` once the relay thread and the worker are started. SIGTERM or SIGINT:
 * stop fetching, let running handlers finish, stop the relay after its batch, write the
 * pending dead letters, exit 0. Exit 1: start-up failure; 2: usage. */
#include "ex_flags.h"
#include "ex_http.h"
#include "ex_text.h"
#include "ex_util.h"
#include "notify.h"
#include "taskflow_common.h"

#include <ferry/ferry.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TASKFLOW_CONTRACTS_DIR
#define TASKFLOW_CONTRACTS_DIR "contracts"
#endif

#define CLOSE_DEADLINE_MS 30000    /* running handlers' time to finish at stop */
#define RECORDER_DEADLINE_MS 10000 /* pending dead letters' time to be written at stop */

/* ---- options: one table for parsing and --help ---------------------------------------- */

typedef struct config {
    const char *database, *redis, *schema, *prefix, *mailer_url, *contracts;
    long mailer_timeout_ms, concurrency;
    int no_relay;
} config;

enum {
    OPT_DATABASE,
    OPT_REDIS,
    OPT_SCHEMA,
    OPT_PREFIX,
    OPT_MAILER_URL,
    OPT_MAILER_TIMEOUT,
    OPT_CONTRACTS,
    OPT_CONCURRENCY,
    OPT_NO_RELAY,
    OPT_HELP,
    NOPTS
};

static const ex_flag opts[NOPTS] = {
    [OPT_DATABASE] = {"database", "URL",
                      "PostgreSQL URL or conninfo (default $DATABASE_URL, else libpq's)"},
    [OPT_REDIS] = {"redis", "URL",
                   "Redis URL (default $REDIS_URL, else " FERRY_DEFAULT_REDIS_URL ")"},
    [OPT_SCHEMA] = {"schema", "NAME",
                    "schema of ferry's and taskflow's tables (default " TASKFLOW_SCHEMA ")"},
    [OPT_PREFIX] = {"prefix", "PREFIX",
                    "Redis key prefix of the queues (default " TASKFLOW_PREFIX ")"},
    [OPT_MAILER_URL] = {"mailer-url", "URL",
                        "the mailer's base URL (default $MAILER_URL, else "
                        "http://127.0.0.1:7071/mailer)"},
    [OPT_MAILER_TIMEOUT] = {"mailer-timeout", "MS", "deadline of one mailer call (default 2000)"},
    [OPT_CONTRACTS] = {"contracts", "DIR",
                       "payload contracts (default " TASKFLOW_CONTRACTS_DIR ")"},
    [OPT_CONCURRENCY] = {"concurrency", "N",
                         "handler threads of the notifications queue (default 10)"},
    [OPT_NO_RELAY] = {"no-relay", NULL, "do not run the relay in this process"},
    [OPT_HELP] = {"help", NULL, "this text"},
};

static void usage(FILE *to) {
    fprintf(to, "usage: taskflow-worker [options]\n"
                "  Relays task.assigned.v1 events to the notifications queue and sends the\n"
                "  task-assigned email for each, once. Prints `ready` once started; SIGTERM\n"
                "  drains and exits 0.\n");
    ex_flags_print(to, opts, NOPTS, 20);
}

/* Returns 0 to go on, or 2 after a usage error (printed); --help prints the usage and exits 0. */
static int parse_args(int argc, char **argv, config *c) {
    const char *v[NOPTS];
    int rc = ex_flags_scan("taskflow-worker", opts, NOPTS, argc, argv, v, stderr);
    if (rc == 1) {
        usage(stdout);
        exit(0);
    }
    if (rc) return 2;
    c->database = ex_opt(v[OPT_DATABASE], "DATABASE_URL", NULL);
    c->redis = ex_opt(v[OPT_REDIS], "REDIS_URL", FERRY_DEFAULT_REDIS_URL);
    c->schema = ex_opt(v[OPT_SCHEMA], NULL, TASKFLOW_SCHEMA);
    c->prefix = ex_opt(v[OPT_PREFIX], NULL, TASKFLOW_PREFIX);
    c->mailer_url = ex_opt(v[OPT_MAILER_URL], "MAILER_URL", "http://127.0.0.1:7071/mailer");
    c->contracts = ex_opt(v[OPT_CONTRACTS], NULL, TASKFLOW_CONTRACTS_DIR);
    c->no_relay = v[OPT_NO_RELAY] != NULL;
    const ex_flag_number nums[] = {
        {OPT_CONCURRENCY, "10", 1, FERRY_CONCURRENCY_MAX, &c->concurrency},
        {OPT_MAILER_TIMEOUT, "2000", 1, 600000, &c->mailer_timeout_ms},
    };
    char err[1024];
    if (ex_flags_numbers(opts, v, nums, sizeof nums / sizeof nums[0], err, sizeof err)) {
        fprintf(stderr, "taskflow-worker: %s\n", err);
        return 2;
    }
    return 0;
}

/* ---- the relay's thread --------------------------------------------------------------- */

typedef struct relay_thread {
    ferry_relay *relay;
    pthread_t tid;
    int failed;
} relay_thread;

static void *relay_main(void *arg) {
    relay_thread *rt = arg;
    ferry_error e = {0};
    if (ferry_relay_run(rt->relay, &e) != 0) {
        ex_log("relay: %s", e.message);
        rt->failed = 1;
        ex_request_stop(); /* a worker without its relay would wait for nothing */
    }
    return NULL;
}

static int relay_start(const config *c, const ferry_redis_options *ro, relay_thread *rt) {
    ferry_relay_options o;
    ferry_relay_options_init(&o);
    o.database_url = c->database;
    o.schema = c->schema;
    ferry_routes *routes = NULL;
    ferry_error e = {0};
    if (ferry_routes_parse(TASKFLOW_ROUTES, strlen(TASKFLOW_ROUTES), "taskflow routes", &routes,
                           &e)) {
        ex_log("relay: %s", e.message);
        return -1;
    }
    o.routes = routes;
    o.redis = ro;
    o.prefix = c->prefix;
    o.default_job_opts = TASKFLOW_JOB_OPTS;
    o.log = ex_ferry_log;
    o.log_userdata = "relay";
    int rc = ferry_relay_create(&o, &rt->relay, &e);
    ferry_routes_free(routes); /* copied by create */
    if (rc) {
        ex_log("relay: %s", e.message);
        return -1;
    }
    if (pthread_create(&rt->tid, NULL, relay_main, rt)) {
        ex_log("relay: cannot start its thread");
        ferry_relay_free(rt->relay);
        rt->relay = NULL;
        return -1;
    }
    return 0;
}

static void relay_finish(relay_thread *rt) {
    if (!rt->relay) return;
    ferry_relay_stop(rt->relay);
    pthread_join(rt->tid, NULL);
    ferry_relay_free(rt->relay);
    rt->relay = NULL;
}

/* ---- the worker ----------------------------------------------------------------------- */

static void job_log(const ferry_job_log *rec, void *userdata) {
    (void)userdata;
    char line[1024];
    ferry_job_log_format(rec, 0, line, sizeof line); /* never job data */
    ex_log("%s", line);
}

int main(int argc, char **argv) {
    config cfg = {0};
    int rc = parse_args(argc, argv, &cfg);
    if (rc) return rc;
    long concurrency = cfg.concurrency, mailer_timeout = cfg.mailer_timeout_ms;
    char err[1024];
    ferry_error fe = {0};
    if (ferry_redis_url_check(cfg.redis, &fe)) {
        fprintf(stderr, "taskflow-worker: --redis: %s\n", fe.message);
        return 2;
    }
    char mailer[512];
    if (strncmp(cfg.mailer_url, "http://", 7) && strncmp(cfg.mailer_url, "https://", 8)) {
        fprintf(stderr, "taskflow-worker: --mailer-url must be an http:// or https:// URL\n");
        return 2;
    }
    snprintf(mailer, sizeof mailer, "%s", cfg.mailer_url);
    for (size_t n = strlen(mailer); n && mailer[n - 1] == '/';)
        mailer[--n] = '\0';

    ex_log_init("taskflow-worker");
    if (ex_signals_install() || ex_http_global_init()) {
        ex_log("cannot set up signals or libcurl");
        return 1;
    }
    ferry_contracts *contracts = NULL;
    if (ferry_contracts_load_dir(cfg.contracts, &contracts, &fe)) {
        ex_log("contracts: %s", fe.message);
        return 1;
    }
    PGconn *c = ex_pg_connect(cfg.database, cfg.schema, 5000, 10000, err, sizeof err);
    if (!c) {
        ex_log("cannot connect to PostgreSQL: %s", err);
        ferry_contracts_free(contracts);
        return 1;
    }
    rc = taskflow_schema_ensure(c, cfg.schema, err, sizeof err);
    PQfinish(c);
    if (rc) {
        ex_log("%s", err);
        ferry_contracts_free(contracts);
        return 1;
    }

    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = cfg.redis;

    ferry_dlq_recorder_options dro;
    ferry_dlq_recorder_options_init(&dro);
    dro.database_url = cfg.database;
    dro.schema = cfg.schema;
    dro.prefix = cfg.prefix;
    dro.log = ex_ferry_log;
    dro.log_userdata = "dead letters";
    ferry_dlq_recorder *rec = NULL;
    if (ferry_dlq_recorder_start(&dro, &rec, &fe)) {
        ex_log("dead-letter recorder: %s", fe.message);
        ferry_contracts_free(contracts);
        return 1;
    }

    tf_notifier notifier = {.mailer_url = mailer, .mailer_timeout_ms = (int)mailer_timeout};
    notifier.pool = ex_pgpool_new(cfg.database, cfg.schema, (int)concurrency, 10000);
    ferry_worker_options wo;
    ferry_worker_options_init(&wo);
    wo.redis = &ro;
    wo.prefix = cfg.prefix;
    wo.name = "taskflow-worker";
    wo.concurrency = (int)concurrency;
    wo.check = ferry_contracts_job_check;
    wo.check_userdata = contracts;
    wo.final_failure = ferry_dlq_recorder_final_failure;
    wo.final_failure_userdata = rec;
    wo.callbacks.job_log = job_log;
    wo.callbacks.log = ex_ferry_log;
    wo.userdata = "worker";
    ferry_worker *w = NULL;
    if (!notifier.pool || ferry_worker_create(TASKFLOW_Q_NOTIFICATIONS, &wo,
                                              tf_notify_task_assigned, &notifier, &w, &fe)) {
        ex_log("worker: %s", notifier.pool ? fe.message : "out of memory");
        ferry_dlq_recorder_close(rec, 0);
        ex_pgpool_free(notifier.pool);
        ferry_contracts_free(contracts);
        return 1;
    }

    relay_thread rt = {0};
    int failed = 0;
    if (!cfg.no_relay && relay_start(&cfg, &ro, &rt)) {
        failed = 1;
    } else if (ferry_worker_start(w, &fe)) {
        ex_log("worker: cannot start on %s: %s", TASKFLOW_Q_NOTIFICATIONS, fe.message);
        failed = 1;
    } else {
        printf("ready\n");
        fflush(stdout);
        char shown[256];
        ex_log("ready: queue %s:%s (concurrency %ld), relay %s, contracts %s, mailer %s",
               cfg.prefix, TASKFLOW_Q_NOTIFICATIONS, concurrency, cfg.no_relay ? "off" : "on",
               cfg.contracts, ex_url_display(mailer, shown, sizeof shown));
        ex_wait_stop(-1);
        ex_log("stopping");
    }

    ferry_worker_stop(w);
    if (rt.relay) ferry_relay_stop(rt.relay); /* both stop while the handlers finish */
    int closed = ferry_worker_close(w, CLOSE_DEADLINE_MS);
    relay_finish(&rt);
    if (rt.failed) failed = 1;
    ferry_dlq_recorder_close(rec, RECORDER_DEADLINE_MS);
    if (closed != 0) {
        /* abandoned handlers may still use the notifier, the pool and the contracts:
         * they are left to the process exit */
        ex_log("handlers still running after %d ms: their jobs are recovered as stalled",
               CLOSE_DEADLINE_MS);
        return 1;
    }
    ferry_worker_free(w);
    ex_pgpool_free(notifier.pool);
    ferry_contracts_free(contracts);
    if (!failed) ex_log("stopped");
    return failed ? 1 : 0;
}

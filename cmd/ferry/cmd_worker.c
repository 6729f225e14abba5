/* cmd_worker.c - `ferry worker QUEUE -- CMD [ARGS...]`: the exec worker. Each job runs CMD
 * (exec_job.c) and its exit status becomes the job's outcome (codes in exec_job.h):
 *   0 completed (stdout = return value), 65 permanent failure, 118 retry later and 119
 *   throttled (delay from the last stdout line), 75 or anything else (including a signal or
 *   the time limit) transient failure.
 * One log line per job outcome comes from the library's job_log record; every line the worker
 * writes is text with a timestamp or, with --log-format json, one JSON object (logline.h,
 * worker_log.h; events in docs/logging.md).
 * Signals are handled by a sigwait thread (the library is not async-signal-safe): the
 * first SIGTERM/SIGINT/SIGHUP starts a graceful close, a second one sends SIGTERM to the
 * running commands, a third SIGKILL. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "db_opts.h"
#include "exec_job.h"
#include "ferry/contract.h"
#include "job_outcome.h"
#include "jsonw.h"
#include "logline.h"
#include "metrics_opt.h"
#include "signals.h"
#include "util/json_text.h"
#include "util/printable.h"
#include "util/retry_delay.h"
#include "worker_log.h"

extern char **environ;

typedef struct worker_opts {
    long long concurrency, lock_duration, job_timeout, kill_grace, max_stalled, stalled_interval,
        shutdown_timeout, max_jobs, idle_exit, max_output, limiter_max, limiter_duration,
        max_started, retry_later_default, lanes, connect_timeout, max_payload, bullmq_metrics;
    const char *name, *remove_on_complete, *remove_on_fail, *log_format;
    const char *pass_env;       /* the last --pass-env; all of them: pass_env_names() */
    const char *contracts;      /* --contracts DIR */
    int no_dead_letters;        /* --no-dead-letters */
    const char *metrics_listen; /* --metrics-listen ADDR:PORT */
    int metrics_no_job_name;    /* --metrics-no-job-name */
} worker_opts;

enum { LOG_TEXT, LOG_JSON, LOG_NONE }; /* --log-format; json also sets logline_set_format */
#define RETRY_LATER_DEFAULT_MS 5000

#define MAX_STALLED_UNSET LLONG_MIN /* no --max-stalled-count given */
#define DAY_MS (24LL * 3600 * 1000)

static const opt_def worker_defs[] = {
    {"concurrency", OPT_INT, "K", offsetof(worker_opts, concurrency), 1, FERRY_CONCURRENCY_MAX,
     "Jobs run at the same time (default 1)."},
    {"lanes", OPT_INT, "N", offsetof(worker_opts, lanes), 1, 4,
     "Redis connection pairs sharing --concurrency, each with its own call in flight "
     "(default: 2 from concurrency 8 up, else 1; never more than K)."},
    {"job-timeout", OPT_INT, "MS", offsetof(worker_opts, job_timeout), 0, 30 * DAY_MS,
     "Time limit per job: the command gets SIGTERM, then SIGKILL after --kill-grace, and "
     "the job fails (transient) with \"timeout after MS ms\". 0 = none (default)."},
    {"timeout", OPT_INT, "MS", offsetof(worker_opts, job_timeout), 0, 30 * DAY_MS,
     "Same as --job-timeout (here --timeout is the job limit; the Redis command timeout is "
     "--command-timeout)."},
    {"kill-grace", OPT_INT, "MS", offsetof(worker_opts, kill_grace), 0, 3600000,
     "Delay between SIGTERM and SIGKILL when a job is stopped (default 5000)."},
    {"lock-duration", OPT_INT, "MS", offsetof(worker_opts, lock_duration), 1000, DAY_MS,
     "Job lock duration, renewed while the command runs (default 30000)."},
    {"name", OPT_STRING, "N", offsetof(worker_opts, name), 0, 0,
     "Worker name (1 to 256 bytes), stored on each job as processedBy."},
    {"max-stalled-count", OPT_INT, "N", offsetof(worker_opts, max_stalled), -1, 1000000,
     "Times a job may be recovered from a dead worker before it fails (default 1; 0 = the "
     "first stall fails it, as BullMQ's maxStalledCount 0; -1 = never fail)."},
    {"stalled-interval", OPT_INT, "MS", offsetof(worker_opts, stalled_interval), 1000, DAY_MS,
     "How often to look for stalled jobs (default 30000)."},
    {"remove-on-complete", OPT_JSON, "JSON", offsetof(worker_opts, remove_on_complete), 0, 0,
     "Default removeOnComplete for jobs without one: true, false, a count, or "
     "{\"age\":SECONDS,\"count\":N}."},
    {"remove-on-fail", OPT_JSON, "JSON", offsetof(worker_opts, remove_on_fail), 0, 0,
     "Default removeOnFail for jobs without one (same forms)."},
    {"max-output", OPT_INT, "BYTES", offsetof(worker_opts, max_output), 1, FERRY_RETURN_MAX_BYTES,
     "Most stdout kept per job (default 1048576); more stops the command and fails the job."},
    {"shutdown-timeout", OPT_INT, "MS", offsetof(worker_opts, shutdown_timeout), 0, DAY_MS,
     "On SIGTERM/SIGINT/SIGHUP, how long to wait for running jobs (default 30000). Jobs still "
     "running then are killed and later recovered as stalled; exit status 1."},
    {"max-jobs", OPT_INT, "N", offsetof(worker_opts, max_jobs), 1, 1LL << 40,
     "Run the command for N jobs at most (every run counts, postponed ones too), then exit "
     "(gracefully, status 0) once their outcomes are stored. Jobs fetched beyond N are not "
     "run: they go back to the queue at once, no attempt spent (as exit 118 with delay 0)."},
    {"idle-exit", OPT_INT, "MS", offsetof(worker_opts, idle_exit), 1, 30 * DAY_MS,
     "Exit (gracefully, status 0) once no job has run for MS."},
    {"limiter-max", OPT_INT, "N", offsetof(worker_opts, limiter_max), 1, 1000000,
     "Rate limit shared by every limited worker of the queue (Node's too): at most N jobs per "
     "--limiter-duration. Both or neither. Needed for exit 119 to throttle the whole queue."},
    {"limiter-duration", OPT_INT, "MS", offsetof(worker_opts, limiter_duration), 1, DAY_MS,
     "Window of --limiter-max."},
    {"max-payload", OPT_INT, "BYTES", offsetof(worker_opts, max_payload), 1,
     (long long)FERRY_MAX_PAYLOAD_LIMIT,
     "Largest job data (bytes of JSON) to run: a bigger job fails at once and for good "
     "without running, its reason giving both sizes. Default: no limit."},
    {"max-started-attempts", OPT_INT, "N", offsetof(worker_opts, max_started), 1, 1000000,
     "Fail a job once it has been started N times, counting runs that did not spend an "
     "attempt (exit 118/119, stalls): the safety net against endless postponing. Default: "
     "unlimited."},
    {"retry-later-default", OPT_INT, "MS", offsetof(worker_opts, retry_later_default), 0,
     FERRY_RETRY_AFTER_MAX_MS,
     "Delay for exit 118 when the command gives no delay hint (default 5000)."},
    {"log-format", OPT_STRING, "F", offsetof(worker_opts, log_format), 0, 0,
     "Log lines on stderr: text (default: a UTC timestamp, then the text), json (every line "
     "the worker writes is one JSON object with \"time\", \"level\", \"event\" and \"msg\", "
     "job lines with the job's trace id; see docs/logging.md) or none (no per-job lines; the "
     "others as text). Never job data or return values. The commands' own stderr lines "
     "pass through as they are."},
    {"connect-timeout", OPT_INT, "MS", offsetof(worker_opts, connect_timeout), 1, 30 * DAY_MS,
     "At start, how long to keep trying to reach Redis (refused, timed out, still loading) "
     "before exiting 1. Default: forever (tries 100 ms apart, doubling to 5 s)."},
    {"contracts", OPT_STRING, "DIR", offsetof(worker_opts, contracts), 0, 0,
     "Check each job's payload against the JSON Schema contract for its name before running "
     "the command: DIR holds NAME.json (the contract of job name NAME) and NAME@V.json (of "
     "payloads whose schemaVersion is V). A job without a contract, of an unknown version or "
     "with a payload that does not pass fails at once without retry, its reason naming the "
     "path and keyword (never a value). A bad schema is refused at start. "
     "See docs/contracts.md."},
    {"no-dead-letters", OPT_FLAG, NULL, offsetof(worker_opts, no_dead_letters), 0, 0,
     "Do not record final failures in the database even when one is given (by the options "
     "below or $DATABASE_URL)."},
    {"pass-env", OPT_STRING, "NAME", offsetof(worker_opts, pass_env), 0, 0,
     "Keep the credential variable NAME (REDIS_URL, DATABASE_URL, PGPASSWORD or FERRY_*_URL) "
     "in the commands' environment, which otherwise lacks them. Repeatable."},
    {"metrics-listen", OPT_STRING, "ADDR:PORT", offsetof(worker_opts, metrics_listen), 0, 0,
     "Serve Prometheus metrics (GET /metrics) on ADDR:PORT: ADDR an IPv4 literal, [IPv6] or "
     "localhost, PORT 0 for any free one (the log line at start says which). Nothing is "
     "served without it. See docs/metrics.md."},
    {"metrics-no-job-name", OPT_FLAG, NULL, offsetof(worker_opts, metrics_no_job_name), 0, 0,
     "Leave the job name out of the metrics (their name label is \"\"): for queues whose job "
     "names are not a small fixed set."},
    {"bullmq-metrics", OPT_INT, "N", offsetof(worker_opts, bullmq_metrics), 1,
     FERRY_BULLMQ_METRICS_POINTS_MAX,
     "Write BullMQ's own per-minute metrics keys (<prefix>:<queue>:metrics:completed|failed), "
     "keeping N data points, as a Node Worker with metrics: {maxDataPoints: N} does, so "
     "Queue.getMetrics, bull-board and Taskforce count this worker's jobs (10080 = a week)."},
};

static const cmd_spec worker_spec = {
    "worker",
    "QUEUE -- CMD [ARGS...]",
    "Process jobs of QUEUE by running CMD (no shell) once per job, with the job data as JSON "
    "on standard input.",
    "Each job's command gets the environment variables FERRY_QUEUE, FERRY_JOB_ID,\n"
    "FERRY_JOB_NAME, FERRY_ATTEMPT (attempts spent + 1: 1 on the first attempt, unchanged\n"
    "after exit 118/119) and FERRY_ATTEMPTS_STARTED (runs so far, this one included);\n"
    "for outbox events also FERRY_EVENT_ID (the eventId, a UUID) and FERRY_TRACE_ID (the\n"
    "traceId), each only when the job's data carries a usable one; stdin is the whole data,\n"
    "envelope included. All this comes\n"
    "besides the worker's own environment without its credentials: REDIS_URL,\n"
    "DATABASE_URL, PGPASSWORD and FERRY_*_URL are removed unless named by --pass-env.\n"
    "Whatever a command leaves running is killed when it exits, and every command with\n"
    "all it started is killed if the worker dies, even by SIGKILL.\n"
    "Its exit status decides:\n"
    "  0          completed; stdout is the return value (stored as JSON when it parses,\n"
    "             else as a JSON string; empty = null). Stdout that is neither JSON nor\n"
    "             UTF-8 text fails the job without retry (it ran: a retry would repeat it)\n"
    "  65         failed permanently (no retry; BullMQ UnrecoverableError)\n"
    "  75         failed, retried while attempts remain (backoff from the job's opts)\n"
    "  118        retry later: back to delayed without spending an attempt\n"
    "  119        throttled: with --limiter-max the whole queue pauses for the delay and\n"
    "             the job goes back to wait; without, as 118. No attempt spent.\n"
    "  other      failed like 75; so does death by a signal, the time limit, or stdout\n"
    "             over --max-output\n"
    "For 118/119 the delay is the last stdout line: FERRY_RETRY_AFTER_MS=<ms> or\n"
    "Retry-After: <seconds|HTTP-date> (at most a day); with neither, 118 waits\n"
    "--retry-later-default and 119 10000 ms. A malformed FERRY_RETRY_AFTER_MS line fails\n"
    "the job as 75 would. `ferry http-outcome STATUS [RETRY_AFTER]` prints the line and\n"
    "exits with the code for an HTTP response.\n"
    "failedReason is the last non-empty line the command wrote to stderr (a line of 1 KiB\n"
    "or more keeps its first 1020 bytes, then \"...\"), else \"exit N\" / \"signal N\".\n"
    "The command's stderr is passed through, each line prefixed with [job ID]. One log\n"
    "line per job outcome goes to stderr (--log-format; never job data or return values).\n"
    "CMD must be an executable file (by path or in PATH) when the worker starts, else\n"
    "exit 2; a run that cannot start it later fails the job as 75 would.\n"
    "Every line the worker writes itself starts with the time (UTC, ms); with --log-format\n"
    "json it is one JSON object led by \"time\" (docs/logging.md). At start it waits\n"
    "for Redis: each failed try is logged and retried (--connect-timeout bounds it); a\n"
    "wrong password, a TLS failure or a refused command exits 1 at once. Once running, a\n"
    "lost Redis is logged once, and once again when it is back.\n"
    "SIGTERM/SIGINT/SIGHUP: stop fetching, let running jobs finish, exit 0. A second signal\n"
    "sends SIGTERM to the running commands, a third SIGKILL; their jobs go back to the\n"
    "queue without spending an attempt (unless the command still exits 0). While still\n"
    "connecting at start, the first signal exits 0 at once (no job taken).\n",
    1,
    1,
    1,
    1};

/* ---- shared state ------------------------------------------------------------------------- */

/* How the command ended (exit:N, signal:N, timeout...), kept from the handler until the
 * job_log callback prints the outcome line: the library's record does not know it. */
typedef struct outcome_note {
    char *id;
    char status[48];
    struct outcome_note *next;
} outcome_note;

typedef struct exec_worker {
    const char *queue;
    char **cmd;
    const worker_opts *o;
    char **base_env; /* environ minus FERRY_QUEUE/JOB_ID/... and credentials (borrowed) */
    size_t nbase;
    const char **pass; /* --pass-env names (borrowed from argv) */
    size_t npass;
    const cli_conn *conn;

    ferry_worker *w; /* set before start; for ferry_worker_stop from a handler */

    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop_requested;
    /* ferry_worker_start returned (either way); a stop signal before that, while it is
     * still connecting (which can take the whole command timeout), exits at once */
    int start_returned;
    /* a second stop signal killed the running commands: their jobs, and jobs fetched but not
     * started, go back to the queue (no attempt spent): a worker that stops is not the
     * jobs' failure */
    int shutdown_kill;
    /* --max-jobs: runs begun (at most max_jobs), runs whose outcome is stored, and fetched
     * jobs handed back without running once max_jobs runs had begun */
    unsigned long long runs_claimed, runs_stored, handed_back;
    int running;
    long long last_activity;
    outcome_note *notes;
    int log_format; /* LOG_* */
} exec_worker;

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void request_stop(exec_worker *xw) {
    pthread_mutex_lock(&xw->lock);
    xw->stop_requested = 1;
    pthread_cond_signal(&xw->cond);
    pthread_mutex_unlock(&xw->lock);
}

/* Printable copy for log lines: control characters become '?'. */
static void printable(char *dst, size_t cap, const char *src) {
    size_t i = 0;
    for (; src && src[i] && i + 1 < cap; i++)
        dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
    dst[i] = 0;
}

/* ---- per-job environment ------------------------------------------------------------------ */

#define NJOB_VARS 7 /* at most: the last two only when the job has them */

static int is_ferry_var(const char *kv) {
    static const char *const names[NJOB_VARS] = {
        "FERRY_QUEUE=",   "FERRY_JOB_ID=",           "FERRY_JOB_NAME=",
        "FERRY_ATTEMPT=", "FERRY_ATTEMPTS_STARTED=", "FERRY_EVENT_ID=",
        "FERRY_TRACE_ID="};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strncmp(kv, names[i], strlen(names[i]))) return 1;
    return 0;
}

/* ferry's credentials: the variables it reads a URL or password from (REDIS_URL here,
 * DATABASE_URL in the outbox commands, PGPASSWORD in libpq, FERRY_BENCH_REDIS_URL and any
 * other FERRY_*_URL). A job command does not get them (a script that prints its
 * environment would publish them) unless --pass-env names one. Path variables such as
 * PGPASSFILE stay: they name a file the command's user can read anyway. */
static int is_credential_name(const char *name, size_t len) {
    static const char *const names[] = {"REDIS_URL", "DATABASE_URL", "PGPASSWORD"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !memcmp(name, names[i], len)) return 1;
    return len > 10 && !memcmp(name, "FERRY_", 6) && !memcmp(name + len - 4, "_URL", 4);
}

static int passed_env(const exec_worker *xw, const char *name, size_t len) {
    for (size_t i = 0; i < xw->npass; i++)
        if (strlen(xw->pass[i]) == len && !memcmp(xw->pass[i], name, len)) return 1;
    return 0;
}

static char *kv(const char *k, const char *v) {
    size_t n = strlen(k) + strlen(v) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s=%s", k, v);
    return s;
}

/* envp for one job: base environment + the FERRY_* variables (FERRY_EVENT_ID and
 * FERRY_TRACE_ID only when the job's data is an envelope that has them). Returns the
 * NULL-terminated array; the added strings are at [nbase..), at most NJOB_VARS. NULL on
 * allocation failure. */
static char **job_env(const exec_worker *xw, const ferry_job *job, long long attempt) {
    char **env = calloc(xw->nbase + NJOB_VARS + 1, sizeof *env);
    if (!env) return NULL;
    memcpy(env, xw->base_env, xw->nbase * sizeof *env);
    char num[32], started[32];
    snprintf(num, sizeof num, "%lld", attempt);
    snprintf(started, sizeof started, "%ld", ferry_job_attempts_started(job));
    env[xw->nbase] = kv("FERRY_QUEUE", xw->queue);
    env[xw->nbase + 1] = kv("FERRY_JOB_ID", ferry_job_id(job));
    env[xw->nbase + 2] = kv("FERRY_JOB_NAME", ferry_job_name(job) ? ferry_job_name(job) : "");
    env[xw->nbase + 3] = kv("FERRY_ATTEMPT", num);
    env[xw->nbase + 4] = kv("FERRY_ATTEMPTS_STARTED", started);
    int n = 5;
    if (ferry_job_event_id(job))
        env[xw->nbase + n++] = kv("FERRY_EVENT_ID", ferry_job_event_id(job));
    if (ferry_job_trace_id(job))
        env[xw->nbase + n++] = kv("FERRY_TRACE_ID", ferry_job_trace_id(job));
    for (int i = 0; i < n; i++)
        if (!env[xw->nbase + i]) {
            for (int k = 0; k < NJOB_VARS; k++)
                free(env[xw->nbase + k]);
            free(env);
            return NULL;
        }
    return env;
}

static void job_env_free(const exec_worker *xw, char **env) {
    if (!env) return;
    for (int i = 0; i < NJOB_VARS; i++)
        free(env[xw->nbase + i]); /* the unused slots are NULL */
    free(env);
}

/* ---- handler and callbacks ---------------------------------------------------------------- */

static void activity(exec_worker *xw, int running_delta, int stored) {
    pthread_mutex_lock(&xw->lock);
    xw->running += running_delta;
    xw->runs_stored += (unsigned)stored;
    xw->last_activity = mono_ms();
    pthread_cond_signal(&xw->cond);
    pthread_mutex_unlock(&xw->lock);
}

/* Status of the outcome note of a job handed back unrun (--max-jobs). */
#define STATUS_HANDED_BACK "not-run"

/* --max-jobs: may this handler run its job? Exactly max_jobs runs are granted. The one that
 * takes the last run stops fetching at once, so that few jobs are fetched for nothing; the
 * jobs already fetched (a batch, the job fetched with the last finish) still reach a handler
 * and are handed back. */
static int claim_run(exec_worker *xw) {
    long long max = xw->o->max_jobs;
    pthread_mutex_lock(&xw->lock);
    if (xw->shutdown_kill) { /* stopping: do not start what the second signal would kill */
        xw->handed_back++;
        pthread_mutex_unlock(&xw->lock);
        return 0;
    }
    if (!max) {
        pthread_mutex_unlock(&xw->lock);
        return 1;
    }
    int granted = xw->runs_claimed < (unsigned long long)max;
    if (granted)
        xw->runs_claimed++;
    else
        xw->handed_back++;
    int last = granted && xw->runs_claimed == (unsigned long long)max;
    pthread_mutex_unlock(&xw->lock);
    if (last) ferry_worker_stop(xw->w);
    return granted;
}

/* Returns 0, or -1 when out of memory (the log line then lacks status). */
static int note_add(exec_worker *xw, const char *id, const char *status) {
    outcome_note *n = calloc(1, sizeof *n);
    if (!n || !(n->id = strdup(id))) {
        free(n);
        return -1;
    }
    snprintf(n->status, sizeof n->status, "%s", status);
    pthread_mutex_lock(&xw->lock);
    n->next = xw->notes;
    xw->notes = n;
    pthread_mutex_unlock(&xw->lock);
    return 0;
}

static outcome_note *note_take(exec_worker *xw, const char *id) {
    pthread_mutex_lock(&xw->lock);
    outcome_note *found = NULL;
    for (outcome_note **pp = &xw->notes; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->id, id)) {
            found = *pp;
            *pp = found->next;
            break;
        }
    pthread_mutex_unlock(&xw->lock);
    return found;
}

static ferry_outcome handle_job(ferry_job *job, void *userdata) {
    exec_worker *xw = userdata;
    if (!claim_run(xw)) {
        /* Back to the queue unharmed for another worker: delayed with no delay (ready at
         * once), no attempt spent, failedReason untouched; only attemptsStarted counts
         * this fetch, as for any postponed run. */
        note_add(xw, ferry_job_id(job), STATUS_HANDED_BACK);
        ferry_job_set_delay(job, 0);
        return FERRY_RETRY_LATER;
    }
    activity(xw, +1, 0);
    long long attempt = ferry_job_attempts_made(job) + 1;
    char prefix[160], idp[128];
    printable(idp, sizeof idp, ferry_job_id(job));
    snprintf(prefix, sizeof prefix, "[job %s] ", idp);
    char **env = job_env(xw, job, attempt);
    const char *data = ferry_job_data(job);
    exec_spec spec = {
        .argv = xw->cmd,
        .envp = env,
        .input = data,
        .input_len = data ? strlen(data) : 0,
        .max_output = (size_t)xw->o->max_output,
        .timeout_ms = xw->o->job_timeout,
        .kill_grace_ms = xw->o->kill_grace,
        .log_prefix = prefix,
    };
    exec_result res;
    int spawn_rc = 0;
    if (!env) {
        memset(&res, 0, sizeof res);
        res.spawn_errno = ENOMEM;
        spawn_rc = -1;
    } else {
        spawn_rc = exec_run(&spec, &res);
    }
    char status[48];
    job_outcome_rules rules = {.cmd = xw->cmd[0],
                               .job_timeout = xw->o->job_timeout,
                               .max_output = xw->o->max_output,
                               .retry_later_default = xw->o->retry_later_default};
    ferry_outcome how = job_outcome(&rules, job, &res, spawn_rc, status, sizeof status);
    /* Without a note (no memory) on_job_log cannot tell this run's record: count it now,
     * ferry_worker_close still waits for its outcome to be written. */
    if (note_add(xw, ferry_job_id(job), status) != 0) activity(xw, 0, 1);
    exec_result_free(&res);
    job_env_free(xw, env);
    activity(xw, -1, 0);
    return how;
}

/* Every outcome (completed, retry, failed, permanent, retry-later, throttled, lock-lost) ends
 * here once written to Redis: the log line, and for a job this worker ran, the count for
 * --max-jobs (not for jobs failed without running, nor for jobs handed back). */
static void on_job_log(const ferry_job_log *rec, void *userdata) {
    exec_worker *xw = userdata;
    outcome_note *n = rec->id ? note_take(xw, rec->id) : NULL;
    if (xw->log_format != LOG_NONE) worker_log_job(rec, n ? n->status : NULL);
    int ran = n && strcmp(n->status, STATUS_HANDED_BACK) != 0;
    if (n) free(n->id);
    free(n);
    activity(xw, 0, ran);
}

static void on_stalled(const char *job_id, void *userdata) {
    exec_worker *xw = userdata;
    char id[256], q[256];
    json_t *f = json_object();
    logline_set_str(f, "queue", xw->queue);
    logline_set_str(f, "id", job_id);
    logline_event("worker", FERRY_LOG_WARN, "worker.stalled", f,
                  "queue=%s id=%s stalled (moved back to wait)",
                  ferryx_printable(xw->queue, q, sizeof q),
                  ferryx_printable(job_id, id, sizeof id));
}

/* The worker keeps going after these (reconnects, retried scripts): a warning. */
static void on_error(const ferry_error *err, void *userdata) {
    exec_worker *xw = userdata;
    worker_log_error(&worker_spec, xw->conn, FERRY_LOG_WARN, "worker.error", NULL, "error", err);
}

static void on_notice(const ferry_worker_notice *n, void *userdata) {
    (void)userdata;
    worker_log_notice(n);
}

/* ---- signals ------------------------------------------------------------------------------ */

/* The members of a "worker.signal" line: the signal, how many so far, what it does. */
static json_t *signal_fields(int sig, int count, const char *action) {
    json_t *f = json_object();
    logline_set_str(f, "signal", cli_signame(sig));
    logline_set_int(f, "count", count);
    logline_set_str(f, "action", action);
    return f;
}

/* First signal: let running jobs finish; second: SIGTERM them; third: SIGKILL them. */
static void on_signal(int sig, int count, void *userdata) {
    exec_worker *xw = userdata;
    pthread_mutex_lock(&xw->lock);
    int connecting = !xw->start_returned;
    pthread_mutex_unlock(&xw->lock);
    if (connecting && ferry_worker_abort_start(xw->w)) {
        /* ferry_worker_start is still connecting (it may wait out the command timeout) and
         * will now launch no thread: no job was taken, so leave at once */
        logline_event("worker", FERRY_LOG_INFO, "worker.signal", signal_fields(sig, count, "exit"),
                      "%s received while connecting: exiting, no job was taken", cli_signame(sig));
        _exit(CLI_EXIT_OK);
    }
    if (count == 1) {
        logline_event("worker", FERRY_LOG_INFO, "worker.signal", signal_fields(sig, count, "drain"),
                      "%s received: finishing running jobs (up to %lld ms; send again to stop "
                      "them)",
                      cli_signame(sig), xw->o->shutdown_timeout);
        request_stop(xw);
    } else {
        pthread_mutex_lock(&xw->lock);
        xw->shutdown_kill = 1;
        pthread_mutex_unlock(&xw->lock);
        int n = exec_kill_all(count == 2 ? SIGTERM : SIGKILL);
        json_t *f = signal_fields(sig, count, count == 2 ? "terminate" : "kill");
        logline_set_int(f, "commands", n);
        logline_event("worker", FERRY_LOG_WARN, "worker.signal", f,
                      "%s received again: sent %s to %d running command%s", cli_signame(sig),
                      count == 2 ? "SIGTERM" : "SIGKILL", n, n == 1 ? "" : "s");
    }
}

/* ---- main --------------------------------------------------------------------------------- */

/* A regular file we may execute (a directory passes access(X_OK) but cannot be run). */
static int executable_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Is `cmd` an executable file (by path, or found in PATH as execvp looks it up)? */
static int command_exists(const char *cmd) {
    if (!*cmd) return 0;
    if (strchr(cmd, '/')) return executable_file(cmd);
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    char buf[4096];
    while (*path) {
        size_t n = strcspn(path, ":");
        int len = n == 0 ? snprintf(buf, sizeof buf, "./%s", cmd)
                         : snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, cmd);
        if (len > 0 && (size_t)len < sizeof buf && executable_file(buf)) return 1;
        path += n;
        if (*path == ':') path++;
    }
    return 0;
}

/* posix_spawn's dup2 onto 0/1/2 needs those descriptors to be ours: if the worker was started
 * with one closed, a pipe could land on it. */
static void ensure_std_fds(void) {
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0) {
            int nfd = open("/dev/null", O_RDWR);
            if (nfd > 2) close(nfd);
        }
}

static int build_base_env(exec_worker *xw) {
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n++;
    xw->base_env = calloc(n + 1, sizeof *xw->base_env);
    if (!xw->base_env) return -1;
    for (char **e = environ; *e; e++) {
        size_t len = strcspn(*e, "=");
        if (is_ferry_var(*e) || (is_credential_name(*e, len) && !passed_env(xw, *e, len))) continue;
        xw->base_env[xw->nbase++] = *e;
    }
    return 0;
}

/* opts_parse keeps the last value of an option given twice; --pass-env is repeatable, so
 * its values are collected here from the argv that opts_parse has already accepted (the
 * same walk: up to "--", a value after each option that takes one and has no "="). Checks
 * each NAME. Returns 0 with *out (malloc'd array of argv strings, caller frees) and *n, or
 * the usage exit code. */
static int pass_env_names(const opt_group *groups, size_t ngroups, int argc, char **argv,
                          const char ***out, size_t *n) {
    *out = calloc((size_t)argc + 1, sizeof **out);
    *n = 0;
    if (!*out) return opts_usage_error(&worker_spec, "out of memory");
    for (int i = 0; i < argc && strcmp(argv[i], "--"); i++) {
        if (strncmp(argv[i], "--", 2)) continue;
        const char *name = argv[i] + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const opt_def *d = NULL;
        for (size_t g = 0; g < ngroups && !d; g++)
            for (size_t k = 0; k < groups[g].n && !d; k++)
                if (strlen(groups[g].defs[k].name) == len &&
                    !strncmp(groups[g].defs[k].name, name, len))
                    d = &groups[g].defs[k];
        if (!d || d->kind == OPT_FLAG) continue;
        const char *val = eq ? eq + 1 : argv[++i];
        if (strcmp(d->name, "pass-env")) continue;
        if (!is_credential_name(val, strlen(val))) {
            char shown[128];
            free(*out);
            *out = NULL;
            return opts_usage_error(&worker_spec,
                                    "--pass-env: '%s' is not a variable the worker removes "
                                    "(REDIS_URL, DATABASE_URL, PGPASSWORD, FERRY_*_URL); the "
                                    "others reach the commands anyway",
                                    ferryx_printable(val, shown, sizeof shown));
        }
        (*out)[(*n)++] = val;
    }
    return 0;
}

/* Wait until a stop is requested, --max-jobs runs have their outcomes stored or
 * --idle-exit passes. */
static void wait_for_stop(exec_worker *xw) {
    pthread_mutex_lock(&xw->lock);
    while (!xw->stop_requested) {
        const worker_opts *o = xw->o;
        if (o->max_jobs && xw->runs_stored >= (unsigned long long)o->max_jobs) {
            json_t *f = json_object();
            logline_set_int(f, "runs", (long long)xw->runs_stored);
            logline_event("worker", FERRY_LOG_INFO, "worker.max_jobs", f,
                          "ran %llu job%s, outcomes stored (--max-jobs), stopping", xw->runs_stored,
                          xw->runs_stored == 1 ? "" : "s");
            break;
        }
        if (o->idle_exit && xw->running == 0 && mono_ms() - xw->last_activity >= o->idle_exit) {
            json_t *f = json_object();
            logline_set_int(f, "idle_ms", o->idle_exit);
            logline_event("worker", FERRY_LOG_INFO, "worker.idle_exit", f,
                          "idle for %lld ms (--idle-exit), stopping", o->idle_exit);
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&xw->cond, &xw->lock, &ts);
    }
    pthread_mutex_unlock(&xw->lock);
}

/* ferry_worker_start, waiting for Redis to come up: a failure that passes by itself
 * (ferry_worker_start_retryable: refused, timed out, still loading) is logged and tried
 * again 100 ms later, doubling to 5 s (jittered), until `timeout_ms` (--connect-timeout;
 * 0 = forever) has passed; any other failure (wrong password, TLS, a refused command, bad
 * options) ends it at once. A stop signal meanwhile exits at once (on_signal: no lane
 * thread was launched, no job taken). Returns 0 once started, else the exit code, the
 * failure reported: CLI_EXIT_RUNTIME when Redis could not be reached in time, as for any
 * connect failure. */
static int start_waiting(ferry_worker *w, const cli_conn *conn, long long timeout_ms,
                         ferry_error *err) {
    long long t0 = mono_ms();
    for (int attempt = 1;; attempt++) {
        /* the last try is cut to the time left, so that the whole wait ends in time */
        long long left = timeout_ms ? timeout_ms - (mono_ms() - t0) : 0;
        if (timeout_ms && left < 1) left = 1;
        if (left > INT_MAX) left = INT_MAX;
        if (ferry_worker_start_within(w, (int)left, err) == 0) {
            if (attempt > 1) {
                long long after = mono_ms() - t0;
                json_t *f = json_object();
                logline_set_str(f, "redis", conn->host);
                logline_set_int(f, "attempt", attempt);
                logline_set_int(f, "after_ms", after);
                logline_event("worker", FERRY_LOG_INFO, "worker.connected", f,
                              "redis %s: connected at attempt %d, after %lld ms", conn->host,
                              attempt, after);
            }
            return 0;
        }
        if (!ferry_worker_start_retryable(err))
            return worker_log_error(&worker_spec, conn, FERRY_LOG_ERROR, "worker.start_failed",
                                    NULL, NULL, err);
        long long waited = mono_ms() - t0;
        char what[128];
        if (timeout_ms && waited >= timeout_ms) {
            snprintf(what, sizeof what,
                     "cannot connect within --connect-timeout %lld ms (%d attempt%s)", timeout_ms,
                     attempt, attempt == 1 ? "" : "s");
            json_t *f = json_object();
            logline_set_int(f, "attempts", attempt);
            logline_set_int(f, "timeout_ms", timeout_ms);
            worker_log_error(&worker_spec, conn, FERRY_LOG_ERROR, "worker.start_failed", f, what,
                             err);
            return CLI_EXIT_RUNTIME;
        }
        long long delay = ferryx_reconnect_delay_ms(attempt);
        if (timeout_ms && delay > timeout_ms - waited) delay = timeout_ms - waited;
        snprintf(what, sizeof what, "connect attempt %d failed, retrying in %lld ms", attempt,
                 delay);
        json_t *f = json_object();
        logline_set_int(f, "attempt", attempt);
        logline_set_int(f, "retry_in_ms", delay);
        worker_log_error(&worker_spec, conn, FERRY_LOG_WARN, "worker.connect_retry", f, what, err);
        struct timespec ts = {(time_t)(delay / 1000), (long)(delay % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
}

/* The checks of what the options say beyond each option's own, after the connection is
 * resolved (--connect-timeout shortens its connect timeout). 0, or the usage error's code. */
static int worker_check(const worker_opts *o, cli_conn *conn, char **cmd, int *log_format) {
    if (!o->limiter_max != !o->limiter_duration)
        return opts_usage_error(&worker_spec, "--limiter-max and --limiter-duration go together: "
                                              "give both or neither");
    *log_format = LOG_TEXT;
    if (o->log_format && !strcmp(o->log_format, "json"))
        *log_format = LOG_JSON;
    else if (o->log_format && !strcmp(o->log_format, "none"))
        *log_format = LOG_NONE;
    else if (o->log_format && strcmp(o->log_format, "text"))
        return opts_usage_error(&worker_spec, "--log-format: expected text, json or none, got '%s'",
                                o->log_format);
    /* from here on every line (usage errors too) is in the format asked for */
    if (*log_format == LOG_JSON) logline_set_format(LOGLINE_JSON);
    /* each try, and later reconnects, give up connecting within --connect-timeout too */
    if (o->connect_timeout && o->connect_timeout < conn->redis.connect_timeout_ms)
        conn->redis.connect_timeout_ms = (int)o->connect_timeout;
    if (o->name && (!*o->name || strlen(o->name) > FERRY_WORKER_NAME_MAX))
        return opts_usage_error(&worker_spec, "--name: expected 1 to %d bytes, got %zu",
                                FERRY_WORKER_NAME_MAX, strlen(o->name));
    const char *keep_opts[2][2] = {{"--remove-on-complete", o->remove_on_complete},
                                   {"--remove-on-fail", o->remove_on_fail}};
    for (int i = 0; i < 2; i++) {
        ferry_error kerr = {0};
        if (ferry_keep_jobs_check(keep_opts[i][1], &kerr) != 0)
            return opts_usage_error(&worker_spec, "%s: %s", keep_opts[i][0], kerr.message);
    }
    if (!*cmd[0]) return opts_usage_error(&worker_spec, "the command after -- is empty");
    if (!command_exists(cmd[0]))
        return opts_usage_error(&worker_spec, "%s: command not found or not an executable file",
                                cmd[0]);
    return 0;
}

/* The listener stops first (it renders the registry). The registry is kept when handlers
 * may still run (abandoned: they update it); the process is leaving then. */
static void metrics_stop(ferry_metrics *m, ferry_metrics_listener *l, int abandoned) {
    ferry_metrics_listener_stop(l);
    if (!abandoned) ferry_metrics_destroy(m);
}

/* The library's worker options for what the command line says; callbacks get `xw`. */
static void worker_options_fill(ferry_worker_options *wo, const worker_opts *o,
                                const cli_conn *conn, exec_worker *xw) {
    ferry_worker_options_init(wo);
    wo->redis = &conn->redis;
    wo->prefix = conn->prefix;
    wo->name = o->name;
    wo->concurrency = (int)o->concurrency;
    wo->lanes = (int)o->lanes;
    wo->lock_duration_ms = (int)o->lock_duration;
    wo->stalled_interval_ms = (int)o->stalled_interval;
    if (o->max_stalled == MAX_STALLED_UNSET)
        wo->max_stalled_count = 0; /* the library default, 1 */
    else if (o->max_stalled == 0)
        wo->max_stalled_count = FERRY_STALLED_FAIL_FIRST;
    else
        wo->max_stalled_count = (int)o->max_stalled;
    wo->remove_on_complete = o->remove_on_complete;
    wo->remove_on_fail = o->remove_on_fail;
    wo->max_started_attempts = (int)o->max_started;
    wo->max_payload_bytes = (size_t)o->max_payload;
    wo->limiter_max = (int)o->limiter_max;
    wo->limiter_duration_ms = (int)o->limiter_duration;
    wo->callbacks.job_log = on_job_log;
    wo->callbacks.stalled = on_stalled;
    wo->callbacks.error = on_error;
    wo->callbacks.notice = on_notice;
    wo->userdata = xw;
}

/* Start the created worker (waiting for Redis as --connect-timeout says), log that it
 * runs, wait for a stop, then stop and close it. Returns the exit code; *abandoned is set
 * when handler threads may still be inside the worker (it must then not be freed). */
static int worker_run(exec_worker *xw, ferry_worker *w, int *abandoned) {
    const worker_opts *o = xw->o;
    const cli_conn *conn = xw->conn;
    ferry_error err = {0};
    int start_rc = start_waiting(w, conn, o->connect_timeout, &err);
    pthread_mutex_lock(&xw->lock);
    xw->start_returned = 1;
    pthread_mutex_unlock(&xw->lock);
    if (start_rc != 0) return start_rc;
    char limiter[64] = "", qshown[512], cshown[512], pshown[512];
    if (o->limiter_max)
        snprintf(limiter, sizeof limiter, " limiter=%lld/%lldms", o->limiter_max,
                 o->limiter_duration);
    ferryx_printable(xw->queue, qshown, sizeof qshown);
    json_t *f = json_object();
    logline_set_str(f, "queue", xw->queue);
    logline_set_str(f, "redis", conn->host);
    logline_set_str(f, "prefix", conn->prefix);
    logline_set_int(f, "concurrency", o->concurrency);
    logline_set_int(f, "lanes", ferry_worker_lanes(w));
    if (o->limiter_max) {
        logline_set_int(f, "limiter_max", o->limiter_max);
        logline_set_int(f, "limiter_duration_ms", o->limiter_duration);
    }
    logline_set_str(f, "command", xw->cmd[0]);
    logline_set_str(f, "name", o->name);
    logline_set_str(f, "version", ferry_version());
    logline_event("worker", FERRY_LOG_INFO, "worker.start", f,
                  "queue=%s redis=%s prefix=%s concurrency=%lld lanes=%d%s command=%s started",
                  qshown, conn->host, ferryx_printable(conn->prefix, pshown, sizeof pshown),
                  o->concurrency, ferry_worker_lanes(w), limiter,
                  ferryx_printable(xw->cmd[0], cshown, sizeof cshown));
    wait_for_stop(xw);
    ferry_worker_stop(w);
    if (ferry_worker_close(w, (int)o->shutdown_timeout) == FERRY_ETIMEDOUT) {
        int n = exec_kill_all(SIGKILL);
        json_t *t = json_object();
        logline_set_str(t, "queue", xw->queue);
        logline_set_int(t, "timeout_ms", o->shutdown_timeout);
        logline_set_int(t, "killed", n);
        logline_event("worker", FERRY_LOG_ERROR, "worker.shutdown_timeout", t,
                      "shutdown timeout (%lld ms) passed; killed %d running command%s (their "
                      "jobs will be recovered as stalled)",
                      o->shutdown_timeout, n, n == 1 ? "" : "s");
        /* Handler threads may still be inside the worker: do not free it, just leave. */
        *abandoned = 1;
        return CLI_EXIT_RUNTIME;
    }
    json_t *sf = json_object();
    logline_set_str(sf, "queue", xw->queue);
    logline_set_int(sf, "runs", (long long)xw->runs_stored);
    logline_set_int(sf, "handed_back", (long long)xw->handed_back);
    if (xw->handed_back) /* after close: no handler runs any more */
        logline_event("worker", FERRY_LOG_INFO, "worker.stop", sf,
                      "queue=%s stopped; %llu fetched job%s handed back without running "
                      "(--max-jobs, or a second stop signal)",
                      qshown, xw->handed_back, xw->handed_back == 1 ? "" : "s");
    else
        logline_event("worker", FERRY_LOG_INFO, "worker.stop", sf, "queue=%s stopped", qshown);
    return CLI_EXIT_OK;
}

/* What exec_worker owns (not the lock: the process is leaving). */
static void exec_worker_release(exec_worker *xw) {
    for (outcome_note *n = xw->notes, *next; n; n = next) {
        next = n->next;
        free(n->id);
        free(n);
    }
    free(xw->base_env);
    free(xw->pass);
}

/* The dead-letter recorder's lines, as the worker's own (ud: the database URL, whose
 * password is masked in case a text from libpq or the server quotes it). */
static void dlq_log(int level, const char *message, void *ud) {
    char line[2048];
    snprintf(line, sizeof line, "%s", message);
    ferry_outbox_database_url_mask(ud, line);
    logline_event("worker", level, "worker.dead_letters", NULL, "%s", line);
}

static int worker_main(int argc, char **argv) {
    cli_conn conn = {0};
    worker_opts o = {.concurrency = 1,
                     .kill_grace = 5000,
                     .max_stalled = MAX_STALLED_UNSET,
                     .shutdown_timeout = 30000,
                     .max_output = 1024 * 1024,
                     .retry_later_default = RETRY_LATER_DEFAULT_MS};
    db_opts d = {0};
    opt_group groups[] = {{"Options", worker_defs, sizeof worker_defs / sizeof worker_defs[0], &o},
                          cli_conn_group(&conn, 1),
                          {"Dead letter options (final failures recorded in PostgreSQL when a "
                           "database is given)",
                           db_defs, DB_DEFS_COUNT, &d}};
    opt_result r;
    int rc = opts_parse(&worker_spec, groups, 3, argc, argv, &r);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    char **cmd = r.cmd;
    const char *queue = r.pos[0];
    free(r.pos);
    int log_format = LOG_TEXT;
    if ((rc = cli_conn_resolve(&worker_spec, &conn))) return rc;
    if ((rc = worker_check(&o, &conn, cmd, &log_format))) return rc;
    const char **pass = NULL;
    size_t npass = 0;
    if ((rc = pass_env_names(groups, 3, argc, argv, &pass, &npass))) return rc;
    int dead_letters = !o.no_dead_letters && db_given(&d);
    if (dead_letters && (rc = db_resolve(&worker_spec, &d))) {
        free(pass);
        return rc;
    }
    ferry_metrics *metrics = NULL;
    ferry_metrics_listener *listener = NULL;
    if ((rc = cli_metrics_start(&worker_spec, "worker", o.metrics_listen, CLI_EXIT_RUNTIME,
                                &metrics, &listener))) {
        free(pass);
        db_opts_free(&d);
        return rc;
    }

    exec_worker xw = {.queue = queue,
                      .cmd = cmd,
                      .o = &o,
                      .conn = &conn,
                      .log_format = log_format,
                      .pass = pass,
                      .npass = npass};
    pthread_mutex_init(&xw.lock, NULL);
    pthread_cond_init(&xw.cond, NULL);
    xw.last_activity = mono_ms();
    ensure_std_fds();
    /* Blocked before any thread exists, so every thread inherits the mask and only the
     * sigwait thread receives these signals; SIGPIPE ignored (a command that exits without
     * reading stdin). Children get an empty mask (exec_job.c). */
    cli_signals_block();
    if (build_base_env(&xw)) {
        logline("worker", "out of memory");
        metrics_stop(metrics, listener, 0);
        exec_worker_release(&xw);
        return CLI_EXIT_RUNTIME;
    }

    ferry_contracts *contracts = NULL;
    ferry_error err = {0};
    if (o.contracts && ferry_contracts_load_dir(o.contracts, &contracts, &err) != 0) {
        char shown[2 * FERRY_ERROR_MESSAGE_MAX];
        rc = opts_usage_error(&worker_spec, "--contracts: %s",
                              ferryx_printable(err.message, shown, sizeof shown));
        metrics_stop(metrics, listener, 0);
        exec_worker_release(&xw);
        return rc;
    }

    ferry_dlq_recorder *recorder = NULL;
    if (dead_letters) {
        ferry_dlq_recorder_options ro;
        ferry_dlq_recorder_options_init(&ro);
        ro.database_url = d.url;
        ro.schema = d.schema;
        ro.prefix = conn.prefix;
        ro.connect_timeout_ms = (int)db_timeout(&d); /* --db-timeout, as --help says */
        ro.statement_timeout_ms = (int)db_timeout(&d);
        ro.log = dlq_log;
        ro.log_userdata = (void *)d.url;
        ro.metrics = metrics;
        if (ferry_dlq_recorder_start(&ro, &recorder, &err) != 0) {
            rc = db_report(&worker_spec, d.url, &err);
            ferry_contracts_free(contracts);
            metrics_stop(metrics, listener, 0);
            exec_worker_release(&xw);
            db_opts_free(&d);
            return rc;
        }
        char where[512];
        db_display(&d, where, sizeof where);
        json_t *f = json_object();
        logline_set_str(f, "database", where);
        logline_set_str(f, "source", d.url_source);
        logline_event("worker", FERRY_LOG_INFO, "worker.dead_letters_on", f,
                      "dead letters: final failures will be recorded in database %s (%s)", where,
                      d.url_source);
    }

    ferry_worker_options wo;
    worker_options_fill(&wo, &o, &conn, &xw);
    if (recorder) {
        wo.final_failure = ferry_dlq_recorder_final_failure;
        wo.final_failure_userdata = recorder;
    }
    if (contracts) {
        wo.check = ferry_contracts_job_check;
        wo.check_userdata = contracts;
    }
    wo.metrics = metrics;
    wo.metrics_no_job_name = o.metrics_no_job_name;
    wo.bullmq_metrics_max_points = (long)o.bullmq_metrics;
    ferry_worker *w = NULL;
    cli_signals sigs = {0};
    int abandoned = 0;
    if (ferry_worker_create(queue, &wo, handle_job, &xw, &w, &err) != 0) {
        w = NULL;
        rc = worker_log_report(&worker_spec, &conn, NULL, &err);
    } else {
        xw.w = w;
        if (cli_signals_start(&sigs, on_signal, &xw) != 0) {
            logline("worker", "cannot start the signal thread");
            rc = CLI_EXIT_RUNTIME;
        } else {
            rc = worker_run(&xw, w, &abandoned);
        }
    }
    if (!abandoned) {
        ferry_worker_free(w);
        ferry_contracts_free(contracts); /* else abandoned threads may still check with it */
        /* what is still held gets a few seconds; the rest is logged for `ferry dlq sync` */
        ferry_dlq_recorder_close(recorder, 5000);
    }
    cli_signals_stop(&sigs);
    metrics_stop(metrics, listener, abandoned);
    exec_worker_release(&xw);
    db_opts_free(&d);
    return rc;
}

const cli_setup worker_cmd = {.main = worker_main};

/* worker_daemon.c - a complete ferry worker daemon: it processes one queue with a pool of
 * handler threads until SIGTERM or SIGINT, then stops taking jobs, lets the running ones
 * finish (within a deadline) and exits 0. It shows the shutdown pattern a daemon should use:
 * the stop signals are blocked in every thread and taken by sigwait() on the main thread,
 * which then calls ferry_worker_stop / ferry_worker_close; nothing ferry-related runs in a
 * signal handler (ferry_worker_stop is not async-signal-safe).
 *
 * Usage: worker-daemon [--concurrency N] [--work-ms MS] [--close-deadline MS] QUEUE
 * Connection: $REDIS_URL (default redis://127.0.0.1:6379), key prefix $FERRY_PREFIX.
 * Each job "works" for --work-ms milliseconds and completes with {"bytes": <data length>}.
 * Exit: 0 after a clean stop, 1 when the worker could not start or the close deadline
 * passed with jobs still running (they are recovered as stalled), 2 for bad arguments. */
#define _POSIX_C_SOURCE 200809L
#include <ferry/ferry.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct config {
    const char *queue;
    long concurrency;
    long work_ms;
    long close_deadline_ms;
} config;

static void usage(FILE *to) {
    fprintf(to,
            "usage: worker-daemon [--concurrency N] [--work-ms MS] [--close-deadline MS] QUEUE\n"
            "  Processes QUEUE until SIGTERM/SIGINT, then finishes running jobs and exits 0.\n"
            "  --concurrency N       handler threads (1..1024, default 4)\n"
            "  --work-ms MS          time each job takes (0..3600000, default 0)\n"
            "  --close-deadline MS   how long running jobs may take to finish at stop\n"
            "                        (1..3600000, default 30000)\n"
            "  Connection: $REDIS_URL (default " FERRY_DEFAULT_REDIS_URL
            "), prefix $FERRY_PREFIX.\n");
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "worker-daemon: %s needs a whole number in %ld..%ld\n", opt, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, config *c) {
    *c = (config){NULL, 4, 0, 30000};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        long *dst = !strcmp(a, "--concurrency")      ? &c->concurrency
                    : !strcmp(a, "--work-ms")        ? &c->work_ms
                    : !strcmp(a, "--close-deadline") ? &c->close_deadline_ms
                                                     : NULL;
        if (dst) {
            long lo = dst == &c->work_ms ? 0 : 1, hi = dst == &c->concurrency ? 1024 : 3600000;
            if (parse_long(a, i + 1 < argc ? argv[i + 1] : NULL, lo, hi, dst)) return -1;
            i++;
        } else if (a[0] == '-') {
            fprintf(stderr, "worker-daemon: unknown option %s (see --help)\n", a);
            return -1;
        } else if (!c->queue) {
            c->queue = a;
        } else {
            fprintf(stderr, "worker-daemon: one queue only (see --help)\n");
            return -1;
        }
    }
    if (!c->queue) {
        fprintf(stderr, "worker-daemon: missing QUEUE (see --help)\n");
        return -1;
    }
    return 0;
}

static ferry_outcome handle(ferry_job *job, void *ud) {
    const config *c = ud;
    if (c->work_ms > 0) { /* the job's real work would go here: libpq, curl, ... */
        struct timespec ts = {c->work_ms / 1000, (c->work_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    char out[64];
    snprintf(out, sizeof out, "{\"bytes\":%zu}", strlen(ferry_job_data(job)));
    ferry_job_set_return(job, out);
    return FERRY_COMPLETED;
}

/* One line per job outcome (worker threads call this one at a time). */
static void on_job_log(const ferry_job_log *rec, void *ud) {
    (void)ud;
    char line[1024];
    ferry_job_log_format(rec, 0, line, sizeof line);
    fprintf(stderr, "worker-daemon: %s\n", line);
}

static void on_error(const ferry_error *err, void *ud) {
    (void)ud;
    fprintf(stderr, "worker-daemon: %s\n",
            err->message[0] ? err->message : ferry_strerror(err->code));
}

int main(int argc, char **argv) {
    config cfg;
    if (parse_args(argc, argv, &cfg)) return 2;

    /* Block the stop signals before any thread exists: every thread ferry starts inherits
     * the mask, so the signals stay pending for sigwait below and interrupt no handler. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    const char *url = getenv("REDIS_URL");
    if (url && *url) ro.url = url;

    ferry_worker_options wo;
    ferry_worker_options_init(&wo);
    wo.redis = &ro;
    const char *prefix = getenv("FERRY_PREFIX");
    if (prefix && *prefix) wo.prefix = prefix;
    wo.concurrency = (int)cfg.concurrency;
    wo.name = "worker-daemon";
    wo.callbacks.job_log = on_job_log;
    wo.callbacks.error = on_error;

    ferry_worker *w = NULL;
    ferry_error err = {0};
    if (ferry_worker_create(cfg.queue, &wo, handle, &cfg, &w, &err) != 0 ||
        ferry_worker_start(w, &err) != 0) {
        fprintf(stderr, "worker-daemon: cannot start: %s\n", err.message);
        ferry_worker_free(w);
        return 1;
    }
    fprintf(stderr, "worker-daemon: processing %s with %ld threads (SIGTERM to stop)\n", cfg.queue,
            cfg.concurrency);

    int sig = 0;
    while (sigwait(&stop_signals, &sig) != 0) {
    }
    fprintf(stderr, "worker-daemon: %s received: finishing running jobs\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT");

    ferry_worker_stop(w); /* no new jobs from here on */
    int rc = ferry_worker_close(w, (int)cfg.close_deadline_ms);
    ferry_worker_stats st;
    ferry_worker_get_stats(w, &st);
    fprintf(stderr, "worker-daemon: stopped (%llu completed, %llu failed)%s\n", st.completed,
            st.failed, rc ? ": close deadline passed, running jobs left to stalled recovery" : "");
    if (rc == 0) ferry_worker_free(w); /* after a timed-out close, handlers may still run */
    return rc == 0 ? 0 : 1;
}

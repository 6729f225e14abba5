/* metrics_worker.c - a ferry worker for the interop tests that need worker options the
 * `ferry worker` CLI does not take (here bullmq_metrics_max_points), built by
 * tests/CMakeLists.txt as interop_metrics_worker and named to the tests by
 * FERRY_METRICS_WORKER. It runs the library's worker in-process on one queue until SIGTERM or
 * SIGINT (graceful close, exit 0) or, with EXIT_AFTER > 0, until that many jobs finished
 * (completed or failed for good), then prints "finished N jobs in MS ms" (a rough
 * throughput figure: bench, not a test).
 *
 *   interop_metrics_worker REDIS_URL QUEUE MAX_POINTS CONCURRENCY [EXIT_AFTER]
 *
 * Jobs by name: "perm" fails for good (UnrecoverableError), "flaky" fails every attempt
 * (retried while attempts remain), "later" asks to run later on its first start and then
 * completes, anything else completes with {"ok":true}. "ready" on stdout once started. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/ferry.h"

static ferry_outcome handle(ferry_job *job, void *ud) {
    (void)ud;
    const char *name = ferry_job_name(job);
    if (!strcmp(name, "perm")) {
        ferry_job_set_failure(job, "perm says no", NULL);
        return FERRY_FAILED_PERMANENT;
    }
    if (!strcmp(name, "flaky")) {
        ferry_job_set_failure(job, "flaky says no", NULL);
        return FERRY_FAILED;
    }
    if (!strcmp(name, "later") && ferry_job_attempts_started(job) == 1) {
        ferry_job_set_delay(job, 1);
        return FERRY_RETRY_LATER;
    }
    ferry_job_set_return(job, "{\"ok\":true}");
    return FERRY_COMPLETED;
}

static void on_error(const ferry_error *e, void *ud) {
    (void)ud;
    fprintf(stderr, "metrics_worker: %s\n", e->message);
}

static long parse_long(const char *s, const char *what, long lo, long hi) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !end || *end || v < lo || v > hi) {
        fprintf(stderr, "metrics_worker: %s must be %ld..%ld (got \"%s\")\n", what, lo, hi, s);
        exit(64);
    }
    return v;
}

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: %s REDIS_URL QUEUE MAX_POINTS CONCURRENCY [EXIT_AFTER]\n", argv[0]);
        return 64;
    }
    long max_points = parse_long(argv[3], "MAX_POINTS", 0, FERRY_BULLMQ_METRICS_POINTS_MAX);
    int concurrency = (int)parse_long(argv[4], "CONCURRENCY", 1, FERRY_CONCURRENCY_MAX);
    long exit_after = argc == 6 ? parse_long(argv[5], "EXIT_AFTER", 0, 1000000000L) : 0;

    /* signals arrive through sigwait on this thread, not in a handler */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = argv[1];
    ferry_worker_options o;
    ferry_worker_options_init(&o);
    o.redis = &ro;
    o.concurrency = concurrency;
    o.bullmq_metrics_max_points = max_points;
    o.callbacks.error = on_error;
    ferry_worker *w = NULL;
    ferry_error e = {0};
    if (ferry_worker_create(argv[2], &o, handle, NULL, &w, &e) != 0 ||
        ferry_worker_start(w, &e) != 0) {
        fprintf(stderr, "metrics_worker: %s\n", e.message);
        ferry_worker_free(w);
        return 1;
    }
    long long t0 = mono_ms();
    printf("ready\n");
    fflush(stdout);
    if (exit_after > 0) {
        ferry_worker_stats st;
        struct timespec poll = {0, 2 * 1000 * 1000};
        for (;;) {
            ferry_worker_get_stats(w, &st);
            if ((long)(st.completed + st.failed) >= exit_after) break;
            if (sigtimedwait(&set, NULL, &poll) > 0) break;
        }
        long long ms = mono_ms() - t0;
        printf("finished %llu jobs in %lld ms\n", st.completed + st.failed, ms);
    } else {
        int sig = 0;
        sigwait(&set, &sig);
    }
    int rc = ferry_worker_close(w, 10000);
    ferry_worker_free(w);
    return rc == 0 ? 0 : 1;
}

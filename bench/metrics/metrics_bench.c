/* metrics_bench.c - what the worker's Prometheus metrics cost: the same no-op jobs (four job
 * names, removeOnComplete) consumed by an exec-free ferry worker without a registry and with
 * one (ferry_worker_options.metrics, rendered every second as a scraper would), alternating in
 * one run against one Redis. Prints each run and the medians, and the ratio metrics/none
 * (issue 19's goal at concurrency 100: >= 0.97). Public API only.
 *
 *   metrics_bench REDIS_URL [JOBS [ROUNDS [CONCURRENCY]]]   (defaults 50000 5 100)
 *
 * Exit status: 0, 1 when a run failed, 2 for bad arguments. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep under -std=c17 */
#include <ferry/ferry.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct run_state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long done, target;
} run_state;

static ferry_outcome handler(ferry_job *job, void *ud) {
    (void)job;
    run_state *st = ud;
    pthread_mutex_lock(&st->mu);
    if (++st->done >= st->target) pthread_cond_signal(&st->cv);
    pthread_mutex_unlock(&st->mu);
    return FERRY_COMPLETED;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what, const ferry_error *e) {
    fprintf(stderr, "metrics_bench: %s: %s\n", what, e->message);
    return -1;
}

static const char *const NAMES[] = {"mail.send", "order.placed", "invoice.render", "sms.send"};

/* Add `jobs` small jobs to queue `name`. */
static int fill(const ferry_redis_options *ro, const char *name, long jobs) {
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = ro;
    qo.prefix = "bench";
    ferry_queue *q = NULL;
    ferry_error e = {0};
    if (ferry_queue_open(name, &qo, &q, &e)) return fail("queue open", &e);
    enum { CHUNK = 1000 };
    ferry_job_spec *spec = calloc(CHUNK, sizeof *spec);
    int rc = spec ? 0 : -1;
    for (long base = 0; rc == 0 && base < jobs; base += CHUNK) {
        long n = jobs - base < CHUNK ? jobs - base : CHUNK;
        for (long i = 0; i < n; i++)
            spec[i] = (ferry_job_spec){.name = NAMES[(base + i) % 4],
                                       .data_json = "{\"p\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
                                       .opts_json = "{\"removeOnComplete\":true}"};
        if (ferry_queue_add_bulk(q, spec, (size_t)n, NULL, &e)) rc = fail("add", &e);
    }
    free(spec);
    ferry_queue_close(q);
    return rc;
}

/* A scraper: renders the registry every second until told to stop. */
typedef struct scraper {
    ferry_metrics *m;
    atomic_int stop;
    size_t bytes;
} scraper;

static void *scrape_main(void *arg) {
    scraper *s = arg;
    while (!atomic_load(&s->stop)) {
        char *text = NULL;
        size_t len = 0;
        ferry_error e = {0};
        if (ferry_metrics_render(s->m, &text, &len, &e) == 0) s->bytes = len;
        free(text);
        for (int i = 0; i < 100 && !atomic_load(&s->stop); i++)
            nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return NULL;
}

/* One timed run: returns jobs/s, or -1. */
static double run(const ferry_redis_options *ro, const char *name, long jobs, int concurrency,
                  ferry_metrics *m) {
    if (fill(ro, name, jobs)) return -1;
    run_state st = {.done = 0, .target = jobs};
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.cv, NULL);
    ferry_worker_options wo;
    ferry_worker_options_init(&wo);
    wo.redis = ro;
    wo.prefix = "bench";
    wo.concurrency = concurrency;
    wo.metrics = m;
    ferry_worker *w = NULL;
    ferry_error e = {0};
    if (ferry_worker_create(name, &wo, handler, &st, &w, &e)) return fail("worker create", &e);
    scraper sc = {.m = m};
    pthread_t th;
    if (m) pthread_create(&th, NULL, scrape_main, &sc);
    double t0 = now_s();
    if (ferry_worker_start(w, &e)) {
        ferry_worker_free(w);
        return fail("worker start", &e);
    }
    pthread_mutex_lock(&st.mu);
    while (st.done < st.target)
        pthread_cond_wait(&st.cv, &st.mu);
    pthread_mutex_unlock(&st.mu);
    double t1 = now_s();
    ferry_worker_stats s;
    ferry_worker_get_stats(w, &s);
    ferry_worker_close(w, 10000);
    ferry_worker_free(w);
    if (m) {
        atomic_store(&sc.stop, 1);
        pthread_join(th, NULL);
    }
    if (s.failed) {
        fprintf(stderr, "metrics_bench: %llu jobs failed\n", s.failed);
        return -1;
    }
    return (double)jobs / (t1 - t0);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 5 || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: metrics_bench REDIS_URL [JOBS [ROUNDS [CONCURRENCY]]]\n");
        return 2;
    }
    long jobs = argc > 2 ? atol(argv[2]) : 50000;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    int conc = argc > 4 ? atoi(argv[4]) : 100;
    if (jobs < 1 || rounds < 1 || rounds > 50 || conc < 1 || conc > FERRY_CONCURRENCY_MAX) {
        fprintf(stderr, "metrics_bench: JOBS >= 1, ROUNDS 1..50, CONCURRENCY 1..%d\n",
                FERRY_CONCURRENCY_MAX);
        return 2;
    }
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = argv[1];
    ferry_error e = {0};
    ferry_metrics *m = NULL;
    if (ferry_metrics_create(NULL, &m, &e) || ferry_metrics_build_info(m, &e)) {
        fprintf(stderr, "metrics_bench: %s\n", e.message);
        return 1;
    }
    double *none = calloc((size_t)rounds, sizeof *none),
           *with = calloc((size_t)rounds, sizeof *with);
    int bad = 0;
    printf("metrics_bench: %ld jobs per run, concurrency %d, %d rounds\n", jobs, conc, rounds);
    for (int r = 0; r < rounds; r++) {
        char qn[64];
        for (int k = 0; k < 2; k++) {
            int on = (k + r) % 2; /* alternate which goes first */
            snprintf(qn, sizeof qn, "mb-%d-%s", r, on ? "metrics" : "none");
            double v = run(&ro, qn, jobs, conc, on ? m : NULL);
            if (v < 0) bad = 1;
            (on ? with : none)[r] = v;
            printf("  round %d %-8s %10.0f jobs/s\n", r + 1, on ? "metrics" : "none", v);
            fflush(stdout);
        }
    }
    qsort(none, (size_t)rounds, sizeof *none, cmp);
    qsort(with, (size_t)rounds, sizeof *with, cmp);
    double mn = none[rounds / 2], mw = with[rounds / 2];
    printf("median: none %.0f jobs/s, metrics %.0f jobs/s, ratio metrics/none %.3f\n", mn, mw,
           mn > 0 ? mw / mn : 0);
    free(none);
    free(with);
    ferry_metrics_destroy(m);
    return bad;
}

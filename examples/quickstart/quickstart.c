/* quickstart.c - ferry end to end in one program: a producer adds jobs to a queue, a
 * worker with four handler threads processes them (some fail once and are retried with
 * backoff, one fails permanently), and a summary is printed. Used by `make demo`.
 *
 * Usage: quickstart [REDIS_URL] [JOBS]    (exit 0 when every job ended as expected) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime outside the ferry build too */
#include <ferry/ferry.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int completed, failed_final, retried;
} tally;

static ferry_outcome handle(ferry_job *job, void *ud) {
    (void)ud;
    const char *name = ferry_job_name(job);
    long attempt = ferry_job_attempts_made(job) + 1;
    if (!strcmp(name, "flaky") && attempt == 1) {
        ferry_job_set_failure(job, "simulated timeout talking to the mail provider", NULL);
        return FERRY_FAILED; /* retried with the job's backoff */
    }
    if (!strcmp(name, "poison")) {
        ferry_job_set_failure(job, "payload rejected: missing field 'email'", NULL);
        return FERRY_FAILED_PERMANENT; /* no retry */
    }
    char out[128];
    snprintf(out, sizeof out, "{\"sent\":true,\"attempt\":%ld}", attempt);
    ferry_job_set_return(job, out);
    return FERRY_COMPLETED;
}

static void on_completed(const ferry_job *job, const char *rv, void *ud) {
    (void)job, (void)rv;
    tally *t = ud;
    pthread_mutex_lock(&t->mu);
    t->completed++;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void on_failed(const ferry_job *job, const char *reason, int final, void *ud) {
    tally *t = ud;
    pthread_mutex_lock(&t->mu);
    if (final) {
        t->failed_final++;
        printf("  job %s (%s) failed for good: %s\n", ferry_job_id(job), ferry_job_name(job),
               reason);
    } else {
        t->retried++;
    }
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void on_error(const ferry_error *e, void *ud) {
    (void)ud;
    fprintf(stderr, "  worker: %s\n", e->message);
}

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : getenv("REDIS_URL");
    int jobs = argc > 2 ? atoi(argv[2]) : 1000;
    if (jobs < 3 || jobs > 1000000) {
        fprintf(stderr, "quickstart: JOBS must be between 3 and 1000000\n");
        return 2;
    }
    char qname[64];
    snprintf(qname, sizeof qname, "quickstart-%ld", (long)time(NULL));

    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = url;
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = &ro;
    qo.default_job_opts = "{\"attempts\":3,\"backoff\":{\"type\":\"exponential\",\"delay\":50},"
                          "\"removeOnComplete\":{\"count\":100}}";
    ferry_error err = {0};
    ferry_queue *q = NULL;
    if (ferry_queue_open(qname, &qo, &q, &err) != 0) {
        fprintf(stderr, "quickstart: %s\n", err.message);
        return 1;
    }

    /* Producer: one bulk round trip per 1000 jobs. */
    printf("ferry %s quick start: queue %s, %d jobs\n", ferry_version(), qname, jobs);
    ferry_job_spec *specs = calloc((size_t)jobs, sizeof *specs);
    char(*data)[64] = calloc((size_t)jobs, sizeof *data);
    for (int i = 0; i < jobs; i++) {
        snprintf(data[i], sizeof data[i], "{\"to\":\"user%d@example.com\"}", i);
        specs[i].name = i == 0 ? "poison" : (i % 10 == 1 ? "flaky" : "welcome-email");
        specs[i].data_json = data[i];
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int off = 0; off < jobs; off += 1000) {
        int n = jobs - off < 1000 ? jobs - off : 1000;
        if (ferry_queue_add_bulk(q, specs + off, (size_t)n, NULL, &err) != 0) {
            fprintf(stderr, "quickstart: add: %s\n", err.message);
            return 1;
        }
    }

    /* Worker: four handler threads. */
    tally t = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
    ferry_worker_options wo;
    ferry_worker_options_init(&wo);
    wo.redis = &ro;
    wo.concurrency = 4;
    wo.name = "quickstart";
    wo.callbacks.completed = on_completed;
    wo.callbacks.failed = on_failed;
    wo.callbacks.error = on_error;
    wo.userdata = &t;
    ferry_worker *w = NULL;
    if (ferry_worker_create(qname, &wo, handle, NULL, &w, &err) != 0 ||
        ferry_worker_start(w, &err) != 0) {
        fprintf(stderr, "quickstart: worker: %s\n", err.message);
        return 1;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60;
    pthread_mutex_lock(&t.mu);
    while (t.completed + t.failed_final < jobs) {
        if (pthread_cond_timedwait(&t.cv, &t.mu, &deadline) != 0) break;
    }
    int done = t.completed, dead = t.failed_final, retried = t.retried;
    pthread_mutex_unlock(&t.mu);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ferry_worker_close(w, 10000);
    ferry_worker_free(w);

    ferry_job_counts c;
    int crc = ferry_queue_counts(q, &c, &err);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("\n  produced   %d jobs\n  completed  %d (%d after a retry)\n  failed     %d "
           "(permanent, kept for inspection)\n  elapsed    %.2f s (%.0f jobs/s)\n",
           jobs, done, retried, dead, secs, jobs / secs);
    if (crc == 0)
        printf("  queue now  waiting %lld, active %lld, completed %lld (trimmed to 100), failed "
               "%lld\n",
               c.waiting, c.active, c.completed, c.failed);
    int expected_retries = (jobs + 8) / 10; /* ids with i % 10 == 1 */
    int ok = done == jobs - 1 && dead == 1 && retried == expected_retries && crc == 0 &&
             c.waiting == 0 && c.active == 0 && c.failed == 1;
    printf("\n%s\n",
           ok ? "quick start OK" : "quick start FAILED: counts differ from what was expected");
    ferry_queue_close(q);
    free(specs);
    free(data);
    return ok ? 0 : 1;
}

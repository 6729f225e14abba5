/* contract_bench.c - what a payload contract costs a C worker: the same jobs (outbox
 * envelopes with an order payload) consumed by an exec-free ferry worker with no check and
 * with the order's JSON Schema contract registered (ferry_contracts_job_check as the
 * worker's check), alternating in one run against one Redis. Prints each run and the
 * medians, and the ratio contract/none. Public API only.
 *
 *   contract_bench REDIS_URL [JOBS [ROUNDS [CONCURRENCY]]]   (defaults 20000 3 1)
 *
 * Exit status: 0, 1 when a run failed, 2 for bad arguments. */
#include <ferry/ferry.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char SCHEMA[] =
    "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"object\","
    "\"required\":[\"orderId\",\"customerId\",\"items\",\"amount\",\"placedAt\"],"
    "\"additionalProperties\":false,\"properties\":{"
    "\"orderId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"customerId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"amount\":{\"type\":\"integer\",\"minimum\":0},"
    "\"currency\":{\"enum\":[\"VND\",\"USD\",\"EUR\"]},"
    "\"placedAt\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"items\":{\"type\":\"array\",\"maxItems\":100,\"items\":{\"type\":\"object\","
    "\"required\":[\"sku\",\"qty\",\"unitPrice\"],\"properties\":{"
    "\"sku\":{\"type\":\"string\",\"pattern\":\"^[A-Z0-9-]{3,32}$\"},"
    "\"qty\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000},"
    "\"unitPrice\":{\"type\":\"integer\",\"minimum\":0}}}}}}";

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
    fprintf(stderr, "contract_bench: %s: %s\n", what, e->message);
    return -1;
}

/* Add `jobs` envelopes to queue `name`. */
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
    char **data = calloc(CHUNK, sizeof *data);
    int rc = spec && data ? 0 : -1;
    for (long base = 0; rc == 0 && base < jobs; base += CHUNK) {
        long n = jobs - base < CHUNK ? jobs - base : CHUNK;
        for (long i = 0; i < n; i++) {
            char ev[FERRY_UUID_STRLEN + 1], order[FERRY_UUID_STRLEN + 1],
                cust[FERRY_UUID_STRLEN + 1];
            ferry_uuid7(ev);
            ferry_uuid7(order);
            ferry_uuid7(cust);
            data[i] = malloc(1024);
            snprintf(data[i], 1024,
                     "{\"eventId\":\"%s\",\"traceId\":\"bench-%ld\",\"payload\":{\"orderId\":"
                     "\"%s\",\"customerId\":\"%s\",\"amount\":%ld,\"currency\":\"VND\","
                     "\"placedAt\":\"2026-12-02T09:00:00.000Z\",\"items\":[{\"sku\":"
                     "\"SKU-1\",\"qty\":2,\"unitPrice\":125000},{\"sku\":\"SKU-22\",\"qty\":1,"
                     "\"unitPrice\":99000}]}}",
                     ev, base + i, order, cust, 349000L);
            spec[i] = (ferry_job_spec){.name = "order.placed",
                                       .data_json = data[i],
                                       .opts_json = "{\"removeOnComplete\":true}"};
        }
        if (ferry_queue_add_bulk(q, spec, (size_t)n, NULL, &e)) rc = fail("add", &e);
        for (long i = 0; i < n; i++)
            free(data[i]);
    }
    free(spec);
    free(data);
    ferry_queue_close(q);
    return rc;
}

/* One timed run: returns jobs/s, or -1. */
static double run(const ferry_redis_options *ro, const char *name, long jobs, int concurrency,
                  const ferry_contracts *contracts) {
    if (fill(ro, name, jobs)) return -1;
    run_state st = {.done = 0, .target = jobs};
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.cv, NULL);
    ferry_worker_options wo;
    ferry_worker_options_init(&wo);
    wo.redis = ro;
    wo.prefix = "bench";
    wo.concurrency = concurrency;
    if (contracts) {
        wo.check = ferry_contracts_job_check;
        wo.check_userdata = (void *)contracts;
    }
    ferry_worker *w = NULL;
    ferry_error e = {0};
    if (ferry_worker_create(name, &wo, handler, &st, &w, &e)) return fail("worker create", &e);
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
    if (s.failed) {
        fprintf(stderr, "contract_bench: %llu jobs failed (the contract refused them?)\n",
                s.failed);
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
        fprintf(stderr, "usage: contract_bench REDIS_URL [JOBS [ROUNDS [CONCURRENCY]]]\n");
        return 2;
    }
    long jobs = argc > 2 ? atol(argv[2]) : 20000;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    int conc = argc > 4 ? atoi(argv[4]) : 1;
    if (jobs < 1 || rounds < 1 || rounds > 50 || conc < 1 || conc > FERRY_CONCURRENCY_MAX) {
        fprintf(stderr, "contract_bench: JOBS >= 1, ROUNDS 1..50, CONCURRENCY 1..%d\n",
                FERRY_CONCURRENCY_MAX);
        return 2;
    }
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = argv[1];
    ferry_error e = {0};
    ferry_contract *c = NULL;
    ferry_contracts *reg = NULL;
    if (ferry_contract_parse(SCHEMA, sizeof SCHEMA - 1, "order.placed.json", &c, &e) ||
        ferry_contracts_new(&reg, &e) || ferry_contracts_add(reg, "order.placed", NULL, c, &e)) {
        fprintf(stderr, "contract_bench: contract: %s\n", e.message);
        return 1;
    }
    /* the payload must pass the contract, or the comparison measures failures */
    double *none = calloc((size_t)rounds, sizeof *none), *with = calloc((size_t)rounds, sizeof *with);
    int bad = 0;
    printf("contract_bench: %ld jobs per run, concurrency %d, %d rounds\n", jobs, conc, rounds);
    for (int r = 0; r < rounds; r++) {
        char qn[64];
        for (int k = 0; k < 2; k++) {
            int contract = (k + r) % 2; /* alternate which goes first */
            snprintf(qn, sizeof qn, "cb-%d-%s", r, contract ? "contract" : "none");
            double v = run(&ro, qn, jobs, conc, contract ? reg : NULL);
            if (v < 0) bad = 1;
            (contract ? with : none)[r] = v;
            printf("  round %d %-8s %10.0f jobs/s\n", r + 1, contract ? "contract" : "none", v);
            fflush(stdout);
        }
    }
    qsort(none, (size_t)rounds, sizeof *none, cmp);
    qsort(with, (size_t)rounds, sizeof *with, cmp);
    double mn = none[rounds / 2], mw = with[rounds / 2];
    printf("median: none %.0f jobs/s, contract %.0f jobs/s, ratio contract/none %.3f\n", mn, mw,
           mn > 0 ? mw / mn : 0);
    free(none);
    free(with);
    ferry_contracts_free(reg);
    return bad;
}

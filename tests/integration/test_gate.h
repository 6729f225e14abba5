/* test_gate.h - a gate that worker handlers block on (their jobs stay active and locked)
 * until the test opens it. Header-only, for the integration tests (test_worker_support.h,
 * test_queue_obliterate.c). */
#ifndef FERRY_TEST_GATE_H
#define FERRY_TEST_GATE_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"

/* A gate handlers block on until the test opens it. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    int entered; /* handlers that reached the gate */
    int inside, max_inside;
} gate;

static inline void gate_init(gate *g) {
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
}

static inline void gate_open(gate *g) {
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Called by a handler: record entry, wait for the gate (at most 30 s). Returns 1 if it
 * opened. */
static inline int gate_pass(gate *g) {
    pthread_mutex_lock(&g->mu);
    g->entered++;
    g->inside++;
    if (g->inside > g->max_inside) g->max_inside = g->inside;
    pthread_cond_broadcast(&g->cv);
    int64_t end = ferry__mono_ms() + 30000;
    while (!g->open && ferry__mono_ms() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    g->inside--;
    int ok = g->open;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

static inline int gate_entered_at_least(void *arg) {
    gate *g = ((void **)arg)[0];
    int n = *(int *)((void **)arg)[1];
    pthread_mutex_lock(&g->mu);
    int v = g->entered >= n;
    pthread_mutex_unlock(&g->mu);
    return v;
}

/* gate_init + gate_pass's counterpart at the end of a test. */
static inline void gate_destroy(gate *g) {
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

#endif

/* gate.c - the callback gate (one per worker, shared by its lanes: user callbacks run one
 * at a time and never after close returned) and the monotonic condition wait every worker
 * thread sleeps in. */
#include <stdlib.h>

#include "worker/worker_internal.h"

void ferry__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_mono_ms) {
    if (deadline_mono_ms <= 0) {
        pthread_cond_wait(cv, mu);
        return;
    }
    struct timespec ts = {(time_t)(deadline_mono_ms / 1000),
                          (long)(deadline_mono_ms % 1000) * 1000000L};
    pthread_cond_timedwait(cv, mu, &ts);
}

int ferry__cb_enter(ferry__lane *lane) {
    pthread_mutex_lock(&lane->cbg->mu);
    if (!atomic_load(&lane->abandon)) return 0;
    pthread_mutex_unlock(&lane->cbg->mu);
    return -1;
}

void ferry__cb_leave(ferry__lane *lane) {
    pthread_mutex_unlock(&lane->cbg->mu);
}

ferry__cbgate *ferry__cbgate_new(void) {
    ferry__cbgate *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        return NULL;
    }
    atomic_init(&g->refs, 1);
    return g;
}

void ferry__cbgate_drop(ferry__cbgate *g) {
    if (g && atomic_fetch_sub(&g->refs, 1) == 1) {
        pthread_mutex_destroy(&g->mu);
        free(g);
    }
}

/* ---- options ------------------------------------------------------------------------ */

/* gate.c - the callback gate (one per worker, shared by its lanes: user callbacks run one
 * at a time and never after close returned) and the monotonic condition wait every worker
 * thread sleeps in. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/printable.h"
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

void ferry__lane_report(ferry__lane *lane, int code, const char *fmt, ...) {
    if (!ferry__wants_errors(lane)) return;
    ferry_error e;
    e.code = code;
    /* queue names, job ids and server replies may hold any bytes: escaped, so that a
     * message is one line of text a log cannot be forged with */
    char raw[FERRY_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    ferryx_printable(raw, e.message, sizeof e.message);
    if (ferry__cb_enter(lane) != 0) return;
    ferry__deliver_error(lane, &e);
    ferry__cb_leave(lane);
}

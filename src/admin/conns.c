/* conns.c - the connections of `ferry serve` and their deadlines. libmicrohttpd's own
 * connection timeout counts idle time only (it restarts with every byte), so a client that
 * trickles a header line a second would hold its connection, and its thread, for as long as
 * it likes; 64 of them would lock every other client out, /healthz included. Here each
 * connection gets deadlines that count from a fixed point instead:
 *
 *   - the request head complete within FERRY_ADMIN_HEAD_TIMEOUT_S of the connection (or of
 *     the previous answer on a kept-alive connection),
 *   - the head and the body within FERRY_ADMIN_REQUEST_TIMEOUT_S of that same point,
 *   - the answer read by the client within FERRY_ADMIN_REQUEST_TIMEOUT_S of being queued
 *     (an event stream excepted: stream.c bounds its life);
 *
 * while a handler runs there is none (each Redis and PostgreSQL call has its own). A sweeper
 * thread closes a connection past its deadline with shutdown(SHUT_RDWR): libmicrohttpd's
 * thread for it then reads end-of-file and ends the connection as if the client had closed.
 *
 * The table of connections is filled by MHD_OPTION_NOTIFY_CONNECTION: STARTED (on
 * libmicrohttpd's accepting thread) takes a slot and the descriptor, CLOSED frees it. In
 * libmicrohttpd 0.9.75 (daemon.c, MHD_cleanup_connections and the failed-thread path of
 * new_connection_process_) CLOSED is notified before the socket is closed, and both take
 * conns_mu here, as the sweeper does around its shutdown(): so the sweeper never shuts down
 * a descriptor that has been closed and perhaps reused for something else. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "admin/framework.h"
#include "util/clock.h"
#include "util/error.h"

#define SWEEP_NAMED_MAX 3 /* client addresses one sweep's log record names */

void ferry__admin_conns_init(ferry_admin_server *s) {
    pthread_mutex_init(&s->conns_mu, NULL);
    pthread_condattr_t ca; /* the sweeper waits with monotonic deadlines */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->conns_cv, &ca);
    pthread_condattr_destroy(&ca);
    for (size_t i = 0; i < FERRY_ADMIN_CONNECTIONS_MAX; i++)
        s->conns[i].fd = -1;
}

void ferry__admin_conns_destroy(ferry_admin_server *s) {
    pthread_mutex_destroy(&s->conns_mu);
    pthread_cond_destroy(&s->conns_cv);
}

/* Set slot's deadline for `phase` [conns_mu held]; wakes the sweeper when it is the
 * earliest. */
static void set_phase(ferry_admin_server *s, admin_conn *slot, int phase, int64_t now,
                      int64_t extra_ms) {
    slot->phase = phase;
    switch (phase) {
    case ADMIN_CONN_HEAD:
        slot->since_ms = now;
        slot->deadline_ms = now + FERRY_ADMIN_HEAD_TIMEOUT_S * 1000;
        break;
    case ADMIN_CONN_BODY:
        slot->deadline_ms = slot->since_ms + FERRY_ADMIN_REQUEST_TIMEOUT_S * 1000;
        break;
    case ADMIN_CONN_ANSWER:
        slot->deadline_ms = now + FERRY_ADMIN_REQUEST_TIMEOUT_S * 1000 + extra_ms;
        break;
    default: /* a handler running, an event stream */
        slot->deadline_ms = 0;
        break;
    }
    if (slot->deadline_ms && (s->sweep_at_ms == 0 || slot->deadline_ms < s->sweep_at_ms))
        pthread_cond_signal(&s->conns_cv);
}

void ferry__admin_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                              enum MHD_ConnectionNotificationCode code) {
    ferry_admin_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        *socket_context = NULL;
        const union MHD_ConnectionInfo *fi =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!fi) return; /* untracked: libmicrohttpd's idle timeout alone applies */
        char remote[ADMIN_REMOTE_MAX];
        ferry__admin_remote_text(c, remote, sizeof remote);
        pthread_mutex_lock(&s->conns_mu);
        /* libmicrohttpd admits at most FERRY_ADMIN_CONNECTIONS_MAX, and notifies CLOSED
         * before it counts one gone, so a slot is free */
        for (size_t i = 0; i < FERRY_ADMIN_CONNECTIONS_MAX; i++) {
            admin_conn *slot = &s->conns[i];
            if (slot->conn) continue;
            slot->conn = c;
            slot->fd = fi->connect_fd;
            slot->shut = 0;
            memcpy(slot->remote, remote, sizeof remote);
            set_phase(s, slot, ADMIN_CONN_HEAD, ferry__mono_ms(), 0);
            *socket_context = slot;
            break;
        }
        pthread_mutex_unlock(&s->conns_mu);
        return;
    }
    if (code != MHD_CONNECTION_NOTIFY_CLOSED || !*socket_context) return;
    admin_conn *slot = *socket_context;
    pthread_mutex_lock(&s->conns_mu);
    slot->conn = NULL;
    slot->fd = -1;
    slot->deadline_ms = 0;
    slot->phase = ADMIN_CONN_NONE;
    pthread_mutex_unlock(&s->conns_mu);
    *socket_context = NULL;
}

void ferry__admin_conn_phase(ferry_admin_server *s, struct MHD_Connection *c, int phase) {
    ferry__admin_conn_answer_phase(s, c, phase, 0);
}

void ferry__admin_conn_answer_phase(ferry_admin_server *s, struct MHD_Connection *c, int phase,
                                    size_t answer_bytes) {
    /* a big answer gets its size's time at FERRY_ADMIN_ANSWER_MIN_RATE on top */
    int64_t extra_ms = (int64_t)(answer_bytes / (FERRY_ADMIN_ANSWER_MIN_RATE / 1000));
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    admin_conn *slot = ci ? ci->socket_context : NULL;
    if (!slot) return;
    pthread_mutex_lock(&s->conns_mu);
    /* the slot is this connection's until CLOSED, which comes after its last request */
    if (slot->conn == c && !slot->shut) set_phase(s, slot, phase, ferry__mono_ms(), extra_ms);
    pthread_mutex_unlock(&s->conns_mu);
}

static const char *phase_name(int phase) {
    return phase == ADMIN_CONN_HEAD   ? "request head"
           : phase == ADMIN_CONN_BODY ? "request"
                                      : "answer";
}

static int phase_limit_s(int phase) {
    return phase == ADMIN_CONN_HEAD ? FERRY_ADMIN_HEAD_TIMEOUT_S : FERRY_ADMIN_REQUEST_TIMEOUT_S;
}

static void *sweeper_main(void *arg) {
    ferry_admin_server *s = arg;
    pthread_mutex_lock(&s->conns_mu);
    while (!s->conns_stopping) {
        int64_t now = ferry__mono_ms(), next = 0;
        int closed[ADMIN_CONN_PHASES] = {0}, nclosed = 0;
        char named[SWEEP_NAMED_MAX][ADMIN_REMOTE_MAX];
        int nnamed = 0;
        for (size_t i = 0; i < FERRY_ADMIN_CONNECTIONS_MAX; i++) {
            admin_conn *slot = &s->conns[i];
            if (!slot->conn || slot->shut || !slot->deadline_ms) continue;
            if (slot->deadline_ms > now) {
                if (!next || slot->deadline_ms < next) next = slot->deadline_ms;
                continue;
            }
            /* the descriptor is open: CLOSED (which precedes its close) waits for conns_mu */
            shutdown(slot->fd, SHUT_RDWR);
            slot->shut = 1;
            closed[slot->phase]++;
            nclosed++;
            if (nnamed < SWEEP_NAMED_MAX) memcpy(named[nnamed++], slot->remote, ADMIN_REMOTE_MAX);
        }
        if (nclosed) {
            pthread_mutex_unlock(&s->conns_mu);
            char what[256] = "", who[SWEEP_NAMED_MAX * (ADMIN_REMOTE_MAX + 2) + 8] = "";
            size_t wl = 0, hl = 0;
            for (int p = ADMIN_CONN_HEAD; p <= ADMIN_CONN_ANSWER; p++)
                if (closed[p] && wl < sizeof what)
                    wl += (size_t)snprintf(what + wl, sizeof what - wl,
                                           "%s%d whose %s took over %d s", wl ? ", " : "",
                                           closed[p], phase_name(p), phase_limit_s(p));
            for (int k = 0; k < nnamed && hl < sizeof who; k++)
                hl += (size_t)snprintf(who + hl, sizeof who - hl, "%s%s", k ? ", " : "", named[k]);
            ferry__admin_event(s, FERRY_LOG_WARN, "closed %d connection(s): %s (from %s%s)",
                               nclosed, what, who, nclosed > nnamed ? ", ..." : "");
            pthread_mutex_lock(&s->conns_mu);
            continue; /* look again: the table may have changed meanwhile */
        }
        s->sweep_at_ms = next;
        if (!next) {
            pthread_cond_wait(&s->conns_cv, &s->conns_mu);
        } else {
            struct timespec until = {.tv_sec = (time_t)(next / 1000),
                                     .tv_nsec = (long)(next % 1000) * 1000000};
            pthread_cond_timedwait(&s->conns_cv, &s->conns_mu, &until);
        }
        s->sweep_at_ms = 0;
    }
    pthread_mutex_unlock(&s->conns_mu);
    return NULL;
}

int ferry__admin_conns_start(ferry_admin_server *s, ferry_error *err) {
    int rc = pthread_create(&s->sweeper, NULL, sweeper_main, s);
    if (rc) return ferry__err(err, FERRY_EIO, "serve: cannot start a thread: %s", strerror(rc));
    s->sweeper_started = 1;
    return 0;
}

void ferry__admin_conns_stop(ferry_admin_server *s) {
    if (!s->sweeper_started) return;
    pthread_mutex_lock(&s->conns_mu);
    s->conns_stopping = 1;
    pthread_cond_signal(&s->conns_cv);
    pthread_mutex_unlock(&s->conns_mu);
    pthread_join(s->sweeper, NULL);
    s->sweeper_started = 0;
}

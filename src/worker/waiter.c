/* waiter.c - the waiter thread: the only user of the worker's blocking connection.
 *
 * When the dispatcher's last fetch found nothing it asks the waiter to block. The waiter
 * runs `BZPOPMIN <base>marker T` (what BullMQ workers do): T is drain_delay, or the time
 * until the next delayed job is due, capped at 10 s, at least the server's smallest useful
 * timeout; the connection's own deadline is T plus a guard, so a silent server cannot hold
 * it. A popped "0" (jobs available), a due delayed marker or a timeout mean: fetch. The
 * waiter then fetches itself on the command connection when nobody holds the dispatcher
 * role (ferry__lead: one thread switch fewer between a new job and its handler), else it
 * leaves the fetch to the role's holder (`wake_fetch`). A future delayed marker just moves
 * the wake-up time. Close wakes it with CLIENT UNBLOCK from the command connection (see
 * dispatch.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/error.h"
#include "util/numtext.h"
#include "util/printable.h"
#include "util/retry_delay.h"
#include "worker/worker_internal.h"

#define MAX_BLOCK_S 10.0
#define BLOCK_GUARD_MS 3000 /* client-side deadline beyond the server-side timeout */

void ferry__lane_post_error(ferry__lane *lane, const ferry_error *e) {
    pthread_mutex_lock(&lane->mu);
    if (lane->nposted < FERRY__POSTED_MAX)
        lane->posted[lane->nposted++] = *e;
    else
        lane->nposted_dropped++;
    pthread_cond_signal(&lane->disp_cv);
    pthread_mutex_unlock(&lane->mu);
}

static void post(ferry__lane *lane, int code, const char *what, const char *msg) {
    ferry_error e;
    e.code = code;
    /* precisions keep the parts inside the message buffer (a long queue name is cut); the
     * whole is escaped (queue names and server replies may hold any bytes) */
    char raw[FERRY_ERROR_MESSAGE_MAX];
    snprintf(raw, sizeof raw, "worker %.100s: blocking connection: %.64s%.300s", lane->queue, what,
             msg);
    ferryx_printable(raw, e.message, sizeof e.message);
    ferry__lane_post_error(lane, &e);
}

static int leaving(ferry__lane *lane) {
    return atomic_load(&lane->stopping) || atomic_load(&lane->abandon);
}

/* Sleep until the deadline or until the worker stops. */
static void pause_until(ferry__lane *lane, int64_t deadline) {
    pthread_mutex_lock(&lane->mu);
    while (!leaving(lane) && ferry__mono_ms() < deadline)
        ferry__cond_wait_until(&lane->waiter_cv, &lane->mu, deadline);
    pthread_mutex_unlock(&lane->mu);
}

static long long client_id(ferry_conn *c) {
    redisReply *r = NULL;
    ferry_error e = {0};
    long long id = 0;
    if (ferry__conn_command(c, &r, &e, "CLIENT ID") == 0) {
        if (r->type == REDIS_REPLY_INTEGER) id = r->integer;
        freeReplyObject(r);
    }
    return id;
}

/* (Re)open the blocking connection, retrying with backoff until it works or the worker
 * stops. Returns 0 when connected. */
static int connect_blocking(ferry__lane *lane) {
    for (int failures = 0;;) {
        if (leaving(lane)) return -1;
        ferry_error e = {0};
        ferry_conn *c = NULL;
        unsigned epoch = ferry__link_epoch(lane);
        int rc = ferry__conn_open(&lane->redis, lane->bconn_name, &c, &e);
        if (rc == 0) {
            long long id = client_id(c);
            pthread_mutex_lock(&lane->mu);
            lane->bconn = c;
            lane->bclient_id = id;
            pthread_mutex_unlock(&lane->mu);
            ferry__link_back(lane, &lane->bconn_counted, &lane->bconn_epoch, epoch);
            return 0;
        }
        /* a connection replaced quietly (suspect, see wait_for_marker) that cannot be
         * renewed is lost */
        ferry__link_lost(lane, &lane->bconn_counted, &e);
        failures++;
        if ((failures & (failures - 1)) == 0 || failures % 16 == 0) {
            char what[64];
            snprintf(what, sizeof what, "reconnect attempt %d failed: ", failures);
            post(lane, rc, what, e.message);
        }
        pause_until(lane, ferry__mono_ms() + ferryx_reconnect_delay_ms(failures));
    }
}

static void drop_blocking(ferry__lane *lane) {
    pthread_mutex_lock(&lane->mu);
    ferry_conn *c = lane->bconn;
    lane->bconn = NULL;
    lane->bclient_id = 0;
    pthread_mutex_unlock(&lane->mu);
    ferry__conn_close(c);
}

/* The BZPOPMIN timeout for a wait until block_until (wall ms; 0 = drain_delay): seconds,
 * written as the command's argument into tbuf; 0 when block_until is due already. */
static double block_timeout(const ferry__lane *lane, long long block_until, char *tbuf,
                            size_t cap) {
    long long now = (long long)ferry__now_ms();
    double timeout_s;
    if (block_until > 0) {
        if (block_until - now <= 1) return 0;
        timeout_s = (double)(block_until - now) / 1000.0;
    } else {
        timeout_s = (double)lane->drain_delay_ms / 1000.0;
    }
    if (timeout_s > MAX_BLOCK_S) timeout_s = MAX_BLOCK_S;
    if (timeout_s < lane->min_block_s) timeout_s = lane->min_block_s;
    if (lane->whole_second_block) timeout_s = ceil(timeout_s);
    /* seconds with 3 decimals from integer ms: no locale decimal separator */
    long long tms = llround(timeout_s * 1000.0);
    snprintf(tbuf, cap, "%lld.%03lld", tms / 1000, tms % 1000);
    if (lane->whole_second_block) snprintf(tbuf, cap, "%d", (int)timeout_s);
    return timeout_s;
}

/* Block until a fetch is worth trying (or the worker stops). */
static void wait_for_marker(ferry__lane *lane, long long block_until) {
    for (;;) {
        if (leaving(lane)) return;
        if (!lane->bconn) {
            /* After a reconnect, fetch at once: markers may have come and gone. */
            connect_blocking(lane);
            return;
        }
        if (ferry__link_suspect(lane, lane->bconn_epoch)) {
            /* an outage began since it was opened (link.c): if the server closed it, open
             * a new one quietly rather than count a second outage */
            unsigned epoch = ferry__link_epoch(lane);
            if (ferry__conn_check_idle_peer(lane->bconn)) {
                drop_blocking(lane);
                continue;
            }
            lane->bconn_epoch = epoch;
        }
        char tbuf[32];
        double timeout_s = block_timeout(lane, block_until, tbuf, sizeof tbuf);
        if (timeout_s <= 0) return; /* due */
        ferry__conn_set_timeout(lane->bconn, (int)(timeout_s * 1000) + BLOCK_GUARD_MS);

        const char *argv[] = {"BZPOPMIN", lane->key.marker, tbuf};
        redisReply *r = NULL;
        ferry_error e = {0};
        int rc = ferry__conn_command_argv(lane->bconn, 3, argv, NULL, &r, &e);
        if (rc != 0) {
            if (!leaving(lane)) {
                post(lane, rc, "lost: ", e.message);
                ferry__link_lost(lane, &lane->bconn_counted, &e);
            }
            drop_blocking(lane);
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            /* e.g. the marker key holds another type; fetch anyway, but not in a tight loop */
            post(lane, FERRY_EREDIS, "BZPOPMIN: ", r->str);
            freeReplyObject(r);
            pause_until(lane, ferry__mono_ms() + 1000);
            return;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements < 3) {
            freeReplyObject(r); /* nil: timed out, or CLIENT UNBLOCK */
            return;
        }
        const redisReply *member = r->element[1], *score = r->element[2];
        int now_marker =
            member->type == REDIS_REPLY_STRING && member->len == 1 && member->str[0] == '0';
        double sc = score->type == REDIS_REPLY_STRING ? ferryx_strtod_c(score->str, NULL) : 0;
        freeReplyObject(r);
        long long until = (long long)floor(sc);
        if (now_marker || until <= (long long)ferry__now_ms() + 1) return;
        block_until = until; /* a delayed job further away: wait for it (or a new "0") */
    }
}

void *ferry__waiter_main(void *arg) {
    ferry__thread *t = arg;
    ferry__lane *lane = t->lane;
    pthread_mutex_lock(&lane->mu);
    for (;;) {
        while (!lane->wait_req && !leaving(lane))
            pthread_cond_wait(&lane->waiter_cv, &lane->mu);
        if (leaving(lane)) break;
        long long until = lane->wait_block_until;
        lane->wait_req = 0;
        lane->waiter_busy = 1;
        pthread_mutex_unlock(&lane->mu);

        wait_for_marker(lane, until);

        pthread_mutex_lock(&lane->mu);
        lane->waiter_busy = 0;
        lane->wake_fetch = 1;
        if (leaving(lane)) {
            pthread_cond_signal(&lane->disp_cv);
            continue;
        }
        pthread_mutex_unlock(&lane->mu);
        /* it asks us to block again (wait_req) when this fetch finds nothing */
        ferry__lead(lane, 0);
        pthread_mutex_lock(&lane->mu);
        if (lane->wake_fetch) pthread_cond_signal(&lane->disp_cv); /* the role was taken */
    }
    lane->waiter_busy = 0;
    pthread_cond_signal(&lane->disp_cv);
    pthread_mutex_unlock(&lane->mu);
    drop_blocking(lane);
    ferry__thread_exit(t);
    return NULL;
}

/* link.c - the worker's Redis link as a whole, for callbacks.notice: one REDIS_LOST and one
 * REDIS_RESTORED per outage however many lanes and connections the worker has, the
 * maxmemory-policy notice at start, and which start failures are worth retrying.
 *
 * Each connection (a lane's command connection, its blocking connection) says when it is
 * found lost and when it is open again; the counts are shared by the lanes (ferry__cbgate)
 * and updated under the callback lock, so the notices go out in the order the state
 * changed. An outage also makes every other connection suspect (the epoch): one that sat
 * idle through it is checked before its next use and, if the server closed it, replaced
 * without counting as a loss, so that it does not start a second outage after the first
 * is over. The end of an outage makes them suspect again (a check made during the outage
 * can come before the dead server's close reaches a connection). */
#include <stdio.h>
#include <string.h>

#include "redis/eviction.h"
#include "util/clock.h"
#include "util/printable.h"
#include "worker/worker_internal.h"

#define QUEUE_SHOWN_MAX 160

const char *ferry__lane_queue_shown(const ferry__lane *lane, char *out, size_t cap) {
    return ferryx_printable(lane->queue, out, cap);
}

unsigned ferry__link_epoch(const ferry__lane *lane) {
    return atomic_load(&lane->cbg->link_epoch);
}

int ferry__link_suspect(const ferry__lane *lane, unsigned epoch) {
    return epoch != ferry__link_epoch(lane);
}

void ferry__link_lost(ferry__lane *lane, int *counted, const ferry_error *e) {
    if (*counted) return;
    *counted = 1;
    if (ferry__cb_enter(lane) != 0) return; /* abandoned by close: nobody listens any more */
    ferry__cbgate *g = lane->cbg;
    g->link_nlost++;
    if (!g->link_down) {
        g->link_down = 1;
        g->link_down_since = ferry__mono_ms();
        atomic_fetch_add(&g->link_epoch, 1);
        if (ferry__wants_notices(lane)) {
            char q[QUEUE_SHOWN_MAX], why[FERRY_ERROR_MESSAGE_MAX],
                msg[FERRY_ERROR_MESSAGE_MAX + 256];
            ferryx_printable(e && e->message[0] ? e->message : ferry_strerror(e ? e->code : 0), why,
                             sizeof why);
            snprintf(msg, sizeof msg, "worker %s: Redis connection lost (%s); reconnecting",
                     ferry__lane_queue_shown(lane, q, sizeof q), why);
            ferry_worker_notice n = {FERRY_NOTICE_REDIS_LOST, msg, e ? e->code : FERRY_EIO, 0,
                                     NULL};
            ferry__deliver_notice(lane, &n);
        }
    }
    ferry__cb_leave(lane);
}

void ferry__link_back(ferry__lane *lane, int *counted, unsigned *epoch, unsigned epoch_at_open) {
    *epoch = epoch_at_open;
    if (!*counted) return;
    *counted = 0;
    if (ferry__cb_enter(lane) != 0) return;
    ferry__cbgate *g = lane->cbg;
    if (g->link_nlost > 0) g->link_nlost--;
    if (g->link_nlost == 0 && g->link_down) {
        g->link_down = 0;
        /* Every other connection is suspect again: one checked during the outage may have
         * looked open only because the dead server's close had not reached it yet; checked
         * again before its next use, it is replaced quietly instead of starting a second
         * outage. (The ones just reopened pass that check at the cost of one peek.) */
        atomic_fetch_add(&g->link_epoch, 1);
        long long down_ms = (long long)(ferry__mono_ms() - g->link_down_since);
        if (ferry__wants_notices(lane)) {
            char q[QUEUE_SHOWN_MAX], msg[QUEUE_SHOWN_MAX + 128];
            snprintf(msg, sizeof msg, "worker %s: Redis connection restored after %lld ms",
                     ferry__lane_queue_shown(lane, q, sizeof q), down_ms);
            ferry_worker_notice n = {FERRY_NOTICE_REDIS_RESTORED, msg, 0, down_ms, NULL};
            ferry__deliver_notice(lane, &n);
        }
    }
    ferry__cb_leave(lane);
}

void ferry__link_check_eviction(ferry__lane *lane, ferry_conn *c) {
    if (!ferry__wants_notices(lane) || !c) return;
    char policy[64], warn[512];
    ferry_error e = {0};
    /* unknown (INFO refused) or a transport failure (the dispatcher finds the connection
     * broken and reconnects): no notice */
    if (ferry__redis_eviction_policy(c, policy, sizeof policy, &e) != 0) return;
    if (!ferry__redis_eviction_warning(policy, warn, sizeof warn)) return;
    char q[QUEUE_SHOWN_MAX], shown[sizeof policy * 4], msg[sizeof warn + QUEUE_SHOWN_MAX + 16];
    ferryx_printable(policy, shown, sizeof shown);
    snprintf(msg, sizeof msg, "worker %s: %s", ferry__lane_queue_shown(lane, q, sizeof q), warn);
    ferry_worker_notice n = {FERRY_NOTICE_EVICTION_POLICY, msg, 0, 0, shown};
    if (ferry__cb_enter(lane) != 0) return;
    ferry__deliver_notice(lane, &n);
    ferry__cb_leave(lane);
}

/* A Redis error reply text that passes by itself: `word` right after ": " (how ferry's
 * messages quote the server's reply), followed by a space or the end. */
static int has_reply_word(const char *msg, const char *word) {
    size_t n = strlen(word);
    for (const char *p = msg; (p = strstr(p, word)) != NULL; p += n)
        if (p >= msg + 2 && p[-2] == ':' && p[-1] == ' ' && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

static const char *const passing_replies[] = {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN"};

static int passing_reply(const char *msg) {
    for (size_t i = 0; i < sizeof passing_replies / sizeof passing_replies[0]; i++)
        if (has_reply_word(msg, passing_replies[i])) return 1;
    return 0;
}

int ferry_worker_start_retryable(const ferry_error *err) {
    if (!err) return 0;
    switch (err->code) {
    case FERRY_EIO: {
        /* A server that refuses a connection may answer and close it at once (a wrong
         * password with the scripts pipelined behind AUTH, protected mode): the close is
         * an EIO quoting the answer (redis/conn.c), and the answer decides. */
        const char *ans = strstr(err->message, "(after the server answered: ");
        if (!ans) return 1;
        ans += strlen("(after the server answered: ");
        if (!strncmp(ans, "ERR max number of clients reached", 33)) return 1;
        for (size_t i = 0; i < sizeof passing_replies / sizeof passing_replies[0]; i++) {
            size_t n = strlen(passing_replies[i]);
            if (!strncmp(ans, passing_replies[i], n) && (ans[n] == ' ' || ans[n] == ')')) return 1;
        }
        return 0;
    }
    case FERRY_ETIMEDOUT:
        return 1;
    case FERRY_EREDIS:
        return passing_reply(err->message);
    default:
        return 0;
    }
}

/* command.c - a lane's command connection as a resource: its loss (reported once, counted
 * in the worker's link state), its quiet replacement when it predates an outage, and
 * reconnecting with capped, jittered backoff. Used by whoever holds the dispatcher role
 * (dispatch.c, fetch.c, settle.c, timers.c). */
#include <stdlib.h>

#include "util/clock.h"
#include "util/error.h"
#include "util/retry_delay.h"
#include "worker/worker_internal.h"

void ferry__cmd_lost(ferry__lane *lane, const ferry_error *e) {
    ferry__disp *d = &lane->d;
    if (!d->reported_broken)
        ferry__lane_report(lane, e->code, "worker %s: command connection lost: %s", lane->queue,
                           e->message);
    d->reported_broken = 1;
    ferry__conn_close(d->conn);
    d->conn = NULL;
    d->reconnect_at = ferry__mono_ms(); /* first attempt at once */
    d->reconnect_failures = 0;
    ferry__link_lost(lane, &d->link_counted, e);
}

/* At the start of a turn: a connection that predates an outage (link.c) and that the
 * server closed meanwhile is replaced before anything is sent on it, without counting
 * as a loss; one still open is kept. */
void ferry__cmd_check_suspect(ferry__lane *lane) {
    ferry__disp *d = &lane->d;
    if (!d->conn || !ferry__link_suspect(lane, d->conn_epoch)) return;
    unsigned epoch = ferry__link_epoch(lane);
    if (!ferry__conn_check_idle_peer(d->conn)) {
        d->conn_epoch = epoch;
        return;
    }
    ferry__conn_close(d->conn);
    d->conn = NULL;
    d->reconnect_at = ferry__mono_ms();
    d->reconnect_failures = 0;
}

int ferry__cmd_reconnect(ferry__lane *lane) {
    ferry__disp *d = &lane->d;
    ferry_error e = {0};
    unsigned epoch = ferry__link_epoch(lane);
    int rc = ferry__conn_open(&lane->redis, NULL, &d->conn, &e);
    if (rc != 0) {
        d->conn = NULL;
        int n = ++d->reconnect_failures;
        d->reconnect_at = ferry__mono_ms() + ferryx_reconnect_delay_ms(n);
        if ((n & (n - 1)) == 0 || n % 16 == 0)
            ferry__lane_report(lane, rc, "worker %s: reconnect attempt %d failed: %s", lane->queue,
                               n, e.message);
        /* a connection replaced quietly (check_suspect) that cannot be renewed is lost */
        ferry__link_lost(lane, &d->link_counted, &e);
        return rc;
    }
    ferry__link_back(lane, &d->link_counted, &d->conn_epoch, epoch);
    d->reconnect_failures = 0;
    d->reported_broken = 0;
    d->drained = 0; /* jobs may have arrived while we were away */
    d->block_until = 0;
    return 0;
}

/* The connection failed under the call (a TLS alert mid-connection counts too: it leaves
 * the connection broken like a reset does). */
int ferry__cmd_transport_error(const ferry_conn *c, int rc) {
    return rc == FERRY_EIO || rc == FERRY_ETIMEDOUT || rc == FERRY_EPROTO ||
           (rc == FERRY_ETLS && c && ferry__conn_broken(c));
}

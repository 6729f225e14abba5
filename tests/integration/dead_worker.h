/* dead_worker.h - what a worker that then dies does to a job, for the stalled-job tests
 * (test_worker_recovery.c, test_cli_worker.c): fetch it with moveToActive and a short lock
 * that nobody renews. Header-only (each test file is its own executable). */
#ifndef FERRY_TEST_DEAD_WORKER_H
#define FERRY_TEST_DEAD_WORKER_H

#include <stdio.h>

#include "redis/conn.h"
#include "support/testenv.h" /* cmocka */
#include "util/clock.h"

/* Fetch the next job of the queue whose keys start with `base` ("<prefix>:<queue>:") with a
 * lock of lock_ms and token "dead-worker:1"; fails the test unless it is `want_id`. */
static inline void dead_worker_fetch(ferry_conn *c, const char *base, const char *want_id,
                                     int lock_ms) {
    const ferry_script *s = ferry__script_get("moveToActive");
    assert_non_null(s);
    char k[9][200];
    const char *sfx[] = {"wait",    "active", "prioritized", "events", "limiter",
                         "delayed", "meta",   "pc",          "marker"};
    const char *keys[9];
    for (int i = 0; i < 9; i++) {
        snprintf(k[i], sizeof k[i], "%s%s", base, sfx[i]);
        keys[i] = k[i];
    }
    char now[24], lock[16];
    snprintf(now, sizeof now, "%lld", (long long)ferry__now_ms());
    snprintf(lock, sizeof lock, "%d", lock_ms);
    const char *args[] = {base, now, "1", "dead-worker:", "1", lock, "", "", ""};
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_evalsha(c, s, 9, keys, 9, args, NULL, &r, &e) != 0) fail_msg("%s", e.message);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->elements, 2);
    assert_string_equal(r->element[0]->element[0]->str, want_id);
    freeReplyObject(r);
}

#endif

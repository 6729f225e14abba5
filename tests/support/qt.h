/* qt.h - helpers of the producer integration tests (test_queue*.c, test_finish_script.c, and
 * the scheduler tests through sc.h), prefix qt_: open a queue on the test Redis, add jobs
 * that must succeed or fail, and read back keys, lists, zsets, hashes and the events stream
 * as compact strings for exact comparisons, through one inspection connection (qt_conn,
 * opened by the group fixture qt_setup / qt_teardown). Header-only (each test file is its
 * own executable). */
#ifndef FERRY_TEST_QT_H
#define FERRY_TEST_QT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/queue.h"
#include "support/th.h"
#include "util/clock.h"

static ferry_conn *qt_conn; /* inspection connection (qt_setup opens it) */

/* Queue `name` under `prefix` on the test Redis with default job options (may be NULL);
 * qt_open_lax also sets allow_unknown_opts. The caller closes it. */
static inline ferry_queue *qt_open_lax(const char *prefix, const char *name, const char *defaults,
                                       int allow_unknown) {
    return th_queue_open(prefix, name, defaults, allow_unknown);
}

static inline ferry_queue *qt_open(const char *prefix, const char *name, const char *defaults) {
    return th_queue_open(prefix, name, defaults, 0);
}

static inline char *qt_add(ferry_queue *q, const char *name, const char *data, const char *opts) {
    ferry_job_spec s = {name, data, opts};
    char *id = NULL;
    ferry_error e = {0};
    if (ferry_queue_add(q, &s, &id, &e))
        fail_msg("add %s %s: %s", name, opts ? opts : "", e.message);
    assert_non_null(id);
    return id;
}

static inline void qt_add_expect(ferry_queue *q, const char *name, const char *data,
                                 const char *opts, const char *want_id) {
    char *id = qt_add(q, name, data, opts);
    assert_string_equal(id, want_id);
    free(id);
}

static inline void qt_add_fail(ferry_queue *q, const char *name, const char *data, const char *opts,
                               int code, const char *msg) {
    ferry_job_spec s = {name, data, opts};
    char *id = (char *)"x";
    ferry_error e = {0};
    int rc = ferry_queue_add(q, &s, &id, &e);
    if (rc != code) fail_msg("add: rc %d (%s), want %d", rc, e.message, code);
    assert_null(id);
    if (!strstr(e.message, msg)) fail_msg("message \"%s\" lacks \"%s\"", e.message, msg);
}

/* Key of queue q + suffix, in a static rotating buffer. */
static inline const char *qt_key(ferry_queue *q, const char *suffix) {
    static char buf[8][512];
    static int n;
    char *b = buf[n++ % 8];
    snprintf(b, sizeof buf[0], "%s:%s:%s", ferry_queue_prefix(q), ferry_queue_name(q), suffix);
    return b;
}

static inline redisReply *qt_cmd(const char *fmt, ...) FERRY_PRINTF(1, 2);
static inline redisReply *qt_cmd(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = th_vcmd(qt_conn, 1, fmt, ap);
    va_end(ap);
    return r;
}

static inline long long qt_ival(redisReply *r) {
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* GET / HGET as a string ("(nil)" when missing) in a rotating buffer. */
static inline const char *qt_str(redisReply *r) {
    static char buf[4][4096];
    static int n;
    char *b = buf[n++ % 4];
    if (r->type == REDIS_REPLY_NIL)
        snprintf(b, sizeof buf[0], "(nil)");
    else
        snprintf(b, sizeof buf[0], "%.*s", (int)r->len, r->str);
    freeReplyObject(r);
    return b;
}
static inline const char *qt_get(const char *key) {
    return qt_str(qt_cmd("GET %s", key));
}
static inline const char *qt_hget(const char *key, const char *field) {
    return qt_str(qt_cmd("HGET %s %s", key, field));
}

/* Flatten an array reply of strings into "a,b,c" (scores included for WITHSCORES). */
static inline const char *qt_joined(redisReply *r) {
    static char buf[2][65536];
    static int n;
    char *b = buf[n++ % 2];
    size_t len = 0;
    b[0] = 0;
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        len += (size_t)snprintf(b + len, sizeof buf[0] - len, "%s%.*s", i ? "," : "", (int)e->len,
                                e->str);
    }
    freeReplyObject(r);
    return b;
}
static inline const char *qt_lrange(const char *key) {
    return qt_joined(qt_cmd("LRANGE %s 0 -1", key));
}
static inline const char *qt_zrange(const char *key) {
    return qt_joined(qt_cmd("ZRANGE %s 0 -1 WITHSCORES", key));
}

/* Events stream as "event:k=v:k=v|event:..." (fields after `event`, in order). */
static inline const char *qt_events(ferry_queue *q) {
    static char buf[65536];
    size_t len = 0;
    buf[0] = 0;
    redisReply *r = qt_cmd("XRANGE %s - +", qt_key(q, "events"));
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *f = r->element[i]->element[1];
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s", i ? "|" : "");
        for (size_t j = 0; j + 1 < f->elements; j += 2) {
            if (j == 0) {
                assert_string_equal(f->element[0]->str, "event");
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s", f->element[1]->str);
            } else {
                len += (size_t)snprintf(buf + len, sizeof buf - len, ":%s=%s", f->element[j]->str,
                                        f->element[j + 1]->str);
            }
        }
    }
    freeReplyObject(r);
    return buf;
}

/* HGETALL as "k=v;k=v" sorted by field name. */
static inline const char *qt_hgetall(const char *key) {
    static char buf[16384];
    redisReply *r = qt_cmd("HGETALL %s", key);
    size_t n = r->elements / 2;
    char **items = calloc(n ? n : 1, sizeof *items);
    for (size_t i = 0; i < n; i++) {
        size_t l = r->element[2 * i]->len + r->element[2 * i + 1]->len + 2;
        items[i] = malloc(l);
        snprintf(items[i], l, "%s=%s", r->element[2 * i]->str, r->element[2 * i + 1]->str);
    }
    qsort(items, n, sizeof *items, th_cmp_str);
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? ";" : "", items[i]);
        free(items[i]);
    }
    free(items);
    freeReplyObject(r);
    return buf;
}

static inline int qt_setup(void **state) {
    (void)state;
    qt_conn = th_conn();
    return 0;
}

static inline int qt_teardown(void **state) {
    (void)state;
    ferry__conn_close(qt_conn);
    return 0;
}

#endif

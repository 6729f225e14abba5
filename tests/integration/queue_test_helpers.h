/* queue_test_helpers.h - helpers shared by the producer integration tests (test_queue.c,
 * test_queue_admin.c): open a queue on the test Redis, add jobs, and read back keys, lists,
 * zsets, hashes and the events stream as compact strings for exact comparisons. */
#ifndef FERRY_TEST_QUEUE_HELPERS_H
#define FERRY_TEST_QUEUE_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/queue.h"
#include "support/testenv.h"
#include "util/clock.h"

static ferry_conn *C; /* inspection connection */

/* ---- helpers -------------------------------------------------------------------------- */

/* open_q with allow_unknown_opts set as given. */
static inline ferry_queue *open_q_lax(const char *prefix, const char *name, const char *defaults,
                                      int allow_unknown) {
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = testenv_require("REDIS_URL");
    ferry_queue_options o;
    ferry_queue_options_init(&o);
    o.redis = &ro;
    o.prefix = prefix;
    o.default_job_opts = defaults;
    o.allow_unknown_opts = allow_unknown;
    ferry_queue *q = NULL;
    ferry_error e = {0};
    if (ferry_queue_open(name, &o, &q, &e)) fail_msg("open %s: %s", name, e.message);
    return q;
}

static inline ferry_queue *open_q(const char *prefix, const char *name, const char *defaults) {
    return open_q_lax(prefix, name, defaults, 0);
}

static inline char *add(ferry_queue *q, const char *name, const char *data, const char *opts) {
    ferry_job_spec s = {name, data, opts};
    char *id = NULL;
    ferry_error e = {0};
    if (ferry_queue_add(q, &s, &id, &e))
        fail_msg("add %s %s: %s", name, opts ? opts : "", e.message);
    assert_non_null(id);
    return id;
}

static inline void add_expect(ferry_queue *q, const char *name, const char *data, const char *opts,
                              const char *want_id) {
    char *id = add(q, name, data, opts);
    assert_string_equal(id, want_id);
    free(id);
}

static inline void add_fail(ferry_queue *q, const char *name, const char *data, const char *opts,
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
static inline const char *K(ferry_queue *q, const char *suffix) {
    static char buf[8][512];
    static int n;
    char *b = buf[n++ % 8];
    snprintf(b, sizeof buf[0], "%s:%s:%s", ferry_queue_prefix(q), ferry_queue_name(q), suffix);
    return b;
}

static inline redisReply *cmd(const char *fmt, ...) FERRY_PRINTF(1, 2);
static inline redisReply *cmd(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_vcommand(C, &r, &e, fmt, ap)) fail_msg("redis: %s", e.message);
    va_end(ap);
    if (r->type == REDIS_REPLY_ERROR) fail_msg("redis error: %s (%s)", r->str, fmt);
    return r;
}

static inline long long ival(redisReply *r) {
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* GET / HGET as a string ("(nil)" when missing) in a rotating buffer. */
static inline const char *str_reply(redisReply *r) {
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
static inline const char *get(const char *key) {
    return str_reply(cmd("GET %s", key));
}
static inline const char *hget(const char *key, const char *field) {
    return str_reply(cmd("HGET %s %s", key, field));
}

/* Flatten an array reply of strings into "a,b,c" (scores included for WITHSCORES). */
static inline const char *joined(redisReply *r) {
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
static inline const char *lrange(const char *key) {
    return joined(cmd("LRANGE %s 0 -1", key));
}
static inline const char *zrange(const char *key) {
    return joined(cmd("ZRANGE %s 0 -1 WITHSCORES", key));
}

/* Events stream as "event:k=v:k=v|event:..." (fields after `event`, in order). */
static inline const char *events(ferry_queue *q) {
    static char buf[65536];
    size_t len = 0;
    buf[0] = 0;
    redisReply *r = cmd("XRANGE %s - +", K(q, "events"));
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
static inline int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}
static inline const char *hgetall(const char *key) {
    static char buf[16384];
    redisReply *r = cmd("HGETALL %s", key);
    size_t n = r->elements / 2;
    char **items = calloc(n ? n : 1, sizeof *items);
    for (size_t i = 0; i < n; i++) {
        size_t l = r->element[2 * i]->len + r->element[2 * i + 1]->len + 2;
        items[i] = malloc(l);
        snprintf(items[i], l, "%s=%s", r->element[2 * i]->str, r->element[2 * i + 1]->str);
    }
    qsort(items, n, sizeof *items, cmp_str);
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

static inline int setup(void **state) {
    (void)state;
    C = testenv_conn();
    return 0;
}

static inline int teardown(void **state) {
    (void)state;
    ferry__conn_close(C);
    return 0;
}

#endif

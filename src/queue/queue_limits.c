/* queue_limits.c - queue-level throttles as BullMQ 6.7.0's Queue writes them: the manual
 * rate limit (`<queue>:limiter` key), global concurrency (meta.concurrency) and the global
 * rate limit (meta.max + meta.duration). Workers (fetch.lua, Node's moveToActive) read these;
 * this file only writes and reads them. Every call is a single command (or a MULTI of reads),
 * so no Lua script is needed: BullMQ's own setters are plain HSET / HDEL / SET / DEL too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "util/error.h"
#include "util/numtext.h"

/* The value BullMQ's rateLimit() stores: Number.MAX_SAFE_INTEGER, so any limiter max
 * (worker or meta) is "reached" while the key lives. */
#define MANUAL_LIMIT_VALUE "9007199254740991"

/* ---- round trips ---------------------------------------------------------------------- */

#define MAX_CMDS 5 /* MULTI + 3 reads + EXEC */

struct cmds_ctx {
    size_t ncmds;
    int argc[MAX_CMDS];
    const char *const *argv[MAX_CMDS];
};

static int cmds_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    struct cmds_ctx *c = vctx;
    *n = c->ncmds;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < c->ncmds; i++)
        rc = ferry__conn_append_argv(q->conn, c->argc[i], (const char **)c->argv[i], NULL, err);
    return rc;
}

/* One command, idempotent (every call in this file is), under the queue mutex. The reply is
 * owned by the caller; an error reply is turned into FERRY_EREDIS naming `what`. */
static int run1(ferry_queue *q, int argc, const char *const *argv, const char *what,
                redisReply **reply, ferry_error *err) {
    struct cmds_ctx c = {1, {argc}, {argv}};
    size_t n = 0;
    *reply = NULL;
    pthread_mutex_lock(&q->mu);
    int rc = ferry__queue_exchange(q, cmds_append, &c, 1, reply, 1, &n, err);
    pthread_mutex_unlock(&q->mu);
    if (rc == 0) rc = ferry__queue_reply_error(q, *reply, what, err);
    if (rc && *reply) {
        freeReplyObject(*reply);
        *reply = NULL;
    }
    return rc;
}

/* run1 for commands whose integer reply is all we need (HSET, HDEL, DEL). */
static int run1_int(ferry_queue *q, int argc, const char *const *argv, const char *what,
                    long long *out, ferry_error *err) {
    redisReply *r = NULL;
    int rc = run1(q, argc, argv, what, &r, err);
    if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: %s: unexpected reply", q->shown, what);
    if (rc == 0 && out) *out = r->integer;
    if (r) freeReplyObject(r);
    return rc;
}

static int limiter_key(const ferry_queue *q, char *buf, size_t cap, ferry_error *err) {
    if (!ferry__key(&q->keys, "limiter", buf, cap))
        return ferry__err(err, FERRY_EINVAL, "queue %s: limiter key too long", q->shown);
    return 0;
}

/* ---- parsing stored values ------------------------------------------------------------ */

/* A meta value that must be a plain decimal integer in [lo, hi] (what ferry and Node's
 * setters write for integer arguments). Returns 0, or -1 when it is anything else. */
static int stored_int(const redisReply *v, long long lo, long long hi, long long *out) {
    char buf[32], *end;
    if (v->type != REDIS_REPLY_STRING || v->len == 0 || v->len >= sizeof buf) return -1;
    memcpy(buf, v->str, v->len);
    buf[v->len] = 0;
    if (!(buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9'))) return -1;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (errno || *end || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

/* A number as Lua's tonumber() in BullMQ's getRateLimitTTL reads it; *ok = 0 when tonumber
 * would give nil (absent key or not a number). */
static double lua_number(const redisReply *v, int *ok) {
    char buf[64], *end;
    *ok = 0;
    if (v->type != REDIS_REPLY_STRING || v->len == 0 || v->len >= sizeof buf) return 0;
    memcpy(buf, v->str, v->len);
    buf[v->len] = 0;
    double d = ferryx_strtod_c(buf, &end);
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    if (end == buf || *end) return 0;
    *ok = 1;
    return d;
}

static void reply_text(const redisReply *v, char *buf, size_t cap) {
    if (v->type == REDIS_REPLY_STRING)
        snprintf(buf, cap, "\"%.*s\"", v->len > 40 ? 40 : (int)v->len, v->str);
    else
        snprintf(buf, cap, "(absent)");
}

/* ---- manual rate limit ---------------------------------------------------------------- */

long long ferry__queue_limit_ttl_of(const redisReply *max, const redisReply *count,
                                    long long pttl) {
    if (max->type != REDIS_REPLY_STRING) return pttl;
    /* meta.max set: limited only when the count reached it (a non-numeric max or count
     * counts as "not limited", as tonumber() giving nil does in BullMQ) */
    int max_ok, used_ok;
    double m = lua_number(max, &max_ok);
    double used = lua_number(count, &used_ok);
    if (!used_ok) used = 0;
    return max_ok && m <= used && pttl > 0 ? pttl : 0;
}

int ferry_queue_rate_limit(ferry_queue *q, long long ms, ferry_error *err) {
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_rate_limit: queue is NULL");
    if (ms < 1 || ms > FERRY_LIMIT_MS_MAX)
        return ferry__err(err, FERRY_EINVAL, "rate limit: expected 1 to %lld ms, got %lld",
                          FERRY_LIMIT_MS_MAX, ms);
    char key[FERRY__QKEY_LEN], msbuf[24];
    int rc = limiter_key(q, key, sizeof key, err);
    if (rc) return rc;
    snprintf(msbuf, sizeof msbuf, "%lld", ms);
    const char *argv[] = {"SET", key, MANUAL_LIMIT_VALUE, "PX", msbuf};
    redisReply *r = NULL;
    rc = run1(q, 5, argv, "SET limiter", &r, err);
    if (r) freeReplyObject(r);
    return rc;
}

int ferry_queue_clear_rate_limit(ferry_queue *q, int *removed, ferry_error *err) {
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_clear_rate_limit: queue is NULL");
    char key[FERRY__QKEY_LEN];
    int rc = limiter_key(q, key, sizeof key, err);
    if (rc) return rc;
    const char *argv[] = {"DEL", key};
    long long n = 0;
    rc = run1_int(q, 2, argv, "DEL limiter", &n, err);
    if (rc == 0 && removed) *removed = n > 0;
    return rc;
}

/* HGET meta max, GET limiter, PTTL limiter in one MULTI: the same snapshot BullMQ's
 * getRateLimitTtl script sees, computed as its getRateLimitTTL does. */
int ferry_queue_rate_limit_ttl(ferry_queue *q, long long *ttl_ms, ferry_error *err) {
    if (!q || !ttl_ms)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_rate_limit_ttl: NULL argument");
    char key[FERRY__QKEY_LEN];
    int rc = limiter_key(q, key, sizeof key, err);
    if (rc) return rc;
    const char *const multi[] = {"MULTI"}, *const exec[] = {"EXEC"};
    const char *const hget[] = {"HGET", q->key[QK_META], "max"};
    const char *const get[] = {"GET", key}, *const pttl[] = {"PTTL", key};
    struct cmds_ctx c = {MAX_CMDS, {1, 3, 2, 2, 1}, {multi, hget, get, pttl, exec}};
    redisReply *r[MAX_CMDS] = {0};
    size_t n = 0;
    pthread_mutex_lock(&q->mu);
    rc = ferry__queue_exchange(q, cmds_append, &c, 1, r, MAX_CMDS, &n, err);
    pthread_mutex_unlock(&q->mu);
    redisReply *x = n == MAX_CMDS ? r[MAX_CMDS - 1] : NULL;
    if (rc == 0) rc = ferry__queue_reply_error(q, x, "rate limit ttl", err);
    if (rc == 0 && (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 3))
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: rate limit ttl: unexpected reply", q->shown);
    for (size_t i = 0; rc == 0 && i < 3; i++)
        if (x->element[i]->type == REDIS_REPLY_ERROR)
            rc = ferry__err(err, FERRY_EREDIS, "queue %s: rate limit ttl: %s", q->shown,
                            x->element[i]->str);
    if (rc == 0 && x->element[2]->type != REDIS_REPLY_INTEGER)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: rate limit ttl: PTTL is not an integer",
                        q->shown);
    if (rc == 0)
        *ttl_ms = ferry__queue_limit_ttl_of(x->element[0], x->element[1], x->element[2]->integer);
    for (size_t i = 0; i < n; i++)
        if (r[i]) freeReplyObject(r[i]);
    return rc;
}

/* ---- global concurrency --------------------------------------------------------------- */

int ferry_queue_set_global_concurrency(ferry_queue *q, long n, ferry_error *err) {
    if (!q)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_set_global_concurrency: queue is NULL");
    if (n < 1 || n > FERRY_LIMIT_COUNT_MAX)
        return ferry__err(err, FERRY_EINVAL, "global concurrency: expected 1 to %ld, got %ld",
                          FERRY_LIMIT_COUNT_MAX, n);
    char nbuf[24];
    snprintf(nbuf, sizeof nbuf, "%ld", n);
    const char *const argv[] = {"HSET", q->key[QK_META], "concurrency", nbuf};
    return run1_int(q, 4, argv, "HSET meta concurrency", NULL, err);
}

int ferry_queue_remove_global_concurrency(ferry_queue *q, ferry_error *err) {
    if (!q)
        return ferry__err(err, FERRY_EINVAL,
                          "ferry_queue_remove_global_concurrency: queue is NULL");
    const char *const argv[] = {"HDEL", q->key[QK_META], "concurrency"};
    return run1_int(q, 3, argv, "HDEL meta concurrency", NULL, err);
}

int ferry_queue_get_global_concurrency(ferry_queue *q, long *n, ferry_error *err) {
    if (!q || !n)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_get_global_concurrency: NULL argument");
    const char *const argv[] = {"HGET", q->key[QK_META], "concurrency"};
    redisReply *r = NULL;
    int rc = run1(q, 3, argv, "HGET meta concurrency", &r, err);
    if (rc) return rc;
    long long v = 0;
    if (r->type == REDIS_REPLY_NIL) {
        *n = 0;
    } else if (stored_int(r, 1, FERRY_LIMIT_COUNT_MAX, &v) == 0) {
        *n = (long)v;
    } else {
        char shown[64];
        reply_text(r, shown, sizeof shown);
        rc = ferry__err(err, FERRY_EPROTO,
                        "queue %s: meta.concurrency is %s, not an integer from 1 to %ld", q->shown,
                        shown, FERRY_LIMIT_COUNT_MAX);
    }
    freeReplyObject(r);
    return rc;
}

/* ---- global rate limit ---------------------------------------------------------------- */

int ferry_queue_set_global_rate_limit(ferry_queue *q, long max, long long duration_ms,
                                      ferry_error *err) {
    if (!q)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_set_global_rate_limit: queue is NULL");
    if (max < 1 || max > FERRY_LIMIT_COUNT_MAX)
        return ferry__err(err, FERRY_EINVAL, "global rate limit: max: expected 1 to %ld, got %ld",
                          FERRY_LIMIT_COUNT_MAX, max);
    if (duration_ms < 1 || duration_ms > FERRY_LIMIT_MS_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "global rate limit: duration: expected 1 to %lld ms, got %lld",
                          FERRY_LIMIT_MS_MAX, duration_ms);
    char mbuf[24], dbuf[24];
    snprintf(mbuf, sizeof mbuf, "%ld", max);
    snprintf(dbuf, sizeof dbuf, "%lld", duration_ms);
    /* one HSET, so a worker never sees a new max with the old duration */
    const char *const argv[] = {"HSET", q->key[QK_META], "max", mbuf, "duration", dbuf};
    return run1_int(q, 6, argv, "HSET meta max duration", NULL, err);
}

int ferry_queue_remove_global_rate_limit(ferry_queue *q, ferry_error *err) {
    if (!q)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_remove_global_rate_limit: queue is NULL");
    const char *const argv[] = {"HDEL", q->key[QK_META], "max", "duration"};
    return run1_int(q, 4, argv, "HDEL meta max duration", NULL, err);
}

int ferry_queue_get_global_rate_limit(ferry_queue *q, long *max, long long *duration_ms,
                                      ferry_error *err) {
    if (!q || !max || !duration_ms)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_get_global_rate_limit: NULL argument");
    const char *const argv[] = {"HMGET", q->key[QK_META], "max", "duration"};
    redisReply *r = NULL;
    int rc = run1(q, 4, argv, "HMGET meta max duration", &r, err);
    if (rc) return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        freeReplyObject(r);
        return ferry__err(err, FERRY_EPROTO, "queue %s: HMGET meta: unexpected reply", q->shown);
    }
    const redisReply *m = r->element[0], *d = r->element[1];
    long long mv = 0, dv = 0;
    if (m->type == REDIS_REPLY_NIL && d->type == REDIS_REPLY_NIL) {
        *max = 0;
        *duration_ms = 0;
    } else if (stored_int(m, 1, FERRY_LIMIT_COUNT_MAX, &mv) == 0 &&
               stored_int(d, 1, FERRY_LIMIT_MS_MAX, &dv) == 0) {
        *max = (long)mv;
        *duration_ms = dv;
    } else {
        char ms[64], ds[64];
        reply_text(m, ms, sizeof ms);
        reply_text(d, ds, sizeof ds);
        rc = ferry__err(err, FERRY_EPROTO,
                        "queue %s: meta.max is %s and meta.duration is %s: not a global rate "
                        "limit (max 1 to %ld, duration 1 to %lld ms)",
                        q->shown, ms, ds, FERRY_LIMIT_COUNT_MAX, FERRY_LIMIT_MS_MAX);
    }
    freeReplyObject(r);
    return rc;
}

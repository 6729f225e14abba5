/* scheduler_list.c - reading job schedulers back: ferry_scheduler_get / _list / _count, the
 * same data Node BullMQ 6.7.0's getJobScheduler() / getJobSchedulers() return (the `repeat`
 * zset score as the next run, the `repeat:<id>` hash for the rest). Read-only: unlike Node,
 * a `repeat` entry without a hash is reported (name NULL), not deleted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/scheduler.h"
#include "queue/job_opts_ext.h"
#include "queue/queue_module.h"
#include "sched/scheduler_internal.h"
#include "util/error.h"
#include "util/numtext.h"

void ferry_scheduler_info_free(ferry_scheduler_info *i) {
    if (!i) return;
    ferry_scheduler_list_free(i, 1);
}

void ferry_scheduler_list_free(ferry_scheduler_info *items, size_t n) {
    for (size_t k = 0; items && k < n; k++) {
        ferry_scheduler_info *i = &items[k];
        free(i->id);
        free(i->name);
        free(i->pattern);
        free(i->tz);
        free(i->data_json);
        free(i->opts_json);
    }
    free(items);
}

static int is_str(const redisReply *r) {
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

/* Redis prints integral scores without a fraction; parse leniently anyway. A score may be
 * anything a client wrote (inf, 1e300): clamped to JavaScript's safe integers, never cast
 * out of range. */
static long long score_ms(const redisReply *r) {
    return is_str(r) ? ferryx_clamp_ll(ferryx_strtod_c(r->str, NULL), -FERRY__JS_SAFE_MAX,
                                       FERRY__JS_SAFE_MAX)
                     : 0;
}

/* parseInt as Node's transformSchedulerData applies it. */
static long long int_field(const redisReply *v) {
    return strtoll(v->str, NULL, 10);
}

static int dup_field(char **dst, const redisReply *v) {
    free(*dst);
    *dst = strndup(v->str, v->len);
    return *dst ? 0 : -1;
}

/* Fill *i from an HGETALL reply (flat field/value array). -1 on ENOMEM or a bad shape. */
static int from_hash(ferry_scheduler_info *i, const redisReply *h) {
    i->offset_ms = -1;
    if (!h || h->type != REDIS_REPLY_ARRAY || h->elements % 2) return -1;
    for (size_t k = 0; k + 1 < h->elements; k += 2) {
        const redisReply *f = h->element[k], *v = h->element[k + 1];
        if (!is_str(f) || !is_str(v)) return -1;
        const char *n = f->str;
        int rc = 0;
        if (!strcmp(n, "name"))
            rc = dup_field(&i->name, v);
        else if (!strcmp(n, "pattern"))
            rc = dup_field(&i->pattern, v);
        else if (!strcmp(n, "tz"))
            rc = dup_field(&i->tz, v);
        else if (!strcmp(n, "data"))
            rc = dup_field(&i->data_json, v);
        else if (!strcmp(n, "opts"))
            rc = dup_field(&i->opts_json, v);
        else if (!strcmp(n, "every"))
            i->every_ms = int_field(v);
        else if (!strcmp(n, "limit"))
            i->limit = int_field(v);
        else if (!strcmp(n, "startDate"))
            i->start_date_ms = int_field(v);
        else if (!strcmp(n, "endDate"))
            i->end_date_ms = int_field(v);
        else if (!strcmp(n, "offset"))
            i->offset_ms = int_field(v);
        else if (!strcmp(n, "ic"))
            i->iteration_count = int_field(v);
        if (rc) return -1;
    }
    /* a hash without name is not a scheduler Node would list */
    if (h->elements > 0 && !i->name && !(i->name = strdup(""))) return -1;
    return 0;
}

/* ---- get ---------------------------------------------------------------------------- */

struct get_ctx {
    const char *id, *hkey;
};

static int get_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    struct get_ctx *g = vctx;
    const char *multi[] = {"MULTI"}, *exec[] = {"EXEC"};
    const char *zs[] = {"ZSCORE", ferry__queue_key(q, QK_REPEAT), g->id};
    const char *hg[] = {"HGETALL", g->hkey};
    int rc = ferry__conn_append_argv(ferry__queue_conn(q), 1, multi, NULL, err);
    if (rc == 0) rc = ferry__conn_append_argv(ferry__queue_conn(q), 3, zs, NULL, err);
    if (rc == 0) rc = ferry__conn_append_argv(ferry__queue_conn(q), 2, hg, NULL, err);
    if (rc == 0) rc = ferry__conn_append_argv(ferry__queue_conn(q), 1, exec, NULL, err);
    *n = 4;
    return rc;
}

int ferry_scheduler_get(ferry_queue *q, const char *id, ferry_scheduler_info **out,
                        ferry_error *err) {
    if (out) *out = NULL;
    if (!q || !out) return ferry__err(err, FERRY_EINVAL, "ferry_scheduler_get: NULL argument");
    /* Node's schedulers may have longer ids than upsert takes; list shows them, get reads them */
    int rc = ferry__sched_check_id(id, FERRY_SCHEDULER_FOREIGN_ID_MAX, err);
    if (rc) return rc;
    size_t klen = ferry__queue_keys(q)->base_len + strlen(id) + 16;
    char *hkey = malloc(klen);
    if (!hkey) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    snprintf(hkey, klen, "%srepeat:%s", ferry__queue_keys(q)->base, id);
    struct get_ctx g = {id, hkey};
    redisReply *r[4] = {0};
    size_t n = 0;
    ferry__queue_lock(q);
    rc = ferry__queue_exchange(q, get_append, &g, 1, r, 4, &n, err);
    ferry__queue_unlock(q);
    free(hkey);
    const redisReply *x = rc == 0 ? r[3] : NULL;
    if (rc == 0) rc = ferry__queue_reply_error(q, x, "get job scheduler", err);
    if (rc == 0 && (x->type != REDIS_REPLY_ARRAY || x->elements != 2))
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: get job scheduler: unexpected reply",
                        ferry__queue_keys(q)->queue);
    /* inside EXEC each command answers for itself: a key of the wrong type is Redis's
     * WRONGTYPE error, reported as list reports it */
    if (rc == 0) rc = ferry__queue_reply_error(q, x->element[0], "ZSCORE job scheduler", err);
    if (rc == 0) rc = ferry__queue_reply_error(q, x->element[1], "HGETALL job scheduler", err);
    if (rc == 0 && !is_str(x->element[0]))
        rc = ferry__err(err, FERRY_ENOTFOUND, "queue %s: no job scheduler '%s'",
                        ferry__queue_keys(q)->queue, id);
    ferry_scheduler_info *i = NULL;
    if (rc == 0 && !(i = calloc(1, sizeof *i))) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    if (rc == 0) {
        i->next_ms = score_ms(x->element[0]);
        if (!(i->id = strdup(id)) || from_hash(i, x->element[1]))
            rc = ferry__err(err, FERRY_ENOMEM,
                            "queue %s: get job scheduler: out of memory or "
                            "unexpected reply",
                            ferry__queue_keys(q)->queue);
    }
    if (rc == 0)
        *out = i;
    else
        ferry_scheduler_info_free(i);
    for (size_t k = 0; k < n; k++)
        if (r[k]) freeReplyObject(r[k]);
    return rc;
}

/* ---- list --------------------------------------------------------------------------- */

struct range_ctx {
    long long start, stop;
    int ascending;
};

static int range_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    struct range_ctx *c = vctx;
    char a[24], b[24];
    snprintf(a, sizeof a, "%lld", c->start);
    snprintf(b, sizeof b, "%lld", c->stop);
    const char *argv[] = {c->ascending ? "ZRANGE" : "ZREVRANGE", ferry__queue_key(q, QK_REPEAT), a,
                          b, "WITHSCORES"};
    *n = 1;
    return ferry__conn_append_argv(ferry__queue_conn(q), 5, argv, NULL, err);
}

struct hashes_ctx {
    char **keys;
    size_t n;
};

static int hashes_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    struct hashes_ctx *c = vctx;
    *n = 0;
    for (size_t k = 0; k < c->n; k++) {
        const char *argv[] = {"HGETALL", c->keys[k]};
        int rc = ferry__conn_append_argv(ferry__queue_conn(q), 2, argv, NULL, err);
        if (rc) return rc;
        (*n)++;
    }
    return 0;
}

/* Second round trip: the hashes of the ids in `range` (id, score pairs). Caller holds the queue's
 * lock. */
static int read_hashes(ferry_queue *q, const redisReply *range, ferry_scheduler_info *items,
                       size_t cnt, ferry_error *err) {
    struct hashes_ctx hc = {calloc(cnt, sizeof(char *)), cnt};
    redisReply **h = calloc(cnt, sizeof *h);
    int rc = hc.keys && h ? 0 : ferry__err(err, FERRY_ENOMEM, "out of memory");
    for (size_t k = 0; rc == 0 && k < cnt; k++) {
        const redisReply *id = range->element[2 * k];
        size_t klen = ferry__queue_keys(q)->base_len + id->len + 16;
        if (!(hc.keys[k] = malloc(klen)) || !(items[k].id = strndup(id->str, id->len))) {
            rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
            break;
        }
        snprintf(hc.keys[k], klen, "%srepeat:%s", ferry__queue_keys(q)->base, items[k].id);
        items[k].next_ms = score_ms(range->element[2 * k + 1]);
    }
    size_t got = 0;
    if (rc == 0) rc = ferry__queue_exchange(q, hashes_append, &hc, 1, h, cnt, &got, err);
    for (size_t k = 0; rc == 0 && k < cnt; k++) {
        if ((rc = ferry__queue_reply_error(q, h[k], "HGETALL job scheduler", err))) break;
        if (from_hash(&items[k], h[k]))
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: list job schedulers: unexpected reply",
                            ferry__queue_keys(q)->queue);
    }
    for (size_t k = 0; k < got; k++)
        if (h[k]) freeReplyObject(h[k]);
    for (size_t k = 0; hc.keys && k < cnt; k++)
        free(hc.keys[k]);
    free(hc.keys);
    free(h);
    return rc;
}

int ferry_scheduler_list(ferry_queue *q, long long start, size_t max, int ascending,
                         ferry_scheduler_info **items, size_t *n, ferry_error *err) {
    if (items) *items = NULL;
    if (n) *n = 0;
    if (!q || !items || !n)
        return ferry__err(err, FERRY_EINVAL, "ferry_scheduler_list: NULL argument");
    if (start < 0) return ferry__err(err, FERRY_EINVAL, "ferry_scheduler_list: start is negative");
    if (max < 1 || max > FERRY_SCHEDULER_LIST_MAX)
        return ferry__err(err, FERRY_EINVAL, "ferry_scheduler_list: max %zu is out of range 1..%d",
                          max, FERRY_SCHEDULER_LIST_MAX);
    struct range_ctx rc_ = {start, start + (long long)max - 1, ascending};
    redisReply *range = NULL;
    size_t got = 0;
    ferry_scheduler_info *out = NULL;
    ferry__queue_lock(q);
    int rc = ferry__queue_exchange(q, range_append, &rc_, 1, &range, 1, &got, err);
    if (rc == 0) rc = ferry__queue_reply_error(q, range, "list job schedulers", err);
    if (rc == 0 &&
        (range->type != REDIS_REPLY_ARRAY || range->elements % 2 || range->elements / 2 > max))
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: list job schedulers: unexpected reply",
                        ferry__queue_keys(q)->queue);
    size_t cnt = rc == 0 ? range->elements / 2 : 0;
    for (size_t k = 0; rc == 0 && k < range->elements; k++)
        if (!is_str(range->element[k]))
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: list job schedulers: unexpected reply",
                            ferry__queue_keys(q)->queue);
    if (rc == 0 && cnt > 0) {
        if (!(out = calloc(cnt, sizeof *out)))
            rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
        else
            rc = read_hashes(q, range, out, cnt, err);
    }
    ferry__queue_unlock(q);
    if (range) freeReplyObject(range);
    if (rc) {
        ferry_scheduler_list_free(out, cnt);
        return rc;
    }
    *items = out;
    *n = cnt;
    return 0;
}

static int zcard_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    (void)vctx;
    const char *argv[] = {"ZCARD", ferry__queue_key(q, QK_REPEAT)};
    *n = 1;
    return ferry__conn_append_argv(ferry__queue_conn(q), 2, argv, NULL, err);
}

int ferry_scheduler_count(ferry_queue *q, long long *count, ferry_error *err) {
    if (!q || !count) return ferry__err(err, FERRY_EINVAL, "ferry_scheduler_count: NULL argument");
    redisReply *r = NULL;
    size_t got = 0;
    ferry__queue_lock(q);
    int rc = ferry__queue_exchange(q, zcard_append, NULL, 1, &r, 1, &got, err);
    ferry__queue_unlock(q);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "count job schedulers", err);
    if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: count job schedulers: unexpected reply",
                        ferry__queue_keys(q)->queue);
    if (rc == 0) *count = r->integer;
    if (r) freeReplyObject(r);
    return rc;
}

/* admin_find.c - finding jobs by name or by text in their data (ferry_queue_find_jobs).
 * BullMQ keeps no index for either, so this is a bounded scan: a state's ids a page at a
 * time (ferry_queue_job_page), then one pipelined HMGET name data per page. */
#include <stdlib.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "util/error.h"
#include "util/printable.h"

/* Every state, in the order a find without one walks them: ready work first. */
static const char *const FIND_STATES[] = {"wait",   "prioritized",      "delayed",
                                          "active", "waiting-children", "paused",
                                          "failed", "completed"};
#define NFIND_STATES (sizeof FIND_STATES / sizeof FIND_STATES[0])

void ferry_queue_found_jobs_free(ferry_queue_found_job *jobs, size_t n) {
    if (!jobs) return;
    for (size_t i = 0; i < n; i++) {
        free(jobs[i].id);
        free(jobs[i].name);
    }
    free(jobs);
}

struct hmget_ctx {
    char **keys;
    size_t n;
};

static int hmget_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    struct hmget_ctx *c = vctx;
    *n = c->n;
    for (size_t i = 0; i < c->n; i++) {
        int rc = ferry__conn_append_argv(ferry__queue_conn(q), 4,
                                         (const char *[]){"HMGET", c->keys[i], "name", "data"},
                                         NULL, err);
        if (rc) return rc;
    }
    return 0;
}

struct found {
    ferry_queue_found_job *v;
    size_t n, cap;
};

static int found_add(struct found *f, const char *id, const redisReply *name, const char *state,
                     ferry_error *err) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        ferry_queue_found_job *v = realloc(f->v, cap * sizeof *v);
        if (!v) return ferry__err(err, FERRY_ENOMEM, "find: out of memory");
        f->v = v;
        f->cap = cap;
    }
    ferry_queue_found_job *j = &f->v[f->n];
    j->state = state;
    j->name = NULL;
    if (!(j->id = strdup(id))) return ferry__err(err, FERRY_ENOMEM, "find: out of memory");
    if (name->type == REDIS_REPLY_STRING && !(j->name = strndup(name->str, name->len))) {
        free(j->id);
        return ferry__err(err, FERRY_ENOMEM, "find: out of memory");
    }
    f->n++;
    return 0;
}

/* Does a job's HMGET [name, data] reply match? -1 = the hash is gone. */
static int job_matches(const redisReply *r, const ferry_queue_find_options *o) {
    const redisReply *name = r->element[0], *data = r->element[1];
    if (name->type != REDIS_REPLY_STRING && data->type != REDIS_REPLY_STRING) return -1;
    if (o->name && (name->type != REDIS_REPLY_STRING || strlen(o->name) != name->len ||
                    memcmp(o->name, name->str, name->len) != 0))
        return 0;
    if (o->data_contains && o->data_contains[0]) {
        if (data->type != REDIS_REPLY_STRING) return 0;
        size_t tl = strlen(o->data_contains);
        if (tl > data->len) return 0;
        for (size_t i = 0; i + tl <= data->len; i++)
            if (data->str[i] == o->data_contains[0] && !memcmp(data->str + i, o->data_contains, tl))
                return 1;
        return 0;
    }
    return 1;
}

/* One page: read the hashes of ids[0..n) and keep the matches. *stop set at the limit. */
static int find_page(ferry_queue *q, const ferry_queue_find_options *o, long long limit,
                     const char *state, char **ids, size_t n, struct found *f, int *stop,
                     ferry_error *err) {
    struct hmget_ctx c = {calloc(n, sizeof(char *)), n};
    redisReply **replies = calloc(n, sizeof *replies);
    int rc = (!c.keys || !replies) ? ferry__err(err, FERRY_ENOMEM, "find: out of memory") : 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = ferry__queue_job_key(q, "find", ids[i], NULL, &c.keys[i], err);
    size_t got = 0;
    if (rc == 0) {
        ferry__queue_lock(q);
        rc = ferry__queue_exchange(q, hmget_append, &c, 1, replies, n, &got, err);
        ferry__queue_unlock(q);
    }
    for (size_t i = 0; rc == 0 && i < got && !*stop; i++) {
        const redisReply *r = replies[i];
        if ((rc = ferry__queue_reply_error(q, r, "HMGET", err)) != 0) break;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: HMGET: unexpected reply", q->shown);
            break;
        }
        if (job_matches(r, o) == 1 && (rc = found_add(f, ids[i], r->element[0], state, err)) == 0 &&
            (long long)f->n >= limit)
            *stop = 1;
    }
    for (size_t i = 0; i < got; i++)
        if (replies[i]) freeReplyObject(replies[i]);
    for (size_t i = 0; c.keys && i < n; i++)
        free(c.keys[i]);
    free(c.keys);
    free(replies);
    return rc;
}

int ferry_queue_find_jobs(ferry_queue *q, const ferry_queue_find_options *opts,
                          ferry_queue_found_job **out, size_t *n, int *complete, ferry_error *err) {
    if (out) *out = NULL;
    if (n) *n = 0;
    if (complete) *complete = 0;
    if (!q || !out || !n)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_find_jobs: NULL argument");
    ferry_queue_find_options o = {0};
    if (opts) o = *opts;
    long long limit = o.limit ? o.limit : FERRY_QUEUE_FIND_LIMIT_MAX;
    long long scan_max = o.scan_max ? o.scan_max : FERRY_QUEUE_FIND_SCAN_DEFAULT;
    if (limit < 1 || limit > FERRY_QUEUE_FIND_LIMIT_MAX)
        return ferry__err(err, FERRY_EINVAL, "find: limit %lld out of range (1..%d)", limit,
                          FERRY_QUEUE_FIND_LIMIT_MAX);
    if (scan_max < 1 || scan_max > FERRY_QUEUE_FIND_SCAN_MAX)
        return ferry__err(err, FERRY_EINVAL, "find: scan max %lld out of range (1..%lld)", scan_max,
                          (long long)FERRY_QUEUE_FIND_SCAN_MAX);
    if (o.data_contains && strlen(o.data_contains) > FERRY_QUEUE_FIND_DATA_TEXT_MAX)
        return ferry__err(err, FERRY_EINVAL, "find: data text of %zu bytes is over the limit of %d",
                          strlen(o.data_contains), FERRY_QUEUE_FIND_DATA_TEXT_MAX);
    const char *one[1];
    const char *const *states = FIND_STATES;
    size_t nstates = NFIND_STATES;
    if (o.state) {
        size_t i = 0;
        while (i < NFIND_STATES && strcmp(FIND_STATES[i], o.state) != 0)
            i++;
        if (i == NFIND_STATES && strcmp(o.state, "waiting") != 0) {
            char s[128];
            return ferry__err(err, FERRY_EINVAL,
                              "find: unknown state '%s' (expected wait, prioritized, delayed, "
                              "active, waiting-children, paused, failed or completed)",
                              ferryx_printable(o.state, s, sizeof s));
        }
        one[0] = i == NFIND_STATES ? "wait" : FIND_STATES[i];
        states = one;
        nstates = 1;
    }
    struct found f = {0};
    long long scanned = 0;
    int stop = 0, rc = 0, all = 1;
    for (size_t s = 0; rc == 0 && !stop && s < nstates; s++) {
        for (long long start = 0; rc == 0 && !stop;) {
            if (scanned >= scan_max) {
                all = 0; /* the bound, not the end of the jobs */
                stop = 1;
                break;
            }
            long long want = scan_max - scanned < FERRY_QUEUE_FIND_PAGE ? scan_max - scanned
                                                                        : FERRY_QUEUE_FIND_PAGE;
            char **ids = NULL;
            size_t got = 0;
            rc = ferry_queue_job_ids(q, states[s], start, start + want - 1, 0, &ids, &got, err);
            if (rc == 0 && got) rc = find_page(q, &o, limit, states[s], ids, got, &f, &stop, err);
            ferry_queue_job_ids_free(ids, got);
            if (rc) break;
            scanned += (long long)got;
            start += want;
            if (o.progress) o.progress(o.progress_ctx, states[s], scanned, (long long)f.n);
            if ((long long)got < want) break; /* the end of this state */
        }
    }
    if (rc) {
        ferry_queue_found_jobs_free(f.v, f.n);
        return rc;
    }
    if (stop && (long long)f.n >= limit) all = 0;
    *out = f.n ? f.v : NULL;
    if (!f.n) free(f.v);
    *n = f.n;
    if (complete) *complete = all;
    return 0;
}

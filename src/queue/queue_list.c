/* queue_list.c - the ids of a queue's jobs in one state, a page at a time
 * (ferry_queue_job_ids): BullMQ's getRanges for one type, as Queue.getJobs and the
 * getters built on it (getFailed, getWaiting, ...) read them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "queue/queue_module.h"
#include "util/error.h"

/* A state's key and whether it is a list (LPUSHed: the newest at the head) or a sorted set
 * (scored by time or priority: the newest, or the lowest priority number, first). */
static const struct {
    const char *state;
    enum ferry__qkey key;
    int list;
} STATES[] = {
    {"wait", QK_WAIT, 1},
    {"waiting", QK_WAIT, 1}, /* Node's name for it */
    {"paused", QK_PAUSED, 1},
    {"active", QK_ACTIVE, 1},
    {"delayed", QK_DELAYED, 0},
    {"prioritized", QK_PRIORITIZED, 0},
    {"completed", QK_COMPLETED, 0},
    {"failed", QK_FAILED, 0},
    {"waiting-children", QK_WAITING_CHILDREN, 0},
};
#define NSTATES (sizeof STATES / sizeof STATES[0])

int ferry__queue_state_range(const char *what, const char *state, long long start, long long *end,
                             enum ferry__qkey *key, int *list, ferry_error *err) {
    size_t s = 0;
    while (s < NSTATES && strcmp(STATES[s].state, state) != 0)
        s++;
    if (s == NSTATES)
        return ferry__err(err, FERRY_EINVAL,
                          "%s: unknown state (expected wait, paused, active, delayed, "
                          "prioritized, completed, failed or waiting-children)",
                          what);
    if (start < 0 || *end < -1 || (*end >= 0 && *end < start))
        return ferry__err(err, FERRY_EINVAL,
                          "%s: range %lld..%lld: start must be >= 0 and end >= start "
                          "(or -1 for the last)",
                          what, start, *end);
    if (*end >= 0 && *end - start >= FERRY_QUEUE_IDS_MAX)
        return ferry__err(err, FERRY_EINVAL, "%s: at most %d per call (asked %lld)", what,
                          FERRY_QUEUE_IDS_MAX, *end - start + 1);
    if (*end < 0) *end = start + FERRY_QUEUE_IDS_MAX - 1;
    *key = STATES[s].key;
    *list = STATES[s].list;
    return 0;
}

struct list_ctx {
    const char *argv[4];
    char a1[32], a2[32];
};

static int list_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    struct list_ctx *c = vctx;
    *n = 1;
    return ferry__conn_append_argv(ferry__queue_conn(q), 4, c->argv, NULL, err);
}

int ferry_queue_job_ids(ferry_queue *q, const char *state, long long start, long long end,
                        int ascending, char ***ids, size_t *n, ferry_error *err) {
    if (ids) *ids = NULL;
    if (n) *n = 0;
    if (!q || !state || !ids || !n)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_job_ids: NULL argument");
    enum ferry__qkey qk;
    int list;
    int rc0 = ferry__queue_state_range("job ids", state, start, &end, &qk, &list, err);
    if (rc0) return rc0;
    struct list_ctx c;
    const char *key = ferry__queue_key(q, qk);
    if (list && ascending) {
        /* oldest first: from the tail of the list, read back to front below */
        snprintf(c.a1, sizeof c.a1, "%lld", -(end + 1));
        snprintf(c.a2, sizeof c.a2, "%lld", -(start + 1));
    } else {
        snprintf(c.a1, sizeof c.a1, "%lld", start);
        snprintf(c.a2, sizeof c.a2, "%lld", end);
    }
    c.argv[0] = list ? "LRANGE" : ascending ? "ZRANGE" : "ZREVRANGE";
    c.argv[1] = key;
    c.argv[2] = c.a1;
    c.argv[3] = c.a2;
    redisReply *r = NULL;
    size_t got = 0;
    ferry__queue_lock(q);
    int rc = ferry__queue_exchange(q, list_append, &c, 1, &r, 1, &got, err);
    ferry__queue_unlock(q);
    if (rc) return rc;
    rc = ferry__queue_reply_error(q, r, c.argv[0], err);
    if (rc == 0 && r->type != REDIS_REPLY_ARRAY)
        rc = ferry__err(err, FERRY_EPROTO, "job ids: %s: unexpected reply", c.argv[0]);
    for (size_t i = 0; rc == 0 && i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING)
            rc = ferry__err(err, FERRY_EPROTO, "job ids: %s: unexpected element", c.argv[0]);
    char **out = NULL;
    if (rc == 0 && r->elements) {
        out = calloc(r->elements, sizeof *out);
        if (!out) rc = ferry__err(err, FERRY_ENOMEM, "job ids: out of memory");
        for (size_t i = 0; rc == 0 && i < r->elements; i++) {
            /* a list read from its tail is in oldest-last order: turn it around */
            size_t from = list && ascending ? r->elements - 1 - i : i;
            out[i] = strdup(r->element[from]->str);
            if (!out[i]) rc = ferry__err(err, FERRY_ENOMEM, "job ids: out of memory");
        }
        if (rc) {
            ferry_queue_job_ids_free(out, r->elements);
            out = NULL;
        } else {
            *ids = out;
            *n = r->elements;
        }
    }
    freeReplyObject(r);
    return rc;
}

void ferry_queue_job_ids_free(char **ids, size_t n) {
    if (!ids) return;
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* admin_workers.c - the workers of a queue as BullMQ 6.7.0's Queue.getWorkers() finds them
 * (ferry_queue_workers): the Redis clients named "<prefix>:<base64(queue)>" or
 * "<prefix>:<base64(queue)>:w:<worker name>", which is how Node's workers and ferry's name
 * their blocking connection, read from CLIENT LIST. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "util/error.h"

static int client_list_append(ferry_queue *q, void *ctx, size_t *n, ferry_error *err) {
    (void)ctx;
    *n = 1;
    return ferry__conn_append_argv(ferry__queue_conn(q), 2, (const char *[]){"CLIENT", "LIST"},
                                   NULL, err);
}

/* The value of `key` in one CLIENT LIST line [line, end) as a malloc'd string; NULL when
 * absent (or out of memory: *oom set). */
static char *field(const char *line, const char *end, const char *key, int *oom) {
    size_t klen = strlen(key);
    const char *p = line;
    while (p < end) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *stop = sp ? sp : end;
        if ((size_t)(stop - p) > klen && !memcmp(p, key, klen) && p[klen] == '=') {
            char *v = strndup(p + klen + 1, (size_t)(stop - p - klen - 1));
            if (!v) *oom = 1;
            return v;
        }
        p = stop + 1;
    }
    return NULL;
}

static long long field_ll(const char *line, const char *end, const char *key, int *oom) {
    char *v = field(line, end, key, oom);
    long long x = v ? strtoll(v, NULL, 10) : -1;
    free(v);
    return x;
}

void ferry_queue_workers_free(ferry_queue_worker *w, size_t n) {
    if (!w) return;
    for (size_t i = 0; i < n; i++) {
        free(w[i].id);
        free(w[i].addr);
        free(w[i].rawname);
        free(w[i].worker_name);
    }
    free(w);
}

int ferry_queue_workers(ferry_queue *q, ferry_queue_worker **out, size_t *n, ferry_error *err) {
    if (out) *out = NULL;
    if (n) *n = 0;
    if (!q || !out || !n)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_workers: NULL argument");
    /* "<prefix>:" + base64(queue name) */
    size_t qlen = strlen(q->keys.queue), plen = strlen(q->keys.prefix);
    size_t cap = plen + 1 + 4 * ((qlen + 2) / 3) + 1;
    char *want = malloc(cap);
    if (!want) return ferry__err(err, FERRY_ENOMEM, "workers: out of memory");
    snprintf(want, cap, "%s:", q->keys.prefix);
    EVP_EncodeBlock((unsigned char *)want + plen + 1, (const unsigned char *)q->keys.queue,
                    (int)qlen);
    size_t wlen = strlen(want);
    redisReply *r = NULL;
    size_t got = 0;
    ferry__queue_lock(q);
    int rc = ferry__queue_exchange(q, client_list_append, NULL, 1, &r, 1, &got, err);
    ferry__queue_unlock(q);
    if (rc) {
        free(want);
        return rc;
    }
    rc = ferry__queue_reply_error(q, r, "CLIENT LIST", err);
    if (rc == 0 && r->type != REDIS_REPLY_STRING)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: CLIENT LIST: unexpected reply", q->shown);
    ferry_queue_worker *list = NULL;
    size_t count = 0, lcap = 0;
    int oom = 0;
    const char *p = rc == 0 ? r->str : NULL, *all_end = rc == 0 ? r->str + r->len : NULL;
    while (rc == 0 && p < all_end) {
        const char *nl = memchr(p, '\n', (size_t)(all_end - p));
        const char *end = nl ? nl : all_end;
        if (end > p && end[-1] == '\r') end--;
        char *name = field(p, end, "name", &oom);
        int match = name && (!strcmp(name, want) ||
                             (!strncmp(name, want, wlen) && !strncmp(name + wlen, ":w:", 3)));
        if (match) {
            if (count == FERRY_QUEUE_WORKERS_MAX) {
                rc = ferry__err(err, FERRY_ETOOBIG, "queue %s: more than %d workers", q->shown,
                                FERRY_QUEUE_WORKERS_MAX);
            } else if (count == lcap) {
                size_t ncap = lcap ? 2 * lcap : 16;
                ferry_queue_worker *grown = realloc(list, ncap * sizeof *grown);
                if (!grown)
                    oom = 1;
                else {
                    list = grown;
                    lcap = ncap;
                }
            }
            if (rc == 0 && !oom) {
                ferry_queue_worker *w = &list[count++];
                memset(w, 0, sizeof *w);
                w->rawname = name;
                name = NULL;
                w->worker_name = w->rawname[wlen] ? strdup(w->rawname + wlen + 3) : NULL;
                if (w->rawname[wlen] && !w->worker_name) oom = 1;
                w->id = field(p, end, "id", &oom);
                w->addr = field(p, end, "addr", &oom);
                w->age_s = field_ll(p, end, "age", &oom);
                w->idle_s = field_ll(p, end, "idle", &oom);
            }
        }
        free(name);
        if (oom && rc == 0) rc = ferry__err(err, FERRY_ENOMEM, "workers: out of memory");
        p = nl ? nl + 1 : all_end;
    }
    freeReplyObject(r);
    free(want);
    if (rc) {
        ferry_queue_workers_free(list, count);
        return rc;
    }
    *out = list;
    *n = count;
    return 0;
}

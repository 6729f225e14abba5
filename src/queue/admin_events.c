/* admin_events.c - reading a queue's events stream (<prefix>:<queue>:events, BullMQ
 * 6.7.0's event log, §10 of the protocol notes) as Node's QueueEvents sees it
 * (ferry_queue_events_read): the newest N entries (XREVRANGE), or the entries after an id
 * (XREAD, optionally BLOCK with a bounded wait), each split into its event name and its
 * other fields. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "util/error.h"
#include "util/printable.h"

struct events_ctx {
    const char *key;
    const char *from_id; /* NULL = newest `count` */
    char count[32];
    char block[32];
    int block_ms;
};

static int events_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    struct events_ctx *c = vctx;
    *n = 1;
    ferry_conn *conn = ferry__queue_conn(q);
    if (!c->from_id)
        return ferry__conn_append_argv(
            conn, 6, (const char *[]){"XREVRANGE", c->key, "+", "-", "COUNT", c->count}, NULL, err);
    /* Room for the server's wait on top of the queue's own command deadline. */
    if (c->block_ms > 0) ferry__conn_set_timeout(conn, q->command_ms + c->block_ms);
    if (c->block_ms > 0)
        return ferry__conn_append_argv(conn, 8,
                                       (const char *[]){"XREAD", "COUNT", c->count, "BLOCK",
                                                        c->block, "STREAMS", c->key, c->from_id},
                                       NULL, err);
    return ferry__conn_append_argv(
        conn, 6, (const char *[]){"XREAD", "COUNT", c->count, "STREAMS", c->key, c->from_id}, NULL,
        err);
}

/* One part of a stream id: 1..20 digits, at most 2^64 - 1 (what Redis parses). */
static int id_part_ok(const char *p, size_t n) {
    if (n == 0 || n > 20) return 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9') return 0;
    return n < 20 || memcmp(p, "18446744073709551615", 20) <= 0;
}

/* "$", "MS" or "MS-SEQ", each part a 64-bit unsigned number, as XREAD takes it. */
static int id_ok(const char *id) {
    size_t len = strlen(id);
    if (len == 0 || len >= FERRY_QUEUE_EVENT_ID_MAX) return 0;
    if (strcmp(id, "$") == 0) return 1;
    const char *dash = strchr(id, '-');
    if (!dash) return id_part_ok(id, len);
    return id_part_ok(id, (size_t)(dash - id)) && id_part_ok(dash + 1, strlen(dash + 1));
}

void ferry_queue_events_free(ferry_queue_event *ev, size_t n) {
    if (!ev) return;
    for (size_t i = 0; i < n; i++) {
        free(ev[i].id);
        free(ev[i].event);
        for (size_t j = 0; j < ev[i].nfields; j++) {
            free(ev[i].names[j]);
            free(ev[i].values[j]);
        }
        free(ev[i].names);
        free(ev[i].values);
    }
    free(ev);
}

static int bulk(const redisReply *r) {
    return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS;
}

/* One stream entry [id, [k, v, ...]] into *ev (zeroed by the caller). */
static int entry_parse(const ferry_queue *q, const redisReply *e, ferry_queue_event *ev,
                       ferry_error *err) {
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !bulk(e->element[0]) ||
        e->element[0]->len >= FERRY_QUEUE_EVENT_ID_MAX ||
        (e->element[1]->type != REDIS_REPLY_ARRAY && e->element[1]->type != REDIS_REPLY_NIL))
        return ferry__err(err, FERRY_EPROTO, "queue %s: events: unexpected stream entry", q->shown);
    const redisReply *kv = e->element[1];
    size_t pairs = kv->type == REDIS_REPLY_ARRAY ? kv->elements / 2 : 0;
    if (kv->type == REDIS_REPLY_ARRAY && kv->elements % 2)
        return ferry__err(err, FERRY_EPROTO, "queue %s: events: odd field list", q->shown);
    if (pairs > FERRY_QUEUE_EVENT_FIELDS_MAX + 1)
        return ferry__err(err, FERRY_EPROTO,
                          "queue %s: events: entry %s has %zu fields, over the limit of %d",
                          q->shown, e->element[0]->str, pairs, FERRY_QUEUE_EVENT_FIELDS_MAX);
    if (!(ev->id = strndup(e->element[0]->str, e->element[0]->len))) goto oom;
    if (pairs && (!(ev->names = calloc(pairs, sizeof *ev->names)) ||
                  !(ev->values = calloc(pairs, sizeof *ev->values))))
        goto oom;
    for (size_t i = 0; i < pairs; i++) {
        const redisReply *k = kv->element[2 * i], *v = kv->element[2 * i + 1];
        if (!bulk(k) || !bulk(v))
            return ferry__err(err, FERRY_EPROTO, "queue %s: events: entry %s: non-string field",
                              q->shown, ev->id);
        if (!ev->event && strcmp(k->str, "event") == 0) {
            if (!(ev->event = strndup(v->str, v->len))) goto oom;
            continue;
        }
        if (ev->nfields >= FERRY_QUEUE_EVENT_FIELDS_MAX)
            return ferry__err(err, FERRY_EPROTO, "queue %s: events: entry %s has over %d fields",
                              q->shown, ev->id, FERRY_QUEUE_EVENT_FIELDS_MAX);
        if (!(ev->names[ev->nfields] = strndup(k->str, k->len))) goto oom;
        if (!(ev->values[ev->nfields] = strndup(v->str, v->len))) {
            free(ev->names[ev->nfields]);
            goto oom;
        }
        ev->nfields++;
    }
    if (!ev->event && !(ev->event = strdup(""))) goto oom;
    return 0;
oom:
    return ferry__err(err, FERRY_ENOMEM, "events: out of memory");
}

/* The entries of a reply (XREVRANGE: the array; XREAD: [[key, entries]] or nil). */
static int entries_of(const ferry_queue *q, const redisReply *r, int is_xread,
                      const redisReply **entries, ferry_error *err) {
    *entries = NULL;
    if (is_xread) {
        if (r->type == REDIS_REPLY_NIL) return 0;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 ||
            r->element[0]->type != REDIS_REPLY_ARRAY || r->element[0]->elements != 2)
            return ferry__err(err, FERRY_EPROTO, "queue %s: XREAD: unexpected reply", q->shown);
        r = r->element[0]->element[1];
    }
    if (r->type != REDIS_REPLY_ARRAY)
        return ferry__err(err, FERRY_EPROTO, "queue %s: events: unexpected reply", q->shown);
    *entries = r;
    return 0;
}

int ferry_queue_events_read(ferry_queue *q, const char *from_id, size_t count, int block_ms,
                            ferry_queue_event **out, size_t *n, char *last_id, ferry_error *err) {
    if (out) *out = NULL;
    if (n) *n = 0;
    if (!q || !out || !n)
        return ferry__err(err, FERRY_EINVAL, "ferry_queue_events_read: NULL argument");
    char shown[FERRY_QUEUE_EVENT_ID_MAX + 16];
    if (from_id && !id_ok(from_id))
        return ferry__err(err, FERRY_EINVAL,
                          "events: bad stream id '%s' (expected <ms>, <ms>-<seq>, 0 or $)",
                          ferryx_printable(from_id, shown, sizeof shown));
    if (count < 1 || count > FERRY_QUEUE_EVENTS_MAX)
        return ferry__err(err, FERRY_EINVAL, "events: count %zu out of range (1..%d)", count,
                          FERRY_QUEUE_EVENTS_MAX);
    if (block_ms < 0 || block_ms > FERRY_QUEUE_EVENTS_BLOCK_MAX)
        return ferry__err(err, FERRY_EINVAL, "events: block %d ms out of range (0..%d)", block_ms,
                          FERRY_QUEUE_EVENTS_BLOCK_MAX);
    /* from_id may be last_id itself (a loop passing it back): copy it before writing */
    char from[FERRY_QUEUE_EVENT_ID_MAX];
    snprintf(from, sizeof from, "%s", from_id ? from_id : "0");
    if (from_id) from_id = from;
    char key[FERRY__QKEY_LEN];
    if (!ferry__key(&q->keys, "events", key, sizeof key))
        return ferry__err(err, FERRY_EINVAL, "events: key too long");
    struct events_ctx c = {.key = key, .from_id = from_id, .block_ms = from_id ? block_ms : 0};
    snprintf(c.count, sizeof c.count, "%zu", count);
    snprintf(c.block, sizeof c.block, "%d", block_ms);
    redisReply *r = NULL;
    size_t got = 0;
    ferry__queue_lock(q);
    int rc = ferry__queue_exchange(q, events_append, &c, 1, &r, 1, &got, err);
    ferry__queue_unlock(q);
    if (rc) return rc;
    rc = ferry__queue_reply_error(q, r, from_id ? "XREAD" : "XREVRANGE", err);
    const redisReply *entries = NULL;
    if (rc == 0) rc = entries_of(q, r, from_id != NULL, &entries, err);
    if (rc == 0 && entries && entries->elements > count)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: events: more entries than asked", q->shown);
    if (rc == 0 && last_id) snprintf(last_id, FERRY_QUEUE_EVENT_ID_MAX, "%s", from);
    if (rc == 0 && entries && entries->elements) {
        size_t m = entries->elements;
        ferry_queue_event *ev = calloc(m, sizeof *ev);
        if (!ev) rc = ferry__err(err, FERRY_ENOMEM, "events: out of memory");
        for (size_t i = 0; rc == 0 && i < m; i++) {
            /* XREVRANGE is newest first: fill from the end so the result is oldest first */
            size_t at = from_id ? i : m - 1 - i;
            rc = entry_parse(q, entries->element[i], &ev[at], err);
        }
        if (rc) {
            ferry_queue_events_free(ev, m);
        } else {
            *out = ev;
            *n = m;
            if (last_id) snprintf(last_id, FERRY_QUEUE_EVENT_ID_MAX, "%s", ev[m - 1].id);
        }
    }
    if (r) freeReplyObject(r);
    return rc;
}

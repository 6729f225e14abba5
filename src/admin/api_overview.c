/* api_overview.c - GET /api/overview: one snapshot of the whole pipeline for the dashboard
 * (outbox backlog, every queue's counts, ages, pause and rate limit, workers and finishes
 * per 10 s bucket, the dead letters not redriven, the inbox markers), and the short
 * history the server keeps of three of its numbers (one point per 5 s at most, the last
 * 60), so a page opened now draws its sparklines at once.
 *
 * Each source stands alone: PostgreSQL down, or no database, gives that part null and its
 * reason ("outboxError", "deadLettersError", "inboxError"); only Redis unreachable fails the
 * whole answer (503). Work is bounded: at most OVERVIEW_QUEUES_MAX queues in detail
 * ("queuesComplete" false past them), and three statements with a database. Redis is read
 * over ONE connection (a cached handle's, so a warm overview opens none): the SCAN of the
 * queue names (one round trip per 1000 keys of the database), then the queues' reads
 * pipelined, QUEUES_PER_TRIP queues per round trip (CMDS_PER_QUEUE commands each: counts,
 * ages, paused, throughput, rate limit), with the one CLIENT LIST of the overview (workers
 * of every queue counted from the client names) in the first. So 100 queues in a small
 * database cost 3 round trips. docs/serve.md "Dashboard" states the cost of a refresh. The
 * stream (stream.c) sends the same JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "admin/api_json.h"
#include "admin/framework.h"
#include "ferry/deadletter.h"
#include "ferry/inbox.h"
#include "queue/keys.h"
#include "queue/queue_module.h"
#include "redis/conn.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/printable.h"

#define OVERVIEW_QUEUES_MAX 200
#define THROUGHPUT_BUCKET_MS 10000
#define THROUGHPUT_BUCKETS 30

/* A library error's text as JSON (printable). */
static json_t *err_text(const char *what, const ferry_error *e) {
    char shown[FERRY_ERROR_MESSAGE_MAX + 64], text[FERRY_ERROR_MESSAGE_MAX + 128];
    snprintf(text, sizeof text, "%s%s", what,
             e->message[0] ? ferryx_printable(e->message, shown, sizeof shown)
                           : ferry_strerror(e->code));
    return ferry__api_str(text);
}

static int redis_down(int code) {
    return code == FERRY_EIO || code == FERRY_ETIMEDOUT || code == FERRY_ECLOSED ||
           code == FERRY_ETLS || code == FERRY_EAUTH;
}

static json_t *int_array(const long long *v, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

typedef struct totals {
    long long ready, active, failed, delayed, workers;
    double oldest_ready_s;
} totals;

/* ---- Redis: every queue over one connection ------------------------------------------- */

/* The overview reads Redis through the connection of one queue handle borrowed from the
 * server's cache under this name (only the handle's connection is used, never its keys),
 * so the connection outlives an overview: a warm overview opens none. A real queue of
 * this name would share the cached handle, which is harmless (handles of a name are
 * interchangeable). */
#define OVERVIEW_CONN_QUEUE "ferry-serve-overview"
#define QUEUES_PER_TRIP 50 /* queues read in one pipelined round trip */
#define CMDS_PER_QUEUE 18  /* commands (and replies) per queue in that round trip */

/* Where a queue's replies are among its CMDS_PER_QUEUE: MULTI, 8 counts, EXEC; queueAges;
 * HEXISTS meta paused; queueThroughput; MULTI, HGET meta max, GET limiter, PTTL limiter,
 * EXEC. */
enum { R_COUNTS = 9, R_AGES = 10, R_PAUSED = 11, R_THROUGHPUT = 12, R_LIMIT = 17 };

/* ferry_queue_counts' commands, in ferry_job_counts order (one MULTI: one snapshot). */
static const struct {
    const char *cmd, *suffix;
} COUNT_CMDS[] = {
    {"LLEN", "wait"},
    {"LLEN", "active"},
    {"ZCARD", "completed"},
    {"ZCARD", "failed"},
    {"ZCARD", "delayed"},
    {"ZCARD", "prioritized"},
    {"ZCARD", "waiting-children"},
    {"LLEN", "paused"},
};
#define NCOUNTS (sizeof COUNT_CMDS / sizeof COUNT_CMDS[0])

typedef struct ov_queue {
    const char *name; /* borrowed from the names list */
    ferry__keys keys;
    long long workers;
} ov_queue;

/* One pipelined round trip: CLIENT LIST first when asked, then qs[0..n)'s commands. */
typedef struct ov_trip {
    const ov_queue *qs;
    size_t n;
    int client_list;
    char now[32]; /* ms, for queueAges */
} ov_trip;

static int append(ferry_conn *c, int argc, const char *const *argv, ferry_error *err) {
    return ferry__conn_append_argv(c, argc, (const char **)argv, NULL, err);
}

/* The commands of one queue (CMDS_PER_QUEUE of them). */
static int append_queue(ferry_conn *c, const ov_queue *oq, const char *now, ferry_error *err) {
    enum { K_META = NCOUNTS, K_LIMITER, K_N };
    char key[K_N][FERRY__QKEY_LEN];
    for (size_t i = 0; i < NCOUNTS; i++)
        if (!ferry__key(&oq->keys, COUNT_CMDS[i].suffix, key[i], sizeof key[i]))
            return ferry__err(err, FERRY_EINVAL, "overview: a queue key is too long");
    if (!ferry__key(&oq->keys, "meta", key[K_META], sizeof key[K_META]) ||
        !ferry__key(&oq->keys, "limiter", key[K_LIMITER], sizeof key[K_LIMITER]))
        return ferry__err(err, FERRY_EINVAL, "overview: a queue key is too long");
    const ferry_script *ages = ferry__script_get("queueAges");
    const ferry_script *tp = ferry__script_get("queueThroughput");
    if (!ages || !tp) return ferry__err(err, FERRY_EINVAL, "overview: a script is not built in");
    char sample[16], bucket_ms[24], buckets[16];
    snprintf(sample, sizeof sample, "%d", FERRY_QUEUE_AGES_SAMPLE);
    snprintf(bucket_ms, sizeof bucket_ms, "%d", THROUGHPUT_BUCKET_MS);
    snprintf(buckets, sizeof buckets, "%d", THROUGHPUT_BUCKETS);
    int rc = append(c, 1, (const char *[]){"MULTI"}, err);
    for (size_t i = 0; !rc && i < NCOUNTS; i++)
        rc = append(c, 2, (const char *[]){COUNT_CMDS[i].cmd, key[i]}, err);
    if (!rc) rc = append(c, 1, (const char *[]){"EXEC"}, err);
    /* queueAges: wait, paused, prioritized, active, delayed; base, now, sample */
    const char *akeys[] = {key[0], key[7], key[5], key[1], key[4]};
    const char *aargs[] = {oq->keys.base, now, sample};
    if (!rc) rc = ferry__conn_append_evalsha(c, ages, 5, akeys, 3, aargs, NULL, err);
    if (!rc) rc = append(c, 3, (const char *[]){"HEXISTS", key[K_META], "paused"}, err);
    const char *tkeys[] = {key[2], key[3]}, *targs[] = {bucket_ms, buckets};
    if (!rc) rc = ferry__conn_append_evalsha(c, tp, 2, tkeys, 2, targs, NULL, err);
    if (!rc) rc = append(c, 1, (const char *[]){"MULTI"}, err);
    if (!rc) rc = append(c, 3, (const char *[]){"HGET", key[K_META], "max"}, err);
    if (!rc) rc = append(c, 2, (const char *[]){"GET", key[K_LIMITER]}, err);
    if (!rc) rc = append(c, 2, (const char *[]){"PTTL", key[K_LIMITER]}, err);
    if (!rc) rc = append(c, 1, (const char *[]){"EXEC"}, err);
    return rc;
}

static int trip_append(ferry_queue *hq, void *ctx, size_t *n, ferry_error *err) {
    const ov_trip *t = ctx;
    ferry_conn *c = ferry__queue_conn(hq);
    *n = (t->client_list ? 1 : 0) + t->n * CMDS_PER_QUEUE;
    int rc = t->client_list ? append(c, 2, (const char *[]){"CLIENT", "LIST"}, err) : 0;
    for (size_t i = 0; !rc && i < t->n; i++)
        rc = append_queue(c, &t->qs[i], t->now, err);
    return rc;
}

static int is_noscript(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && !memcmp(r->str, "NOSCRIPT", 8);
}

static void replies_free(redisReply **rr, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (rr[i]) freeReplyObject(rr[i]);
}

/* Run trip t on hq's connection into rr[0..*n) (the exchange's reconnect, deadline and one
 * retry on a transport failure). After SCRIPT FLUSH (a NOSCRIPT reply) the scripts are
 * loaded and the trip is run once more. */
static int run_trip(ferry_queue *hq, const ov_trip *t, redisReply **rr, size_t cap, size_t *n,
                    ferry_error *err) {
    for (int reloaded = 0;; reloaded = 1) {
        ferry__queue_lock(hq);
        int rc = ferry__queue_exchange(hq, trip_append, (void *)t, 1, rr, cap, n, err);
        int noscript = 0;
        for (size_t i = 0; !rc && !reloaded && i < t->n; i++) {
            size_t b = (t->client_list ? 1 : 0) + i * CMDS_PER_QUEUE;
            noscript |= is_noscript(rr[b + R_AGES]) || is_noscript(rr[b + R_THROUGHPUT]);
        }
        if (noscript) {
            replies_free(rr, *n);
            *n = 0;
            rc = ferry__conn_load_scripts(ferry__queue_conn(hq), err);
        }
        ferry__queue_unlock(hq);
        if (rc || !noscript) return rc;
    }
}

/* A reply that is not what was asked for: FERRY_EREDIS for an error reply, else EPROTO. */
static int bad_reply(const ov_queue *oq, const char *what, const redisReply *r, ferry_error *err) {
    char shown[128];
    ferryx_printable(oq->name, shown, sizeof shown);
    if (r && r->type == REDIS_REPLY_ERROR)
        return ferry__err(err, FERRY_EREDIS, "queue %s: %s: %s", shown, what, r->str);
    return ferry__err(err, FERRY_EPROTO, "queue %s: %s: unexpected reply", shown, what);
}

static int is_int(const redisReply *r) {
    return r && r->type == REDIS_REPLY_INTEGER;
}

static int parse_counts(const ov_queue *oq, const redisReply *x, ferry_job_counts *c,
                        ferry_error *err) {
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != NCOUNTS)
        return bad_reply(oq, "counts", x, err);
    long long v[NCOUNTS];
    for (size_t i = 0; i < NCOUNTS; i++) {
        if (!is_int(x->element[i])) return bad_reply(oq, "counts", x->element[i], err);
        v[i] = x->element[i]->integer;
    }
    *c = (ferry_job_counts){.waiting = v[0],
                            .active = v[1],
                            .completed = v[2],
                            .failed = v[3],
                            .delayed = v[4],
                            .prioritized = v[5],
                            .waiting_children = v[6],
                            .paused = v[7]};
    return 0;
}

/* Seconds from ms to now_ms, never negative (writers' clocks may be ahead of ours). */
static double age_s(long long now_ms, long long ms) {
    return ms < now_ms ? (double)(now_ms - ms) / 1000.0 : 0.0;
}

static int parse_ages(const ov_queue *oq, const redisReply *x, long long now, ferry_job_ages *a,
                      ferry_error *err) {
    memset(a, 0, sizeof *a);
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 4)
        return bad_reply(oq, "queueAges", x, err);
    for (size_t i = 0; i < 4; i++)
        if (!is_int(x->element[i])) return bad_reply(oq, "queueAges", x->element[i], err);
    a->ready_found = x->element[0]->integer != 0;
    a->active_found = x->element[2]->integer != 0;
    if (a->ready_found) a->oldest_ready_s = age_s(now, x->element[1]->integer);
    if (a->active_found) a->oldest_active_s = age_s(now, x->element[3]->integer);
    return 0;
}

static int parse_buckets(const ov_queue *oq, const redisReply *x, long long *out,
                         ferry_error *err) {
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != THROUGHPUT_BUCKETS)
        return bad_reply(oq, "queueThroughput", x, err);
    for (size_t i = 0; i < THROUGHPUT_BUCKETS; i++) {
        if (!is_int(x->element[i]) || x->element[i]->integer < 0)
            return bad_reply(oq, "queueThroughput", x->element[i], err);
        out[i] = x->element[i]->integer;
    }
    return 0;
}

static int parse_throughput(const ov_queue *oq, const redisReply *x, long long *done,
                            long long *failed, ferry_error *err) {
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 3 || !is_int(x->element[0]))
        return bad_reply(oq, "queueThroughput", x, err);
    int rc = parse_buckets(oq, x->element[1], done, err);
    return rc ? rc : parse_buckets(oq, x->element[2], failed, err);
}

static int parse_limit(const ov_queue *oq, const redisReply *x, long long *ttl, ferry_error *err) {
    if (!x || x->type != REDIS_REPLY_ARRAY || x->elements != 3)
        return bad_reply(oq, "rate limit ttl", x, err);
    for (size_t i = 0; i < 3; i++)
        if (x->element[i]->type == REDIS_REPLY_ERROR)
            return bad_reply(oq, "rate limit ttl", x->element[i], err);
    if (!is_int(x->element[2])) return bad_reply(oq, "rate limit ttl", x->element[2], err);
    *ttl = ferry__queue_limit_ttl_of(x->element[0], x->element[1], x->element[2]->integer);
    return 0;
}

/* The value of `key` in one CLIENT LIST line [p, end), as a pointer and length (0 absent). */
static const char *client_field(const char *p, const char *end, const char *key, size_t *len) {
    size_t klen = strlen(key);
    while (p < end) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *stop = sp ? sp : end;
        if ((size_t)(stop - p) > klen && !memcmp(p, key, klen) && p[klen] == '=') {
            *len = (size_t)(stop - p - klen - 1);
            return p + klen + 1;
        }
        p = stop + 1;
    }
    *len = 0;
    return NULL;
}

/* Workers per queue from one CLIENT LIST: a worker's connection is named
 * "<prefix>:<base64(queue)>" or "<prefix>:<base64(queue)>:w:<worker name>" (Node's and
 * ferry's; src/queue/admin_workers.c), and base64 has no ':'. Returns 0, or FERRY_ENOMEM. */
static int count_workers(const char *prefix, const redisReply *list, ov_queue *qs, size_t n,
                         ferry_error *err) {
    size_t plen = strlen(prefix);
    char **b64 = calloc(n ? n : 1, sizeof *b64);
    if (!b64) return ferry__err(err, FERRY_ENOMEM, "overview: out of memory");
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        size_t qlen = strlen(qs[i].keys.queue);
        if (!(b64[i] = malloc(4 * ((qlen + 2) / 3) + 1)))
            rc = ferry__err(err, FERRY_ENOMEM, "overview: out of memory");
        else
            EVP_EncodeBlock((unsigned char *)b64[i], (const unsigned char *)qs[i].keys.queue,
                            (int)qlen);
        qs[i].workers = 0;
    }
    const char *p = list->str, *all_end = list->str + list->len;
    while (!rc && p < all_end) {
        const char *nl = memchr(p, '\n', (size_t)(all_end - p));
        const char *end = nl ? nl : all_end;
        if (end > p && end[-1] == '\r') end--;
        size_t len = 0;
        const char *name = client_field(p, end, "name", &len);
        p = nl ? nl + 1 : all_end;
        if (!name || len <= plen + 1 || memcmp(name, prefix, plen) || name[plen] != ':') continue;
        const char *q = name + plen + 1, *qend = name + len;
        const char *colon = memchr(q, ':', (size_t)(qend - q));
        if (colon && ((size_t)(qend - colon) < 3 || memcmp(colon, ":w:", 3))) continue;
        size_t qn = (size_t)((colon ? colon : qend) - q);
        for (size_t i = 0; i < n; i++)
            if (strlen(b64[i]) == qn && !memcmp(b64[i], q, qn)) {
                qs[i].workers++;
                break;
            }
    }
    for (size_t i = 0; i < n; i++)
        free(b64[i]);
    free(b64);
    return rc;
}

/* One queue's JSON from its replies rr[0..CMDS_PER_QUEUE), added into t; 0, or the error
 * that fails the overview (counts, ages or paused unreadable). workers < 0: unknown, with
 * its reason in we. */
static int queue_json(const ov_queue *oq, redisReply **rr, long long now, const ferry_error *we,
                      totals *t, json_t **out, ferry_error *err) {
    ferry_job_counts c = {0};
    ferry_job_ages a = {0};
    int rc = parse_counts(oq, rr[R_COUNTS], &c, err);
    if (!rc) rc = parse_ages(oq, rr[R_AGES], now, &a, err);
    if (!rc && !is_int(rr[R_PAUSED])) rc = bad_reply(oq, "HEXISTS meta paused", rr[R_PAUSED], err);
    if (rc) return rc;
    int paused = rr[R_PAUSED]->integer != 0;
    /* the rest is shown as null with its reason */
    ferry_error te = {0}, le = {0};
    long long ttl = 0, done[THROUGHPUT_BUCKETS] = {0}, failed[THROUGHPUT_BUCKETS] = {0};
    int trc = parse_throughput(oq, rr[R_THROUGHPUT], done, failed, &te);
    int lrc = parse_limit(oq, rr[R_LIMIT], &ttl, &le);
    json_t *o = json_object();
    json_object_set_new(o, "name", ferry__api_str(oq->name));
    json_t *counts = json_object();
    json_object_set_new(counts, "wait", json_integer(c.waiting));
    json_object_set_new(counts, "active", json_integer(c.active));
    json_object_set_new(counts, "delayed", json_integer(c.delayed));
    json_object_set_new(counts, "prioritized", json_integer(c.prioritized));
    json_object_set_new(counts, "failed", json_integer(c.failed));
    json_object_set_new(counts, "completed", json_integer(c.completed));
    json_object_set_new(counts, "paused", json_integer(c.paused));
    json_object_set_new(counts, "waiting-children", json_integer(c.waiting_children));
    json_object_set_new(o, "counts", counts);
    json_object_set_new(o, "oldestReadyAgeSeconds",
                        json_real(a.ready_found ? a.oldest_ready_s : 0));
    json_object_set_new(o, "oldestActiveAgeSeconds",
                        json_real(a.active_found ? a.oldest_active_s : 0));
    json_object_set_new(o, "paused", json_boolean(paused));
    if (lrc) {
        json_object_set_new(o, "rateLimitedMs", json_null());
        json_object_set_new(o, "rateLimitError", err_text("", &le));
    } else {
        json_object_set_new(o, "rateLimitedMs", json_integer(ttl > 0 ? ttl : 0));
    }
    if (oq->workers >= 0) {
        json_object_set_new(o, "workers", json_integer((json_int_t)oq->workers));
        t->workers += oq->workers;
    } else {
        json_object_set_new(o, "workers", json_null()); /* CLIENT LIST refused (hosted Redis) */
        json_object_set_new(o, "workersError", err_text("", we));
    }
    if (trc) {
        json_object_set_new(o, "throughput", json_null());
        json_object_set_new(o, "throughputError", err_text("", &te));
    } else {
        json_t *tp = json_object();
        json_object_set_new(tp, "bucketSeconds", json_integer(THROUGHPUT_BUCKET_MS / 1000));
        json_object_set_new(tp, "completed", int_array(done, THROUGHPUT_BUCKETS));
        json_object_set_new(tp, "failed", int_array(failed, THROUGHPUT_BUCKETS));
        json_object_set_new(o, "throughput", tp);
    }
    t->ready += c.waiting + c.prioritized + c.paused;
    t->active += c.active;
    t->failed += c.failed;
    t->delayed += c.delayed;
    if (a.ready_found && a.oldest_ready_s > t->oldest_ready_s) t->oldest_ready_s = a.oldest_ready_s;
    *out = o;
    return 0;
}

/* The queues' part of the overview into list, on hq's connection: ceil(n / QUEUES_PER_TRIP)
 * pipelined round trips, CLIENT LIST in the first. Returns 0, or the Redis error. */
static int read_queues(ferry_queue *hq, const char *prefix, ov_queue *qs, size_t n, totals *t,
                       json_t *list, ferry_error *err) {
    size_t cap = 1 + QUEUES_PER_TRIP * CMDS_PER_QUEUE;
    redisReply **rr = calloc(cap, sizeof *rr);
    if (!rr) return ferry__err(err, FERRY_ENOMEM, "overview: out of memory");
    ferry_error we = {0};
    int rc = 0;
    for (size_t off = 0; !rc && off < n; off += QUEUES_PER_TRIP) {
        ov_trip trip = {.qs = qs + off,
                        .n = n - off < QUEUES_PER_TRIP ? n - off : QUEUES_PER_TRIP,
                        .client_list = off == 0};
        long long now = (long long)ferry__now_ms();
        snprintf(trip.now, sizeof trip.now, "%lld", now);
        size_t got = 0;
        rc = run_trip(hq, &trip, rr, cap, &got, err);
        if (rc) break;
        redisReply **q0 = rr;
        if (trip.client_list) {
            const redisReply *cl = rr[0];
            int wrc = 0;
            if (cl->type == REDIS_REPLY_STRING || cl->type == REDIS_REPLY_STATUS)
                wrc = count_workers(prefix, cl, qs, n, &we);
            else
                wrc = cl->type == REDIS_REPLY_ERROR
                          ? ferry__err(&we, FERRY_EREDIS, "CLIENT LIST: %s", cl->str)
                          : ferry__err(&we, FERRY_EPROTO, "CLIENT LIST: unexpected reply");
            if (wrc)
                for (size_t i = 0; i < n; i++)
                    qs[i].workers = -1;
            q0 = rr + 1;
        }
        for (size_t i = 0; !rc && i < trip.n; i++) {
            json_t *one = NULL;
            rc = queue_json(&trip.qs[i], q0 + i * CMDS_PER_QUEUE, now, &we, t, &one, err);
            if (!rc) json_array_append_new(list, one);
        }
        replies_free(rr, got);
        memset(rr, 0, cap * sizeof *rr);
    }
    free(rr);
    return rc;
}

/* "queues", "queuesComplete" and "totals" into o. Returns 0, or the Redis error. */
static int add_queues(ferry__admin_req *r, json_t *o, totals *t, ferry_error *err) {
    const char *prefix = r->cfg->prefix ? r->cfg->prefix : FERRY_DEFAULT_PREFIX;
    ferry_queue *hq = NULL;
    int rc = ferry__admin_queue(r, OVERVIEW_CONN_QUEUE, &hq, err);
    if (rc) return rc;
    char **names = NULL;
    size_t n = 0;
    int complete = 0;
    rc = ferry__queue_names_on(hq, prefix, OVERVIEW_QUEUES_MAX + 1, &names, &n, &complete, err);
    if (rc) {
        ferry__admin_queue_release(r, hq);
        return rc;
    }
    if (n > OVERVIEW_QUEUES_MAX) complete = 0;
    ov_queue *qs = calloc(n ? n : 1, sizeof *qs);
    json_t *list = json_array();
    size_t nq = 0;
    if (!qs || !list) rc = ferry__err(err, FERRY_ENOMEM, "overview: out of memory");
    for (size_t i = 0; !rc && i < n && i < OVERVIEW_QUEUES_MAX; i++) {
        ferry_error e = {0};
        /* a meta key whose name no queue API takes is left out */
        if (ferry__keys_init(&qs[nq].keys, prefix, names[i], &e)) continue;
        qs[nq++].name = names[i];
    }
    if (!rc) rc = read_queues(hq, prefix, qs, nq, t, list, err);
    ferry__admin_queue_release(r, hq);
    free(qs);
    ferry_queue_job_ids_free(names, n);
    if (rc) {
        json_decref(list);
        return rc;
    }
    json_object_set_new(o, "queues", list);
    json_object_set_new(o, "queuesComplete", json_boolean(complete));
    json_t *tj = json_object();
    json_object_set_new(tj, "ready", json_integer(t->ready));
    json_object_set_new(tj, "active", json_integer(t->active));
    json_object_set_new(tj, "failed", json_integer(t->failed));
    json_object_set_new(tj, "delayed", json_integer(t->delayed));
    json_object_set_new(tj, "workers", json_integer(t->workers));
    json_object_set_new(tj, "oldestReadyAgeSeconds", json_real(t->oldest_ready_s));
    json_object_set_new(o, "totals", tj);
    return 0;
}

/* The PostgreSQL parts: outbox, dead letters, inbox (each null + its error on failure). */
static void add_database(ferry__admin_req *r, json_t *o, long long *outbox_n, long long *dl_n) {
    *outbox_n = *dl_n = -1;
    if (!r->cfg->has_database) {
        const char *why = "no database configured (ferry serve --database)";
        json_object_set_new(o, "outbox", json_null());
        json_object_set_new(o, "outboxError", json_string(why));
        json_object_set_new(o, "deadLetters", json_null());
        json_object_set_new(o, "deadLettersError", json_string(why));
        json_object_set_new(o, "inbox", json_null());
        json_object_set_new(o, "inboxError", json_string(why));
        return;
    }
    ferry_error e = {0};
    PGconn *conn = NULL;
    if (ferry__admin_pg(r, &conn, &e)) {
        json_t *why = err_text("database: ", &e);
        json_object_set_new(o, "outbox", json_null());
        json_object_set_new(o, "outboxError", json_incref(why));
        json_object_set_new(o, "deadLetters", json_null());
        json_object_set_new(o, "deadLettersError", json_incref(why));
        json_object_set_new(o, "inbox", json_null());
        json_object_set_new(o, "inboxError", why);
        return;
    }
    int broken = 0;

    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = r->cfg->schema;
    ferry_outbox_status *st = NULL;
    if (ferry_outbox_status_get(conn, &oo, r->cfg->routes, &st, &e) == 0) {
        json_t *ob = json_object();
        json_object_set_new(ob, "unpublished", json_integer(st->unpublished));
        json_object_set_new(ob, "oldestAgeSeconds",
                            json_real(st->unpublished ? st->oldest_age_s : 0));
        json_object_set_new(ob, "withErrors", json_integer(st->with_errors));
        json_object_set_new(ob, "quarantined", json_integer(st->quarantined));
        json_object_set_new(ob, "unroutedRows", json_integer(st->unknown_rows));
        json_object_set_new(o, "outbox", ob);
        json_object_set_new(o, "outboxError", json_null());
        *outbox_n = st->unpublished;
        ferry_outbox_status_free(st);
    } else {
        json_object_set_new(o, "outbox", json_null());
        json_object_set_new(o, "outboxError", err_text("outbox: ", &e));
    }
    if (PQstatus(conn) != CONNECTION_OK) broken = 1;

    ferry_dlq_options dlo;
    ferry_dlq_options_init(&dlo);
    dlo.schema = r->cfg->schema;
    ferry_dlq_filter f = {0};
    f.prefix = r->cfg->prefix ? r->cfg->prefix : FERRY_DEFAULT_PREFIX;
    f.redriven_fewer_than = 1; /* never redriven */
    f.limit = 1;               /* the oldest failure, and the total */
    ferry_dlq_list *l = NULL;
    if (!broken && ferry_dlq_list_get(conn, &dlo, &f, &l, &e) == 0) {
        double age = 0;
        if (l->n) {
            long long now = (long long)ferry__now_ms(), at = l->entries[0].failed_at_ms;
            age = at < now ? (double)(now - at) / 1000.0 : 0;
        }
        json_object_set_new(
            o, "deadLetters",
            json_pack("{s:I,s:f}", "notRedriven", (json_int_t)l->total, "oldestAgeSeconds", age));
        json_object_set_new(o, "deadLettersError", json_null());
        *dl_n = l->total;
        ferry_dlq_list_free(l);
    } else {
        json_object_set_new(o, "deadLetters", json_null());
        json_object_set_new(o, "deadLettersError", err_text("dead letters: ", &e));
    }
    if (PQstatus(conn) != CONNECTION_OK) broken = 1;

    ferry_inbox_options io;
    ferry_inbox_options_init(&io);
    io.schema = r->cfg->schema;
    ferry_inbox_status *is = NULL;
    if (!broken && ferry_inbox_status_get(conn, &io, &is, &e) == 0) {
        json_t *cons = json_array();
        for (size_t i = 0; i < is->n && i < FERRY__ADMIN_LIST_MAX; i++)
            json_array_append_new(cons, json_pack("{s:o,s:I}", "consumer",
                                                  ferry__api_str(is->consumers[i].consumer),
                                                  "markers", (json_int_t)is->consumers[i].rows));
        json_object_set_new(
            o, "inbox",
            json_pack("{s:I,s:o}", "markers", (json_int_t)is->total_rows, "consumers", cons));
        json_object_set_new(o, "inboxError", json_null());
        ferry_inbox_status_free(is);
    } else {
        json_object_set_new(o, "inbox", json_null());
        json_object_set_new(o, "inboxError", err_text("inbox: ", &e));
    }
    if (PQstatus(conn) != CONNECTION_OK) broken = 1;
    ferry__admin_pg_release(r, conn, broken);
}

/* Add a point when the newest is old enough, and the ring as JSON into o. */
static void add_history(ferry_admin_server *s, json_t *o, const admin_history_point *now) {
    json_t *ob = json_array(), *dl = json_array(), *rd = json_array();
    int64_t t = ferry__mono_ms();
    pthread_mutex_lock(&s->history_mu);
    if (!s->history_n || t - s->history_last_ms >= ADMIN_HISTORY_INTERVAL_MS) {
        s->history[s->history_next] = *now;
        s->history_next = (s->history_next + 1) % ADMIN_HISTORY_MAX;
        if (s->history_n < ADMIN_HISTORY_MAX) s->history_n++;
        s->history_last_ms = t;
    }
    size_t first = (s->history_next + ADMIN_HISTORY_MAX - s->history_n) % ADMIN_HISTORY_MAX;
    for (size_t i = 0; i < s->history_n; i++) {
        const admin_history_point *p = &s->history[(first + i) % ADMIN_HISTORY_MAX];
        json_array_append_new(ob, p->outbox_unpublished < 0 ? json_null()
                                                            : json_integer(p->outbox_unpublished));
        json_array_append_new(dl,
                              p->dead_letters < 0 ? json_null() : json_integer(p->dead_letters));
        json_array_append_new(rd, p->ready < 0 ? json_null() : json_integer(p->ready));
    }
    pthread_mutex_unlock(&s->history_mu);
    json_object_set_new(o, "history",
                        json_pack("{s:i,s:o,s:o,s:o}", "intervalSeconds",
                                  ADMIN_HISTORY_INTERVAL_MS / 1000, "outboxUnpublished", ob,
                                  "deadLetters", dl, "ready", rd));
}

json_t *ferry__admin_overview(ferry__admin_req *r, int *status, ferry_error *err) {
    admin_request *ar = r->server;
    json_t *o = json_object();
    if (!o) {
        *status = 500;
        ferry__err(err, FERRY_ENOMEM, "overview: out of memory");
        return NULL;
    }
    json_object_set_new(o, "at", json_integer((json_int_t)ferry__now_ms()));
    totals t = {0};
    int rc = add_queues(r, o, &t, err);
    if (rc) {
        json_decref(o);
        *status = redis_down(rc) ? 503 : 500;
        return NULL;
    }
    admin_history_point p = {-1, -1, t.ready};
    add_database(r, o, &p.outbox_unpublished, &p.dead_letters);
    add_history(ar->srv, o, &p);
    return o;
}

/* GET /api/overview: takes no query parameter (a typo is refused, not ignored). */
static int overview(ferry__admin_req *r, ferry__admin_resp *out) {
    admin_request *ar = r->server;
    if (ar->nquery) {
        char shown[96];
        return ferry__admin_fail(out, 400,
                                 "unknown query parameter \"%s\" (GET /api/overview takes none)",
                                 ferry__api_shown(ar->query_keys[0], shown, sizeof shown));
    }
    ferry_error err = {0};
    int status = 500;
    json_t *o = ferry__admin_overview(r, &status, &err);
    if (!o) {
        char shown[FERRY_ERROR_MESSAGE_MAX + 64];
        return ferry__admin_fail(out, status, "redis: %s",
                                 ferryx_printable(err.message, shown, sizeof shown));
    }
    out->json = o;
    return 0;
}

const ferry__admin_route ferry__admin_routes_overview[] = {
    {"GET", "/api/overview", FERRY__ADMIN_SCOPE_READ, overview},
    {NULL, NULL, 0, NULL},
};

/* batch.c - the worker's script calls on the command connection, built so one round trip
 * carries as much as possible: retries (moveToDelayed / retryJob / throttleJob, one EVALSHA
 * each) and
 * all completions/final failures (moveToFinished, up to FINISH_CHUNK jobs per EVALSHA) are
 * pipelined, and the last moveToFinished also fetches the next jobs. Only the dispatcher
 * thread calls these (it owns the connection). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/error.h"
#include "util/numtext.h"
#include "worker/worker_internal.h"

/* Jobs finished per moveToFinished call: keeps one script's run time (and so Redis'
 * latency for everybody else) to a few milliseconds even with 1024 handler threads. */
#define FINISH_CHUNK 128

/* ---- argument vectors ------------------------------------------------------------- */

/* Borrowed strings plus numbers formatted into an arena; arena entries are stored as
 * offsets and resolved by args_resolve(), because the arena may move while growing. */
typedef struct args {
    const char **v;
    size_t *len;
    size_t *off; /* SIZE_MAX = borrowed, else offset into arena */
    size_t n, cap;
    char *arena;
    size_t used, acap;
    int oom;
} args;

static void args_reset(args *a) {
    a->n = 0;
    a->used = 0;
}

static void args_free(args *a) {
    free(a->v);
    free(a->len);
    free(a->off);
    free(a->arena);
    memset(a, 0, sizeof *a);
}

static int args_grow(args *a) {
    if (a->n < a->cap) return 0;
    size_t cap = a->cap ? a->cap * 2 : 64;
    const char **v = realloc(a->v, cap * sizeof *v);
    if (v) a->v = v;
    size_t *len = realloc(a->len, cap * sizeof *len);
    if (len) a->len = len;
    size_t *off = realloc(a->off, cap * sizeof *off);
    if (off) a->off = off;
    if (!v || !len || !off) {
        a->oom = 1;
        return -1;
    }
    a->cap = cap;
    return 0;
}

static void add(args *a, const char *s, size_t n) {
    if (args_grow(a)) return;
    a->v[a->n] = s;
    a->len[a->n] = n;
    a->off[a->n] = SIZE_MAX;
    a->n++;
}

static void addz(args *a, const char *s) {
    add(a, s ? s : "", s ? strlen(s) : 0);
}

/* Decimal text of x into buf (at least 21 bytes); returns its length. snprintf costs
 * more than the rest of a job's argument building. */
static size_t fmt_ll(char *buf, long long x) {
    char tmp[24];
    size_t n = 0;
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t len = 0;
    if (x < 0) buf[len++] = '-';
    while (n)
        buf[len++] = tmp[--n];
    buf[len] = 0;
    return len;
}

/* Room for `need` more bytes of number text in the arena; NULL on out-of-memory. */
static char *arena_room(args *a, size_t need) {
    if (args_grow(a)) return NULL;
    if (a->acap - a->used < need) {
        size_t cap = a->acap ? a->acap * 2 : 1024;
        char *na = realloc(a->arena, cap);
        if (!na) {
            a->oom = 1;
            return NULL;
        }
        a->arena = na;
        a->acap = cap;
    }
    return a->arena + a->used;
}

/* The text just written at arena_room() becomes the next argument. */
static void arena_push(args *a, size_t len) {
    a->v[a->n] = NULL;
    a->len[a->n] = len;
    a->off[a->n] = a->used;
    a->used += len + 1;
    a->n++;
}

static void addll(args *a, long long x) {
    char *p = arena_room(a, 24);
    if (p) arena_push(a, fmt_ll(p, x));
}

/* A double as "%.17g" with a '.' whatever the locale (reads back to the same double in
 * Lua's tonumber). */
static void addreal(args *a, double x) {
    char *p = arena_room(a, 32);
    if (p) arena_push(a, (size_t)ferryx_fmt_g(p, 32, 17, x));
}

static int args_resolve(args *a, ferry_error *err) {
    if (a->oom) return ferry__err(err, FERRY_ENOMEM, "worker: out of memory building a call");
    for (size_t i = 0; i < a->n; i++)
        if (a->off[i] != SIZE_MAX) a->v[i] = a->arena + a->off[i];
    return 0;
}

/* ---- the calls ---------------------------------------------------------------------- */

typedef enum { ITEM_RETRY, ITEM_FINISH, ITEM_FETCH } item_kind;

typedef struct item {
    item_kind kind;
    size_t first, count; /* ITEM_RETRY: jobs[first]; ITEM_FINISH: fin[first..first+count) */
    int fetch_n;         /* jobs to fetch (ITEM_FINISH last chunk, ITEM_FETCH) */
} item;

typedef struct call_ctx {
    ferry__lane *lane;
    ferry_job **jobs;
    size_t *fin;     /* indexes of COMPLETE/FAIL jobs */
    char *trim;      /* per fin entry */
    const char *now; /* wall ms as text */
    unsigned long long tok_start;
} call_ctx;

static void add_fetch_args(args *a, const call_ctx *c, int n) {
    ferry__lane *lane = c->lane;
    add(a, lane->keys.base, lane->keys.base_len);
    addz(a, c->now);
    addll(a, n);
    addz(a, lane->token_prefix);
    addll(a, (long long)c->tok_start);
    addll(a, lane->lock_duration_ms);
    addz(a, lane->name);
    if (lane->limiter_max > 0) {
        addll(a, lane->limiter_max);
        addll(a, lane->limiter_duration_ms);
    } else {
        addz(a, ""); /* no worker limiter (a queue meta max is still honoured) */
        addz(a, "");
    }
    addz(a, lane->pop_many ? "1" : "0");
}

/* moveToDelayed: a retry after a backoff, or a retry-later (no attempt spent). */
static const ferry_script *build_delay(const call_ctx *c, const ferry_job *j, args *a,
                                       const char **keys, int *nkeys) {
    ferry__lane *lane = c->lane;
    const char *k[] = {lane->key.marker, lane->key.active, lane->key.delayed,
                       lane->key.events, lane->key.meta,   lane->key.stalled};
    memcpy(keys, k, sizeof k);
    *nkeys = 6;
    add(a, lane->keys.base, lane->keys.base_len);
    addz(a, c->now);
    addz(a, j->id);
    addz(a, j->token);
    addll(a, j->delay_ms);
    /* retry-later: BullMQ job.moveToDelayed + DelayedError, no attempt spent */
    addz(a, j->kind == FERRY__FIN_RETRY_LATER ? "1" : "0");
    if (j->kind == FERRY__FIN_RETRY_DELAY || j->value) {
        addz(a, "failedReason");
        addz(a, j->value);
    }
    if (j->kind == FERRY__FIN_RETRY_DELAY && j->stacktrace) {
        addz(a, "stacktrace");
        addz(a, j->stacktrace);
    }
    return lane->script.delay;
}

/* throttleJob: the queue limiter, the job back to the front of wait. */
static const ferry_script *build_throttle(const call_ctx *c, const ferry_job *j, args *a,
                                          const char **keys, int *nkeys) {
    ferry__lane *lane = c->lane;
    const char *k[] = {lane->key.active, lane->key.wait,    lane->key.stalled,
                       lane->key.meta,   lane->key.limiter, lane->key.prioritized,
                       lane->key.marker, lane->key.events};
    memcpy(keys, k, sizeof k);
    *nkeys = 8;
    add(a, lane->keys.base, lane->keys.base_len);
    addz(a, j->id);
    addz(a, j->token);
    addll(a, j->delay_ms > 0 ? j->delay_ms : 1);
    if (j->value) {
        addz(a, "failedReason");
        addz(a, j->value);
    }
    return lane->script.throttle;
}

/* retryJob: a retry at once. */
static const ferry_script *build_retry_now(const call_ctx *c, const ferry_job *j, args *a,
                                           const char **keys, int *nkeys) {
    ferry__lane *lane = c->lane;
    const char *k[] = {lane->key.active, lane->key.wait,    lane->key.meta,
                       lane->key.events, lane->key.delayed, lane->key.prioritized,
                       lane->key.pc,     lane->key.marker,  lane->key.stalled};
    memcpy(keys, k, sizeof k);
    *nkeys = 9;
    add(a, lane->keys.base, lane->keys.base_len);
    addz(a, c->now);
    addz(a, j->lifo ? "RPUSH" : "LPUSH");
    addz(a, j->id);
    addz(a, j->token);
    addz(a, "failedReason");
    addz(a, j->value);
    if (j->stacktrace) {
        addz(a, "stacktrace");
        addz(a, j->stacktrace);
    }
    return lane->script.retry;
}

/* moveToActive (ITEM_FETCH) or moveToFinished for a chunk of finishes (ITEM_FINISH). */
static const ferry_script *build_finish_or_fetch(const call_ctx *c, const item *it, args *a,
                                                 const char **keys, int *nkeys) {
    ferry__lane *lane = c->lane;
    const char *k[] = {lane->key.wait,
                       lane->key.active,
                       lane->key.prioritized,
                       lane->key.events,
                       lane->key.limiter,
                       lane->key.delayed,
                       lane->key.meta,
                       lane->key.pc,
                       lane->key.marker,
                       lane->key.stalled,
                       lane->key.completed,
                       lane->key.failed,
                       lane->key.metrics_completed,
                       lane->key.metrics_failed};
    if (it->kind == ITEM_FETCH) {
        memcpy(keys, k, 9 * sizeof *k);
        *nkeys = 9;
        add_fetch_args(a, c, it->fetch_n);
        return lane->script.fetch;
    }
    /* the metrics keys and maxDataPoints only when asked: off costs nothing */
    *nkeys = lane->bullmq_metrics_max_points > 0 ? 14 : 12;
    memcpy(keys, k, (size_t)*nkeys * sizeof *k);
    add_fetch_args(a, c, it->fetch_n);
    addll(a, (long long)it->count);
    for (size_t i = it->first; i < it->first + it->count; i++) {
        ferry_job *j = c->jobs[c->fin[i]];
        addz(a, j->id);
        addz(a, j->token);
        addz(a, j->kind == FERRY__FIN_COMPLETE ? "completed" : "failed");
        addz(a, j->value);
        addz(a, j->kind == FERRY__FIN_FAIL && j->stacktrace ? j->stacktrace : "");
        const ferry__keep_jobs *kp = &j->keep;
        addll(a, kp->set ? kp->count : -1);
        if (kp->set && kp->age_set)
            addreal(a, kp->age_s);
        else
            addz(a, "");
        addll(a, kp->set && kp->limit > 0 ? kp->limit : 1000);
        addll(a, j->attempts);
        addz(a, c->trim[i] ? "1" : "0");
        addz(a, j->deid);
    }
    if (lane->bullmq_metrics_max_points > 0) addll(a, lane->bullmq_metrics_max_points);
    return lane->script.finish;
}

/* The script, keys and arguments of one item (into a, reset first). */
static const ferry_script *build_item(const call_ctx *c, const item *it, args *a, const char **keys,
                                      int *nkeys) {
    args_reset(a);
    if (it->kind != ITEM_RETRY) return build_finish_or_fetch(c, it, a, keys, nkeys);
    const ferry_job *j = c->jobs[it->first];
    if (j->kind == FERRY__FIN_RETRY_DELAY || j->kind == FERRY__FIN_RETRY_LATER)
        return build_delay(c, j, a, keys, nkeys);
    if (j->kind == FERRY__FIN_THROTTLE) return build_throttle(c, j, a, keys, nkeys);
    return build_retry_now(c, j, a, keys, nkeys);
}

static int keep_equal(const ferry__keep_jobs *x, const ferry__keep_jobs *y) {
    return x->set == y->set && x->count == y->count && x->age_set == y->age_set &&
           x->age_s == y->age_s && x->limit == y->limit;
}

static int is_noscript(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && !memcmp(r->str, "NOSCRIPT", 8);
}

static void note_script_error(ferry_error *first, int *have, const char *what,
                              const redisReply *r) {
    if (*have) return;
    *have = 1;
    ferry__err(first, FERRY_EREDIS, "worker: %s script failed: %.*s", what,
               r && r->str ? (int)(r->len > 300 ? 300 : r->len) : 0, r && r->str ? r->str : "");
}

/* Jobs fetched by a reply's jobs array {id, hash, id, hash, ...}. */
static void take_fetched(const call_ctx *c, const redisReply *arr, ferry__batch_result *res,
                         ferry_error *first, int *have_err) {
    if (!arr || arr->type != REDIS_REPLY_ARRAY) return;
    for (size_t i = 0; i + 1 < arr->elements; i += 2) {
        char token[96]; /* prefix (< 48) + counter */
        size_t plen = strlen(c->lane->token_prefix);
        memcpy(token, c->lane->token_prefix, plen);
        fmt_ll(token + plen, (long long)(c->tok_start + i / 2));
        ferry_job *j = ferry__job_from_reply(c->lane, arr->element[i], arr->element[i + 1], token);
        if (!j) {
            /* its lock expires and the stalled checker gives it to somebody */
            if (!*have_err) {
                *have_err = 1;
                ferry__err(first, FERRY_ENOMEM,
                           "worker: could not take fetched job (out of memory "
                           "or malformed reply); it will be recovered as stalled");
            }
            continue;
        }
        if (res->fetched_tail)
            res->fetched_tail->next = j;
        else
            res->fetched = j;
        res->fetched_tail = j;
    }
}

static long long int_of(const redisReply *r) {
    if (!r) return 0;
    if (r->type == REDIS_REPLY_INTEGER) return r->integer;
    if (r->type == REDIS_REPLY_STRING) return strtoll(r->str, NULL, 10);
    return 0;
}

/* At most this many bytes of results in one round trip (always at least one result), so a
 * request stays far below the connection's 512 MiB limit whatever the results' sizes. */
#define BATCH_BYTES_MAX (64u << 20)

/* Bytes a result adds to a finish call, roughly (the fixed part covers the other
 * arguments). */
static size_t result_bytes(const ferry_job *j) {
    return 256 + strlen(j->id) + (j->value ? strlen(j->value) : 0) +
           (j->stacktrace ? strlen(j->stacktrace) : 0);
}

size_t ferry__batch_take(const ferry__disp *d) {
    size_t n = 0, bytes = 0;
    for (const ferry_job *j = d->pending; j; j = j->next) {
        size_t b = result_bytes(j);
        if (n > 0 && (d->one_result || bytes + b > BATCH_BYTES_MAX)) break;
        bytes += b;
        n++;
    }
    return n;
}

static int is_finish(const ferry_job *j) {
    return j->kind == FERRY__FIN_COMPLETE || j->kind == FERRY__FIN_FAIL;
}

/* The call's plan: one ITEM_RETRY per retry, the finishes in FINISH_CHUNK chunks (the last
 * one fetching), or one ITEM_FETCH when nothing finishes; fin[] receives the finishes'
 * indexes into jobs. Returns the number of items. */
static size_t plan_items(ferry_job **jobs, size_t njobs, size_t nfin, int fetch_n, size_t *fin,
                         item *items) {
    size_t ni = 0, nf = 0;
    for (size_t i = 0; i < njobs; i++) {
        if (is_finish(jobs[i]))
            fin[nf++] = i;
        else
            items[ni++] = (item){ITEM_RETRY, i, 1, 0};
    }
    size_t nchunks = (nfin + FINISH_CHUNK - 1) / FINISH_CHUNK;
    for (size_t c = 0; c < nchunks; c++) {
        size_t first = c * FINISH_CHUNK;
        size_t count = nfin - first < FINISH_CHUNK ? nfin - first : FINISH_CHUNK;
        items[ni++] = (item){ITEM_FINISH, first, count, c + 1 == nchunks ? fetch_n : 0};
    }
    if (nfin == 0 && fetch_n > 0) items[ni++] = (item){ITEM_FETCH, 0, 0, fetch_n};
    return ni;
}

/* A run of jobs into the same set with equal keep settings trims once, after its last job
 * (the script widens an age trim's limit by the run's length and trims for a last job that
 * was refused): the resulting set is the same as trimming after each. */
static void mark_trims(ferry_job **jobs, const size_t *fin, size_t nfin, char *trim) {
    for (size_t i = 0; i < nfin; i++) {
        ferry_job *j = jobs[fin[i]];
        trim[i] = 1;
        for (size_t k = i + 1; k < nfin; k++) {
            ferry_job *n = jobs[fin[k]];
            if ((n->kind == FERRY__FIN_COMPLETE) != (j->kind == FERRY__FIN_COMPLETE)) continue;
            if (keep_equal(&n->keep, &j->keep)) trim[i] = 0;
            break;
        }
    }
}

/* The first lock token counter of this call's fetched jobs. Tokens are consumed even if
 * the reply is lost: a job fetched by a call whose reply never arrived keeps its lock
 * token, and no later job should share it. */
static unsigned long long reserve_tokens(ferry__disp *d, int fetch_n) {
    /* Lua writes the token counter with "%.14g": keep it below 10^14 (a wrap after 10^13
     * fetched jobs cannot meet a job still holding its old token) */
    if (d->token_counter + (unsigned long long)fetch_n >= 10000000000000ULL) d->token_counter = 1;
    unsigned long long start = d->token_counter;
    if (fetch_n > 0) d->token_counter += (unsigned long long)fetch_n;
    return start;
}

/* Pipeline every item and read every reply. 0 or a transport error. */
static int send_items(ferry_conn *conn, const call_ctx *ctx, const item *items, size_t nitems,
                      args *a, redisReply **replies, ferry_error *err) {
    const char *keys[14];
    int nkeys = 0;
    int rc = 0;
    for (size_t i = 0; i < nitems && rc == 0; i++) {
        const ferry_script *s = build_item(ctx, &items[i], a, keys, &nkeys);
        rc = args_resolve(a, err);
        if (rc == 0)
            rc = ferry__conn_append_evalsha(conn, s, nkeys, keys, (int)a->n, a->v, a->len, err);
    }
    return rc == 0 ? ferry__conn_pipeline_read(conn, nitems, replies, err) : rc;
}

/* The script cache was flushed since we connected: this item did not run; run it again on
 * its own (ferry__conn_evalsha loads the script). 0 or a transport error (everything
 * after is unknown too). */
static int rerun_item(ferry_conn *conn, const call_ctx *ctx, const item *it, args *a,
                      redisReply **reply, ferry_error *err) {
    const char *keys[14];
    int nkeys = 0;
    freeReplyObject(*reply);
    *reply = NULL;
    const ferry_script *s = build_item(ctx, it, a, keys, &nkeys);
    int rc = args_resolve(a, err);
    if (rc == 0)
        rc = ferry__conn_evalsha(conn, s, nkeys, keys, (int)a->n, a->v, a->len, reply, err);
    return rc;
}

/* The first script error of a call, for the caller's message. */
typedef struct first_error {
    ferry_error e;
    int have;
} first_error;

static void decode_retry(ferry_job **jobs, const item *it, const redisReply *r, int *codes,
                         ferry__batch_result *res, first_error *fe) {
    if (r->type == REDIS_REPLY_INTEGER) {
        codes[it->first] = (int)r->integer;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               jobs[it->first]->kind == FERRY__FIN_THROTTLE) {
        /* throttleJob: {code, limiter pttl}; the limit holds even when refused */
        codes[it->first] = (int)int_of(r->element[0]);
        long long ttl = int_of(r->element[1]);
        if (ttl > res->throttle_ttl) res->throttle_ttl = ttl;
    } else {
        codes[it->first] = FERRY__CODE_SCRIPT_ERROR;
        note_script_error(&fe->e, &fe->have, "retry", r);
    }
}

/* moveToFinished {codes, jobs, limiter ttl, next delayed} / moveToActive {jobs, ...}. */
static void decode_finish_or_fetch(const call_ctx *ctx, const item *it, const redisReply *r,
                                   int *codes, ferry__batch_result *res, first_error *fe) {
    int is_fetch = it->kind == ITEM_FETCH;
    size_t need = is_fetch ? 3 : 4;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != need) {
        note_script_error(&fe->e, &fe->have, is_fetch ? "moveToActive" : "moveToFinished", r);
        for (size_t k = 0; !is_fetch && k < it->count; k++)
            codes[ctx->fin[it->first + k]] = FERRY__CODE_SCRIPT_ERROR;
        return;
    }
    size_t base = 0;
    if (!is_fetch) {
        const redisReply *cr = r->element[0];
        for (size_t k = 0; k < it->count; k++)
            codes[ctx->fin[it->first + k]] = cr->type == REDIS_REPLY_ARRAY && k < cr->elements
                                                 ? (int)int_of(cr->element[k])
                                                 : FERRY__CODE_SCRIPT_ERROR;
        base = 1;
    }
    if (it->fetch_n > 0) {
        take_fetched(ctx, r->element[base], res, &fe->e, &fe->have);
        res->rate_limit_ttl = int_of(r->element[base + 1]);
        res->next_delayed = int_of(r->element[base + 2]);
    }
}

static void free_fetched(ferry__batch_result *res) {
    ferry_job *j = res->fetched;
    while (j) {
        ferry_job *n = j->next;
        ferry__job_free(j);
        j = n;
    }
    res->fetched = res->fetched_tail = NULL;
}

int ferry__batch_run(ferry__lane *lane, ferry_job **jobs, size_t njobs, int fetch_n, int *codes,
                     ferry__batch_result *res, ferry_error *err) {
    memset(res, 0, sizeof *res);
    ferry_conn *conn = lane->d.conn;
    char now[24];
    snprintf(now, sizeof now, "%lld", (long long)ferry__now_ms());

    size_t nfin = 0;
    for (size_t i = 0; i < njobs; i++) {
        codes[i] = 0;
        if (is_finish(jobs[i])) nfin++;
    }
    size_t nchunks = (nfin + FINISH_CHUNK - 1) / FINISH_CHUNK;
    size_t nitems = (njobs - nfin) + nchunks + (nfin == 0 && fetch_n > 0 ? 1 : 0);
    if (nitems == 0) return 0;

    int rc = 0;
    args a = {0};
    size_t *fin = malloc((nfin ? nfin : 1) * sizeof *fin);
    char *trim = malloc(nfin ? nfin : 1);
    item *items = malloc(nitems * sizeof *items);
    redisReply **replies = calloc(nitems, sizeof *replies);
    if (!fin || !trim || !items || !replies) {
        rc = ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
        goto out;
    }
    plan_items(jobs, njobs, nfin, fetch_n, fin, items);
    mark_trims(jobs, fin, nfin, trim);
    call_ctx ctx = {lane, jobs, fin, trim, now, reserve_tokens(&lane->d, fetch_n)};
    res->fetch_sent = fetch_n > 0;

    rc = send_items(conn, &ctx, items, nitems, &a, replies, err);
    if (rc != 0) goto out;
    first_error fe = {0};
    for (size_t i = 0; i < nitems; i++) {
        if (is_noscript(replies[i])) {
            rc = rerun_item(conn, &ctx, &items[i], &a, &replies[i], err);
            if (rc != 0) goto out;
        }
        if (items[i].kind == ITEM_RETRY)
            decode_retry(jobs, &items[i], replies[i], codes, res, &fe);
        else
            decode_finish_or_fetch(&ctx, &items[i], replies[i], codes, res, &fe);
    }
    /* a script error is not a transport error: the call returns 0 with per-job codes and
     * the first error's text, so the caller decides per job */
    if (fe.have) {
        res->script_error = fe.e;
        res->has_script_error = 1;
    }

out:
    for (size_t i = 0; i < nitems && replies; i++)
        if (replies[i]) freeReplyObject(replies[i]);
    free(replies);
    free(items);
    free(trim);
    free(fin);
    args_free(&a);
    if (rc != 0) free_fetched(res); /* the caller treats the whole call as lost */
    return rc;
}

int ferry__batch_extend_locks(ferry__lane *lane, ferry_job **jobs, size_t n, size_t **lost,
                              size_t *nlost, ferry_error *err) {
    *lost = NULL;
    *nlost = 0;
    if (n == 0) return 0;
    args a = {0};
    add(&a, lane->keys.base, lane->keys.base_len);
    addll(&a, lane->lock_duration_ms);
    for (size_t i = 0; i < n; i++) {
        addz(&a, jobs[i]->id);
        addz(&a, jobs[i]->token);
    }
    redisReply *r = NULL;
    const char *keys[] = {lane->key.stalled};
    int rc = args_resolve(&a, err);
    if (rc == 0)
        rc = ferry__conn_evalsha(lane->d.conn, lane->script.extend, 1, keys, (int)a.n, a.v, a.len,
                                 &r, err);
    args_free(&a);
    if (rc != 0) return rc;
    if (r->type != REDIS_REPLY_ARRAY) {
        rc = ferry__err(err, FERRY_EREDIS, "worker: extendLocks failed: %s",
                        r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
        return rc;
    }
    if (r->elements) {
        size_t *out = malloc(r->elements * sizeof *out);
        if (!out) {
            freeReplyObject(r);
            return ferry__err(err, FERRY_ENOMEM, "worker: out of memory");
        }
        for (size_t k = 0; k < r->elements; k++) {
            const redisReply *e = r->element[k];
            if (e->type == REDIS_REPLY_INTEGER && e->integer >= 0 && (size_t)e->integer < n)
                out[(*nlost)++] = (size_t)e->integer;
        }
        *lost = out;
    }
    freeReplyObject(r);
    return 0;
}

int ferry__batch_stalled_check(ferry__lane *lane, redisReply **reply, ferry_error *err) {
    char now[24], maxst[24], interval[24];
    snprintf(now, sizeof now, "%lld", (long long)ferry__now_ms());
    /* never fail stalled jobs: a count no job reaches; fail at the first stall: 0 */
    long long max_stalled = lane->max_stalled_count;
    if (max_stalled == FERRY_STALLED_NEVER_FAIL) max_stalled = 9007199254740991LL;
    if (max_stalled == FERRY_STALLED_FAIL_FIRST) max_stalled = 0;
    snprintf(maxst, sizeof maxst, "%lld", max_stalled);
    snprintf(interval, sizeof interval, "%d", lane->stalled_interval_ms);
    const char *keys[] = {lane->key.stalled,       lane->key.wait,  lane->key.active,
                          lane->key.stalled_check, lane->key.meta,  lane->key.marker,
                          lane->key.events,        lane->key.repeat};
    const char *argv[] = {maxst, lane->keys.base, now, interval};
    int rc =
        ferry__conn_evalsha(lane->d.conn, lane->script.stalled, 8, keys, 4, argv, NULL, reply, err);
    if (rc != 0) return rc;
    if ((*reply)->type != REDIS_REPLY_ARRAY) {
        rc = ferry__err(err, FERRY_EREDIS, "worker: stalled check failed: %s",
                        (*reply)->type == REDIS_REPLY_ERROR ? (*reply)->str : "unexpected reply");
        freeReplyObject(*reply);
        *reply = NULL;
    }
    return rc;
}

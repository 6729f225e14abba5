/* queue.c - the producer handle: open (validate, merge default job options, connect,
 * write meta as Node's Queue constructor does), close, the round-trip helper every call
 * goes through (reconnect + deadline + NOSCRIPT reload), counts, pause/resume. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/job_opts_ext.h"
#include "queue/queue_internal.h"
#include "redis/eviction.h"
#include "redis/options.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/printable.h"

#define DEFAULT_TIMEOUT_MS 5000 /* conn.c's default for 0 */
#define RESUME_CALLS_MAX 100000 /* 7000 legacy ids per call: 700M ids */

static const char *const KEY_SUFFIX[QK_COUNT] = {
    [QK_WAIT] = "wait",
    [QK_META] = "meta",
    [QK_ID] = "id",
    [QK_DELAYED] = "delayed",
    [QK_PRIORITIZED] = "prioritized",
    [QK_PC] = "pc",
    [QK_MARKER] = "marker",
    [QK_EVENTS] = "events",
    [QK_ACTIVE] = "active",
    [QK_PAUSED] = "paused",
    [QK_COMPLETED] = "completed",
    [QK_FAILED] = "failed",
    [QK_WAITING_CHILDREN] = "waiting-children",
    [QK_REPEAT] = "repeat",
};

void ferry_queue_options_init(ferry_queue_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

const char *ferry_queue_name(const ferry_queue *q) {
    return q ? q->keys.queue : NULL;
}

const char *ferry_queue_prefix(const ferry_queue *q) {
    return q ? q->keys.prefix : NULL;
}

/* ---- the module interface (queue_module.h) ------------------------------------------- */

void ferry__queue_lock(ferry_queue *q) {
    pthread_mutex_lock(&q->mu);
}

void ferry__queue_unlock(ferry_queue *q) {
    pthread_mutex_unlock(&q->mu);
}

ferry_conn *ferry__queue_conn(ferry_queue *q) {
    return q->conn;
}

const ferry__keys *ferry__queue_keys(const ferry_queue *q) {
    return &q->keys;
}

const char *ferry__queue_key(const ferry_queue *q, enum ferry__qkey k) {
    return q->key[k];
}

size_t ferry__queue_max_payload(const ferry_queue *q) {
    return q->max_payload;
}

const json_t *ferry__queue_defaults(const ferry_queue *q) {
    return q->defaults;
}

int ferry__queue_eviction_policy(ferry_queue *q, char *policy, size_t cap, ferry_error *err) {
    pthread_mutex_lock(&q->mu);
    int rc = ferry__queue_connect(q, ferry__mono_ms() + q->connect_ms + q->command_ms, err);
    if (!rc) rc = ferry__redis_eviction_policy(q->conn, policy, cap, err);
    pthread_mutex_unlock(&q->mu);
    return rc;
}

/* ---- connection and round trips ------------------------------------------------------ */

void ferry__queue_drop_conn(ferry_queue *q) {
    ferry__conn_close(q->conn);
    q->conn = NULL;
}

int ferry__queue_connect(ferry_queue *q, int64_t deadline, ferry_error *err) {
    /* A connection the server closed while it sat idle (Redis restarted) is replaced before
     * anything is sent on it: otherwise the next call fails, and a non-idempotent one (add)
     * cannot be retried, although Redis is up and nothing was written. */
    if (q->conn && !ferry__conn_check_idle_peer(q->conn)) return 0;
    ferry__queue_drop_conn(q);
    int64_t left = deadline - ferry__mono_ms();
    if (left <= 0)
        return ferry__err(err, FERRY_ETIMEDOUT, "queue %s: no time left to reconnect to Redis",
                          q->shown);
    ferry_redis_options o = q->ropts;
    o.connect_timeout_ms = left < q->connect_ms ? (int)left : q->connect_ms;
    return ferry__conn_open(&o, NULL, &q->conn, err);
}

/* The connection failed under the call (a TLS alert mid-connection counts too: it leaves
 * the connection broken like a reset does). */
static int is_transport_error(const ferry_queue *q, int rc) {
    return rc == FERRY_EIO || rc == FERRY_ETIMEDOUT || rc == FERRY_EPROTO ||
           (rc == FERRY_ETLS && q->conn && ferry__conn_broken(q->conn));
}

static int is_noscript(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && !memcmp(r->str, "NOSCRIPT", 8);
}

/* The connection's command timeout for the next step of a call ending at `deadline`: what
 * is left of it, at most one command timeout, at least 1 ms. */
static void call_timeout(ferry_queue *q, int64_t deadline) {
    int64_t left = deadline - ferry__mono_ms();
    ferry__conn_set_timeout(q->conn, left < 1               ? 1
                                     : left < q->command_ms ? (int)left
                                                            : q->command_ms);
}

int ferry__queue_exchange(ferry_queue *q, ferry__q_append_fn append, void *ctx, int idempotent,
                          redisReply **replies, size_t max_replies, size_t *n, ferry_error *err) {
    int64_t deadline = ferry__mono_ms() + q->connect_ms + q->command_ms;
    int retried = 0, reloaded = 0;
    for (;;) {
        *n = 0;
        int rc = ferry__queue_connect(q, deadline, err);
        if (rc) return rc;
        call_timeout(q, deadline);
        rc = append(q, ctx, n, err);
        if (rc == 0 && *n > max_replies)
            rc = ferry__err(err, FERRY_EINVAL, "queue: %zu replies expected, room for %zu", *n,
                            max_replies);
        if (rc) {
            ferry__queue_drop_conn(q); /* appended commands must never be sent later */
            return rc;
        }
        rc = ferry__conn_pipeline_read(q->conn, *n, replies, err);
        if (rc == 0) {
            ferry__conn_set_timeout(q->conn, 0);
            if (*n == 1 && is_noscript(replies[0]) && !reloaded) {
                /* SCRIPT FLUSH or a restarted server: the call did nothing; load, repeat. */
                freeReplyObject(replies[0]);
                replies[0] = NULL;
                reloaded = 1;
                call_timeout(q, deadline); /* the load too stays within the call's deadline */
                rc = ferry__conn_load_scripts(q->conn, err);
                ferry__conn_set_timeout(q->conn, 0);
                if (rc) return rc;
                continue;
            }
            return 0;
        }
        if (!idempotent || retried || !is_transport_error(q, rc) ||
            deadline - ferry__mono_ms() <= 0)
            return rc;
        retried = 1; /* the connection is broken now; the loop reconnects */
    }
}

struct eval_ctx {
    const ferry_script *s;
    int nkeys, nargs;
    const char **keys, **args;
    const size_t *arglens;
};

static int eval_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    struct eval_ctx *c = vctx;
    *n = 1;
    return ferry__conn_append_evalsha(q->conn, c->s, c->nkeys, c->keys, c->nargs, c->args,
                                      c->arglens, err);
}

int ferry__queue_eval(ferry_queue *q, const char *script, int nkeys, const char **keys, int nargs,
                      const char **args, const size_t *arglens, int idempotent, redisReply **reply,
                      ferry_error *err) {
    struct eval_ctx c = {ferry__script_get(script), nkeys, nargs, keys, args, arglens};
    *reply = NULL;
    if (!c.s) return ferry__err(err, FERRY_EINVAL, "queue: script %s is not built in", script);
    size_t n;
    return ferry__queue_exchange(q, eval_append, &c, idempotent, reply, 1, &n, err);
}

int ferry__queue_reply_error(const ferry_queue *q, const redisReply *r, const char *what,
                             ferry_error *err) {
    if (r && r->type == REDIS_REPLY_ERROR)
        return ferry__err(err, FERRY_EREDIS, "queue %s: %s: %s", q->shown, what, r->str);
    return 0;
}

struct argv_ctx {
    int argc;
    const char **argv;
};

static int argv_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    struct argv_ctx *c = vctx;
    *n = 1;
    return ferry__conn_append_argv(q->conn, c->argc, c->argv, NULL, err);
}

static int queue_command(ferry_queue *q, int argc, const char **argv, int idempotent,
                         redisReply **reply, ferry_error *err) {
    struct argv_ctx c = {argc, argv};
    size_t n;
    *reply = NULL;
    return ferry__queue_exchange(q, argv_append, &c, idempotent, reply, 1, &n, err);
}

/* ---- open / close -------------------------------------------------------------------- */

static int copy_redis_options(ferry_queue *q, const ferry_redis_options *src, ferry_error *err) {
    int rc = ferry__redis_options_dup(&q->ropts, src, err);
    if (rc) return rc;
    if (q->ropts.connect_timeout_ms < 0 || q->ropts.command_timeout_ms < 0)
        return ferry__err(err, FERRY_EINVAL, "redis: timeouts must not be negative");
    q->connect_ms = q->ropts.connect_timeout_ms ? q->ropts.connect_timeout_ms : DEFAULT_TIMEOUT_MS;
    q->command_ms = q->ropts.command_timeout_ms ? q->ropts.command_timeout_ms : DEFAULT_TIMEOUT_MS;
    return 0;
}

int ferry__queue_defaults_load(const char *src, const char *what, json_t **out, ferry_error *err) {
    return ferry__queue_defaults_load_flags(src, what, 0, out, err);
}

int ferry__queue_defaults_load_flags(const char *src, const char *what, int flags, json_t **out,
                                     ferry_error *err) {
    if (out) *out = NULL;
    ferry_error e = {0};
    json_t *d = ferry__opts_load_object(src, what, &e);
    if (!d) return ferry__err(err, e.code, "%s", e.message);
    ferry__job_opts parsed;
    ferry__job_opts_extra x;
    int rc = ferry__job_opts_parse_flags(d, NULL, flags, &parsed, &x, &e);
    if (rc)
        rc = ferry__err(err, rc, "%s: %s", what, e.message);
    else if (parsed.job_id)
        rc = ferry__err(err, FERRY_EINVAL, "%s: jobId cannot be a default option", what);
    else if (x.has_dedup)
        rc = ferry__err(err, FERRY_EINVAL, "%s: deduplication is not supported yet", what);
    else if (x.has_parent)
        rc = ferry__err(err, FERRY_EINVAL, "%s: parent (flows) is not supported yet", what);
    ferry__job_opts_free(&parsed);
    if (rc || !out)
        json_decref(d);
    else
        *out = d;
    return rc;
}

/* Load and check the default job options once, so a bad default fails here, not at the
 * first add. */
static int load_defaults(ferry_queue *q, const ferry_queue_options *o, ferry_error *err) {
    const char *src = o->default_job_opts ? o->default_job_opts : o->global_default_job_opts;
    const char *what = o->default_job_opts ? "default_job_opts" : "global_default_job_opts";
    if (!src) return 0;
    return ferry__queue_defaults_load_flags(src, what, q->opts_flags, &q->defaults, err);
}

/* What Node's Queue constructor writes (unless skipMetasUpdate). */
static int write_meta(ferry_queue *q, ferry_error *err) {
    const char *argv[] = {"HSET",  q->key[QK_META], "opts.maxLenEvents",
                          "10000", "version",       "bullmq:" FERRY_BULLMQ_VERSION};
    redisReply *r = NULL;
    int rc = queue_command(q, 6, argv, 1, &r, err);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "writing meta", err);
    if (r) freeReplyObject(r);
    return rc;
}

int ferry__queue_new(const char *name, const ferry_queue_options *opts, int for_adding,
                     ferry_queue **out, ferry_error *err) {
    *out = NULL;
    ferry_queue_options defaults;
    if (!opts) {
        ferry_queue_options_init(&defaults);
        opts = &defaults;
    }
    ferry_queue *q = calloc(1, sizeof *q);
    if (!q) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    if (pthread_mutex_init(&q->mu, NULL) != 0) {
        free(q);
        return ferry__err(err, FERRY_ENOMEM, "cannot create the queue mutex");
    }
    int rc =
        ferry__keys_init(&q->keys, opts->prefix ? opts->prefix : FERRY_DEFAULT_PREFIX, name, err);
    if (rc == 0) {
        ferryx_printable(q->keys.queue, q->shown, sizeof q->shown);
        ferry_error e = {0};
        q->name_unsafe = ferry__queue_name_check(name, &e) != 0;
        if (q->name_unsafe && for_adding) rc = ferry__err(err, e.code, "%s", e.message);
    }
    for (int i = 0; rc == 0 && i < QK_COUNT; i++)
        if (!ferry__key(&q->keys, KEY_SUFFIX[i], q->key[i], sizeof q->key[i]))
            rc = ferry__err(err, FERRY_EINVAL, "queue key too long");
    if (rc == 0) {
        q->max_payload =
            opts->max_payload_bytes ? opts->max_payload_bytes : FERRY_DEFAULT_MAX_PAYLOAD;
        if (q->max_payload > FERRY_MAX_PAYLOAD_LIMIT)
            rc = ferry__err(err, FERRY_EINVAL, "max_payload_bytes %zu is over the %zu MiB maximum",
                            q->max_payload, FERRY_MAX_PAYLOAD_LIMIT >> 20);
    }
    q->opts_flags = opts->allow_unknown_opts ? FERRY__OPTS_ALLOW_UNKNOWN : 0;
    if (rc == 0) rc = copy_redis_options(q, opts->redis, err);
    if (rc == 0) rc = load_defaults(q, opts, err);
    if (rc) {
        ferry_queue_close(q);
        return rc;
    }
    *out = q;
    return 0;
}

int ferry_queue_open(const char *name, const ferry_queue_options *opts, ferry_queue **out,
                     ferry_error *err) {
    if (!out) return ferry__err(err, FERRY_EINVAL, "ferry_queue_open: out is NULL");
    *out = NULL;
    int writes = !(opts && opts->skip_meta_update);
    ferry_queue *q = NULL;
    int rc = ferry__queue_new(name, opts, writes, &q, err);
    if (rc) return rc;
    rc = ferry__conn_open(&q->ropts, NULL, &q->conn, err);
    if (rc == 0 && writes) rc = write_meta(q, err);
    if (rc) {
        ferry_queue_close(q);
        return rc;
    }
    *out = q;
    return 0;
}

void ferry_queue_close(ferry_queue *q) {
    if (!q) return;
    ferry__conn_close(q->conn);
    json_decref(q->defaults);
    ferry__redis_options_release(&q->ropts);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* ---- counts ------------------------------------------------------------------------ */

/* One MULTI so the numbers are a consistent snapshot, as BullMQ's getCounts script is. */
static const struct {
    const char *cmd;
    enum ferry__qkey key;
} COUNT_CMDS[] = {
    {"LLEN", QK_WAIT},
    {"LLEN", QK_ACTIVE},
    {"ZCARD", QK_COMPLETED},
    {"ZCARD", QK_FAILED},
    {"ZCARD", QK_DELAYED},
    {"ZCARD", QK_PRIORITIZED},
    {"ZCARD", QK_WAITING_CHILDREN},
    {"LLEN", QK_PAUSED},
};
#define NCOUNTS (sizeof COUNT_CMDS / sizeof COUNT_CMDS[0])

static int counts_append(ferry_queue *q, void *ctx, size_t *n, ferry_error *err) {
    (void)ctx;
    int rc = ferry__conn_append_argv(q->conn, 1, (const char *[]){"MULTI"}, NULL, err);
    for (size_t i = 0; rc == 0 && i < NCOUNTS; i++)
        rc = ferry__conn_append_argv(
            q->conn, 2, (const char *[]){COUNT_CMDS[i].cmd, q->key[COUNT_CMDS[i].key]}, NULL, err);
    if (rc == 0) rc = ferry__conn_append_argv(q->conn, 1, (const char *[]){"EXEC"}, NULL, err);
    *n = NCOUNTS + 2;
    return rc;
}

int ferry_queue_counts(ferry_queue *q, ferry_job_counts *out, ferry_error *err) {
    if (!q || !out) return ferry__err(err, FERRY_EINVAL, "ferry_queue_counts: NULL argument");
    redisReply *r[NCOUNTS + 2] = {0};
    size_t n = 0;
    pthread_mutex_lock(&q->mu);
    int rc = ferry__queue_exchange(q, counts_append, NULL, 1, r, NCOUNTS + 2, &n, err);
    pthread_mutex_unlock(&q->mu);
    if (rc == 0) {
        redisReply *x = r[NCOUNTS + 1];
        rc = ferry__queue_reply_error(q, x, "counts", err);
        if (rc == 0 && (x->type != REDIS_REPLY_ARRAY || x->elements != NCOUNTS))
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: counts: unexpected reply", q->shown);
        for (size_t i = 0; rc == 0 && i < NCOUNTS; i++) {
            if (x->element[i]->type == REDIS_REPLY_ERROR)
                rc = ferry__err(err, FERRY_EREDIS, "queue %s: %s %s: %s", q->shown,
                                COUNT_CMDS[i].cmd, q->key[COUNT_CMDS[i].key], x->element[i]->str);
            else if (x->element[i]->type != REDIS_REPLY_INTEGER)
                rc = ferry__err(err, FERRY_EPROTO, "queue %s: counts: unexpected reply", q->shown);
        }
        if (rc == 0) {
            long long v[NCOUNTS];
            for (size_t i = 0; i < NCOUNTS; i++)
                v[i] = x->element[i]->integer;
            out->waiting = v[0];
            out->active = v[1];
            out->completed = v[2];
            out->failed = v[3];
            out->delayed = v[4];
            out->prioritized = v[5];
            out->waiting_children = v[6];
            out->paused = v[7];
        }
    }
    for (size_t i = 0; i < n; i++)
        if (r[i]) freeReplyObject(r[i]);
    return rc;
}

int ferry_queue_exists(ferry_queue *q, int *exists, ferry_error *err) {
    if (!q || !exists) return ferry__err(err, FERRY_EINVAL, "ferry_queue_exists: NULL argument");
    char extra[3][FERRY__QKEY_LEN];
    static const char *const more[3] = {"stalled-check", "limiter", "stalled"};
    const char *argv[1 + QK_COUNT + 3] = {"EXISTS"};
    int argc = 1;
    for (int i = 0; i < QK_COUNT; i++)
        argv[argc++] = q->key[i];
    for (int i = 0; i < 3; i++)
        if (ferry__key(&q->keys, more[i], extra[i], sizeof extra[i])) argv[argc++] = extra[i];
    redisReply *r = NULL;
    pthread_mutex_lock(&q->mu);
    int rc = queue_command(q, argc, argv, 1, &r, err);
    pthread_mutex_unlock(&q->mu);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "EXISTS", err);
    if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: exists: unexpected reply", q->shown);
    if (rc == 0) *exists = r->integer > 0;
    if (r) freeReplyObject(r);
    return rc;
}

/* ---- pause / resume ---------------------------------------------------------------- */

int ferry_queue_pause(ferry_queue *q, ferry_error *err) {
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_pause: queue is NULL");
    const char *keys[] = {q->key[QK_META], q->key[QK_MARKER], q->key[QK_EVENTS]};
    redisReply *r = NULL;
    pthread_mutex_lock(&q->mu);
    int rc = ferry__queue_eval(q, "pause", 3, keys, 0, NULL, NULL, 1, &r, err);
    pthread_mutex_unlock(&q->mu);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "pause", err);
    if (r) freeReplyObject(r);
    return rc;
}

int ferry_queue_resume(ferry_queue *q, ferry_error *err) {
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_resume: queue is NULL");
    const char *keys[] = {q->key[QK_PAUSED],      q->key[QK_WAIT],   q->key[QK_META],
                          q->key[QK_PRIORITIZED], q->key[QK_EVENTS], q->key[QK_DELAYED],
                          q->key[QK_MARKER]};
    int rc = 0;
    pthread_mutex_lock(&q->mu);
    /* Like Node: repeat while a legacy paused list still holds ids; event on the first. */
    for (int call = 0; rc == 0; call++) {
        if (call == RESUME_CALLS_MAX) {
            rc = ferry__err(err, FERRY_ETOOBIG,
                            "queue %s: legacy paused list not drained after %d "
                            "calls",
                            q->shown, RESUME_CALLS_MAX);
            break;
        }
        const char *args[] = {call == 0 ? "1" : "0"};
        redisReply *r = NULL;
        rc = ferry__queue_eval(q, "resume", 7, keys, 1, args, NULL, 1, &r, err);
        if (rc == 0) rc = ferry__queue_reply_error(q, r, "resume", err);
        if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: resume: unexpected reply", q->shown);
        long long remaining = rc == 0 ? r->integer : 0;
        if (r) freeReplyObject(r);
        if (remaining <= 0) break;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int ferry_queue_is_paused(ferry_queue *q, int *paused, ferry_error *err) {
    if (!q || !paused) return ferry__err(err, FERRY_EINVAL, "ferry_queue_is_paused: NULL argument");
    const char *argv[] = {"HEXISTS", q->key[QK_META], "paused"};
    redisReply *r = NULL;
    pthread_mutex_lock(&q->mu);
    int rc = queue_command(q, 3, argv, 1, &r, err);
    pthread_mutex_unlock(&q->mu);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "HEXISTS meta paused", err);
    if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: is_paused: unexpected reply", q->shown);
    if (rc == 0) *paused = r->integer ? 1 : 0;
    if (r) freeReplyObject(r);
    return rc;
}

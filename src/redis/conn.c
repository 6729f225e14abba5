/* conn.c - one synchronous Redis connection (see conn.h): requests encoded by hiredis'
 * formatter into an output buffer, replies decoded by hiredis' redisReader from bytes our
 * transport reads, every round trip under one deadline, and the open-time handshake
 * (AUTH, SELECT, CLIENT SETNAME, SCRIPT LOAD) sent as a single pipeline. */
#include "redis/conn.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis/scripts.h"
#include "redis/transport.h"
#include "util/clock.h"
#include "util/error.h"

#define DEFAULT_TIMEOUT_MS 5000
#define TIMEOUT_MAX_MS FERRY_REDIS_TIMEOUT_MAX_MS
#define OBUF_MAX ((size_t)512 << 20)         /* encoded requests waiting to be sent */
#define REPLY_BYTES_MAX ((size_t)512 << 20)  /* unparsed bytes of one reply */
#define REPLY_ELEMENTS_MAX (1 << 24)         /* elements of one reply array */
#define REPLY_MEMORY_MAX ((size_t)512 << 20) /* decoded size of one reply (estimate) */
/* What the decoded size of a reply counts: each redisReply, each string's bytes and each
 * array's element vector, plus a malloc chunk header for each of those blocks. */
#define ALLOC_OVERHEAD 16
#define REPLY_OBJ_COST (sizeof(redisReply) + ALLOC_OVERHEAD)
/* Redis sets no limit; a worker's name is its prefix (512) + ':' + base64 of its queue name
 * (684) + ":w:" + its own name (256), so this bound is never what refuses a worker */
#define CLIENT_NAME_MAX 2048
#define EVAL_ARGS_MAX (1 << 20) /* keys + args of one EVALSHA */
#define RBUF_SIZE 65536

struct ferry_conn {
    ferry_redis_url url;
    ferry_transport *t;
    redisReader *reader;
    /* The reader's default reply builders (orig), wrapped (fns) to bound what one reply
     * may cost: hiredis 0.14 parses incrementally with no limit on the elements of an array
     * nor on the total, so a server could make us build gigabytes of tiny objects. */
    redisReplyObjectFunctions fns, orig;
    size_t reply_cost;     /* estimated decoded size of the reply being parsed */
    size_t reply_cost_max; /* REPLY_MEMORY_MAX, lower in tests */
    enum { WITHIN_LIMITS, OVER_ELEMENTS, OVER_MEMORY } over_limit;
    char *obuf;
    size_t olen, ocap;
    size_t pending;    /* appended commands whose replies are not read yet */
    size_t secret_len; /* obuf[0..secret_len) holds AUTH: wiped once sent */
    int timeout_ms, default_timeout_ms;
    int broken;
    char endpoint[300];
    char rbuf[RBUF_SIZE];
};

/* Add `cost` to the reply being decoded; 0, or -1 past the budget. Returning NULL from a
 * builder makes the reader report out-of-memory; over_limit tells read_reply why. */
static int charge(ferry_conn *c, size_t cost) {
    if (cost > c->reply_cost_max - c->reply_cost) {
        c->over_limit = OVER_MEMORY;
        return -1;
    }
    c->reply_cost += cost;
    return 0;
}

static void *create_string_limited(const redisReadTask *task, char *str, size_t len) {
    ferry_conn *c = task->privdata;
    /* len is bounded by the reader's buffer (REPLY_BYTES_MAX): the sum cannot wrap */
    if (charge(c, REPLY_OBJ_COST + len + 1 + ALLOC_OVERHEAD) != 0) return NULL;
    return c->orig.createString(task, str, len);
}

static void *create_array_limited(const redisReadTask *task, int elements) {
    ferry_conn *c = task->privdata;
    /* hiredis 0.14.1 refuses negative counts other than -1 (a nil) itself */
    if (elements < 0 || elements > REPLY_ELEMENTS_MAX) {
        c->over_limit = OVER_ELEMENTS;
        return NULL;
    }
    size_t vec = (size_t)elements * sizeof(redisReply *) + ALLOC_OVERHEAD;
    if (charge(c, REPLY_OBJ_COST + vec) != 0) return NULL;
    return c->orig.createArray(task, elements);
}

static void *create_integer_limited(const redisReadTask *task, long long value) {
    ferry_conn *c = task->privdata;
    if (charge(c, REPLY_OBJ_COST) != 0) return NULL;
    return c->orig.createInteger(task, value);
}

static void *create_nil_limited(const redisReadTask *task) {
    ferry_conn *c = task->privdata;
    if (charge(c, REPLY_OBJ_COST) != 0) return NULL;
    return c->orig.createNil(task);
}

static int broken(ferry_conn *c, int rc) {
    c->broken = 1;
    return rc;
}

/* Calls that need an idle, healthy connection. */
static int check_idle(ferry_conn *c, ferry_error *err) {
    if (c->broken)
        return ferry__err(err, FERRY_EIO, "redis %s: connection is broken; reconnect", c->endpoint);
    if (c->pending)
        return ferry__err(err, FERRY_ESTATE, "redis %s: %zu pipelined commands not read yet",
                          c->endpoint, c->pending);
    return 0;
}

/* A failed append drops every command appended since the last flush, and returns rc. None
 * of them was sent and no caller reads replies after a failed append, so the connection
 * stays usable; left in the buffer, they would be counted as pending forever and make every
 * later call fail ("commands not read yet"), or be sent with the next request. */
static int drop_unsent(ferry_conn *c, int rc) {
    if (c->secret_len) {
        explicit_bzero(c->obuf, c->secret_len);
        c->secret_len = 0;
    }
    c->olen = 0;
    c->pending = 0;
    return rc;
}

static int too_big(ferry_conn *c, ferry_error *err) {
    return drop_unsent(c, ferry__err(err, FERRY_ETOOBIG, "redis %s: request over %zu MiB",
                                     c->endpoint, OBUF_MAX >> 20));
}

/* A bigger output buffer holding obuf's bytes. While the buffer holds AUTH, realloc would
 * leave the password behind in the block it moves away from: copy, wipe, free instead. */
static char *obuf_grow(ferry_conn *c, size_t cap) {
    if (!c->secret_len) return realloc(c->obuf, cap);
    char *nb = malloc(cap);
    if (!nb) return NULL;
    memcpy(nb, c->obuf, c->olen);
    explicit_bzero(c->obuf, c->secret_len);
    free(c->obuf);
    return nb;
}

static int obuf_append(ferry_conn *c, const char *cmd, size_t len, ferry_error *err) {
    if (len > OBUF_MAX - c->olen) return too_big(c, err);
    if (c->olen + len > c->ocap) {
        size_t cap = c->ocap ? c->ocap : 4096;
        while (cap < c->olen + len)
            cap *= 2;
        char *nb = obuf_grow(c, cap);
        if (!nb) return drop_unsent(c, ferry__err(err, FERRY_ENOMEM, "redis: out of memory"));
        c->obuf = nb;
        c->ocap = cap;
    }
    memcpy(c->obuf + c->olen, cmd, len);
    c->olen += len;
    c->pending++;
    return 0;
}

static size_t count_digits(size_t v) {
    size_t n = 1;
    for (; v >= 10; v /= 10)
        n++;
    return n;
}

/* The size redisFormatCommandArgv would produce ("*argc\r\n" then "$len\r\n<arg>\r\n"
 * each), or SIZE_MAX once over `max`. hiredis 0.14 sums it in an int, which wraps for an
 * argument near 2 or 4 GiB and then overflows the buffer it allocated: this check has to
 * come first, and also saves building a copy of a request that would be refused. */
static size_t encoded_len(int argc, const char **argv, const size_t *argvlen, size_t max) {
    size_t total = 1 + count_digits((size_t)argc) + 2;
    for (int i = 0; i < argc && total <= max; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        if (len > max) return SIZE_MAX; /* total and len both <= max: no wrap below */
        total += 1 + count_digits(len) + 2 + len + 2;
    }
    return total <= max ? total : SIZE_MAX;
}

/* Encode one command into the output buffer. `secret`: it carries a password (AUTH), so
 * hiredis' copy is wiped before it goes back to the allocator. */
static int append_command(ferry_conn *c, int argc, const char **argv, const size_t *argvlen,
                          int secret, ferry_error *err) {
    if (argc <= 0 || !argv)
        return drop_unsent(c, ferry__err(err, FERRY_EINVAL, "redis: empty command"));
    for (int i = 0; i < argc; i++)
        if (!argv[i] && (!argvlen || argvlen[i]))
            return drop_unsent(c, ferry__err(err, FERRY_EINVAL, "redis: argument %d is NULL", i));
    if (encoded_len(argc, argv, argvlen, OBUF_MAX - c->olen) == SIZE_MAX) return too_big(c, err);
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    if (len < 0)
        return drop_unsent(c, ferry__err(err, FERRY_ENOMEM, "redis: cannot encode command"));
    int rc = obuf_append(c, cmd, (size_t)len, err);
    if (secret) explicit_bzero(cmd, (size_t)len);
    redisFreeCommand(cmd);
    return rc;
}

static int append_argv(ferry_conn *c, int argc, const char **argv, const size_t *argvlen,
                       ferry_error *err) {
    return append_command(c, argc, argv, argvlen, 0, err);
}

/* One reply from the reader, reading from the socket as needed. */
static int read_reply(ferry_conn *c, redisReply **out, int64_t deadline, ferry_error *err) {
    for (;;) {
        void *r = NULL;
        c->over_limit = WITHIN_LIMITS;
        if (redisReaderGetReply(c->reader, &r) != REDIS_OK) {
            if (c->over_limit == OVER_ELEMENTS)
                return ferry__err(err, FERRY_ETOOBIG, "redis %s: reply array over %d elements",
                                  c->endpoint, REPLY_ELEMENTS_MAX);
            if (c->over_limit == OVER_MEMORY)
                return ferry__err(
                    err, FERRY_ETOOBIG, "redis %s: reply over %zu %s once decoded", c->endpoint,
                    c->reply_cost_max >= (1 << 20) ? c->reply_cost_max >> 20 : c->reply_cost_max,
                    c->reply_cost_max >= (1 << 20) ? "MiB" : "bytes");
            return ferry__err(err, FERRY_EPROTO, "redis %s: bad reply: %s", c->endpoint,
                              c->reader->errstr);
        }
        if (r) {
            c->reply_cost = 0; /* the budget is per reply */
            *out = r;
            return 0;
        }
        if (c->reader->len - c->reader->pos > REPLY_BYTES_MAX)
            return ferry__err(err, FERRY_ETOOBIG, "redis %s: reply over %zu MiB", c->endpoint,
                              REPLY_BYTES_MAX >> 20);
        size_t got = 0;
        int rc = ferry__transport_read(c->t, c->rbuf, sizeof c->rbuf, &got, deadline, err);
        if (rc != 0) return rc;
        if (redisReaderFeed(c->reader, c->rbuf, got) != REDIS_OK)
            return ferry__err(err, FERRY_ENOMEM, "redis %s: reader: %s", c->endpoint,
                              c->reader->errstr);
    }
}

/* Send everything appended, then read n replies. On failure no reply is returned and the
 * connection is broken: the stream position is unknown. */
static int flush_read(ferry_conn *c, size_t n, redisReply **replies, int64_t deadline,
                      ferry_error *err) {
    for (size_t i = 0; i < n; i++)
        replies[i] = NULL;
    int rc = 0;
    if (c->olen) {
        rc = ferry__transport_write(c->t, c->obuf, c->olen, deadline, err);
        c->olen = 0;
        if (c->secret_len) {
            explicit_bzero(c->obuf, c->secret_len);
            c->secret_len = 0;
        }
        if (c->ocap > 1 << 20) { /* don't keep a huge batch's buffer around */
            free(c->obuf);
            c->obuf = NULL;
            c->ocap = 0;
        }
        if (rc != 0) return broken(c, rc);
    }
    for (size_t i = 0; i < n; i++) {
        rc = read_reply(c, &replies[i], deadline, err);
        if (rc != 0) {
            /* A server that refuses a connection (maxclients, protected mode) answers with an
             * error and closes: that answer, not the close, is what explains it. Only for a
             * closed or failed connection (FERRY_EIO), not a timeout. */
            for (size_t j = 0; rc == FERRY_EIO && j < i; j++)
                if (replies[j]->type == REDIS_REPLY_ERROR && err) {
                    size_t len = strlen(err->message);
                    snprintf(err->message + len, sizeof err->message - len,
                             " (after the server answered: %.200s)", replies[j]->str);
                    break;
                }
            for (size_t j = 0; j < i; j++) {
                freeReplyObject(replies[j]);
                replies[j] = NULL;
            }
            return broken(c, rc);
        }
    }
    c->pending = 0;
    return 0;
}

static int64_t command_deadline(const ferry_conn *c) {
    return ferry__mono_ms() + c->timeout_ms;
}

/* ---- commands --------------------------------------------------------------------- */

int ferry__conn_command_argv(ferry_conn *c, int argc, const char **argv, const size_t *argvlen,
                             redisReply **reply, ferry_error *err) {
    *reply = NULL;
    int rc = check_idle(c, err);
    if (rc == 0) rc = append_argv(c, argc, argv, argvlen, err);
    if (rc != 0) return rc;
    return flush_read(c, 1, reply, command_deadline(c), err);
}

int ferry__conn_vcommand(ferry_conn *c, redisReply **reply, ferry_error *err, const char *fmt,
                         va_list ap) {
    *reply = NULL;
    int rc = check_idle(c, err);
    if (rc != 0) return rc;
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    if (len < 0) return ferry__err(err, FERRY_EINVAL, "redis: bad command format '%s'", fmt);
    rc = obuf_append(c, cmd, (size_t)len, err);
    redisFreeCommand(cmd);
    if (rc != 0) return rc;
    return flush_read(c, 1, reply, command_deadline(c), err);
}

int ferry__conn_command(ferry_conn *c, redisReply **reply, ferry_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = ferry__conn_vcommand(c, reply, err, fmt, ap);
    va_end(ap);
    return rc;
}

int ferry__conn_append_argv(ferry_conn *c, int argc, const char **argv, const size_t *argvlen,
                            ferry_error *err) {
    if (c->broken)
        return ferry__err(err, FERRY_EIO, "redis %s: connection is broken; reconnect", c->endpoint);
    return append_argv(c, argc, argv, argvlen, err);
}

int ferry__conn_pipeline_read(ferry_conn *c, size_t n, redisReply **replies, ferry_error *err) {
    for (size_t i = 0; i < n; i++)
        replies[i] = NULL;
    if (c->broken)
        return ferry__err(err, FERRY_EIO, "redis %s: connection is broken; reconnect", c->endpoint);
    if (n != c->pending)
        return ferry__err(err, FERRY_EINVAL,
                          "redis %s: asked for %zu replies, %zu commands pending", c->endpoint, n,
                          c->pending);
    if (n == 0) return 0;
    return flush_read(c, n, replies, command_deadline(c), err);
}

void ferry__conn_set_timeout(ferry_conn *c, int timeout_ms) {
    c->timeout_ms = timeout_ms > 0 && timeout_ms <= TIMEOUT_MAX_MS ? timeout_ms
                    : timeout_ms > 0                               ? TIMEOUT_MAX_MS
                                                                   : c->default_timeout_ms;
}

int ferry__conn_broken(const ferry_conn *c) {
    return !c || c->broken;
}

int ferry__conn_check_idle_peer(ferry_conn *c) {
    if (!c) return 1;
    if (!c->broken && c->pending == 0 && c->olen == 0 && ferry__transport_peer_closed(c->t))
        c->broken = 1;
    return c->broken;
}

const ferry_redis_url *ferry__conn_url(const ferry_conn *c) {
    return &c->url;
}

void ferry__conn_set_reply_memory_max(ferry_conn *c, size_t bytes) {
    c->reply_cost_max = bytes && bytes < REPLY_MEMORY_MAX ? bytes : REPLY_MEMORY_MAX;
}

/* ---- scripts ---------------------------------------------------------------------- */

static int reply_is_noscript(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && memcmp(r->str, "NOSCRIPT", 8) == 0;
}

/* SCRIPT LOAD answered with the sha we computed? */
static int check_loaded(ferry_conn *c, const ferry_script *s, const char *sha, redisReply *r,
                        ferry_error *err) {
    if (r->type == REDIS_REPLY_ERROR)
        return ferry__err(err, FERRY_EREDIS, "redis %s: SCRIPT LOAD %s: %s", c->endpoint, s->name,
                          r->str);
    if (r->type != REDIS_REPLY_STRING || r->len != 40 || memcmp(r->str, sha, 40) != 0)
        return ferry__err(err, FERRY_EPROTO, "redis %s: SCRIPT LOAD %s: unexpected reply",
                          c->endpoint, s->name);
    return 0;
}

static int append_script_load(ferry_conn *c, const ferry_script *s, ferry_error *err) {
    const char *argv[] = {"SCRIPT", "LOAD", s->source};
    const size_t lens[] = {6, 4, s->source_len};
    return append_argv(c, 3, argv, lens, err);
}

static int load_all(ferry_conn *c, int64_t deadline, ferry_error *err) {
    size_t n;
    const ferry_script *all = ferry__scripts_all(&n);
    if (n == 0) return 0;
    redisReply **replies = calloc(n, sizeof *replies);
    if (!replies) return ferry__err(err, FERRY_ENOMEM, "redis: out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = append_script_load(c, &all[i], err);
    if (rc != 0) {
        /* Appended but unsent commands would desynchronise the next round trip. */
        c->olen = 0;
        c->pending = 0;
    } else {
        rc = flush_read(c, n, replies, deadline, err);
    }
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = check_loaded(c, &all[i], all[i].sha1, replies[i], err);
    for (size_t i = 0; i < n; i++)
        if (replies[i]) freeReplyObject(replies[i]);
    free(replies);
    return rc;
}

int ferry__conn_load_scripts(ferry_conn *c, ferry_error *err) {
    int rc = check_idle(c, err);
    if (rc != 0) return rc;
    return load_all(c, command_deadline(c), err);
}

/* EVALSHA sha numkeys keys... args... into the output buffer. */
static int append_evalsha(ferry_conn *c, const ferry_script *s, int nkeys, const char **keys,
                          int nargs, const char **args, const size_t *arglens, ferry_error *err) {
    if (!s || nkeys < 0 || nargs < 0 || (nkeys && !keys) || (nargs && !args) ||
        nkeys > EVAL_ARGS_MAX || nargs > EVAL_ARGS_MAX - nkeys)
        return drop_unsent(c, ferry__err(err, FERRY_EINVAL,
                                         "redis: bad EVALSHA arguments (at most %d keys+args)",
                                         EVAL_ARGS_MAX));
    char sha[41], numkeys[16];
    if (ferry__script_sha1(s, sha) != 0)
        return drop_unsent(
            c, ferry__err(err, FERRY_EINVAL, "redis: cannot compute SHA-1 of script %s", s->name));
    snprintf(numkeys, sizeof numkeys, "%d", nkeys);
    size_t argc = 3 + (size_t)nkeys + (size_t)nargs;
    const char **argv = malloc(argc * sizeof *argv);
    size_t *lens = malloc(argc * sizeof *lens);
    int rc;
    if (!argv || !lens) {
        rc = drop_unsent(c, ferry__err(err, FERRY_ENOMEM, "redis: out of memory"));
    } else {
        argv[0] = "EVALSHA", lens[0] = 7;
        argv[1] = sha, lens[1] = 40;
        argv[2] = numkeys, lens[2] = strlen(numkeys);
        for (int i = 0; i < nkeys; i++)
            argv[3 + i] = keys[i], lens[3 + i] = strlen(keys[i]);
        for (int i = 0; i < nargs; i++) {
            size_t k = 3 + (size_t)nkeys + (size_t)i;
            argv[k] = args[i];
            lens[k] = arglens ? arglens[i] : strlen(args[i]);
        }
        rc = append_argv(c, (int)argc, argv, lens, err);
    }
    free(argv);
    free(lens);
    return rc;
}

int ferry__conn_append_evalsha(ferry_conn *c, const ferry_script *s, int nkeys, const char **keys,
                               int nargs, const char **args, const size_t *arglens,
                               ferry_error *err) {
    if (c->broken)
        return ferry__err(err, FERRY_EIO, "redis %s: connection is broken; reconnect", c->endpoint);
    return append_evalsha(c, s, nkeys, keys, nargs, args, arglens, err);
}

int ferry__conn_evalsha(ferry_conn *c, const ferry_script *s, int nkeys, const char **keys,
                        int nargs, const char **args, const size_t *arglens, redisReply **reply,
                        ferry_error *err) {
    *reply = NULL;
    int rc = check_idle(c, err);
    if (rc == 0) rc = append_evalsha(c, s, nkeys, keys, nargs, args, arglens, err);
    if (rc == 0) rc = flush_read(c, 1, reply, command_deadline(c), err);
    if (rc != 0 || !reply_is_noscript(*reply)) return rc;

    /* The script cache was flushed (SCRIPT FLUSH, restart, failover): load it, retry once. */
    freeReplyObject(*reply);
    *reply = NULL;
    char sha[41];
    redisReply *loaded = NULL;
    if (ferry__script_sha1(s, sha) != 0)
        return ferry__err(err, FERRY_EINVAL, "redis: cannot compute SHA-1 of script %s", s->name);
    rc = append_script_load(c, s, err);
    if (rc == 0) rc = flush_read(c, 1, &loaded, command_deadline(c), err);
    if (rc == 0) rc = check_loaded(c, s, sha, loaded, err);
    if (loaded) freeReplyObject(loaded);
    if (rc != 0) return rc;
    rc = append_evalsha(c, s, nkeys, keys, nargs, args, arglens, err);
    if (rc == 0) rc = flush_read(c, 1, reply, command_deadline(c), err);
    return rc;
}

/* ---- open / close ----------------------------------------------------------------- */

static int check_timeout(int v, const char *what, ferry_error *err) {
    if (v < 0 || v > TIMEOUT_MAX_MS)
        return ferry__err(err, FERRY_EINVAL, "redis: %s %d out of range (0..%d ms)", what, v,
                          TIMEOUT_MAX_MS);
    return 0;
}

int ferry__redis_timeouts_check(const ferry_redis_options *opts, ferry_error *err) {
    if (!opts) return 0;
    int rc = check_timeout(opts->connect_timeout_ms, "connect_timeout_ms", err);
    return rc ? rc : check_timeout(opts->command_timeout_ms, "command_timeout_ms", err);
}

int ferry__redis_name_chars_ok(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f) return 0;
    return 1;
}

/* Redis rejects names with spaces or newlines; we also keep them printable and short. */
static int check_client_name(const char *name, ferry_error *err) {
    size_t len = strlen(name);
    if (len == 0 || len > CLIENT_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "redis: client name must be 1..%d bytes",
                          CLIENT_NAME_MAX);
    if (!ferry__redis_name_chars_ok(name))
        return ferry__err(err, FERRY_EINVAL,
                          "redis: client name may hold only printable ASCII without spaces");
    return 0;
}

static int is_error_prefix(const redisReply *r, const char *prefix) {
    size_t n = strlen(prefix);
    return r->type == REDIS_REPLY_ERROR && r->len >= n && memcmp(r->str, prefix, n) == 0;
}

/* AUTH, SELECT, CLIENT SETNAME, SCRIPT LOAD (or a PING when none applies, so an open
 * connection is always a verified one), all in one round trip before the deadline. */
static int handshake(ferry_conn *c, const char *client_name, int64_t deadline, ferry_error *err) {
    const ferry_redis_url *u = &c->url;
    int rc = 0;
    size_t n_auth = 0, n_select = 0, n_name = 0;
    if (u->user || u->password) {
        /* A user without a password still authenticates ("nopass" ACL users). */
        const char *with_user[] = {"AUTH", u->user, u->password ? u->password : ""};
        const char *pass_only[] = {"AUTH", u->password};
        rc = u->user ? append_command(c, 3, with_user, NULL, 1, err)
                     : append_command(c, 2, pass_only, NULL, 1, err);
        n_auth = 1;
        c->secret_len = c->olen;
    }
    char db[16];
    snprintf(db, sizeof db, "%d", u->db);
    if (rc == 0 && u->db != 0) {
        rc = append_argv(c, 2, (const char *[]){"SELECT", db}, NULL, err);
        n_select = 1;
    }
    if (rc == 0 && client_name) {
        rc = append_argv(c, 3, (const char *[]){"CLIENT", "SETNAME", client_name}, NULL, err);
        n_name = 1;
    }
    size_t nscripts;
    const ferry_script *all = ferry__scripts_all(&nscripts);
    for (size_t i = 0; rc == 0 && i < nscripts; i++)
        rc = append_script_load(c, &all[i], err);
    if (rc == 0 && c->pending == 0) rc = append_argv(c, 1, (const char *[]){"PING"}, NULL, err);
    if (rc != 0) return rc;

    size_t n = c->pending;
    redisReply **r = calloc(n, sizeof *r);
    if (!r) return ferry__err(err, FERRY_ENOMEM, "redis: out of memory");
    rc = flush_read(c, n, r, deadline, err);
    size_t i = 0;
    if (rc == 0 && n_auth && r[i]->type == REDIS_REPLY_ERROR)
        rc = ferry__err(err, FERRY_EAUTH, "redis %s: AUTH refused: %s", c->endpoint, r[i]->str);
    i += n_auth;
    for (size_t j = i; rc == 0 && j < n; j++)
        if (is_error_prefix(r[j], "NOAUTH"))
            rc = ferry__err(err, FERRY_EAUTH, "redis %s: %s (the URL has no password)", c->endpoint,
                            r[j]->str);
    if (rc == 0 && n_select && r[i]->type == REDIS_REPLY_ERROR)
        rc = ferry__err(err, FERRY_EAUTH, "redis %s: SELECT %s refused: %s", c->endpoint, db,
                        r[i]->str);
    i += n_select;
    if (rc == 0 && n_name && r[i]->type == REDIS_REPLY_ERROR)
        rc = ferry__err(err, FERRY_EREDIS, "redis %s: CLIENT SETNAME: %s", c->endpoint, r[i]->str);
    i += n_name;
    for (size_t j = 0; rc == 0 && j < nscripts; j++, i++)
        rc = check_loaded(c, &all[j], all[j].sha1, r[i], err);
    if (rc == 0 && i < n && r[i]->type == REDIS_REPLY_ERROR)
        rc = ferry__err(err, FERRY_EREDIS, "redis %s: PING: %s", c->endpoint, r[i]->str);
    for (size_t j = 0; j < n; j++)
        if (r[j]) freeReplyObject(r[j]);
    free(r);
    return rc;
}

int ferry__conn_open(const ferry_redis_options *opts, const char *client_name, ferry_conn **out,
                     ferry_error *err) {
    *out = NULL;
    ferry_redis_options defaults;
    if (!opts) {
        ferry_redis_options_init(&defaults);
        opts = &defaults;
    }
    int rc = check_timeout(opts->connect_timeout_ms, "connect_timeout_ms", err);
    if (rc == 0) rc = check_timeout(opts->command_timeout_ms, "command_timeout_ms", err);
    if (rc == 0 && client_name) rc = check_client_name(client_name, err);
    if (rc != 0) return rc;

    ferry_conn *c = calloc(1, sizeof *c);
    if (!c) return ferry__err(err, FERRY_ENOMEM, "redis: out of memory");
    rc = ferry__redis_url_parse(opts->url ? opts->url : FERRY_DEFAULT_REDIS_URL, &c->url, err);
    if (rc != 0) {
        free(c);
        return rc;
    }
    const ferry_redis_url *u = &c->url;
    if (u->kind == FERRY_URL_UNIX)
        snprintf(c->endpoint, sizeof c->endpoint, "unix:%s", u->path);
    else if (strchr(u->host, ':'))
        snprintf(c->endpoint, sizeof c->endpoint, "[%s]:%d", u->host, u->port);
    else
        snprintf(c->endpoint, sizeof c->endpoint, "%s:%d", u->host, u->port);
    c->default_timeout_ms =
        opts->command_timeout_ms ? opts->command_timeout_ms : DEFAULT_TIMEOUT_MS;
    c->timeout_ms = c->default_timeout_ms;

    c->reader = redisReaderCreate();
    if (!c->reader) {
        ferry__conn_close(c);
        return ferry__err(err, FERRY_ENOMEM, "redis: out of memory");
    }
    c->orig = *c->reader->fn;
    c->fns = c->orig;
    c->fns.createString = create_string_limited;
    c->fns.createArray = create_array_limited;
    c->fns.createInteger = create_integer_limited;
    c->fns.createNil = create_nil_limited;
    c->reader->fn = &c->fns;
    c->reader->privdata = c;
    c->reply_cost_max = REPLY_MEMORY_MAX;

    int connect_ms = opts->connect_timeout_ms ? opts->connect_timeout_ms : DEFAULT_TIMEOUT_MS;
    int64_t deadline = ferry__mono_ms() + connect_ms;
    rc = ferry__transport_connect(u, opts, c->endpoint, deadline, &c->t, err);
    if (rc == 0) rc = handshake(c, client_name, deadline, err);
    if (rc != 0) {
        ferry__conn_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

void ferry__conn_close(ferry_conn *c) {
    if (!c) return;
    ferry__transport_close(c->t);
    if (c->reader) redisReaderFree(c->reader);
    if (c->secret_len) explicit_bzero(c->obuf, c->secret_len);
    free(c->obuf);
    ferry__redis_url_free(&c->url);
    free(c);
}

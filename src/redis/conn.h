/* conn.h - one synchronous Redis connection: URL, TCP / TLS (OpenSSL) / unix transport,
 * RESP via hiredis' reader and formatter (Debian's hiredis 0.14 has no TLS, so the socket
 * and TLS layer are ours and hiredis only encodes/decodes), deadlines on every call, AUTH
 * (with ACL user), SELECT, CLIENT SETNAME, and the Lua script registry (EVALSHA with a
 * NOSCRIPT reload).
 *
 * Thread-safety: a ferry_conn is used by one thread at a time (callers lock if they share).
 * Replies are hiredis `redisReply *`, owned by the caller, freed with freeReplyObject(). */
#ifndef FERRY_REDIS_CONN_H
#define FERRY_REDIS_CONN_H

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stddef.h>

#include "ferry/redis.h"
#include "redis/url.h"

typedef struct ferry_conn ferry_conn;

/* Connect per opts (NULL = defaults): parse URL, connect within connect_timeout_ms,
 * TLS handshake + verification for rediss://, AUTH, SELECT, CLIENT SETNAME `client_name`
 * (NULL = none). *out is freed with ferry__conn_close. */
int ferry__conn_open(const ferry_redis_options *opts, const char *client_name, ferry_conn **out,
                     ferry_error *err);
void ferry__conn_close(ferry_conn *c);

/* The checks ferry__conn_open makes of opts' timeouts (0..a day), for callers that connect
 * later (ferry_worker_create). 0 or FERRY_EINVAL naming the field. */
int ferry__redis_timeouts_check(const ferry_redis_options *opts, ferry_error *err);

/* 1 when s holds only what a Redis client name may (printable ASCII without spaces). Pure. */
int ferry__redis_name_chars_ok(const char *s);

/* Deadline for each subsequent round trip (ms, > 0). Default: opts.command_timeout_ms. */
void ferry__conn_set_timeout(ferry_conn *c, int timeout_ms);

/* Send one command and read its reply. An error *reply* is not a failure of this call:
 * it returns 0 with (*reply)->type == REDIS_REPLY_ERROR. Failures (FERRY_EIO,
 * FERRY_ETIMEDOUT, FERRY_ETLS for a fatal TLS alert, FERRY_EPROTO, FERRY_ETOOBIG for a reply
 * over its limits) leave the connection broken (ferry__conn_broken() = 1); the caller
 * reconnects. A request over 512 MiB encoded is FERRY_ETOOBIG before anything is encoded
 * or sent, and the connection stays usable. Limits of one reply: 512 MiB of unparsed bytes,
 * 2^24 elements per array, and 512 MiB decoded (an estimate of what its redisReply objects,
 * strings and element vectors take, malloc overhead included). */
int ferry__conn_command_argv(ferry_conn *c, int argc, const char **argv, const size_t *argvlen,
                             redisReply **reply, ferry_error *err);
/* printf-style convenience (hiredis format: %s %b %d...), for small commands: hiredis
 * encodes the whole request before the size limit can be checked (and its 0.14 formatter
 * miscounts arguments of 2 GiB or more), so data goes through the argv forms. */
int ferry__conn_command(ferry_conn *c, redisReply **reply, ferry_error *err, const char *fmt, ...);
int ferry__conn_vcommand(ferry_conn *c, redisReply **reply, ferry_error *err, const char *fmt,
                         va_list ap);

/* Pipelining: append commands to the output buffer, then ferry__conn_pipeline_read to write
 * them all and read `n` replies into replies[0..n-1] (each owned by the caller). A failed
 * append (request over 512 MiB, out of memory, bad arguments) drops every command appended
 * since the last read, none of which was sent: the connection stays usable, and the caller
 * must not read replies for them. */
int ferry__conn_append_argv(ferry_conn *c, int argc, const char **argv, const size_t *argvlen,
                            ferry_error *err);
int ferry__conn_pipeline_read(ferry_conn *c, size_t n, redisReply **replies, ferry_error *err);

int ferry__conn_broken(const ferry_conn *c);
/* For a connection that sat idle: if no request is outstanding and the server has already
 * closed it (restart, kill, idle timeout), mark it broken now, before anything is sent on
 * it, so the caller can reconnect and send without risking a request of unknown outcome.
 * Returns ferry__conn_broken() afterwards. Never blocks. */
int ferry__conn_check_idle_peer(ferry_conn *c);
/* The parsed endpoint (borrowed). */
const ferry_redis_url *ferry__conn_url(const ferry_conn *c);
/* Tests only: lower the decoded-size budget of one reply (default and maximum 512 MiB;
 * 0 restores it), so the limit can be observed without gigabytes of replies. */
void ferry__conn_set_reply_memory_max(ferry_conn *c, size_t bytes);

/* ---- Lua scripts ------------------------------------------------------------------ */

/* A script embedded at build time (see cmake/embed_lua.cmake). `sha1` is the hex SHA-1
 * of `source`, computed once at first use. Static storage; never freed. */
typedef struct ferry_script {
    const char *name;
    const char *source;
    size_t source_len;
    char sha1[41];
} ferry_script;

/* Look up an embedded script by file stem ("addJob"), or NULL. Thread-safe. */
const ferry_script *ferry__script_get(const char *name);

/* Run a script: EVALSHA sha numkeys keys... args...; on NOSCRIPT, SCRIPT LOAD and retry
 * once. Same reply ownership as ferry__conn_command_argv. */
int ferry__conn_evalsha(ferry_conn *c, const ferry_script *s, int nkeys, const char **keys,
                        int nargs, const char **args, const size_t *arglens, redisReply **reply,
                        ferry_error *err);
/* Pipelined form: append an EVALSHA; the caller reads with ferry__conn_pipeline_read and,
 * if any reply is NOSCRIPT, calls ferry__conn_load_scripts() and resends. All scripts are
 * loaded when a connection opens, so NOSCRIPT only follows SCRIPT FLUSH. */
int ferry__conn_append_evalsha(ferry_conn *c, const ferry_script *s, int nkeys, const char **keys,
                               int nargs, const char **args, const size_t *arglens,
                               ferry_error *err);
/* SCRIPT LOAD every embedded script (one pipelined round trip). */
int ferry__conn_load_scripts(ferry_conn *c, ferry_error *err);

#endif

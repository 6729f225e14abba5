/* th.h - what every C test may need, prefix th_ (test helpers): the servers the `servers`
 * fixture started (scripts/testenv.sh writes $FERRY_TESTENV/env as KEY=VALUE lines), a key
 * prefix of the test's own, Redis commands that fail the test on error, waiting for an
 * asynchronous effect without fixed sleeps, a private temporary directory, files, child
 * processes, a loopback listener, and "skipped" for checks the host cannot run.
 *
 * Compiled once into the ferry_testsupport library (th.c) that every test links. The area
 * headers beside it build on it: cli.h (running the `ferry` binary), qt.h (producer tests),
 * sc.h (schedulers), wt.h (workers), ob.h (outbox and relay). tests/README.md says which to
 * use for what. */
#ifndef FERRY_TEST_TH_H
#define FERRY_TEST_TH_H

#include <arpa/inet.h> /* th_listen_local's callers name address families and ports */
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#include "ferry/queue.h"
#include "redis/conn.h"

/* ---- the fixture's servers ------------------------------------------------------------ */

/* Value of KEY from $FERRY_TESTENV/env (static storage), or NULL. Keys written by
 * scripts/testenv.sh: REDIS_URL REDIS_PORT REDIS_UNIX REDIS_ACL_URL REDIS_ACL_USER
 * REDIS_ACL_PASSWORD REDIS_TLS_URL REDIS_TLS_PORT TLS_CA TLS_CERT TLS_KEY TLS_OTHER_CA
 * TLS_SERVER_CERT TLS_SERVER_KEY REDIS_DIR REDIS_PIDFILE REDIS_SERVER_ARGS REDIS_CTL
 * (DIR/redis-ctl stop|start|kill9|restart|pid for the plain server) REDIS_LOG, and with
 * --with-postgres DATABASE_URL PG_PORT PG_DATA. */
const char *th_env_get(const char *key);
/* Like th_env_get but fails the test when missing. */
const char *th_env_require(const char *key);

/* A fresh prefix unique to this process and call ("ft<pid>x<n>"), so tests never see
 * each other's keys. Static storage per call slot (copy it if you keep several). */
const char *th_prefix(void);

/* Options for the fixture's plain Redis (tls 0: REDIS_URL) or its TLS one (tls 1:
 * REDIS_TLS_URL, verified against TLS_CA), defaults otherwise. The strings are the env
 * file's (static storage). */
ferry_redis_options th_redis_options(int tls);

/* Open a plain command connection to the test Redis (fails the test on error). */
ferry_conn *th_conn(void);

/* Queue `name` under `prefix` on the fixture's plain Redis with the given default job
 * options (may be NULL) and allow_unknown_opts; fails the test on error. Caller closes. */
ferry_queue *th_queue_open(const char *prefix, const char *name, const char *defaults,
                           int allow_unknown);

/* The fixture's plain Redis server itself, through its redis-ctl wrapper (REDIS_CTL):
 * th_redis_ctl_rc runs `redis-ctl ACTION` (stop|start|kill9|restart) quietly and returns
 * system()'s status, th_redis_ctl fails the test unless it succeeded. th_redis_pid is the
 * running server's pid (fails the test when none runs). For outage and crash tests. */
int th_redis_ctl_rc(const char *action);
void th_redis_ctl(const char *action);
pid_t th_redis_pid(void);

/* ---- Redis commands ------------------------------------------------------------------- */

/* Run a command via hiredis format (printf-style, plus %b) and return the reply (caller frees).
 * Fails the test on transport error; an error reply is returned (tests that expect one use this).
 */
redisReply *th_cmd(ferry_conn *c, const char *fmt, ...);
/* Like th_cmd but an error reply fails the test too. */
redisReply *th_cmd_ok(ferry_conn *c, const char *fmt, ...);
/* va_list form of both: error_fails selects th_cmd_ok's behaviour. */
redisReply *th_vcmd(ferry_conn *c, int error_fails, const char *fmt, va_list ap);

/* A command whose reply must be an integer (ZCARD, LLEN, EXISTS, CLIENT ID, ...): its value.
 * Fails the test on any other reply. */
long long th_cmd_int(ferry_conn *c, const char *fmt, ...);

/* HGET key field: malloc'd value, or NULL when absent. Fails the test on any error. */
char *th_hget(ferry_conn *c, const char *key, const char *field);
/* Fail unless field of hash key is want (want NULL: the field must be absent). */
void th_expect_field(ferry_conn *c, const char *key, const char *field, const char *want);
/* ZSCORE key member as text (malloc'd), or NULL when not a member. */
char *th_zscore(ferry_conn *c, const char *key, const char *member);

/* ---- waiting -------------------------------------------------------------------------- */

/* Poll `cond(arg)` every 5 ms until it is true or timeout_ms passes; returns 1/0. For
 * waiting on asynchronous effects without fixed sleeps. */
int th_wait_until(int (*cond)(void *), void *arg, int timeout_ms);

/* Wait conditions for th_wait_until over files: the file exists; it contains needle (a
 * child's log has a line). */
typedef struct th_file_arg {
    char path[200];
} th_file_arg;
int th_file_exists(void *th_file_arg);
typedef struct th_log_arg {
    const char *path, *needle;
} th_log_arg;
int th_log_has(void *th_log_arg); /* the file at path contains needle */

/* Milliseconds on the monotonic clock (for measuring how long something took). */
long long th_mono_ms(void);
/* Sleep ms milliseconds (where a test must let time pass, never to wait for an effect). */
void th_sleep_ms(long long ms);

/* ---- files and the temporary directory ------------------------------------------------ */

/* A private temp directory for this test process (created on first use). */
const char *th_tmpdir(void);
/* Remove the temp directory and its files (flat; call at the end of main). */
void th_tmpdir_remove(void);
/* The whole file (malloc'd, NUL-terminated; "" when it cannot be read). */
char *th_slurp(const char *path);
/* Write text to path and chmod it to mode; fails the test when it cannot. */
void th_write_file(const char *path, const char *text, int mode);
/* 1 when the file at path (as it is now) contains needle. */
int th_file_contains(const char *path, const char *needle);

/* qsort comparator over an array of char * (strcmp order). */
int th_cmp_str(const void *a, const void *b);

/* ---- child processes ------------------------------------------------------------------ */

/* environ plus `extra` ("K=V" strings, NULL-terminated; may be NULL), leaving out inherited
 * entries that start with `drop` (e.g. "FERRY_FAULT="; NULL: none). The strings are not
 * copied; the caller frees the array. */
char **th_env_with(const char *const *extra, const char *drop);

/* posix_spawn argv[0] (a path) with env; stdin from in_path (NULL: /dev/null), stdout and
 * stderr to the given files (the same path for both is fine), appended to when append is
 * set, truncated otherwise. Fails the test when it cannot start. Returns the pid. */
pid_t th_spawn(const char *const *argv, char *const *env, const char *in_path, const char *out_path,
               const char *err_path, int append);

/* ---- sockets -------------------------------------------------------------------------- */

/* A TCP listener on 127.0.0.1 (AF_INET) or ::1 (AF_INET6) with the given backlog, for the
 * tests that play a server themselves; *port receives the port. Returns the socket, or -1
 * when the address family is unavailable. */
int th_listen_local(int family, int backlog, int *port);

/* ---- skipped -------------------------------------------------------------------------- */

/* A check this host cannot run (no ::1, a limited address space, an old server): prints
 * "SKIPPED: why", marks the current cmocka test skipped and remembers it, so that
 * th_exit makes the whole binary report "skipped" to CTest instead of "passed". */
void th_skip(const char *why);

/* main's return value: `failed` (cmocka_run_group_tests' result) when non-zero, else
 * TH_SKIPPED (CTest's SKIP_RETURN_CODE for C tests) when th_skip was called. */
#define TH_SKIPPED 77
int th_exit(int failed);

#endif

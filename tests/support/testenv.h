/* testenv.h - what the `servers` fixture started (scripts/testenv.sh writes
 * $FERRY_TESTENV/env as KEY=VALUE lines), and small helpers shared by tests. */
#ifndef FERRY_TEST_TESTENV_H
#define FERRY_TEST_TESTENV_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "redis/conn.h"

/* Value of KEY from $FERRY_TESTENV/env (static storage), or NULL. Keys written by
 * scripts/testenv.sh: REDIS_URL REDIS_PORT REDIS_UNIX REDIS_ACL_URL REDIS_ACL_USER
 * REDIS_ACL_PASSWORD REDIS_TLS_URL REDIS_TLS_PORT TLS_CA TLS_CERT TLS_KEY TLS_OTHER_CA
 * TLS_SERVER_CERT TLS_SERVER_KEY REDIS_DIR REDIS_PIDFILE REDIS_SERVER_ARGS REDIS_CTL
 * (DIR/redis-ctl stop|start|kill9|restart|pid for the plain server) REDIS_LOG, and with
 * --with-postgres DATABASE_URL PG_PORT PG_DATA. */
const char *testenv_get(const char *key);
/* Like testenv_get but fails the test when missing. */
const char *testenv_require(const char *key);

/* A fresh prefix unique to this process and call ("ft<pid>x<n>"), so tests never see
 * each other's keys. Static storage per call slot (copy it if you keep several). */
const char *testenv_prefix(void);

/* Options for the fixture's plain Redis (tls 0: REDIS_URL) or its TLS one (tls 1:
 * REDIS_TLS_URL, verified against TLS_CA), defaults otherwise. The strings are the env
 * file's (static storage). */
ferry_redis_options testenv_redis_options(int tls);

/* Open a plain command connection to the test Redis (fails the test on error). */
ferry_conn *testenv_conn(void);

/* Run a command via printf-style format and return the reply (caller frees). Fails the
 * test on transport error. */
redisReply *testenv_cmd(ferry_conn *c, const char *fmt, ...);

/* Poll `cond(arg)` every 5 ms until it is true or timeout_ms passes; returns 1/0. For
 * waiting on asynchronous effects without fixed sleeps. */
int testenv_wait_until(int (*cond)(void *), void *arg, int timeout_ms);

/* A check this host cannot run (no ::1, a limited address space, an old server): prints
 * "SKIPPED: why", marks the current cmocka test skipped and remembers it, so that
 * testenv_exit makes the whole binary report "skipped" to CTest instead of "passed". */
void testenv_skip(const char *why);

/* main's return value: `failed` (cmocka_run_group_tests' result) when non-zero, else
 * TESTENV_SKIPPED (CTest's SKIP_RETURN_CODE for C tests) when testenv_skip was called. */
#define TESTENV_SKIPPED 77
int testenv_exit(int failed);

#endif

/* test_worker_log.c - the worker's log callback (ferry_worker_callbacks.log, the one
 * diagnostics model of ferry/common.h): every notice and every error report also arrives as a
 * log line with its level, right after the typed callback, and a worker with only `log` set
 * gets them all the same. */
#include <hiredis/hiredis.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "support/wt.h"

#define LINES_MAX 64

typedef struct loglog {
    pthread_mutex_t mu;
    int n;
    int level[LINES_MAX];
    char line[LINES_MAX][FERRY_ERROR_MESSAGE_MAX + 256];
    char kind[LINES_MAX]; /* 'n' notice, 'e' error, 'l' log, in the order they came */
    int typed;            /* also set the notice / error callbacks */
} loglog;
static loglog L = {.mu = PTHREAD_MUTEX_INITIALIZER};
static wt T;

static void add(char kind, int level, const char *text) {
    pthread_mutex_lock(&L.mu);
    if (L.n < LINES_MAX) {
        L.kind[L.n] = kind;
        L.level[L.n] = level;
        snprintf(L.line[L.n], sizeof L.line[0], "%s", text);
        L.n++;
    }
    pthread_mutex_unlock(&L.mu);
}

static void on_log(int level, const char *message, void *ud) {
    assert_ptr_equal(ud, &T);
    add('l', level, message);
}
static void on_notice(const ferry_worker_notice *n, void *ud) {
    (void)ud;
    add('n', n->kind, n->message);
}
static void on_error(const ferry_error *e, void *ud) {
    (void)ud;
    add('e', e->code, e->message);
}

static ferry_outcome noop(ferry_job *job, void *ud) {
    (void)job;
    (void)ud;
    return FERRY_COMPLETED;
}

static ferry_worker *start(int typed) {
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&T, &o, &ro);
    o.callbacks.error = typed ? on_error : NULL;
    o.callbacks.notice = typed ? on_notice : NULL;
    o.callbacks.log = on_log;
    o.drain_delay_ms = 300;
    return wt_start(&o, noop, NULL);
}

static void policy(const char *p) {
    redisReply *r = wt_cmd(&T, "CONFIG SET maxmemory-policy %s", p);
    if (r->type == REDIS_REPLY_ERROR) fail_msg("CONFIG SET maxmemory-policy: %s", r->str);
    freeReplyObject(r);
}

static int setup(void **state) {
    (void)state;
    wt_init(&T);
    pthread_mutex_lock(&L.mu);
    L.n = 0;
    pthread_mutex_unlock(&L.mu);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    policy("noeviction");
    wt_fini(&T);
    return 0;
}

/* The eviction-policy notice at start: with only `log`, one WARN line; with `notice` too,
 * the notice first, then the same text as a log line. */
static void test_notice_as_log_line(void **state) {
    (void)state;
    policy("allkeys-lru");
    wt_stop(start(0));
    pthread_mutex_lock(&L.mu);
    assert_int_equal(L.n, 1);
    assert_int_equal(L.kind[0], 'l');
    assert_int_equal(L.level[0], FERRY_LOG_WARN);
    assert_non_null(strstr(L.line[0], "maxmemory-policy is allkeys-lru"));
    L.n = 0;
    pthread_mutex_unlock(&L.mu);

    wt_stop(start(1));
    pthread_mutex_lock(&L.mu);
    assert_int_equal(L.n, 2);
    assert_int_equal(L.kind[0], 'n');
    assert_int_equal(L.level[0], FERRY_NOTICE_EVICTION_POLICY);
    assert_int_equal(L.kind[1], 'l');
    assert_int_equal(L.level[1], FERRY_LOG_WARN);
    assert_string_equal(L.line[0], L.line[1]);
    pthread_mutex_unlock(&L.mu);
}

static int seen(void *arg) {
    const char *want = arg;
    pthread_mutex_lock(&L.mu);
    int found = 0;
    for (int i = 0; i < L.n; i++)
        if (L.kind[i] == 'l' && strstr(L.line[i], want)) found = 1;
    pthread_mutex_unlock(&L.mu);
    return found;
}

static int blocked(void *arg) {
    (void)arg;
    redisReply *r = wt_cmd(&T, "CLIENT LIST");
    int yes = strstr(r->str, "cmd=bzpopmin") != NULL;
    freeReplyObject(r);
    return yes;
}

/* A connection killed under the worker: the error report and the lost / restored notices
 * each arrive as a log line too (errors and REDIS_LOST at WARN, REDIS_RESTORED at INFO),
 * each right after its typed callback with the same text. */
static void test_errors_and_outage_as_log_lines(void **state) {
    (void)state;
    ferry_worker *w = start(1);
    if (!th_wait_until(blocked, NULL, 15000)) fail_msg("worker never blocked on the marker");
    redisReply *r = wt_cmd(&T, "CLIENT KILL TYPE normal SKIPME yes");
    freeReplyObject(r);
    if (!th_wait_until(seen, "restored", 15000)) fail_msg("no 'restored' log line");
    wt_stop(w);
    pthread_mutex_lock(&L.mu);
    int errors = 0, lost = 0, restored = 0;
    for (int i = 0; i < L.n; i++) {
        if (L.kind[i] == 'l') continue;
        /* every typed report is followed by its log line */
        assert_true(i + 1 < L.n);
        assert_int_equal(L.kind[i + 1], 'l');
        assert_string_equal(L.line[i], L.line[i + 1]);
        if (L.kind[i] == 'e') {
            errors++;
            assert_int_equal(L.level[i + 1], FERRY_LOG_WARN);
        } else if (L.level[i] == FERRY_NOTICE_REDIS_LOST) {
            lost++;
            assert_int_equal(L.level[i + 1], FERRY_LOG_WARN);
        } else if (L.level[i] == FERRY_NOTICE_REDIS_RESTORED) {
            restored++;
            assert_int_equal(L.level[i + 1], FERRY_LOG_INFO);
        }
    }
    pthread_mutex_unlock(&L.mu);
    fprintf(stderr, "# %d errors, %d lost, %d restored\n", errors, lost, restored);
    assert_true(errors >= 1);
    assert_int_equal(lost, 1);
    assert_int_equal(restored, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_notice_as_log_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_and_outage_as_log_lines, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

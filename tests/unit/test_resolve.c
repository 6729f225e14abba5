/* test_resolve.c - deadline-bounded name resolution (src/redis/resolve.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "redis/resolve.h"
#include "support/th.h"
#include "util/clock.h"

static void test_numeric_ipv4(void **state) {
    (void)state;
    struct addrinfo *res = NULL;
    ferry_error e = {0};
    assert_int_equal(
        ferry__resolve("127.0.0.1", 6380, ferry__mono_ms() + 1000, "redis x", &res, &e), 0);
    assert_non_null(res);
    assert_int_equal(res->ai_family, AF_INET);
    const struct sockaddr_in *sa = (const struct sockaddr_in *)res->ai_addr;
    assert_int_equal(ntohs(sa->sin_port), 6380);
    assert_int_equal(ntohl(sa->sin_addr.s_addr), 0x7f000001u);
    freeaddrinfo(res);
}

static void test_numeric_ipv6(void **state) {
    (void)state;
    struct addrinfo *res = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry__resolve("::1", 1, ferry__mono_ms() + 1000, "redis x", &res, &e), 0);
    assert_int_equal(res->ai_family, AF_INET6);
    freeaddrinfo(res);
}

/* A name goes through the resolver thread; localhost is in /etc/hosts on every system we
 * run on. */
static void test_name_through_thread(void **state) {
    (void)state;
    for (int i = 0; i < 50; i++) { /* repeated: the thread hand-over must not leak or race */
        struct addrinfo *res = NULL;
        ferry_error e = {0};
        int rc = ferry__resolve("localhost", 6379, ferry__mono_ms() + 5000, "redis x", &res, &e);
        if (rc != 0) fail_msg("localhost: %s", e.message);
        assert_non_null(res);
        int loopback = 0;
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            if (ai->ai_family == AF_INET)
                loopback |=
                    (ntohl(((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr) >> 24) == 127;
            if (ai->ai_family == AF_INET6)
                loopback |= IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
        }
        assert_true(loopback);
        freeaddrinfo(res);
    }
}

/* An unknown name fails with a message naming the endpoint and the host, within the
 * deadline (DNS may be unreachable here: then the deadline is what ends the wait). */
static void test_unknown_name_bounded(void **state) {
    (void)state;
    struct addrinfo *res = NULL;
    ferry_error e = {0};
    int64_t t0 = ferry__mono_ms();
    int rc = ferry__resolve("no-such-host.invalid", 6379, t0 + 300,
                            "redis no-such-host.invalid:6379", &res, &e);
    int64_t took = ferry__mono_ms() - t0;
    assert_true(rc == FERRY_EIO || rc == FERRY_ETIMEDOUT);
    assert_null(res);
    assert_non_null(strstr(e.message, "redis no-such-host.invalid:6379"));
    assert_non_null(strstr(e.message, "no-such-host.invalid'"));
    /* generous: the point is that a hanging resolver cannot hold us for its own retries */
    assert_true(took < 3000);
}

/* A deadline already past: a name is not waited for at all. */
static void test_past_deadline(void **state) {
    (void)state;
    struct addrinfo *res = NULL;
    ferry_error e = {0};
    int rc = ferry__resolve("localhost", 6379, ferry__mono_ms() - 1, "redis x", &res, &e);
    /* the thread may have answered before the first wait: both are correct */
    if (rc == 0)
        freeaddrinfo(res);
    else
        assert_int_equal(rc, FERRY_ETIMEDOUT);
}

/* A resolver that hangs like a dead DNS server until the test opens the gate. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;

static int dead_dns(const char *node, const char *service, const struct addrinfo *hints,
                    struct addrinfo **res) {
    (void)node, (void)service, (void)hints, (void)res;
    pthread_mutex_lock(&gate_mu);
    while (!gate_open)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    return EAI_NONAME;
}

static int resolves_again(void *arg) {
    (void)arg;
    struct addrinfo *res = NULL;
    ferry_error e = {0};
    int rc = ferry__resolve("gone.invalid", 1, ferry__mono_ms() + 1000, "redis x", &res, &e);
    return rc == FERRY_EIO && !strstr(e.message, "have not returned");
}

/* While DNS is dead, each timed-out lookup leaves a thread behind; past the cap a lookup
 * fails at once instead of adding one more. When DNS answers again, they drain. */
static void test_abandoned_lookups_capped(void **state) {
    (void)state;
    ferry__resolve_set_gai(dead_dns);
    for (int i = 0; i < FERRY_RESOLVE_ABANDONED_MAX; i++) {
        struct addrinfo *res = NULL;
        ferry_error e = {0};
        /* a deadline already past: the caller leaves at once, the lookup stays */
        int rc = ferry__resolve("gone.invalid", 1, ferry__mono_ms() - 1, "redis x", &res, &e);
        if (rc != FERRY_ETIMEDOUT) fail_msg("lookup %d: %d %s", i, rc, e.message);
    }
    struct addrinfo *res = NULL;
    ferry_error e = {0};
    int rc = ferry__resolve("gone.invalid", 1, ferry__mono_ms() + 60000, "redis x", &res, &e);
    assert_int_equal(rc, FERRY_EIO);
    if (!strstr(e.message, "32 earlier lookups have not returned yet"))
        fail_msg("message: %s", e.message);
    /* numeric addresses need no lookup: unaffected */
    assert_int_equal(ferry__resolve("127.0.0.1", 1, ferry__mono_ms() + 1000, "redis x", &res, &e),
                     0);
    freeaddrinfo(res);

    pthread_mutex_lock(&gate_mu);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    assert_true(th_wait_until(resolves_again, NULL, 10000));
    ferry__resolve_set_gai(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* first: the other tests may leave lookups of their own running */
        cmocka_unit_test(test_abandoned_lookups_capped),
        cmocka_unit_test(test_numeric_ipv4),
        cmocka_unit_test(test_numeric_ipv6),
        cmocka_unit_test(test_name_through_thread),
        cmocka_unit_test(test_unknown_name_bounded),
        cmocka_unit_test(test_past_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

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
#include <sys/socket.h>

#include "redis/resolve.h"
#include "util/clock.h"

static void test_numeric_ipv4(void **state) {
    (void)state;
    struct addrinfo *res = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry__resolve("127.0.0.1", 6380, ferry__mono_ms() + 1000, "redis x", &res, &e),
                     0);
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
                loopback |= (ntohl(((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr) >> 24) ==
                            127;
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
    int rc = ferry__resolve("no-such-host.invalid", 6379, t0 + 300, "redis no-such-host.invalid:6379",
                            &res, &e);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numeric_ipv4),        cmocka_unit_test(test_numeric_ipv6),
        cmocka_unit_test(test_name_through_thread), cmocka_unit_test(test_unknown_name_bounded),
        cmocka_unit_test(test_past_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_backoff.c - retry delays as BullMQ 6.7.0 computes them (src/worker/backoff.c):
 * fixed, exponential, jitter bounds with an injected random number, unknown strategies. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "worker/backoff.h"

static ferry__backoff make(const char *type, long long delay, double jitter) {
    ferry__backoff b;
    memset(&b, 0, sizeof b);
    b.set = 1;
    strcpy(b.type, type);
    b.delay_ms = delay;
    b.jitter = jitter;
    return b;
}

static long long delay_of(const ferry__backoff *b, long attempt, double rnd) {
    long long d = -2;
    ferry_error e = {0};
    assert_int_equal(ferry__backoff_delay(b, attempt, rnd, &d, &e), 0);
    return d;
}

static void test_no_backoff_is_immediate(void **state) {
    (void)state;
    ferry__backoff none;
    memset(&none, 0, sizeof none);
    assert_int_equal(delay_of(&none, 1, 0.3), 0);
    assert_int_equal(delay_of(NULL, 4, 0.3), 0);
}

static void test_fixed(void **state) {
    (void)state;
    ferry__backoff b = make("fixed", 300, 0);
    for (long a = 1; a <= 5; a++)
        assert_int_equal(delay_of(&b, a, 0.99), 300);
    b = make("fixed", 0, 0);
    assert_int_equal(delay_of(&b, 1, 0.5), 0);
}

static void test_exponential(void **state) {
    (void)state;
    ferry__backoff b = make("exponential", 200, 0);
    assert_int_equal(delay_of(&b, 1, 0.5), 200);
    assert_int_equal(delay_of(&b, 2, 0.5), 400);
    assert_int_equal(delay_of(&b, 3, 0.5), 800);
    assert_int_equal(delay_of(&b, 10, 0.5), 200LL << 9);
    /* Math.round of a half rounds up: 2^0 * 1.5 is not reachable with integer delays, but
     * the doubling of an odd delay stays exact */
    b = make("exponential", 333, 0);
    assert_int_equal(delay_of(&b, 2, 0), 666);
}

static void test_fixed_jitter_bounds(void **state) {
    (void)state;
    /* floor(rnd * delay * j + delay * (1 - j)): rnd 0 -> delay*(1-j), rnd -> 1 -> delay */
    ferry__backoff b = make("fixed", 1000, 0.5);
    assert_int_equal(delay_of(&b, 1, 0.0), 500);
    assert_int_equal(delay_of(&b, 1, 0.5), 750);
    assert_int_equal(delay_of(&b, 1, 0.999999), 999);
    b = make("fixed", 1000, 1.0);
    assert_int_equal(delay_of(&b, 1, 0.0), 0);
    assert_int_equal(delay_of(&b, 1, 0.25), 250);
    for (int i = 0; i < 1000; i++) {
        double r = ferry__backoff_random();
        assert_true(r >= 0 && r < 1);
        long long d = delay_of(
            &(ferry__backoff){.set = 1, .type = "fixed", .delay_ms = 1000, .jitter = 0.2}, 1, r);
        assert_true(d >= 800 && d < 1000);
    }
}

static void test_exponential_jitter_bounds(void **state) {
    (void)state;
    ferry__backoff b = make("exponential", 100, 0.5);
    /* attempt 3: m = 400 -> [200, 400) */
    assert_int_equal(delay_of(&b, 3, 0.0), 200);
    assert_int_equal(delay_of(&b, 3, 0.5), 300);
    assert_int_equal(delay_of(&b, 3, 0.9999), 399);
    for (int i = 0; i < 1000; i++) {
        long long d = delay_of(&b, 4, ferry__backoff_random());
        assert_true(d >= 400 && d < 800);
    }
}

static void test_huge_values_are_clamped(void **state) {
    (void)state;
    ferry__backoff b = make("exponential", 1000, 0);
    assert_int_equal(delay_of(&b, 200, 0.5), FERRY_BACKOFF_MAX_MS);
    assert_int_equal(delay_of(&b, LONG_MAX, 0.5), FERRY_BACKOFF_MAX_MS);
    b = make("fixed", 9007199254740991LL, 0);
    assert_int_equal(delay_of(&b, 1, 0.5), FERRY_BACKOFF_MAX_MS);
}

static void test_out_of_range_random_is_safe(void **state) {
    (void)state;
    ferry__backoff b = make("fixed", 1000, 1.0);
    assert_int_equal(delay_of(&b, 1, 7.0), 0); /* treated as 0 */
    assert_int_equal(delay_of(&b, 1, -1.0), 0);
}

static void test_unknown_strategy(void **state) {
    (void)state;
    ferry__backoff b = make("linear", 100, 0);
    long long d = 5;
    ferry_error e = {0};
    assert_int_equal(ferry__backoff_delay(&b, 1, 0.5, &d, &e), FERRY_ENOTFOUND);
    assert_int_equal(e.code, FERRY_ENOTFOUND);
    assert_non_null(strstr(e.message, "\"linear\""));
    assert_null(ferry__backoff_builtin("linear"));
    assert_non_null(ferry__backoff_builtin("fixed"));
    assert_non_null(ferry__backoff_builtin("exponential"));
    b = make("", 100, 0); /* a stored name too long to hold arrives empty */
    assert_int_equal(ferry__backoff_delay(&b, 1, 0.5, &d, &e), FERRY_ENOTFOUND);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_backoff_is_immediate),
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_exponential),
        cmocka_unit_test(test_fixed_jitter_bounds),
        cmocka_unit_test(test_exponential_jitter_bounds),
        cmocka_unit_test(test_huge_values_are_clamped),
        cmocka_unit_test(test_out_of_range_random_is_safe),
        cmocka_unit_test(test_unknown_strategy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

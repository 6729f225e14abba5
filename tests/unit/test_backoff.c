/* test_backoff.c - retry delays as BullMQ 6.7.0 computes them (src/worker/backoff.c):
 * fixed, exponential, jitter bounds with an injected random number, unknown strategies;
 * ferry's "capped" strategy (bounds, cap, determinism with a fixed random number); the
 * lookup order built-ins -> registered -> capped, custom results normalised, and the
 * validation of a worker's strategy registry. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <stdio.h>

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
    /* the draws spread over [0, 1): each tenth is hit (1000 draws miss a given tenth with
     * probability 0.9^1000, about 1e-46), and no two draws in a row are equal */
    int tenths[10] = {0};
    double last = -1;
    for (int i = 0; i < 1000; i++) {
        double r = ferry__backoff_random();
        assert_true(r >= 0 && r < 1);
        if (r == last) fail_msg("draw %d repeats the one before (%g)", i, r);
        last = r;
        tenths[(int)(r * 10)]++;
        long long d = delay_of(
            &(ferry__backoff){.set = 1, .type = "fixed", .delay_ms = 1000, .jitter = 0.2}, 1, r);
        assert_true(d >= 800 && d < 1000);
    }
    for (int t = 0; t < 10; t++)
        if (!tenths[t]) fail_msg("no draw in [%.1f, %.1f)", t / 10.0, (t + 1) / 10.0);
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

/* ---- capped ------------------------------------------------------------------------- */

static void test_capped_formula(void **state) {
    (void)state;
    /* ceiling = min(cap, base * 2^(attempt-1)); delay = round(ceiling/2 + rnd*ceiling/2) */
    assert_int_equal(ferry__backoff_capped_calc(1, 2000, 900000, 0.0), 1000);
    assert_int_equal(ferry__backoff_capped_calc(1, 2000, 900000, 0.5), 1500);
    assert_int_equal(ferry__backoff_capped_calc(2, 2000, 900000, 0.0), 2000);
    assert_int_equal(ferry__backoff_capped_calc(3, 2000, 900000, 0.25), 5000);
    /* deterministic for a fixed random number */
    for (int i = 0; i < 3; i++)
        assert_int_equal(ferry__backoff_capped_calc(4, 2000, 900000, 0.3), 8000 + 2400);
    /* defaults for non-positive base / cap: 2000 and 15 min */
    assert_int_equal(ferry__backoff_capped_calc(1, 0, 0, 0.0), 1000);
    assert_int_equal(ferry__backoff_capped_calc(40, -5, 0, 0.0), FERRY__CAPPED_CAP_MS / 2);
    /* Math.round of a half rounds up: ceiling 3 -> 1.5 -> 2 */
    assert_int_equal(ferry__backoff_capped_calc(1, 3, 100, 0.0), 2);
    /* attempt < 1 counts as 1; rnd outside [0, 1) counts as 0 */
    assert_int_equal(ferry__backoff_capped_calc(0, 2000, 900000, 0.0), 1000);
    assert_int_equal(ferry__backoff_capped_calc(-7, 2000, 900000, 0.0), 1000);
    assert_int_equal(ferry__backoff_capped_calc(1, 2000, 900000, 1.0), 1000);
    assert_int_equal(ferry__backoff_capped_calc(1, 2000, 900000, -0.1), 1000);
}

static void test_capped_bounds_and_cap(void **state) {
    (void)state;
    const long long base = 2000, cap = 15LL * 60 * 1000;
    for (long attempt = 1; attempt <= 70; attempt++) {
        double c = (double)base * (double)(1ULL << (attempt < 40 ? attempt - 1 : 39));
        long long ceiling = c < (double)cap ? (long long)c : cap;
        for (int i = 0; i < 200; i++) {
            double r = i == 0 ? 0.0 : i == 1 ? 0.9999999999 : ferry__backoff_random();
            long long d = ferry__backoff_capped_calc(attempt, base, cap, r);
            assert_true(2 * d >= ceiling);
            assert_true(d <= ceiling);
            assert_true(d <= cap);
        }
    }
    /* huge attempts and bases never overflow */
    assert_int_equal(ferry__backoff_capped_calc(LONG_MAX, 2000, 900000, 0.0), 450000);
    assert_int_equal(ferry__backoff_capped_calc(1, 1LL << 62, 1LL << 62, 0.0),
                     FERRY_BACKOFF_MAX_MS);
}

static void test_capped_builtin_uses_job_delay(void **state) {
    (void)state;
    /* backoff {type: capped, delay: 500}: base 500; without delay: base 2000 */
    ferry__backoff b = make("capped", 500, 0);
    assert_int_equal(delay_of(&b, 1, 0.0), 250);
    assert_int_equal(delay_of(&b, 3, 0.0), 1000);
    b = make("capped", 0, 0);
    assert_int_equal(delay_of(&b, 2, 0.0), 2000);
    assert_null(ferry__backoff_builtin("capped")); /* a fallback, not a BullMQ built-in */
    assert_non_null(ferry__backoff_fallback("capped"));
    /* the public function with a config: jitter in the upper half of [base.., cap] */
    ferry_backoff_capped_config cfg = {100, 1000};
    for (long a = 1; a <= 10; a++) {
        long long d = ferry_backoff_capped(a, "capped", "x", NULL, &cfg);
        long long ceiling = 100LL << (a - 1) < 1000 ? 100LL << (a - 1) : 1000;
        assert_true(2 * d >= ceiling && d <= ceiling);
    }
    /* NULL config and no job: base 2000 */
    long long d = ferry_backoff_capped(1, "capped", NULL, NULL, NULL);
    assert_true(d >= 1000 && d <= 2000);
}

/* ---- custom strategies ---------------------------------------------------------------- */

typedef struct seen {
    long attempts;
    char type[64];
    char reason[64];
    int calls;
} seen;

static long long custom_linear(long attempts_made, const char *type, const char *reason,
                               const ferry_job *job, void *ud) {
    (void)job;
    seen *s = ud;
    s->attempts = attempts_made;
    snprintf(s->type, sizeof s->type, "%s", type);
    snprintf(s->reason, sizeof s->reason, "%s", reason);
    s->calls++;
    return 1000 * attempts_made;
}

static long long custom_value(long attempts_made, const char *type, const char *reason,
                              const ferry_job *job, void *ud) {
    (void)attempts_made, (void)type, (void)reason, (void)job;
    return *(long long *)ud;
}

static long long resolve(const ferry__backoff *b, long attempt, const ferry__backoff_custom *reg,
                         size_t n) {
    long long d = -5;
    ferry_error e = {0};
    assert_int_equal(ferry__backoff_resolve(b, attempt, 0.0, "why", NULL, reg, n, &d, &e), 0);
    return d;
}

static void test_lookup_order(void **state) {
    (void)state;
    seen s1 = {0}, s2 = {0};
    ferry_backoff_strategy defs[] = {
        {"linear", custom_linear, &s1},
        {"capped", custom_linear, &s2}, /* replaces the built-in capped */
    };
    ferry__backoff_custom *reg = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry__backoff_registry_copy(defs, 2, &reg, &e), 0);

    ferry__backoff b = make("linear", 0, 0);
    assert_int_equal(resolve(&b, 3, reg, 2), 3000);
    assert_int_equal(s1.calls, 1);
    assert_int_equal(s1.attempts, 3);
    assert_string_equal(s1.type, "linear");
    assert_string_equal(s1.reason, "why");

    b = make("capped", 0, 0);
    assert_int_equal(resolve(&b, 2, reg, 2), 2000);
    assert_int_equal(s2.calls, 1);
    /* without the registry the built-in capped answers */
    assert_int_equal(resolve(&b, 2, NULL, 0), 2000); /* rnd 0: ceiling 4000 / 2 */

    /* fixed / exponential are BullMQ's, never a registered strategy */
    b = make("fixed", 70, 0);
    assert_int_equal(resolve(&b, 5, reg, 2), 70);

    /* unknown type: an error naming it */
    b = make("quadratic", 1, 0);
    long long d = 0;
    assert_int_equal(ferry__backoff_resolve(&b, 1, 0.0, "r", NULL, reg, 2, &d, &e),
                     FERRY_ENOTFOUND);
    assert_non_null(strstr(e.message, "\"quadratic\""));
    ferry__backoff_registry_free(reg, 2);
}

static void test_custom_results_normalised(void **state) {
    (void)state;
    long long v = 0;
    ferry_backoff_strategy def = {"v", custom_value, &v};
    ferry__backoff_custom *reg = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry__backoff_registry_copy(&def, 1, &reg, &e), 0);
    ferry__backoff b = make("v", 0, 0);
    v = -1;
    assert_int_equal(resolve(&b, 1, reg, 1), -1); /* do not retry */
    v = -42;
    assert_int_equal(resolve(&b, 1, reg, 1), -1);
    v = 0;
    assert_int_equal(resolve(&b, 1, reg, 1), 0); /* retry at once */
    v = FERRY_BACKOFF_MAX_MS * 4;
    assert_int_equal(resolve(&b, 1, reg, 1), FERRY_BACKOFF_MAX_MS);
    v = 1234;
    assert_int_equal(resolve(&b, 1, reg, 1), 1234);
    ferry__backoff_registry_free(reg, 1);
}

static void expect_bad_registry(const ferry_backoff_strategy *s, size_t n, const char *needle) {
    ferry__backoff_custom *reg = (ferry__backoff_custom *)1;
    ferry_error e = {0};
    assert_int_equal(ferry__backoff_registry_copy(s, n, &reg, &e), FERRY_EINVAL);
    assert_null(reg);
    if (!strstr(e.message, needle)) fail_msg("message '%s' lacks '%s'", e.message, needle);
}

static void test_registry_validation(void **state) {
    (void)state;
    long long v = 0;
    ferry_backoff_strategy ok = {"a", custom_value, &v};
    expect_bad_registry(NULL, 1, "NULL");
    ferry_backoff_strategy many[FERRY__BACKOFF_STRATEGIES_MAX + 1];
    char names[FERRY__BACKOFF_STRATEGIES_MAX + 1][8];
    for (int i = 0; i <= FERRY__BACKOFF_STRATEGIES_MAX; i++) {
        snprintf(names[i], sizeof names[i], "s%d", i);
        many[i] = (ferry_backoff_strategy){names[i], custom_value, &v};
    }
    expect_bad_registry(many, FERRY__BACKOFF_STRATEGIES_MAX + 1, "at most 64");
    ferry__backoff_custom *reg = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry__backoff_registry_copy(many, FERRY__BACKOFF_STRATEGIES_MAX, &reg, &e),
                     0);
    ferry__backoff_registry_free(reg, FERRY__BACKOFF_STRATEGIES_MAX);

    ferry_backoff_strategy bad[2] = {ok, ok};
    expect_bad_registry(bad, 2, "registered twice");
    bad[1] = (ferry_backoff_strategy){"", custom_value, NULL};
    expect_bad_registry(bad, 2, "no name");
    bad[1] = (ferry_backoff_strategy){NULL, custom_value, NULL};
    expect_bad_registry(bad, 2, "no name");
    bad[1] = (ferry_backoff_strategy){"fixed", custom_value, NULL};
    expect_bad_registry(bad, 2, "built into BullMQ");
    bad[1] = (ferry_backoff_strategy){"exponential", custom_value, NULL};
    expect_bad_registry(bad, 2, "built into BullMQ");
    bad[1] = (ferry_backoff_strategy){"nofn", NULL, NULL};
    expect_bad_registry(bad, 2, "no function");
    char longname[FERRY__BACKOFF_NAME_MAX + 2];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    bad[1] = (ferry_backoff_strategy){longname, custom_value, NULL};
    expect_bad_registry(bad, 2, "at most 63");
    longname[FERRY__BACKOFF_NAME_MAX] = 0; /* exactly 63: fine */
    assert_int_equal(ferry__backoff_registry_copy(bad, 2, &reg, &e), 0);
    ferry__backoff_registry_free(reg, 2);
    /* none at all */
    reg = (ferry__backoff_custom *)1;
    assert_int_equal(ferry__backoff_registry_copy(NULL, 0, &reg, &e), 0);
    assert_null(reg);
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
        cmocka_unit_test(test_capped_formula),
        cmocka_unit_test(test_capped_bounds_and_cap),
        cmocka_unit_test(test_capped_builtin_uses_job_delay),
        cmocka_unit_test(test_lookup_order),
        cmocka_unit_test(test_custom_results_normalised),
        cmocka_unit_test(test_registry_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_numtext.c - numbers ferry writes (Redis arguments, stored JSON) and reads keep '.' as
 * the decimal separator when the host program switched to a locale that uses a comma
 * (de_DE, compiled by the `locale.de_DE` CTest fixture into LOCPATH). */
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "queue/job_opts.h"
#include "util/numtext.h"

/* The comma locale, made current for this thread with uselocale (setlocale with LOCPATH
 * keeps a path string glibc never frees, which LeakSanitizer reports). */
static locale_t comma;

static int setup(void **state) {
    (void)state;
    comma = newlocale(LC_NUMERIC_MASK, "de_DE.UTF-8", (locale_t)0);
    if (!comma || !uselocale(comma)) {
        fprintf(stderr, "locale de_DE.UTF-8 not found (LOCPATH=%s)\n",
                getenv("LOCPATH") ? getenv("LOCPATH") : "(unset)");
        return -1;
    }
    /* the premise: this locale really writes a comma */
    char t[16];
    snprintf(t, sizeof t, "%.1f", 0.5);
    if (strcmp(t, "0,5") != 0) return -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    uselocale(LC_GLOBAL_LOCALE);
    if (comma) freelocale(comma);
    return 0;
}

static void test_format(void **state) {
    (void)state;
    char b[40];
    assert_int_equal(ferryx_fmt_g(b, sizeof b, 17, 0.5), 3);
    assert_string_equal(b, "0.5");
    ferryx_fmt_g(b, sizeof b, 17, 60.0000001);
    assert_string_equal(b, "60.000000100000001");
    ferryx_fmt_g(b, sizeof b, 17, 1e-9);
    assert_string_equal(b, "1.0000000000000001e-09");
    ferryx_fmt_g(b, sizeof b, 17, 3600);
    assert_string_equal(b, "3600");
    ferryx_fmt_g(b, sizeof b, 15, -2.25);
    assert_string_equal(b, "-2.25");
}

static void test_parse(void **state) {
    (void)state;
    char *end;
    const char *s = "1.5 tail";
    double d = ferryx_strtod_c(s, &end);
    assert_true(d == 1.5);
    assert_ptr_equal(end, s + 3);
    assert_true(ferryx_strtod_c("1764470000000.25", NULL) == 1764470000000.25);
    assert_true(ferryx_strtod_c("42", NULL) == 42);
    s = "x";
    ferryx_strtod_c(s, &end);
    assert_ptr_equal(end, s);
}

/* opts JSON ferry stores keeps '.' (Node reads it), and a Node-written fraction reads back */
static void test_job_opts_json(void **state) {
    (void)state;
    ferry__job_opts o;
    assert_int_equal(ferry__job_opts_parse("{\"removeOnFail\":{\"age\":0.5},\"backoff\":"
                                           "{\"type\":\"exponential\",\"delay\":100,"
                                           "\"jitter\":0.25}}",
                                           &o, NULL),
                     0);
    assert_true(o.remove_on_fail.age_s == 0.5);
    assert_non_null(strstr(o.stored_json, "\"age\":0.5"));
    assert_non_null(strstr(o.stored_json, "\"jitter\":0.25"));
    ferry__job_opts_free(&o);
    ferry__job_opts_from_stored("{\"removeOnComplete\":{\"age\":\"1.5\"}}", &o);
    assert_true(o.remove_on_complete.age_s == 1.5);
    ferry__job_opts_free(&o);
}

/* Whole numbers from doubles: truncation, clamping at both bounds (including a bound that
 * is not exactly representable as a double), NaN and infinities. UBSan fails this on any
 * out-of-range cast. */
/* ferryx_js_number against what Node's Number() gives for the same strings (checked with
 * node -e 'Number(s)' on Node 20). */
static void test_js_number(void **state) {
    (void)state;
    static const struct {
        const char *s;
        double want; /* NAN for NaN */
    } cases[] = {
        {"", 0},
        {" 12 ", 12},
        {"0x1F", 31},
        {"0b101", 5},
        {"0o17", 15},
        {"1e3", 1000},
        {"inf", NAN},
        {"1_0", NAN},
        {".5", 0.5},
        {"5.", 5},
        {"+-1", NAN},
        {"0x", NAN},
        {"1e", NAN},
        {"-0x10", NAN},
        {"1.0000000000000000001", 1},
        {"\xc2\xa0 7\xe3\x80\x80", 7}, /* U+00A0, U+3000 */
        {"\xe2\x80\xaf"
         "3",
         3}, /* U+202F */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double got = ferryx_js_number(cases[i].s, strlen(cases[i].s));
        if (isnan(cases[i].want) ? !isnan(got) : got != cases[i].want)
            fail_msg("Number(\"%s\"): got %g, want %g", cases[i].s, got, cases[i].want);
    }
    assert_true(isinf(ferryx_js_number("-Infinity", 9)) && ferryx_js_number("-Infinity", 9) < 0);
    /* n bytes, not up to NUL: "12" of "123" */
    assert_true(ferryx_js_number("123", 2) == 12);
    /* a literal longer than the stack copy: 300 digits */
    char big[301];
    memset(big, '1', 300);
    big[300] = '\0';
    assert_true(ferryx_js_number(big, 300) == ferryx_strtod_c(big, NULL));
}

static void test_clamp_ll(void **state) {
    (void)state;
    assert_int_equal(ferryx_clamp_ll(41.9, 0, 100), 41);
    assert_int_equal(ferryx_clamp_ll(-41.9, -100, 100), -41);
    assert_int_equal(ferryx_clamp_ll(-0.5, 0, 100), 0);
    assert_int_equal(ferryx_clamp_ll(1e300, 0, 100), 100);
    assert_int_equal(ferryx_clamp_ll(-1e300, -7, 100), -7);
    assert_int_equal(ferryx_clamp_ll(0.0 / 0.0, -7, 100), 0);
    assert_int_equal(ferryx_clamp_ll(0.0 / 0.0, 5, 100), 5);
    assert_int_equal(ferryx_clamp_ll(1.0 / 0.0, 0, 9007199254740991LL), 9007199254740991LL);
    assert_int_equal(ferryx_clamp_ll(-1.0 / 0.0, -9007199254740991LL, 0), -9007199254740991LL);
    assert_true(ferryx_clamp_ll(2e27, INT64_MIN, INT64_MAX) == INT64_MAX);
    assert_true(ferryx_clamp_ll(9.2233720368547758e18, 0, INT64_MAX) == INT64_MAX);
    assert_true(ferryx_clamp_ll(-9.2233720368547758e18, INT64_MIN, 0) == INT64_MIN);
    assert_true(ferryx_clamp_ll(9007199254740993.0, 0, 9007199254740991LL) == 9007199254740991LL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_job_opts_json), cmocka_unit_test(test_clamp_ll),
        cmocka_unit_test(test_js_number),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_http_classify.c - HTTP status classification, Retry-After parsing and the HTTP-date
 * parser (src/worker/http_classify.c, src/util/httpdate.c). Expected instants were
 * computed independently (Python calendar.timegm) and are cross-checked against glibc
 * timegm() for a wide range of dates. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ferry/http_classify.h"
#include "util/httpdate.h"

#define DAY_MS 86400000LL
#define T1994 784111777000LL  /* Sun, 06 Nov 1994 08:49:37 GMT */
#define Y2030 1893456000000LL /* 2030-01-01 00:00:00 GMT */
#define Y2050 2524608000000LL /* 2050-01-01 00:00:00 GMT */

/* ---- helpers ---------------------------------------------------------------------- */

static long long hint(const char *v, long long now_ms) {
    long long d = -12345;
    if (ferry_retry_after_parse(v, now_ms, &d) != 0) fail_msg("no hint from '%s'", v);
    if (d < 0 || d > FERRY_RETRY_AFTER_MAX_MS) fail_msg("'%s': delay %lld out of range", v, d);
    return d;
}

static void no_hint(const char *v, long long now_ms) {
    long long d = -12345;
    if (ferry_retry_after_parse(v, now_ms, &d) != FERRY_EINVAL)
        fail_msg("'%s' gave a hint (%lld)", v ? v : "(null)", d);
    assert_int_equal(d, -12345); /* untouched */
}

static int64_t date_ok(const char *s, int64_t now_ms) {
    int64_t out = 0;
    if (ferry__httpdate_parse(s, strlen(s), now_ms, &out) != 0) fail_msg("date '%s' rejected", s);
    return out;
}

static void date_bad(const char *s) {
    int64_t out = 42;
    if (ferry__httpdate_parse(s, strlen(s), Y2030, &out) == 0)
        fail_msg("date '%s' accepted as %lld", s, (long long)out);
    assert_int_equal(out, 42);
}

static void verdict(int status, const char *ra, long long now_ms, ferry_http_class cls,
                    long long delay) {
    ferry_http_verdict v = ferry_http_classify(status, ra, now_ms);
    if (v.cls != cls || v.delay_ms != delay)
        fail_msg("status %d retry-after '%s': got %s/%lld, want %s/%lld", status,
                 ra ? ra : "(null)", ferry_http_class_name(v.cls), v.delay_ms,
                 ferry_http_class_name(cls), delay);
}

/* ---- classification --------------------------------------------------------------- */

static void test_success(void **state) {
    (void)state;
    verdict(200, NULL, T1994, FERRY_HTTP_OK, 0);
    verdict(201, "120", T1994, FERRY_HTTP_OK, 0); /* Retry-After ignored on success */
    verdict(204, NULL, T1994, FERRY_HTTP_OK, 0);
    verdict(299, NULL, T1994, FERRY_HTTP_OK, 0);
}

static void test_throttled(void **state) {
    (void)state;
    verdict(429, "120", T1994, FERRY_HTTP_THROTTLED, 120000);
    verdict(429, NULL, T1994, FERRY_HTTP_THROTTLED, FERRY_THROTTLE_DEFAULT_MS);
    verdict(429, "", T1994, FERRY_HTTP_THROTTLED, 10000);
    verdict(429, "soon", T1994, FERRY_HTTP_THROTTLED, 10000);
    verdict(429, "1.5", T1994, FERRY_HTTP_THROTTLED, 10000);
    verdict(429, "0", T1994, FERRY_HTTP_THROTTLED, 0); /* the server said: now */
    verdict(429, "Sun, 06 Nov 1994 08:50:37 GMT", T1994, FERRY_HTTP_THROTTLED, 60000);
    verdict(429, "Sun, 06 Nov 1994 08:49:36 GMT", T1994, FERRY_HTTP_THROTTLED, 0); /* past */
    verdict(429, "999999999", T1994, FERRY_HTTP_THROTTLED, FERRY_RETRY_AFTER_MAX_MS);
}

static void test_retry_later_or_transient(void **state) {
    (void)state;
    static const int codes[] = {408, 500, 501, 502, 503, 504, 599};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        int s = codes[i];
        verdict(s, "5", T1994, FERRY_HTTP_RETRY_LATER, 5000);
        verdict(s, " 30 ", T1994, FERRY_HTTP_RETRY_LATER, 30000);
        verdict(s, "Sun Nov  6 08:49:47 1994", T1994, FERRY_HTTP_RETRY_LATER, 10000);
        verdict(s, "Sunday, 06-Nov-94 08:49:37 GMT", T1994, FERRY_HTTP_RETRY_LATER, 0);
        verdict(s, NULL, T1994, FERRY_HTTP_TRANSIENT, 0);
        verdict(s, "", T1994, FERRY_HTTP_TRANSIENT, 0);
        verdict(s, "later", T1994, FERRY_HTTP_TRANSIENT, 0);
        verdict(s, "-5", T1994, FERRY_HTTP_TRANSIENT, 0);
    }
}

static void test_permanent(void **state) {
    (void)state;
    static const int codes[] = {400, 401, 403, 404, 405, 409, 410, 413, 422, 451, 499};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        verdict(codes[i], NULL, T1994, FERRY_HTTP_PERMANENT, 0);
        verdict(codes[i], "60", T1994, FERRY_HTTP_PERMANENT, 0); /* hint does not matter */
    }
    /* informational, redirects and invalid codes: retrying cannot change them */
    static const int odd[] = {100, 101, 103, 199, 300, 301, 302, 304,     307,
                              308, 399, 1,   99,  600, 999, -1,  INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
        verdict(odd[i], "60", T1994, FERRY_HTTP_PERMANENT, 0);
}

static void test_no_response_is_transient(void **state) {
    (void)state;
    verdict(0, NULL, T1994, FERRY_HTTP_TRANSIENT, 0);
    verdict(0, "60", T1994, FERRY_HTTP_TRANSIENT, 0);
}

static void test_class_names(void **state) {
    (void)state;
    assert_string_equal(ferry_http_class_name(FERRY_HTTP_OK), "ok");
    assert_string_equal(ferry_http_class_name(FERRY_HTTP_TRANSIENT), "transient");
    assert_string_equal(ferry_http_class_name(FERRY_HTTP_RETRY_LATER), "retry-later");
    assert_string_equal(ferry_http_class_name(FERRY_HTTP_THROTTLED), "throttled");
    assert_string_equal(ferry_http_class_name(FERRY_HTTP_PERMANENT), "permanent");
    assert_string_equal(ferry_http_class_name((ferry_http_class)99), "unknown");
    assert_string_equal(ferry_http_class_name((ferry_http_class)-1), "unknown");
}

static void test_now_variants(void **state) {
    (void)state;
    /* Independent of the clock: delta-seconds, and dates far in the past or future. */
    ferry_http_verdict v = ferry_http_classify_now(503, "7");
    assert_int_equal(v.cls, FERRY_HTTP_RETRY_LATER);
    assert_int_equal(v.delay_ms, 7000);
    v = ferry_http_classify_now(429, "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_int_equal(v.cls, FERRY_HTTP_THROTTLED);
    assert_int_equal(v.delay_ms, 0);
    long long d = -1;
    assert_int_equal(ferry_retry_after_parse_now("Fri, 31 Dec 9999 23:59:59 GMT", &d), 0);
    assert_int_equal(d, FERRY_RETRY_AFTER_MAX_MS);
    assert_int_equal(ferry_retry_after_parse_now("x", &d), FERRY_EINVAL);
}

/* ---- Retry-After: delta-seconds ------------------------------------------------------ */

static void test_delta_seconds(void **state) {
    (void)state;
    assert_int_equal(hint("0", 0), 0);
    assert_int_equal(hint("1", 0), 1000);
    assert_int_equal(hint("120", 0), 120000);
    assert_int_equal(hint("007", 0), 7000);
    assert_int_equal(hint("86399", 0), 86399000);
    assert_int_equal(hint("86400", 0), FERRY_RETRY_AFTER_MAX_MS);
    assert_int_equal(hint("86401", 0), FERRY_RETRY_AFTER_MAX_MS);
    assert_int_equal(hint("9223372036854775807", 0), FERRY_RETRY_AFTER_MAX_MS);
    assert_int_equal(hint("99999999999999999999999999999999", 0), FERRY_RETRY_AFTER_MAX_MS);
    /* delta-seconds do not depend on now */
    assert_int_equal(hint("5", LLONG_MIN), 5000);
    assert_int_equal(hint("5", LLONG_MAX), 5000);
    /* only testing the value */
    assert_int_equal(ferry_retry_after_parse("5", 0, NULL), 0);
    assert_int_equal(ferry_retry_after_parse("x", 0, NULL), FERRY_EINVAL);
}

static void test_whitespace(void **state) {
    (void)state;
    assert_int_equal(hint("  120", 0), 120000);
    assert_int_equal(hint("120  ", 0), 120000);
    assert_int_equal(hint("\t120\t", 0), 120000);
    assert_int_equal(hint("120\r\n", 0), 120000); /* raw header line tail */
    assert_int_equal(hint("  Sun, 06 Nov 1994 08:49:40 GMT\r\n", T1994), 3000);
    no_hint("1 2", 0);
    no_hint("12\v", 0); /* only SP, HTAB, CR, LF are trimmed */
    no_hint("\f12", 0);
}

static void test_garbage(void **state) {
    (void)state;
    no_hint(NULL, 0);
    no_hint("", 0);
    no_hint(" ", 0);
    no_hint(" \t\r\n", 0);
    no_hint("+5", 0);
    no_hint("-5", 0);
    no_hint("-0", 0);
    no_hint("5.0", 0);
    no_hint("5.", 0);
    no_hint(".5", 0);
    no_hint("5s", 0);
    no_hint("5e3", 0);
    no_hint("0x10", 0);
    no_hint("1,000", 0);
    no_hint("\xd9\xa1", 0); /* ARABIC-INDIC DIGIT ONE */
    no_hint("Infinity", 0);
    no_hint("NaN", 0);
    no_hint("tomorrow", 0);
    no_hint("1994-11-06T08:49:37Z", 0); /* ISO 8601 is not an HTTP-date */
    no_hint("Sun, 06 Nov 1994 08:49:37 UTC", 0);
    no_hint("Sun, 06 Nov 1994 08:49:37 +0000", 0);
    no_hint("Sun, 06 Nov 1994 08:49:37", 0);
}

static void test_length_limit(void **state) {
    (void)state;
    char buf[FERRY_RETRY_AFTER_MAX_LEN + 2];
    memset(buf, '9', FERRY_RETRY_AFTER_MAX_LEN);
    buf[FERRY_RETRY_AFTER_MAX_LEN] = '\0';
    assert_int_equal(hint(buf, 0), FERRY_RETRY_AFTER_MAX_MS); /* exactly at the limit */
    buf[FERRY_RETRY_AFTER_MAX_LEN] = '9';
    buf[FERRY_RETRY_AFTER_MAX_LEN + 1] = '\0';
    no_hint(buf, 0); /* one over: rejected, not truncated */

    /* whitespace counts toward the limit */
    memset(buf, ' ', FERRY_RETRY_AFTER_MAX_LEN + 1);
    buf[0] = '5';
    buf[FERRY_RETRY_AFTER_MAX_LEN + 1] = '\0';
    no_hint(buf, 0);
    buf[FERRY_RETRY_AFTER_MAX_LEN] = '\0';
    assert_int_equal(hint(buf, 0), 5000);
}

/* ---- Retry-After: dates --------------------------------------------------------------- */

static void test_date_delay(void **state) {
    (void)state;
    const char *imf = "Sun, 06 Nov 1994 08:49:37 GMT";
    assert_int_equal(hint(imf, T1994 - 60000), 60000);
    assert_int_equal(hint(imf, T1994 - 1), 1);
    assert_int_equal(hint(imf, T1994), 0);
    assert_int_equal(hint(imf, T1994 + 1), 0);
    assert_int_equal(hint(imf, T1994 + 100 * 365 * DAY_MS), 0);
    assert_int_equal(hint(imf, T1994 - DAY_MS), DAY_MS);
    assert_int_equal(hint(imf, T1994 - DAY_MS - 1), FERRY_RETRY_AFTER_MAX_MS); /* clamped */
    /* any now_ms, however absurd, must not overflow */
    assert_int_equal(hint(imf, LLONG_MIN), FERRY_RETRY_AFTER_MAX_MS);
    assert_int_equal(hint(imf, LLONG_MAX), 0);
    assert_int_equal(hint(imf, -1), FERRY_RETRY_AFTER_MAX_MS);
    assert_int_equal(hint("Sat, 01 Jan 0000 00:00:00 GMT", LLONG_MIN), FERRY_RETRY_AFTER_MAX_MS);
    assert_int_equal(hint("Fri, 31 Dec 9999 23:59:60 GMT", LLONG_MAX), 0);
}

static void test_three_formats(void **state) {
    (void)state;
    assert_int_equal(date_ok("Sun, 06 Nov 1994 08:49:37 GMT", Y2030), T1994);
    assert_int_equal(date_ok("Sunday, 06-Nov-94 08:49:37 GMT", Y2030), T1994);
    assert_int_equal(date_ok("Sun Nov  6 08:49:37 1994", Y2030), T1994);
    assert_int_equal(date_ok("Sun Nov 06 08:49:37 1994", Y2030), T1994);
    assert_int_equal(date_ok("Thu Jan  1 00:00:00 1970", Y2030), 0);
    assert_int_equal(date_ok("Thu, 01 Jan 1970 00:00:00 GMT", Y2030), 0);
    assert_int_equal(date_ok("Wed, 31 Dec 1969 23:59:59 GMT", Y2030), -1000);
    assert_int_equal(date_ok("Sat, 01 Jan 0000 00:00:00 GMT", Y2030), -62167219200000LL);
    assert_int_equal(date_ok("Fri, 31 Dec 9999 23:59:60 GMT", Y2030), FERRY_HTTPDATE_MAX_MS);
    /* every month name */
    static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int m = 0; m < 12; m++) {
        char s[64];
        snprintf(s, sizeof s, "Mon, 15 %s 2021 12:00:00 GMT", mon[m]);
        struct tm tm = {.tm_year = 121, .tm_mon = m, .tm_mday = 15, .tm_hour = 12};
        assert_int_equal(date_ok(s, Y2030), (int64_t)timegm(&tm) * 1000);
    }
    /* every day name in each format (weekday is not checked against the date) */
    static const char *const ds[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
    static const char *const dl[] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                     "Friday", "Saturday", "Sunday"};
    for (int i = 0; i < 7; i++) {
        char s[64];
        snprintf(s, sizeof s, "%s, 06 Nov 1994 08:49:37 GMT", ds[i]);
        assert_int_equal(date_ok(s, Y2030), T1994);
        snprintf(s, sizeof s, "%s, 06-Nov-94 08:49:37 GMT", dl[i]);
        assert_int_equal(date_ok(s, Y2030), T1994);
        snprintf(s, sizeof s, "%s Nov  6 08:49:37 1994", ds[i]);
        assert_int_equal(date_ok(s, Y2030), T1994);
    }
}

static void test_leap_days_and_invalid_dates(void **state) {
    (void)state;
    assert_int_equal(date_ok("Thu, 29 Feb 2024 00:00:00 GMT", Y2030), 1709164800000LL);
    assert_int_equal(date_ok("Tue, 29 Feb 2000 12:00:00 GMT", Y2030), 951825600000LL);
    assert_int_equal(date_ok("Thu Feb 29 00:00:00 2024", Y2030), 1709164800000LL);
    assert_int_equal(date_ok("Thursday, 29-Feb-24 00:00:00 GMT", Y2030), 1709164800000LL);
    assert_int_equal(date_ok("Sat, 29 Feb 0000 00:00:00 GMT", Y2030),
                     -62167219200000LL + 59 * DAY_MS);
    date_bad("Wed, 29 Feb 2023 00:00:00 GMT"); /* not a leap year */
    date_bad("Thu, 29 Feb 1900 00:00:00 GMT"); /* century rule */
}

static void test_invalid_fields(void **state) {
    (void)state;
    date_bad("Sun, 30 Feb 2020 00:00:00 GMT");
    date_bad("Sun, 31 Apr 2020 00:00:00 GMT");
    date_bad("Sun, 31 Jun 2020 00:00:00 GMT");
    date_bad("Sun, 31 Sep 2020 00:00:00 GMT");
    date_bad("Sun, 31 Nov 2020 00:00:00 GMT");
    date_bad("Sun, 00 Jan 2020 00:00:00 GMT");
    date_bad("Sun, 32 Jan 2020 00:00:00 GMT");
    date_bad("Sun, 06 Foo 1994 08:49:37 GMT");
    date_bad("Sun, 06 Nov 1994 24:00:00 GMT");
    date_bad("Sun, 06 Nov 1994 23:60:00 GMT");
    date_bad("Sun, 06 Nov 1994 23:59:61 GMT");
    date_bad("Sun Nov  0 08:49:37 1994");
    date_bad("Sun Feb 30 08:49:37 1994");
    /* a leap second is accepted and lands on the next minute */
    assert_int_equal(date_ok("Sat, 31 Dec 2016 23:59:60 GMT", Y2030),
                     date_ok("Sun, 01 Jan 2017 00:00:00 GMT", Y2030));
}

static void test_strict_format(void **state) {
    (void)state;
    date_bad("");
    date_bad("Sun");
    date_bad("Sun, 06 Nov 1994 08:49:37 UTC");
    date_bad("Sun, 06 Nov 1994 08:49:37 gmt");
    date_bad("sun, 06 Nov 1994 08:49:37 GMT"); /* case-sensitive (RFC 9110 §5.6.7) */
    date_bad("Sun, 06 nov 1994 08:49:37 GMT");
    date_bad("Sun, 06 NOV 1994 08:49:37 GMT");
    date_bad("SUN, 06 Nov 1994 08:49:37 GMT");
    date_bad("sunday, 06-Nov-94 08:49:37 GMT");
    date_bad("Sun nov  6 08:49:37 1994");
    date_bad("Sun, 6 Nov 1994 08:49:37 GMT"); /* IMF day is 2DIGIT */
    date_bad("Sun, 06 Nov 94 08:49:37 GMT");  /* IMF year is 4DIGIT */
    date_bad("Sun, 06 Nov 01994 08:49:37 GMT");
    date_bad("Sun, 06 Nov 1994 8:49:37 GMT");
    date_bad("Sun, 06 Nov 1994 08:49:37 GMT "); /* inner parser: no whitespace */
    date_bad(" Sun, 06 Nov 1994 08:49:37 GMT");
    date_bad("Sun,  06 Nov 1994 08:49:37 GMT");
    date_bad("Sun,06 Nov 1994 08:49:37 GMT");
    date_bad("Sun, 06-Nov-1994 08:49:37 GMT");
    date_bad("Sunday, 06 Nov 1994 08:49:37 GMT"); /* long day name in IMF */
    date_bad("Sun, 06-Nov-94 08:49:37 GMT");      /* short day name in RFC 850 */
    date_bad("Sunday, 06-Nov-1994 08:49:37 GMT");
    date_bad("Sunday, 6-Nov-94 08:49:37 GMT");
    date_bad("Sun Nov 6 08:49:37 1994"); /* asctime: SP DIGIT or 2DIGIT */
    date_bad("Sun Nov   6 08:49:37 1994");
    date_bad("Sun Nov  6 08:49:37 94");
    date_bad("Sun Nov  6 08:49:37 1994 GMT");
    date_bad("Sun, Nov  6 08:49:37 1994");
    date_bad("Sun Nov  6 08:49:37 1994\n");
    date_bad("Sun, 06 Nov 1994 08:49:37 GMTx");
    date_bad("Sun, 0x Nov 1994 08:49:37 GMT");
    date_bad("Sun, -6 Nov 1994 08:49:37 GMT");
    date_bad("Sun, +6 Nov 1994 08:49:37 GMT");

    /* a NUL inside the measured length is not the end of the text */
    static const char nul[] = "Sun, 06 Nov 1994 08:49:37 GMT\0";
    int64_t out;
    assert_int_equal(ferry__httpdate_parse(nul, sizeof nul - 1, Y2030, &out), -1);
    /* a length shorter than the text cuts it */
    assert_int_equal(ferry__httpdate_parse(nul, 10, Y2030, &out), -1);
    assert_int_equal(ferry__httpdate_parse(NULL, 0, Y2030, &out), -1);
    assert_int_equal(ferry__httpdate_parse(nul, sizeof nul - 2, Y2030, NULL), -1);
}

/* RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is the previous century. */
static void test_rfc850_two_digit_year(void **state) {
    (void)state;
    const char *d94 = "Sunday, 06-Nov-94 08:49:37 GMT";
    assert_int_equal(date_ok(d94, T1994), T1994);
    assert_int_equal(date_ok(d94, Y2030), T1994);           /* 2094 is 64 years ahead */
    assert_int_equal(date_ok(d94, Y2050), 3939871777000LL); /* 2094 is 44 years ahead */
    struct tm t2043 = {.tm_year = 143, .tm_mon = 11, .tm_mday = 31, .tm_hour = 23};
    struct tm t2044 = {.tm_year = 144, .tm_mday = 1};
    assert_int_equal(date_ok(d94, (int64_t)timegm(&t2043) * 1000), T1994);           /* 51 years */
    assert_int_equal(date_ok(d94, (int64_t)timegm(&t2044) * 1000), 3939871777000LL); /* 50 */
    /* near the end of a century the next one is closer */
    struct tm t2099 = {.tm_year = 199, .tm_mon = 5, .tm_mday = 1};
    int64_t now2099 = (int64_t)timegm(&t2099) * 1000;
    assert_int_equal(date_ok("Saturday, 01-Jan-01 00:00:00 GMT", now2099), 4133980800000LL);
    struct tm t2149 = {.tm_year = 249, .tm_mday = 1};
    assert_int_equal(date_ok("Friday, 01-Jan-49 00:00:00 GMT", now2099),
                     (int64_t)timegm(&t2149) * 1000); /* exactly 50 years ahead */
    struct tm t2050 = {.tm_year = 150, .tm_mday = 1};
    assert_int_equal(date_ok("Saturday, 01-Jan-50 00:00:00 GMT", now2099),
                     (int64_t)timegm(&t2050) * 1000); /* 49 years back */
    /* the leap rule applies to the resolved year: 00 is 2000 (leap) against 2030 */
    assert_int_equal(date_ok("Tuesday, 29-Feb-00 00:00:00 GMT", Y2030), 951782400000LL);
    /* ...and 2100 (not leap) against 2099 */
    int64_t out;
    const char *feb29 = "Monday, 29-Feb-00 00:00:00 GMT";
    assert_int_equal(ferry__httpdate_parse(feb29, strlen(feb29), now2099, &out), -1);
    /* now_ms outside [0, year 9999] cannot resolve a two-digit year */
    assert_int_equal(ferry__httpdate_parse(d94, strlen(d94), -1, &out), -1);
    assert_int_equal(ferry__httpdate_parse(d94, strlen(d94), FERRY_HTTPDATE_MAX_MS + 1, &out), -1);
    assert_int_equal(ferry__httpdate_parse(d94, strlen(d94), 0, &out), 0);
    assert_int_equal(out, T1994); /* against 1970: 1994 is 24 years ahead */
    /* at the latest now_ms (year 10000) 49 resolves to 10049, past four digits: rejected,
     * keeping the documented bound; 94 resolves to 9994 */
    const char *d49 = "Sunday, 06-Nov-49 08:49:37 GMT";
    assert_int_equal(ferry__httpdate_parse(d49, strlen(d49), FERRY_HTTPDATE_MAX_MS, &out), -1);
    assert_int_equal(ferry__httpdate_parse(d94, strlen(d94), FERRY_HTTPDATE_MAX_MS, &out), 0);
    assert_int_equal(out, date_ok("Sun, 06 Nov 9994 08:49:37 GMT", Y2030));
    no_hint(d94, -1);
}

static void test_year_2038_and_beyond(void **state) {
    (void)state;
    assert_int_equal(date_ok("Tue, 19 Jan 2038 03:14:08 GMT", Y2030), 2147483648000LL);
    assert_int_equal(date_ok("Sun, 07 Feb 2106 06:28:16 GMT", Y2030), 4294967296000LL);
    assert_int_equal(hint("Tue, 19 Jan 2038 03:14:08 GMT", 2147483648000LL - 5000), 5000);
    assert_int_equal(hint("Sun Feb  7 06:28:16 2106", 4294967296000LL - 90000), 90000);
    assert_int_equal(hint("Fri, 31 Dec 9999 23:59:59 GMT", Y2030), FERRY_RETRY_AFTER_MAX_MS);
}

/* days_from_civil against glibc timegm (UTC, no TZ involved) over 1900-2400, and the
 * inverse over the whole four-digit range. */
static void test_calendar_arithmetic(void **state) {
    (void)state;
    for (int y = 1900; y <= 2400; y++) {
        for (int m = 1; m <= 12; m++) {
            struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = 1};
            int64_t want = (int64_t)timegm(&tm) / 86400;
            if (ferry__days_from_civil(y, m, 1) != want)
                fail_msg("days_from_civil(%d,%d,1) = %lld, timegm says %lld", y, m,
                         (long long)ferry__days_from_civil(y, m, 1), (long long)want);
        }
    }
    for (int64_t y = 0; y <= 10000; y++) {
        int64_t first = ferry__days_from_civil(y, 1, 1);
        int64_t last = ferry__days_from_civil(y, 12, 31);
        assert_int_equal(last - first, 364 + ferry__is_leap_year(y));
        assert_int_equal(ferry__year_from_days(first), y);
        assert_int_equal(ferry__year_from_days(last), y);
        assert_int_equal(ferry__year_from_days(first - 1), y - 1);
    }
    assert_int_equal(ferry__days_from_civil(1970, 1, 1), 0);
    assert_int_equal(ferry__year_from_days(-1), 1969);
    assert_true(ferry__is_leap_year(2000));
    assert_false(ferry__is_leap_year(1900));
    assert_true(ferry__is_leap_year(2024));
    assert_false(ferry__is_leap_year(2023));
    assert_true(ferry__is_leap_year(0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success),
        cmocka_unit_test(test_throttled),
        cmocka_unit_test(test_retry_later_or_transient),
        cmocka_unit_test(test_permanent),
        cmocka_unit_test(test_no_response_is_transient),
        cmocka_unit_test(test_class_names),
        cmocka_unit_test(test_now_variants),
        cmocka_unit_test(test_delta_seconds),
        cmocka_unit_test(test_whitespace),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_length_limit),
        cmocka_unit_test(test_date_delay),
        cmocka_unit_test(test_three_formats),
        cmocka_unit_test(test_leap_days_and_invalid_dates),
        cmocka_unit_test(test_invalid_fields),
        cmocka_unit_test(test_strict_format),
        cmocka_unit_test(test_rfc850_two_digit_year),
        cmocka_unit_test(test_year_2038_and_beyond),
        cmocka_unit_test(test_calendar_arithmetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

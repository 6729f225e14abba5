/* test_cron.c - cron expressions (src/sched/cron.c): next run times checked against values
 * computed by cron-parser 5.10.3 itself (the version Node BullMQ 6.7.0 uses), in UTC and
 * across DST changes, plus parse errors. The expected millis were produced by running
 * CronExpressionParser.parse(pattern, {tz, currentDate}).next() in Node, one call per step
 * starting from the previous result, the way a scheduler chains its iterations; the
 * comment above each case shows the results as wall times in the case's zone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/cron.h"

typedef struct cron_case {
    const char *pattern;
    const char *tz;
    long long after;
    int n;
    long long next[9];
} cron_case;

static void check_cases(const cron_case *cases, size_t count) {
    for (size_t i = 0; i < count; i++) {
        const cron_case *k = &cases[i];
        ferry__cron *c = NULL;
        ferry_error e = {0};
        if (ferry__cron_parse(k->pattern, &c, &e) != 0)
            fail_msg("parse '%s': %s", k->pattern, e.message);
        long long cur = k->after;
        for (int j = 0; j < k->n; j++) {
            long long next = -1;
            int rc = ferry__cron_next(c, k->tz, cur, &next, &e);
            if (rc != 0)
                fail_msg("'%s' [%s] after %lld: %s", k->pattern, k->tz ? k->tz : "UTC", cur,
                         e.message);
            if (next != k->next[j])
                fail_msg("'%s' [%s] step %d after %lld: got %lld, cron-parser gives %lld",
                         k->pattern, k->tz ? k->tz : "UTC", j, cur, next, k->next[j]);
            cur = next;
        }
        ferry__cron_free(c);
    }
}

/* Plain schedules in UTC: fields, names, steps, lists, L, #, seconds, predefined. */
/* clang-format off */
static const cron_case utc_cases[] = {
    /* 01-01 00:05:00 +00:00, 01-01 00:10:00 +00:00, 01-01 00:15:00 +00:00 */
    {"*/5 * * * *", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 3, {1767225900000LL, 1767226200000LL, 1767226500000LL}},
    /* 01-02 00:00:00 +00:00, 01-03 00:00:00 +00:00 */
    {"0 0 * * *", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 2, {1767312000000LL, 1767398400000LL}},
    /* 01-05 09:00:00 +00:00, 01-06 09:00:00 +00:00, 01-07 09:00:00 +00:00 */
    {"0 9 * * 1-5", NULL, 1767348000000LL /* 2026-01-02T10:00:00Z */, 3, {1767603600000LL, 1767690000000LL, 1767776400000LL}},
    /* 04-01 00:00:00 +00:00, 07-01 00:00:00 +00:00, 10-01 00:00:00 +00:00 */
    {"0 0 1 */3 *", NULL, 1770681600000LL /* 2026-02-10T00:00:00Z */, 3, {1775001600000LL, 1782864000000LL, 1790812800000LL}},
    /* 01-15 04:30:00 +00:00, 02-01 04:30:00 +00:00, 02-15 04:30:00 +00:00 */
    {"30 4 1,15 * *", NULL, 1767243600000LL /* 2026-01-01T05:00:00Z */, 3, {1768451400000LL, 1769920200000LL, 1771129800000LL}},
    /* 01-05 00:00:00 +00:00, 01-12 00:00:00 +00:00 */
    {"0 0 * * MON", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 2, {1767571200000LL, 1768176000000LL}},
    /* 01-04 00:00:00 +00:00, 01-11 00:00:00 +00:00 */
    {"0 0 * * 7", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 2, {1767484800000LL, 1768089600000LL}},
    /* 01-04 00:00:00 +00:00 */
    {"0 0 * * sun", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 1, {1767484800000LL}},
    /* 07-01 12:00:00 +00:00, 07-02 12:00:00 +00:00 */
    {"0 12 * JAN,jul *", NULL, 1769864400000LL /* 2026-01-31T13:00:00Z */, 2, {1782907200000LL, 1782993600000LL}},
    /* 02-29 00:00:00 +00:00, 02-29 00:00:00 +00:00 */
    {"0 0 29 2 *", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 2, {1835395200000LL, 1961625600000LL}},
    /* 02-06 00:00:00 +00:00, 02-13 00:00:00 +00:00, 02-20 00:00:00 +00:00, 02-27 00:00:00 +00:00 */
    {"0 0 13 * 5", NULL, 1769904000000LL /* 2026-02-01T00:00:00Z */, 4, {1770336000000LL, 1770940800000LL, 1771545600000LL, 1772150400000LL}},
    /* 01-01 00:00:20 +00:00, 01-01 00:00:40 +00:00, 01-01 00:01:00 +00:00, 01-01 00:01:20 +00:00 */
    {"*/20 * * * * *", NULL, 1767225600500LL /* 2026-01-01T00:00:00.500Z */, 4, {1767225620000LL, 1767225640000LL, 1767225660000LL, 1767225680000LL}},
    /* 01-01 10:30:45 +00:00, 01-02 10:30:15 +00:00, 01-02 10:30:45 +00:00 */
    {"15,45 30 10 * * *", NULL, 1767263415000LL /* 2026-01-01T10:30:15Z */, 3, {1767263445000LL, 1767349815000LL, 1767349845000LL}},
    /* 05-06 00:00:00 +00:00 */
    {"@daily", NULL, 1777982400000LL /* 2026-05-05T12:00:00Z */, 1, {1778025600000LL}},
    /* 05-05 13:00:00 +00:00 */
    {"@hourly", NULL, 1777982400000LL /* 2026-05-05T12:00:00Z */, 1, {1777986000000LL}},
    /* 05-10 00:00:00 +00:00 */
    {"@weekly", NULL, 1777982400000LL /* 2026-05-05T12:00:00Z */, 1, {1778371200000LL}},
    /* 06-01 00:00:00 +00:00 */
    {"@monthly", NULL, 1777982400000LL /* 2026-05-05T12:00:00Z */, 1, {1780272000000LL}},
    /* 01-01 00:00:00 +00:00 */
    {"@yearly", NULL, 1777982400000LL /* 2026-05-05T12:00:00Z */, 1, {1798761600000LL}},
    /* 05-11 00:00:00 +00:00, 05-12 00:00:00 +00:00 */
    {"@weekdays", NULL, 1778241600000LL /* 2026-05-08T12:00:00Z */, 2, {1778457600000LL, 1778544000000LL}},
    /* 05-11 00:00:00 +00:00, 05-12 00:00:00 +00:00 */
    {"0 0 ? * MON-FRI", NULL, 1778241600000LL /* 2026-05-08T12:00:00Z */, 2, {1778457600000LL, 1778544000000LL}},
    /* 01-31 00:00:00 +00:00, 02-28 00:00:00 +00:00, 03-31 00:00:00 +00:00 */
    {"0 0 L * *", NULL, 1768435200000LL /* 2026-01-15T00:00:00Z */, 3, {1769817600000LL, 1772236800000LL, 1774915200000LL}},
    /* 02-28 00:00:00 +00:00, 02-29 00:00:00 +00:00 */
    {"0 0 L 2 *", NULL, 1799971200000LL /* 2027-01-15T00:00:00Z */, 2, {1803772800000LL, 1835395200000LL}},
    /* 01-30 00:00:00 +00:00, 02-27 00:00:00 +00:00, 03-27 00:00:00 +00:00 */
    {"0 0 * * 5L", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 3, {1769731200000LL, 1772150400000LL, 1774569600000LL}},
    /* 01-16 00:00:00 +00:00, 02-20 00:00:00 +00:00, 03-20 00:00:00 +00:00 */
    {"0 0 * * FRI#3", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 3, {1768521600000LL, 1771545600000LL, 1773964800000LL}},
    /* 03-30 00:00:00 +00:00, 06-29 00:00:00 +00:00, 08-31 00:00:00 +00:00 */
    {"0 0 * * 1#5", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 3, {1774828800000LL, 1782691200000LL, 1788134400000LL}},
    /* 03-02 10:00:00 +00:00 */
    {"0 10 * * *", NULL, 1772359200000LL /* 2026-03-01T10:00:00Z */, 1, {1772445600000LL}},
    /* 03-01 10:00:00 +00:00 */
    {"0 10 * * *", NULL, 1772359199999LL /* 2026-03-01T09:59:59.999Z */, 1, {1772359200000LL}},
    /* 01-02 00:00:00 +00:00, 01-02 00:01:00 +00:00 */
    {"5", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 2, {1767312000000LL, 1767312060000LL}},
    /* 01-01 03:05:00 +00:00, 01-01 03:07:00 +00:00, 01-01 03:09:00 +00:00 */
    {"5-10/2 3 * * *", NULL, 1767225600000LL /* 2026-01-01T00:00:00Z */, 3, {1767236700000LL, 1767236820000LL, 1767236940000LL}},
    /* 01-01 00:00:00 +00:00 */
    {"0 0 1 1 *", NULL, 253383811200000LL /* 9999-06-01T00:00:00Z */, 1, {253402300800000LL}},
};
/* clang-format on */

static void test_utc_schedules(void **state) {
    (void)state;
    check_cases(utc_cases, sizeof utc_cases / sizeof utc_cases[0]);
}

/* DST: Europe/Berlin 2026-03-29 02:00->03:00 and 2026-10-25 03:00->02:00, America/New_York
 * 2026-03-08 and 2026-11-01, Australia/Sydney (southern), and zones without DST.
 * What cron-parser does, and so ferry: a skipped wall time runs right after the gap
 * (02:30 -> 03:30 CEST), a repeated one runs once at its first occurrence, except that an
 * hour field allowing all 24 hours fires in both copies of the repeated hour. */
/* clang-format off */
static const cron_case dst_cases[] = {
    /* 03-29 03:30:00 +02:00, 03-30 02:30:00 +02:00, 03-31 02:30:00 +02:00 */
    {"30 2 * * *", "Europe/Berlin", 1774699200000LL /* 2026-03-28T12:00:00Z */, 3, {1774747800000LL, 1774830600000LL, 1774917000000LL}},
    /* 03-29 03:00:00 +02:00, 03-30 02:00:00 +02:00 */
    {"0 2 * * *", "Europe/Berlin", 1774699200000LL /* 2026-03-28T12:00:00Z */, 2, {1774746000000LL, 1774828800000LL}},
    /* 03-29 01:00:00 +01:00, 03-29 03:00:00 +02:00, 03-29 04:00:00 +02:00, 03-29 05:00:00 +02:00 */
    {"0 * * * *", "Europe/Berlin", 1774740600000LL /* 2026-03-28T23:30:00Z */, 4, {1774742400000LL, 1774746000000LL, 1774749600000LL, 1774753200000LL}},
    /* 03-29 01:45:00 +01:00, 03-29 03:00:00 +02:00, 03-29 03:15:00 +02:00, 03-29 03:30:00 +02:00 */
    {"*/15 * * * *", "Europe/Berlin", 1774744200000LL /* 2026-03-29T00:30:00Z */, 4, {1774745100000LL, 1774746000000LL, 1774746900000LL, 1774747800000LL}},
    /* 03-29 01:00:00 +01:00, 03-29 03:00:00 +02:00, 03-30 01:00:00 +02:00, 03-30 02:00:00 +02:00 */
    {"0 1,2,3 * * *", "Europe/Berlin", 1774699200000LL /* 2026-03-28T12:00:00Z */, 4, {1774742400000LL, 1774746000000LL, 1774825200000LL, 1774828800000LL}},
    /* 10-25 02:30:00 +02:00, 10-26 02:30:00 +01:00, 10-27 02:30:00 +01:00 */
    {"30 2 * * *", "Europe/Berlin", 1792843200000LL /* 2026-10-24T12:00:00Z */, 3, {1792888200000LL, 1792978200000LL, 1793064600000LL}},
    /* 10-25 02:00:00 +02:00, 10-26 02:00:00 +01:00 */
    {"0 2 * * *", "Europe/Berlin", 1792843200000LL /* 2026-10-24T12:00:00Z */, 2, {1792886400000LL, 1792976400000LL}},
    /* 10-25 01:00:00 +02:00, 10-25 02:00:00 +02:00, 10-25 02:00:00 +01:00, 10-25 03:00:00 +01:00, 10-25 04:00:00 +01:00 */
    {"0 * * * *", "Europe/Berlin", 1792881000000LL /* 2026-10-24T22:30:00Z */, 5, {1792882800000LL, 1792886400000LL, 1792890000000LL, 1792893600000LL, 1792897200000LL}},
    /* 10-25 02:45:00 +02:00, 10-25 02:00:00 +01:00, 10-25 02:15:00 +01:00, 10-25 02:30:00 +01:00, 10-25 02:45:00 +01:00, 10-25 03:00:00 +01:00, 10-25 03:15:00 +01:00, 10-25 03:30:00 +01:00, 10-25 03:45:00 +01:00 */
    {"*/15 * * * *", "Europe/Berlin", 1792888200000LL /* 2026-10-25T00:30:00Z */, 9, {1792889100000LL, 1792890000000LL, 1792890900000LL, 1792891800000LL, 1792892700000LL, 1792893600000LL, 1792894500000LL, 1792895400000LL, 1792896300000LL}},
    /* 10-25 01:00:00 +02:00, 10-25 02:00:00 +02:00, 10-25 03:00:00 +01:00, 10-26 01:00:00 +01:00 */
    {"0 1,2,3 * * *", "Europe/Berlin", 1792843200000LL /* 2026-10-24T12:00:00Z */, 4, {1792882800000LL, 1792886400000LL, 1792893600000LL, 1792972800000LL}},
    /* 10-26 02:30:00 +01:00 */
    {"30 2 * * *", "Europe/Berlin", 1792889100000LL /* 2026-10-25T00:45:00Z */, 1, {1792978200000LL}},
    /* 03-08 03:30:00 -04:00, 03-09 02:30:00 -04:00, 03-10 02:30:00 -04:00 */
    {"30 2 * * *", "America/New_York", 1772884800000LL /* 2026-03-07T12:00:00Z */, 3, {1772955000000LL, 1773037800000LL, 1773124200000LL}},
    /* 03-08 01:00:00 -05:00, 03-08 03:00:00 -04:00, 03-08 04:00:00 -04:00, 03-08 05:00:00 -04:00 */
    {"0 * * * *", "America/New_York", 1772947800000LL /* 2026-03-08T05:30:00Z */, 4, {1772949600000LL, 1772953200000LL, 1772956800000LL, 1772960400000LL}},
    /* 03-08 01:45:00 -05:00, 03-08 03:00:00 -04:00, 03-08 03:15:00 -04:00, 03-08 03:30:00 -04:00 */
    {"*/15 * * * *", "America/New_York", 1772951400000LL /* 2026-03-08T06:30:00Z */, 4, {1772952300000LL, 1772953200000LL, 1772954100000LL, 1772955000000LL}},
    /* 11-01 01:30:00 -04:00, 11-02 01:30:00 -05:00, 11-03 01:30:00 -05:00 */
    {"30 1 * * *", "America/New_York", 1793448000000LL /* 2026-10-31T12:00:00Z */, 3, {1793511000000LL, 1793601000000LL, 1793687400000LL}},
    /* 11-01 01:00:00 -04:00, 11-01 01:00:00 -05:00, 11-01 02:00:00 -05:00, 11-01 03:00:00 -05:00 */
    {"0 * * * *", "America/New_York", 1793507400000LL /* 2026-11-01T04:30:00Z */, 4, {1793509200000LL, 1793512800000LL, 1793516400000LL, 1793520000000LL}},
    /* 11-01 01:45:00 -04:00, 11-01 01:00:00 -05:00, 11-01 01:15:00 -05:00, 11-01 01:30:00 -05:00, 11-01 01:45:00 -05:00, 11-01 02:00:00 -05:00, 11-01 02:15:00 -05:00, 11-01 02:30:00 -05:00, 11-01 02:45:00 -05:00 */
    {"*/15 * * * *", "America/New_York", 1793511000000LL /* 2026-11-01T05:30:00Z */, 9, {1793511900000LL, 1793512800000LL, 1793513700000LL, 1793514600000LL, 1793515500000LL, 1793516400000LL, 1793517300000LL, 1793518200000LL, 1793519100000LL}},
    /* 01-02 03:00:00 +07:00, 01-03 03:00:00 +07:00 */
    {"0 3 * * *", "Asia/Ho_Chi_Minh", 1767225600000LL /* 2026-01-01T00:00:00Z */, 2, {1767297600000LL, 1767384000000LL}},
    /* 01-03 03:00:00 +07:00 */
    {"0 3 * * *", "Asia/Ho_Chi_Minh", 1767297600000LL /* 2026-01-01T20:00:00Z */, 1, {1767384000000LL}},
    /* 04-05 00:00:00 +11:00, 04-06 00:00:00 +10:00 */
    {"0 0 * * *", "Australia/Sydney", 1775304000000LL /* 2026-04-04T12:00:00Z */, 2, {1775307600000LL, 1775397600000LL}},
    /* 10-04 03:30:00 +11:00, 10-05 02:30:00 +11:00 */
    {"30 2 * * *", "Australia/Sydney", 1791028800000LL /* 2026-10-03T12:00:00Z */, 2, {1791045000000LL, 1791127800000LL}},
    /* 01-01 09:00:00 +05:45 */
    {"0 9 * * 1-5", "Asia/Kathmandu", 1767225600000LL /* 2026-01-01T00:00:00Z */, 1, {1767237300000LL}},
    /* 01-02 02:00:00 +05:30 */
    {"0 2 * * *", "utc+05:30", 1767225600000LL /* 2026-01-01T00:00:00Z */, 1, {1767299400000LL}},
};
/* clang-format on */

static void test_dst(void **state) {
    (void)state;
    check_cases(dst_cases, sizeof dst_cases / sizeof dst_cases[0]);
}

/* The tz argument: NULL and "" are UTC; an unknown zone is FERRY_EINVAL from next. */
static void test_zone_argument(void **state) {
    (void)state;
    ferry__cron *c;
    ferry_error e = {0};
    assert_int_equal(ferry__cron_parse("0 3 * * *", &c, &e), 0);
    long long a = 0, b = 0, x = 123;
    assert_int_equal(ferry__cron_next(c, NULL, 1767225600000LL, &a, &e), 0);
    assert_int_equal(ferry__cron_next(c, "", 1767225600000LL, &b, &e), 0);
    assert_int_equal(a, 1767236400000LL); /* 2026-01-01T03:00Z */
    assert_int_equal(b, a);
    assert_int_equal(ferry__cron_next(c, "Etc/UTC", 1767225600000LL, &b, &e), 0);
    assert_int_equal(b, a);
    assert_int_equal(ferry__cron_next(c, "Mars/Olympus_Mons", 1767225600000LL, &x, &e),
                     FERRY_EINVAL);
    assert_int_equal(e.code, FERRY_EINVAL);
    assert_non_null(strstr(e.message, "Mars/Olympus_Mons"));
    assert_int_equal(x, 123); /* untouched on failure */
    assert_int_equal(ferry__cron_next(c, "../../etc/passwd", 0, &x, &e), FERRY_EINVAL);
    /* after_ms outside the stated range */
    assert_int_equal(ferry__cron_next(c, NULL, -1, &x, &e), FERRY_EINVAL);
    assert_int_equal(ferry__cron_next(c, NULL, FERRY_CRON_MS_MAX + 1, &x, &e), FERRY_EINVAL);
    assert_int_equal(ferry__cron_next(c, NULL, FERRY_CRON_MS_MAX, &x, &e), 0);
    /* the zone-object variant agrees */
    ferry__tz *z;
    assert_int_equal(ferry__tz_open("Asia/Ho_Chi_Minh", &z, &e), 0);
    assert_int_equal(ferry__cron_next_in(c, z, 1767225600000LL, &x, &e), 0);
    assert_int_equal(x, 1767297600000LL); /* 20:00 UTC the day before 03:00 local */
    ferry__tz_close(z);
    assert_string_equal(ferry__cron_text(c), "0 3 * * *");
    ferry__cron_free(c);
    ferry__cron_free(NULL);
}

/* No time found: cron-parser's 10000-step search gives up; so do we. */
static void test_not_found(void **state) {
    (void)state;
    ferry__cron *c;
    ferry_error e = {0};
    assert_int_equal(ferry__cron_parse("0 0 31 2,4 *", &c, &e), 0);
    long long next = 7;
    assert_int_equal(ferry__cron_next(c, "Europe/Berlin", 1767225600000LL, &next, &e),
                     FERRY_ENOTFOUND);
    assert_int_equal(e.code, FERRY_ENOTFOUND);
    assert_non_null(strstr(e.message, "0 0 31 2,4 *"));
    assert_int_equal(next, 7);
    ferry__cron_free(c);
}

/* Invalid expressions fail with FERRY_EINVAL and a message naming the field. */
static void parse_bad(const char *expr, const char *want) {
    ferry__cron *c = (ferry__cron *)&c; /* must be reset to NULL */
    ferry_error e = {0};
    int rc = ferry__cron_parse(expr, &c, &e);
    if (rc == 0) fail_msg("'%s' parsed but cron-parser refuses it", expr);
    assert_int_equal(rc, FERRY_EINVAL);
    assert_int_equal(e.code, FERRY_EINVAL);
    assert_null(c);
    if (!strstr(e.message, want)) fail_msg("'%s': message '%s' lacks '%s'", expr, e.message, want);
}

static void test_invalid(void **state) {
    (void)state;
    parse_bad("", "empty expression");
    parse_bad("   ", "empty expression");
    parse_bad("* * * * * * *", "too many fields");
    parse_bad("61 * * * *", "minute field '61': value 61 out of range 0-59");
    parse_bad("0 24 * * *", "hour field '24'");
    parse_bad("60 0 * * * *", "second field '60'");
    parse_bad("0 0 0 * *", "day-of-month field '0'");
    parse_bad("0 0 32 * *", "day-of-month field '32'");
    parse_bad("0 0 * 13 *", "month field '13'");
    parse_bad("0 0 * * 8", "day-of-week field '8'");
    parse_bad("0 0 * FOO *", "month field 'FOO': unknown name 'FOO'");
    parse_bad("0 0 * * MONDAY", "unknown name 'DAY'");
    parse_bad("5-3 * * * *", "min > max");
    parse_bad("*/0 * * * *", "step must be a positive number");
    parse_bad("1/2/3 * * * *", "more than one '/'");
    parse_bad("1,,2 * * * *", "empty list element");
    parse_bad("a * * * *", "invalid character 'a'");
    parse_bad("0 0 * * 1,1", "duplicate value 1");
    parse_bad("0 0 * * 0,7", "duplicate value 0"); /* 7 is Sunday, as 0 */
    parse_bad("1-5,3 * * * *", "duplicate value 3");
    parse_bad("3,1-5 * * * *", "range '1-5' repeats a value");
    parse_bad("0 0 * * L", "standalone L");
    parse_bad("0 0 L5 * *", "not L, dL or ddL");
    parse_bad("0 0 * * 5#6", "must be 1-5");
    parse_bad("0 0 * * 1-5#2", "cannot be combined");
    parse_bad("0 0 30 2 *", "no listed day exists in month 2");
    parse_bad("0 0 31 APR *", "no listed day exists in month 4");
    parse_bad("H * * * *", "hashed values (H) are not supported");
    parse_bad("0 H/2 * * *", "hour field 'H/2'");
    parse_bad("@reboot", "unknown name 'reb'");
    parse_bad(" @daily", "unknown name 'dai'"); /* predefined names are exact, as in cron-parser */

    ferry_error e = {0};
    ferry__cron *c;
    assert_int_equal(ferry__cron_parse(NULL, &c, &e), FERRY_EINVAL);
    char big[FERRY_CRON_EXPR_MAX + 2];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "0 0 * * *", 9);
    assert_int_equal(ferry__cron_parse(big, &c, &e), FERRY_ETOOBIG);
    big[FERRY_CRON_EXPR_MAX] = '\0'; /* exactly the maximum is fine */
    assert_int_equal(ferry__cron_parse(big, &c, &e), 0);
    ferry__cron_free(c);
}

/* cron-parser's CronDayOfMonth.fromMonth: when the month field holds exactly one month, the
 * day-of-month numbers that month does not have (February counts 29) are dropped BEFORE the
 * duplicate check, unless that would leave no value. So a repeat among dropped days is fine,
 * and so is a dropped day that is also covered by a range or step. The expected millis are
 * cron-parser 5.10.3's answers (CronExpressionParser.parse(pattern, {tz: 'UTC',
 * currentDate}).next(), chained); the comments give them as UTC wall times. */
static void test_single_month_drops_missing_days(void **state) {
    (void)state;
    /* clang-format off */
    static const cron_case cases[] = {
        /* 1970-09-01 00:00, 1970-09-03 00:00, 1970-09-05 00:00 */
        {"0 0 31,*/2 9 *", NULL, 0LL, 3, {20995200000LL, 21168000000LL, 21340800000LL}},
        /* 2026-09-01 00:00, 2026-09-03 00:00, 2026-09-05 00:00 */
        {"0 0 31,*/2 9 *", NULL, 1767225600000LL, 3, {1788220800000LL, 1788393600000LL, 1788566400000LL}},
        /* 2026-04-01 00:00, 2026-04-02 00:00, 2026-04-03 00:00 */
        {"0 0 31,1-31 4 *", NULL, 1767225600000LL, 3, {1775001600000LL, 1775088000000LL, 1775174400000LL}},
        /* 2026-04-01 00:00, 2027-04-01 00:00, 2028-04-01 00:00 */
        {"0 0 31,31,1 4 *", NULL, 1767225600000LL, 3, {1775001600000LL, 1806537600000LL, 1838160000000LL}},
        /* 2026-02-28 00:00, 2027-02-28 00:00, 2028-02-29 00:00 */
        {"0 0 30,30,L 2 *", NULL, 1767225600000LL, 3, {1772236800000LL, 1803772800000LL, 1835395200000LL}},
        /* 2026-09-01 00:00, 2026-09-02 00:00, 2026-09-03 00:00 (day of month OR Monday) */
        {"0 0 1-31,31 SEP MON", NULL, 1767225600000LL, 3, {1788220800000LL, 1788307200000LL, 1788393600000LL}},
        /* 2028-02-29 00:00, 2032-02-29 00:00, 2036-02-29 00:00 */
        {"0 0 30,30,29 2 *", NULL, 1767225600000LL, 3, {1835395200000LL, 1961625600000LL, 2087856000000LL}},
        /* 2026-04-30 00:00, 2027-04-30 00:00, 2028-04-30 00:00 */
        {"0 0 31,30,31 4 *", NULL, 1767225600000LL, 3, {1777507200000LL, 1809043200000LL, 1840665600000LL}},
        /* 2026-04-30 00:00, 2027-04-30 00:00, 2028-04-30 00:00 ("5L" in day-of-month is L) */
        {"0 0 31,31,5L 4 *", NULL, 1767225600000LL, 3, {1777507200000LL, 1809043200000LL, 1840665600000LL}},
        /* 2026-11-01 00:00, 2026-11-03 00:00, 2026-11-05 00:00 */
        {"0 0 1-31/2,31 11 *", NULL, 1767225600000LL, 3, {1793491200000LL, 1793664000000LL, 1793836800000LL}},
    };
    /* clang-format on */
    check_cases(cases, sizeof cases / sizeof cases[0]);

    /* Refused by cron-parser too: a repeat of a day the month has, a repeat when the month
     * field holds more than one month (or a month twice), and a repeat among dropped days
     * when nothing else is left (then all days are kept and checked). */
    parse_bad("0 0 5,5 4 *", "duplicate value 5");
    parse_bad("0 0 29,29 2 *", "duplicate value 29");
    parse_bad("0 0 L,L 2 *", "duplicate value L");
    parse_bad("0 0 31,31 4,6 *", "duplicate value 31");
    parse_bad("0 0 31,31 4 *", "duplicate value 31");
    parse_bad("0 0 30,30 2 *", "duplicate value 30");
    parse_bad("0 0 30-31,30 2 *", "duplicate value 30");
    parse_bad("0 0 31,31 4 MON", "duplicate value 31");
    parse_bad("0 0 31,31 4-4 *", "duplicate value 31");
    parse_bad("0 0 31,31 4,4 *", "month field '4,4': duplicate value 4");
    parse_bad("0 0 31 4 *", "no listed day exists in month 4"); /* unchanged */

    /* cron-parser refuses a field that holds more than 256 values before its next element;
     * with dropped repeats allowed this is now reachable: 256 x "31" then "1" is fine in
     * April, 257 x "31" then "1" is not. */
    char expr[FERRY_CRON_EXPR_MAX + 1];
    for (int n = 256; n <= 257; n++) {
        size_t len = (size_t)snprintf(expr, sizeof expr, "0 0 ");
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(expr + len, sizeof expr - len, "31,");
        snprintf(expr + len, sizeof expr - len, "1 4 *");
        ferry__cron *c = NULL;
        ferry_error e = {0};
        int rc = ferry__cron_parse(expr, &c, &e);
        if (n == 256) {
            assert_int_equal(rc, 0);
            long long next = 0;
            assert_int_equal(ferry__cron_next(c, NULL, 1767225600000LL, &next, &e), 0);
            assert_int_equal(next, 1775001600000LL); /* 2026-04-01, as cron-parser */
            ferry__cron_free(c);
        } else {
            assert_int_equal(rc, FERRY_EINVAL);
            assert_null(c);
        }
    }
}

/* Forms cron-parser accepts that look odd; ferry must accept them with the same meaning. */
static void test_cron_parser_quirks(void **state) {
    (void)state;
    static const cron_case quirks[] = {
        /* "*" inside a list element expands textually: "5*" is "50-59" */
        {"5* * * * *", NULL, 1767225600000LL, 2, {1767228600000LL, 1767228660000LL}},
        /* day names in the month field and month names in the day field resolve by value */
        {"0 0 * * JAN", NULL, 1767225600000LL, 1, {1767571200000LL}}, /* JAN = 1 = Monday */
        /* "friL" is "5L": the last Friday */
        {"0 0 * * friL", NULL, 1767225600000LL, 1, {1769731200000LL}},
        /* whitespace of any kind separates fields, leading/trailing is ignored */
        {"\t0\n0  * * *  ", NULL, 1767225600000LL, 1, {1767312000000LL}},
        /* restricted day-of-month and day-of-week: either matches (13th OR Friday) */
        {"0 0 13 * FRI", NULL, 1767225600000LL, 2, {1767312000000LL, 1767916800000LL}},
    };
    check_cases(quirks, sizeof quirks / sizeof quirks[0]);
}

/* cron-parser's own anomaly, reproduced on purpose: on Australia/Lord_Howe's 30-minute
 * autumn change (2026-04-05 02:00+11:00 -> 01:30+10:30) "0 * * * *" from 01:19:48+11:00 gives
 * 01:00+11:00, EARLIER than the start, and from there its search never ends (loop limit).
 * Node BullMQ clamps the first to "now" and stops the schedule on the second; so must a C
 * caller, because ferry returns exactly what cron-parser returns. */
static void test_lord_howe_anomaly(void **state) {
    (void)state;
    ferry__cron *c;
    ferry_error e = {0};
    assert_int_equal(ferry__cron_parse("@hourly", &c, &e), 0);
    long long next = 0;
    assert_int_equal(ferry__cron_next(c, "Australia/Lord_Howe", 1775312388731LL, &next, &e), 0);
    assert_int_equal(next, 1775311200000LL); /* before after_ms, as in cron-parser */
    assert_int_equal(ferry__cron_next(c, "Australia/Lord_Howe", next, &next, &e), FERRY_ENOTFOUND);
    assert_int_equal(ferry__cron_next(c, "Australia/Lord_Howe", 1775309400000LL, &next, &e), 0);
    assert_int_equal(next, 1775311200000LL); /* from 00:30+11:00 it is right */
    ferry__cron_free(c);
}

/* A schedule firing every second for a day: every step advances by exactly 1 s. */
static void test_every_second_chain(void **state) {
    (void)state;
    ferry__cron *c;
    ferry_error e = {0};
    assert_int_equal(ferry__cron_parse("* * * * * *", &c, &e), 0);
    long long cur = 1792886399500LL; /* Berlin, just before the autumn change */
    for (int i = 0; i < 7200; i++) {
        long long next;
        assert_int_equal(ferry__cron_next(c, "Europe/Berlin", cur, &next, &e), 0);
        assert_int_equal(next, i == 0 ? 1792886400000LL : cur + 1000);
        cur = next;
    }
    ferry__cron_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utc_schedules),
        cmocka_unit_test(test_dst),
        cmocka_unit_test(test_zone_argument),
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_cron_parser_quirks),
        cmocka_unit_test(test_single_month_drops_missing_days),
        cmocka_unit_test(test_every_second_chain),
        cmocka_unit_test(test_lord_howe_anomaly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

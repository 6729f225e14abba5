/* test_job_log.c - ferry_job_log_format (src/worker/joblog.c) without servers: the text
 * and JSON lines, quoting and escaping of awkward values, the snprintf contract. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/worker.h"

static void test_job_log_format(void **state) {
    (void)state;
    ferry_job_log r = {"payments",    "capture-payment",   "42", 2,    "4bf92f",
                       "retry-later", "gateway: HTTP 503", 12,   3400, 5000};
    char buf[512];
    size_t n = ferry_job_log_format(&r, 0, buf, sizeof buf);
    const char *want = "queue=payments job=capture-payment id=42 attempt=2 trace=4bf92f "
                       "outcome=retry-later duration_ms=12 age_ms=3400 delay_ms=5000 "
                       "reason=\"gateway: HTTP 503\"";
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));

    /* snprintf contract: needed length, truncated but terminated */
    char small[10];
    assert_int_equal(ferry_job_log_format(&r, 0, small, sizeof small), n);
    assert_string_equal(small, "queue=pay");
    assert_int_equal(ferry_job_log_format(&r, 0, NULL, 0), n);
    assert_int_equal(ferry_job_log_format(&r, 1, NULL, 0),
                     ferry_job_log_format(&r, 1, buf, sizeof buf));

    /* JSON: parses back to the same values */
    ferry_job_log_format(&r, 1, buf, sizeof buf);
    json_t *j = json_loads(buf, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "queue")), "payments");
    assert_string_equal(json_string_value(json_object_get(j, "job")), "capture-payment");
    assert_string_equal(json_string_value(json_object_get(j, "reason")), "gateway: HTTP 503");
    assert_int_equal(json_integer_value(json_object_get(j, "delay_ms")), 5000);
    assert_int_equal(json_integer_value(json_object_get(j, "age_ms")), 3400);
    json_decref(j);

    /* awkward values: quoted names, escapes, control bytes, invalid UTF-8, no reason */
    ferry_job_log q = {"q", "send email", "", 1, "job-q-", "completed", NULL, 0, 5, 0};
    ferry_job_log_format(&q, 0, buf, sizeof buf);
    assert_string_equal(buf, "queue=q job=\"send email\" id=\"\" attempt=1 trace=job-q- "
                             "outcome=completed duration_ms=0 age_ms=5");
    ferry_job_log_format(&q, 1, buf, sizeof buf);
    j = json_loads(buf, 0, NULL);
    assert_non_null(j);
    assert_true(json_is_null(json_object_get(j, "reason")));
    json_decref(j);
    q.reason = "a\\b\"c\x01\t\xff\xc3\xa9";
    ferry_job_log_format(&q, 0, buf, sizeof buf);
    assert_non_null(strstr(buf, "reason=\"a\\\\b\\\"c\\x01\\t\\xff\xc3\xa9\""));
    ferry_job_log_format(&q, 1, buf, sizeof buf);
    j = json_loads(buf, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "reason")),
                        "a\\b\"c\x01\t\xef\xbf\xbd\xc3\xa9");
    json_decref(j);
    /* NULL record: empty */
    assert_int_equal(ferry_job_log_format(NULL, 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_log_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

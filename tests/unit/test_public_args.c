/* test_public_args.c - the public calls made for tools (ferry/redis.h's INFO connection,
 * ferry/outbox.h's schema version and database URL display) refuse NULL where they need a
 * pointer, with FERRY_EINVAL and a message, instead of crashing. No servers: every case
 * fails before anything connects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/ferry.h"

static void test_redis_conn_null_args(void **state) {
    (void)state;
    ferry_error err = {0};
    assert_int_equal(ferry_redis_connect(NULL, NULL, &err), FERRY_EINVAL);
    assert_non_null(strstr(err.message, "out is NULL"));
    assert_int_equal(ferry_redis_connect(NULL, NULL, NULL), FERRY_EINVAL);

    char *text = (char *)"untouched";
    memset(&err, 0, sizeof err);
    assert_int_equal(ferry_redis_info(NULL, "cpu", &text, &err), FERRY_EINVAL);
    assert_null(text);
    assert_non_null(strstr(err.message, "no connection"));
    memset(&err, 0, sizeof err);
    assert_int_equal(ferry_redis_info(NULL, "cpu", NULL, &err), FERRY_EINVAL);
    assert_non_null(strstr(err.message, "text is NULL"));
    ferry_redis_disconnect(NULL);
}

static void test_schema_applied_null_version(void **state) {
    (void)state;
    ferry_error err = {0};
    assert_int_equal(ferry_outbox_schema_applied(NULL, NULL, NULL, &err), FERRY_EINVAL);
    assert_non_null(strstr(err.message, "version is NULL"));
}

static void test_url_display_small_buffers(void **state) {
    (void)state;
    const char *url = "postgresql://user:Pw9secret@db.example:5433/shop";
    assert_null(ferry_outbox_database_url_display(url, NULL, 0));
    char buf[64];
    memset(buf, 'x', sizeof buf);
    assert_ptr_equal(ferry_outbox_database_url_display(url, buf, 0), buf);
    assert_int_equal(buf[0], 'x'); /* cap 0: nothing written */
    assert_ptr_equal(ferry_outbox_database_url_display(url, buf, 1), buf);
    assert_string_equal(buf, "");
    assert_ptr_equal(ferry_outbox_database_url_display(url, buf, sizeof buf), buf);
    assert_string_equal(buf, "user@db.example:5433/shop");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redis_conn_null_args),
        cmocka_unit_test(test_schema_applied_null_version),
        cmocka_unit_test(test_url_display_small_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

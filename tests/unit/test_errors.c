/* test_errors.c - the error codes (FERRY_ERRNO_MAP in ferry/common.h): values, names and
 * messages of every code, and what an unknown code gets. The table below is written out by
 * hand on purpose: it pins the promise that values are never renumbered and the messages
 * ferry printed before the list existed. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/common.h"
#include "util/error.h"

static const struct {
    int code, value;
    const char *name, *message;
} known[] = {
    {FERRY_OK, 0, "FERRY_OK", "ok"},
    {FERRY_EINVAL, -1, "FERRY_EINVAL", "invalid argument"},
    {FERRY_ENOMEM, -2, "FERRY_ENOMEM", "out of memory"},
    {FERRY_EIO, -3, "FERRY_EIO", "I/O error"},
    {FERRY_ETIMEDOUT, -4, "FERRY_ETIMEDOUT", "timed out"},
    {FERRY_EPROTO, -5, "FERRY_EPROTO", "protocol error"},
    {FERRY_EREDIS, -6, "FERRY_EREDIS", "Redis error"},
    {FERRY_ETLS, -7, "FERRY_ETLS", "TLS error"},
    {FERRY_EAUTH, -8, "FERRY_EAUTH", "authentication failed"},
    {FERRY_ENOTFOUND, -9, "FERRY_ENOTFOUND", "not found"},
    {FERRY_ETOOBIG, -10, "FERRY_ETOOBIG", "too big"},
    {FERRY_ELOCK, -11, "FERRY_ELOCK", "lock lost"},
    {FERRY_ESTATE, -12, "FERRY_ESTATE", "wrong state"},
    {FERRY_ECLOSED, -13, "FERRY_ECLOSED", "closed"},
    {FERRY_EDB, -14, "FERRY_EDB", "database error"},
};
#define NKNOWN (sizeof known / sizeof known[0])

static void test_values_names_messages(void **state) {
    (void)state;
    for (size_t i = 0; i < NKNOWN; i++) {
        assert_int_equal(known[i].code, known[i].value);
        assert_string_equal(ferry_err_name(known[i].code), known[i].name);
        assert_string_equal(ferry_strerror(known[i].code), known[i].message);
    }
}

/* The list and the table above agree: every code the list generates is in the table, so a
 * new code cannot be added without pinning its value, name and message here. */
static void test_list_is_complete(void **state) {
    (void)state;
    size_t n = 0;
#define COUNT(nm, val, msg)                                                                        \
    do {                                                                                           \
        int found = 0;                                                                             \
        for (size_t i = 0; i < NKNOWN; i++)                                                        \
            if (known[i].value == (val)) {                                                         \
                found = 1;                                                                         \
                assert_string_equal(known[i].name, "FERRY_" #nm);                                  \
                assert_string_equal(known[i].message, msg);                                        \
            }                                                                                      \
        if (!found) fail_msg("FERRY_%s (%d) is not in the test's table", #nm, (val));              \
        n++;                                                                                       \
    } while (0);
    FERRY_ERRNO_MAP(COUNT)
#undef COUNT
    assert_int_equal(n, NKNOWN);
}

static void test_unknown(void **state) {
    (void)state;
    const int unknown[] = {1, 2, -15, -100, 1000, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        assert_string_equal(ferry_err_name(unknown[i]), "FERRY_UNKNOWN");
        assert_string_equal(ferry_strerror(unknown[i]), "unknown error");
    }
}

static void test_err_fill(void **state) {
    (void)state;
    ferry_error e = {0};
    assert_int_equal(ferry__err(&e, FERRY_EINVAL, "bad %s", "thing"), FERRY_EINVAL);
    assert_int_equal(e.code, FERRY_EINVAL);
    assert_string_equal(e.message, "bad thing");
    assert_int_equal(ferry__err(NULL, FERRY_EIO, "x"), FERRY_EIO);
    char big[FERRY_ERROR_MESSAGE_MAX * 2];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ferry__err(&e, FERRY_ETOOBIG, "%s", big);
    assert_int_equal(strlen(e.message), FERRY_ERROR_MESSAGE_MAX - 1);
    assert_string_equal(e.message + FERRY_ERROR_MESSAGE_MAX - 4, "...");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_names_messages),
        cmocka_unit_test(test_list_is_complete),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_err_fill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

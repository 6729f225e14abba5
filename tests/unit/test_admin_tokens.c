/* test_admin_tokens.c - ferry_admin_tokens_parse (ferry/admin.h), the token file of `ferry
 * serve`, without servers: names, scopes ("read" implied by any), comments, blanks, CRLF;
 * every refusal names the line and never holds the secret; the size and count bounds;
 * ferry_admin_tokens_load refuses a file the group or others may read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "admin/framework.h"
#include "support/th.h"

#define S1 "s1-0123456789abcdef0123456789abcdef"
#define S2 "s2-0123456789abcdef0123456789abcdef"

static int holds(const void *p, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp((const char *)p + i, needle, k)) return 1;
    return 0;
}

static const admin_token *find(const ferry_admin_tokens *t, const char *name) {
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->items[i].name, name)) return &t->items[i];
    return NULL;
}

static void test_parse_ok(void **state) {
    (void)state;
    const char text[] = "# comment\n"
                        "\n"
                        "  \t# indented comment\n"
                        "ops read,act " S1 "\r\n"
                        "dlq.bot@x-1\tredrive\t\t" S2 "   \n"
                        "r read 0123456789abcdef0123456789abcdef";
    ferry_admin_tokens *t = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_admin_tokens_parse(text, strlen(text), "f", &t, &e), 0);
    assert_int_equal(ferry_admin_tokens_count(t), 3);
    assert_int_equal(find(t, "ops")->scopes, FERRY_ADMIN_SCOPE_READ | FERRY_ADMIN_SCOPE_ACT);
    assert_int_equal(find(t, "dlq.bot@x-1")->scopes,
                     FERRY_ADMIN_SCOPE_READ | FERRY_ADMIN_SCOPE_REDRIVE);
    assert_int_equal(find(t, "r")->scopes, FERRY_ADMIN_SCOPE_READ);
    /* the secret is not kept, its digest is */
    for (size_t i = 0; i < t->n; i++)
        assert_false(holds(&t->items[i], sizeof t->items[i], "0123456789abcdef"));
    ferry_admin_tokens_free(t);

    assert_int_equal(ferry_admin_tokens_parse("", 0, NULL, &t, &e), 0);
    assert_int_equal(ferry_admin_tokens_count(t), 0);
    ferry_admin_tokens_free(t);
    assert_int_equal(ferry_admin_tokens_count(NULL), 0);
    ferry_admin_tokens_free(NULL);
}

static void expect_error(const char *text, int code, const char *needle, const char *secret) {
    ferry_admin_tokens *t = (ferry_admin_tokens *)1;
    ferry_error e = {0};
    int rc = ferry_admin_tokens_parse(text, strlen(text), "tokens.txt", &t, &e);
    if (rc != code) fail_msg("rc %d, want %d: %s", rc, code, e.message);
    assert_null(t);
    if (!strstr(e.message, needle)) fail_msg("want \"%s\" in \"%s\"", needle, e.message);
    assert_non_null(strstr(e.message, "tokens.txt"));
    if (secret && strstr(e.message, secret)) fail_msg("secret shown: %s", e.message);
}

static void test_parse_errors(void **state) {
    (void)state;
    expect_error("a read " S1 "\nb read short\n", FERRY_EINVAL, "line 2", "short");
    expect_error("a read,admin " S1 "\n", FERRY_EINVAL, "line 1: unknown scope \"admin\"", S1);
    expect_error("a read, " S1 "\n", FERRY_EINVAL, "unknown scope \"\"", S1);
    expect_error("a read " S1 "\na act " S2 "\n", FERRY_EINVAL,
                 "line 2: token name \"a\" is used twice", S2);
    expect_error("a read " S1 "\nb act " S1 "\n", FERRY_EINVAL,
                 "line 2: token \"b\" has the same secret as token \"a\"", S1);
    expect_error("a read\n", FERRY_EINVAL, "line 1: expected NAME SCOPES SECRET", NULL);
    expect_error("a read " S1 " more\n", FERRY_EINVAL, "line 1: expected NAME SCOPES SECRET", S1);
    expect_error("a:b read " S1 "\n", FERRY_EINVAL, "line 1: the name", S1);
    char big[700];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char line[800];
    snprintf(line, sizeof line, "a read %s\n", big);
    expect_error(line, FERRY_EINVAL, "needs 32..512", big);
    expect_error("a read 0123456789abcdef0123456789abcde\x7f\n", FERRY_EINVAL, "printable ASCII",
                 NULL);

    /* bounds */
    size_t n = FERRY_ADMIN_TOKEN_FILE_MAX + 1;
    char *huge = malloc(n + 1);
    memset(huge, '#', n);
    huge[n] = '\0';
    ferry_admin_tokens *t = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_admin_tokens_parse(huge, n, NULL, &t, &e), FERRY_ETOOBIG);
    free(huge);
    size_t cap = (FERRY_ADMIN_TOKENS_MAX + 1) * 64, len = 0;
    char *many = malloc(cap);
    for (int i = 0; i <= FERRY_ADMIN_TOKENS_MAX; i++)
        len += (size_t)snprintf(many + len, cap - len, "t%d read secret-%032d\n", i, i);
    assert_int_equal(ferry_admin_tokens_parse(many, len, NULL, &t, &e), FERRY_ETOOBIG);
    assert_non_null(strstr(e.message, "more than 256 tokens"));
    free(many);
    assert_int_equal(ferry_admin_tokens_parse("a\0b", 3, NULL, &t, &e), FERRY_EINVAL);
    assert_int_equal(ferry_admin_tokens_parse("", 0, NULL, NULL, &e), FERRY_EINVAL);
}

static void test_load(void **state) {
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/tokens", th_tmpdir());
    th_write_file(path, "a read " S1 "\n", 0600);
    ferry_admin_tokens *t = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_admin_tokens_load(path, &t, &e), 0);
    assert_int_equal(ferry_admin_tokens_count(t), 1);
    ferry_admin_tokens_free(t);
    chmod(path, 0640);
    assert_int_equal(ferry_admin_tokens_load(path, &t, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "mode 640"));
    assert_null(t);
    snprintf(path, sizeof path, "%s/missing", th_tmpdir());
    assert_int_equal(ferry_admin_tokens_load(path, &t, &e), FERRY_EIO);
    assert_int_equal(ferry_admin_tokens_load(th_tmpdir(), &t, &e), FERRY_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_load),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return th_exit(failed);
}

/* test_routes.c - the relay's routes file parser (src/outbox/routes.c): fan-out lines,
 * comments, blanks and CRLF, lookups, and every refusal naming file and line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ferry/outbox.h"
#include "ferry/queue.h"
#include "outbox/routes.h"

static ferry_routes *parse_ok(const char *text) {
    ferry_routes *r = NULL;
    ferry_error e = {0};
    int rc = ferry_routes_parse(text, strlen(text), "routes.txt", &r, &e);
    if (rc) fail_msg("unexpected error: %s", e.message);
    assert_non_null(r);
    return r;
}

/* Parse text that must fail; returns the message (static) and checks the code. */
static const char *parse_err(const char *text, size_t len, int code) {
    static ferry_error e;
    memset(&e, 0, sizeof e);
    ferry_routes *r = (ferry_routes *)1;
    int rc = ferry_routes_parse(text, len, "routes.txt", &r, &e);
    assert_int_equal(rc, code);
    assert_int_equal(e.code, code);
    assert_null(r);
    return e.message;
}

static void check_target(const ferry_routes *r, size_t t, size_t j, const char *queue,
                         const char *job) {
    const char *q = NULL, *jn = NULL;
    assert_int_equal(ferry_routes_target(r, t, j, &q, &jn), 0);
    assert_string_equal(q, queue);
    assert_string_equal(jn, job);
}

static void test_shop_routes(void **state) {
    (void)state;
    ferry_routes *r =
        parse_ok("# a shop's routes\n"
                 "order.placed      payments:capture-payment notifications:order-confirmation\n"
                 "\n"
                 "payment.captured\tshipping:create-shipment   loyalty:award-points  # fan-out\n"
                 "   order.cancelled payments:void-authorization");
    assert_int_equal(ferry_routes_topic_count(r), 3);
    assert_string_equal(ferry_routes_topic(r, 0), "order.placed");
    assert_string_equal(ferry_routes_topic(r, 1), "payment.captured");
    assert_string_equal(ferry_routes_topic(r, 2), "order.cancelled");
    assert_int_equal(ferry_routes_target_count(r, 0), 2);
    check_target(r, 0, 0, "payments", "capture-payment");
    check_target(r, 0, 1, "notifications", "order-confirmation");
    check_target(r, 1, 1, "loyalty", "award-points");
    check_target(r, 2, 0, "payments", "void-authorization");
    assert_int_equal(ferry_routes_target(r, 2, 1, NULL, NULL), FERRY_EINVAL);
    assert_int_equal(ferry_routes_target(r, 3, 0, NULL, NULL), FERRY_EINVAL);
    assert_null(ferry_routes_topic(r, 3));
    assert_true(ferry_routes_has_topic(r, "order.cancelled"));
    assert_true(ferry_routes_has_topic(r, "payment.captured"));
    assert_false(ferry_routes_has_topic(r, "order"));
    assert_false(ferry_routes_has_topic(r, "order.placed "));
    assert_false(ferry_routes_has_topic(r, NULL));
    assert_int_equal(ferry__routes_find(r, "order.cancelled"), 2);
    assert_int_equal(ferry__routes_find(r, "zzz"), -1);
    ferry_routes_free(r);
}

static void test_clone(void **state) {
    (void)state;
    ferry_routes *r = parse_ok("b q1:x q2:y\na q3:z\n");
    ferry_routes *c = ferry__routes_clone(r);
    ferry_routes_free(r); /* the copy owns everything it needs */
    assert_int_equal(ferry_routes_topic_count(c), 2);
    assert_string_equal(ferry_routes_topic(c, 0), "b");
    check_target(c, 0, 1, "q2", "y");
    check_target(c, 1, 0, "q3", "z");
    assert_int_equal(ferry__routes_find(c, "a"), 1);
    assert_int_equal(ferry__routes_find(c, "b"), 0);
    ferry_routes_free(c);
    assert_null(ferry__routes_clone(NULL));
}

static void test_crlf_and_job_name_with_colon(void **state) {
    (void)state;
    ferry_routes *r = parse_ok("a q1:job:v2\r\nb q2:x\r\n");
    check_target(r, 0, 0, "q1", "job:v2");
    check_target(r, 1, 0, "q2", "x");
    assert_string_equal(ferry_routes_topic(r, 1), "b");
    ferry_routes_free(r);
}

/* A UTF-8 byte order mark (some editors write one) is not part of the first topic. */
static void test_byte_order_mark(void **state) {
    (void)state;
    ferry_routes *r = parse_ok("\xef\xbb\xbf"
                               "a q1:j\nb q2:k\n");
    assert_string_equal(ferry_routes_topic(r, 0), "a");
    assert_true(ferry_routes_has_topic(r, "a"));
    ferry_routes_free(r);
}

static void test_utf8_names(void **state) {
    (void)state;
    ferry_routes *r = parse_ok("đơn.đặt hàng-đợi:gửi-thư\n");
    assert_true(ferry_routes_has_topic(r, "đơn.đặt"));
    check_target(r, 0, 0, "hàng-đợi", "gửi-thư");
    ferry_routes_free(r);
}

static void test_many_topics_lookup(void **state) {
    (void)state;
    size_t n = 3000, cap = n * 40, k = 0;
    char *text = malloc(cap);
    for (size_t i = n; i > 0; i--) /* reverse order: the index must sort */
        k += (size_t)snprintf(text + k, cap - k, "t%05zu q%zu:j\n", i, i % 7);
    ferry_routes *r = parse_ok(text);
    assert_int_equal(ferry_routes_topic_count(r), n);
    char name[16];
    for (size_t i = 1; i <= n; i++) {
        snprintf(name, sizeof name, "t%05zu", i);
        long idx = ferry__routes_find(r, name);
        assert_true(idx >= 0);
        assert_string_equal(ferry_routes_topic(r, (size_t)idx), name);
    }
    assert_false(ferry_routes_has_topic(r, "t00000"));
    ferry_routes_free(r);
    free(text);
}

static void test_errors_name_file_and_line(void **state) {
    (void)state;
    const char *m = parse_err("a q:j\n\nlonely\n", 15, FERRY_EINVAL);
    assert_non_null(strstr(m, "routes.txt:3:"));
    assert_non_null(strstr(m, "'lonely' has no targets"));

    m = parse_err("a q:j\nb nocolon\n", 16, FERRY_EINVAL);
    assert_non_null(strstr(m, "routes.txt:2:"));
    assert_non_null(strstr(m, "not queue:job-name"));

    m = parse_err("a :job\n", 7, FERRY_EINVAL);
    assert_non_null(strstr(m, "routes.txt:1: target ':job': empty queue name"));
    m = parse_err("a q:\n", 5, FERRY_EINVAL);
    assert_non_null(strstr(m, "empty job name"));

    m = parse_err("a q:j\n# c\nb q:k\na q2:x\n", 22, FERRY_EINVAL);
    assert_non_null(strstr(m, "routes.txt:4: topic 'a' is already routed at line 1"));

    m = parse_err("a q:j q:k\n", 10, FERRY_EINVAL);
    assert_non_null(strstr(m, "queue 'q' appears twice for topic 'a'"));

    m = parse_err("a q:j\x01\n", 7, FERRY_EINVAL);
    assert_non_null(strstr(m, "routes.txt:1: control character 0x01"));

    m = parse_err("a q:j\nb q:\xff\n", 12, FERRY_EINVAL);
    assert_non_null(strstr(m, "routes.txt:2: job name is not valid UTF-8"));

    m = parse_err("a q:j\nb q:k\0\n", 13, FERRY_EINVAL);
    assert_non_null(strstr(m, "routes.txt:2: NUL byte at column 6"));

    m = parse_err("# only comments\n\n   \n", 21, FERRY_EINVAL);
    assert_non_null(strstr(m, "no routes"));
    m = parse_err("", 0, FERRY_EINVAL);
    assert_non_null(strstr(m, "no routes"));
}

static void test_limits(void **state) {
    (void)state;
    /* line length */
    size_t n = FERRY_ROUTES_LINE_MAX + 10;
    char *line = malloc(n + 1);
    memset(line, 'x', n);
    memcpy(line, "a q:", 4);
    line[n] = 0;
    const char *m = parse_err(line, n, FERRY_ETOOBIG);
    assert_non_null(strstr(m, "routes.txt:1: line is 4106 bytes, limit 4096"));
    free(line);

    /* topic length: 255 ok, 256 not */
    char buf[600];
    memset(buf, 't', 255);
    strcpy(buf + 255, " q:j\n");
    ferry_routes *r = parse_ok(buf);
    ferry_routes_free(r);
    memset(buf, 't', 256);
    strcpy(buf + 256, " q:j\n");
    m = parse_err(buf, strlen(buf), FERRY_EINVAL);
    assert_non_null(strstr(m, "is 256 bytes, limit 255"));
    assert_non_null(strstr(m, "...")); /* long names are shortened in messages */

    /* queue name length: every name a queue accepts (FERRY_QUEUE_NAME_MAX) routes, one more not */
    char qbuf[FERRY_QUEUE_NAME_MAX + 16];
    strcpy(qbuf, "a ");
    memset(qbuf + 2, 'q', FERRY_QUEUE_NAME_MAX);
    strcpy(qbuf + 2 + FERRY_QUEUE_NAME_MAX, ":j\n");
    r = parse_ok(qbuf);
    const char *tq = NULL, *tj = NULL;
    assert_int_equal(ferry_routes_target(r, 0, 0, &tq, &tj), 0);
    assert_int_equal(strlen(tq), FERRY_QUEUE_NAME_MAX);
    assert_string_equal(tj, "j");
    ferry_routes_free(r);
    strcpy(qbuf, "a ");
    memset(qbuf + 2, 'q', FERRY_QUEUE_NAME_MAX + 1);
    strcpy(qbuf + 3 + FERRY_QUEUE_NAME_MAX, ":j\n");
    m = parse_err(qbuf, strlen(qbuf), FERRY_EINVAL);
    assert_non_null(strstr(m, "queue name"));
    assert_non_null(strstr(m, "is 513 bytes, limit 512"));

    /* targets per topic */
    char *many = malloc(8192);
    size_t k = (size_t)sprintf(many, "a");
    for (int i = 0; i < FERRY_ROUTES_TARGETS_MAX + 1; i++)
        k += (size_t)sprintf(many + k, " q%d:j", i);
    many[k++] = '\n';
    m = parse_err(many, k, FERRY_ETOOBIG);
    assert_non_null(strstr(m, "more than 64 targets"));
    free(many);

    /* file size */
    m = parse_err("x", FERRY_ROUTES_FILE_MAX + 1, FERRY_ETOOBIG);
    assert_non_null(strstr(m, "limit 1048576"));
}

static void test_too_many_topics(void **state) {
    (void)state;
    size_t cap = (FERRY_ROUTES_TOPICS_MAX + 2) * 16, k = 0;
    char *text = malloc(cap);
    for (int i = 0; i <= FERRY_ROUTES_TOPICS_MAX; i++)
        k += (size_t)snprintf(text + k, cap - k, "t%d q:j\n", i);
    const char *m = parse_err(text, k, FERRY_ETOOBIG);
    assert_non_null(strstr(m, "routes.txt:10001: more than 10000 topics"));
    free(text);
}

static void test_load_file(void **state) {
    (void)state;
    char path[] = "/tmp/ferry-routes-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "x.y q:j\nbad\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ferry_routes *r = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_routes_load(path, &r, &e), FERRY_EINVAL);
    char want[64];
    snprintf(want, sizeof want, "%s:2:", path);
    assert_non_null(strstr(e.message, want));
    unlink(path);
    assert_int_equal(ferry_routes_load(path, &r, &e), FERRY_EIO);
    assert_non_null(strstr(e.message, "cannot open"));
    assert_null(r);
}

static void test_topic_check(void **state) {
    (void)state;
    ferry_error e = {0};
    assert_int_equal(ferry__topic_check("order.placed", &e), 0);
    assert_int_equal(ferry__topic_check("đơn.đặt", &e), 0);
    assert_int_equal(ferry__topic_check("", &e), FERRY_EINVAL);
    assert_int_equal(ferry__topic_check(NULL, &e), FERRY_EINVAL);
    assert_int_equal(ferry__topic_check("a b", &e), FERRY_EINVAL);
    assert_int_equal(ferry__topic_check("a#b", &e), FERRY_EINVAL);
    assert_int_equal(ferry__topic_check("a\tb", &e), FERRY_EINVAL);
    assert_int_equal(ferry__topic_check("\xc3", &e), FERRY_EINVAL);
    char big[300];
    memset(big, 'a', 256);
    big[256] = 0;
    assert_int_equal(ferry__topic_check(big, &e), FERRY_EINVAL);
    big[255] = 0;
    assert_int_equal(ferry__topic_check(big, &e), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shop_routes),
        cmocka_unit_test(test_clone),
        cmocka_unit_test(test_crlf_and_job_name_with_colon),
        cmocka_unit_test(test_utf8_names),
        cmocka_unit_test(test_byte_order_mark),
        cmocka_unit_test(test_many_topics_lookup),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_too_many_topics),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_topic_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_shop_messages.c - shop-worker's pure parsers (examples/shop/worker/shop_messages.c):
 * the payloads it accepts and the poison it refuses with a reason naming the field (never
 * the value), the providers' answers, and the text helpers. No servers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shop_messages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OID "0190b6a2-7c00-7abc-8def-0123456789ab"
#define CID "6f9619ff-8b86-d011-b42d-00cf4fc964ff"

static void expect_reason(const char *err, const char *needle) {
    if (!strstr(err, needle)) fail_msg("reason \"%s\" lacks \"%s\"", err, needle);
}

static void test_order_placed(void **state) {
    (void)state;
    shop_order_placed p;
    char err[512];
    assert_int_equal(shop_parse_order_placed(
                         "{\"orderId\":\"" OID "\",\"customerId\":\"" CID "\",\"total\":250000,"
                         "\"itemCount\":2,\"authorizationId\":\"auth_x-1\",\"extra\":[1]}",
                         &p, err, sizeof err),
                     0);
    assert_string_equal(p.order_id, OID);
    assert_string_equal(p.customer_id, CID);
    assert_int_equal(p.total, 250000);
    assert_int_equal(p.item_count, 2);
    assert_string_equal(p.authorization_id, "auth_x-1");

    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"customerId\":\"" CID "\",\"total\":1,\"itemCount\":1,\"authorizationId\":\"a\"}",
         "\"orderId\" is missing"},
        {"{\"orderId\":\"secret-value\",\"customerId\":\"" CID
         "\",\"total\":1,\"itemCount\":1,\"authorizationId\":\"a\"}",
         "\"orderId\" must be a UUID"},
        {"{\"orderId\":\"" OID "\",\"customerId\":\"" CID
         "\",\"total\":\"1\",\"itemCount\":1,\"authorizationId\":\"a\"}",
         "\"total\" must be an integer"},
        {"{\"orderId\":\"" OID "\",\"customerId\":\"" CID
         "\",\"total\":-5,\"itemCount\":1,\"authorizationId\":\"a\"}",
         "out of range"},
        {"{\"orderId\":\"" OID "\",\"customerId\":\"" CID
         "\",\"total\":1.5,\"itemCount\":1,\"authorizationId\":\"a\"}",
         "a number with a fraction"},
        {"{\"orderId\":\"" OID "\",\"customerId\":\"" CID
         "\",\"total\":1,\"itemCount\":1,\"authorizationId\":\"a/../b\"}",
         "\"authorizationId\" must be"},
        {"{\"orderId\":\"" OID "\",\"orderId\":\"" OID "\"}", "not valid JSON"},
        {"[1,2]", "not a JSON object"},
        {"{\"orderId\":", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(shop_parse_order_placed(bad[i].json, &p, err, sizeof err), -1);
        expect_reason(err, "order.placed payload: ");
        expect_reason(err, bad[i].needle);
        if (strstr(err, "secret-value")) fail_msg("the reason quotes the value: %s", err);
    }
    char *big = malloc(SHOP_MSG_BYTES_MAX + 16);
    assert_non_null(big);
    memset(big, ' ', SHOP_MSG_BYTES_MAX + 8);
    big[0] = '{';
    big[SHOP_MSG_BYTES_MAX + 8] = '}';
    big[SHOP_MSG_BYTES_MAX + 9] = '\0';
    assert_int_equal(shop_parse_order_placed(big, &p, err, sizeof err), -1);
    expect_reason(err, "over the");
    free(big);
    assert_int_equal(shop_parse_order_placed(NULL, &p, err, sizeof err), -1);
}

static void test_cancelled_and_captured(void **state) {
    (void)state;
    char err[512];
    shop_order_cancelled c;
    assert_int_equal(shop_parse_order_cancelled("{\"orderId\":\"" OID "\",\"customerId\":\"" CID
                                                "\",\"authorizationId\":\"auth_1\"}",
                                                &c, err, sizeof err),
                     0);
    assert_string_equal(c.authorization_id, "auth_1");
    assert_int_equal(shop_parse_order_cancelled("{\"orderId\":\"" OID "\",\"customerId\":\"" CID
                                                "\"}",
                                                &c, err, sizeof err),
                     -1);
    expect_reason(err, "order.cancelled payload: \"authorizationId\" is missing");

    shop_payment_captured p;
    assert_int_equal(shop_parse_payment_captured("{\"orderId\":\"" OID "\",\"customerId\":\"" CID
                                                 "\",\"amount\":99999,\"captureId\":\"cap_1\","
                                                 "\"itemCount\":3}",
                                                 &p, err, sizeof err),
                     0);
    assert_int_equal(p.amount, 99999);
    assert_int_equal(p.item_count, 3);
    assert_string_equal(p.capture_id, "cap_1");
    assert_int_equal(shop_parse_payment_captured("{\"orderId\":\"" OID "\",\"customerId\":\"" CID
                                                 "\",\"amount\":null,\"captureId\":\"cap_1\","
                                                 "\"itemCount\":3}",
                                                 &p, err, sizeof err),
                     -1);
    expect_reason(err, "\"amount\" must be an integer");
    expect_reason(err, "it is null");
}

static void test_cleanup_data(void **state) {
    (void)state;
    long days = 0;
    char err[256];
    assert_int_equal(shop_parse_cleanup("{}", &days, err, sizeof err), 0);
    assert_int_equal(days, SHOP_CLEANUP_DAYS_DEFAULT);
    assert_int_equal(shop_parse_cleanup("{\"olderThanDays\":30}", &days, err, sizeof err), 0);
    assert_int_equal(days, 30);
    assert_int_equal(shop_parse_cleanup("{\"olderThanDays\":\"7\"}", &days, err, sizeof err), -1);
    expect_reason(err, "\"olderThanDays\" must be an integer");
    assert_int_equal(shop_parse_cleanup("{\"olderThanDays\":99999999}", &days, err, sizeof err),
                     -1);
}

static void test_provider_answers(void **state) {
    (void)state;
    char err[256], id[SHOP_REF_MAX + 1];
    shop_auth_status st;
    assert_int_equal(shop_parse_authorization("{\"status\":\"authorized\",\"amount\":1}", &st, id,
                                              err, sizeof err),
                     0);
    assert_int_equal(st, SHOP_AUTH_AUTHORIZED);
    assert_string_equal(id, "");
    assert_int_equal(shop_parse_authorization("{\"status\":\"captured\",\"captureId\":\"cap_9\"}",
                                              &st, id, err, sizeof err),
                     0);
    assert_int_equal(st, SHOP_AUTH_CAPTURED);
    assert_string_equal(id, "cap_9");
    assert_int_equal(
        shop_parse_authorization("{\"status\":\"captured\"}", &st, id, err, sizeof err), -1);
    assert_int_equal(shop_parse_authorization("{\"status\":\"voided\"}", &st, id, err, sizeof err),
                     0);
    assert_int_equal(st, SHOP_AUTH_VOIDED);
    assert_int_equal(shop_parse_authorization("{\"status\":\"expired\"}", &st, id, err, sizeof err),
                     0);
    assert_int_equal(st, SHOP_AUTH_EXPIRED);
    assert_int_equal(shop_parse_authorization("{\"status\":\"weird\"}", &st, id, err, sizeof err),
                     -1);
    expect_reason(err, "unknown \"status\"");

    assert_int_equal(
        shop_parse_answer_id("{\"messageId\":\"msg_1\"}", "messageId", id, err, sizeof err), 0);
    assert_string_equal(id, "msg_1");
    assert_int_equal(shop_parse_answer_id("{\"messageId\":7}", "messageId", id, err, sizeof err),
                     -1);

    char tracking[SHOP_REF_MAX + 1];
    assert_int_equal(shop_parse_lookup("{\"shipment\":null}", tracking, err, sizeof err), 0);
    assert_int_equal(shop_parse_lookup("{\"shipment\":{\"trackingNumber\":\"TRK000000000001\"}}",
                                       tracking, err, sizeof err),
                     1);
    assert_string_equal(tracking, "TRK000000000001");
    assert_int_equal(shop_parse_lookup("{\"shipment\":[]}", tracking, err, sizeof err), -1);
    assert_int_equal(shop_parse_lookup("{}", tracking, err, sizeof err), -1);
}

static void test_text_helpers(void **state) {
    (void)state;
    char out[64];
    assert_string_equal(shop_error_text("{\"error\":\"injected\\n\"}", out, sizeof out),
                        "injected?");
    assert_string_equal(shop_error_text("not json", out, sizeof out), "");
    assert_string_equal(shop_error_text(NULL, out, sizeof out), "");
    assert_string_equal(shop_printable("a\"b\n", out, sizeof out), "a\\x22b\\x0a");
    assert_string_equal(shop_printable("abcdef", out, 4), "abc");
    assert_true(shop_ref_valid("cap_01a2:x.y-z"));
    assert_false(shop_ref_valid(""));
    assert_false(shop_ref_valid("a b"));
    assert_false(shop_ref_valid(NULL));
    char longref[SHOP_REF_MAX + 2];
    memset(longref, 'a', sizeof longref - 1);
    longref[sizeof longref - 1] = '\0';
    assert_false(shop_ref_valid(longref));
    longref[SHOP_REF_MAX] = '\0';
    assert_true(shop_ref_valid(longref));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_placed), cmocka_unit_test(test_cancelled_and_captured),
        cmocka_unit_test(test_cleanup_data), cmocka_unit_test(test_provider_answers),
        cmocka_unit_test(test_text_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

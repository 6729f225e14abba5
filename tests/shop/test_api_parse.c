/* test_api_parse.c - shop_order_parse alone (no servers): a valid body becomes the struct
 * (customer lower-cased, lines in order, total and item count summed) and its items JSON;
 * every rule names its field; the limits are inclusive; field texts are cut on a UTF-8
 * boundary; and mutated bodies (bytes flipped, cut, duplicated) never crash and always
 * come back valid or with a field and a message. */
#include "order_parse.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define C "6f9619ff-8b86-d011-b42d-00cf4fc964ff"

static int parse(const char *body, shop_order_req *o, char *field, char *msg) {
    return shop_order_parse(body, strlen(body), o, field, 64, msg, 512);
}

static void test_valid_order(void **state) {
    (void)state;
    shop_order_req o;
    char field[64], msg[512];
    const char *body =
        " {\"items\":[{\"sku\":\"A b~\",\"qty\":999,\"unitPrice\":1000000000000},"
        "{\"unitPrice\":0,\"qty\":1,\"sku\":\"X\"},{\"sku\":\"A b~\",\"qty\":2,"
        "\"unitPrice\":7}],\"customerId\":\"6F9619FF-8B86-D011-B42D-00CF4FC964FF\"}\n";
    assert_int_equal(parse(body, &o, field, msg), SHOP_ORDER_OK);
    assert_string_equal(field, "");
    assert_string_equal(msg, "");
    assert_string_equal(o.customer_id, C);
    assert_int_equal(o.nitems, 3);
    assert_string_equal(o.items[0].sku, "A b~");
    assert_int_equal(o.items[0].qty, 999);
    assert_int_equal(o.items[0].unit_price, 1000000000000LL);
    assert_int_equal(o.items[1].unit_price, 0);
    assert_int_equal(o.total, 999000000000014LL);
    assert_int_equal(o.item_count, 1002);
    char *items = shop_order_items_json(&o);
    assert_string_equal(items, "[{\"sku\":\"A b~\",\"qty\":999,\"unitPrice\":1000000000000},"
                               "{\"sku\":\"X\",\"qty\":1,\"unitPrice\":0},"
                               "{\"sku\":\"A b~\",\"qty\":2,\"unitPrice\":7}]");
    free(items);
    shop_order_req_free(&o);
    assert_null(o.items);
    shop_order_req_free(NULL);
}

static void test_limits_inclusive(void **state) {
    (void)state;
    /* 100 items, a 64-byte sku, the total exactly at 10^15 */
    char body[20000];
    int n = snprintf(body, sizeof body, "{\"customerId\":\"" C "\",\"items\":[");
    for (int i = 0; i < 100; i++)
        n += snprintf(body + n, sizeof body - (size_t)n,
                      "%s{\"sku\":\"%064d\",\"qty\":1000,\"unitPrice\":%s}", i ? "," : "", i,
                      i ? "0" : "1000000000000");
    snprintf(body + n, sizeof body - (size_t)n, "]}");
    shop_order_req o;
    char field[64], msg[512];
    assert_int_equal(parse(body, &o, field, msg), SHOP_ORDER_OK);
    assert_int_equal(o.nitems, 100);
    assert_int_equal(o.total, 1000000000000000LL);
    assert_int_equal(o.item_count, 100000);
    assert_int_equal(strlen(o.items[99].sku), 64);
    shop_order_req_free(&o);
}

static void test_fields_named(void **state) {
    (void)state;
    static const struct {
        const char *body, *field, *says;
    } cases[] = {
        {"", "", "empty"},
        {"{", "", "not valid JSON"},
        {"{\"a\":1,\"a\":1}", "", "duplicate"},
        {"[1]", "", "JSON object"},
        {"{\"customerId\":\"" C "\",\"items\":[{\"sku\":\"A\",\"qty\":1,\"unitPrice\":1}],"
         "\"note\":\"x\"}",
         "note", "unknown"},
        {"{\"items\":[]}", "customerId", "required"},
        {"{\"customerId\":\"" C "\"}", "items", "required"},
        {"{\"customerId\":\"" C "\",\"items\":[1]}", "items[0]", "an integer"},
        {"{\"customerId\":\"" C "\",\"items\":[{\"sku\":\"A\",\"qty\":1,\"unitPrice\":1},"
         "{\"sku\":\"A\",\"qty\":1,\"unitPrice\":1,\"colour\":\"red\"}]}",
         "items[1].colour", "unknown"},
        {"{\"customerId\":\"" C "\",\"items\":[{\"sku\":\"A\",\"qty\":1.0,\"unitPrice\":1}]}",
         "items[0].qty", "fraction"},
        {"{\"customerId\":\"" C "\",\"items\":[{\"sku\":\"\\u007f\",\"qty\":1,\"unitPrice\":1}]}",
         "items[0].sku", "printable"},
        {"{\"customerId\":\"" C "\",\"items\":[{\"sku\":\"A\",\"qty\":1,\"unitPrice\":false}]}",
         "items[0].unitPrice", "boolean"},
        {"{\"customerId\":\"" C "\",\"items\":[{\"sku\":\"A\",\"qty\":1000,\"unitPrice\":"
         "1000000000000},{\"sku\":\"A\",\"qty\":1,\"unitPrice\":1}]}",
         "items", "items[1]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        shop_order_req o;
        char field[64], msg[512];
        int rc = parse(cases[i].body, &o, field, msg);
        if (rc != SHOP_ORDER_INVALID || strcmp(field, cases[i].field) ||
            !strstr(msg, cases[i].says))
            fail_msg("case %zu: rc %d field '%s' msg '%s'", i, rc, field, msg);
        assert_null(o.items);
    }
}

static void test_small_buffers_cut_safely(void **state) {
    (void)state;
    /* an unknown key of multi-byte characters, a field buffer of 6 bytes: cut on a boundary */
    const char *body = "{\"\xc3\xa9\xc3\xa9\xc3\xa9\":1}";
    shop_order_req o;
    char field[6], msg[10];
    assert_int_equal(shop_order_parse(body, strlen(body), &o, field, sizeof field, msg, sizeof msg),
                     SHOP_ORDER_INVALID);
    assert_string_equal(field, "\xc3\xa9\xc3\xa9");
    assert_int_equal(strlen(msg), 9);
    /* no buffers at all */
    assert_int_equal(shop_order_parse("{}", 2, &o, NULL, 0, NULL, 0), SHOP_ORDER_INVALID);
    /* a body that is not NUL-terminated is read only to len */
    const char cut[] = {'{', '}', 'x'};
    char f[64], m[512];
    assert_int_equal(shop_order_parse(cut, 2, &o, f, sizeof f, m, sizeof m), SHOP_ORDER_INVALID);
    assert_string_equal(f, "customerId");
}

/* Messages are printable ASCII whatever bytes the body held. */
static void expect_clean(const char *msg) {
    for (const char *c = msg; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) fail_msg("message byte %02x", *c);
}

static void test_mutations_never_crash(void **state) {
    (void)state;
    const char *seed = "{\"customerId\":\"" C "\",\"items\":[{\"sku\":\"A-1\",\"qty\":3,"
                       "\"unitPrice\":250000},{\"sku\":\"B\",\"qty\":1,\"unitPrice\":0}]}";
    size_t n = strlen(seed);
    unsigned long long x = 88172645463325252ULL;
    int ok = 0, bad = 0;
    for (int round = 0; round < 20000; round++) {
        char buf[512];
        memcpy(buf, seed, n);
        size_t len = n;
        int edits = 1 + round % 4;
        for (int e = 0; e < edits; e++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t at = (size_t)(x % len);
            switch ((x >> 32) % 4) {
            case 0:
                buf[at] = (char)(x >> 40);
                break;
            case 1:
                len = at + 1;
                break;
            case 2:
                if (len + 1 < sizeof buf) {
                    memmove(buf + at + 1, buf + at, len - at);
                    len++;
                }
                break;
            default:
                buf[at] = "{}[]\",:0-9e. \\"[(x >> 40) % 14];
            }
        }
        shop_order_req o;
        char field[32], msg[256];
        int rc = shop_order_parse(buf, len, &o, field, sizeof field, msg, sizeof msg);
        if (rc == SHOP_ORDER_OK) {
            ok++;
            assert_true(o.nitems >= 1 && o.nitems <= SHOP_ORDER_ITEMS_MAX);
            assert_true(o.total >= 0 && o.total <= SHOP_TOTAL_MAX);
            char *items = shop_order_items_json(&o);
            assert_non_null(items);
            free(items);
            shop_order_req_free(&o);
        } else {
            assert_int_equal(rc, SHOP_ORDER_INVALID);
            assert_true(msg[0] != '\0');
            expect_clean(msg);
            bad++;
        }
    }
    assert_true(ok > 0 && bad > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_order),
        cmocka_unit_test(test_limits_inclusive),
        cmocka_unit_test(test_fields_named),
        cmocka_unit_test(test_small_buffers_cut_safely),
        cmocka_unit_test(test_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* fuzz_shop_order.c - libFuzzer target for shop-api's POST /orders body parser
 * (examples/shop/api/order_parse.c). Beyond "no crash, no leak, no UB" it checks the
 * parser's promises: an accepted order keeps every stated bound (1..100 items, qty, unit
 * price, sku printable, the total is the sum and within its cap, a lower-case uuid) and its
 * items render back to JSON; a refusal comes with a message for the client. */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "order_parse.h"

static void check(int cond) {
    if (!cond) abort(); /* libFuzzer reports the input that got here */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    shop_order_req r;
    char field[SHOP_ORDER_FIELD_MAX], msg[256];
    int rc = shop_order_parse((const char *)data, size, &r, field, sizeof field, msg, sizeof msg);
    if (rc != SHOP_ORDER_OK) {
        check(rc == SHOP_ORDER_INVALID || rc == SHOP_ORDER_NOMEM);
        if (rc == SHOP_ORDER_INVALID) {
            check(msg[0] != '\0' && strlen(field) < sizeof field);
        }
        return 0;
    }
    check(strlen(r.customer_id) == 36);
    for (int i = 0; i < 36; i++)
        check(!isupper((unsigned char)r.customer_id[i]));
    check(r.nitems >= 1 && r.nitems <= SHOP_ORDER_ITEMS_MAX);
    long long total = 0, count = 0;
    for (size_t i = 0; i < r.nitems; i++) {
        const shop_order_item *it = &r.items[i];
        size_t n = strlen(it->sku);
        check(n >= 1 && n <= SHOP_SKU_MAX);
        for (size_t k = 0; k < n; k++)
            check(it->sku[k] >= 0x20 && it->sku[k] <= 0x7e);
        check(it->qty >= 1 && it->qty <= SHOP_QTY_MAX);
        check(it->unit_price >= 0 && it->unit_price <= SHOP_UNIT_PRICE_MAX);
        total += it->qty * it->unit_price;
        count += it->qty;
    }
    check(total == r.total && total <= SHOP_TOTAL_MAX && count == r.item_count);
    char *items = shop_order_items_json(&r);
    if (items) {
        json_t *j = json_loads(items, 0, NULL);
        check(j && json_is_array(j) && json_array_size(j) == r.nitems);
        json_decref(j);
        free(items);
    }
    shop_order_req_free(&r);
    return 0;
}

/* order_parse.h - the body of POST /orders, parsed and validated into a plain struct.
 *
 * Pure: no I/O, no globals, no locks (so it can be unit-tested and fuzzed alone). The rules,
 * which shop-api's README states too:
 *   {"customerId": "<uuid>", "items": [{"sku": "...", "qty": n, "unitPrice": n}, ...]}
 *   - the body is one JSON object (UTF-8, no duplicate keys, nothing after it);
 *   - unknown keys are refused, at the top level and in items (a misspelt "quantity" must not
 *     become an order of one);
 *   - customerId: a UUID in canonical text form (either case; kept lower-case);
 *   - items: 1..SHOP_ORDER_ITEMS_MAX objects, each with all three keys;
 *   - sku: a string of 1..SHOP_SKU_MAX printable ASCII characters (0x20..0x7E);
 *   - qty: a JSON integer (no fraction, no exponent, not a string) 1..SHOP_QTY_MAX;
 *   - unitPrice: a JSON integer 0..SHOP_UNIT_PRICE_MAX (VND: no minor unit);
 *   - the total (sum of qty * unitPrice) at most SHOP_TOTAL_MAX.
 *   The same sku may appear on several lines (lines are kept as given). */
#ifndef SHOP_ORDER_PARSE_H
#define SHOP_ORDER_PARSE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHOP_ORDER_ITEMS_MAX 100
#define SHOP_SKU_MAX 64
#define SHOP_QTY_MAX 1000
#define SHOP_UNIT_PRICE_MAX 1000000000000LL /* 10^12 */
#define SHOP_TOTAL_MAX 1000000000000000LL   /* 10^15 */
#define SHOP_ORDER_FIELD_MAX 32             /* "items[99].unitPrice" and NUL fit */

typedef struct shop_order_item {
    char sku[SHOP_SKU_MAX + 1];
    int qty;
    long long unit_price;
} shop_order_item;

typedef struct shop_order_req {
    char customer_id[37]; /* lower-case canonical UUID */
    shop_order_item *items;
    size_t nitems;
    long long total;      /* sum of qty * unit_price, 0..SHOP_TOTAL_MAX */
    long long item_count; /* sum of qty */
} shop_order_req;

/* Outcomes of shop_order_parse. */
enum { SHOP_ORDER_OK = 0, SHOP_ORDER_INVALID = -1, SHOP_ORDER_NOMEM = -2 };

/* Parse and validate body[0..len) (need not be NUL-terminated).
 * Returns: SHOP_ORDER_OK with *out filled (free it with shop_order_req_free);
 *   SHOP_ORDER_INVALID with the offending field in field[fcap] ("customerId",
 *   "items[2].qty", ...; "" when the body as a whole is at fault, e.g. not JSON) and a
 *   sentence for a client in msg[mcap]; SHOP_ORDER_NOMEM when memory ran out. On failure
 *   *out holds nothing to free. field/msg may be NULL when fcap/mcap are 0; texts are cut to
 *   the buffers, always NUL-terminated.
 * Blocks: no. Threads: any (no shared state). */
int shop_order_parse(const char *body, size_t len, shop_order_req *out, char *field, size_t fcap,
                     char *msg, size_t mcap);

/* Free what shop_order_parse put in *r and zero it. NULL accepted. */
void shop_order_req_free(shop_order_req *r);

/* The items as compact JSON, [{"sku":..,"qty":..,"unitPrice":..}, ...], in the request's
 * order: what the orders.items column and the order view hold.
 * Returns: a malloc'd NUL-terminated string (caller frees), NULL on OOM. Threads: any. */
char *shop_order_items_json(const shop_order_req *r);

#ifdef __cplusplus
}
#endif

#endif

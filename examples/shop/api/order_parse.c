/* order_parse.c - POST /orders bodies: JSON text in, a validated shop_order_req out, or the
 * first problem found (in the order: the body, its keys, customerId, then each item's keys,
 * sku, qty, unitPrice, then the total) named by its field. Pure: no I/O; needs only
 * jansson. */
#include "order_parse.h"

#include "ex_text.h"

#include <jansson.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct problem {
    char *field;
    size_t fcap;
    char *msg;
    size_t mcap;
} problem;

/* Copy s into dst[cap] without splitting a UTF-8 sequence when it must be cut (the field goes
 * into a JSON answer, which must stay valid UTF-8). */
static void copy_utf8(char *dst, size_t cap, const char *s) {
    if (!dst || cap == 0) return;
    size_t n = strlen(s);
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--; /* s[n] would start the cut-off part: back up to a sequence start */
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static int fail(problem *p, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(problem *p, const char *field, const char *fmt, ...) {
    copy_utf8(p->field, p->fcap, field);
    if (p->msg && p->mcap) {
        char text[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        /* jansson's messages may quote raw bytes of the body ("near '...'"): keep the
         * sentence printable ASCII, so the JSON answer carrying it is always valid */
        for (char *c = text; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7E) *c = '?';
        copy_utf8(p->msg, p->mcap, text);
    }
    return SHOP_ORDER_INVALID;
}

/* What a JSON value is, for "..., got a string". */
static const char *kind(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number with a fraction or an exponent";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "something else";
}

/* A JSON integer within [min, max] in *out, else a problem naming `field`. */
static int integer_in(problem *p, const json_t *v, const char *field, const char *name,
                      long long min, long long max, long long *out) {
    if (!json_is_integer(v))
        return fail(p, field, "%s must be an integer from %lld to %lld, got %s", name, min, max,
                    kind(v));
    json_int_t n = json_integer_value(v);
    if (n < min || n > max)
        return fail(p, field, "%s must be an integer from %lld to %lld, got %lld", name, min, max,
                    (long long)n);
    *out = (long long)n;
    return SHOP_ORDER_OK;
}

static int parse_sku(problem *p, const json_t *v, const char *field, char out[SHOP_SKU_MAX + 1]) {
    if (!json_is_string(v))
        return fail(p, field, "sku must be a string of 1 to %d printable ASCII characters, got %s",
                    SHOP_SKU_MAX, kind(v));
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0) return fail(p, field, "sku must not be empty");
    if (n > SHOP_SKU_MAX)
        return fail(p, field, "sku is %zu bytes long, at most %d are allowed", n, SHOP_SKU_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7E)
            return fail(p, field,
                        "sku may hold only printable ASCII characters (0x20-0x7E); byte %zu "
                        "is not",
                        i + 1);
    }
    memcpy(out, s, n + 1);
    return SHOP_ORDER_OK;
}

static int parse_item(problem *p, const json_t *v, size_t index, shop_order_item *it) {
    char field[SHOP_ORDER_FIELD_MAX];
    snprintf(field, sizeof field, "items[%zu]", index);
    if (!json_is_object(v))
        return fail(p, field, "each item must be an object with sku, qty and unitPrice, got %s",
                    kind(v));
    const char *key;
    json_t *member;
    json_object_foreach((json_t *)v, key, member) {
        if (strcmp(key, "sku") && strcmp(key, "qty") && strcmp(key, "unitPrice")) {
            char f[SHOP_ORDER_FIELD_MAX + 80];
            snprintf(f, sizeof f, "items[%zu].%s", index, key);
            return fail(p, f, "unknown field: an item has only sku, qty and unitPrice");
        }
    }
    static const char *const names[] = {"sku", "qty", "unitPrice"};
    for (size_t k = 0; k < 3; k++) {
        if (!json_object_get(v, names[k])) {
            snprintf(field, sizeof field, "items[%zu].%s", index, names[k]);
            return fail(p, field, "%s is required", names[k]);
        }
    }
    snprintf(field, sizeof field, "items[%zu].sku", index);
    if (parse_sku(p, json_object_get(v, "sku"), field, it->sku)) return SHOP_ORDER_INVALID;
    long long n;
    snprintf(field, sizeof field, "items[%zu].qty", index);
    if (integer_in(p, json_object_get(v, "qty"), field, "qty", 1, SHOP_QTY_MAX, &n))
        return SHOP_ORDER_INVALID;
    it->qty = (int)n;
    snprintf(field, sizeof field, "items[%zu].unitPrice", index);
    if (integer_in(p, json_object_get(v, "unitPrice"), field, "unitPrice", 0, SHOP_UNIT_PRICE_MAX,
                   &it->unit_price))
        return SHOP_ORDER_INVALID;
    return SHOP_ORDER_OK;
}

static int parse_customer(problem *p, const json_t *v, char out[37]) {
    if (!v) return fail(p, "customerId", "customerId is required");
    if (!json_is_string(v))
        return fail(p, "customerId", "customerId must be a string holding a UUID, got %s", kind(v));
    const char *s = json_string_value(v);
    if (json_string_length(v) != 36 || !ex_uuid_valid(s)) /* no NUL inside either */
        return fail(p, "customerId",
                    "customerId must be a UUID (8-4-4-4-12 hexadecimal digits, e.g. "
                    "6f9619ff-8b86-d011-b42d-00cf4fc964ff)");
    for (int i = 0; i < 36; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[36] = '\0';
    return SHOP_ORDER_OK;
}

static int parse_object(problem *p, const json_t *root, shop_order_req *out) {
    if (!json_is_object(root))
        return fail(p, "", "the body must be a JSON object {\"customerId\", \"items\"}, got %s",
                    kind(root));
    const char *key;
    json_t *member;
    json_object_foreach((json_t *)root, key, member) {
        if (strcmp(key, "customerId") && strcmp(key, "items"))
            return fail(p, key, "unknown field: an order has only customerId and items");
    }
    if (parse_customer(p, json_object_get(root, "customerId"), out->customer_id))
        return SHOP_ORDER_INVALID;
    const json_t *items = json_object_get(root, "items");
    if (!items)
        return fail(p, "items", "items is required: an array of 1 to %d items",
                    SHOP_ORDER_ITEMS_MAX);
    if (!json_is_array(items))
        return fail(p, "items", "items must be an array of 1 to %d items, got %s",
                    SHOP_ORDER_ITEMS_MAX, kind(items));
    size_t n = json_array_size(items);
    if (n == 0) return fail(p, "items", "items must hold at least one item");
    if (n > SHOP_ORDER_ITEMS_MAX)
        return fail(p, "items", "items may hold at most %d items, got %zu", SHOP_ORDER_ITEMS_MAX,
                    n);
    out->items = calloc(n, sizeof *out->items);
    if (!out->items) return SHOP_ORDER_NOMEM;
    out->nitems = n;
    for (size_t i = 0; i < n; i++) {
        shop_order_item *it = &out->items[i];
        if (parse_item(p, json_array_get(items, i), i, it)) return SHOP_ORDER_INVALID;
        /* at most 1000 * 10^12 per line and 100 lines: no overflow before the check */
        out->total += (long long)it->qty * it->unit_price;
        out->item_count += it->qty;
        if (out->total > SHOP_TOTAL_MAX)
            return fail(p, "items", "the order's total passes %lld at items[%zu]", SHOP_TOTAL_MAX,
                        i);
    }
    return SHOP_ORDER_OK;
}

int shop_order_parse(const char *body, size_t len, shop_order_req *out, char *field, size_t fcap,
                     char *msg, size_t mcap) {
    problem p = {field, fcap, msg, mcap};
    memset(out, 0, sizeof *out);
    copy_utf8(field, fcap, "");
    copy_utf8(msg, mcap, "");
    size_t blank = 0;
    while (blank < len && (body[blank] == ' ' || body[blank] == '\t' || body[blank] == '\r' ||
                           body[blank] == '\n'))
        blank++;
    if (blank == len) return fail(&p, "", "the request body is empty: expected a JSON object");
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!root) {
        if (json_error_code(&je) == json_error_out_of_memory) return SHOP_ORDER_NOMEM;
        return fail(&p, "", "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line,
                    je.column);
    }
    int rc = parse_object(&p, root, out);
    json_decref(root);
    if (rc != SHOP_ORDER_OK) shop_order_req_free(out);
    return rc;
}

void shop_order_req_free(shop_order_req *r) {
    if (!r) return;
    free(r->items);
    memset(r, 0, sizeof *r);
}

char *shop_order_items_json(const shop_order_req *r) {
    json_t *a = json_array();
    if (!a) return NULL;
    for (size_t i = 0; i < r->nitems; i++) {
        const shop_order_item *it = &r->items[i];
        json_t *o = json_pack("{s:s,s:i,s:I}", "sku", it->sku, "qty", it->qty, "unitPrice",
                              (json_int_t)it->unit_price);
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
    }
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

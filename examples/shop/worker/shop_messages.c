/* shop_messages.c - parsing and checking what shop-worker reads (payloads, provider
 * answers). No I/O: see shop_messages.h. */
#include "shop_messages.h"

#include "ex_text.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static json_t *load_object(const char *json, const char *what, char *err, size_t cap) {
    if (!json) {
        snprintf(err, cap, "%s: no JSON", what);
        return NULL;
    }
    size_t len = strlen(json);
    if (len > SHOP_MSG_BYTES_MAX) {
        snprintf(err, cap, "%s: %zu bytes, over the %u-byte limit", what, len, SHOP_MSG_BYTES_MAX);
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        /* jansson's text names a position or a duplicate key, never a value */
        snprintf(err, cap, "%s: not valid JSON (%s, at line %d column %d)", what, je.text, je.line,
                 je.column);
        return NULL;
    }
    if (!json_is_object(v)) {
        snprintf(err, cap, "%s: not a JSON object", what);
        json_decref(v);
        return NULL;
    }
    return v;
}

static const char *type_name(const json_t *v) {
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
        return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* Fetch member `key`, failing with a message when missing. */
static json_t *member(json_t *o, const char *what, const char *key, char *err, size_t cap) {
    json_t *v = json_object_get(o, key);
    if (!v) snprintf(err, cap, "%s: \"%s\" is missing", what, key);
    return v;
}

static int get_uuid(json_t *o, const char *what, const char *key, char out[37], char *err,
                    size_t cap) {
    json_t *v = member(o, what, key, err, cap);
    if (!v) return -1;
    if (!json_is_string(v) || json_string_length(v) != 36 || !ex_uuid_valid(json_string_value(v))) {
        snprintf(err, cap, "%s: \"%s\" must be a UUID string (it is %s)", what, key,
                 json_is_string(v) ? "a string that is not a UUID" : type_name(v));
        return -1;
    }
    memcpy(out, json_string_value(v), 37);
    return 0;
}

static int get_int(json_t *o, const char *what, const char *key, long long max, long long *out,
                   char *err, size_t cap) {
    json_t *v = member(o, what, key, err, cap);
    if (!v) return -1;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max) {
        snprintf(err, cap, "%s: \"%s\" must be an integer in 0..%lld (it is %s)", what, key, max,
                 json_is_integer(v) ? "out of range" : type_name(v));
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

int shop_ref_valid(const char *s) {
    if (!s || !*s) return 0;
    size_t n = 0;
    for (const char *p = s; *p; p++, n++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == ':' || c == '-';
        if (!ok || n >= SHOP_REF_MAX) return 0;
    }
    return 1;
}

static int get_ref(json_t *o, const char *what, const char *key, char *out, char *err, size_t cap) {
    json_t *v = member(o, what, key, err, cap);
    if (!v) return -1;
    if (!json_is_string(v) || !shop_ref_valid(json_string_value(v))) {
        snprintf(err, cap, "%s: \"%s\" must be 1..%d characters of [A-Za-z0-9_.:-] (it is %s)",
                 what, key, SHOP_REF_MAX,
                 json_is_string(v) ? "a string of other characters or length" : type_name(v));
        return -1;
    }
    snprintf(out, SHOP_REF_MAX + 1, "%s", json_string_value(v));
    return 0;
}

int shop_parse_order_placed(const char *json, shop_order_placed *out, char *err, size_t cap) {
    static const char what[] = "order.placed payload";
    memset(out, 0, sizeof *out);
    json_t *o = load_object(json, what, err, cap);
    if (!o) return -1;
    int rc = get_uuid(o, what, "orderId", out->order_id, err, cap) ||
                     get_uuid(o, what, "customerId", out->customer_id, err, cap) ||
                     get_int(o, what, "total", SHOP_AMOUNT_MAX, &out->total, err, cap) ||
                     get_int(o, what, "itemCount", SHOP_ITEMS_MAX, &out->item_count, err, cap) ||
                     get_ref(o, what, "authorizationId", out->authorization_id, err, cap)
                 ? -1
                 : 0;
    json_decref(o);
    return rc;
}

int shop_parse_order_cancelled(const char *json, shop_order_cancelled *out, char *err, size_t cap) {
    static const char what[] = "order.cancelled payload";
    memset(out, 0, sizeof *out);
    json_t *o = load_object(json, what, err, cap);
    if (!o) return -1;
    int rc = get_uuid(o, what, "orderId", out->order_id, err, cap) ||
                     get_uuid(o, what, "customerId", out->customer_id, err, cap) ||
                     get_ref(o, what, "authorizationId", out->authorization_id, err, cap)
                 ? -1
                 : 0;
    json_decref(o);
    return rc;
}

int shop_parse_payment_captured(const char *json, shop_payment_captured *out, char *err,
                                size_t cap) {
    static const char what[] = "payment.captured payload";
    memset(out, 0, sizeof *out);
    json_t *o = load_object(json, what, err, cap);
    if (!o) return -1;
    int rc = get_uuid(o, what, "orderId", out->order_id, err, cap) ||
                     get_uuid(o, what, "customerId", out->customer_id, err, cap) ||
                     get_int(o, what, "amount", SHOP_AMOUNT_MAX, &out->amount, err, cap) ||
                     get_ref(o, what, "captureId", out->capture_id, err, cap) ||
                     get_int(o, what, "itemCount", SHOP_ITEMS_MAX, &out->item_count, err, cap)
                 ? -1
                 : 0;
    json_decref(o);
    return rc;
}

int shop_parse_cleanup(const char *json, long *days, char *err, size_t cap) {
    static const char what[] = "outbox-cleanup data";
    json_t *o = load_object(json, what, err, cap);
    if (!o) return -1;
    int rc = 0;
    *days = SHOP_CLEANUP_DAYS_DEFAULT;
    if (json_object_get(o, "olderThanDays")) {
        long long d = 0;
        rc = get_int(o, what, "olderThanDays", SHOP_CLEANUP_DAYS_MAX, &d, err, cap);
        if (!rc) *days = (long)d;
    }
    json_decref(o);
    return rc;
}

int shop_parse_authorization(const char *json, shop_auth_status *status, char *capture_id,
                             char *err, size_t cap) {
    static const char what[] = "gateway authorization";
    capture_id[0] = '\0';
    json_t *o = load_object(json, what, err, cap);
    if (!o) return -1;
    int rc = -1;
    json_t *s = member(o, what, "status", err, cap);
    const char *st = json_is_string(s) ? json_string_value(s) : NULL;
    if (!s) {
    } else if (!st) {
        snprintf(err, cap, "%s: \"status\" must be a string (it is %s)", what, type_name(s));
    } else if (!strcmp(st, "authorized")) {
        *status = SHOP_AUTH_AUTHORIZED, rc = 0;
    } else if (!strcmp(st, "voided")) {
        *status = SHOP_AUTH_VOIDED, rc = 0;
    } else if (!strcmp(st, "expired")) {
        *status = SHOP_AUTH_EXPIRED, rc = 0;
    } else if (!strcmp(st, "captured")) {
        *status = SHOP_AUTH_CAPTURED;
        rc = get_ref(o, what, "captureId", capture_id, err, cap);
    } else {
        snprintf(err, cap, "%s: unknown \"status\" (not authorized, captured, voided, expired)",
                 what);
    }
    json_decref(o);
    return rc;
}

int shop_parse_answer_id(const char *json, const char *member_name, char *out, char *err,
                         size_t cap) {
    out[0] = '\0';
    json_t *o = load_object(json, "provider answer", err, cap);
    if (!o) return -1;
    int rc = get_ref(o, "provider answer", member_name, out, err, cap);
    json_decref(o);
    return rc;
}

int shop_parse_lookup(const char *json, char *tracking, char *err, size_t cap) {
    static const char what[] = "carrier lookup";
    tracking[0] = '\0';
    json_t *o = load_object(json, what, err, cap);
    if (!o) return -1;
    int rc = -1;
    json_t *s = member(o, what, "shipment", err, cap);
    if (!s) {
    } else if (json_is_null(s)) {
        rc = 0;
    } else if (!json_is_object(s)) {
        snprintf(err, cap, "%s: \"shipment\" must be an object or null (it is %s)", what,
                 type_name(s));
    } else if (get_ref(s, what, "trackingNumber", tracking, err, cap) == 0) {
        rc = 1;
    }
    json_decref(o);
    return rc;
}

const char *shop_error_text(const char *json, char *out, size_t cap) {
    if (!cap) return out;
    out[0] = '\0';
    if (!json || !*json || strlen(json) > SHOP_MSG_BYTES_MAX) return out;
    json_t *o = json_loads(json, 0, NULL);
    json_t *e = json_is_object(o) ? json_object_get(o, "error") : NULL;
    if (json_is_string(e)) {
        size_t n = 0;
        for (const char *p = json_string_value(e); *p && n + 1 < cap; p++)
            out[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
        out[n] = '\0';
    }
    json_decref(o);
    return out;
}

const char *shop_printable(const char *s, char *out, size_t cap) {
    if (!cap) return out;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char piece[5];
        if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
            piece[0] = (char)*p, piece[1] = '\0';
        else
            snprintf(piece, sizeof piece, "\\x%02x", *p);
        size_t k = strlen(piece);
        if (n + k + 1 > cap) break;
        memcpy(out + n, piece, k);
        n += k;
    }
    out[n] = '\0';
    return out;
}

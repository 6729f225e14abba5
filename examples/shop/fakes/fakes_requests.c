/* fakes_requests.c - parsing and checking the bodies shop-fakes accepts. Pure: see
 * fakes_requests.h. */
#include "fakes_requests.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int fail(fakes_req_error *e, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(fakes_req_error *e, const char *field, const char *fmt, ...) {
    snprintf(e->field, sizeof e->field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* The body as a JSON object; an empty body is {} when allow_empty. NULL with *e set. */
static json_t *load_object(const char *body, size_t len, int allow_empty, fakes_req_error *e) {
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
        i++;
    if (i == len) {
        if (allow_empty) return json_object();
        fail(e, "", "the body must be a JSON object");
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        fail(e, "", "malformed JSON: %s (line %d, column %d)", je.text, je.line, je.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        fail(e, "", "the body must be a JSON object");
        return NULL;
    }
    return root;
}

/* An integer field in [min, max]. Returns 1 found, 0 absent (and not required), -1 bad. */
static int get_int(const json_t *o, const char *name, int required, long long min, long long max,
                   long long *out, fakes_req_error *e) {
    const json_t *v = json_object_get(o, name);
    if (!v) {
        if (required) return fail(e, name, "%s is required", name);
        return 0;
    }
    if (!json_is_integer(v)) return fail(e, name, "%s must be an integer", name);
    json_int_t n = json_integer_value(v);
    if (n < min || n > max) return fail(e, name, "%s must be from %lld to %lld", name, min, max);
    *out = (long long)n;
    return 1;
}

/* A string field of min..max bytes with no NUL inside. Returns as get_int. */
static int get_str(const json_t *o, const char *name, int required, size_t min, size_t max,
                   const char **out, fakes_req_error *e) {
    const json_t *v = json_object_get(o, name);
    if (!v) {
        if (required) return fail(e, name, "%s is required", name);
        return 0;
    }
    if (!json_is_string(v)) return fail(e, name, "%s must be a string", name);
    size_t n = json_string_length(v);
    if (n < min || n > max) return fail(e, name, "%s must be %zu to %zu bytes", name, min, max);
    if (strlen(json_string_value(v)) != n)
        return fail(e, name, "%s must not contain NUL characters", name);
    *out = json_string_value(v);
    return 1;
}

int fakes_parse_authorize(const char *body, size_t len, fakes_authorize_req *out,
                          fakes_req_error *e) {
    json_t *o = load_object(body, len, 0, e);
    if (!o) return -1;
    const char *ref = NULL;
    int rc = -1;
    if (get_int(o, "amount", 1, 1, FAKES_AMOUNT_MAX, &out->amount, e) < 0 ||
        get_str(o, "reference", 1, 1, FAKES_REFERENCE_MAX, &ref, e) < 0)
        goto out;
    snprintf(out->reference, sizeof out->reference, "%s", ref);
    rc = 0;
out:
    json_decref(o);
    return rc;
}

int fakes_parse_capture(const char *body, size_t len, fakes_capture_req *out, fakes_req_error *e) {
    json_t *o = load_object(body, len, 1, e);
    if (!o) return -1;
    int r = get_int(o, "amount", 0, 1, FAKES_AMOUNT_MAX, &out->amount, e);
    json_decref(o);
    if (r < 0) return -1;
    out->has_amount = r == 1;
    return 0;
}

int fakes_parse_empty(const char *body, size_t len, fakes_req_error *e) {
    json_t *o = load_object(body, len, 1, e);
    if (!o) return -1;
    json_decref(o);
    return 0;
}

int fakes_parse_shipment(const char *body, size_t len, fakes_shipment_req *out,
                         fakes_req_error *e) {
    json_t *o = load_object(body, len, 0, e);
    if (!o) return -1;
    const char *ref = NULL;
    long long items = 0;
    int rc = -1;
    if (get_str(o, "reference", 1, 1, FAKES_REFERENCE_MAX, &ref, e) < 0 ||
        get_int(o, "items", 1, 1, FAKES_ITEMS_MAX, &items, e) < 0)
        goto out;
    snprintf(out->reference, sizeof out->reference, "%s", ref);
    out->items = (long)items;
    rc = 0;
out:
    json_decref(o);
    return rc;
}

int fakes_parse_message(const char *body, size_t len, json_t **out, fakes_req_error *e) {
    json_t *o = load_object(body, len, 0, e);
    if (!o) return -1;
    const char *to = NULL, *tmpl = NULL, *ref = "";
    int rc = -1;
    if (get_str(o, "to", 1, 1, FAKES_TO_MAX, &to, e) < 0 ||
        get_str(o, "template", 1, 1, FAKES_TEMPLATE_MAX, &tmpl, e) < 0 ||
        get_str(o, "reference", 0, 0, FAKES_REFERENCE_MAX, &ref, e) < 0)
        goto out;
    json_t *data = json_object_get(o, "data");
    if (data && !json_is_object(data)) {
        fail(e, "data", "data must be an object");
        goto out;
    }
    *out = json_pack("{s:s,s:s,s:s,s:o}", "to", to, "template", tmpl, "reference", ref, "data",
                     data ? json_incref(data) : json_object());
    if (!*out) {
        fail(e, "", "out of memory");
        goto out;
    }
    rc = 0;
out:
    json_decref(o);
    return rc;
}

int fakes_check_key(const char *key, int required, fakes_req_error *e) {
    if (!key) {
        if (required) return fail(e, "Idempotency-Key", "the Idempotency-Key header is required");
        return 0;
    }
    size_t n = strlen(key);
    if (n == 0 || n > FAKES_KEY_MAX)
        return fail(e, "Idempotency-Key", "Idempotency-Key must be 1 to %d bytes", FAKES_KEY_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)key[i] < 0x21 || (unsigned char)key[i] > 0x7e)
            return fail(e, "Idempotency-Key", "Idempotency-Key must be visible ASCII characters");
    return 0;
}

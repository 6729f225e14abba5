/* api_gateway.c - shop-api's client of the payment gateway (examples/shop/PROTOCOL.md):
 * authorize an order's total before it is written, and void an authorization whose order
 * could not be written. A refusal is an answer that judged this payment: 400, 402, 403, 409,
 * 422 (the seed's errorFromResponse calls these permanent). Everything else that is not a
 * success leaves the payment undecided, so the client may try again: 5xx, 408 and 429 (the
 * provider's trouble, as in the seed), but also 401, 404, 405 and 3xx (a wrong URL or
 * credentials: our configuration, not the customer's card) and every transport failure. */
#include "api.h"

#include "ex_http.h"

#include <jansson.h>

#include <stdio.h>
#include <string.h>

/* The gateway's {"error": "..."} text, or "" (for the log line). */
static const char *error_text(const ex_http_response *res, char *buf, size_t cap) {
    buf[0] = '\0';
    json_t *j = json_loadb(res->body, res->body_len, 0, NULL);
    const char *e = json_string_value(json_object_get(j, "error"));
    if (e) snprintf(buf, cap, ": %s", e);
    json_decref(j);
    return buf;
}

/* Classify an answer that is not a success. */
static int classify_failure(const char *what, const ex_http_response *res, char *why, size_t cap) {
    if (res->transport != EX_HTTP_OK) {
        snprintf(why, cap, "%s: %s (%s)", what, ex_http_transport_name(res->transport), res->error);
        return SHOP_GW_UNAVAILABLE;
    }
    char e[200];
    snprintf(why, cap, "%s: HTTP %d%s", what, res->status, error_text(res, e, sizeof e));
    switch (res->status) {
    case 400:
    case 402:
    case 403:
    case 409:
    case 422:
        return SHOP_GW_REFUSED;
    default:
        return SHOP_GW_UNAVAILABLE;
    }
}

/* An authorization id we can store and put in a URL path: unreserved URL characters. */
static int auth_id_usable(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > SHOP_AUTH_ID_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == '~'))
            return 0;
    }
    return 1;
}

int shop_gateway_authorize(const char *base_url, int timeout_ms, long long amount,
                           const char *order_id, const char *traceparent,
                           char auth_id[SHOP_AUTH_ID_MAX + 1], char *why, size_t cap) {
    char url[1024], key[64], body[160];
    snprintf(url, sizeof url, "%s/authorizations", base_url);
    snprintf(key, sizeof key, "authorize-%s", order_id);
    snprintf(body, sizeof body, "{\"amount\":%lld,\"reference\":\"%s\"}", amount, order_id);
    ex_http_request rq = {.method = "POST",
                          .url = url,
                          .body = body,
                          .idempotency_key = key,
                          .traceparent = traceparent,
                          .timeout_ms = timeout_ms};
    ex_http_response res;
    int rc;
    ex_http_do(&rq, &res);
    if (res.transport != EX_HTTP_OK || res.status < 200 || res.status > 299) {
        rc = classify_failure("authorize", &res, why, cap);
        ex_http_response_free(&res);
        return rc;
    }
    /* 201 for a new authorization, 200 for the answer replayed under the same key */
    json_t *j = json_loadb(res.body, res.body_len, 0, NULL);
    const char *id = json_string_value(json_object_get(j, "authorizationId"));
    const char *status = json_string_value(json_object_get(j, "status"));
    if (!auth_id_usable(id) || !status) {
        snprintf(why, cap, "authorize: HTTP %d without a usable authorizationId and status",
                 res.status);
        rc = SHOP_GW_UNAVAILABLE; /* it may have authorized: that one expires unused */
    } else if (strcmp(status, "authorized") != 0) {
        snprintf(why, cap, "authorize: the authorization is %.40s", status);
        rc = SHOP_GW_REFUSED;
    } else {
        snprintf(auth_id, SHOP_AUTH_ID_MAX + 1, "%s", id);
        why[0] = '\0';
        rc = SHOP_GW_OK;
    }
    json_decref(j);
    ex_http_response_free(&res);
    return rc;
}

int shop_gateway_void(const char *base_url, int timeout_ms, const char *auth_id,
                      const char *order_id, const char *traceparent, char *why, size_t cap) {
    char url[1024], key[64];
    snprintf(url, sizeof url, "%s/authorizations/%s/void", base_url, auth_id);
    snprintf(key, sizeof key, "void-%s", order_id);
    ex_http_request rq = {.method = "POST",
                          .url = url,
                          .body = "{}",
                          .idempotency_key = key,
                          .traceparent = traceparent,
                          .timeout_ms = timeout_ms};
    ex_http_response res;
    ex_http_do(&rq, &res);
    int rc = SHOP_GW_OK;
    if (res.transport != EX_HTTP_OK || res.status < 200 || res.status > 299)
        rc = classify_failure("void", &res, why, cap);
    else
        why[0] = '\0';
    ex_http_response_free(&res);
    return rc;
}
